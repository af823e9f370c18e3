//! Links of an HTML page, for link-following discovery.

use std::sync::LazyLock;

use scraper::{Html, Selector};

static A_HREF: LazyLock<Selector> =
    LazyLock::new(|| Selector::parse("a[href]").expect("valid selector"));

/// Absolute http(s) URLs of a page's `<a href>` links, resolved against
/// `base` (the page's public URL), fragments dropped, in document order.
pub fn extract(html: &str, base: &str) -> Vec<String> {
    let Ok(base) = url::Url::parse(base) else {
        return Vec::new();
    };
    let doc = Html::parse_document(html);
    let mut out = Vec::new();
    for a in doc.select(&A_HREF) {
        let Some(href) = a.value().attr("href") else {
            continue;
        };
        let href = href.trim();
        if href.is_empty()
            || href.starts_with('#')
            || href.starts_with("mailto:")
            || href.starts_with("javascript:")
        {
            continue;
        }
        if let Ok(mut u) = base.join(href) {
            if (u.scheme() == "http" || u.scheme() == "https") && !is_asset(u.path()) {
                u.set_fragment(None);
                out.push(u.to_string());
            }
        }
    }
    out
}

static MD_ALTERNATE: LazyLock<Selector> = LazyLock::new(|| {
    Selector::parse(r#"link[rel~="alternate"][type="text/markdown"][href]"#)
        .expect("valid selector")
});

/// The Markdown alternate a page announces with
/// `<link rel="alternate" type="text/markdown" href="…">`, made absolute.
pub fn markdown_alternate(html: &str, base: &str) -> Option<String> {
    let base = url::Url::parse(base).ok()?;
    let doc = Html::parse_document(html);
    let href = doc.select(&MD_ALTERNATE).next()?.value().attr("href")?;
    let u = base.join(href.trim()).ok()?;
    (u.scheme() == "http" || u.scheme() == "https").then(|| u.to_string())
}

/// Links to images, media, archives and other non-pages are not followed.
fn is_asset(path: &str) -> bool {
    const EXT: &[&str] = &[
        "png", "jpg", "jpeg", "gif", "webp", "svg", "ico", "bmp", "avif", "mp4", "webm", "ogg",
        "mp3", "wav", "zip", "gz", "tgz", "tar", "7z", "pdf", "css", "js", "woff", "woff2", "ttf",
        "otf", "eot", "wasm", "exe", "dmg", "apk", "json", "xml",
    ];
    path.rsplit_once('.')
        .map(|(_, ext)| EXT.contains(&ext.to_ascii_lowercase().as_str()))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_markdown_alternate() {
        let h = r#"<html><head><link rel="alternate" type="text/markdown" href="/docs/en/hooks.md"/></head></html>"#;
        assert_eq!(
            markdown_alternate(h, "https://code.claude.com/docs/en/hooks").as_deref(),
            Some("https://code.claude.com/docs/en/hooks.md")
        );
        assert_eq!(markdown_alternate("<p>x</p>", "https://a.b/"), None);
    }

    #[test]
    fn resolves_relative_links_and_drops_fragments() {
        let html = r##"<a href="class_node.html#x">n</a><a href="#top">t</a><a href="../index.html">i</a><a href="mailto:a@b">m</a><a href="https://other.example/">o</a><a href="img/a.webp">i</a>"##;
        let l = extract(
            html,
            "https://docs.godotengine.org/en/stable/classes/index.html",
        );
        assert_eq!(
            l,
            [
                "https://docs.godotengine.org/en/stable/classes/class_node.html",
                "https://docs.godotengine.org/en/stable/index.html",
                "https://other.example/"
            ]
        );
    }
}
