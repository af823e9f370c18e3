//! `read_section`: a page's outline, or one section with its subsections, paged
//! by characters so an agent can read a long section in bounded calls.
//!
//! Conventions (the seed leaves them open):
//! - Outline entries are the page's *root* sections: those not nested under an
//!   earlier section of a smaller level (usually every h2). Each is
//!   `## Text (N subsections)`, N counting every deeper section up to the next
//!   root; the count is left out when N is 0. `outline_depth` 3 adds each root's
//!   direct subsections, indented two spaces, with their own counts.
//! - In outline mode `text` is empty and `total_chars` 0, except on a page with
//!   no headings below its title: there `text` is the page itself, paged like a
//!   section, since an empty outline would leave nothing to ask for.
//! - A `#fragment` on the URL (search_docs returns passage URLs with the
//!   section's anchor) adds that section's text to the outline when no heading
//!   is given; an unknown fragment is ignored.
//! - The page title as heading reads the whole page when no section bears that
//!   name.
//! - `offset` pages `text` only; an outline is never paged.

use crate::model::Section;
use crate::search::types::{ReadSectionArgs, ReadSectionResult};
use crate::search::{Library, PageRef, ToolError};
use crate::util::{canonical_page_key, percent_decode};

/// Characters of section text returned per call.
pub const PAGE_CHARS: usize = 8_000;
/// Outline lines shown before `+N more sections`.
pub const OUTLINE_LINES: usize = 40;
/// A cut within this many characters before the limit goes to a line break.
const LINE_BREAK_WINDOW: usize = 1_500;
/// Candidates listed in an unknown/ambiguous heading error.
const MAX_CANDIDATES: usize = 20;
/// Known URLs suggested for an unknown one.
const MAX_URL_SUGGESTIONS: usize = 3;

/// Answer a `read_section` call (seed 000): the outline without a heading, else
/// the section's markdown with its subsections from `offset`, at most
/// [`PAGE_CHARS`] characters.
pub fn read_section(lib: &Library, args: &ReadSectionArgs) -> Result<ReadSectionResult, ToolError> {
    if !matches!(args.outline_depth, 2 | 3) {
        return Err(ToolError::invalid(format!(
            "outline_depth: must be one of 2, 3, got {}",
            args.outline_depth
        )));
    }
    let url = args.url.trim();
    let page = lib.find_page(url).ok_or_else(|| unknown_url(lib, url))?;
    let blocks = blocks(page.sections);
    let heading = args
        .heading
        .as_deref()
        .map(|h| h.trim().trim_start_matches('#').trim())
        .filter(|h| !h.is_empty());

    let selection = match heading {
        Some(h) => Some(select(&page, &blocks, h)?),
        None => fragment(url)
            .and_then(|f| find_anchor(&blocks, &f))
            .map(Selection::Block),
    };
    // No heading was asked for: the outline comes along even when a fragment
    // picked a section.
    let outline = match heading {
        Some(_) => Vec::new(),
        None => outline(&blocks, args.outline_depth),
    };
    let (heading, range) = match selection {
        Some(Selection::Block(i)) => (Some(blocks[i].display()), i..subtree_end(&blocks, i)),
        Some(Selection::Page) => (Some(page.page.title.clone()), 0..blocks.len()),
        None => {
            if !outline.is_empty() || blocks.is_empty() {
                return Ok(ReadSectionResult {
                    url: page.page.url.clone(),
                    title: page.page.title.clone(),
                    description: page.page.description.clone(),
                    outline,
                    heading: None,
                    text: String::new(),
                    offset: 0,
                    next_offset: None,
                    total_chars: 0,
                });
            }
            (None, 0..blocks.len())
        }
    };
    let text = join_blocks(&blocks[range]);
    let chunk = text_page(&text, args.offset)?;
    Ok(ReadSectionResult {
        url: page.page.url.clone(),
        title: page.page.title.clone(),
        description: page.page.description.clone(),
        outline,
        heading,
        text: chunk.text.to_string(),
        offset: args.offset,
        next_offset: chunk.next_offset,
        total_chars: chunk.total_chars,
    })
}

