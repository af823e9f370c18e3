//! Stage 3: cut a normalized page into sections, one per heading, so a search
//! hit can point at `url#anchor` on the live site instead of at a whole page.
//!
//! Section reads the headings normalize found ([`Normalized::headings`]), it
//! does not parse the Markdown for them again. Anchors must be the ids the
//! live HTML carries. HTML adapters hand those ids over with each heading;
//! for pages read from a Markdown alternate
//! the id is recomputed with the slug algorithm of the site's generator
//! ([`SlugStyle`], chosen per source in sources.yaml).

use crate::markdown::{FenceLine, FenceTracker, SlugStyle, Slugger};
use crate::model::{HeadingAnchor, Normalized, Section};

/// Cut a page into sections by ATX heading.
///
/// The lead text before the first heading becomes a level-1 section without
/// anchor; each heading starts a section that runs to the next heading of any
/// level. Sections longer than `max_chars` (0 = no limit) are cut into parts
/// at paragraph boundaries, never inside a code fence.
pub fn split(
    page_url: &str,
    title: &str,
    n: &Normalized,
    slug: SlugStyle,
    max_chars: usize,
) -> Vec<Section> {
    let url = page_url.split('#').next().unwrap_or(page_url).to_string();
    let lines: Vec<&str> = n.markdown.lines().collect();
    let headings = &n.headings;
    let mut slugger = Slugger::new(slug);
    let mut out: Vec<Section> = Vec::new();
    let mut ordinal: u32 = 0;

    let mut emit =
        |out: &mut Vec<Section>, anchor: &str, path: &[String], level: u8, text: String| {
            for (part_no, part) in bounded_parts(&text, max_chars) {
                out.push(Section {
                    url: url.clone(),
                    anchor: anchor.to_string(),
                    heading_path: path.to_vec(),
                    level,
                    text: part,
                    ordinal,
                    part: part_no,
                });
                ordinal += 1;
            }
        };

    let first_line = headings.first().map(|h| h.line).unwrap_or(lines.len());
    let lead = lines[..first_line].join("\n");
    let lead = lead.trim();
    if !lead.is_empty() {
        emit(&mut out, "", &[title.to_string()], 1, lead.to_string());
    }

    // (level, text, anchor) of the headings enclosing the current one.
    let mut stack: Vec<(u8, String, String)> = Vec::new();
    for (idx, h) in headings.iter().enumerate() {
        let text = h.text.clone();
        while stack.last().is_some_and(|(l, _, _)| *l >= h.level) {
            stack.pop();
        }
        let anchor = match &h.anchor {
            HeadingAnchor::Slug => slugger.slug(&text),
            // No id on the live page: link to the enclosing section instead.
            HeadingAnchor::Unanchored => {
                stack.last().map(|(_, _, a)| a.clone()).unwrap_or_default()
            }
            HeadingAnchor::Id(id) => id.clone(),
        };
        stack.push((h.level, text, anchor.clone()));
        let mut path = vec![title.to_string()];
        path.extend(stack.iter().map(|(_, t, _)| t.clone()));

        let end = headings.get(idx + 1).map(|x| x.line).unwrap_or(lines.len());
        let body = lines[h.line..end].join("\n");
        let body = body.trim_end();
        let body = if body.trim().is_empty() {
            lines[h.line].trim()
        } else {
            body
        };
        if body.is_empty() {
            continue;
        }
        emit(&mut out, &anchor, &path, h.level, body.to_string());
    }
    out
}

/// For each section, the first section of its unit: the parts an overlong
/// section was split into (consecutive, same page and anchor, part numbers
/// in sequence) form one unit, one answer; any other section is its own.
pub fn unit_starts(sections: &[Section]) -> Vec<u32> {
    let mut unit_start: Vec<u32> = Vec::with_capacity(sections.len());
    for (i, s) in sections.iter().enumerate() {
        let joins = i > 0 && {
            let prev = &sections[i - 1];
            s.part > 1 && prev.part + 1 == s.part && prev.url == s.url && prev.anchor == s.anchor
        };
        unit_start.push(if joins { unit_start[i - 1] } else { i as u32 });
    }
    unit_start
}

/// The sections of the unit that starts at section `start`, given
/// [`unit_starts`]' result.
pub fn unit_range(unit_start: &[u32], start: usize) -> std::ops::Range<usize> {
    let mut end = start + 1;
    while end < unit_start.len() && unit_start[end] as usize == start {
        end += 1;
    }
    start..end
}

