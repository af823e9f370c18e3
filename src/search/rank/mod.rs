//! Ranking shared by every search tool: sections, then pages.
//!
//! Two steps. tantivy's BM25 over title, headings, description and body picks
//! candidate sections; each candidate is then scored by how much of the query
//! it covers, weighting each query word by its rarity (IDF). The coverage is
//! what makes scores comparable across queries and sources: a query whose rare
//! words appear nowhere in the docs scores low however common its other words
//! are — which is what "under 0.5 means probably not covered" needs.
//!
//! Answers are *units*, not raw sections: the parts an overlong section was
//! split into (a long Godot member description, say) are one answer, covered
//! by the union of their words. Pages are ranked by their best unit, lifted
//! when their matching units together cover more of the query than the best
//! one alone — a page that answers the whole question beats one that shares a
//! single rare word with it.
//!
//! When the best page of this pass covers the query poorly (the user's
//! words, not the docs'), the words its best pages share are added at a low
//! weight and the ranking runs again (pseudo-relevance feedback, per tool
//! family): "render ten thousand grass blades" finds performance pages that
//! speak of `MultiMesh`, and `multimesh` finds the page on using it. Added words rank pages but never count in
//! coverage, so the shown score still says how much of the *question* a page
//! holds.
//!
//! Word presence is read from the index's postings, and feedback's words
//! from the term counts of each unit's head the build made
//! ([`crate::index::UnitTerms`]): no text is analyzed at query time but the
//! query's.

mod config;
mod fuse;
mod scores;

pub use config::{FamilyLevers, RankConfig};
use fuse::asked_word_groups;
pub use scores::{assign_scores, calibrate, sort_hits};

use std::collections::HashMap;

use super::{Library, LoadedSource};
use crate::index::{query_groups, query_groups_all, FieldWeights, IndexError, Scan, TermGroup};
use crate::model::VectorUnit;

/// A question's vector as the model made it (shared with its cache).
type QueryVector = std::sync::Arc<[f32]>;

/// Candidate units taken from the index per source (at least; more when
/// more pages are wanted). Past the first few dozen BM25 candidates the
/// re-scoring no longer changes the top of the list.
const CANDIDATES: usize = 60;
/// Candidate units per wanted page.
const PER_PAGE: usize = 5;
/// Candidates when a filter will drop many of them.
const FILTERED_CANDIDATES: usize = 2000;

/// Candidate units per source for `want_pages` pages.
fn candidates(want_pages: usize) -> usize {
    CANDIDATES.max(want_pages * PER_PAGE)
}

/// In how many of the feedback pages a word must be: a word one page
/// repeats is that page's topic, a word several share is the question's.
const FEEDBACK_MIN_PAGES: usize = 2;

/// Share of a group's weight counted when only its corrected spelling matched.
const CORRECTED_CREDIT: f64 = 0.7;

/// Hits whose pages are read for a phrase the query quotes
/// ([`Library::rank_quoted_higher`]): on the pool, 30 lost two of its
/// three gains and 50 kept them.
const QUOTED_PAGES: usize = 50;

/// A filter on candidate sections: (source, section number) → keep?
pub type SectionFilter<'a> = &'a (dyn Fn(&LoadedSource, usize) -> bool + Sync);

/// A scored candidate unit, represented by its best-matching section.
#[derive(Debug, Clone)]
pub struct Scored {
    pub source: usize,
    pub section: usize,
    pub bm25: f32,
    /// IDF-weighted share of the query the unit covers, in [0, 1].
    pub coverage: f64,
    /// Which query groups the unit covers (bit per group).
    pub mask: u64,
    /// Which of those it holds only as parts, not whole.
    pub partial: u64,
    pub rank_score: f64,
}

/// A page with its matching units, best first.
#[derive(Debug, Clone)]
pub struct PageHit {
    pub source: usize,
    pub page: usize,
    pub sections: Vec<Scored>,
    /// IDF-weighted share of the query the page's matching units cover together.
    pub coverage: f64,
    /// What pages are ordered by.
    pub rank: f64,
    /// Cosine of the page's best section to the query (dense retrieval), 0 without.
    pub cosine: f32,
    /// IDF-weighted share of the query the words of the questions asked of
    /// the page cover (see [`crate::search::asked_words::Coverage::of`]),
    /// 0 without.
    pub asked_coverage: f64,
    /// The score shown to agents, in [0, 1]; non-increasing down a result list.
    pub score: f64,
    /// What the page's rank was made of where page cosines were fused
    /// (zero elsewhere): read by the `docsnap::explain` debug log.
    pub fused: Fused,
}

/// The parts of a fused page rank ([`fuse::fuse_page_cosines`]): the
/// lexical rank relative to the best lexical page, the cosine and the
/// questions' words, each times its weight for this query. Their sum is
/// the rank the fusion gave; steps after it (a named product, an area, a
/// variant, a quoted phrase) multiply it, so `rank / sum` is what they did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fused {
    pub lexical: f64,
    pub cosine: f64,
    pub words: f64,
}

impl Fused {
    /// The rank the fusion gave.
    pub fn sum(&self) -> f64 {
        self.lexical + self.cosine + self.words
    }
}

/// Log, at debug level on the `docsnap::explain` target, what a shown hit's
/// rank was made of (`DOCSNAP_LOG=docsnap::explain=debug`): why a page is
/// where it is, for whoever tunes the ranking or doubts an answer. `sec` is
/// the hit's shown section; its URL is only formatted when the log is on.
pub fn explain(tool: &str, place: usize, sec: &crate::model::Section, h: &PageHit) {
    let fused = h.fused.sum();
    if fused > 0.0 {
        tracing::debug!(
            target: "docsnap::explain",
            "{tool} #{place} {}: rank {:.4} = (lexical {:.4} + cosine {:.4} + questions' words {:.4}) x {:.3} after fusion; coverage {:.3}, cosine {:.3}, score {:.3}",
            sec.url_with_anchor(),
            h.rank,
            h.fused.lexical,
            h.fused.cosine,
            h.fused.words,
            h.rank / fused,
            h.coverage,
            h.cosine,
            h.score,
        );
    } else {
        // Not fused from page cosines (reciprocal-rank fusion with a
        // static model's section vectors): there are no parts to show.
        tracing::debug!(
            target: "docsnap::explain",
            "{tool} #{place} {}: rank {:.4}; coverage {:.3}, cosine {:.3}, score {:.3}",
            sec.url_with_anchor(),
            h.rank,
            h.coverage,
            h.cosine,
            h.score,
        );
    }
}

impl PageHit {
    /// The best unit.
    pub fn best(&self) -> &Scored {
        &self.sections[0]
    }
}

/// What the lexical passes leave for dense fusion: the ranked pages, each
/// source's scan (fusion scores the pages it adds into them) and the
/// query's own groups (the added feedback words are not among them).
struct LexicalRanking<'a> {
    hits: Vec<PageHit>,
    queries: HashMap<usize, SourceQuery<'a>>,
    groups: Vec<TermGroup>,
}

/// The query groups as one source reads them, with their weights, and the
/// scan of the source's postings for them.
struct SourceQuery<'a> {
    groups: Vec<TermGroup>,
    weights: Vec<f64>,
    parts_credit: f64,
    /// Sections in the source's index (for IDF weights).
    docs: u64,
    /// How many sections the scan keeps.
    limit: usize,
    wants: MaskTerms,
    scan: Scan<'a>,
}

