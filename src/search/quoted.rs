//! Words a question quotes: an error message pasted whole ("dies with
//! 'Claude Code process aborted by user'"), a label read off the screen
//! ("Suggested Edits Kept"). Such words are the docs' own, in their
//! order; a page that holds them so is the page the user saw them on, or
//! the one that explains them, however common each word is alone. Word by
//! word, BM25 barely tells it from pages that use the words apart.
//!
//! Quotes are `"…"`, `“…”`, `` `…` `` and `'…'` (an apostrophe opens only
//! after something other than a letter and closes only before one, so that
//! "the editor's tree" quotes nothing). What they hold is compared as a
//! run of words, letters and digits lower-cased, so that punctuation the
//! docs write inside it (`'&&'`, a code span) does not hide it.

/// A quoted phrase: fewer words say too little to single a page out.
const MIN_WORDS: usize = 2;
/// ... and more are no longer a phrase pasted from anywhere.
const MAX_WORDS: usize = 24;

/// The quoted phrases of `query`, each as its words (see the module docs).
pub fn quoted_phrases(query: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = query.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let close = match chars[i] {
            '"' => Some('"'),
            '“' => Some('”'),
            '`' => Some('`'),
            '\'' if i == 0 || !chars[i - 1].is_alphabetic() => Some('\''),
            _ => None,
        };
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let end = (i + 1..chars.len()).find(|&j| {
            chars[j] == close
                && (close != '\'' || chars.get(j + 1).is_none_or(|c| !c.is_alphabetic()))
        });
        let Some(end) = end else {
            i += 1;
            continue;
        };
        let inner: String = chars[i + 1..end].iter().collect();
        let words = crate::util::lower_words(&inner);
        if (MIN_WORDS..=MAX_WORDS).contains(&words.len()) {
            out.push(words);
        }
        i = end + 1;
    }
    out
}

/// Whether `text` holds `phrase`'s words in a row (as
/// [`crate::util::lower_words`] reads both).
pub fn holds(text: &str, phrase: &[String]) -> bool {
    // Every word first, looked for without lower-casing the text: most
    // sections lack one and are passed over at memchr's speed, which keeps
    // a quoted question's reading of every hit's pages cheap.
    if phrase.is_empty() || !phrase.iter().all(|w| contains_ignoring_case(text, w)) {
        return false;
    }
    // The words as written: lower-casing each would allocate.
    let words: Vec<&str> = crate::util::words(text).collect();
    let same = |t: &str, p: &String| match t.is_ascii() {
        true => t.eq_ignore_ascii_case(p),
        false => t.to_lowercase() == *p,
    };
    words
        .windows(phrase.len())
        .any(|w| w.iter().zip(phrase).all(|(t, p)| same(t, p)))
}

/// Whether `hay` holds `word` (lower case), case aside.
fn contains_ignoring_case(hay: &str, word: &str) -> bool {
    let w = word.as_bytes();
    let Some(&first) = w.first() else {
        return true;
    };
    if !word.is_ascii() {
        return hay.to_lowercase().contains(word);
    }
    let h = hay.as_bytes();
    let mut at = 0;
    while let Some(i) = memchr::memchr2(first, first.to_ascii_uppercase(), &h[at..]) {
        let start = at + i;
        if h.len() - start < w.len() {
            return false;
        }
        if h[start..start + w.len()].eq_ignore_ascii_case(w) {
            return true;
        }
        at = start + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_read_and_apostrophes_are_not_quotes() {
        assert_eq!(
            quoted_phrases("my script dies with 'Claude Code process aborted by user' — why?"),
            [["claude", "code", "process", "aborted", "by", "user"]]
        );
        assert_eq!(
            quoted_phrases(r#"the "Suggested Edits Kept" column and `npm run build`"#),
            [
                vec!["suggested", "edits", "kept"],
                vec!["npm", "run", "build"]
            ]
        );
        assert_eq!(
            quoted_phrases("“No MCP servers configured” shows"),
            [["no", "mcp", "servers", "configured"]]
        );
        // Apostrophes in words, a lone word, an unclosed quote: nothing.
        assert!(quoted_phrases("the editor's tree panel and my script can't find it").is_empty());
        assert!(quoted_phrases("set it to 'auto' please").is_empty());
        assert!(quoted_phrases("it says \"command not found").is_empty());
    }

    #[test]
    fn a_phrase_is_held_as_a_run_of_words_whatever_the_punctuation() {
        let p = &quoted_phrases("'The token && is not a valid statement separator'")[0];
        assert!(holds(
            "PowerShell says: The token '&&' is not a valid statement separator.",
            p
        ));
        assert!(!holds(
            "The token is valid; a separator is not a statement.",
            p
        ));
        assert!(!holds("", p));
        assert!(contains_ignoring_case("The TOKEN is", "token"));
        assert!(!contains_ignoring_case("tok", "token"));
        assert!(contains_ignoring_case("Ünïcode Straße", "straße"));
    }
}