/// `(part number, text)` pieces of a section: `[(0, text)]` when it fits.
fn bounded_parts(text: &str, max_chars: usize) -> Vec<(u32, String)> {
    if max_chars == 0 || text.chars().count() <= max_chars {
        return vec![(0, text.to_string())];
    }
    // Blocks: runs of lines separated by blank lines outside fences; a fence and
    // everything until its close belong to one block.
    let mut blocks: Vec<String> = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut fences = FenceTracker::default();
    for line in text.lines() {
        let kind = fences.line(line);
        if kind == FenceLine::Outside && line.trim().is_empty() {
            if !cur.is_empty() {
                blocks.push(cur.join("\n"));
                cur.clear();
            }
            continue;
        }
        cur.push(line);
    }
    if !cur.is_empty() {
        blocks.push(cur.join("\n"));
    }

    // A paragraph (not a fence) longer than the limit is cut at line ends, and a
    // single overlong line at whitespace, so every part stays bounded.
    let mut pieces: Vec<String> = Vec::new();
    for b in blocks {
        if b.chars().count() <= max_chars {
            pieces.push(b);
        } else {
            pieces.extend(cut_paragraph(&b, max_chars));
        }
    }

    let mut parts: Vec<String> = Vec::new();
    let mut acc = String::new();
    let mut acc_len = 0;
    for p in pieces {
        let p_len = p.chars().count();
        if !acc.is_empty() && acc_len + p_len + 2 > max_chars {
            parts.push(std::mem::take(&mut acc));
            acc_len = 0;
        }
        if !acc.is_empty() {
            acc.push_str("\n\n");
            acc_len += 2;
        }
        acc.push_str(&p);
        acc_len += p_len;
    }
    if !acc.trim().is_empty() {
        parts.push(acc);
    }
    if parts.len() <= 1 {
        // One part: the section is whole, its blank-line runs collapsed the
        // way the parts are joined (the original could still be over the
        // limit by those extra blank lines).
        return vec![(0, parts.pop().unwrap_or_else(|| text.to_string()))];
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (i as u32 + 1, p))
        .collect()
}

/// A Markdown table line (`| a | b |`), not inside a quote or list.
fn is_table_row(line: &str) -> bool {
    line.trim_start_matches(' ').starts_with('|')
}