/// One logical section: a heading's section with the parts it was split into.
struct Block<'a> {
    parts: &'a [Section],
}

impl Block<'_> {
    fn first(&self) -> &Section {
        &self.parts[0]
    }
    fn level(&self) -> u8 {
        self.first().level
    }
    fn path(&self) -> &[String] {
        &self.first().heading_path
    }
    fn anchor(&self) -> &str {
        &self.first().anchor
    }
    /// Heading text as shown in an outline line.
    fn name(&self) -> &str {
        self.path()
            .last()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.anchor())
    }
    /// Heading path below the page title (`Hooks > PreToolUse`); the title for the lead.
    fn display(&self) -> String {
        match self.path() {
            [] => self.anchor().to_string(),
            [title] => title.clone(),
            [_, rest @ ..] => rest.join(" > "),
        }
    }
    /// The page's lead text under its title.
    fn is_lead(&self) -> bool {
        self.level() <= 1 && self.anchor().is_empty()
    }
    /// Markdown of the section, its parts joined; a part that repeats the
    /// heading line of the first has it dropped.
    fn text(&self) -> String {
        let first = self.first().text.trim_end();
        let mut out = first.to_string();
        let heading_line = first.lines().next().filter(|l| l.starts_with('#'));
        for part in &self.parts[1..] {
            let mut t = part.text.as_str();
            if let Some(h) = heading_line {
                if let Some(rest) = t.strip_prefix(h) {
                    t = rest.trim_start_matches(['\r', '\n']);
                }
            }
            let t = t.trim_end();
            if !t.is_empty() {
                // The sectioner cuts parts at paragraph boundaries.
                out.push_str("\n\n");
                out.push_str(t);
            }
        }
        out
    }
}

/// Group a page's sections into logical sections: consecutive parts (`part`
/// increasing, same heading path and anchor) belong to one.
fn blocks(sections: &[Section]) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=sections.len() {
        let continues = i < sections.len() && {
            let (prev, cur) = (&sections[i - 1], &sections[i]);
            cur.part > 0
                && cur.part > prev.part
                && cur.heading_path == prev.heading_path
                && cur.anchor == prev.anchor
        };
        if !continues {
            out.push(Block {
                parts: &sections[start..i],
            });
            start = i;
        }
    }
    out
}

/// End (exclusive) of block `i` with its subsections: the next block of the same
/// or a smaller level.
fn subtree_end(blocks: &[Block], i: usize) -> usize {
    let level = blocks[i].level();
    blocks[i + 1..]
        .iter()
        .position(|b| b.level() <= level)
        .map_or(blocks.len(), |p| i + 1 + p)
}

/// Indices in `range` that are not nested under an earlier block of the range.
fn roots(blocks: &[Block], range: std::ops::Range<usize>) -> Vec<usize> {
    let mut min_level = u8::MAX;
    let mut out = Vec::new();
    for i in range {
        let level = blocks[i].level();
        if level <= min_level {
            out.push(i);
            min_level = level;
        }
    }
    out
}

fn outline_line(blocks: &[Block], i: usize, indent: &str) -> String {
    let b = &blocks[i];
    let n = subtree_end(blocks, i) - i - 1;
    let hashes = "#".repeat(usize::from(b.level().max(1)));
    match n {
        0 => format!("{indent}{hashes} {}", b.name()),
        1 => format!("{indent}{hashes} {} (1 subsection)", b.name()),
        n => format!("{indent}{hashes} {} ({n} subsections)", b.name()),
    }
}

fn outline(blocks: &[Block], depth: u8) -> Vec<String> {
    let start = usize::from(blocks.first().is_some_and(Block::is_lead));
    let mut lines = Vec::new();
    for r in roots(blocks, start..blocks.len()) {
        lines.push(outline_line(blocks, r, ""));
        if depth >= 3 {
            for c in roots(blocks, r + 1..subtree_end(blocks, r)) {
                lines.push(outline_line(blocks, c, "  "));
            }
        }
    }
    if lines.len() > OUTLINE_LINES {
        let more = lines.len() - OUTLINE_LINES;
        lines.truncate(OUTLINE_LINES);
        lines.push(format!("+{more} more sections"));
    }
    lines
}

