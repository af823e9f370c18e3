//! Markdown knowledge shared by the stages that write Markdown (normalize)
//! and the ones that read it (section, diff, read_section): fenced code,
//! ATX headings, the text a heading renders to, and how sites turn that
//! text into anchors. One place, so that the normalizer and the sectioner
//! can never disagree on where a heading or a fence is.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// How a site's generator turns a heading's text into its `id`. Named after the
/// algorithm, not after a host: several sites share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlugStyle {
    /// github-slugger (rehype-slug, Astro, Next.js MDX): lower-case, drop every
    /// character that is not a letter, digit, mark, space, `-` or `_`, each space
    /// becomes `-`; the second `x` is `x-1`, the third `x-2`.
    Github,
    /// Mintlify, runs variant: lower-case, each run of characters other than
    /// word characters, `/` and `’` becomes one `-` (apostrophes vanish), no
    /// leading/trailing `-`; the second `x` is `x-2`, the third `x-3`.
    MintlifyRuns,
    /// Mintlify, words variant: lower-case, drop punctuation (keep word
    /// characters, whitespace and `-`), each whitespace character becomes `-`;
    /// the second `x` is `x-1`, the third `x-2`.
    MintlifyWords,
}

/// Assigns unique slugs the way one page's generator does, duplicates included.
#[derive(Debug, Clone)]
pub struct Slugger {
    style: SlugStyle,
    seen: HashMap<String, u32>,
}

impl Slugger {
    /// A fresh slugger for one page (duplicate counting is per page).
    pub fn new(style: SlugStyle) -> Self {
        Slugger {
            style,
            seen: HashMap::new(),
        }
    }

    /// Slug for the next heading with this rendered text, numbered if taken.
    pub fn slug(&mut self, text: &str) -> String {
        let base = slugify(self.style, text);
        let first_suffix = match self.style {
            SlugStyle::MintlifyRuns => 2,
            SlugStyle::Github | SlugStyle::MintlifyWords => 1,
        };
        let mut candidate = base.clone();
        if self.seen.contains_key(&candidate) {
            let mut n = self
                .seen
                .get(&base)
                .copied()
                .unwrap_or(0)
                .max(first_suffix - 1);
            loop {
                n += 1;
                candidate = format!("{base}-{n}");
                if !self.seen.contains_key(&candidate) {
                    break;
                }
            }
            self.seen.insert(base.clone(), n);
        }
        self.seen.entry(candidate.clone()).or_insert(0);
        candidate
    }
}

/// The slug of one heading text, without duplicate numbering.
pub fn slugify(style: SlugStyle, text: &str) -> String {
    let lower = text.trim().to_lowercase();
    match style {
        // github-slugger turns only the space itself into `-`.
        SlugStyle::Github => dash_spaces(&lower, |c| c == ' '),
        SlugStyle::MintlifyRuns => {
            let mut out = String::with_capacity(lower.len());
            let mut pending_dash = false;
            for c in lower.chars() {
                if c == '\'' {
                    continue;
                }
                if c.is_alphanumeric() || c == '_' || c == '/' || c == '’' || is_mark(c) {
                    if pending_dash && !out.is_empty() {
                        out.push('-');
                    }
                    pending_dash = false;
                    out.push(c);
                } else {
                    pending_dash = true;
                }
            }
            out
        }
        SlugStyle::MintlifyWords => dash_spaces(&lower, char::is_whitespace),
    }
}

/// Word characters (and `-`) kept, spaces as `is_space` sees them become
/// `-`, everything else dropped.
fn dash_spaces(lower: &str, is_space: impl Fn(char) -> bool) -> String {
    lower
        .chars()
        .filter_map(|c| {
            if is_space(c) {
                Some('-')
            } else if c == '-' || c == '_' || c.is_alphanumeric() || is_mark(c) {
                Some(c)
            } else {
                None
            }
        })
        .collect()
}