impl<'a> SourceQuery<'a> {
    /// Read the query against one source, keeping its `limit` best sections.
    fn new(
        src: &'a LoadedSource,
        base: &[TermGroup],
        rank: &RankConfig,
        limit: usize,
        fields: &FieldWeights,
    ) -> Result<SourceQuery<'a>, IndexError> {
        let base = if rank.aliases {
            src.aliases.expand_groups(base)
        } else {
            std::borrow::Cow::Borrowed(base)
        };
        let groups = if rank.typos {
            src.index.correct(&base)?
        } else {
            base.into_owned()
        };
        let wants = MaskTerms::of(&groups);
        let scan = src.index.scan(&groups, &wants.terms, limit, fields)?;
        let docs = src.index.num_docs();
        let weights = group_weights(docs, scan.group_doc_freq());
        Ok(SourceQuery {
            groups,
            weights,
            docs,
            limit,
            parts_credit: rank.parts_credit,
            wants,
            scan,
        })
    }

    /// Add the words pseudo-relevance feedback chose: scored into the same
    /// scan, weighted by their rarity like the query's own.
    fn add_groups(&mut self, extra: &[TermGroup]) -> Result<(), IndexError> {
        self.scan.add_groups(extra, self.limit)?;
        self.groups.extend(extra.iter().cloned());
        self.weights = group_weights(self.docs, self.scan.group_doc_freq());
        Ok(())
    }

    /// Coverage of a set of groups (bit mask; `partial`: those held only
    /// as parts), in [0, 1].
    fn coverage(&self, mask: u64, partial: u64) -> f64 {
        // Words the ranking added rank pages but do not measure how much of
        // the query they cover: the shown score keeps its meaning.
        let total: f64 = self
            .groups
            .iter()
            .zip(&self.weights)
            .filter(|(g, _)| !g.added)
            .map(|(_, w)| w)
            .sum();
        if total <= 0.0 {
            return 0.0;
        }
        let mut got = 0.0;
        for (i, (g, w)) in self.groups.iter().zip(&self.weights).enumerate() {
            if i < 64 && mask & (1 << i) != 0 && !g.added {
                let parts = if partial & (1 << i) != 0 {
                    self.parts_credit
                } else {
                    1.0
                };
                got += parts
                    * if g.corrected {
                        w * CORRECTED_CREDIT
                    } else {
                        *w
                    };
            }
        }
        got / total
    }
}

impl Library {
    fn query_of(query: &str) -> Vec<TermGroup> {
        let groups = query_groups(query);
        if groups.is_empty() {
            // Nothing but stop words: search them rather than nothing.
            query_groups_all(query)
        } else {
            groups
        }
    }

    /// Candidate units of the given sources that pass `keep`, best first.
    pub fn rank_sections(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
    ) -> Result<Vec<Scored>, IndexError> {
        Ok(self
            .rank_units(
                sources,
                &Self::query_of(query),
                keep,
                want_pages,
                &FieldWeights::default(),
            )?
            .0)
    }

    fn rank_units(
        &self,
        sources: &[usize],
        base: &[TermGroup],
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        fields: &FieldWeights,
    ) -> Result<(Vec<Scored>, HashMap<usize, SourceQuery<'_>>), IndexError> {
        let mut queries = HashMap::new();
        if base.is_empty() {
            return Ok((Vec::new(), queries));
        }
        // Many more sections when a filter will drop most of them.
        let wanted = candidates(want_pages);
        let limit = if keep.is_some() {
            FILTERED_CANDIDATES.max(wanted)
        } else {
            wanted
        };
        for &si in sources {
            let q = SourceQuery::new(&self.sources[si], base, &self.rank, limit, fields)?;
            queries.insert(si, q);
        }
        Ok((self.units_of(sources, &queries, keep, wanted), queries))
    }

    /// The candidate units of each source's scan, scored and ranked.
    fn units_of(
        &self,
        sources: &[usize],
        queries: &HashMap<usize, SourceQuery<'_>>,
        keep: Option<SectionFilter<'_>>,
        wanted: usize,
    ) -> Vec<Scored> {
        let mut out = Vec::new();
        for &si in sources {
            let src = &self.sources[si];
            let Some(q) = queries.get(&si) else { continue };
            // Units in BM25 order; a unit's score is its best part's.
            let mut units: Vec<(usize, f32, usize)> = Vec::new(); // (unit start, bm25, best section)
            let mut seen = rustc_hash::FxHashSet::default();
            for &(bm25, sec) in q.scan.top() {
                if let Some(k) = keep {
                    if !k(src, sec) {
                        continue;
                    }
                }
                let unit = if self.rank.units {
                    src.unit_of(sec)
                } else {
                    sec..sec + 1
                };
                if !seen.insert(unit.start) {
                    continue;
                }
                units.push((unit.start, bm25, sec));
                if units.len() >= wanted {
                    break;
                }
            }
            let masks = q.wants.unit_masks(src, &q.scan, &units);
            for ((_, bm25, sec), (mask, partial)) in units.into_iter().zip(masks) {
                out.push(Scored {
                    source: si,
                    section: sec,
                    bm25,
                    coverage: q.coverage(mask, partial),
                    mask,
                    partial,
                    rank_score: 0.0,
                });
            }
        }
        let max_bm25 = out.iter().map(|s| s.bm25).fold(0.0f32, f32::max).max(1e-6);
        for s in &mut out {
            let rel = (s.bm25 / max_bm25) as f64;
            let src = &self.sources[s.source];
            // Popularity prior: pages and sections the docs link to often are
            // the ones readers are sent to (Node.add_child over TreeItem.add_child).
            let links = src.section_inlinks[s.section] as f64;
            let prior = 1.0 + self.rank.inlink_weight * (1.0 + links).ln();
            s.rank_score = rel * (0.35 + s.coverage).powf(self.rank.coverage_power) * prior;
        }
        out.sort_by(|a, b| {
            b.rank_score
                .total_cmp(&a.rank_score)
                .then(a.source.cmp(&b.source))
                .then(a.section.cmp(&b.section))
        });
        out
    }

    /// [`Library::rank_pages`] in an order that does not depend on how many
    /// pages are wanted. How deep the candidate cut goes grows with
    /// `want_pages`, and a deeper cut re-scores other units, so a larger
    /// `limit` used to reshuffle the first hits (the dev set's top five
    /// differed between limit 5 and 20 in 96 of 300 questions). Here the
    /// order is always the one `order_pages` (the tool's default) gives;
    /// when that ranking holds fewer than `want_pages` pages, a deeper one's
    /// further pages follow. A larger limit then shows the same first hits
    /// and more after them. A tool's own reordering (`reorder`: boosts,
    /// deprecated last) runs within each of the two parts, or an appended
    /// page could climb into the first ones; the scores are assigned after
    /// it.
    #[allow(clippy::too_many_arguments)]
    pub fn rank_pages_stable(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        order_pages: usize,
        levers: FamilyLevers,
        reorder: impl Fn(&mut [PageHit]),
    ) -> Result<Vec<PageHit>, IndexError> {
        let (mut hits, qv) =
            self.rank_pages_with(sources, query, keep, order_pages, levers, None)?;
        let ordered = hits.len();
        if ordered < want_pages && want_pages > order_pages {
            // The second ranking compares the question's vector the first
            // one made: embedding it is most of a question's cost, and a
            // server's cache of recent questions may be off (or full).
            let (deeper, _) = self.rank_pages_with(sources, query, keep, want_pages, levers, qv)?;
            let listed: std::collections::HashSet<(usize, usize)> =
                hits.iter().map(|h| (h.source, h.page)).collect();
            let mut more: Vec<PageHit> = deeper
                .into_iter()
                .filter(|h| !listed.contains(&(h.source, h.page)))
                .collect();
            if let (Some(last), Some(first)) = (hits.last(), more.first()) {
                // The deeper ranking's ranks are relative to its own best
                // page: scaled, their order kept, below the last listed
                // page's, so that ranks read in list order for what compares
                // them across the list (one edition per page).
                let cap = last.rank * (1.0 - 1e-9);
                if first.rank > cap && first.rank > 0.0 {
                    let f = cap / first.rank;
                    for h in &mut more {
                        h.rank *= f;
                    }
                }
            }
            hits.extend(more);
        }
        let (first, more) = hits.split_at_mut(ordered);
        reorder(first);
        reorder(more);
        assign_scores(
            &mut hits,
            self.rank.monotone_scores,
            self.scores_by_meaning(sources, &levers),
        );
        Ok(hits)
    }

