//! The query engine over loaded artifacts: what the tools answer from.

pub mod types;

use std::collections::HashMap;

use crate::model::{Manifest, Page, Section};

/// A tool call that cannot be answered; becomes an `isError` tool result whose
/// text names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// One loaded artifact: a (source, version) snapshot.
pub struct LoadedSource {
    pub manifest: Manifest,
    pub pages: Vec<Page>,
    pub sections: Vec<Section>,
    /// For each page, the range of its sections in `sections`.
    pub page_sections: Vec<std::ops::Range<usize>>,
    url_to_page: HashMap<String, usize>,
}

/// A page with its sections, as [`Library::find_page`] returns it.
pub struct PageRef<'a> {
    pub source: &'a LoadedSource,
    pub page: &'a Page,
    pub sections: &'a [Section],
}

/// Every loaded artifact.
#[derive(Default)]
pub struct Library {
    pub sources: Vec<LoadedSource>,
}
