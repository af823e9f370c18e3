//! One query's pass over the postings of its terms: BM25 scores and, for
//! every section touched, which query terms it holds.
//!
//! tantivy's `BooleanQuery` of boosted `TermQuery`s gives the same BM25
//! scores, but a docsnap query ORs dozens of clauses (every term of every
//! query word, in four fields) and then needs, for the best candidates, which
//! terms each one holds — so the postings were read twice, each term's
//! dictionary entry looked up three or four times, and a weight with its own
//! 256-entry length table built per clause. Here each postings list is read
//! once, into a score and a term mask per document, with the length tables
//! computed once at load. The scores are tantivy's BM25 (same idf, length
//! normalisation and boosts; a unit test compares the two), summed in clause
//! order, which can differ from tantivy's sum in the last bit.

use std::sync::{Arc, Mutex};

use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, TermInfo};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, InvertedIndexReader, Term, TERMINATED};

use super::{IndexError, SectionIndex, TermGroup};

/// BM25's k1 and b, as tantivy scores them.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// BM25 weight of a corrected spelling relative to a word the query has.
pub(super) const CORRECTED_WEIGHT: f32 = 0.6;
/// BM25 weight of a compound word whole against its parts.
const WHOLE_WEIGHT: f32 = 1.5;

/// What a query reads of one segment, opened once at load.
pub(super) struct SegmentFields {
    /// Global number of the segment's first document.
    pub(super) base: u32,
    /// Per searchable field (in `Fields::searchable` order).
    pub(super) inverted: Vec<Arc<InvertedIndexReader>>,
    pub(super) fieldnorms: Vec<FieldNormReader>,
    /// Documents not deleted, when some are (docsnap never deletes, but a
    /// deleted document must not be answered whoever wrote the index).
    pub(super) alive: Option<AliveBitSet>,
}

/// Per searchable field: BM25's length normalisation for each field-norm id
/// (fixed for a read-only index, so computed once).
pub(super) type NormTables = Vec<[f32; 256]>;

pub(super) fn norm_tables(total_docs: u64, total_tokens: &[u64]) -> NormTables {
    total_tokens
        .iter()
        .map(|&tokens| {
            let avg = tokens as f32 / total_docs.max(1) as f32;
            let mut t = [0f32; 256];
            for (id, v) in t.iter_mut().enumerate() {
                let len = FieldNormReader::id_to_fieldnorm(id as u8) as f32;
                *v = K1 * (1.0 - B + B * len / avg);
            }
            t
        })
        .collect()
}

fn idf(doc_freq: u64, docs: u64) -> f32 {
    let x = ((docs - doc_freq.min(docs)) as f32 + 0.5) / (doc_freq as f32 + 0.5);
    (1.0 + x).ln()
}

/// Per-document accumulators, reused across queries: a scan touches a few
/// thousand documents, and zeroing or allocating arrays the size of the
/// index per query would cost more than the scan.
#[derive(Default)]
struct Acc {
    score: Vec<f32>,
    mask: Vec<u64>,
    touched: Vec<u32>,
}

impl Acc {
    #[inline]
    fn touch(&mut self, d: usize) {
        if self.score[d] == 0.0 && self.mask[d] == 0 {
            self.touched.push(d as u32);
        }
    }
}

/// Accumulators free for the next scan. Capped: under a burst of
/// concurrent requests the extra ones are freed rather than kept (a few
/// hundred KB each for the largest index).
static POOL: Mutex<Vec<Acc>> = Mutex::new(Vec::new());
const POOL_CAP: usize = 16;

fn pool() -> std::sync::MutexGuard<'static, Vec<Acc>> {
    // The pool holds only zeroed buffers; a panic elsewhere cannot leave it inconsistent.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The result of [`SectionIndex::scan`]: the best sections by BM25, and the
/// query terms held by any section the scan touched.
pub struct Scan<'a> {
    index: &'a SectionIndex,
    /// The searchable fields with this query's weights.
    fields: Vec<(tantivy::schema::Field, f32)>,
    top: Vec<(f32, usize)>,
    /// Per query group: in how many sections' text its whole form occurs.
    group_df: Vec<u64>,
    acc: Acc,
}