fn join_blocks(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        let t = b.text();
        if t.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&t);
    }
    out
}

/// One call's share of a section's text.
#[derive(Debug, PartialEq, Eq)]
pub struct TextPage<'a> {
    pub text: &'a str,
    pub next_offset: Option<u64>,
    pub total_chars: u64,
}

/// The [`PAGE_CHARS`]-character page of `text` starting at character `offset`,
/// cut after a line break near the limit when there is one.
pub fn text_page(text: &str, offset: u64) -> Result<TextPage<'_>, ToolError> {
    let total = text.chars().count();
    let past_end = || {
        ToolError::invalid(format!(
            "offset {offset} is past the end of the section (total_chars {total}); \
             pass a next_offset from a previous call, or 0"
        ))
    };
    let start_char = usize::try_from(offset).map_err(|_| past_end())?;
    if start_char > total {
        return Err(past_end());
    }
    let byte_at = |chars: usize| {
        text.char_indices()
            .nth(chars)
            .map_or(text.len(), |(b, _)| b)
    };
    let start = byte_at(start_char);
    let rest = &text[start..];
    if total - start_char <= PAGE_CHARS {
        return Ok(TextPage {
            text: rest,
            next_offset: None,
            total_chars: total as u64,
        });
    }
    let limit = rest
        .char_indices()
        .nth(PAGE_CHARS)
        .map_or(rest.len(), |(b, _)| b);
    let window = rest
        .char_indices()
        .nth(PAGE_CHARS - LINE_BREAK_WINDOW)
        .map_or(0, |(b, _)| b);
    // '\n' is one byte and never inside a multi-byte char, so this cut is on a char boundary.
    let cut = rest[window..limit]
        .rfind('\n')
        .map_or(limit, |p| window + p + 1);
    let chunk = &rest[..cut];
    let next = start_char + chunk.chars().count();
    Ok(TextPage {
        text: chunk,
        next_offset: Some(next as u64),
        total_chars: total as u64,
    })
}

enum Selection {
    Block(usize),
    Page,
}

