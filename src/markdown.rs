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
/// markers, no HTML tags, backslash escapes resolved.
pub fn heading_text(inline: &str) -> String {
    heading_text_at(inline, 0)
}

/// Link texts nested deeper than this are kept as written: a hostile
/// heading of thousands of nested links must neither overflow the stack nor
/// take time quadratic in its depth.
const MAX_LINK_NESTING: usize = 32;

fn heading_text_at(inline: &str, depth: usize) -> String {
    if depth > MAX_LINK_NESTING {
        return inline.to_string();
    }
    let mut out = String::with_capacity(inline.len());
    let chars: Vec<char> = inline.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() => {
                out.push(chars[i + 1]);
                i += 2;
            }
            '`' => {
                let run = count_run(&chars, i, '`');
                if let Some(end) = find_run(&chars, i + run, '`', run) {
                    let code: String = chars[i + run..end].iter().collect();
                    let code = if code.len() > 2 && code.starts_with(' ') && code.ends_with(' ') {
                        code[1..code.len() - 1].to_string()
                    } else {
                        code
                    };
                    out.push_str(&code);
                    i = end + run;
                } else {
                    for _ in 0..run {
                        out.push('`');
                    }
                    i += run;
                }
            }
            '!' if chars.get(i + 1) == Some(&'[') => {
                i += 1;
            }
            '[' => {
                // `[text](target)` → text; a bare `[` stays.
                if let Some(close) = matching_bracket(&chars, i) {
                    if chars.get(close + 1) == Some(&'(') {
                        if let Some(paren) = matching_paren(&chars, close + 1) {
                            let text: String = chars[i + 1..close].iter().collect();
                            out.push_str(&heading_text_at(&text, depth + 1));
                            i = paren + 1;
                            continue;
                        }
                    }
                }
                out.push('[');
                i += 1;
            }
            '<' => {
                // Drop inline HTML tags, keep their text.
                let rest: String = chars[i..chars.len().min(i + 400)].iter().collect();
                if let Some(m) = INLINE_TAG.find(&rest) {
                    i += m.as_str().chars().count();
                } else {
                    out.push('<');
                    i += 1;
                }
            }
            '*' => i += 1,
            '_' => {
                let prev_word = i > 0 && chars[i - 1].is_alphanumeric();
                let next_word = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
                if prev_word && next_word {
                    out.push('_');
                }
                i += 1;
            }
            '~' if chars.get(i + 1) == Some(&'~') => i += 2,
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    decode_entities(out.trim(), false).into_owned()
}

static INLINE_TAG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"^</?[A-Za-z][A-Za-z0-9._-]*(\s+[^<>]*)?/?>"#).expect("static regex")
});

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

fn count_run(chars: &[char], at: usize, c: char) -> usize {
    chars[at..].iter().take_while(|&&x| x == c).count()
}

/// Start of the next run of exactly `len` `c`s at or after `from`.
fn find_run(chars: &[char], from: usize, c: char, len: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == c {
            let run = count_run(chars, j, c);
            if run == len {
                return Some(j);
            }
            j += run;
        } else {
            j += 1;
        }
    }
    None
}

fn matching_bracket(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut j = open;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
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