impl Scan<'_> {
    /// Top sections: (BM25 score, section number), best first; ties by
    /// document order, as tantivy breaks them.
    pub fn top(&self) -> &[(f32, usize)] {
        &self.top
    }

    /// Per query group, in how many sections' text its whole form occurs
    /// (read during the scan, so the ranking's IDF weights cost no lookup).
    pub fn group_doc_freq(&self) -> &[u64] {
        &self.group_df
    }

    /// Which of the scan's mask terms section `sec` holds in any searchable
    /// field (bit `t` for `mask_terms[t]`).
    pub fn mask(&self, sec: usize) -> u64 {
        match self.index.sec_to_doc.get(sec) {
            Some(&(seg, doc)) if seg != u32::MAX => self
                .index
                .segments
                .get(seg as usize)
                .and_then(|s| self.acc.mask.get((s.base + doc) as usize))
                .copied()
                .unwrap_or(0),
            _ => 0,
        }
    }
}

impl Scan<'_> {
    /// Score more groups into this scan (words pseudo-relevance feedback
    /// added) and select the top again: only their postings are read, the
    /// query's own were read once. They take no mask bits.
    pub fn add_groups(&mut self, groups: &[TermGroup], limit: usize) -> Result<(), IndexError> {
        self.score(groups, |_| 0)?;
        self.select_top(limit);
        Ok(())
    }

    /// Score `groups` into the accumulators, each term's presence also
    /// recorded under `bit_of(term)`; returns the bits so recorded.
    fn score(
        &mut self,
        groups: &[TermGroup],
        bit_of: impl Fn(&str) -> u64,
    ) -> Result<u64, IndexError> {
        let first = self.group_df.len();
        self.group_df.resize(first + groups.len(), 0);
        let index = self.index;
        let mut scored_bits = 0u64;
        for (gi, whole, t, w) in clauses(groups) {
            let bit = bit_of(t);
            scored_bits |= bit;
            for (fi, &(field, fw)) in self.fields.iter().enumerate() {
                let df = index.add_term(
                    &mut self.acc,
                    fi,
                    &Term::from_field_text(field, t),
                    Some(fw * w),
                    bit,
                )?;
                if whole && index.fields.counts_in_doc_freq(field) {
                    self.group_df[first + gi] += df;
                }
            }
        }
        Ok(scored_bits)
    }

    /// Keep the `limit` best-scored sections touched, best first; ties by
    /// section number. Not by document id, as tantivy breaks them: which
    /// ids a build's two indexing threads give the sections varies from
    /// build to build, and with it which of two equally scored sections
    /// made the cut (a fresh build of the same records once answered one
    /// question of the pool differently at rank 8).
    fn select_top(&mut self, limit: usize) {
        let mut hits: Vec<(f32, usize)> = self
            .acc
            .touched
            .iter()
            .filter(|&&d| self.acc.score[d as usize] > 0.0)
            .filter_map(|&d| Some((self.acc.score[d as usize], self.index.section_at(d)?)))
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if limit == 0 {
            hits.clear();
        } else if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        self.top = hits;
    }
}

impl Drop for Scan<'_> {
    fn drop(&mut self) {
        let mut acc = std::mem::take(&mut self.acc);
        for &d in &acc.touched {
            acc.score[d as usize] = 0.0;
            acc.mask[d as usize] = 0;
        }
        acc.touched.clear();
        let mut pool = pool();
        if pool.len() < POOL_CAP {
            pool.push(acc);
        }
    }
}

/// The scored terms of the query with their weights (before the field's),
/// in the order their scores are summed, each with its group and whether it
/// is the group's whole form (its first term): the whole form weighs more
/// than its parts; a corrected spelling less than a word the query has; an
/// old name's new names as the whole form.
fn clauses(groups: &[TermGroup]) -> impl Iterator<Item = (usize, bool, &str, f32)> {
    groups.iter().enumerate().flat_map(|(gi, g)| {
        let gw = g.weight * if g.corrected { CORRECTED_WEIGHT } else { 1.0 };
        let compound = g.terms.len() > 1;
        let whole_weight = if compound { WHOLE_WEIGHT } else { 1.0 };
        let own = g.terms.iter().enumerate().map(move |(k, t)| {
            let w = if k == 0 { whole_weight } else { 1.0 };
            (gi, k == 0, t.as_str(), w * gw)
        });
        // The word's new names weigh as the word itself; its document
        // frequency (and so its rarity) stays the word's own.
        let also = g
            .also
            .iter()
            .map(move |t| (gi, false, t.as_str(), whole_weight * gw));
        own.chain(also)
    })
}