/// Heading text compared case-insensitively, leading #s and backticks dropped,
/// whitespace collapsed.
fn norm(s: &str) -> String {
    s.trim()
        .trim_start_matches('#')
        .replace('`', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Drop an outline line's ` (N subsections)` suffix, so a line can be passed back as is.
fn strip_count(s: &str) -> &str {
    let t = s.trim_end();
    if let Some(inner) = t.strip_suffix(')').and_then(|t| t.rsplit_once('(')) {
        let (head, count) = inner;
        let mut words = count.split_whitespace();
        let is_count = words.next().is_some_and(|n| n.parse::<u32>().is_ok())
            && matches!(words.next(), Some("subsection" | "subsections"))
            && words.next().is_none();
        if is_count {
            return head.trim_end();
        }
    }
    t
}

/// A trailing ` (#anchor)`, the form candidates with the same path are listed in.
fn split_anchor(s: &str) -> (&str, Option<&str>) {
    if let Some((head, a)) = s.strip_suffix(')').and_then(|t| t.rsplit_once("(#")) {
        if !a.is_empty() && !a.contains(char::is_whitespace) {
            return (head.trim_end(), Some(a));
        }
    }
    (s, None)
}

/// Whether query segments `q` (already normalized) match heading path `h`: the
/// last against the last, the others against ancestors in order.
fn path_matches(q: &[String], h: &[String], partial: bool) -> bool {
    let eq = |q: &str, h: &str| if partial { h.contains(q) } else { h == q };
    let (Some((ql, qrest)), Some((hl, hrest))) = (q.split_last(), h.split_last()) else {
        return false;
    };
    if !eq(ql, hl) {
        return false;
    }
    let mut ancestors = hrest.iter().rev();
    qrest.iter().rev().all(|qs| ancestors.any(|hs| eq(qs, hs)))
}

fn find_anchor(blocks: &[Block], anchor: &str) -> Option<usize> {
    blocks
        .iter()
        .position(|b| !b.anchor().is_empty() && b.anchor() == anchor)
        .or_else(|| {
            blocks
                .iter()
                .position(|b| !b.anchor().is_empty() && b.anchor().eq_ignore_ascii_case(anchor))
        })
}

fn fragment(url: &str) -> Option<String> {
    let (_, f) = url.split_once('#')?;
    let f = percent_decode(f);
    (!f.is_empty()).then_some(f)
}

/// The block a heading names: exact path match, then anchor, then a unique
/// partial match; among nested matches the outermost one wins.
fn select(page: &PageRef, blocks: &[Block], heading: &str) -> Result<Selection, ToolError> {
    let (heading, anchor) = split_anchor(heading.trim());
    if let Some(i) = anchor.and_then(|a| find_anchor(blocks, a)) {
        return Ok(Selection::Block(i));
    }
    let heading = strip_count(heading);
    let paths: Vec<Vec<String>> = blocks
        .iter()
        .map(|b| b.path().iter().map(|s| norm(s)).collect())
        .collect();
    // The whole query as one heading first (a heading may itself contain " > ").
    let whole = vec![norm(heading)];
    let split: Vec<String> = heading
        .split(['>', '›'])
        .map(norm)
        .filter(|s| !s.is_empty())
        .collect();
    let mut queries = vec![whole];
    if split.len() > 1 {
        queries.push(split);
    }
    let matching = |partial: bool| -> Vec<usize> {
        (0..blocks.len())
            .filter(|&i| !blocks[i].is_lead())
            .filter(|&i| queries.iter().any(|q| path_matches(q, &paths[i], partial)))
            .collect()
    };
    let exact = matching(false);
    if let Some(sel) = pick(blocks, &exact) {
        return Ok(sel);
    }
    if exact.is_empty() {
        if queries[0][0] == norm(&page.page.title) {
            return Ok(Selection::Page);
        }
        if let Some(i) = find_anchor(blocks, &queries[0][0]) {
            return Ok(Selection::Block(i));
        }
        let partial = matching(true);
        if let Some(sel) = pick(blocks, &partial) {
            return Ok(sel);
        }
        if !partial.is_empty() {
            return Err(ambiguous(page, blocks, heading, &partial));
        }
        return Err(unknown_heading(page, blocks, heading));
    }
    Err(ambiguous(page, blocks, heading, &exact))
}

/// The one match, or the outermost of matches nested in it; `None` when there
/// is none or they are apart.
fn pick(blocks: &[Block], matches: &[usize]) -> Option<Selection> {
    let &first = matches.first()?;
    let end = subtree_end(blocks, first);
    matches
        .iter()
        .all(|&i| i < end)
        .then_some(Selection::Block(first))
}

/// Candidate strings for `indices`, with ` (#anchor)` where paths repeat.
fn candidate_list(blocks: &[Block], indices: &[usize]) -> String {
    let shown: Vec<String> = indices.iter().map(|&i| blocks[i].display()).collect();
    let mut out: Vec<String> = Vec::new();
    for (k, &i) in indices.iter().enumerate().take(MAX_CANDIDATES) {
        let repeated = shown.iter().filter(|s| **s == shown[k]).count() > 1;
        if repeated && !blocks[i].anchor().is_empty() {
            out.push(format!("'{} (#{})'", shown[k], blocks[i].anchor()));
        } else {
            out.push(format!("'{}'", shown[k]));
        }
    }
    let mut s = out.join(", ");
    if indices.len() > MAX_CANDIDATES {
        s.push_str(&format!(" (+{} more)", indices.len() - MAX_CANDIDATES));
    }
    s
}

fn ambiguous(page: &PageRef, blocks: &[Block], heading: &str, matches: &[usize]) -> ToolError {
    ToolError::invalid(format!(
        "heading '{heading}' matches {} sections of {}; pass one of: {}",
        matches.len(),
        page.page.url,
        candidate_list(blocks, matches)
    ))
}

fn unknown_heading(page: &PageRef, blocks: &[Block], heading: &str) -> ToolError {
    let words: Vec<String> = norm(heading)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_string)
        .collect();
    let mut candidates: Vec<(usize, usize)> = (0..blocks.len())
        .filter(|&i| !blocks[i].is_lead())
        .map(|i| {
            let name = norm(blocks[i].name());
            (
                words.iter().filter(|w| name.contains(w.as_str())).count(),
                i,
            )
        })
        .collect();
    if candidates.is_empty() {
        return ToolError::invalid(format!(
            "no heading '{heading}' on {}: the page has no sections below its title; \
             call read_section without a heading to read it",
            page.page.url
        ));
    }
    // Best word overlap first, page order among equals.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let indices: Vec<usize> = candidates.iter().map(|&(_, i)| i).collect();
    ToolError::invalid(format!(
        "no heading '{heading}' on {}; headings there include: {}",
        page.page.url,
        candidate_list(blocks, &indices)
    ))
}

/// Path words that say nothing about which page is meant.
const STOP_TOKENS: [&str; 7] = ["docs", "doc", "en", "www", "html", "md", "index"];

fn url_tokens(key: &str) -> Vec<String> {
    key.split_once('/')
        .map_or("", |(_, p)| p)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && !STOP_TOKENS.contains(t))
        .map(str::to_lowercase)
        .collect()
}

