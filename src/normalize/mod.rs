//! Stage 2: turn a fetched body (Markdown alternate or HTML) into a [`Normalized`]
//! page — main content only, as faithful Markdown, with title and description
//! lifted out as fields. One adapter per site family; the family is chosen by the
//! source's `family` key in sources.yaml, never by host name.

use serde::{Deserialize, Serialize};

/// Site families docsnap knows how to read. Each has one adapter module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Mintlify sites (code.claude.com, modelcontextprotocol.io): MDX Markdown alternates.
    Mintlify,
    /// cursor.com/docs: Markdown alternates with an `export const meta` header.
    Cursor,
    /// developers.openai.com (Astro): Markdown twins.
    Openai,
    /// Sphinx with the Read the Docs theme (docs.godotengine.org): HTML only.
    Sphinx,
    /// LeapView's static generator: HTML only, `<article>` is the content.
    Leapview,
}

/// What kind of body was fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    Markdown,
    Html,
}

/// The result of normalizing one page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Normalized {
    pub title: String,
    pub description: String,
    /// Markdown body without the title (h1) line and without the description line.
    pub markdown: String,
}

/// Why a body could not be normalized.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    #[error("{url}: no main content found ({why})")]
    NoContent { url: String, why: String },
}
