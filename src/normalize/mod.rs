//! Stage 2: turn a fetched body (Markdown alternate or HTML) into a [`Normalized`]
//! page — main content only, as faithful Markdown, with title and description
//! lifted out as fields. One adapter per site family; the family is chosen by the
//! source's `family` key in sources.yaml, never by host name.

use serde::{Deserialize, Serialize};

use crate::config::{Family, PageRules};
use crate::model::Normalized;

pub mod cursor;
pub mod godot_class;
pub mod html;
pub mod html_tokens;
pub mod leapview;
pub mod mdx;
pub mod mintlify;
pub mod nesting;
pub mod openai;
pub mod sphinx;

/// What kind of body was fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    Markdown,
    Html,
}

/// Why a body could not be normalized.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    #[error("{url}: no main content found ({why})")]
    NoContent { url: String, why: String },
    #[error(
        "{url}: elements nested {depth} deep (at most {} are read)",
        nesting::MAX_NESTING
    )]
    TooDeep { url: String, depth: usize },
}

/// [`normalize`], and for a page of the class reference (`class_page`: the
/// source's `class_pages` prefix matched its path; an HTML page of the
/// Sphinx family) also its structured class record, both from one parse of
/// the page. A class page whose record cannot be read fails as a whole: the
/// class tools must never silently lack a class the search finds.
///
/// `nesting` is the page's nesting depth when already measured (the crawl's
/// link scan does); otherwise it is measured here.
pub fn normalize_with_class(
    family: Family,
    kind: BodyKind,
    body: &str,
    public_url: &str,
    class_page: bool,
    rules: &PageRules,
    nesting: Option<usize>,
) -> Result<(Normalized, Option<godot_class::GodotClass>), NormalizeError> {
    if class_page && family == Family::Sphinx && kind == BodyKind::Html {
        check_nesting(body, public_url, nesting)?;
        let doc = scraper::Html::parse_document(body);
        let n = sphinx::normalize_doc(&doc, public_url, rules)?;
        let class = godot_class::parse_class_doc(&doc, public_url)?;
        return Ok((n, Some(class)));
    }
    Ok((
        normalize_measured(family, kind, body, public_url, rules, nesting)?,
        None,
    ))
}

fn check_nesting(
    body: &str,
    public_url: &str,
    measured: Option<usize>,
) -> Result<(), NormalizeError> {
    match measured {
        Some(d) => nesting::check_depth(d, public_url),
        None => nesting::check(body, public_url),
    }
}

/// Normalize one fetched body with the adapter of its family.
///
/// Markdown alternates of the Markdown families go to their adapters; HTML
/// bodies, and the HTML-only families, go to the HTML adapters.
pub fn normalize(
    family: Family,
    kind: BodyKind,
    body: &str,
    public_url: &str,
) -> Result<Normalized, NormalizeError> {
    normalize_with(family, kind, body, public_url, &PageRules::default())
}

/// [`normalize`] with a source's [`PageRules`].
pub fn normalize_with(
    family: Family,
    kind: BodyKind,
    body: &str,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    normalize_measured(family, kind, body, public_url, rules, None)
}

/// [`normalize_with`], given the page's nesting depth if already measured.
fn normalize_measured(
    family: Family,
    kind: BodyKind,
    body: &str,
    public_url: &str,
    rules: &PageRules,
    nesting: Option<usize>,
) -> Result<Normalized, NormalizeError> {
    match (family, kind) {
        (Family::Sphinx | Family::Leapview, _) | (_, BodyKind::Html) => {
            check_nesting(body, public_url, nesting)?;
            html_adapter(family, body, public_url, rules)
        }
        (Family::Mintlify, BodyKind::Markdown) => mintlify::normalize(body, public_url),
        (Family::Cursor, BodyKind::Markdown) => cursor::normalize(body, public_url),
        (Family::Openai, BodyKind::Markdown) => openai::normalize(body, public_url),
    }
}

/// HTML bodies: the Sphinx and LeapView adapters, else generic `<main>`/`<article>` extraction.
pub fn html_dispatch(
    family: Family,
    body: &str,
    public_url: &str,
) -> Result<Normalized, NormalizeError> {
    normalize_measured(
        family,
        BodyKind::Html,
        body,
        public_url,
        &PageRules::default(),
        None,
    )
}

/// The HTML adapter of `family`, on a page whose nesting was checked.
fn html_adapter(
    family: Family,
    body: &str,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    match family {
        Family::Sphinx => sphinx::normalize_with(body, public_url, rules),
        Family::Leapview => leapview::normalize(body, public_url, rules),
        Family::Mintlify | Family::Cursor | Family::Openai => {
            html::normalize(body, public_url, rules)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<html><head><title>T</title></head><body>
<main><p>Navigation chrome the generic adapter would keep.</p></main>
<div class="mine"><h1>Real title</h1><p>The content the source's selector names.</p>
<div class="promo"><p>Buy the pro edition.</p></div></div></body></html>"#;

    #[test]
    fn a_sources_selectors_pick_the_content_and_drop_its_chrome() {
        let url = "https://example.com/docs/x";
        let plain = normalize(Family::Leapview, BodyKind::Html, PAGE, url);
        assert!(
            plain.is_err() || !plain.unwrap().markdown.contains("selector names"),
            "without rules the adapter's own guesses apply"
        );
        let rules = crate::config::Selectors {
            content: Some("div.mine".into()),
            remove: vec!["div.promo".into()],
        }
        .compile()
        .expect("valid selectors");
        for family in [Family::Leapview, Family::Sphinx, Family::Mintlify] {
            let n = normalize_with(family, BodyKind::Html, PAGE, url, &rules).expect("normalizes");
            assert_eq!(n.title, "Real title", "{family:?}");
            assert!(
                n.markdown.contains("selector names"),
                "{family:?}: {}",
                n.markdown
            );
            assert!(
                !n.markdown.contains("pro edition"),
                "{family:?}: {}",
                n.markdown
            );
            assert!(!n.markdown.contains("Navigation chrome"), "{family:?}");
        }
    }
}