fn read_err(what: &'static str) -> impl Fn(std::io::Error) -> IndexError {
    move |e| IndexError {
        what: what.into(),
        source: e.into(),
    }
}

impl SectionIndex {
    /// Score the query groups over every section and record which of
    /// `mask_terms` (at most 64) each touched section holds. Each group's
    /// whole form weighs more than its parts; a corrected spelling weighs
    /// less than a word the query really has. A read error is returned,
    /// never taken for "nothing found".
    pub fn scan(
        &self,
        groups: &[TermGroup],
        mask_terms: &[String],
        limit: usize,
        weights: &super::FieldWeights,
    ) -> Result<Scan<'_>, IndexError> {
        let docs = self.total_docs as usize;
        let mut acc = pool().pop().unwrap_or_default();
        if acc.score.len() < docs {
            acc.score.resize(docs, 0.0);
            acc.mask.resize(docs, 0);
        }
        let mut scan = Scan {
            index: self,
            fields: self.fields.weighted_by(weights),
            top: Vec::new(),
            group_df: Vec::with_capacity(groups.len()),
            acc,
        };
        let bit_of = |t: &str| -> u64 {
            mask_terms
                .iter()
                .take(64)
                .position(|m| m == t)
                .map_or(0, |i| 1 << i)
        };
        let scored_bits = scan.score(groups, bit_of)?;
        // Terms wanted only for their presence (a compound word's parts).
        for (i, t) in mask_terms.iter().enumerate().take(64) {
            let bit = 1u64 << i;
            if scored_bits & bit != 0 {
                continue;
            }
            for (fi, field) in self.fields.searchable().enumerate() {
                self.add_term(
                    &mut scan.acc,
                    fi,
                    &Term::from_field_text(field, t),
                    None,
                    bit,
                )?;
            }
        }
        scan.select_top(limit);
        Ok(scan)
    }

    /// Add one term's postings in one field: to the scores with `boost`
    /// (None: presence only) and to the masks with `bit`. Returns the
    /// term's document frequency in that field.
    fn add_term(
        &self,
        acc: &mut Acc,
        field: usize,
        term: &Term,
        boost: Option<f32>,
        bit: u64,
    ) -> Result<u64, IndexError> {
        let infos = self.term_infos(field, term)?;
        let doc_freq: u64 = infos.iter().flatten().map(|t| t.doc_freq as u64).sum();
        if doc_freq == 0 {
            return Ok(0);
        }
        let weight = boost.map(|b| (idf(doc_freq, self.total_docs) * (1.0 + K1), b));
        let option = if weight.is_some() {
            IndexRecordOption::WithFreqs
        } else {
            IndexRecordOption::Basic
        };
        let norms = &self.norms[field];
        for (s, ti) in self.segments.iter().zip(infos) {
            let Some(ti) = ti else { continue };
            let mut postings = s.inverted[field]
                .read_postings_from_terminfo(&ti, option)
                .map_err(read_err("postings read"))?;
            let fieldnorms = &s.fieldnorms[field];
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if s.alive.as_ref().is_some_and(|a| !a.is_alive(doc)) {
                    doc = postings.advance();
                    continue;
                }
                let d = (s.base + doc) as usize;
                acc.touch(d);
                acc.mask[d] |= bit;
                if let Some((w, b)) = weight {
                    let tf = postings.term_freq() as f32;
                    let norm = norms[fieldnorms.fieldnorm_id(doc) as usize];
                    acc.score[d] += w * (tf / (tf + norm)) * b;
                }
                doc = postings.advance();
            }
        }
        Ok(doc_freq)
    }

    /// `term`'s dictionary entry in searchable field `field` of each
    /// segment (None where the segment does not hold it).
    pub(super) fn term_infos(
        &self,
        field: usize,
        term: &Term,
    ) -> Result<Vec<Option<TermInfo>>, IndexError> {
        self.segments
            .iter()
            .map(|s| {
                s.inverted[field]
                    .get_term_info(term)
                    .map_err(read_err("term dictionary read"))
            })
            .collect()
    }

    /// The section stored in global document `d`.
    fn section_at(&self, d: u32) -> Option<usize> {
        let seg = self.segments.iter().rposition(|s| s.base <= d)?;
        let sec = *self
            .doc_to_sec
            .get(seg)?
            .get((d - self.segments[seg].base) as usize)?;
        (sec != u32::MAX).then_some(sec as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{build_in_ram, query_groups};
    use crate::model::{Page, Section};
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};

    fn page(url: &str, title: &str) -> Page {
        Page {
            description: format!("About {title}."),
            ..crate::model::testing::page(url, title)
        }
    }

    fn sec(url: &str, heading: &str, text: &str) -> Section {
        Section {
            url: url.into(),
            anchor: heading.to_lowercase(),
            heading_path: vec!["T".into(), heading.into()],
            level: 2,
            text: text.into(),
            ordinal: 0,
            part: 0,
        }
    }

    /// The boolean query the scan replaces, run by tantivy itself.
    fn tantivy_top(index: &SectionIndex, groups: &[TermGroup]) -> Vec<(f32, usize)> {
        let mut boolean: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (_, _, t, w) in clauses(groups) {
            for (field, fw) in index.fields.weighted_by(&Default::default()) {
                let q = TermQuery::new(
                    Term::from_field_text(field, t),
                    IndexRecordOption::WithFreqs,
                );
                boolean.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(q), fw * w)),
                ));
            }
        }
        let top = index
            .searcher
            .search(
                &BooleanQuery::new(boolean),
                &TopDocs::with_limit(100).order_by_score(),
            )
            .unwrap();
        top.into_iter()
            .map(|(s, a)| {
                (
                    s,
                    index.doc_to_sec[a.segment_ord as usize][a.doc_id as usize] as usize,
                )
            })
            .collect()
    }

    /// The scan against tantivy's own query over the same index: the same
    /// sections matched, scores equal but for the rounding of a differently
    /// ordered sum, best first with ties by section; and each section's mask
    /// holds exactly the query terms its title, headings, description or
    /// text has.
    fn check(pages: &[Page], sections: &[Section], page_of: &[usize], query: &str) {
        let index = build_in_ram(pages, sections, page_of, Default::default()).unwrap();
        let groups = query_groups(query);
        let terms: Vec<String> = groups.iter().flat_map(|g| g.terms.clone()).collect();
        let scan = index
            .scan(&groups, &terms, 1000, &Default::default())
            .unwrap();
        let got = scan.top();
        let want: std::collections::BTreeMap<usize, f32> = tantivy_top(&index, &groups)
            .into_iter()
            .map(|(score, sec)| (sec, score))
            .collect();
        assert_eq!(got.len(), want.len(), "{query}: {got:?} vs {want:?}");
        for w in got.windows(2) {
            assert!(w[0].0 >= w[1].0, "{query}: not best first: {got:?}");
        }
        for &(score, sec) in got {
            let w = want[&sec];
            assert!(
                (score - w).abs() <= 1e-5 * w,
                "{query}: {got:?} vs {want:?}"
            );
        }
        for (s, section) in sections.iter().enumerate() {
            let page = &pages[page_of[s]];
            let text = format!(
                "{} {} {} {}",
                page.title,
                page.description,
                section.heading_path[1..].join(" "),
                section.text
            );
            let held = crate::index::terms(&text);
            for (i, t) in terms.iter().enumerate().take(64) {
                assert_eq!(
                    scan.mask(s) & (1 << i) != 0,
                    held.contains(t),
                    "{query}: section {s}, term {t}"
                );
            }
        }
    }

    /// A query's field weights reach the scores: a heavier description
    /// raises the section whose page description holds the words and leaves
    /// one that holds them only in its text as it was.
    #[test]
    fn field_weights_are_the_querys() {
        let a = "https://d.example/a";
        let b = "https://d.example/b";
        let pages = vec![
            Page {
                description: "Rewind file edits.".into(),
                ..crate::model::testing::page(a, "Checkpoints")
            },
            page(b, "Sessions"),
        ];
        let sections = vec![
            sec(a, "Overview", "Snapshots are kept per session."),
            sec(b, "Resume", "Rewind file edits and resume a session later."),
        ];
        let index = build_in_ram(&pages, &sections, &[0, 1], Default::default()).unwrap();
        let groups = query_groups("rewind edits");
        let score = |w: &crate::index::FieldWeights| -> Vec<f32> {
            let scan = index.scan(&groups, &[], 10, w).unwrap();
            (0..2)
                .map(|s| scan.top().iter().find(|t| t.1 == s).map_or(0.0, |t| t.0))
                .collect()
        };
        let plain = score(&Default::default());
        let heavy = score(&crate::index::FieldWeights {
            desc: 4.0,
            ..Default::default()
        });
        assert!(
            plain[0] > 0.0 && (heavy[0] / plain[0] - 4.0).abs() < 1e-4,
            "{plain:?} {heavy:?}"
        );
        assert_eq!(heavy[1], plain[1]);
    }

    /// Indexed apart, code is weighed by the code weight: a section with
    /// the word only in a sample script scores with it, one with the word
    /// in its prose does not move; the word is still held (coverage) and
    /// counted (IDF) wherever it is. Without `code_apart`, code is body.
    #[test]
    fn code_apart_is_weighed_apart() {
        let a = "https://d.example/a";
        let b = "https://d.example/b";
        let pages = vec![page(a, "Your first game"), page(b, "Pausing")];
        let sections = vec![
            sec(
                a,
                "Enemy script",
                "Add this script:\n\n```gdscript\nfunc _on_enemy_hit():\n    pause()\n```\n",
            ),
            sec(b, "Pause", "Pause the tree when the menu opens."),
        ];
        let groups = query_groups("pause");
        let score = |opts, w: &crate::index::FieldWeights| -> (Vec<f32>, Vec<u64>, u64) {
            let index = build_in_ram(&pages, &sections, &[0, 1], opts).unwrap();
            let terms: Vec<String> = groups.iter().flat_map(|g| g.terms.clone()).collect();
            let scan = index.scan(&groups, &terms, 10, w).unwrap();
            let scores = (0..2)
                .map(|s| scan.top().iter().find(|t| t.1 == s).map_or(0.0, |t| t.0))
                .collect();
            (
                (scores),
                (0..2).map(|s| scan.mask(s)).collect(),
                scan.group_doc_freq()[0],
            )
        };
        let apart = crate::index::IndexOptions { code_apart: true };
        let half = crate::index::FieldWeights {
            code: 0.5,
            ..Default::default()
        };
        let (full, masks, df) = score(apart, &Default::default());
        let (halved, masks_halved, _) = score(apart, &half);
        assert!(
            full[0] > 0.0 && (halved[0] / full[0] - 0.5).abs() < 1e-4,
            "{full:?} {halved:?}"
        );
        assert_eq!(halved[1], full[1]);
        assert!(
            masks.iter().all(|&m| m != 0) && masks == masks_halved,
            "{masks:?}"
        );
        assert_eq!(df, 2);
        // Together, the weight has nothing to act on.
        let (together, _, df) = score(Default::default(), &Default::default());
        let (together_half, _, _) = score(Default::default(), &half);
        assert_eq!(together, together_half);
        assert!(together[0] > 0.0);
        assert_eq!(df, 2);
    }

    #[test]
    fn scores_and_order_are_tantivys_and_masks_name_the_terms_held() {
        let urls = [
            "https://d.example/a",
            "https://d.example/b",
            "https://d.example/c",
        ];
        let pages = vec![
            page(urls[0], "Node"),
            page(urls[1], "Timer"),
            page(urls[2], "Signals"),
        ];
        let sections = vec![
            sec(urls[0], "add_child", "Adds a child node. Call add_child from the main thread; a child is freed with its parent."),
            sec(urls[0], "Groups", "Nodes join groups. A node in a group gets group calls."),
            sec(urls[1], "one_shot", "A one shot timer stops after one timeout; connect its timeout signal."),
            sec(urls[1], "Wait", "Wait for a timer with await. The timer node counts down."),
            sec(urls[2], "Connecting", "Connect a signal with CONNECT_ONE_SHOT to disconnect after one emission."),
            sec(urls[2], "Custom", "Declare a signal and emit it. Child scenes emit signals to parents."),
        ];
        let page_of = [0, 0, 1, 1, 2, 2];
        for query in [
            "add_child from a thread",
            "CONNECT_ONE_SHOT timer signal",
            "child node signals",
            "nothing here matches zzz",
        ] {
            check(&pages, &sections, &page_of, query);
        }
        // A limit keeps the best, in order; 0 keeps none.
        let index = build_in_ram(&pages, &sections, &page_of, Default::default()).unwrap();
        let groups = query_groups("child node signals");
        let all = index
            .scan(&groups, &[], 100, &Default::default())
            .unwrap()
            .top()
            .to_vec();
        assert!(all.len() >= 3, "{all:?}");
        assert_eq!(
            index
                .scan(&groups, &[], 2, &Default::default())
                .unwrap()
                .top(),
            &all[..2]
        );
        assert!(index
            .scan(&groups, &[], 0, &Default::default())
            .unwrap()
            .top()
            .is_empty());
    }

    #[test]
    fn deleted_documents_are_never_answered() {
        let url = "https://d.example/a";
        let pages = vec![page(url, "Timers")];
        let sections = vec![
            sec(url, "Start", "Start a timer node."),
            sec(
                url,
                "Stop",
                "Stop the timer node; a stopped timer keeps its wait time.",
            ),
            sec(url, "Nodes", "Every node can own a timer."),
        ];
        let (schema, f) = crate::index::schema(Default::default());
        let index = tantivy::Index::create_in_ram(schema);
        crate::index::fill(&index, &pages, &sections, &[0, 0, 0], 0..3).unwrap();
        let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        w.delete_query(Box::new(TermQuery::new(
            Term::from_field_text(f.body, "stop"),
            IndexRecordOption::Basic,
        )))
        .unwrap();
        w.commit().unwrap();
        let index = SectionIndex::from_index(index).unwrap();
        let groups = query_groups("timer node");
        let terms: Vec<String> = groups.iter().flat_map(|g| g.terms.clone()).collect();
        let scan = index
            .scan(&groups, &terms, 10, &Default::default())
            .unwrap();
        let found: Vec<usize> = scan.top().iter().map(|&(_, s)| s).collect();
        let want: Vec<usize> = tantivy_top(&index, &groups)
            .iter()
            .map(|&(_, s)| s)
            .collect();
        assert_eq!(found, want);
        assert!(!found.contains(&1) && found.len() == 2, "{found:?}");
        assert_eq!(scan.mask(1), 0, "a deleted section holds nothing");
    }

    /// Equally scored sections come in section order and make a cut in
    /// section order, whatever document ids the index gave them: the same
    /// records filled in the reverse order answer the same list.
    #[test]
    fn ties_go_by_section_not_by_document_id() {
        let url = "https://docs.godotengine.org/en/stable/classes/class_timer.html";
        let pages = vec![page(url, "Timer")];
        // Six sections with the same words (six ties) among others.
        let mut sections = Vec::new();
        for i in 0..10 {
            let text = if i % 3 == 1 {
                "Other words entirely."
            } else {
                "A one shot timer node."
            };
            sections.push(sec(url, &format!("Part {i}"), text));
        }
        let page_of = vec![0; sections.len()];
        let n = sections.len();
        let lists: Vec<Vec<(f32, usize)>> = [false, true]
            .into_iter()
            .map(|reverse| {
                let (schema, _) = crate::index::schema(Default::default());
                let index = tantivy::Index::create_in_ram(schema);
                let order: Vec<usize> = if reverse {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                crate::index::fill(&index, &pages, &sections, &page_of, order.into_iter()).unwrap();
                let index = SectionIndex::from_index(index).unwrap();
                let groups = query_groups("one shot timer");
                let terms: Vec<String> = groups.iter().flat_map(|g| g.terms.clone()).collect();
                let scan = index.scan(&groups, &terms, 4, &Default::default()).unwrap();
                scan.top().to_vec()
            })
            .collect();
        let sections_of = |l: &[(f32, usize)]| l.iter().map(|&(_, s)| s).collect::<Vec<_>>();
        assert_eq!(sections_of(&lists[0]), vec![0, 2, 3, 5], "{lists:?}");
        assert_eq!(lists[0], lists[1]);
    }

    const WORDS: &[&str] = &[
        "node",
        "child",
        "add_child",
        "signal",
        "timer",
        "one",
        "shot",
        "CONNECT_ONE_SHOT",
        "physics",
        "process",
        "_physics_process",
        "CharacterBody2D",
        "body",
        "scene",
        "tree",
        "the",
        "a",
        "of",
        "running",
        "runs",
        "Vector3",
        "dot",
        "--add-dir",
        "tools/list",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn any_corpus_and_query_scan_as_tantivy_scores(
            texts in proptest::collection::vec(
                (0usize..3, proptest::collection::vec(0usize..WORDS.len(), 1..40)),
                1..12,
            ),
            titles in proptest::collection::vec(0usize..WORDS.len(), 3),
            query in proptest::collection::vec(0usize..WORDS.len() + 2, 1..7),
        ) {
            let urls = ["https://d.example/a", "https://d.example/b", "https://d.example/c"];
            let pages: Vec<Page> = (0..3).map(|i| page(urls[i], WORDS[titles[i]])).collect();
            // Sections grouped by page, in page order, as the build writes them.
            let mut texts = texts;
            texts.sort_by_key(|t| t.0);
            let page_of: Vec<usize> = texts.iter().map(|t| t.0).collect();
            let sections: Vec<Section> = texts
                .iter()
                .enumerate()
                .map(|(i, (p, words))| {
                    let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                    sec(urls[*p], &format!("h{i} {}", WORDS[words[0]]), &text.join(" "))
                })
                .collect();
            let query: Vec<&str> = query
                .iter()
                .map(|&w| WORDS.get(w).copied().unwrap_or("absent"))
                .collect();
            check(&pages, &sections, &page_of, &query.join(" "));
        }

        /// Words added to a scan afterwards score exactly as if the scan had
        /// read them with the query's own (feedback relies on it).
        #[test]
        fn groups_added_later_score_as_groups_scanned_at_once(
            texts in proptest::collection::vec(
                proptest::collection::vec(0usize..WORDS.len(), 1..30),
                1..10,
            ),
            query in proptest::collection::vec(0usize..WORDS.len(), 2..7),
            split in 1usize..6,
        ) {
            let url = "https://d.example/a";
            let pages = vec![page(url, "T")];
            let page_of = vec![0; texts.len()];
            let sections: Vec<Section> = texts
                .iter()
                .enumerate()
                .map(|(i, words)| {
                    let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                    sec(url, &format!("h{i}"), &text.join(" "))
                })
                .collect();
            let idx = build_in_ram(&pages, &sections, &page_of, Default::default()).unwrap();
            let words: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
            let groups = crate::index::query_groups_all(&words.join(" "));
            let split = split.min(groups.len());
            let (base, extra) = groups.split_at(split);
            let extra: Vec<TermGroup> = extra
                .iter()
                .map(|g| TermGroup { weight: 0.5, added: true, ..g.clone() })
                .collect();
            let all: Vec<TermGroup> = base.iter().cloned().chain(extra.iter().cloned()).collect();
            let mask_terms: Vec<String> = base.iter().map(|g| g.terms[0].clone()).collect();
            let once = idx.scan(&all, &mask_terms, 50, &Default::default()).unwrap();
            let mut later = idx.scan(base, &mask_terms, 50, &Default::default()).unwrap();
            later.add_groups(&extra, 50).unwrap();
            proptest::prop_assert_eq!(once.top(), later.top());
            proptest::prop_assert_eq!(once.group_doc_freq(), later.group_doc_freq());
            for s in 0..sections.len() {
                proptest::prop_assert_eq!(once.mask(s), later.mask(s));
            }
        }
    }
}
