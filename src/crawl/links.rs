//! Links of an HTML page, for link-following discovery.
//!
//! One pass of html5ever's tokenizer, without building a tree: the crawl
//! reads every page's links on its own loop, and a tokenizer pass costs a
//! fraction of `Html::parse_document` (588 Godot pages: about 0.5 s of one
//! core for the parse). Text inside `<script>`, `<style>` and the other raw
//! text elements is switched to raw mode exactly as the HTML tree builder
//! would, so markup quoted in a script is never taken for a link.

use std::cell::RefCell;

use html5ever::tokenizer::{TagKind, Token, TokenSink, TokenSinkResult};
use html5ever::Attribute;

use crate::normalize::html_tokens::tokenize;
use crate::normalize::nesting::Gauge;

/// What one pass over a page finds.
#[derive(Default)]
struct Found {
    /// `href` of every `<a>`, in document order, as written.
    hrefs: Vec<String>,
    /// `href` of the first `<link rel="alternate" type="text/markdown">`.
    alternate: Option<String>,
}

#[derive(Default)]
struct Sink {
    found: RefCell<Found>,
    depth: Gauge,
}

fn attr<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        let state = self.depth.tag(&tag.name, tag.kind, tag.self_closing);
        if tag.kind != TagKind::StartTag {
            return TokenSinkResult::Continue;
        }
        match &*tag.name {
            "a" => {
                if let Some(h) = attr(&tag.attrs, "href") {
                    self.found.borrow_mut().hrefs.push(h.to_string());
                }
            }
            "link" => {
                let alternate = attr(&tag.attrs, "rel")
                    .is_some_and(|r| r.split_ascii_whitespace().any(|w| w == "alternate"));
                let markdown = attr(&tag.attrs, "type") == Some("text/markdown");
                if let (true, true, Some(h)) = (alternate, markdown, attr(&tag.attrs, "href")) {
                    self.found
                        .borrow_mut()
                        .alternate
                        .get_or_insert_with(|| h.to_string());
                }
            }
            _ => {}
        }
        state.unwrap_or(TokenSinkResult::Continue)
    }
}

/// What the crawl reads from an HTML page, in one tokenizer pass.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PageScan {
    /// [`extract`]'s links.
    pub links: Vec<String>,
    /// [`markdown_alternate`]'s URL.
    pub alternate: Option<String>,
    /// How deep the page nests its elements
    /// ([`crate::normalize::nesting::depth`]), so normalizing the page need
    /// not tokenize it again to check.
    pub depth: usize,
}

/// Links, Markdown alternate and nesting depth of a page, from one pass.
pub fn scan_page(html: &str, base: &str) -> PageScan {
    let sink = tokenize(html, Sink::default());
    let found = sink.found.take();
    let depth = sink.depth.max();
    let Ok(base) = url::Url::parse(base) else {
        return PageScan {
            depth,
            ..PageScan::default()
        };
    };
    PageScan {
        links: resolve_links(&base, &found.hrefs),
        alternate: found.alternate.and_then(|h| {
            let u = base.join(h.trim()).ok()?;
            (u.scheme() == "http" || u.scheme() == "https").then(|| u.to_string())
        }),
        depth,
    }
}

/// An http(s) URL for `href` resolved against `base`, without fragment.
fn absolute(base: &url::Url, href: &str) -> Option<url::Url> {
    let mut u = base.join(href.trim()).ok()?;
    u.set_fragment(None);
    (u.scheme() == "http" || u.scheme() == "https").then_some(u)
}

fn resolve_links(base: &url::Url, hrefs: &[String]) -> Vec<String> {
    hrefs
        .iter()
        .map(|h| h.trim())
        .filter(|h| {
            !(h.is_empty()
                || h.starts_with('#')
                || h.starts_with("mailto:")
                || h.starts_with("javascript:"))
        })
        .filter_map(|h| absolute(base, h))
        .filter(|u| !is_asset(u.path()))
        .map(|u| u.to_string())
        .collect()
}

/// Absolute http(s) URLs of a page's `<a href>` links, resolved against
/// `base` (the page's public URL), fragments dropped, in document order.
pub fn extract(html: &str, base: &str) -> Vec<String> {
    scan_page(html, base).links
}

/// The Markdown alternate a page announces with
/// `<link rel="alternate" type="text/markdown" href="…">`, made absolute.
pub fn markdown_alternate(html: &str, base: &str) -> Option<String> {
    scan_page(html, base).alternate
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

    #[test]
    fn markup_inside_scripts_and_comments_is_not_a_link() {
        let html = r#"<head><title><a href="/t">x</a></title>
<script>document.write('<a href="/in-script">s</a>')</script>
<style>a[href="/in-style"] {}</style></head>
<body><!-- <a href="/in-comment">c</a> --><noscript><a href="/in-noscript">n</a></noscript>
<p><a href="/real">r</a></p><textarea><a href="/in-textarea"></a></textarea>
<link rel="stylesheet alternate" type="text/markdown" href="/page.md"></body>"#;
        assert_eq!(
            extract(html, "https://d.example/x"),
            ["https://d.example/real"]
        );
        assert_eq!(
            markdown_alternate(html, "https://d.example/x").as_deref(),
            Some("https://d.example/page.md")
        );
    }
}
