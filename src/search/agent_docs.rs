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
    let words = crate::util::lower_words(query);
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
        // A product the query names (and the filter does not) goes first:
        // "undo changes the Cursor agent made" is about Cursor.
        // It goes first as far as the name is its own (`name_share`).
        let named = named_products(&args.query);
        let most = match self.fuses_page_cosines(&sources, &self.rank.agent_docs) {
            true => self.rank.named_product_boost,
            false => self.rank.named_product_boost_lexical,
        };
        let boosts: Vec<(&str, f64)> = named
            .iter()
            .filter(|_| args.product.is_none())
            .map(|&p| {
                let share = self.name_share(&sources, p)?;
                Ok((p, 1.0 + (most - 1.0) * share))
            })
            .collect::<Result<_, crate::index::IndexError>>()?;
        let boost = |h: &super::rank::PageHit| {
            let p = self.sources[h.source].manifest.product.as_str();
            h.rank
                * boosts
                    .iter()
                    .find(|(n, _)| *n == p)
                    .map_or(1.0, |(_, b)| *b)
        };
        // Twice the pages shown: the product a query names re-sorts them,
        // and a page kept in several editions is shown once.
        let mut hits = self.rank_pages_stable(
            &sources,
            &args.query,
            None,
            limit * 2,
            super::types::DEFAULT_LIMIT as usize * 2,
            self.rank.agent_docs,
            |part| {
                if args.product.is_none() && !named.is_empty() {
                    super::rank::sort_hits(part, boost);
                }
            },
        )?;
        self.one_edition_per_page(&mut hits, &args.query);
        let mut passages = Vec::new();
        for (place, hit) in hits.iter().take(limit).enumerate() {
            let source = &self.sources[hit.source];
            let best = hit.best();
            let page = hit.page;
            let sec = &source.sections[best.section];
            let pg = &source.pages[page];
            super::rank::explain("search_docs", place + 1, sec, hit);
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

    /// How surely a query that says `product`'s name means that product:
    /// the share, among `sources`' products, of the rate at which the
    /// product's own sections use the name (rates, so that a large product
    /// does not count for more). "Codex" is said by Codex's docs alone
    /// (~1); "MCP" by every product that connects to MCP servers, and a
    /// question about Claude Code's MCP settings says it too (~0.6).
    fn name_share(
        &self,
        sources: &[usize],
        product: &str,
    ) -> Result<f64, crate::index::IndexError> {
        let word = product.split('-').next().unwrap_or(product);
        let Some(term) = crate::index::terms(word).into_iter().next() else {
            return Ok(1.0);
        };
        let mut rates: Vec<(&str, u64, u64)> = Vec::new();
        for &si in sources {
            let src = &self.sources[si];
            let df = src.index.text_doc_freq(&term)?;
            let n = src.index.num_docs();
            let p = src.manifest.product.as_str();
            match rates.iter_mut().find(|(q, _, _)| *q == p) {
                Some(r) => {
                    r.1 += df;
                    r.2 += n;
                }
                None => rates.push((p, df, n)),
            }
        }
        let rate = |df: u64, n: u64| if n == 0 { 0.0 } else { df as f64 / n as f64 };
        let all: f64 = rates.iter().map(|&(_, df, n)| rate(df, n)).sum();
        let own = rates
            .iter()
            .find(|(q, _, _)| *q == product)
            .map_or(0.0, |&(_, df, n)| rate(df, n));
        Ok(if all > 0.0 { own / all } else { 1.0 })
    }

    /// Show a page that exists in several editions (sources.yaml
    /// `editions`) once, where its best edition ranked: two copies of one
    /// passage would fill two of the agent's few results. The edition shown
    /// is the best-ranked one; among editions that rank alike or match the
    /// query's words alike (the same text), the one the query names, else
    /// the newest.
    fn one_edition_per_page(&self, hits: &mut Vec<super::rank::PageHit>, query: &str) {
        let mut slot: std::collections::HashMap<(usize, String), (usize, String)> =
            Default::default();
        let mut out: Vec<super::rank::PageHit> = Vec::with_capacity(hits.len());
        for h in hits.drain(..) {
            let src = &self.sources[h.source];
            let url = &src.pages[h.page].url;
            let Some(m) = src
                .editions
                .as_ref()
                .and_then(|re| re.captures(url))
                .and_then(|c| c.get(1))
            else {
                out.push(h);
                continue;
            };
            let key = (
                h.source,
                format!("{}\u{0}{}", &url[..m.start()], &url[m.end()..]),
            );
            let edition = m.as_str().to_string();
            match slot.get_mut(&key) {
                None => {
                    slot.insert(key, (out.len(), edition));
                    out.push(h);
                }
                Some((k, shown)) => {
                    let kept = &mut out[*k];
                    let named = |e: &str| query.contains(e);
                    // Alike: ranked the same, or its best section holds as
                    // much of the query's words (their vectors, links, the
                    // questions asked of each and the length of their text
                    // differ, so ranks and BM25 may not). An edition that
                    // holds words the other lacks (a renamed field, a
                    // removed method) is the one asked about.
                    let (a, b) = (kept.best(), h.best());
                    let same_words = b.coverage >= a.coverage - 1e-6;
                    let alike = h.rank >= kept.rank * (1.0 - 1e-9) || same_words;
                    let better =
                        (named(&edition), edition.as_str()) > (named(shown), shown.as_str());
                    if alike && better {
                        // Same place and score; the other edition's page.
                        kept.page = h.page;
                        kept.sections = h.sections;
                        *shown = edition;
                    }
                }
            }
        }
        *hits = out;
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

    /// A product's name in a query lifts that product's pages as far as
    /// the name is that product's own: a name the other products' docs use
    /// as much ("MCP", which every agent product connects to) lifts less,
    /// and the page the query's other words single out stays first.
    #[test]
    fn a_name_other_products_use_too_lifts_its_product_less() {
        use crate::model::testing::page;
        use crate::model::Section;
        let source = |product: &str, pages: &[(&str, &str)]| {
            let sections = pages
                .iter()
                .map(|(url, text)| Section {
                    url: (*url).into(),
                    anchor: String::new(),
                    heading_path: vec!["Guide".into()],
                    level: 1,
                    text: (*text).into(),
                    ordinal: 0,
                    part: 0,
                })
                .collect();
            let pages = pages.iter().map(|(url, _)| page(url, "Guide")).collect();
            let mut s = crate::search::test_library(pages, sections)
                .sources
                .remove(0);
            s.manifest.product = product.into();
            s.manifest.source = product.into();
            s.manifest.tools = Some(crate::model::ToolSet::AgentDocs);
            s
        };
        let tutorial = "https://cursor.example/tutorial";
        let lib = Library {
            sources: vec![
                source(
                    "cursor",
                    &[
                        (
                            tutorial,
                            "Build an MCP server with Bun and zod that queries Postgres.",
                        ),
                        (
                            "https://cursor.example/mcp",
                            "Add an MCP server in the settings.",
                        ),
                    ],
                ),
                source(
                    "mcp",
                    &[
                        (
                            "https://mcp.example/build",
                            "Build an MCP server with the SDK: a Postgres example.",
                        ),
                        ("https://mcp.example/intro", "MCP is an open protocol."),
                        (
                            "https://mcp.example/roots",
                            "Roots are the folders a client shares.",
                        ),
                    ],
                ),
            ],
            ..Default::default()
        };
        let share = |p: &str| lib.name_share(&[0, 1], p).unwrap();
        // Every Cursor section says "MCP", two in three of MCP's: MCP's
        // share of the name is 2/3 / (2/3 + 1). Only Cursor's say "Cursor".
        assert!((share("mcp") - 0.4).abs() < 1e-9, "{}", share("mcp"));
        assert!((share("cursor") - 1.0).abs() < 1e-9, "{}", share("cursor"));
        let args = SearchDocsArgs {
            query: "build an MCP server with Bun, zod and Postgres".into(),
            limit: 4,
            product: None,
            response_format: Default::default(),
        };
        let urls: Vec<String> = (lib.search_docs(&args).unwrap().passages)
            .into_iter()
            .map(|p| p.url)
            .collect();
        assert_eq!(urls[0], tutorial, "{urls:?}");
    }

    /// A page in two editions is one passage: the newer edition when they
    /// rank alike, the one the query names when it names one; a page only
    /// one edition has, and a page outside the pattern, stay as they are.
    #[test]
    fn a_page_in_several_editions_is_one_passage() {
        use crate::model::testing::page;
        use crate::model::Section;
        let old = "https://d.example/spec/2025-11-25/tools";
        let new = "https://d.example/spec/2026-07-28/tools";
        let only_old = "https://d.example/spec/2025-11-25/tasks";
        let guide = "https://d.example/guide";
        let text = "Calling tools: the result holds content and isError.";
        let sec = |url: &str| Section {
            url: url.into(),
            anchor: String::new(),
            heading_path: vec!["Tools".into()],
            level: 1,
            text: text.into(),
            ordinal: 0,
            part: 0,
        };
        let urls = [guide, old, only_old, new];
        let mut lib = crate::search::test_library(
            urls.iter().map(|u| page(u, "Tools")).collect(),
            urls.iter().map(|u| sec(u)).collect(),
        );
        lib.sources[0].manifest.tools = Some(crate::model::ToolSet::AgentDocs);
        let search = |lib: &Library, q: &str| -> Vec<String> {
            let args = SearchDocsArgs {
                query: q.into(),
                limit: 8,
                product: None,
                response_format: Default::default(),
            };
            let r = lib.search_docs(&args).unwrap();
            let scores: Vec<f64> = r.passages.iter().map(|p| p.score).collect();
            assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
            r.passages.into_iter().map(|p| p.url).collect()
        };
        assert_eq!(search(&lib, "tools result isError").len(), 4);
        let pattern = r"^https://d\.example/spec/(\d{4}-\d{2}-\d{2})/";
        lib.sources[0].editions = Some(crate::model::edition_pattern(pattern).unwrap());
        let mut got = search(&lib, "tools result isError");
        got.sort();
        assert_eq!(got, [guide, only_old, new]);
        let mut got = search(&lib, "tools result isError in 2025-11-25");
        got.sort();
        assert_eq!(got, [guide, only_old, old]);

        // The older edition ranked higher by what is not its words (its
        // vector, its links, the questions asked of it, a shorter text's
        // BM25): the query's words matched as much, so the newer one is
        // shown, in its place. Holding words the newer lacks, the
        // better-ranked edition stays.
        let hit = |page: usize, rank: f64, bm25: f32, coverage: f64| super::super::rank::PageHit {
            source: 0,
            page,
            sections: vec![super::super::rank::Scored {
                source: 0,
                section: page,
                bm25,
                coverage,
                mask: 1,
                partial: 0,
                rank_score: rank,
            }],
            coverage,
            rank,
            cosine: 0.0,
            asked_coverage: 0.0,
            score: 0.7,
            fused: Default::default(),
        };
        let shown = |hits: Vec<super::super::rank::PageHit>, q: &str| {
            let mut hits = hits;
            lib.one_edition_per_page(&mut hits, q);
            hits.iter()
                .map(|h| (urls[h.page], h.score))
                .collect::<Vec<_>>()
        };
        let (o, n) = (1, 3);
        assert_eq!(
            shown(
                vec![
                    hit(o, 0.9, 5.0, 0.8),
                    hit(0, 0.5, 2.0, 0.8),
                    hit(n, 0.4, 5.0, 0.8)
                ],
                "q"
            ),
            [(new, 0.7), (guide, 0.7)]
        );
        assert_eq!(
            shown(
                vec![hit(o, 0.9, 5.0, 0.8), hit(n, 0.4, 5.0, 0.8)],
                "q 2025-11-25"
            ),
            [(old, 0.7)]
        );
        assert_eq!(
            shown(vec![hit(o, 0.9, 5.0, 0.8), hit(n, 0.4, 3.0, 0.8)], "q"),
            [(new, 0.7)]
        );
        assert_eq!(
            shown(vec![hit(o, 0.9, 5.0, 0.8), hit(n, 0.4, 5.0, 0.6)], "q"),
            [(old, 0.7)]
        );
    }
}
