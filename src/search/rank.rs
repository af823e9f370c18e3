//! Ranking shared by every search tool: sections, then pages.
//!
//! Two steps. tantivy's BM25 over title, headings, description and body picks
//! candidate sections; each candidate is then scored by how much of the query
//! it covers, weighting each query word by its rarity (IDF). The coverage is
//! what makes scores comparable across queries and sources: a query whose rare
//! words appear nowhere in the docs scores low however common its other words
//! are — which is what "under 0.5 means probably not covered" needs.

use std::collections::{HashMap, HashSet};

use super::{Library, LoadedSource};
use crate::index::{query_groups, query_groups_all, terms, TermGroup};

/// Candidate sections taken from the index per source (at least; more when
/// more pages are wanted). Coverage is computed for each, so this bounds the
/// cost of a query; past the first few dozen BM25 candidates the re-scoring
/// no longer changes the top of the list.
const CANDIDATES: usize = 60;
/// Candidate sections per wanted page.
const PER_PAGE: usize = 5;
/// Candidates when a filter will drop many of them.
const FILTERED_CANDIDATES: usize = 2000;

/// Weight of the link-popularity prior in the ranking.
const INLINK_WEIGHT: f64 = 0.08;

/// A filter on candidate sections: (source, section number) → keep?
pub type SectionFilter<'a> = &'a dyn Fn(&LoadedSource, usize) -> bool;

/// A scored candidate section.
#[derive(Debug, Clone)]
pub struct Scored {
    pub source: usize,
    pub section: usize,
    pub bm25: f32,
    pub coverage: f64,
    pub rank_score: f64,
}

/// A page with its matching sections, best first.
#[derive(Debug, Clone)]
pub struct PageHit {
    pub source: usize,
    pub page: usize,
    pub sections: Vec<Scored>,
}

impl PageHit {
    /// The best section.
    pub fn best(&self) -> &Scored {
        &self.sections[0]
    }
}

impl Library {
    /// Candidate sections of the given sources that pass `keep`, best first.
    pub fn rank_sections(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
    ) -> Vec<Scored> {
        let mut groups = query_groups(query);
        if groups.is_empty() {
            // Nothing but stop words: search them rather than nothing.
            groups = query_groups_all(query);
        }
        if groups.is_empty() {
            return Vec::new();
        }
        let wanted = CANDIDATES.max(want_pages * PER_PAGE);
        let limit = if keep.is_some() {
            FILTERED_CANDIDATES.max(wanted)
        } else {
            wanted
        };
        let mut out = Vec::new();
        for &si in sources {
            let src = &self.sources[si];
            let weights = group_weights(src, &groups);
            let mut kept = 0usize;
            for (bm25, sec) in src.index.search(&groups, limit) {
                if let Some(k) = keep {
                    if !k(src, sec) {
                        continue;
                    }
                }
                out.push(Scored {
                    source: si,
                    section: sec,
                    bm25,
                    coverage: coverage(src, sec, &groups, &weights),
                    rank_score: 0.0,
                });
                kept += 1;
                if kept >= wanted {
                    break;
                }
            }
        }
        let max_bm25 = out.iter().map(|s| s.bm25).fold(0.0f32, f32::max).max(1e-6);
        for s in &mut out {
            let rel = (s.bm25 / max_bm25) as f64;
            let src = &self.sources[s.source];
            // Popularity prior: pages and sections the docs link to often are
            // the ones readers are sent to (Node.add_child over TreeItem.add_child).
            let links = src.section_inlinks[s.section] as f64;
            let prior = 1.0 + INLINK_WEIGHT * (1.0 + links).ln();
            s.rank_score = rel * (0.35 + s.coverage) * prior;
        }
        out.sort_by(|a, b| {
            b.rank_score
                .partial_cmp(&a.rank_score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.source.cmp(&b.source))
                .then(a.section.cmp(&b.section))
        });
        out
    }

    /// Pages ranked by their best section, each with its matching sections.
    pub fn rank_pages(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
    ) -> Vec<PageHit> {
        let mut hits: Vec<PageHit> = Vec::new();
        let mut slot: HashMap<(usize, usize), usize> = HashMap::new();
        for s in self.rank_sections(sources, query, keep, want_pages) {
            let page = self.sources[s.source].section_page[s.section];
            match slot.get(&(s.source, page)) {
                Some(&k) => hits[k].sections.push(s),
                None => {
                    slot.insert((s.source, page), hits.len());
                    hits.push(PageHit {
                        source: s.source,
                        page,
                        sections: vec![s],
                    });
                }
            }
        }
        hits
    }
}

/// IDF weight of each query group in one source: rare words count more; a
/// word absent from the docs counts most.
fn group_weights(src: &LoadedSource, groups: &[TermGroup]) -> Vec<f64> {
    let n = src.index.num_docs().max(1) as f64;
    groups
        .iter()
        .map(|g| {
            let df = g.terms.first().map(|t| src.index.doc_freq(t)).unwrap_or(0) as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln().max(0.05)
        })
        .collect()
}

/// IDF-weighted share of the query groups found in the section (its text,
/// headings, page title and description). A compound group counts as found
/// when its whole form is there or all of its parts are.
fn coverage(src: &LoadedSource, sec: usize, groups: &[TermGroup], weights: &[f64]) -> f64 {
    let s = &src.sections[sec];
    let p = &src.pages[src.section_page[sec]];
    let mut have: HashSet<String> = HashSet::new();
    for t in terms(&s.text)
        .into_iter()
        .chain(terms(&s.heading_path.join(" ")))
        .chain(terms(&p.title))
        .chain(terms(&p.description))
    {
        have.insert(t);
    }
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let mut got = 0.0;
    for (g, w) in groups.iter().zip(weights) {
        let whole = g.terms.first().map(|t| have.contains(t)).unwrap_or(false);
        let parts = !g.atoms.is_empty() && g.atoms.iter().all(|t| have.contains(t));
        if whole || parts {
            got += w;
        }
    }
    got / total
}

/// Map coverage and BM25 to a score in [0, 1]: coverage dominates; a strong
/// BM25 match lifts it a little. Under 0.5 means the rarest words are missing.
pub fn calibrate(coverage: f64, bm25: f32) -> f64 {
    let strength = (bm25 as f64 / (bm25 as f64 + 8.0)).clamp(0.0, 1.0);
    (coverage.powf(1.5) * (0.8 + 0.2 * strength)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_bounded_and_monotone() {
        assert!(calibrate(1.0, 100.0) <= 1.0);
        assert!(calibrate(0.0, 100.0) >= 0.0);
        assert!(calibrate(0.9, 10.0) > calibrate(0.5, 10.0));
        assert!(calibrate(1.0, 20.0) > 0.5);
        assert!(calibrate(0.4, 20.0) < 0.5);
    }
}