/// Combining marks count as word characters for every generator we imitate.
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The text a heading renders to, which is what generators slug: inline code
/// without backticks, link and image text without targets, no emphasis
/// markers, no HTML tags, backslash escapes and entities resolved — as
/// pulldown-cmark reads the inline Markdown.
pub fn heading_text(inline: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser};
    // Read as the content of an ATX heading, so a leading `-`, `1.` or `>`
    // stays text instead of opening a list or a quote.
    let source = format!("# {}", inline.replace(['\n', '\r'], " "));
    let mut out = String::with_capacity(inline.len());
    for event in Parser::new_ext(&source, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    // Non-breaking and typographic spaces are spaces (as in
    // [`decode_entities`]).
    out.replace(['\u{a0}', '\u{2002}', '\u{2003}', '\u{2009}'], " ")
        .trim()
        .to_string()
}

/// An inline code span around `s` (trimmed; empty for nothing), with more
/// backticks than any run inside it, padded when it starts or ends with one.
pub fn code_span(s: &str) -> String {
    let s = s.trim();
    if s.is_empty() {
        return String::new();
    }
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    if s.starts_with('`') || s.ends_with('`') {
        format!("{ticks} {s} {ticks}")
    } else {
        format!("{ticks}{s}{ticks}")
    }
}

/// A code fence longer than any backtick run in `code` (at least three):
/// a run anywhere, not only at a line start, so no reader's leniency can
/// close it early.
pub fn fence_for(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// A fenced block around `code` (outer blank lines dropped).
pub fn fenced(lang: &str, code: &str) -> String {
    let fence = fence_for(code);
    format!("{fence}{lang}\n{}\n{fence}", code.trim_matches('\n'))
}

/// Decode HTML entities (the whole HTML5 table, and numeric references).
/// Non-breaking and typographic spaces become plain spaces: they carry no
/// meaning in Markdown and would split words for search. With
/// `keep_markup`, `&lt;`, `&gt;` and `&amp;` stay: in Markdown text they are
/// the escapes that keep text from becoming a tag.
pub fn decode_entities(s: &str, keep_markup: bool) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return std::borrow::Cow::Borrowed(s);
    }
    ENTITY.replace_all(s, |c: &regex::Captures| {
        let whole = c.get(0).map_or("", |m| m.as_str());
        let name = c.get(1).map_or("", |m| m.as_str());
        if matches!(name, "nbsp" | "ensp" | "emsp" | "thinsp" | "#160") {
            return " ".to_string();
        }
        let decoded = html_escape::decode_html_entities(whole);
        let markup = matches!(decoded.as_ref(), "<" | ">" | "&");
        if decoded == whole || (keep_markup && markup) {
            whole.to_string()
        } else {
            decoded.into_owned()
        }
    })
}

static ENTITY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
        .expect("static regex")
});

/// A section's text as (prose, code): the lines inside fenced code blocks
/// go to the second, the fence lines themselves (backticks and a language
/// name) to neither. Search can weigh the two apart: a word in the prose is
/// what the section says, the same word as an identifier in a sample
/// script (`enemy`, `player`, `floor` in a tutorial's code) is weaker
/// evidence that the section answers a question put in words.
pub fn split_code(text: &str) -> (std::borrow::Cow<'_, str>, String) {
    if !text.contains("```") && !text.contains("~~~") {
        return (std::borrow::Cow::Borrowed(text), String::new());
    }
    let (mut prose, mut code) = (String::with_capacity(text.len()), String::new());
    let mut fences = FenceTracker::default();
    for line in text.split_inclusive('\n') {
        match fences.line(line) {
            FenceLine::Outside => prose.push_str(line),
            FenceLine::Inside => code.push_str(line),
            FenceLine::Open | FenceLine::Close => {}
        }
    }
    (std::borrow::Cow::Owned(prose), code)
}

/// Tracks fenced code blocks line by line. Fences may be indented (list items,
/// dedented MDX) or sit inside blockquotes (`> ```), as the normalizer emits them.
#[derive(Debug, Default, Clone)]
pub(crate) struct FenceTracker {
    open: Option<(u8, usize)>,
}

