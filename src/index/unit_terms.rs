//! The words at the head of every answer unit, counted at build time: what
//! pseudo-relevance feedback reads from the best pages of a first pass.
//!
//! Feedback needs, for each of a few units, how often each index term occurs
//! in the unit's first [`HEAD_BYTES`] bytes (heading path and text, in that
//! order, part after part). Analyzing that text at query time cost about a
//! quarter of a query; the counts depend only on the sections, so the build
//! writes them once ([`UNIT_TERMS_FILE`], listed in the manifest with its
//! sha256 like every artifact file) and a server reads them.
//!
//! Only terms feedback can ever choose are kept: three bytes or longer, not
//! a stop word, no digit. The query's own words are removed at query time.
//! Every token counts in a unit's length, kept or not, so shares are those
//! of the text as read.
//!
//! On disk (little-endian): the magic `DSUT0001`, four `u32` counts (terms,
//! sections, entries, bytes of term text), the term offsets (`terms + 1`
//! `u32`), the term text (UTF-8, terms in strictly ascending byte order),
//! the entry offsets per section (`sections + 1` `u32`; empty for a section
//! that does not start a unit), each section's token count (`u32`), then the
//! entries' term ids (`u32`) and counts (`u16`). A term id is its place in
//! the sorted term list.

use crate::model::Section;

/// Name of the file in an artifact directory.
pub const UNIT_TERMS_FILE: &str = "unit_terms.bin";

/// Bytes read from the start of a unit: where a section states its topic.
/// 2,000 ranked as well as 20,000 on both question sets (BENCHMARKS.md) and
/// bound the work on huge or hostile pages. Written into artifacts: changing
/// it means a new `ARTIFACT_REVISION`.
pub const HEAD_BYTES: usize = 2_000;

const MAGIC: &[u8; 8] = b"DSUT0001";

/// Counts an earlier artifact made, for sections a rebuild took over from
/// it unchanged (pages the site answered 304 for): a unit lies within one
/// page, so its counts are the same, and copying them spares analyzing the
/// text again. Valid only between artifacts of one `ARTIFACT_REVISION`.
#[derive(Debug, Clone, Default)]
pub struct Prior {
    /// The earlier artifact's counts.
    pub terms: UnitTerms,
    /// For each section of the new artifact, its number in the earlier one
    /// when it was taken over unchanged.
    pub previous: Vec<Option<u32>>,
}

/// Term counts of each unit's head (see the module docs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UnitTerms {
    text: String,
    term_at: Vec<u32>,
    entry_at: Vec<u32>,
    tokens: Vec<u32>,
    ids: Vec<u32>,
    counts: Vec<u16>,
}

/// Whether feedback may ever choose `t` (whatever the query).
fn keepable(t: &str) -> bool {
    t.len() >= 3 && !super::is_stopword(t) && !t.bytes().any(|c| c.is_ascii_digit())
}

/// Call `f` with every index term of the first `budget` bytes of a unit's
/// sections, heading path before text, part after part.
fn for_each_head_term(unit: &[Section], mut budget: usize, mut f: impl FnMut(&str)) {
    for s in unit {
        for text in s.heading_path.iter().chain(std::iter::once(&s.text)) {
            let mut end = budget.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            budget -= end;
            super::for_each_term(&text[..end], &mut f);
        }
        if budget == 0 {
            break;
        }
    }
}

impl UnitTerms {
    /// Count the head terms of every unit; `unit_start[i]` is the first
    /// section of section `i`'s unit (see [`crate::section::unit_starts`]).
    /// Two threads, each on half the units: the build waits on this (it is
    /// a second analysis of most of the text, ~0.45 s for Godot on one).
    pub fn compute(sections: &[Section], unit_start: &[u32]) -> UnitTerms {
        Self::compute_with(sections, unit_start, None)
    }

