//! Stage 2: turn a fetched body (Markdown alternate or HTML) into a [`Normalized`]
//! page — main content only, as faithful Markdown, with title and description
//! lifted out as fields. One adapter per site family; the family is chosen by the
//! source's `family` key in sources.yaml, never by host name.

use serde::{Deserialize, Serialize};

use crate::config::Family;
use crate::model::Normalized;

pub mod cursor;
pub mod godot_class;
pub mod html;
pub mod leapview;
pub mod mdx;
pub mod mintlify;
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
}

/// [`normalize`], and for a page of the Godot class reference (a Sphinx
/// HTML page whose path [`godot_class::is_class_page`] recognizes) also its
/// structured class record, both from one parse of the page. A class page
/// whose record cannot be read fails as a whole: the class tools must never
/// silently lack a class the search finds.
pub fn normalize_with_class(
    family: Family,
    kind: BodyKind,
    body: &str,
    public_url: &str,
    path: &str,
) -> Result<(Normalized, Option<godot_class::GodotClass>), NormalizeError> {
    if family == Family::Sphinx && kind == BodyKind::Html && godot_class::is_class_page(path) {
        let doc = scraper::Html::parse_document(body);
        let n = sphinx::normalize_doc(&doc, public_url)?;
        let class = godot_class::parse_class_doc(&doc, public_url)?;
        return Ok((n, Some(class)));
    }
    Ok((normalize(family, kind, body, public_url)?, None))
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
    match (family, kind) {
        (Family::Sphinx | Family::Leapview, _) | (_, BodyKind::Html) => {
            crate::normalize::html_dispatch(family, body, public_url)
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
    match family {
        Family::Sphinx => sphinx::normalize(body, public_url),
        Family::Leapview => leapview::normalize(body, public_url),
        Family::Mintlify | Family::Cursor | Family::Openai => html::normalize(body, public_url),
    }
}
