//! LeapView's static generator (docs.leapview.example).
//!
//! Only `<article class="doc-article">` is content: its `<h1>` (the title) and
//! `div.doc-markdown`. Header, cookie banner, older-version banner, sidebar,
//! breadcrumbs, "On this page", "Edit this page", the feedback widget and the
//! pager all sit outside the article. Inside it, code blocks carry a header with
//! a language label and a copy button (dropped; the language comes from
//! `data-language`), headings carry a `#` permalink (dropped), and callouts are
//! `div.callout.callout-<kind>` with a `p.callout-title`.

use std::sync::LazyLock;

use scraper::{ElementRef, Html, Selector};

use super::html::{self, sel, Action, Hooks};
use super::{NormalizeError, Normalized, PageRules};
use crate::util::cut_marked;

static SEL_ROOTS: LazyLock<[Selector; 3]> =
    LazyLock::new(|| [sel("article.doc-article"), sel("main article"), sel("main")]);
static SEL_TITLE: LazyLock<Selector> = LazyLock::new(|| sel("head > title"));

/// Chrome that the generator could place inside the article in other templates.
struct LeapviewHooks;

impl Hooks for LeapviewHooks {
    fn action(&mut self, el: ElementRef<'_>) -> Action {
        let chrome = el.value().classes().any(|c| {
            matches!(
                c,
                "doc-footer" | "version-banner" | "toc-container" | "table-of-contents"
            )
        });
        if chrome {
            Action::Skip
        } else {
            Action::Default
        }
    }
}

/// Normalize one LeapView page: title from the article's `<h1>`, description from the meta tag.
pub fn normalize(
    body: &str,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    let doc = Html::parse_document(body);
    let root = html::content_root(&doc, rules, &*SEL_ROOTS, public_url, "article.doc-article")?;
    let (h1, converted) = html::convert_without_h1(root, public_url, LeapviewHooks, rules);
    let mut title = h1.map(html::plain_text).unwrap_or_default();
    if title.is_empty() {
        // "Errors | LeapView 3.1 Docs" → "Errors"
        let t = doc
            .select(&SEL_TITLE)
            .next()
            .map(html::plain_text)
            .unwrap_or_default();
        title = t.split(" | ").next().unwrap_or("").trim().to_string();
    }
    let description = html::meta_description(&doc)
        .map(|d| cut_marked(&d, 200))
        .unwrap_or_else(|| {
            html::description_from_paragraphs(root, |p| !html::in_aside_block(p, root), 200)
        });
    html::finish(title, description, converted, public_url, "article")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn article_only() {
        let page = r##"<html><head><meta name="description" content="How errors look."></head><body>
<div class="cookie-banner" hidden><p>We use cookies</p></div>
<div class="version-banner"><div class="callout callout-info">You are viewing an older version</div></div>
<article class="doc-article" id="main-content"><header class="doc-article__header"><h1 id="errors">Errors</h1></header>
<div class="doc-markdown"><p>Intro with <a href="/v3.1/cli/exit-codes">exit codes</a>.</p>
<h2 id="format">Format<a class="heading-anchor" href="#format" title="Direct link to this heading">#</a></h2>
<div class="code-block" data-language="json"><div class="code-block__header"><span class="code-block__lang">json</span><button class="copy-button">Copy</button></div><pre class="code-block__pre"><code class="language-json">{"a": 1}
</code></pre></div>
<div class="callout callout-tip" role="note"><p class="callout-title">Tip</p><p>Retry.</p></div>
</div></article>
<div class="doc-footer"><a class="edit-this-page" href="x">Edit this page</a><div class="feedback-widget">Was this helpful?</div></div>
</body></html>"##;
        let n = normalize(
            page,
            "https://docs.leapview.example/v3.1/api/errors",
            &PageRules::default(),
        )
        .expect("ok");
        assert_eq!(n.title, "Errors");
        assert_eq!(n.description, "How errors look.");
        assert_eq!(
            n.markdown,
            "Intro with [exit codes](https://docs.leapview.example/v3.1/cli/exit-codes).\n\n\
             ## Format\n\n```json\n{\"a\": 1}\n```\n\n> **Tip:** Retry."
        );
        assert_eq!(n.anchors(), vec!["format"]);
    }
}