    /// [`UnitTerms::compute`], copying the counts of units `prior` has.
    pub fn compute_with(
        sections: &[Section],
        unit_start: &[u32],
        prior: Option<&Prior>,
    ) -> UnitTerms {
        let n = sections.len().min(unit_start.len());
        let mid = (n / 2..n)
            .find(|&i| unit_start[i] as usize == i)
            .unwrap_or(n);
        let (a, b) = std::thread::scope(|s| {
            let later = s.spawn(|| Partial::count(sections, unit_start, mid..n, prior));
            let first = Partial::count(sections, unit_start, 0..mid, prior);
            (
                first,
                later.join().expect("counting unit terms does not panic"),
            )
        });
        // One sorted vocabulary; each half's ids mapped into it.
        let mut vocab: Vec<&str> = a.vocab.iter().chain(&b.vocab).map(|t| &**t).collect();
        vocab.sort_unstable();
        vocab.dedup();
        let id_of: rustc_hash::FxHashMap<&str, u32> = vocab
            .iter()
            .enumerate()
            .map(|(k, t)| (*t, k as u32))
            .collect();
        let mut out = UnitTerms {
            term_at: vec![0],
            entry_at: vec![0],
            ..Default::default()
        };
        for t in &vocab {
            out.text.push_str(t);
            out.term_at.push(out.text.len() as u32);
        }
        for part in [&a, &b] {
            let global: Vec<u32> = part.vocab.iter().map(|t| id_of[&**t]).collect();
            for (tokens, tf) in &part.per {
                out.tokens.push(*tokens);
                let mut tf: Vec<(u32, u16)> =
                    tf.iter().map(|&(id, c)| (global[id as usize], c)).collect();
                tf.sort_unstable();
                for (id, c) in tf {
                    out.ids.push(id);
                    out.counts.push(c);
                }
                out.entry_at.push(out.ids.len() as u32);
            }
        }
        out
    }

    /// The term with id `id`.
    fn term(&self, id: u32) -> &str {
        let i = id as usize;
        &self.text[self.term_at[i] as usize..self.term_at[i + 1] as usize]
    }

    /// Tokens read from the head of the unit starting at section `start`,
    /// and its keepable terms with their counts (none when `start` does
    /// not start a unit).
    pub fn unit(&self, start: usize) -> (u32, impl Iterator<Item = (&str, u16)> + '_) {
        let r = self.entry_at[start] as usize..self.entry_at[start + 1] as usize;
        let terms = self.ids[r.clone()]
            .iter()
            .zip(&self.counts[r])
            .map(|(&id, &c)| (self.term(id), c));
        (self.tokens[start], terms)
    }

    /// Sections covered.
    pub fn sections(&self) -> usize {
        self.tokens.len()
    }

    /// The file's bytes (see the module docs for the layout).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(
            24 + 4 * (self.term_at.len() + self.entry_at.len() + self.tokens.len())
                + self.text.len()
                + 6 * self.ids.len(),
        );
        b.extend_from_slice(MAGIC);
        let u32s = |b: &mut Vec<u8>, v: &[u32]| {
            for x in v {
                b.extend_from_slice(&x.to_le_bytes());
            }
        };
        let counts = [
            self.term_at.len() - 1,
            self.tokens.len(),
            self.ids.len(),
            self.text.len(),
        ];
        u32s(&mut b, &counts.map(|n| n as u32));
        u32s(&mut b, &self.term_at);
        b.extend_from_slice(self.text.as_bytes());
        u32s(&mut b, &self.entry_at);
        u32s(&mut b, &self.tokens);
        u32s(&mut b, &self.ids);
        for x in &self.counts {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b
    }

    /// Read the file's bytes, checking every count, offset and id, for an
    /// artifact of `sections` sections. The error says what is wrong.
    pub fn from_bytes(bytes: &[u8], sections: usize) -> Result<UnitTerms, String> {
        let mut r = Reader { b: bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a unit-terms file (bad magic)".into());
        }
        let terms = r.u32()? as usize;
        let n_sec = r.u32()? as usize;
        let entries = r.u32()? as usize;
        let text_len = r.u32()? as usize;
        if n_sec != sections {
            return Err(format!(
                "counts terms of {n_sec} sections, the artifact has {sections}"
            ));
        }
        let term_at = r.u32s(terms.checked_add(1).ok_or("term count overflows")?)?;
        let text = std::str::from_utf8(r.take(text_len)?)
            .map_err(|e| format!("term text is not UTF-8: {e}"))?
            .to_string();
        let entry_at = r.u32s(n_sec + 1)?;
        let tokens = r.u32s(n_sec)?;
        let ids = r.u32s(entries)?;
        let counts = r
            .take(entries.checked_mul(2).ok_or("entry count overflows")?)?
            .chunks_exact(2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]))
            .collect();
        if r.at != bytes.len() {
            return Err(format!("{} bytes after the last entry", bytes.len() - r.at));
        }
        let bounded = |offs: &[u32], end: usize, what: &str| {
            let ok = offs.first() == Some(&0)
                && offs.last().map(|&x| x as usize) == Some(end)
                && offs.windows(2).all(|w| w[0] <= w[1]);
            if ok {
                Ok(())
            } else {
                Err(format!("{what} offsets out of order or bounds"))
            }
        };
        bounded(&term_at, text_len, "term")?;
        bounded(&entry_at, entries, "entry")?;
        let t = UnitTerms {
            text,
            term_at,
            entry_at,
            tokens,
            ids,
            counts,
        };
        for i in 0..terms {
            let (a, b) = (t.term_at[i] as usize, t.term_at[i + 1] as usize);
            if !t.text.is_char_boundary(a) || !t.text.is_char_boundary(b) {
                return Err(format!("term {i} cuts a character"));
            }
            if i > 0 && t.term(i as u32 - 1) >= t.term(i as u32) {
                return Err(format!("term {i} out of order"));
            }
        }
        if let Some(bad) = t.ids.iter().find(|&&id| id as usize >= terms) {
            return Err(format!("term id {bad} of {terms} terms"));
        }
        Ok(t)
    }
}

