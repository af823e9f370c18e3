//! The words of the questions asked of each page (doc2query's idea): a
//! small BM25 index with one document per page, the text of every question
//! asked of it.
//!
//! The questions were written per page in users' words ("make enemies drop
//! coins", "Unity prefab"); the page itself says "instance a scene". A
//! user's question that shares such words with the questions asked of a
//! page points at that page even when the page's own text and its vector
//! do not (`FamilyLevers::asked_words` in `search::rank`).

use std::collections::HashMap;

/// BM25's term-frequency saturation and length normalization, as the
/// section index uses them.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One document per page: the terms of the questions asked of it.
#[derive(Debug, Default)]
pub struct AskedWords {
    /// For each term, the pages whose questions hold it and how often.
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Terms per page (0 for a page nobody asked about).
    page_len: Vec<u32>,
    /// Mean terms over the pages that have questions.
    avg_len: f32,
    /// Pages that have questions: BM25's document count.
    docs: u32,
}

impl AskedWords {
    /// Index the questions (`(text, page)`) of a source of `pages` pages.
    pub fn new<'a>(pages: usize, questions: impl IntoIterator<Item = (&'a str, u32)>) -> Self {
        let mut counts: HashMap<String, HashMap<u32, u32>> = HashMap::new();
        let mut page_len = vec![0u32; pages];
        for (text, page) in questions {
            let Some(len) = page_len.get_mut(page as usize) else {
                continue;
            };
            crate::index::for_each_term(text, |t| {
                if crate::index::is_stopword(t) {
                    return;
                }
                *len += 1;
                *counts
                    .entry(t.to_string())
                    .or_default()
                    .entry(page)
                    .or_default() += 1;
            });
        }
        let docs = page_len.iter().filter(|&&l| l > 0).count() as u32;
        let total: u64 = page_len.iter().map(|&l| u64::from(l)).sum();
        let avg_len = if docs > 0 {
            total as f32 / docs as f32
        } else {
            1.0
        };
        let postings = counts
            .into_iter()
            .map(|(t, by_page)| {
                let mut v: Vec<(u32, u32)> = by_page.into_iter().collect();
                v.sort_unstable();
                (t, v)
            })
            .collect();
        Self {
            postings,
            page_len,
            avg_len,
            docs,
        }
    }

    /// Whether no page has questions.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    fn idf(&self, df: usize) -> f32 {
        let n = self.docs as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Each page's BM25 for the query words `groups` (each a word's terms,
    /// the best of which counts, and its weight); pages that hold none are
    /// left out.
    pub fn scores(&self, groups: &[(&[String], f32)]) -> HashMap<u32, f32> {
        let mut out: HashMap<u32, f32> = HashMap::new();
        for &(terms, weight) in groups {
            let mut best: HashMap<u32, f32> = HashMap::new();
            for t in terms {
                let Some(post) = self.postings.get(t.as_str()) else {
                    continue;
                };
                let idf = self.idf(post.len());
                for &(page, tf) in post {
                    let tf = tf as f32;
                    let len = self.page_len[page as usize] as f32;
                    let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / self.avg_len));
                    let e = best.entry(page).or_default();
                    *e = e.max(s);
                }
            }
            for (page, s) in best {
                *out.entry(page).or_default() += weight * s;
            }
        }
        out
    }

    /// What [`Coverage::of`] needs of the query words `groups` (as
    /// [`AskedWords::scores`]), looked up once per query: each word's
    /// weight and the postings of its terms.
    pub fn coverage<'a>(&'a self, groups: &[(&[String], f32)]) -> Coverage<'a> {
        let mut total = 0.0f64;
        let words = groups
            .iter()
            .map(|&(terms, weight)| {
                let posts: Vec<Postings<'a>> = terms
                    .iter()
                    .filter_map(|t| self.postings.get(t.as_str()).map(Vec::as_slice))
                    .collect();
                let df = posts.iter().map(|p| p.len()).max().unwrap_or(0);
                let w = f64::from(weight) * f64::from(self.idf(df));
                total += w;
                (w, posts)
            })
            .collect();
        Coverage {
            words,
            total,
            page_len: &self.page_len,
        }
    }

    /// The pages whose questions hold any of the query words `groups` (as
    /// [`AskedWords::scores`]), best first, each with its score relative to
    /// the best page's, × its [`Coverage::of`] to the power `cover_power`
    /// (0: not; in (0, 1] either way); ties by page. The relative score
    /// alone gives the best page 1 whatever it holds of the query, its
    /// framing words ("difference between") alone included.
    pub fn ranked(&self, groups: &[(&[String], f32)], cover_power: f64) -> Vec<(usize, f32)> {
        let scores = self.scores(groups);
        let best = scores.values().copied().fold(0.0f32, f32::max);
        if best <= 0.0 {
            return Vec::new();
        }
        let cover = (cover_power > 0.0).then(|| self.coverage(groups));
        let mut out: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(page, s)| {
                let c = cover
                    .as_ref()
                    .map_or(1.0, |c| c.of(page as usize).powf(cover_power));
                (page as usize, s / best * c as f32)
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

/// The pages whose questions hold a term, and how often (sorted by page).
type Postings<'a> = &'a [(u32, u32)];

/// The query's words as [`AskedWords::coverage`] looked them up.
pub struct Coverage<'a> {
    /// Each word's weight (its query weight × its IDF over the pages with
    /// questions) and the postings of its terms.
    words: Vec<(f64, Vec<Postings<'a>>)>,
    total: f64,
    page_len: &'a [u32],
}

impl Coverage<'_> {
    /// The IDF-weighted share of the query's words that the questions asked
    /// of `page` hold, in [0, 1]; 0 for a page nobody asked about. A word
    /// no question holds weighs most, so an off-topic word keeps a page
    /// from reading covered.
    pub fn of(&self, page: usize) -> f64 {
        if self.total <= 0.0 || self.page_len.get(page).is_none_or(|&l| l == 0) {
            return 0.0;
        }
        let held: f64 = (self.words.iter())
            .filter(|(_, posts)| {
                posts.iter().any(|p| {
                    p.binary_search_by_key(&(page as u32), |&(pg, _)| pg)
                        .is_ok()
                })
            })
            .map(|(w, _)| w)
            .sum();
        held / self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::TermGroup;

    /// A query's words as the ranking hands them over: terms and weight.
    fn words(q: &[TermGroup]) -> Vec<(&[String], f32)> {
        q.iter().map(|g| (g.terms.as_slice(), g.weight)).collect()
    }

    #[test]
    fn a_page_asked_in_the_query_words_scores_first() {
        let w = AskedWords::new(
            3,
            [
                ("make enemies drop coins when they die", 0),
                ("spawn loot where an enemy dies", 0),
                ("how do I rotate a sprite", 1),
                ("the enemy sprite flickers", 2),
            ],
        );
        let q = crate::index::query_groups("enemies drop loot");
        let groups = words(&q);
        let s = w.scores(&groups);
        assert!(s[&0] > s.get(&2).copied().unwrap_or(0.0));
        assert!(!s.contains_key(&1));
        // Ranked: best first, relative to the best page's score.
        let r = w.ranked(&groups, 0.0);
        assert_eq!(r.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(r[0].1, 1.0);
        assert!((r[1].1 - s[&2] / s[&0]).abs() < 1e-6);
        // Coverage: page 0's questions hold "enemies", "drop" and "loot"
        // (all of the query), page 2's only "enemy" (the rarest word
        // missing), page 1's none; a page out of range holds nothing.
        let c = w.coverage(&groups);
        assert!((c.of(0) - 1.0).abs() < 1e-9);
        assert!(c.of(2) > 0.0 && c.of(2) < 0.5, "{}", c.of(2));
        assert_eq!(c.of(1), 0.0);
        assert_eq!(c.of(9), 0.0);
        // A word no question holds weighs more than any word they hold.
        let q = crate::index::query_groups("enemies drop loot sourdough");
        let more = words(&q);
        let c = w.coverage(&more).of(0);
        assert!(c < 0.75, "{c}");
    }

    #[test]
    fn the_best_page_by_framing_words_alone_counts_for_its_share() {
        // Nobody asked about `zarfignore`; page 0's questions share the
        // question's framing words, page 1's one of its names.
        let w = AskedWords::new(
            3,
            [
                ("what is the difference between rules and memories", 0),
                ("difference between the two modes", 0),
                ("where does blorpignore apply", 1),
                ("how do I rotate a sprite", 2),
            ],
        );
        let q = crate::index::query_groups("difference between zarfignore and blorpignore");
        let groups = words(&q);
        // Relative to the best page alone, the framing words win whole.
        let plain = w.ranked(&groups, 0.0);
        assert_eq!(plain[0], (0, 1.0));
        // × the share of the question each page's questions hold: neither
        // holds much (`zarfignore` weighs most), and no page keeps 1.
        let covered = w.ranked(&groups, 1.0);
        let cover = w.coverage(&groups);
        for &(page, s) in &covered {
            let relative = plain.iter().find(|p| p.0 == page).unwrap().1;
            assert!((s - relative * cover.of(page) as f32).abs() < 1e-6);
            assert!(s < 0.5, "page {page}: {s}");
        }
        assert!(covered.windows(2).all(|p| p[0].1 >= p[1].1));
        assert!(!covered.iter().any(|p| p.0 == 2));
    }
}