    /// Pages ranked by their best unit and what their units cover together,
    /// each with its matching units, scored (see [`assign_scores`]). With a
    /// model and `levers.dense > 0`, the lexical ranking is fused with the
    /// pages nearest to the query in meaning (see [`Library::fuse_dense`]);
    /// with a first pass that covers the query poorly, ranked again with
    /// words of its best pages (`levers.feedback > 0`, see
    /// [`Library::feedback_groups`]) and from a deeper candidate cut
    /// (`RankConfig::deep_candidates`).
    pub fn rank_pages(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        levers: FamilyLevers,
    ) -> Result<Vec<PageHit>, IndexError> {
        Ok(self
            .rank_pages_with(sources, query, keep, want_pages, levers, None)?
            .0)
    }

    /// [`Library::rank_pages`] with the question's vector when the caller
    /// has it already (`known`); returns the vector it compared, if any.
    fn rank_pages_with(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        levers: FamilyLevers,
        known: Option<QueryVector>,
    ) -> Result<(Vec<PageHit>, Option<QueryVector>), IndexError> {
        let weight = |m: &crate::embed::Embedder| match m.unit() {
            VectorUnit::Section => levers.dense,
            VectorUnit::Page => levers.cosine,
        };
        // The query is embedded only when some source has vectors to
        // compare it with: for the transformer that is most of a query's cost.
        let has_vectors = sources.iter().any(|&si| self.sources[si].vectors.is_some());
        let model = self
            .model
            .as_deref()
            .filter(|m| has_vectors && weight(m) > 0.0);
        let lexical = || self.rank_lexical(sources, query, keep, want_pages, &levers);
        // The question's vector and the lexical passes need nothing of each
        // other: with a second core free they overlap, and a question costs
        // the longer of the two instead of their sum.
        let (qv, lexical) = match (model, known) {
            (Some(_), Some(qv)) => (Some(qv), lexical()),
            (Some(m), None) => {
                let (qv, lex) = rayon::join(|| m.embed_query(query), lexical);
                (Some(qv), lex)
            }
            (None, _) => (None, lexical()),
        };
        let LexicalRanking {
            mut hits,
            mut queries,
            groups: base,
        } = lexical?;
        if let Some(qv) = &qv {
            self.fuse_dense(
                &mut hits,
                sources,
                &base,
                qv,
                keep,
                want_pages,
                &levers,
                &mut queries,
            )?;
        } else {
            self.fuse_words(&mut hits, sources, &base, keep, &levers, &mut queries)?;
        }
        self.rank_unasked_lower(&mut hits, query);
        self.rank_quoted_higher(&mut hits, query);
        if self.rank.asked_scores > 0.0 {
            self.cover_by_questions(&mut hits, &base);
        }
        assign_scores(
            &mut hits,
            self.rank.monotone_scores,
            qv.is_some() && self.scores_by_meaning(sources, &levers),
        );
        Ok((hits, qv))
    }

    /// Pages that hold a phrase the query quotes (see [`super::quoted`])
    /// rank at `RankConfig::quoted_phrase` times their rank, then hits are
    /// sorted again. Only the first [`QUOTED_PAGES`] hits are read, every
    /// section of each: the phrase's words found them (not always by the
    /// section that holds it whole), and reading all of a question's
    /// candidates (hundreds of pages) cost up to 19 ms more per question.
    fn rank_quoted_higher(&self, hits: &mut [PageHit], query: &str) {
        let f = self.rank.quoted_phrase;
        if f == 1.0 {
            return;
        }
        let phrases = super::quoted::quoted_phrases(query);
        if phrases.is_empty() {
            return;
        }
        let mut moved = false;
        for h in hits.iter_mut().take(QUOTED_PAGES) {
            let src = &self.sources[h.source];
            let held = (src.page_sections[h.page].clone())
                .any(|s| (phrases.iter()).any(|p| super::quoted::holds(&src.sections[s].text, p)));
            if held {
                h.rank *= f;
                moved = true;
            }
        }
        if moved {
            sort_hits(hits, |h| h.rank);
        }
    }

    /// Pages the query does not ask for rank lower, then hits are sorted
    /// again: a page in an area of its source (see [`crate::model::Area`])
    /// that the query does not name at `RankConfig::other_area` of its rank,
    /// and a page whose title holds only the other word of a variant pair
    /// the query names one word of (`RigidBody3D` for "my 2D crate", see
    /// [`super::variants`]) at `RankConfig::other_variant`.
    fn rank_unasked_lower(&self, hits: &mut [PageHit], query: &str) {
        let (fa, fv) = (self.rank.other_area, self.rank.other_variant);
        let areas = fa != 1.0
            && hits
                .iter()
                .any(|h| self.sources[h.source].area_of(h.page).is_some());
        let variants = fv != 1.0
            && hits
                .iter()
                .any(|h| !self.sources[h.source].variants.is_empty());
        if !areas && !variants {
            return;
        }
        let words = crate::util::lower_words(query);
        let title_words = super::variants::title_words(query);
        // The sides the query names, per source (sources hold their pairs).
        let mut named: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut moved = false;
        for h in hits.iter_mut() {
            let src = &self.sources[h.source];
            let mut f = 1.0;
            if let Some(area) = src.area_of(h.page).filter(|_| areas) {
                if !area.named_by.iter().any(|w| words.contains(w)) {
                    f *= fa;
                }
            }
            if variants && !src.variants.is_empty() {
                let n = named
                    .entry(h.source)
                    .or_insert_with(|| src.variants.named(&title_words));
                if src.variants.is_other(n, h.page) {
                    f *= fv;
                }
            }
            if f != 1.0 {
                h.rank *= f;
                moved = true;
            }
        }
        if moved {
            sort_hits(hits, |h| h.rank);
        }
    }

    /// Each hit's [`PageHit::asked_coverage`]: how much of the query's own
    /// words (`base`, feedback's left out) the questions asked of its page
    /// hold.
    fn cover_by_questions(&self, hits: &mut [PageHit], base: &[TermGroup]) {
        let groups = asked_word_groups(base);
        // Looked up once per source, then one binary search a word a hit.
        let mut by_source: HashMap<usize, Option<crate::search::asked_words::Coverage>> =
            HashMap::new();
        for h in hits {
            let c = by_source.entry(h.source).or_insert_with(|| {
                (self.sources[h.source].asked_words.as_ref()).map(|w| w.coverage(&groups))
            });
            if let Some(c) = c {
                h.asked_coverage = self.rank.asked_scores * c.of(h.page);
            }
        }
    }

    /// Whether shown scores take in the page cosine (see [`assign_scores`]):
    /// with `RankConfig::cosine_scores`, a model of page vectors the levers
    /// fuse, and a source that has them.
    fn scores_by_meaning(&self, sources: &[usize], levers: &FamilyLevers) -> bool {
        self.rank.cosine_scores && self.fuses_page_cosines(sources, levers)
    }

    /// Whether a ranking of `sources` with `levers` fuses the words with
    /// page cosines: a model of page vectors, a cosine weight, and a
    /// source that has them. Without, the words alone rank, and levers
    /// that weigh evidence beside them weigh it otherwise.
    pub(crate) fn fuses_page_cosines(&self, sources: &[usize], levers: &FamilyLevers) -> bool {
        levers.cosine > 0.0
            && self
                .model
                .as_deref()
                .is_some_and(|m| m.unit() == VectorUnit::Page)
            && sources.iter().any(|&si| self.sources[si].vectors.is_some())
    }

