//! Twin pages that one word of their titles tells apart: `RigidBody2D` and
//! `RigidBody3D`, "2D lights and shadows" and "3D lights and shadows".
//!
//! A question that says "my 2D physics crate" is about the 2D twin, yet its
//! other words match both, and the 3D page may hold them better; the
//! meaning barely tells "2D" from "3D" either. So where a question names one
//! word of such a pair and not the other, the pages whose titles hold only
//! the other rank lower (`RankConfig::other_variant`).
//!
//! The pairs are read from the titles of each source, never listed: two
//! words form a pair when many titles read the same but for the one word in
//! the same place (Godot's titles give 2D / 3D in 29 places). A pair of
//! words that only a few titles share ("Commands" / "Settings" under one
//! heading) is a pair of topics, not of variants, and is left out.

use std::collections::{HashMap, HashSet};

/// Titles that must read the same but for the pair's words, in as many
/// distinct contexts, before two words count as variants of each other.
/// Godot's 2D / 3D has 29; no other pair in any source has more than 2.
pub const MIN_CONTEXTS: usize = 8;

/// The words of a title or a question as variants are read: split at
/// anything but letters and digits, at a lower-case letter followed by an
/// upper-case one, and at a letter followed by a digit, lower-cased.
/// `RigidBody2D` gives `rigid`, `body`, `2d`.
pub fn title_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev = None;
            continue;
        }
        let split = prev.is_some_and(|p| {
            (p.is_lowercase() && c.is_uppercase()) || (p.is_alphabetic() && c.is_numeric())
        });
        if split && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
        prev = Some(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Which word of `pair` `words` hold alone: 1 the first, 2 the second, 0
/// neither or both (a title or a question that names both is about
/// neither twin).
fn side(words: &[String], pair: [&str; 2]) -> u8 {
    let has = |w: &str| words.iter().any(|x| x == w);
    match (has(pair[0]), has(pair[1])) {
        (true, false) => 1,
        (false, true) => 2,
        _ => 0,
    }
}

/// One pair of variant words and, for each page, which of them its title
/// holds alone.
#[derive(Debug, Clone)]
struct Pair {
    words: [String; 2],
    /// Per page: 0 neither or both, 1 `words[0]` only, 2 `words[1]` only.
    side: Vec<u8>,
}

/// The variant pairs of one source's titles (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Variants {
    pairs: Vec<Pair>,
}

impl Variants {
    /// Read the pairs from the pages' titles, in page order.
    pub fn of_titles<'a>(titles: impl Iterator<Item = &'a str>) -> Variants {
        let words: Vec<Vec<String>> = titles.map(title_words).collect();
        // Each title with one word left out, and the words found in that
        // slot: two words sharing a slot share a context.
        let mut slots: HashMap<Vec<&str>, HashSet<&str>> = HashMap::new();
        for w in &words {
            if w.len() < 2 {
                continue;
            }
            for k in 0..w.len() {
                let context: Vec<&str> = (w.iter().enumerate())
                    .map(|(i, x)| if i == k { "" } else { x.as_str() })
                    .collect();
                slots.entry(context).or_default().insert(w[k].as_str());
            }
        }
        let mut contexts: HashMap<(&str, &str), usize> = HashMap::new();
        for found in slots.values().filter(|s| s.len() > 1) {
            let mut found: Vec<&str> = found.iter().copied().collect();
            found.sort_unstable();
            for (i, a) in found.iter().enumerate() {
                for b in &found[i + 1..] {
                    *contexts.entry((a, b)).or_default() += 1;
                }
            }
        }
        let mut chosen: Vec<(&str, &str)> = contexts
            .into_iter()
            .filter(|&(_, n)| n >= MIN_CONTEXTS)
            .map(|(p, _)| p)
            .collect();
        chosen.sort_unstable();
        let pairs = chosen
            .into_iter()
            .map(|(a, b)| Pair {
                words: [a.to_string(), b.to_string()],
                side: words.iter().map(|w| side(w, [a, b])).collect(),
            })
            .collect();
        Variants { pairs }
    }

    /// Whether any pair was found.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The sides a question names: for each pair, 1 or 2 when it names
    /// that word and not the other, 0 otherwise. `words` from
    /// [`title_words`].
    pub fn named(&self, words: &[String]) -> Vec<u8> {
        (self.pairs.iter())
            .map(|p| side(words, [&p.words[0], &p.words[1]]))
            .collect()
    }

    /// Whether `page`'s title holds only the other word of a pair whose one
    /// word the question names (`named`, from [`Variants::named`]).
    pub fn is_other(&self, named: &[u8], page: usize) -> bool {
        (self.pairs.iter().zip(named))
            .any(|(p, &n)| n != 0 && p.side.get(page).is_some_and(|&s| s != 0 && s != n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_words_split_names_as_they_are_written() {
        assert_eq!(title_words("RigidBody2D"), ["rigid", "body", "2d"]);
        assert_eq!(
            title_words("2D lights and shadows"),
            ["2d", "lights", "and", "shadows"]
        );
        assert_eq!(title_words("GPUParticles3D"), ["gpuparticles", "3d"]);
        assert_eq!(title_words("my 2d crate"), ["my", "2d", "crate"]);
    }

    #[test]
    fn words_many_titles_swap_are_variants_and_a_few_are_topics() {
        let mut titles: Vec<String> = ["Area", "Body", "Camera", "Light", "Node", "Path", "Sprite"]
            .iter()
            .flat_map(|n| [format!("{n}2D"), format!("{n}3D")])
            .collect();
        titles.push("2D lights and shadows".into());
        titles.push("3D lights and shadows".into());
        titles.push("Label".into());
        // Two topics under one heading, in two places only.
        titles.extend(
            [
                "CLI commands",
                "CLI settings",
                "App commands",
                "App settings",
            ]
            .map(String::from),
        );
        let v = Variants::of_titles(titles.iter().map(String::as_str));
        assert_eq!(v.pairs.len(), 1, "{v:?}");
        assert_eq!(v.pairs[0].words, ["2d", "3d"]);
        let named = v.named(&title_words("my 2D crate never collides"));
        assert_eq!(named, [1]);
        let page = |t: &str| titles.iter().position(|x| x == t).unwrap();
        assert!(v.is_other(&named, page("Body3D")));
        assert!(v.is_other(&named, page("3D lights and shadows")));
        assert!(!v.is_other(&named, page("Body2D")));
        assert!(!v.is_other(&named, page("Label")));
        assert!(!v.is_other(&named, page("CLI settings")));
        // A question naming both, or neither, moves nothing.
        for q in ["2D or 3D bodies", "bodies that collide"] {
            let named = v.named(&title_words(q));
            assert!(!v.is_other(&named, page("Body3D")), "{q}");
        }
    }
}
