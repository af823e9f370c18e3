//! Fusing the lexical page ranking with the meaning: a page's cosine to
//! the question (the transformer's page vectors, the questions asked of the
//! page and their words), or reciprocal-rank fusion with a static model's
//! section vectors; and without a model, the words of the questions asked.

use std::collections::HashMap;

use super::{
    sort_hits, FamilyLevers, Library, PageHit, Scored, SectionFilter, SourceQuery, PER_PAGE,
};
use crate::index::{FieldWeights, IndexError, TermGroup};
use crate::model::VectorUnit;

impl Library {
    /// Fuses the lexical page ranking with the pages nearest to the query
    /// `qv` in meaning. Pages only the dense side found join with their best
    /// section (a page vector: its lead section) as the hit.
    ///
    /// Section vectors of the static model: weighted reciprocal-rank fusion,
    /// since BM25 and a static cosine live on unrelated scales that shift
    /// from query to query; ranks do not. Page vectors of the transformer:
    /// its cosines mean the same from query to query, so they are added to
    /// the lexical rank as scores (lexical rank relative to the best page,
    /// plus `levers.cosine` × cosine): a page both sides like wins, and a
    /// page far ahead on one side is not levelled to a rank.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fuse_dense<'s>(
        &'s self,
        hits: &mut Vec<PageHit>,
        sources: &[usize],
        base: &[TermGroup],
        qv: &[f32],
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        levers: &FamilyLevers,
        queries: &mut HashMap<usize, SourceQuery<'s>>,
    ) -> Result<(), IndexError> {
        let fields = &levers.fields;
        let k = DENSE_CANDIDATES.max(want_pages * PER_PAGE);
        // Candidates to join (best first, at most `k` per source), and the
        // cosine of every page the vectors cover.
        let mut dense: Vec<(f32, usize, usize)> = Vec::new();
        let mut page_cos: HashMap<(usize, usize), f32> = HashMap::new();
        let mut by_page = false;
        let mut asked_words: HashMap<(usize, usize), f32> = HashMap::new();
        let groups = asked_word_groups(base);
        // The question as each adapter moved it, by the adapter file's
        // sha256: the agent-docs sources share one adapter.
        let mut moved: Vec<(&str, Vec<f32>)> = Vec::new();
        // One source after another: side by side on rayon the scans saved
        // tens of µs and lost under load (BENCHMARKS.md, session 42).
        for &si in sources {
            let src = &self.sources[si];
            let Some(v) = &src.vectors else { continue };
            // A page row stands for the page's lead section: the hit of a
            // page only the dense side found, and what filters look at.
            let section_of = |row: usize| match src.vector_unit {
                VectorUnit::Section => Some(row),
                VectorUnit::Page => {
                    let r = &src.page_sections[row];
                    (!r.is_empty()).then_some(r.start)
                }
            };
            let accept = |row: usize| {
                section_of(row).is_some_and(|sec| keep.map(|f| f(src, sec)).unwrap_or(true))
            };
            let all = src.vector_unit == VectorUnit::Page;
            by_page |= all;
            // A source with a query adapter compares the question as its
            // adapter moves it (see `embed::adapter`).
            let adapter = (src.adapter.as_ref()).filter(|_| self.rank.query_adapters);
            let q = match adapter {
                Some(a) => {
                    let key = (src.manifest.files)
                        .get(crate::embed::adapter::ADAPTER_FILE)
                        .map_or("", String::as_str);
                    let at = match moved.iter().position(|(k, _)| *k == key) {
                        Some(at) => at,
                        None => {
                            moved.push((key, a.apply(qv)));
                            moved.len() - 1
                        }
                    };
                    moved[at].1.as_slice()
                }
                None => qv,
            };
            let scored = v.top_k(q, if all { v.len() } else { k }, accept);
            // A page's cosine takes in the question nearest among those
            // asked of it (`embed::asked`), where any were.
            let near = match (&src.asked, all && levers.asked > 0.0) {
                (Some((av, pages)), true) => crate::embed::asked::nearest_per_page(
                    av,
                    pages,
                    q,
                    src.pages.len(),
                    levers.asked_second as f32,
                ),
                _ => Vec::new(),
            };
            let b = levers.asked as f32;
            // The best pages by the words of the questions asked of them
            // join, whatever their cosine (`search::asked_words`).
            let mut joined = std::collections::HashSet::new();
            if let (Some(w), true) = (&src.asked_words, all && levers.asked_words > 0.0) {
                for (n, (page, s)) in w
                    .ranked(&groups, levers.asked_words_covered)
                    .into_iter()
                    .enumerate()
                {
                    asked_words.insert((si, page), s);
                    if n < ASKED_WORDS_CANDIDATES {
                        joined.insert(page);
                    }
                }
            }
            for (n, (cos, row)) in scored.into_iter().enumerate() {
                let Some(sec) = section_of(row) else { continue };
                let cos = match near.get(row) {
                    Some(Some(k)) => (1.0 - b) * cos + b * k,
                    _ => cos,
                };
                if all {
                    page_cos.insert((si, row), cos);
                }
                if n < k || joined.contains(&row) {
                    dense.push((cos, si, sec));
                }
            }
        }
        if dense.is_empty() {
            return Ok(());
        }
        dense.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut slot: HashMap<(usize, usize), usize> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| ((h.source, h.page), i))
            .collect();
        let lexical = hits.len();
        let mut dense_rank: Vec<Option<usize>> = vec![None; hits.len()];
        let mut next = 0usize;
        for (cos, si, sec) in dense {
            let src = &self.sources[si];
            let page = src.section_page[sec];
            let i = match slot.get(&(si, page)) {
                Some(&i) => i,
                None => {
                    slot.insert((si, page), hits.len());
                    hits.push(self.joined_hit(si, sec, base, fields, queries)?);
                    dense_rank.push(None);
                    hits.len() - 1
                }
            };
            if dense_rank[i].is_none() {
                dense_rank[i] = Some(next);
                hits[i].cosine = cos;
                next += 1;
            }
        }
        if by_page {
            let named = named_share(hits, lexical, queries);
            fuse_page_cosines(
                hits,
                lexical,
                levers,
                named,
                |h| {
                    page_cos
                        .get(&(h.source, h.page))
                        .copied()
                        .unwrap_or(h.cosine)
                },
                |h| asked_words.get(&(h.source, h.page)).copied().unwrap_or(0.0),
            );
            return Ok(());
        }
        let weight = levers.dense * uncovered_share(hits, lexical).powf(self.rank.dense_adaptive);
        let k = self.rank.dense_k;
        let rrf = |r: Option<usize>| r.map(|r| 1.0 / (k + r as f64 + 1.0)).unwrap_or(0.0);
        for (i, h) in hits.iter_mut().enumerate() {
            let lex = (i < lexical).then_some(i);
            h.rank = (1.0 - weight) * rrf(lex) + weight * rrf(dense_rank[i]);
        }
        sort_hits(hits, |h| h.rank);
        Ok(())
    }
}