    /// The lexical part of [`Library::rank_pages`]: pages by their units'
    /// BM25 and coverage, ranked again with feedback's words when the first
    /// pass covers the query poorly; with the scans (dense fusion scores
    /// into them) and the query's groups.
    fn rank_lexical(
        &self,
        sources: &[usize],
        query: &str,
        keep: Option<SectionFilter<'_>>,
        want_pages: usize,
        levers: &FamilyLevers,
    ) -> Result<LexicalRanking<'_>, IndexError> {
        let base = Self::query_of(query);
        let (units, mut queries) =
            self.rank_units(sources, &base, keep, want_pages, &levers.fields)?;
        let mut hits = self.pages_of(units, &queries);
        // How much of the query the first pass's best page covers: both
        // feedback's weight and the depth of a second pass follow it.
        let top_cov = hits.first().map(|h| h.coverage).unwrap_or(1.0);
        let extra = self.feedback_groups(&hits, &base, levers.feedback, top_cov)?;
        // A first pass that covers the query poorly is read deeper: its
        // words are far from the docs' own, and the answer's units rank
        // below units that match one common word well.
        let r = &self.rank;
        let wanted = candidates(want_pages);
        let deep =
            (r.deep_candidates > wanted && top_cov < r.deep_below).then_some(r.deep_candidates);
        if !extra.is_empty() || deep.is_some() {
            let wanted = deep.unwrap_or(wanted);
            for q in queries.values_mut() {
                q.limit = q.limit.max(wanted);
                q.add_groups(&extra)?;
            }
            hits = self.pages_of(self.units_of(sources, &queries, keep, wanted), &queries);
        }
        Ok(LexicalRanking {
            hits,
            queries,
            groups: base,
        })
    }

    /// Group ranked units by page: each page ranked by its best unit, lifted
    /// by what its units cover together beyond it; best first.
    fn pages_of(
        &self,
        units: Vec<Scored>,
        queries: &HashMap<usize, SourceQuery<'_>>,
    ) -> Vec<PageHit> {
        let mut hits: Vec<PageHit> = Vec::new();
        let mut slot: rustc_hash::FxHashMap<(usize, usize), usize> = Default::default();
        for s in units {
            let page = self.sources[s.source].section_page[s.section];
            match slot.get(&(s.source, page)) {
                Some(&k) => hits[k].sections.push(s),
                None => {
                    slot.insert((s.source, page), hits.len());
                    hits.push(PageHit {
                        source: s.source,
                        page,
                        sections: vec![s],
                        coverage: 0.0,
                        rank: 0.0,
                        cosine: 0.0,
                        asked_coverage: 0.0,
                        score: 0.0,
                        fused: Fused::default(),
                    });
                }
            }
        }
        for h in &mut hits {
            let mask = h.sections.iter().fold(0u64, |m, s| m | s.mask);
            let whole = h
                .sections
                .iter()
                .fold(0u64, |m, s| m | (s.mask & !s.partial));
            h.coverage = queries
                .get(&h.source)
                .map(|q| q.coverage(mask, mask & !whole))
                .unwrap_or(0.0);
            let best = h.best();
            let gain = (h.coverage - best.coverage).max(0.0);
            h.rank = best.rank_score * (1.0 + self.rank.page_union * gain);
        }
        sort_hits(&mut hits, |h| h.rank);
        hits
    }

    /// Pseudo-relevance feedback (RM3's idea): the words the best pages of
    /// a first pass share and the query lacks, as extra low-weight query
    /// words for a second pass. A user's words ("ten thousand grass blades")
    /// often find pages near the answer whose own words ("multimesh") find it.
    /// The less of the query the best page covers (`top_cov`), the more
    /// they count.
    fn feedback_groups(
        &self,
        hits: &[PageHit],
        base: &[TermGroup],
        weight: f64,
        top_cov: f64,
    ) -> Result<Vec<TermGroup>, IndexError> {
        let r = &self.rank;
        let weight = weight * (1.0 - top_cov).max(0.0).powf(r.feedback_adaptive);
        if r.feedback_pages == 0 || r.feedback_terms == 0 || weight <= 0.0 || hits.is_empty() {
            return Ok(Vec::new());
        }
        let known: rustc_hash::FxHashSet<&str> = base
            .iter()
            .flat_map(|g| g.terms.iter().chain(&g.atoms))
            .map(String::as_str)
            .collect();
        // Per term: summed share of each feedback text, and in how many.
        // The counts of each unit's head were made at build time
        // (`UnitTerms`); only the query's own words are dropped here.
        let mut stats: rustc_hash::FxHashMap<&str, (f64, usize)> = Default::default();
        let fb = &hits[..hits.len().min(r.feedback_pages)];
        for h in fb {
            let src = &self.sources[h.source];
            let start = src.unit_of(h.best().section).start;
            let (n, terms) = src.unit_terms.unit(start);
            for (t, c) in terms {
                if known.contains(t) {
                    continue;
                }
                let e = stats.entry(t).or_default();
                e.0 += c as f64 / n.max(1) as f64;
                e.1 += 1;
            }
        }
        let min_docs = FEEDBACK_MIN_PAGES.min(fb.len());
        let mut cands: Vec<(&str, f64)> = stats
            .into_iter()
            .filter(|(_, (_, d))| *d >= min_docs)
            .map(|(t, (p, _))| (t, p))
            .collect();
        cands.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        cands.truncate(r.feedback_terms * 4);
        let mut srcs: Vec<usize> = fb.iter().map(|h| h.source).collect();
        srcs.sort_unstable();
        srcs.dedup();
        let docs: u64 = srcs.iter().map(|&s| self.sources[s].index.num_docs()).sum();
        let mut scored = Vec::new();
        for (t, p) in cands {
            let mut df = 0;
            for &s in &srcs {
                df += self.sources[s].index.text_doc_freq(t)?;
            }
            if df < 2 {
                continue;
            }
            let idf = group_weights(docs, &[df])[0];
            scored.push((t, p * idf));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        Ok(scored
            .into_iter()
            .take(r.feedback_terms)
            .map(|(t, _)| TermGroup {
                word: t.to_string(),
                terms: vec![t.to_string()],
                atoms: Vec::new(),
                corrected: false,
                weight: weight as f32,
                added: true,
                also: Vec::new(),
            })
            .collect())
    }
}

/// The terms whose presence decides coverage: each group's whole form and
/// its atoms, with the term bits each group needs.
struct MaskTerms {
    terms: Vec<String>,
    /// Per group: (bit of its whole form, bits of its atoms, bits of its
    /// new names).
    needs: Vec<(u64, u64, u64)>,
}

impl MaskTerms {
    fn of(groups: &[TermGroup]) -> MaskTerms {
        let mut terms: Vec<String> = Vec::new();
        let mut bit = |t: &String| -> u64 {
            let i = match terms.iter().position(|x| x == t) {
                Some(i) => i,
                None => {
                    terms.push(t.clone());
                    terms.len() - 1
                }
            };
            if i < 64 {
                1 << i
            } else {
                0
            }
        };
        let needs = groups
            .iter()
            .map(|g| {
                if g.added {
                    // Not part of coverage: no bits spent on it.
                    return (0, 0, 0);
                }
                let whole = g.terms.first().map(&mut bit).unwrap_or(0);
                let atoms = g.atoms.iter().fold(0u64, |m, t| m | bit(t));
                let also = g.also.iter().fold(0u64, |m, t| m | bit(t));
                (whole, atoms, also)
            })
            .collect();
        MaskTerms { terms, needs }
    }

    /// For each unit (by its first section), which query groups it covers:
    /// a group counts when its whole form or all of its parts occur in any
    /// part of the unit (text, headings, page title or description). The
    /// second mask holds the groups covered by their parts alone.
    fn unit_masks(
        &self,
        src: &LoadedSource,
        scan: &Scan<'_>,
        units: &[(usize, f32, usize)],
    ) -> Vec<(u64, u64)> {
        units
            .iter()
            .map(|&(start, _, _)| {
                let have = src.unit_range(start).fold(0u64, |m, s| m | scan.mask(s));
                let (mut mask, mut partial) = (0u64, 0u64);
                for (g, &(whole, atoms, also)) in self.needs.iter().enumerate().take(64) {
                    // A new name of an old one is the word, whole.
                    let whole_ok = (whole != 0 && have & whole == whole) || have & also != 0;
                    let atoms_ok = atoms != 0 && have & atoms == atoms;
                    if whole_ok || atoms_ok {
                        mask |= 1 << g;
                    }
                    if atoms_ok && !whole_ok {
                        partial |= 1 << g;
                    }
                }
                (mask, partial)
            })
            .collect()
    }
}

