//! Argument and result records of the query tools, field for field as the seed
//! contracts in `../shared/seeds/` define them. Serialized as the tools'
//! `structuredContent`.

use serde::{Deserialize, Serialize};

/// Products served by `search_docs` (the seed's `product` enum).
pub const AGENT_DOCS_PRODUCTS: [&str; 4] = ["claude-code", "cursor", "codex", "mcp"];

/// `search_docs` input (seed 000).
#[derive(Debug, Clone, Deserialize)]
pub struct SearchDocsArgs {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: u32,
    #[serde(default)]
    pub product: Option<String>,
    #[serde(default)]
    pub response_format: ResponseFormat,
}

/// `search_docs`' limit when the call gives none.
pub const DEFAULT_LIMIT: u32 = 8;

fn default_limit() -> u32 {
    DEFAULT_LIMIT
}

/// `concise` (first 300 characters) or `detailed` (the full passage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    #[default]
    Concise,
    Detailed,
}

/// One ranked passage (seed 000 `PassageModel`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Passage {
    pub rank: u32,
    pub title: String,
    pub heading: String,
    pub url: String,
    pub description: String,
    pub score: f64,
    pub content: String,
    pub truncated: bool,
    pub other_sections: Vec<String>,
}

/// `search_docs` output (seed 000 `SearchDocsResult`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchDocsResult {
    pub passages: Vec<Passage>,
    pub index_snapshot: Option<String>,
}

/// `read_section` input (seed 000).
#[derive(Debug, Clone, Deserialize)]
pub struct ReadSectionArgs {
    pub url: String,
    #[serde(default)]
    pub heading: Option<String>,
    #[serde(default)]
    pub offset: u64,
    #[serde(default = "default_outline_depth")]
    pub outline_depth: u8,
}

fn default_outline_depth() -> u8 {
    2
}

/// `read_section` output (seed 000 `ReadSectionResult`, completed in the same style).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReadSectionResult {
    pub url: String,
    pub title: String,
    pub description: String,
    pub outline: Vec<String>,
    pub heading: Option<String>,
    pub text: String,
    pub offset: u64,
    pub next_offset: Option<u64>,
    pub total_chars: u64,
}
