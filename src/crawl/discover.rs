//! Page discovery: turning a site's own indexes (llms.txt, sitemap.xml, a JSON
//! manifest) into a list of candidate URLs. Parsers are pure functions over the
//! fetched text, so they are tested without a network.

use std::sync::LazyLock;

use regex::Regex;

/// A page a discovery method found, before scope checks and canonicalization.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Candidate {
    /// URL as listed (may be a `.md` alternate).
    pub url: String,
    /// Title the index gives, if any.
    pub title: String,
    /// Description the index gives, if any.
    pub description: String,
    /// Path relative to the version root, when the index says so (LeapView's manifest).
    pub path: Option<String>,
}

/// Result of parsing an index: candidates plus lines that could not be read.
#[derive(Debug, Default)]
pub struct Parsed {
    pub candidates: Vec<Candidate>,
    pub warnings: Vec<String>,
}

static LINK_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-*+]\s+\[(?P<title>[^\]]*)\]\((?P<url>[^)\s]+)\)\s*(?::\s*(?P<desc>.*))?$")
        .expect("valid regex")
});
static BARE_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*+]\s+)?(?P<url>https?://\S+)\s*$").expect("valid regex")
});

/// Parse an llms.txt: Mintlify link lines `- [Title](url): description`, bare
/// URL lines, headings and prose (ignored). A list line that looks like a link
/// but cannot be read is reported as a warning with its line number.
pub fn parse_llms_txt(text: &str, base: &url::Url) -> Parsed {
    let mut out = Parsed::default();
    let mut in_fence = false;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || t.is_empty() || t.starts_with('#') || t.starts_with('>') {
            continue;
        }
        if let Some(c) = LINK_LINE.captures(line) {
            let raw = &c["url"];
            match base.join(raw) {
                Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
                    out.candidates.push(Candidate {
                        url: u.to_string(),
                        title: c["title"].trim().to_string(),
                        description: c
                            .name("desc")
                            .map(|d| d.as_str().trim().to_string())
                            .unwrap_or_default(),
                        path: None,
                    })
                }
                _ => out
                    .warnings
                    .push(format!("llms.txt line {}: unusable URL `{raw}`", n + 1)),
            }
        } else if let Some(c) = BARE_URL.captures(line) {
            out.candidates.push(Candidate {
                url: c["url"].to_string(),
                ..Default::default()
            });
        } else if (t.starts_with("- ") || t.starts_with("* ")) && t.contains("](") {
            out.warnings.push(format!(
                "llms.txt line {}: malformed link line skipped",
                n + 1
            ));
        }
    }
    out
}

static LOC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<loc>\s*(.*?)\s*</loc>").expect("valid regex"));

/// What a sitemap lists: pages, or further sitemaps (a sitemap index).
#[derive(Debug, PartialEq, Eq)]
pub enum SitemapKind {
    Pages(Vec<String>),
    Index(Vec<String>),
}

/// Parse a sitemap.xml or a sitemap index (by its root element).
pub fn parse_sitemap(xml: &str) -> SitemapKind {
    let locs: Vec<String> = LOC
        .captures_iter(xml)
        .map(|c| xml_unescape(&c[1]))
        .collect();
    if xml.contains("<sitemapindex") {
        SitemapKind::Index(locs)
    } else {
        SitemapKind::Pages(locs)
    }
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[derive(serde::Deserialize)]
struct ManifestFile {
    pages: Vec<ManifestPage>,
}

#[derive(serde::Deserialize)]
struct ManifestPage {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    path: Option<String>,
}

/// Parse a JSON page manifest (`{"pages": [{"url", "title", "summary", "path"}]}`).
pub fn parse_manifest(json: &str, base: &url::Url) -> Result<Parsed, String> {
    let m: ManifestFile =
        serde_json::from_str(json).map_err(|e| format!("manifest is not valid JSON: {e}"))?;
    let mut out = Parsed::default();
    for (i, p) in m.pages.into_iter().enumerate() {
        match base.join(&p.url) {
            Ok(u) => out.candidates.push(Candidate {
                url: u.to_string(),
                title: p.title,
                description: p.summary,
                path: p.path,
            }),
            Err(e) => out
                .warnings
                .push(format!("manifest page {i}: bad url `{}`: {e}", p.url)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llms_txt_mintlify_bare_and_malformed() {
        let base = url::Url::parse("https://x.io/llms.txt").unwrap();
        let t = "# T\n\n> blurb [not](a link)\n\n## Sec\n\n- [A](https://x.io/a.md): Desc a\n- [B](/b.md)\n  - [Nested](https://x.io/n.md): n\nhttps://x.io/bare.md\n- [broken](https://x.io/c.md\n```\n- [in fence](https://x.io/f.md)\n```\n";
        let p = parse_llms_txt(t, &base);
        let urls: Vec<_> = p.candidates.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://x.io/a.md",
                "https://x.io/b.md",
                "https://x.io/n.md",
                "https://x.io/bare.md"
            ]
        );
        assert_eq!(p.candidates[0].description, "Desc a");
        assert_eq!(p.candidates[1].title, "B");
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("line 11"), "{:?}", p.warnings);
    }

    #[test]
    fn sitemap_and_index() {
        let s = "<urlset><url><loc>https://a/b?x=1&amp;y=2</loc></url><url><loc>\n https://a/c \n</loc></url></urlset>";
        assert_eq!(
            parse_sitemap(s),
            SitemapKind::Pages(vec!["https://a/b?x=1&y=2".into(), "https://a/c".into()])
        );
        let i = "<sitemapindex><sitemap><loc>https://a/s1.xml</loc></sitemap></sitemapindex>";
        assert_eq!(
            parse_sitemap(i),
            SitemapKind::Index(vec!["https://a/s1.xml".into()])
        );
    }

    #[test]
    fn manifest_pages() {
        let base = url::Url::parse("https://d.example/v3.2/manifest.json").unwrap();
        let j = r#"{"product":"P","pages":[{"path":"cli/publish","title":"Publish","summary":"S","url":"https://d.example/v3.2/cli/publish"}]}"#;
        let p = parse_manifest(j, &base).unwrap();
        assert_eq!(p.candidates[0].path.as_deref(), Some("cli/publish"));
        assert!(parse_manifest("{", &base).is_err());
    }
}