/// IDF weight of each query group in one source: rare words count more; a
/// word absent from the docs counts most.
fn group_weights(docs: u64, doc_freqs: &[u64]) -> Vec<f64> {
    let n = docs.max(1) as f64;
    doc_freqs
        .iter()
        .map(|&df| {
            let df = df as f64;
            ((n - df + 0.5) / (df + 0.5) + 1.0).ln().max(0.05)
        })
        .collect()
}
#[cfg(test)]
mod tests {
    use super::fuse::{fuse_page_cosines, identifier_like, lexical_lead, named_share};
    use super::*;
    use crate::model::testing::page;
    use crate::model::{Page, Section};

    fn sec(url: &str, heading: &str, anchor: &str, text: &str, part: u32) -> Section {
        Section {
            url: url.into(),
            anchor: anchor.into(),
            heading_path: vec!["T".into(), heading.into()],
            level: 2,
            text: text.into(),
            ordinal: 0,
            part,
        }
    }

    /// Pages sorted by URL, sections grouped by page in page order.
    fn library(pages: Vec<Page>, sections: Vec<Section>) -> Library {
        crate::search::test_library(pages, sections)
    }

    const A: &str = "https://d.example/a";
    const B: &str = "https://d.example/b";
    const C: &str = "https://d.example/c";

    #[test]
    fn an_identifier_held_whole_outranks_its_scattered_parts() {
        // Both units hold `connect`, `one` and `shot`; only A holds the
        // constant. B is otherwise the stronger match (its words repeat).
        let lib = library(
            vec![page(A, "Object"), page(B, "Animation tree")],
            vec![
                sec(A, "ConnectFlags", "f", "CONNECT_ONE_SHOT disconnects after one emission.", 0),
                sec(
                    B,
                    "OneShot",
                    "o",
                    "One shot nodes play one animation once. Connect a one shot node; the shot ends.",
                    0,
                ),
            ],
        );
        let hits = lib
            .rank_pages(&[0], "CONNECT_ONE_SHOT", None, 5, FamilyLevers::default())
            .unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(hits[0].page, 0, "{hits:?}");
        assert!(hits[1].best().partial != 0 && hits[0].best().partial == 0);
        assert!(hits[1].coverage < hits[0].coverage, "{hits:?}");
        // Credited in full, the parts tie the whole word on coverage.
        let mut full = lib;
        full.rank.parts_credit = 1.0;
        let hits = full
            .rank_pages(&[0], "CONNECT_ONE_SHOT", None, 5, FamilyLevers::default())
            .unwrap();
        assert!(
            (hits[0].coverage - hits[1].coverage).abs() < 1e-9,
            "{hits:?}"
        );
    }

    #[test]
    fn an_old_name_finds_the_pages_of_the_new_one() {
        // A declares the rename; B is about the new name and never says the
        // old one; C shares the question's other word only.
        let lib = library(
            vec![
                page(A, "Frame node"),
                page(B, "Moving things"),
                page(C, "Bouncing"),
            ],
            vec![
                sec(
                    A,
                    "History",
                    "h",
                    "In version 1, FrameNode was named Widget.",
                    0,
                ),
                sec(
                    B,
                    "Tilt",
                    "t",
                    "Tilt a FrameNode with tilt_by(); FrameNode keeps its angle.",
                    0,
                ),
                sec(C, "Tilt", "t", "Tilt a ball as it bounces.", 0),
            ],
        );
        let order = |lib: &Library, q: &str| -> Vec<usize> {
            lib.rank_pages(&[0], q, None, 5, FamilyLevers::default())
                .unwrap()
                .iter()
                .map(|h| h.page)
                .collect()
        };
        let cov = |lib: &Library, q: &str, page: usize| {
            lib.rank_pages(&[0], q, None, 5, FamilyLevers::default())
                .unwrap()
                .iter()
                .find(|h| h.page == page)
                .map(|h| h.coverage)
        };
        // The new name's page holds the whole question, in the docs' words.
        assert_eq!(order(&lib, "Widget tilt")[0], 1);
        assert!((cov(&lib, "Widget tilt", 1).unwrap() - 1.0).abs() < 1e-9);
        // A plain capitalized old name maps only as the docs write it.
        assert!(cov(&lib, "widget tilt", 1).unwrap() < 0.9);
        // Without aliases the new name's page covers half the question.
        let mut off = lib;
        off.rank.aliases = false;
        assert!(cov(&off, "Widget tilt", 1).unwrap() < 0.9);
    }

    #[test]
    fn a_poorly_covered_query_reads_deeper_candidates() {
        // Eighty short pages say "node" again and again; the last page says
        // it once in a long text. BM25 puts it below the first cut.
        let n = 80;
        let url = |i: usize| format!("https://d.example/p{i:03}");
        let mut pages: Vec<Page> = (0..n).map(|i| page(&url(i), "Page")).collect();
        let mut sections: Vec<Section> = (0..n)
            .map(|i| sec(&url(i), "Nodes", "n", "Node node node.", 0))
            .collect();
        let long = format!(
            "{} The node sways in the wind.",
            "Cloth hangs from a frame and folds as it moves. ".repeat(12)
        );
        pages.push(page("https://d.example/z", "Page"));
        sections.push(sec("https://d.example/z", "Cloth", "c", &long, 0));
        let mut lib = library(pages, sections);
        let levers = FamilyLevers {
            dense: 0.0,
            feedback: 0.0,
            ..Default::default()
        };
        let finds_last = |lib: &Library, q: &str| {
            lib.rank_pages(&[0], q, None, 5, levers)
                .unwrap()
                .iter()
                .any(|h| h.page == n)
        };
        // Half of this question is a word no page holds: poorly covered.
        let poor = "node qqxqqzz";
        lib.rank.deep_candidates = 0;
        assert!(!finds_last(&lib, poor), "beyond the first cut");
        lib.rank.deep_candidates = 240;
        assert!(finds_last(&lib, poor), "the deeper cut reaches it");
        // A question the first pass covers whole is not read deeper.
        assert!(!finds_last(&lib, "node"));
    }

    #[test]
    fn feedback_reaches_a_page_only_the_docs_words_lead_to() {
        // The question's words find two pages that both speak of a "bus";
        // the page about buses shares no word with the question.
        let lib = library(
            vec![page(A, "Sliders"), page(B, "Mixing"), page(C, "Buses")],
            vec![
                sec(
                    A,
                    "Volume sliders",
                    "v",
                    "Volume sliders for music and sound effects: each slider sets a bus.",
                    0,
                ),
                sec(
                    B,
                    "Music",
                    "m",
                    "Music and sound effects play through a bus; the bus sets the volume.",
                    0,
                ),
                sec(
                    C,
                    "Buses",
                    "b",
                    "Route a player to a bus. A bus can be muted.",
                    0,
                ),
            ],
        );
        let q = "volume sliders for music and sound effects in a game";
        let on = FamilyLevers {
            dense: 0.0,
            feedback: 0.7,
            ..Default::default()
        };
        let without = lib
            .rank_pages(&[0], q, None, 5, FamilyLevers::default())
            .unwrap();
        assert!(without.iter().all(|h| h.page != 2), "no query word is on C");
        let with = lib.rank_pages(&[0], q, None, 5, on).unwrap();
        let c = with.iter().find(|h| h.page == 2).expect("feedback finds C");
        // C covers none of the question: its shown score says so.
        assert_eq!(c.score, 0.0);
        assert_eq!(
            with[0].page, without[0].page,
            "the first pass's best stays first"
        );
        // A query the first pass covers whole adds nothing.
        let full = "volume sliders";
        assert_eq!(
            lib.rank_pages(&[0], full, None, 5, on).unwrap().len(),
            lib.rank_pages(&[0], full, None, 5, FamilyLevers::default())
                .unwrap()
                .len()
        );
    }