/// The `| --- | :-: |` line under a table's header row.
fn is_table_delimiter(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|')
        && t.contains('-')
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// Cut an overlong block at line ends (and an overlong line at spaces), but
/// never inside a fenced block, so every piece is bounded unless one fence
/// alone is longer than the limit. A table cut across pieces repeats its
/// header row in each piece, so every piece is still a table.
fn cut_paragraph(block: &str, max_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut acc = String::new();
    let mut acc_len = 0;
    let mut fences = FenceTracker::default();
    // Header and delimiter rows of the table being read, and the line before.
    let mut table_head: Option<String> = None;
    let mut prev: Option<&str> = None;
    for line in block.lines() {
        let kind = fences.line(line);
        if kind == FenceLine::Outside {
            if is_table_delimiter(line) && prev.is_some_and(is_table_row) {
                table_head = prev.map(|p| format!("{p}\n{line}"));
            } else if !is_table_row(line) {
                table_head = None;
            }
        } else {
            table_head = None;
        }
        prev = Some(line);
        let mut line: &str = line;
        if kind == FenceLine::Outside {
            // Cut with a cursor over the line: each step reads at most one
            // window, so an overlong line costs time linear in its length
            // (re-counting and copying the rest at every cut was quadratic:
            // 13 s for one 900 KB line).
            while let Some((byte_limit, _)) = line.char_indices().nth(max_chars) {
                let cut = line[..byte_limit]
                    .rfind(' ')
                    .filter(|&i| i > 0)
                    .unwrap_or(byte_limit);
                if !acc.is_empty() {
                    out.push(std::mem::take(&mut acc));
                    acc_len = 0;
                }
                out.push(line[..cut].trim_end().to_string());
                line = line[cut..].trim_start();
            }
        }
        let line_len = line.chars().count();
        let may_cut = matches!(kind, FenceLine::Outside | FenceLine::Open);
        if may_cut && !acc.is_empty() && acc_len + line_len + 1 > max_chars {
            out.push(std::mem::take(&mut acc));
            acc_len = 0;
            if let Some(head) = &table_head {
                let head_len = head.chars().count();
                if head_len + line_len < max_chars && !is_table_delimiter(line) {
                    acc.push_str(head);
                    acc_len = head_len;
                }
            }
        }
        if !acc.is_empty() {
            acc.push('\n');
            acc_len += 1;
        }
        acc.push_str(line);
        acc_len += line_len;
    }
    if !acc.is_empty() {
        out.push(acc);
    }
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::markdown::heading_text;

    fn n(md: &str) -> Normalized {
        Normalized::new(String::new(), String::new(), md.to_string(), Vec::new())
    }

    #[test]
    fn github_slugs() {
        let mut s = Slugger::new(SlugStyle::Github);
        assert_eq!(s.slug("Getting started"), "getting-started");
        assert_eq!(s.slug("Getting started"), "getting-started-1");
        assert_eq!(s.slug("Getting started"), "getting-started-2");
        assert_eq!(s.slug("AGENTS.md"), "agentsmd");
        assert_eq!(s.slug("What’s new?"), "whats-new");
        assert_eq!(s.slug("A & B"), "a--b");
        assert_eq!(s.slug("gpt-5.5"), "gpt-55");
        assert_eq!(s.slug("snake_case name"), "snake_case-name");
        assert_eq!(s.slug("Über café"), "über-café");
    }

    #[test]
    fn mintlify_runs_slugs() {
        let mut s = Slugger::new(SlugStyle::MintlifyRuns);
        assert_eq!(s.slug("Set up manually"), "set-up-manually");
        assert_eq!(s.slug("Set up manually"), "set-up-manually-2");
        assert_eq!(s.slug("Set up manually"), "set-up-manually-3");
        assert_eq!(s.slug("It's a conversation"), "its-a-conversation");
        assert_eq!(
            s.slug("Use the /advisor command"),
            "use-the-/advisor-command"
        );
        assert_eq!(
            s.slug(".claude/worktrees/ is filling up"),
            "claude/worktrees/-is-filling-up"
        );
        assert_eq!(s.slug("Claude’s memory (beta)"), "claude’s-memory-beta");
        assert_eq!(s.slug("2.1.240"), "2-1-240");
        assert_eq!(
            s.slug("CLAUDE_CODE_SHELL_PREFIX"),
            "claude_code_shell_prefix"
        );
    }

    #[test]
    fn mintlify_words_slugs() {
        let mut s = Slugger::new(SlugStyle::MintlifyWords);
        assert_eq!(s.slug("Request"), "request");
        assert_eq!(s.slug("Request"), "request-1");
        assert_eq!(s.slug("Request"), "request-2");
        assert_eq!(s.slug("Tools & Resources"), "tools--resources");
        assert_eq!(
            s.slug("What’s new in 2025-11-25?"),
            "whats-new-in-2025-11-25"
        );
        assert_eq!(s.slug("tools/list"), "toolslist");
    }

    #[test]
    fn heading_text_renders_inline_markdown() {
        assert_eq!(
            heading_text("The `codex exec` command"),
            "The codex exec command"
        );
        assert_eq!(
            heading_text("See [the guide](/docs/x) **now**"),
            "See the guide now"
        );
        assert_eq!(
            heading_text(r"user\_config and _emphasis_"),
            "user_config and emphasis"
        );
        assert_eq!(
            heading_text("Network access <ElevatedRiskBadge />"),
            "Network access"
        );
        assert_eq!(heading_text("snake_case_name"), "snake_case_name");
        // Block syntax at the start stays text; entities and images resolve.
        assert_eq!(heading_text("1. Install"), "1. Install");
        assert_eq!(heading_text("- a &amp; b ![logo](x.png)"), "- a & b logo");
        // Hostile nesting: thousands of nested links and backtick runs come
        // back (no stack overflow, no quadratic blow-up).
        let deep = format!("{}x{}", "[".repeat(20_000), "](u)".repeat(20_000));
        assert!(heading_text(&deep).contains('x'));
        let ticks = "`a``b```c".repeat(5_000);
        assert!(!heading_text(&ticks).is_empty());
        let mut s = Slugger::new(SlugStyle::Github);
        assert_eq!(s.slug(&heading_text("`AGENTS.md` files")), "agentsmd-files");
    }

    #[test]
    fn split_lead_and_headings() {
        let md = "Intro text.\n\n## First\n\nBody one.\n\n### Sub `x`\n\nBody two.\n\n## Empty\n## Last\n\n```bash\n# not a heading\n```\n";
        let s = split("https://e.x/p#frag", "Title", &n(md), SlugStyle::Github, 0);
        let anchors: Vec<&str> = s.iter().map(|x| x.anchor.as_str()).collect();
        assert_eq!(anchors, ["", "first", "sub-x", "empty", "last"]);
        assert_eq!(s[0].level, 1);
        assert_eq!(s[0].heading_path, ["Title"]);
        assert_eq!(s[2].heading_path, ["Title", "First", "Sub x"]);
        assert_eq!(s[3].text, "## Empty");
        assert!(s[4].text.contains("# not a heading"));
        assert_eq!(s[4].url, "https://e.x/p");
        assert!(s
            .iter()
            .enumerate()
            .all(|(i, x)| x.ordinal == i as u32 && x.part == 0));
    }

    #[test]
    fn split_uses_given_ids_and_skips_empty_lead() {
        let mut doc = n("## A\n\ntext\n\n## B\n\nmore\n\n##### Deep\n\nx\n\n## B");
        let given = [
            HeadingAnchor::Id("id-a".into()),
            HeadingAnchor::Slug,
            HeadingAnchor::Unanchored,
            HeadingAnchor::Slug,
        ];
        for (h, a) in doc.headings.iter_mut().zip(given) {
            h.anchor = a;
        }
        let s = split("u", "T", &doc, SlugStyle::Github, 0);
        let anchors: Vec<&str> = s.iter().map(|x| x.anchor.as_str()).collect();
        // No lead; a heading without id takes its parent's anchor; the slugger
        // only counts the headings it slugs.
        assert_eq!(anchors, ["id-a", "b", "b", "b-1"]);
        assert_eq!(s[2].heading_path, ["T", "B", "Deep"]);
    }

    #[test]
    fn split_overlong_sections_into_bounded_parts() {
        let mut md = String::from("## Big\n\n");
        for i in 0..30 {
            md.push_str(&format!(
                "Paragraph {i} with some words in it to take room.\n\n"
            ));
        }
        md.push_str("```text\n");
        for i in 0..40 {
            md.push_str(&format!("code line {i}\n\n"));
        }
        md.push_str("```\n\nTail.\n");
        let s = split("u", "T", &n(&md), SlugStyle::Github, 400);
        assert!(s.len() > 3);
        for (i, x) in s.iter().enumerate() {
            assert_eq!(x.part, i as u32 + 1);
            assert_eq!(x.anchor, "big");
            assert!(!x.text.trim().is_empty());
            let fences = x.text.lines().filter(|l| l.starts_with("```")).count();
            assert_eq!(fences % 2, 0, "fence split across parts: {}", x.text);
            if fences == 0 {
                assert!(x.text.chars().count() <= 400);
            }
        }
        assert!(s[0].text.starts_with("## Big"));
    }

    #[test]
    fn long_tables_repeat_their_header_in_every_part() {
        let mut md = String::from("## T\n\n| Key | Meaning |\n| --- | --- |\n");
        for i in 0..60 {
            md.push_str(&format!("| `key_{i}` | what key number {i} does |\n"));
        }
        md.push_str("\nAfter.\n");
        let s = split("u", "T", &n(&md), SlugStyle::Github, 400);
        assert!(s.len() > 3);
        let rows: usize = s
            .iter()
            .map(|x| x.text.lines().filter(|l| l.starts_with("| `key_")).count())
            .sum();
        assert_eq!(rows, 60, "every row kept exactly once");
        for x in &s {
            assert!(x.text.chars().count() <= 400);
            if x.text.contains("| `key_") {
                let start = if x.part == 1 { 2 } else { 0 };
                let lines: Vec<&str> = x.text.lines().skip(start).collect();
                assert_eq!(lines[0], "| Key | Meaning |", "part {}: {}", x.part, x.text);
                assert_eq!(lines[1], "| --- | --- |");
            }
        }
    }

    #[test]
    fn long_blockquotes_are_cut_outside_their_fences() {
        let mut md = String::from("## Q\n\n> **Note:** start\n");
        for i in 0..40 {
            md.push_str(&format!("> line {i} of quoted prose that goes on\n"));
        }
        md.push_str("> ```bash\n");
        for i in 0..40 {
            md.push_str(&format!("> echo {i} inside the quoted fence\n"));
        }
        md.push_str("> ```\n> tail\n");
        let s = split("u", "T", &n(&md), SlugStyle::Github, 500);
        assert!(s.len() > 2);
        for x in &s {
            let opens = x.text.lines().filter(|l| l.starts_with("> ```")).count();
            assert_eq!(opens % 2, 0, "fence cut: {}", x.text);
        }
    }
}