impl Library {
    /// A page that a side other than the lexical one found, as a hit: its
    /// section `sec` (of source `si`) with the coverage the lexical side
    /// would give it, and no lexical score.
    fn joined_hit<'s>(
        &'s self,
        si: usize,
        sec: usize,
        base: &[TermGroup],
        fields: &FieldWeights,
        queries: &mut HashMap<usize, SourceQuery<'s>>,
    ) -> Result<PageHit, IndexError> {
        let src = &self.sources[si];
        let q = match queries.entry(si) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(SourceQuery::new(src, base, &self.rank, 1, fields)?)
            }
        };
        let unit = src.unit_of(sec);
        let (mask, partial) = q.wants.unit_masks(src, &q.scan, &[(unit.start, 0.0, sec)])[0];
        let coverage = q.coverage(mask, partial);
        Ok(PageHit {
            source: si,
            page: src.section_page[sec],
            sections: vec![Scored {
                source: si,
                section: sec,
                bm25: 0.0,
                coverage,
                mask,
                partial,
                rank_score: 0.0,
            }],
            coverage,
            rank: 0.0,
            cosine: 0.0,
            asked_coverage: 0.0,
            score: 0.0,
            fused: Default::default(),
        })
    }

    /// Without a question vector: the words of the questions asked of the
    /// pages (`search::asked_words`) fused with the lexical ranking, as
    /// [`fuse_page_cosines`] adds them beside the cosine, at the weight
    /// `levers.asked_words_lexical`. The best pages by those words join
    /// with their lead section.
    pub(super) fn fuse_words<'s>(
        &'s self,
        hits: &mut Vec<PageHit>,
        sources: &[usize],
        base: &[TermGroup],
        keep: Option<SectionFilter<'_>>,
        levers: &FamilyLevers,
        queries: &mut HashMap<usize, SourceQuery<'s>>,
    ) -> Result<(), IndexError> {
        if levers.asked_words_lexical <= 0.0 {
            return Ok(());
        }
        let groups = asked_word_groups(base);
        let mut words: HashMap<(usize, usize), f32> = HashMap::new();
        let mut joining: Vec<(usize, usize)> = Vec::new();
        for &si in sources {
            let src = &self.sources[si];
            let Some(w) = &src.asked_words else { continue };
            // Beside the lexical rank alone the words count whole: their
            // coverage already shows in the pages' own words.
            for (n, (page, s)) in w.ranked(&groups, 0.0).into_iter().enumerate() {
                words.insert((si, page), s);
                // A page joins by its lead section, where the filter keeps it.
                let lead = src.page_sections.get(page).filter(|r| !r.is_empty());
                if let Some(sec) = lead.map(|r| r.start) {
                    if n < ASKED_WORDS_CANDIDATES && keep.map(|f| f(src, sec)).unwrap_or(true) {
                        joining.push((si, sec));
                    }
                }
            }
        }
        if words.is_empty() {
            return Ok(());
        }
        let lexical = hits.len();
        let mut seen: std::collections::HashSet<(usize, usize)> =
            hits.iter().map(|h| (h.source, h.page)).collect();
        for (si, sec) in joining {
            let page = self.sources[si].section_page[sec];
            if seen.insert((si, page)) {
                hits.push(self.joined_hit(si, sec, base, &levers.fields, queries)?);
            }
        }
        let named = named_share(hits, lexical, queries);
        let lexical_levers = FamilyLevers {
            cosine: 0.0,
            asked_words: levers.asked_words_lexical,
            ..*levers
        };
        fuse_page_cosines(
            hits,
            lexical,
            &lexical_levers,
            named,
            |_| 0.0,
            |h| words.get(&(h.source, h.page)).copied().unwrap_or(0.0),
        );
        Ok(())
    }
}