    #[test]
    fn misspelled_words_find_their_nearest_spelling() {
        let lib = library(
            vec![page(A, "Layers"), page(B, "Sky"), page(C, "Audio")],
            vec![
                sec(
                    A,
                    "Scrolling",
                    "s",
                    "A parallax background scrolls slower.",
                    0,
                ),
                sec(B, "Depth", "d", "Use parallax for a background sky.", 0),
                sec(C, "Volume", "v", "Audio buses mix volume.", 0),
            ],
        );
        let hits = lib
            .rank_pages(&[0], "paralax backround", None, 5, FamilyLevers::default())
            .unwrap();
        assert!(!hits.is_empty(), "a misspelled query found nothing");
        assert!(hits.iter().all(|h| h.page != 2), "unrelated page matched");
        let groups = lib.sources[0]
            .index
            .correct(&query_groups("paralax backround"))
            .unwrap();
        assert!(groups.iter().all(|g| g.corrected), "{groups:?}");
        assert_eq!(groups[0].terms, ["parallax"]);
        // A word the docs have is never "corrected", and short words are left alone.
        let groups = lib.sources[0]
            .index
            .correct(&query_groups("parallax volum sky"))
            .unwrap();
        assert!(!groups[0].corrected && !groups[2].corrected, "{groups:?}");
        // A query of noise pays for a few lookups, not one per word: the
        // first `MAX_CORRECTED` unknown words are corrected, the rest kept.
        let noise: Vec<String> = (0..crate::index::MAX_CORRECTED + 3)
            .map(|i| {
                // "parallax" with one letter changed: each one edit away.
                let mut w: Vec<char> = "parallax".chars().collect();
                w[i % 8] = if i < 8 { 'q' } else { 'z' };
                w.into_iter().collect()
            })
            .collect();
        let noise = noise.join(" ");
        let groups = lib.sources[0].index.correct(&query_groups(&noise)).unwrap();
        let fixed = groups.iter().filter(|g| g.corrected).count();
        assert_eq!(fixed, crate::index::MAX_CORRECTED, "{groups:?}");
        assert!(groups[..fixed].iter().all(|g| g.corrected));
        // Corrected words count for less than the real ones.
        let exact = lib
            .rank_pages(
                &[0],
                "parallax background",
                None,
                5,
                FamilyLevers::default(),
            )
            .unwrap();
        assert!(
            exact[0].score > hits[0].score,
            "{} vs {}",
            exact[0].score,
            hits[0].score
        );
    }

    #[test]
    fn split_sections_answer_as_one_unit() {
        // Section "m" of page A was split in two parts; the query's words are
        // spread over both. Page B has one of the words, repeated.
        let lib = library(
            vec![page(A, "Node"), page(B, "Other")],
            vec![
                sec(A, "Intro", "", "Intro text.", 0),
                sec(A, "member", "m", "The member emits a signal when ready.", 1),
                sec(A, "member", "m", "It also frees the orphan children.", 2),
                sec(B, "signal", "x", "signal signal signal basics.", 0),
            ],
        );
        let units = lib
            .rank_sections(&[0], "signal orphan children", None, 5)
            .unwrap();
        let from_a: Vec<_> = units
            .iter()
            .filter(|u| u.section == 1 || u.section == 2)
            .collect();
        assert_eq!(
            from_a.len(),
            1,
            "the two parts answered separately: {units:?}"
        );
        assert!((from_a[0].coverage - 1.0).abs() < 1e-9, "{:?}", from_a[0]);
        let pages = lib
            .rank_pages(
                &[0],
                "signal orphan children",
                None,
                5,
                FamilyLevers::default(),
            )
            .unwrap();
        assert_eq!(pages[0].page, 0, "{pages:?}");
    }

    /// A page in an area of the docs (sources.yaml `areas`) ranks below
    /// the rest for a question that does not name the area, and where it
    /// would rank for one that does.
    #[test]
    fn pages_of_an_area_the_query_does_not_name_rank_lower() {
        const SDK: &str = "https://d.example/sdk/hooks";
        const CLI: &str = "https://d.example/hooks";
        let mut lib = library(
            vec![page(CLI, "Hooks"), page(SDK, "Hooks in the SDK")],
            vec![
                sec(
                    CLI,
                    "Hooks",
                    "h",
                    "Hooks run a command before a tool call, or after it, or when a session starts or ends.",
                    0,
                ),
                sec(
                    SDK,
                    "Hooks",
                    "h",
                    "Hooks run a command before a tool call; hooks block a tool call.",
                    0,
                ),
            ],
        );
        let first = |lib: &Library, q: &str| {
            let hits = lib
                .rank_pages(&[0], q, None, 5, FamilyLevers::default())
                .unwrap();
            assert_eq!(hits.len(), 2, "{q}: {hits:?}");
            for w in hits.windows(2) {
                assert!(w[0].score >= w[1].score, "{q}: {hits:?}");
            }
            lib.sources[0].pages[hits[0].page].url.clone()
        };
        let q = "hooks before a tool call";
        // Without areas the SDK page is the better match.
        assert_eq!(first(&lib, q), SDK);
        lib.rank.other_area = 0.1;
        lib.sources[0].manifest.areas = vec![crate::model::Area {
            pages: "^https://d\\.example/sdk/".into(),
            named_by: vec!["sdk".into()],
        }];
        lib.sources[0].page_area = lib.sources[0].areas_of_pages().unwrap();
        assert_eq!(lib.sources[0].page_area, [0, 1]);
        assert_eq!(first(&lib, q), CLI);
        assert_eq!(first(&lib, "SDK hooks before a tool call"), SDK);
        // A factor of 1 leaves the ranking as it was.
        lib.rank.other_area = 1.0;
        assert_eq!(first(&lib, q), SDK);
    }

    #[test]
    fn shown_scores_never_rise_down_the_list() {
        let lib = library(
            vec![page(A, "Tween"), page(B, "Tween tween"), page(C, "Timer")],
            vec![
                sec(
                    A,
                    "Easing",
                    "e",
                    "Tween easing curves and the timer node.",
                    0,
                ),
                sec(B, "Tween", "t", "tween tween tween tween", 0),
                sec(C, "Timer", "m", "A timer node counts down easing.", 0),
            ],
        );
        for q in ["tween easing timer", "tween", "timer node easing curves"] {
            let hits = lib
                .rank_pages(&[0], q, None, 5, FamilyLevers::default())
                .unwrap();
            assert!(hits.len() >= 2, "{q}: {hits:?}");
            for w in hits.windows(2) {
                assert!(
                    w[0].score >= w[1].score,
                    "{q}: {} then {}",
                    w[0].score,
                    w[1].score
                );
            }
        }
    }

    /// Without a model, a page whose questions hold the query's words joins
    /// the lexical ranking and leads it where the docs' own words miss; at
    /// weight 0 the ranking is the lexical one.
    #[test]
    fn without_a_model_the_questions_words_find_their_page() {
        let mut lib = library(
            vec![
                page(A, "Scenes"),
                page(B, "Random numbers"),
                page(C, "Timers"),
            ],
            vec![
                sec(
                    A,
                    "Instancing",
                    "i",
                    "Instance a packed scene and add it as a child.",
                    0,
                ),
                sec(
                    B,
                    "Random",
                    "r",
                    "Random positions for enemies that spawn.",
                    0,
                ),
                sec(C, "Timer", "t", "A timer node counts down.", 0),
            ],
        );
        lib.sources[0].asked_words = Some(crate::search::asked_words::AskedWords::new(
            3,
            [
                ("enemies drop loot coins when they die", 0),
                ("spawn a pickup where the enemy died", 0),
                ("pick a random number", 1),
            ],
        ));
        let levers = |w: f64| FamilyLevers {
            asked_words_lexical: w,
            asked_words_adaptive: 1.0,
            ..FamilyLevers::default()
        };
        let rank = |w: f64| {
            lib.rank_pages(&[0], "enemies drop loot coins", None, 5, levers(w))
                .unwrap()
        };
        let pages = |w: f64| rank(w).iter().map(|h| h.page).collect::<Vec<_>>();
        // Lexically only B holds a word of the query ("enemies").
        assert_eq!(pages(0.0), vec![1]);
        // With the words, A (whose questions say it all) joins and leads.
        assert_eq!(pages(6.0)[0], 0);
        for w in rank(6.0).windows(2) {
            assert!(w[0].score >= w[1].score, "scores in order");
        }
    }

