//! `search_docs` (seed 000): ranked passages, one per page, with a calibrated
//! score. Ranking itself is shared with the other tools (see [`super::rank`]).

use std::collections::HashSet;

use super::types::{
    Passage, ResponseFormat, SearchDocsArgs, SearchDocsResult, AGENT_DOCS_PRODUCTS,
};
use super::{Library, ToolError};
use crate::util::cut;

/// Characters of a passage in `concise` form.
pub const CONCISE_CHARS: usize = 300;
/// Characters of a passage in `detailed` form (about 800 tokens).
pub const DETAILED_CHARS: usize = 3200;

/// Products a query names: a word equal to a product id, or to the first part
/// of a compound id (`claude` for `claude-code`).
pub fn named_products(query: &str) -> Vec<&'static str> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect();
    AGENT_DOCS_PRODUCTS
        .iter()
        .copied()
        .filter(|p| {
            let first = p.split('-').next().unwrap_or(p);
            words.iter().any(|w| w == p || w == first)
        })
        .collect()
}

/// Other matching headings listed per passage.
const MAX_OTHER_SECTIONS: usize = 5;

impl Library {
    /// Answer `search_docs` (seed 000).
    pub fn search_docs(&self, args: &SearchDocsArgs) -> Result<SearchDocsResult, ToolError> {
        if args.query.trim().is_empty() {
            return Err(ToolError::invalid("query: must not be empty"));
        }
        if let Some(p) = &args.product {
            if !AGENT_DOCS_PRODUCTS.contains(&p.as_str()) {
                return Err(ToolError::invalid(format!(
                    "product: `{p}` is not one of {}",
                    AGENT_DOCS_PRODUCTS.join(", ")
                )));
            }
        }
        let limit = args.limit.clamp(1, 20) as usize;
        let sources: Vec<usize> = self
            .sources
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.manifest.tool_set() == crate::model::ToolSet::AgentDocs
                    && args
                        .product
                        .as_deref()
                        .is_none_or(|p| p == s.manifest.product)
            })
            .map(|(i, _)| i)
            .collect();
        let index_snapshot = sources
            .iter()
            .map(|&i| self.sources[i].manifest.created_at.clone())
            .max();
        let mut hits =
            self.rank_pages(&sources, &args.query, None, limit * 2, self.rank.agent_docs)?;
        // A product the query names (and the filter does not) goes first:
        // "undo changes the Cursor agent made" is about Cursor.
        let named = named_products(&args.query);
        if args.product.is_none() && !named.is_empty() {
            let boost = |h: &super::rank::PageHit| {
                let p = self.sources[h.source].manifest.product.as_str();
                h.rank
                    * if named.contains(&p) {
                        self.rank.named_product_boost
                    } else {
                        1.0
                    }
            };
            super::rank::sort_hits(&mut hits, boost);
            super::rank::assign_scores(&mut hits, self.rank.monotone_scores);
        }
        let mut passages = Vec::new();
        for hit in hits.iter().take(limit) {
            let source = &self.sources[hit.source];
            let best = hit.best();
            let page = hit.page;
            let sec = &source.sections[best.section];
            let pg = &source.pages[page];
            let body = super::strip_heading_line(&sec.text);
            let (content, truncated) = match args.response_format {
                ResponseFormat::Concise => cut(body, CONCISE_CHARS),
                ResponseFormat::Detailed => cut(body, DETAILED_CHARS),
            };
            let mut seen: HashSet<&[String]> = HashSet::new();
            seen.insert(&sec.heading_path);
            let other_sections = hit.sections[1..]
                .iter()
                .filter_map(|h| {
                    let s = &source.sections[h.section];
                    if s.anchor.is_empty() || !seen.insert(&s.heading_path) {
                        return None;
                    }
                    Some(s.heading_path[1.min(s.heading_path.len())..].join(" > "))
                })
                .filter(|h| !h.is_empty())
                .take(MAX_OTHER_SECTIONS)
                .collect();
            passages.push(Passage {
                rank: passages.len() as u32 + 1,
                title: pg.title.clone(),
                heading: sec.heading_display(),
                url: sec.url_with_anchor(),
                description: pg.description.clone(),
                score: hit.score,
                content,
                truncated,
                other_sections,
            });
        }
        Ok(SearchDocsResult {
            passages,
            index_snapshot,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_named_in_queries() {
        assert_eq!(
            named_products("undo changes the Cursor agent made"),
            ["cursor"]
        );
        assert_eq!(
            named_products("Claude Code MCP servers"),
            ["claude-code", "mcp"]
        );
        assert!(named_products("plain question").is_empty());
    }
}