/// The counts of a run of sections, with ids into its own vocabulary.
struct Partial {
    vocab: Vec<Box<str>>,
    /// Per section: tokens read and (term id, count) of a unit start;
    /// nothing for the other parts of a unit.
    per: Vec<(u32, Vec<(u32, u16)>)>,
}

impl Partial {
    fn count(
        sections: &[Section],
        unit_start: &[u32],
        range: std::ops::Range<usize>,
        prior: Option<&Prior>,
    ) -> Partial {
        let mut ids: rustc_hash::FxHashMap<Box<str>, u32> = Default::default();
        let mut vocab: Vec<Box<str>> = Vec::new();
        let mut per = Vec::with_capacity(range.len());
        for i in range {
            if unit_start[i] as usize != i {
                per.push((0, Vec::new()));
                continue;
            }
            // Never past the range: halves are cut at a unit's start.
            let unit = crate::section::unit_range(unit_start, i);
            let mut intern = |t: &str| match ids.get(t) {
                Some(&id) => id,
                None => {
                    let id = vocab.len() as u32;
                    vocab.push(t.into());
                    ids.insert(t.into(), id);
                    id
                }
            };
            let earlier = prior.and_then(|p| {
                let j = (*p.previous.get(i)?)? as usize;
                (j < p.terms.sections()).then(|| p.terms.unit(j))
            });
            if let Some((n, terms)) = earlier {
                per.push((n, terms.map(|(t, c)| (intern(t), c)).collect()));
                continue;
            }
            let mut n = 0u32;
            let mut tf: rustc_hash::FxHashMap<u32, u16> = Default::default();
            for_each_head_term(&sections[unit], HEAD_BYTES, |t| {
                n += 1;
                if !keepable(t) {
                    return;
                }
                let c = tf.entry(intern(t)).or_default();
                *c = c.saturating_add(1);
            });
            per.push((n, tf.into_iter().collect()));
        }
        Partial { vocab, per }
    }
}