    /// Page hits of source 0 with no sections, from `(page, rank, coverage)`.
    fn page_hits(rows: &[(usize, f64, f64)]) -> Vec<PageHit> {
        rows.iter()
            .map(|&(page, rank, coverage)| PageHit {
                source: 0,
                page,
                sections: Vec::new(),
                coverage,
                rank,
                cosine: 0.0,
                asked_coverage: 0.0,
                score: 0.0,
                fused: Fused::default(),
            })
            .collect()
    }

    /// The cosine weight grows only where the best lexical page leaves
    /// much of the query uncovered: there a page the meaning favours
    /// overtakes one that shares a few of the query's words by chance.
    #[test]
    fn cosine_weight_grows_where_the_words_miss() {
        // Page 0: best lexically, far from the query's meaning; page 1: half
        // its lexical rank, nearer in meaning; page 2: found by meaning only.
        let hits =
            |top_coverage: f64| page_hits(&[(0, 2.0, top_coverage), (1, 1.2, 0.3), (2, 0.0, 0.0)]);
        let cos = |h: &PageHit| [0.30f32, 0.42, 0.05][h.page];
        let order = |top_coverage: f64, adaptive: f64| {
            let levers = FamilyLevers {
                cosine: 2.75,
                cosine_adaptive: adaptive,
                ..FamilyLevers::default()
            };
            let mut h = hits(top_coverage);
            fuse_page_cosines(&mut h, 2, &levers, 0.0, cos, |_| 0.0f32);
            assert_eq!(
                h[2].page, 2,
                "a page only the dense side found stays behind"
            );
            h.iter().map(|h| h.page).collect::<Vec<_>>()
        };
        // A fixed weight keeps the lexical winner (1 + 0.825 against
        // 0.6 + 1.155), whatever the coverage.
        assert_eq!(order(0.4, 0.0), vec![0, 1, 2]);
        assert_eq!(order(1.0, 0.0), vec![0, 1, 2]);
        // Adaptive: 60% of the query uncovered makes the weight 4.4, and
        // meaning decides; a fully covered query keeps the fixed weight.
        assert_eq!(order(0.4, 1.0), vec![1, 0, 2]);
        assert_eq!(order(1.0, 1.0), vec![0, 1, 2]);
    }

    /// A fused rank keeps its parts, for the `docsnap::explain` log: the
    /// lexical rank relative to the best lexical page, the cosine and the
    /// questions' words, each times its weight, adding up to the rank.
    #[test]
    fn a_fused_rank_keeps_its_parts() {
        let mut h = page_hits(&[(0, 2.0, 0.5), (1, 1.0, 0.5), (2, 0.0, 0.0)]);
        let levers = FamilyLevers {
            cosine: 2.0,
            asked_words: 3.0,
            asked_words_adaptive: 1.0,
            ..FamilyLevers::default()
        };
        let cos = |h: &PageHit| [0.5f32, 0.25, 0.75][h.page];
        let words = |h: &PageHit| [0.0f32, 1.0, 0.5][h.page];
        fuse_page_cosines(&mut h, 2, &levers, 0.0, cos, words);
        let parts = |page: usize| h.iter().find(|h| h.page == page).unwrap().fused;
        // The best lexical page leaves half the query uncovered: the
        // questions' words weigh 3 × 0.5.
        assert_eq!(
            parts(0),
            Fused {
                lexical: 1.0,
                cosine: 1.0,
                words: 0.0
            }
        );
        assert_eq!(
            parts(1),
            Fused {
                lexical: 0.5,
                cosine: 0.5,
                words: 1.5
            }
        );
        assert_eq!(
            parts(2),
            Fused {
                lexical: 0.0,
                cosine: 1.5,
                words: 0.75
            }
        );
        for x in &h {
            assert_eq!(x.rank, x.fused.sum(), "page {}", x.page);
        }
        // Ranked by the sum: 2.5 (page 1), 2.25 (page 2), 2.0 (page 0).
        assert_eq!(h.iter().map(|h| h.page).collect::<Vec<_>>(), [1, 2, 0]);
    }

    /// Twin pages one word of their titles tells apart (2D / 3D, read
    /// from the titles): a question that names one of the words puts the
    /// twin whose title holds the other below the one it names, even where
    /// that twin holds the question's other words better.
    #[test]
    fn a_question_that_names_one_twin_puts_the_other_below() {
        let names = [
            "Area", "Body", "Camera", "Light", "Path", "Shape", "Sprite", "Joint",
        ];
        let mut pages = Vec::new();
        let mut sections = Vec::new();
        for n in names {
            for d in ["2D", "3D"] {
                let url = format!("https://d.example/{}{}", n.to_lowercase(), d.to_lowercase());
                pages.push(page(&url, &format!("{n}{d}")));
                // The 3D body holds more of the question below ("never"),
                // and says it twice: the words alone prefer the 3D twin.
                let text = match (n, d) {
                    ("Body", "3D") => "A body that never emits a hit signal needs contact monitoring to emit the hit signal.".to_string(),
                    ("Body", _) => "A body emits a hit signal.".to_string(),
                    _ => format!("The {n} node."),
                };
                sections.push(sec(&url, "Description", "d", &text, 0));
            }
        }
        let mut lib = library(pages, sections);
        let first = |lib: &Library| {
            let hits = lib
                .rank_pages(
                    &[0],
                    "my 2D body never emits a hit signal",
                    None,
                    5,
                    FamilyLevers::default(),
                )
                .unwrap();
            lib.sources[0].pages[hits[0].page].title.clone()
        };
        assert_eq!(first(&lib), "Body2D");
        lib.rank.other_variant = 1.0;
        assert_eq!(first(&lib), "Body3D");
    }

    /// A phrase the question quotes (an error message) puts the page that
    /// holds it word for word above a page that holds its words apart, even
    /// where that page matches the words better.
    #[test]
    fn a_quoted_phrase_finds_the_page_that_holds_it_whole() {
        let mut lib = library(
            vec![page(A, "Streaming"), page(B, "Stopping")],
            vec![
                sec(
                    A,
                    "Errors",
                    "e",
                    "Closing the stream early ends with: process aborted by user.",
                    0,
                ),
                sec(
                    B,
                    "Stopping",
                    "s",
                    "The user process is aborted when the process exits.",
                    0,
                ),
            ],
        );
        let first = |lib: &Library, q: &str| {
            let hits = lib
                .rank_pages(&[0], q, None, 5, FamilyLevers::default())
                .unwrap();
            hits[0].page
        };
        let q = "my script dies with 'process aborted by user'";
        assert_eq!(first(&lib, q), 0);
        assert_eq!(
            first(&lib, "my script dies with process aborted by user"),
            1
        );
        lib.rank.quoted_phrase = 1.0;
        assert_eq!(first(&lib, q), 1);
    }