/// What a line is with respect to fenced code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FenceLine {
    Open,
    Inside,
    Close,
    Outside,
}

impl FenceTracker {
    /// Classify `line` and advance the state.
    pub(crate) fn line(&mut self, line: &str) -> FenceLine {
        let body = line.trim_start_matches([' ', '\t', '>']);
        match self.open {
            Some((ch, len)) => {
                let run = body.bytes().take_while(|&b| b == ch).count();
                if run >= len && body[run..].trim().is_empty() {
                    self.open = None;
                    FenceLine::Close
                } else {
                    FenceLine::Inside
                }
            }
            None => match fence_opener(body) {
                Some((ch, len)) => {
                    self.open = Some((ch, len));
                    FenceLine::Open
                }
                None => FenceLine::Outside,
            },
        }
    }

    /// The closing line for the fence still open, if any.
    pub(crate) fn closer(&self) -> Option<String> {
        self.open
            .map(|(ch, len)| String::from_utf8(vec![ch; len]).unwrap_or_else(|_| "```".into()))
    }
}

/// `(fence char, run length)` if `body` (indentation already removed) opens a fence.
pub(crate) fn fence_opener(body: &str) -> Option<(u8, usize)> {
    let ch = *body.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let run = body.bytes().take_while(|&b| b == ch).count();
    if run < 3 {
        return None;
    }
    if ch == b'`' && body[run..].contains('`') {
        return None;
    }
    Some((ch, run))
}

/// One ATX heading of a Markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AtxHeading {
    /// 0-based line number.
    pub line: usize,
    pub level: u8,
    /// The heading's inline Markdown, closing `#`s removed.
    pub inline: String,
}

/// Parse one line as an ATX heading (up to 3 spaces of indentation).
pub(crate) fn parse_atx(line: &str) -> Option<(u8, String)> {
    let indent = line.bytes().take_while(|&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let hashes = rest.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let after = &rest[hashes..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let mut text = after.trim();
    // Optional closing sequence: spaces then only `#`s.
    let stripped = text.trim_end_matches('#');
    if stripped.len() != text.len() && (stripped.is_empty() || stripped.ends_with([' ', '\t'])) {
        text = stripped.trim_end();
    }
    Some((hashes as u8, text.to_string()))
}

/// Every ATX heading outside fenced code, in order. The normalizer and
/// [`split`] both use this, so ids handed over per heading line up.
pub(crate) fn atx_headings(markdown: &str) -> Vec<AtxHeading> {
    let mut fences = FenceTracker::default();
    let mut out = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        if fences.line(line) != FenceLine::Outside {
            continue;
        }
        if let Some((level, inline)) = parse_atx(line) {
            out.push(AtxHeading {
                line: i,
                level,
                inline,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::split_code;

    #[test]
    fn code_blocks_split_from_the_prose() {
        let text = "## Enemy script\n\nAdd a script:\n\n```gdscript\nextends RigidBody2D\n```\n\
                    Then `play()` it.\n\n> ~~~\n> quoted code\n> ~~~\n";
        let (prose, code) = split_code(text);
        assert_eq!(
            prose,
            "## Enemy script\n\nAdd a script:\n\nThen `play()` it.\n\n"
        );
        assert_eq!(code, "extends RigidBody2D\n> quoted code\n");
        // Inline code is prose; text without fences is not copied.
        let (prose, code) = split_code("Call `add_child()` here.");
        assert!(matches!(
            prose,
            std::borrow::Cow::Borrowed("Call `add_child()` here.")
        ));
        assert!(code.is_empty());
        // An unclosed fence runs to the end, as readers render it.
        let (prose, code) = split_code("Intro\n```\nx = 1\n");
        assert_eq!((prose.as_ref(), code.as_str()), ("Intro\n", "x = 1\n"));
    }
}