/// Bounds-checked reading of the file's fields.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("ends early: {n} bytes wanted at byte {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let bytes = self.take(n.checked_mul(4).ok_or("count overflows")?)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sec(anchor: &str, heading: &str, text: &str, part: u32) -> Section {
        Section {
            url: "https://d.example/u".into(),
            anchor: anchor.into(),
            heading_path: vec!["Page".into(), heading.into()],
            level: 2,
            text: text.into(),
            ordinal: 0,
            part,
        }
    }

    fn compute(sections: &[Section]) -> UnitTerms {
        UnitTerms::compute(sections, &crate::section::unit_starts(sections))
    }

    /// The counts a reader gets back from the file are those of analyzing
    /// each unit's head directly: the same tokens, one budget across parts.
    fn check_against_analysis(sections: &[Section]) {
        let starts = crate::section::unit_starts(sections);
        let t = compute(sections);
        let back = UnitTerms::from_bytes(&t.to_bytes(), sections.len()).unwrap();
        assert_eq!(back, t);
        for (i, &s) in starts.iter().enumerate() {
            let (n, terms) = back.unit(i);
            let got: std::collections::BTreeMap<String, u16> =
                terms.map(|(t, c)| (t.to_string(), c)).collect();
            if s as usize != i {
                assert!(got.is_empty() && n == 0);
                continue;
            }
            let end = (i + 1..starts.len())
                .find(|&j| starts[j] as usize != i)
                .unwrap_or(starts.len());
            let mut want = std::collections::BTreeMap::<String, u16>::new();
            let mut all = 0u32;
            for s in &sections[i..end] {
                for text in s.heading_path.iter().chain(std::iter::once(&s.text)) {
                    for t in crate::index::terms(text) {
                        all += 1;
                        if keepable(&t) {
                            *want.entry(t).or_default() += 1;
                        }
                    }
                }
            }
            // Short units are read whole.
            let bytes: usize = sections[i..end]
                .iter()
                .map(|s| s.text.len() + s.heading_path.iter().map(String::len).sum::<usize>())
                .sum();
            if bytes <= HEAD_BYTES {
                assert_eq!((n, &got), (all, &want), "unit at {i}");
            } else {
                // Cut at the budget, possibly inside a word.
                assert!(n > 0 && got.keys().all(|t| keepable(t)));
            }
        }
    }

    #[test]
    fn unit_heads_are_counted_across_their_parts_within_the_budget() {
        let long = "multimesh instances ".repeat(150); // 3,000 bytes
        let sections = vec![
            sec("", "Intro", "Use a MultiMesh for grass.", 0),
            sec("m", "Member", &long, 1),
            sec("m", "Member", "drawn late: beyond the budget", 2),
            sec("n", "Other", "The 3D grass node_path add_child", 0),
        ];
        check_against_analysis(&sections);
        let t = compute(&sections);
        let words = |i| t.unit(i).1.map(|(w, _)| w.to_string()).collect::<Vec<_>>();
        // Parts past the budget are not read; digits and short or stop
        // words are never kept.
        assert!(words(1).iter().any(|w| w == "multimesh"));
        assert!(!words(1).iter().any(|w| w.starts_with("budget")));
        assert!(words(2).is_empty());
        assert!(words(3).iter().any(|w| w == "grass"));
        assert!(!words(3).iter().any(|w| w == "3d" || w == "the"));
    }

    /// A rebuild that takes pages over from an earlier artifact copies
    /// their counts and gets what counting them would; the copy is really
    /// made (counts from a prior that differs show through).
    #[test]
    fn counts_taken_over_from_an_earlier_artifact_equal_a_recount() {
        let sec_of = |url: &str, anchor: &str, text: &str, part: u32| Section {
            url: url.into(),
            ..sec(anchor, "Head", text, part)
        };
        let long = "grass blades multimesh instances ".repeat(80);
        let p1 = [sec_of("p1", "", "Old page about audio buses.", 0)];
        let p2 = vec![
            sec_of("p2", "", "Decals project textures onto walls.", 0),
            sec_of("p2", "m", &long, 1),
            sec_of("p2", "m", "the rest of the member", 2),
        ];
        let p3 = [sec_of("p3", "", "A changed page on particles.", 0)];
        let earlier: Vec<Section> = p1.iter().chain(&p2).cloned().collect();
        let now: Vec<Section> = p3.iter().chain(&p2).cloned().collect();
        let starts = crate::section::unit_starts(&now);
        let prior = Prior {
            terms: compute(&earlier),
            previous: vec![None, Some(1), Some(2), Some(3)],
        };
        let fresh = compute(&now);
        assert_eq!(UnitTerms::compute_with(&now, &starts, Some(&prior)), fresh);
        let mut other = earlier.clone();
        other[1].text = "Something else entirely.".into();
        let stale = Prior {
            terms: compute(&other),
            ..prior
        };
        assert_ne!(UnitTerms::compute_with(&now, &starts, Some(&stale)), fresh);
    }

    #[test]
    fn damaged_files_are_refused_with_what_is_wrong() {
        let sections = vec![sec("", "Intro", "grass blades and multimesh", 0)];
        let t = compute(&sections);
        let b = t.to_bytes();
        let err = |b: &[u8], n| UnitTerms::from_bytes(b, n).unwrap_err();
        assert!(err(&b, 2).contains("artifact has 2"));
        assert!(err(&b[..b.len() - 1], 1).contains("ends early"));
        let mut extra = b.clone();
        extra.push(0);
        assert!(err(&extra, 1).contains("after the last entry"));
        let mut bad_id = b.clone();
        let at = b.len() - 6 * t.ids.len(); // the first term id
        bad_id[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&bad_id, 1).contains("term id"));
        let mut magic = b;
        magic[0] = b'X';
        assert!(err(&magic, 1).contains("magic"));
    }

    proptest! {
        #[test]
        fn any_sections_count_as_analysis_does(
            texts in proptest::collection::vec(("[a-zA-Z_ é0-9\n.#]{0,900}", 0u32..4), 1..12)
        ) {
            let sections: Vec<Section> =
                texts.iter().map(|(text, part)| sec("a", "Head", text, *part)).collect();
            check_against_analysis(&sections);
        }

        /// Damaged bytes are refused or, when they still parse, read without
        /// a panic: a server never trusts the file's numbers.
        #[test]
        fn damaged_bytes_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4)
        ) {
            let sections = vec![
                sec("", "Intro", "grass blades and multimesh", 0),
                sec("b", "Other", "particles emitting restart", 0),
            ];
            let mut b = compute(&sections).to_bytes();
            let n = b.len();
            for (at, x) in flips {
                b[at % n] ^= x;
            }
            if let Ok(t) = UnitTerms::from_bytes(&b, 2) {
                for i in 0..t.sections() {
                    let (_, terms) = t.unit(i);
                    prop_assert!(terms.count() <= t.ids.len());
                }
            }
        }
    }
}