    /// A best lexical page that covers the query and leads the second by
    /// far keeps its place against a page nearer in meaning; the same page
    /// with a narrow lead, or covering little, gives way.
    #[test]
    fn a_page_the_words_single_out_keeps_its_lead() {
        let cos = |h: &PageHit| [0.20f32, 0.45][h.page];
        let order = |top: (f64, f64), second_rank: f64, lead: f64| {
            let levers = FamilyLevers {
                cosine: 4.0,
                cosine_lead: lead,
                ..FamilyLevers::default()
            };
            let mut h = page_hits(&[(0, top.0, top.1), (1, second_rank, 0.4)]);
            fuse_page_cosines(&mut h, 2, &levers, 0.0, cos, |_| 0.0f32);
            h.iter().map(|h| h.page).collect::<Vec<_>>()
        };
        // Covered whole, leading 2.0 to 0.4 (lead 0.8): weight 4 × (1 −
        // 2 × 0.8) is 0, the words decide; without the lever meaning does
        // (1 + 0.8 against 0.2 + 1.8).
        assert_eq!(order((2.0, 1.0), 0.4, 2.0), vec![0, 1]);
        assert_eq!(order((2.0, 1.0), 0.4, 0.0), vec![1, 0]);
        // A narrow lead (2.0 to 1.8: weight 3.2) gives way.
        assert_eq!(order((2.0, 1.0), 1.8, 2.0), vec![1, 0]);
        // Leading 2.0 to 1.0, the page keeps its place when it covers the
        // query, not when it covers a fifth of it (weight 0 against 3.2).
        assert_eq!(order((2.0, 1.0), 1.0, 2.0), vec![0, 1]);
        assert_eq!(order((2.0, 0.2), 1.0, 2.0), vec![1, 0]);
        assert_eq!(lexical_lead(&page_hits(&[(0, 2.0, 0.5)]), 1), 0.5);
        assert_eq!(lexical_lead(&page_hits(&[(0, 2.0, 0.5)]), 0), 0.0);
    }

    #[test]
    fn names_are_told_from_prose() {
        for w in [
            "get_node",
            "CONNECT_ONE_SHOT",
            "Input.is_action_pressed",
            "settings.json",
            "AnimationTree",
            "Node3D",
            "resources/subscribe",
        ] {
            assert!(identifier_like(w), "{w}");
        }
        for w in ["built-in", "open-world", "Godot", "3D", "API", "4.3", "_"] {
            assert!(!identifier_like(w), "{w}");
        }
    }

    /// The named share counts identifier-like query words the best lexical
    /// page holds whole, by their IDF weight; parts of a name and prose
    /// words count nothing.
    #[test]
    fn the_named_share_is_the_names_the_best_page_holds_whole() {
        let whole = sec(
            A,
            "ConnectFlags",
            "f",
            "CONNECT_ONE_SHOT disconnects after one emission.",
            0,
        );
        let parts = sec(
            B,
            "OneShot",
            "o",
            "One shot nodes play once. Connect a one shot node.",
            0,
        );
        let share = |lib: &Library, q: &str| {
            let r = lib
                .rank_lexical(&[0], q, None, 5, &FamilyLevers::default())
                .unwrap();
            named_share(&r.hits, r.hits.len(), &r.queries)
        };
        let both = library(
            vec![page(A, "Object"), page(B, "Animation tree")],
            vec![whole.clone(), parts.clone()],
        );
        assert!((share(&both, "CONNECT_ONE_SHOT") - 1.0).abs() < 1e-9);
        let mixed = share(&both, "CONNECT_ONE_SHOT emission");
        assert!(mixed > 0.0 && mixed < 1.0, "{mixed}");
        assert_eq!(share(&both, "one shot emission"), 0.0);
        // Only the parts in the docs: the name is not the docs' own word.
        let only_parts = library(vec![page(B, "Animation tree")], vec![parts]);
        assert_eq!(share(&only_parts, "CONNECT_ONE_SHOT"), 0.0);
    }

    /// Where the question is a name the best lexical page holds, the cosine
    /// weight shrinks and the page that prints it stays first.
    #[test]
    fn a_named_query_keeps_the_page_that_prints_the_name() {
        let order = |named: f64| {
            let mut h = page_hits(&[(0, 2.0, 1.0), (1, 1.2, 1.0)]);
            let levers = FamilyLevers {
                cosine: 6.0,
                cosine_named: 0.7,
                ..FamilyLevers::default()
            };
            fuse_page_cosines(
                &mut h,
                2,
                &levers,
                named,
                |h| [0.30f32, 0.42][h.page],
                |_| 0.0,
            );
            h.iter().map(|h| h.page).collect::<Vec<_>>()
        };
        // Weight 6: 1 + 1.8 against 0.6 + 2.52, meaning decides.
        assert_eq!(order(0.0), vec![1, 0]);
        // A bare name: weight 1.8, 1 + 0.54 against 0.6 + 0.756.
        assert_eq!(order(1.0), vec![0, 1]);
    }

    /// The words of the questions asked of a page lift it where the best
    /// lexical page leaves the query uncovered, not where it covers it
    /// all, nor for a name the docs print.
    #[test]
    fn asked_words_count_where_the_pages_words_miss() {
        let order = |top_coverage: f64, named: f64| {
            let mut h = page_hits(&[(0, 2.0, top_coverage), (1, 1.2, 0.3)]);
            let levers = FamilyLevers {
                cosine: 1.0,
                cosine_named: 1.0,
                asked_words: 3.0,
                asked_words_adaptive: 1.0,
                ..FamilyLevers::default()
            };
            let words = |h: &PageHit| [0.0f32, 1.0][h.page];
            fuse_page_cosines(&mut h, 2, &levers, named, |_| 0.4, words);
            h.iter().map(|h| h.page).collect::<Vec<_>>()
        };
        // Half the query uncovered: 0.6 + 0.4 + 1.5 against 1 + 0.4.
        assert_eq!(order(0.5, 0.0), vec![1, 0]);
        // All of it covered, or all of it a name: the words count nothing.
        assert_eq!(order(1.0, 0.0), vec![0, 1]);
        assert_eq!(order(0.5, 1.0), vec![0, 1]);
    }

    #[test]
    fn calibration_is_bounded_and_monotone() {
        assert!(calibrate(1.0, 100.0) <= 1.0);
        assert!(calibrate(0.0, 100.0) >= 0.0);
        assert!(calibrate(0.9, 10.0) > calibrate(0.5, 10.0));
        assert!(calibrate(1.0, 20.0) > 0.5);
        assert!(calibrate(0.4, 20.0) < 0.5);
    }

    /// With page vectors fused, a page the question's words barely cover
    /// but its meaning matches scores by its cosine; a lower one keeps its
    /// calibrated coverage, and no score rises down the list.
    #[test]
    fn scores_take_in_the_page_cosine_when_asked() {
        let hit = |page, coverage, cosine: f32| PageHit {
            source: 0,
            page,
            sections: vec![Scored {
                source: 0,
                section: page,
                bm25: 10.0,
                coverage,
                mask: 0,
                partial: 0,
                rank_score: 0.0,
            }],
            coverage,
            rank: 0.0,
            cosine,
            asked_coverage: 0.0,
            score: 0.0,
            fused: Fused::default(),
        };
        let hits = || vec![hit(0, 0.2, 0.71), hit(1, 1.0, 0.3), hit(2, 0.1, -0.2)];
        let scores = |meaning| {
            let mut h = hits();
            assign_scores(&mut h, true, meaning);
            h.iter().map(|h| h.score).collect::<Vec<_>>()
        };
        let lexical = scores(false);
        assert!(lexical[0] < 0.5, "{lexical:?}");
        let with = scores(true);
        assert_eq!(with[0], 0.71, "{with:?}");
        // The second hit's coverage would say more than the first's score:
        // capped. The third's negative cosine adds nothing.
        assert_eq!(with[1], 0.71, "{with:?}");
        assert_eq!(with[2], lexical[2], "{with:?}");
        for w in with.windows(2) {
            assert!(w[0] >= w[1], "{with:?}");
        }
        // The questions asked of the first page hold the query's words:
        // it reads covered without a model, as its own words would.
        let mut h = hits();
        h[0].asked_coverage = 1.0;
        assign_scores(&mut h, true, false);
        let own = {
            let mut h = hits();
            h[0].sections[0].coverage = 1.0;
            assign_scores(&mut h, true, false);
            h[0].score
        };
        assert!(h[0].score >= 0.5 && h[0].score == own, "{h:?}");
        assert_eq!(h[2].score, lexical[2]);
    }
}