/// How far the best lexical page stands out: its coverage of the query ×
/// its lead over the second lexical page, (first − second) / first (a lone
/// lexical page leads by 1). 0 without lexical hits.
pub(super) fn lexical_lead(hits: &[PageHit], lexical: usize) -> f64 {
    let Some(top) = hits.first().filter(|h| lexical > 0 && h.rank > 0.0) else {
        return 0.0;
    };
    let second = hits[..lexical].get(1).map_or(0.0, |h| h.rank.max(0.0));
    top.coverage.clamp(0.0, 1.0) * ((top.rank - second) / top.rank).clamp(0.0, 1.0)
}

/// Dense retrieval pays where the query's words are not the docs' words:
/// the share of the query the best lexical page (the first of `hits`, when
/// the first `lexical` came from the lexical side) leaves uncovered.
fn uncovered_share(hits: &[PageHit], lexical: usize) -> f64 {
    let top_cov = hits
        .first()
        .filter(|_| lexical > 0)
        .map(|h| h.coverage)
        .unwrap_or(0.0);
    (1.0 - top_cov).max(0.0)
}

/// Whether a query word is written as code names things: joined by a
/// connector other than a hyphen (`get_node`, `Input.is_action_pressed`,
/// `settings.json`), or with a case change or digit inside (`AnimationTree`,
/// `Node3D`). Hyphenated words (`built-in`, `open-world`) are prose.
pub(super) fn identifier_like(word: &str) -> bool {
    let b = word.as_bytes();
    let letters = b.iter().any(u8::is_ascii_alphabetic);
    // The connectors that join a query word (`index::is_connector`), less
    // the hyphen.
    let code_connector = |c: u8| c != b'-' && crate::index::is_connector(char::from(c));
    let joined = b.windows(3).any(|w| {
        w[0].is_ascii_alphanumeric() && code_connector(w[1]) && w[2].is_ascii_alphanumeric()
    });
    let inner = b.windows(2).any(|w| {
        (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
            || (w[0].is_ascii_alphabetic() && w[1].is_ascii_digit())
    });
    letters && (joined || (b[0].is_ascii_alphabetic() && inner))
}

/// The IDF-weighted share of the query carried by identifier-like words
/// ([`identifier_like`]) that the best lexical page (the first of `hits`,
/// when the first `lexical` came from the lexical side) holds whole, in
/// [0, 1]: how much of the question is a name the docs print.
pub(super) fn named_share(
    hits: &[PageHit],
    lexical: usize,
    queries: &HashMap<usize, SourceQuery<'_>>,
) -> f64 {
    let Some(top) = hits.first().filter(|_| lexical > 0) else {
        return 0.0;
    };
    let Some(q) = queries.get(&top.source) else {
        return 0.0;
    };
    let whole = top
        .sections
        .iter()
        .fold(0u64, |acc, s| acc | (s.mask & !s.partial));
    let (mut named, mut total) = (0.0, 0.0);
    for (i, (g, w)) in q.groups.iter().zip(&q.weights).enumerate() {
        if g.added {
            continue;
        }
        total += w;
        if i < 64 && whole & (1 << i) != 0 && !g.corrected && identifier_like(&g.word) {
            named += w;
        }
    }
    if total > 0.0 {
        named / total
    } else {
        0.0
    }
}

/// Page vectors: each hit's rank becomes its lexical rank relative to the
/// best page (0 for pages only the dense side found, which follow the first
/// `lexical` hits) plus the cosine weight × its page's cosine `cos_of`; then
/// hits are sorted. The weight grows with [`uncovered_share`] by
/// `levers.cosine_adaptive` and shrinks with the query's `named` share (see
/// [`named_share`]) by `levers.cosine_named`. `words_of` (the page's score
/// by the words of the questions asked of it, relative to the best page's)
/// is added at `levers.asked_words` where the best lexical page leaves the
/// query uncovered (its share to the power `levers.asked_words_adaptive`),
/// and yields to a name as the cosine does.
pub(super) fn fuse_page_cosines(
    hits: &mut [PageHit],
    lexical: usize,
    levers: &FamilyLevers,
    named: f64,
    cos_of: impl Fn(&PageHit) -> f32,
    words_of: impl Fn(&PageHit) -> f32,
) {
    let weight = levers.cosine
        * (1.0 + levers.cosine_adaptive * uncovered_share(hits, lexical))
        * (1.0 - levers.cosine_named * named).max(0.0)
        * (1.0 - levers.cosine_lead * lexical_lead(hits, lexical)).max(0.0);
    // The questions' words yield to a name the docs print, as the cosine
    // does, and count where the page's own words miss.
    let words_weight = levers.asked_words
        * (1.0 - levers.cosine_named * named).max(0.0)
        * uncovered_share(hits, lexical).powf(levers.asked_words_adaptive);
    let top_lexical = hits.first().map(|h| h.rank).unwrap_or(0.0);
    let top = if lexical > 0 && top_lexical > 0.0 {
        top_lexical
    } else {
        1.0
    };
    for (i, h) in hits.iter_mut().enumerate() {
        let cos = cos_of(h);
        h.cosine = cos;
        let lex = if i < lexical { h.rank / top } else { 0.0 };
        h.fused = super::Fused {
            lexical: lex,
            cosine: weight * f64::from(cos.max(0.0)),
            words: words_weight * f64::from(words_of(h)),
        };
        h.rank = h.fused.sum();
    }
    sort_hits(hits, |h| h.rank);
}

/// The query's own words (not those feedback added) as
/// [`crate::search::asked_words::AskedWords`] matches them: each word's
/// terms, as typed (typo tolerance corrects toward the docs' words, which
/// the questions need not share), and its weight.
pub(super) fn asked_word_groups(base: &[TermGroup]) -> Vec<(&[String], f32)> {
    base.iter()
        .filter(|g| !g.added)
        .map(|g| (g.terms.as_slice(), g.weight))
        .collect()
}

/// Pages joined for the words of the questions asked of them, per source.
const ASKED_WORDS_CANDIDATES: usize = 20;

/// Sections taken from the dense side per query (at least).
const DENSE_CANDIDATES: usize = 100;
