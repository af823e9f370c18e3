//! Page discovery: turning a site's own indexes (llms.txt, sitemap.xml, a JSON
//! manifest) into a list of candidate URLs. Parsers are pure functions over the
//! fetched text, so they are tested without a network.

use std::sync::LazyLock;

use regex::Regex;

use crate::markdown::{FenceLine, FenceTracker};

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
    let mut fences = FenceTracker::default();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if fences.line(line) != FenceLine::Outside {
            continue;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with('>') {
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

/// What a sitemap lists: pages, or further sitemaps (a sitemap index).
#[derive(Debug, PartialEq, Eq)]
pub enum SitemapKind {
    Pages(Vec<String>),
    Index(Vec<String>),
}

/// Why a sitemap or a page manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// Broken XML is refused rather than read in part: a sitemap cut short
    /// would silently drop the pages after the break.
    #[error("sitemap is not well-formed XML at byte {position}: {message}")]
    Sitemap { position: u64, message: String },
    #[error("manifest is not valid JSON: {0}")]
    Manifest(#[from] serde_json::Error),
}

/// Parse a sitemap.xml or a sitemap index (by its root element): the text
/// of every `<loc>`, entities resolved, surrounding white space trimmed.
pub fn parse_sitemap(xml: &str) -> Result<SitemapKind, ListingError> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let broken = |reader: &quick_xml::Reader<&[u8]>, message: String| ListingError::Sitemap {
        position: reader.error_position(),
        message,
    };
    let mut locs = Vec::new();
    let mut index = false;
    // The text of the `<loc>` being read.
    let mut loc: Option<String> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| broken(&reader, e.to_string()))?;
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"sitemapindex" => index = true,
                b"loc" => loc = Some(String::new()),
                _ => {}
            },
            Event::Text(t) => {
                if let Some(l) = loc.as_mut() {
                    l.push_str(&t.decode().map_err(|e| broken(&reader, e.to_string()))?);
                }
            }
            Event::CData(t) => {
                if let Some(l) = loc.as_mut() {
                    l.push_str(&t.decode().map_err(|e| broken(&reader, e.to_string()))?);
                }
            }
            Event::GeneralRef(r) => {
                if let Some(l) = loc.as_mut() {
                    let name = r.decode().map_err(|e| broken(&reader, e.to_string()))?;
                    match r.resolve_char_ref() {
                        Ok(Some(c)) => l.push(c),
                        Ok(None) => match quick_xml::escape::resolve_predefined_entity(&name) {
                            Some(s) => l.push_str(s),
                            None => {
                                return Err(broken(&reader, format!("unknown entity &{name};")))
                            }
                        },
                        Err(e) => return Err(broken(&reader, e.to_string())),
                    }
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"loc" => {
                if let Some(l) = loc.take() {
                    let l = l.trim();
                    if !l.is_empty() {
                        locs.push(l.to_string());
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(if index {
        SitemapKind::Index(locs)
    } else {
        SitemapKind::Pages(locs)
    })
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
pub fn parse_manifest(json: &str, base: &url::Url) -> Result<Parsed, ListingError> {
    let m: ManifestFile = serde_json::from_str(json)?;
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
            parse_sitemap(s).unwrap(),
            SitemapKind::Pages(vec!["https://a/b?x=1&y=2".into(), "https://a/c".into()])
        );
        let i = "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><sitemap><loc>https://a/s1.xml?a=&#49;</loc><lastmod>2026-01-01</lastmod></sitemap></sitemapindex>";
        assert_eq!(
            parse_sitemap(i).unwrap(),
            SitemapKind::Index(vec!["https://a/s1.xml?a=1".into()])
        );
        // Broken XML is an error naming where, never a silently shorter list.
        let e = parse_sitemap("<urlset><url><loc>https://a/b</loc></urx></urlset>").unwrap_err();
        assert!(e.to_string().contains("not well-formed"), "{e}");
        let e =
            parse_sitemap("<urlset><url><loc>https://a/&nbsp;</loc></url></urlset>").unwrap_err();
        assert!(e.to_string().contains("&nbsp;"), "{e}");
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
