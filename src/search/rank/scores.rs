//! The order of hits and the scores shown with them.

use super::PageHit;

/// Order hits by `key`, best first (ties by source and page, so the order is stable).
pub fn sort_hits(hits: &mut [PageHit], key: impl Fn(&PageHit) -> f64) {
    hits.sort_by(|a, b| {
        key(b)
            .total_cmp(&key(a))
            .then(a.source.cmp(&b.source))
            .then(a.page.cmp(&b.page))
    });
}

/// Give every hit its shown score: the calibrated coverage of its best unit
/// (or, where higher, of the questions asked of its page) or, with
/// `meaning` (page vectors were fused), its page's cosine to the question
/// where that is higher; never above the score of the hit ranked before
/// it. An agent reading the list top-down thus never sees a lower-ranked
/// hit claim more confidence, and the first hit's score keeps its meaning
/// (under 0.5: probably not covered).
///
/// Why the cosine: coverage counts the question's own words, so a question
/// in a user's words that the ranking answers right scored "not covered"
/// (dev: 31 of the 37 hard Godot questions answered first). The
/// transformer's page cosine means the same from question to question, and
/// off-topic questions stay under 0.5 by it (BENCHMARKS.md, session 42).
///
/// Why the questions asked: they were written in users' words, so a
/// question that shares most of its rarer words with those asked of a page
/// is covered in the user's sense where the docs' words miss, with or
/// without a model; an off-topic question rarely is (BENCHMARKS.md,
/// session 46).
pub fn assign_scores(hits: &mut [PageHit], monotone: bool, meaning: bool) {
    let mut cap = 1.0f64;
    for h in hits {
        let covered = h.best().coverage.max(h.asked_coverage);
        let mut own = calibrate(covered, h.best().bm25);
        if meaning {
            own = own.max(f64::from(h.cosine).clamp(0.0, 1.0));
        }
        let s = round3(if monotone { own.min(cap) } else { own });
        h.score = s;
        cap = s;
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
/// Map coverage and BM25 to a score in [0, 1]: coverage dominates; a strong
/// BM25 match lifts it a little. Under 0.5 means the rarest words are missing.
pub fn calibrate(coverage: f64, bm25: f32) -> f64 {
    let strength = (bm25 as f64 / (bm25 as f64 + 8.0)).clamp(0.0, 1.0);
    (coverage.powf(1.75) * (0.8 + 0.2 * strength)).clamp(0.0, 1.0)
}