fn unknown_url(lib: &Library, url: &str) -> ToolError {
    let key = canonical_page_key(url);
    let host = key.split('/').next().unwrap_or("");
    let tokens = url_tokens(&key);
    let last = tokens.last();
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    for source in &lib.sources {
        for page in &source.pages {
            let k = canonical_page_key(&page.url);
            let ptoks = url_tokens(&k);
            let shared = tokens.iter().filter(|t| ptoks.contains(t)).count();
            if shared == 0 {
                continue;
            }
            let same_last = usize::from(last.is_some() && last == ptoks.last());
            let same_host = usize::from(k.split('/').next() == Some(host));
            let lcp = k
                .chars()
                .zip(key.chars())
                .take_while(|(a, b)| a == b)
                .count();
            scored.push((
                3 * shared + 5 * same_last + same_host,
                lcp,
                page.url.as_str(),
            ));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
    let mut msg = format!(
        "unknown URL '{url}': no loaded page has it. read_section reads pages that search_docs \
         returns; call search_docs first and pass a passage's url exactly"
    );
    if !scored.is_empty() {
        let near: Vec<&str> = scored
            .iter()
            .take(MAX_URL_SUGGESTIONS)
            .map(|s| s.2)
            .collect();
        msg.push_str(&format!(". Closest known pages: {}", near.join(", ")));
    }
    ToolError::invalid(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Page;
    use crate::search::LoadedSource;

    fn sec(url: &str, path: &[&str], level: u8, anchor: &str, text: &str, part: u32) -> Section {
        Section {
            url: url.into(),
            anchor: anchor.into(),
            heading_path: path.iter().map(|s| s.to_string()).collect(),
            level,
            text: text.into(),
            ordinal: 0,
            part,
        }
    }

    const URL: &str = "https://docs.example.com/en/hooks";

    fn lib() -> Library {
        let page = Page {
            url: URL.into(),
            title: "Hooks".into(),
            description: "Hook events.".into(),
            markdown: String::new(),
            sha256: String::new(),
            path: "en/hooks".into(),
            etag: None,
            last_modified: None,
        };
        let flat = Page {
            url: "https://docs.example.com/en/flat".into(),
            title: "Flat".into(),
            description: String::new(),
            markdown: String::new(),
            sha256: String::new(),
            path: "en/flat".into(),
            etag: None,
            last_modified: None,
        };
        let t = ["Hooks"];
        let mut sections = vec![
            sec(URL, &t, 1, "", "Hooks run commands.", 0),
            sec(
                URL,
                &["Hooks", "Events"],
                2,
                "events",
                "## Events\n\nAll events.",
                0,
            ),
            sec(
                URL,
                &["Hooks", "Events", "PreToolUse"],
                3,
                "pretooluse",
                "### PreToolUse\n\nBefore a tool.",
                0,
            ),
            sec(
                URL,
                &["Hooks", "Events", "PreToolUse", "Input"],
                4,
                "input",
                "#### Input\n\nPre input.",
                0,
            ),
            sec(
                URL,
                &["Hooks", "Events", "PostToolUse"],
                3,
                "posttooluse",
                "### PostToolUse\n\nAfter a tool.",
                0,
            ),
            sec(
                URL,
                &["Hooks", "Events", "PostToolUse", "Input"],
                4,
                "input-1",
                "#### Input\n\nPost input.",
                0,
            ),
            sec(URL, &["Hooks", "Long"], 2, "long", "## Long\n\npart one", 1),
            sec(URL, &["Hooks", "Long"], 2, "long", "## Long\n\npart two", 2),
            sec(
                URL,
                &["Hooks", "Example"],
                2,
                "example",
                "## Example\n\nfirst",
                0,
            ),
            sec(
                URL,
                &["Hooks", "Example"],
                2,
                "example-1",
                "## Example\n\nsecond",
                0,
            ),
        ];
        sections.push(sec(&flat.url, &["Flat"], 1, "", "Just text.", 0));
        crate::search::test_library(vec![page, flat], sections)
    }

    fn args(url: &str, heading: Option<&str>) -> ReadSectionArgs {
        ReadSectionArgs {
            url: url.into(),
            heading: heading.map(str::to_string),
            offset: 0,
            outline_depth: 2,
        }
    }

    #[test]
    fn outline_lists_roots_with_counts() {
        let r = read_section(&lib(), &args(URL, None)).unwrap();
        assert_eq!(
            r.outline,
            [
                "## Events (4 subsections)",
                "## Long",
                "## Example",
                "## Example"
            ]
        );
        assert_eq!((r.heading, r.text.as_str(), r.total_chars), (None, "", 0));
        let mut a = args(URL, None);
        a.outline_depth = 3;
        let r = read_section(&lib(), &a).unwrap();
        assert_eq!(
            r.outline[..3],
            [
                "## Events (4 subsections)",
                "  ### PreToolUse (1 subsection)",
                "  ### PostToolUse (1 subsection)"
            ]
        );
    }

    #[test]
    fn headings_match_exactly_then_partially() {
        let l = lib();
        let r = read_section(&l, &args(URL, Some("### pretooluse"))).unwrap();
        assert_eq!(r.heading.as_deref(), Some("Events > PreToolUse"));
        assert_eq!(
            r.text,
            "### PreToolUse\n\nBefore a tool.\n\n#### Input\n\nPre input."
        );
        let r = read_section(&l, &args(URL, Some("## Events (4 subsections)"))).unwrap();
        assert_eq!(r.heading.as_deref(), Some("Events"));
        let r = read_section(&l, &args(URL, Some("posttool"))).unwrap();
        assert_eq!(r.heading.as_deref(), Some("Events > PostToolUse"));
        let r = read_section(&l, &args(URL, Some("PostToolUse > Input"))).unwrap();
        assert_eq!(r.text, "#### Input\n\nPost input.");
        // "tool" is in both PreToolUse and PostToolUse: ambiguous.
        let e = read_section(&l, &args(URL, Some("tooluse"))).unwrap_err();
        assert!(
            e.to_string()
                .contains("'Events > PreToolUse', 'Events > PostToolUse'"),
            "{e}"
        );
        let e = read_section(&l, &args(URL, Some("Input"))).unwrap_err();
        assert!(
            e.to_string().contains("'Events > PreToolUse > Input'"),
            "{e}"
        );
        let e = read_section(&l, &args(URL, Some("Example"))).unwrap_err();
        assert!(e.to_string().contains("'Example (#example-1)'"), "{e}");
        let r = read_section(&l, &args(URL, Some("Example (#example-1)"))).unwrap();
        assert_eq!(r.text, "## Example\n\nsecond");
        let e = read_section(&l, &args(URL, Some("Nope events"))).unwrap_err();
        assert!(e.to_string().starts_with("no heading 'Nope events'"), "{e}");
        assert!(e.to_string().contains("'Events'"), "{e}");
    }

    #[test]
    fn parts_join_and_title_reads_the_page() {
        let l = lib();
        let r = read_section(&l, &args(URL, Some("long"))).unwrap();
        assert_eq!(r.text, "## Long\n\npart one\n\npart two");
        let r = read_section(&l, &args(URL, Some("Hooks"))).unwrap();
        assert!(r.text.starts_with("Hooks run commands.\n\n## Events"));
        assert!(r.text.ends_with("second"));
    }

    #[test]
    fn fragment_selects_a_section_and_flat_pages_return_text() {
        let l = lib();
        let r = read_section(&l, &args(&format!("{URL}#posttooluse"), None)).unwrap();
        assert_eq!(r.heading.as_deref(), Some("Events > PostToolUse"));
        assert!(r.text.starts_with("### PostToolUse"));
        assert_eq!(r.outline.len(), 4, "no heading asked: the outline too");
        assert_eq!(r.url, URL);
        let r = read_section(&l, &args(&format!("{URL}#nothing"), None)).unwrap();
        assert_eq!(r.outline.len(), 4);
        let r = read_section(&l, &args("https://docs.example.com/en/flat.md", None)).unwrap();
        assert_eq!((r.outline.len(), r.text.as_str()), (0, "Just text."));
    }

    #[test]
    fn unknown_url_suggests_search_and_neighbours() {
        let e =
            read_section(&lib(), &args("https://old.example.com/docs/hooks", None)).unwrap_err();
        assert!(e.to_string().contains("search_docs"), "{e}");
        assert!(
            e.to_string()
                .contains("Closest known pages: https://docs.example.com/en/hooks"),
            "{e}"
        );
    }

    #[test]
    fn paging_counts_chars_and_prefers_line_breaks() {
        // 3-byte chars, a line break 100 chars before the limit.
        let line = "é".repeat(7_899);
        let text = format!("{line}\n{}", "ü".repeat(9_000));
        let p = text_page(&text, 0).unwrap();
        assert_eq!(p.text.chars().count(), 7_900);
        assert!(p.text.ends_with('\n'));
        assert_eq!(p.next_offset, Some(7_900));
        assert_eq!(p.total_chars, 16_900);
        let p = text_page(&text, 7_900).unwrap();
        assert_eq!(
            p.text.chars().count(),
            PAGE_CHARS,
            "no break: hard cut at the limit"
        );
        assert_eq!(p.next_offset, Some(15_900));
        let p = text_page(&text, 15_900).unwrap();
        assert_eq!((p.text.chars().count(), p.next_offset), (1_000, None));
        assert_eq!(text_page(&text, 16_900).unwrap().text, "");
        assert!(text_page(&text, 16_901)
            .unwrap_err()
            .to_string()
            .contains("past the end"));
        assert_eq!(text_page("", 0).unwrap().total_chars, 0);
        // A break too far back is not used.
        let far = format!("a\n{}", "b".repeat(9_000));
        assert_eq!(text_page(&far, 0).unwrap().text.chars().count(), PAGE_CHARS);
    }

    #[test]
    fn outline_caps_lines() {
        let url = "https://docs.example.com/en/many";
        let mut sections = vec![];
        for i in 0..45 {
            let h = format!("S{i}");
            sections.push(sec(url, &["Many", &h], 2, &h, &format!("## {h}"), 0));
        }
        let page = Page {
            url: url.into(),
            title: "Many".into(),
            description: String::new(),
            markdown: String::new(),
            sha256: String::new(),
            path: String::new(),
            etag: None,
            last_modified: None,
        };
        let mut l = lib();
        let m = l.sources[0].manifest.clone();
        l.sources.push(LoadedSource::new(m, vec![page], sections));
        let r = read_section(&l, &args(url, None)).unwrap();
        assert_eq!(r.outline.len(), OUTLINE_LINES + 1);
        assert_eq!(r.outline[OUTLINE_LINES], "+5 more sections");
    }
}
