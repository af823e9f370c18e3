//! Names the docs themselves map: an API's old name beside its current one.
//!
//! Users ask with the names they learned ("Spatial", "VisualServer godot
//! 4"); the docs of a later version use the new ones, and say so in a few
//! places only: "In Godot 3 and older, **Node3D** was named *Spatial*", a
//! rename table in an upgrade guide, "**Deprecated:** Use the Parallax2D node
//! instead". The build reads those declarations into `aliases.json`
//! ([`ALIASES_FILE`]); at query time (`search::aliases`) a word that is an
//! old name also matches its new name, so every page about `Node3D`
//! answers a question about `Spatial`, not only the one sentence that
//! declares the rename.
//!
//! Only what the docs declare is used — there is no list of renames in this
//! code — and only names: both sides must read as one identifier
//! ([`name_like`]), so prose ("the value was called twice") never maps.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::markdown::heading_text;
use crate::model::Section;

/// The artifact file holding a source's aliases ([`AliasFile`]).
pub const ALIASES_FILE: &str = "aliases.json";

/// One declared rename: `old` is what the API was called, `new` what the
/// docs call it now, `from` the section (URL with anchor) that says so.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Alias {
    pub old: String,
    pub new: String,
    pub from: String,
}

/// What [`ALIASES_FILE`] holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasFile {
    pub aliases: Vec<Alias>,
}

/// A single identifier: letters, digits and underscores, at most one dot
/// (`Class.member`), starting with a letter or underscore.
const NAME: &str = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?";

/// A cell that is one name and nothing else.
static ONE_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{NAME}$")).expect("valid"));

/// Sentence forms that declare a rename, each with `old` and `new` groups.
/// `new` may also be `this` / `the` + a noun: the section's own subject,
/// named by its heading ("this channel was named Diffuse" under "Albedo").
/// `before` and `after` catch a name that is one word of several ("Agent
/// Platform, formerly Vertex AI") or of a compound ("previously MCP-only"):
/// such a declaration is not of one name and is skipped.
static DECLARATIONS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let before = r"(?:(?P<before>[A-Z][A-Za-z0-9]*) )?";
    let subject = format!(r"(?:{before}(?P<new>{NAME})|(?P<this>[Tt]his|[Tt]he) [a-z]+)");
    let noun = r"(?: (?:class|node|singleton|method|property|function|type|resource|signal|setting|option))?";
    let after = r"(?P<after>-[A-Za-z]| [A-Z])?";
    [
        format!(r"{subject}{noun} (?:was|used to be|were) (?:named|called) (?P<old>{NAME}){after}"),
        format!(r"{subject}{noun} (?:was|has been) renamed from (?P<old>{NAME}){after}"),
        format!(
            r"{before}(?P<old>{NAME}){noun} (?:was|has been|is now|got) renamed (?:to|into|as) (?P<new>{NAME}){after}"
        ),
        format!(
            r"{subject},? \(?(?:formerly|previously) (?:named |called |known as )?(?P<old>{NAME}){after}"
        ),
    ]
    .iter()
    .map(|p| Regex::new(p).expect("alias patterns are valid"))
    .collect()
});

/// Capitalized words that open a sentence rather than name anything.
const FURNITURE: &[&str] = &[
    "It", "This", "That", "The", "These", "Those", "There", "Which", "In", "Note", "Since", "Now",
];

/// Whether `word` reads as an identifier rather than an everyday word: an
/// upper-case letter after the first (`VisualServer`, `Node3D`), a digit,
/// an underscore or a dot. A plain capitalized word (`Spatial`) is a name
/// only where the question writes it so (`search::aliases`).
pub fn name_like(word: &str) -> bool {
    let first_ok = word
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && word
            .chars()
            .skip(1)
            .any(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '.')
}

/// A word that can be one side of a rename: an identifier, or a capitalized
/// word that is not sentence furniture.
pub fn plausible_name(word: &str) -> bool {
    name_like(word)
        || (word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && word.len() >= 3
            && !FURNITURE.contains(&word))
}

/// The names a deprecation note points to ("Use the Parallax2D node
/// instead", "Consider using `Color.from_rgba8()` or `get_color()`
/// instead"): each name between "use" and "instead" (a `Class.member` as
/// its member), everyday words left out. Empty when the note names no
/// successor.
pub fn successors(note: &str) -> Vec<String> {
    static USE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:Use|use|using) (?:the )?(?P<names>.{1,200}?) instead\b").expect("valid")
    });
    static NAME_ONLY: LazyLock<Regex> = LazyLock::new(|| Regex::new(NAME).expect("valid"));
    let text = heading_text(note);
    let Some(c) = USE.captures(&text) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for m in NAME_ONLY.find_iter(&c["names"]) {
        let n = m.as_str();
        // An everyday word ("changed") is no name to search for, even
        // when it is one.
        if !plausible_name(n) {
            continue;
        }
        let member = n.rsplit('.').next().unwrap_or(n).to_string();
        if !out.contains(&member) {
            out.push(member);
        }
    }
    out
}

/// The renames a section declares in its sentences or in a rename table.
pub fn from_section(section: &Section) -> Vec<Alias> {
    let mut pairs = Vec::new();
    // The declarations' verbs, as the patterns spell them (lower case): most
    // sections hold none and are not read further.
    if ["named", "called", "renamed", "formerly", "previously"]
        .iter()
        .any(|k| section.text.contains(k))
    {
        // Inline Markdown (emphasis, code spans, links) read as the text it
        // renders to, one line: the declarations as plain sentences.
        let text = heading_text(&section.text);
        for re in DECLARATIONS.iter() {
            for c in re.captures_iter(&text) {
                let new = match (c.name("new"), c.name("this")) {
                    (Some(n), _) => n.as_str().to_string(),
                    // "this channel": the section's subject, when its heading
                    // is one name.
                    (None, Some(_)) => match section.heading_path.last() {
                        Some(h) if !h.contains(' ') => h.clone(),
                        _ => continue,
                    },
                    (None, None) => continue,
                };
                let part_of_more = c
                    .name("before")
                    .is_some_and(|b| !FURNITURE.contains(&b.as_str()))
                    || c.name("after").is_some();
                let old = c["old"].to_string();
                if !part_of_more && plausible_name(&old) && plausible_name(&new) && old != new {
                    pairs.push((old, new));
                }
            }
        }
    }
    pairs.extend(from_tables(&section.text));
    if pairs.is_empty() {
        return Vec::new();
    }
    let from = section.url_with_anchor();
    pairs
        .into_iter()
        .map(|(old, new)| Alias {
            old,
            new,
            from: from.clone(),
        })
        .collect()
}

/// Rows of a Markdown table whose header marks one column as the old names
/// and another as the new ones ("Old name" / "New name", "Before" /
/// "After", "Godot 3.x" / "Godot 4.x": a lower version left of a higher).
fn from_tables(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = markdown.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(header) = cells(line) else { continue };
        if !lines.peek().is_some_and(|l| is_rule(l)) {
            continue;
        }
        lines.next();
        let Some((o, n)) = rename_columns(&header) else {
            continue;
        };
        while let Some(row) = lines.peek().and_then(|l| cells(l)) {
            lines.next();
            let (Some(old), Some(new)) = (row.get(o), row.get(n)) else {
                continue;
            };
            let (old, new) = (heading_text(old), heading_text(new));
            if ONE_NAME.is_match(&old) && ONE_NAME.is_match(&new) && old != new {
                out.push((old, new));
            }
        }
    }
    out
}

/// The cells of a pipe-table row, or `None` for any other line.
fn cells(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    let inner = t.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

fn is_rule(line: &str) -> bool {
    cells(line).is_some_and(|c| {
        c.iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
    })
}

/// Which header columns hold the old and the new names.
fn rename_columns(header: &[String]) -> Option<(usize, usize)> {
    static VERSION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(\d+)(?:\.(\d+|x))?\b").expect("valid"));
    let has = |h: &str, words: &[&str]| {
        let h = h.to_ascii_lowercase();
        h.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| words.contains(&w))
    };
    let old = header
        .iter()
        .position(|h| has(h, &["old", "former", "previous", "before"]));
    let new = header
        .iter()
        .position(|h| has(h, &["new", "current", "after"]));
    if let (Some(o), Some(n)) = (old, new) {
        return (o != n).then_some((o, n));
    }
    // Two version columns: the lower is the old name.
    let versions: Vec<(usize, u64)> = header
        .iter()
        .enumerate()
        .filter_map(|(i, h)| Some((i, VERSION.captures(h)?[1].parse().ok()?)))
        .collect();
    match versions.as_slice() {
        [(a, va), (b, vb)] if va < vb => Some((*a, *b)),
        [(a, va), (b, vb)] if vb < va => Some((*b, *a)),
        _ => None,
    }
}

/// Sorted and deduplicated aliases of every section, with `more` (renames
/// a site adapter read from structured records, e.g. deprecation notes).
pub fn collect(sections: &[Section], more: Vec<Alias>) -> AliasFile {
    let mut aliases: Vec<Alias> = sections.iter().flat_map(from_section).collect();
    aliases.extend(more);
    aliases.sort();
    aliases.dedup_by(|a, b| a.old == b.old && a.new == b.new);
    AliasFile { aliases }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(heading: &[&str], text: &str) -> Section {
        Section {
            url: "https://docs.example/page.html".into(),
            anchor: "a".into(),
            heading_path: heading.iter().map(|s| s.to_string()).collect(),
            level: 2,
            text: text.into(),
            ordinal: 1,
            part: 0,
        }
    }

    fn pairs(s: &Section) -> Vec<(String, String)> {
        from_section(s)
            .into_iter()
            .map(|a| (a.old, a.new))
            .collect()
    }

    #[test]
    fn sentences_that_declare_a_rename() {
        let p = |t: &str| pairs(&sec(&["Page", "Part"], t));
        let both = |o: &str, n: &str| vec![(o.to_string(), n.to_string())];
        assert_eq!(
            p("**Note:** In Version 1 and older, **FrameNode** was named *Frame*."),
            both("Frame", "FrameNode")
        );
        assert_eq!(
            p("The `PaintServer` singleton was renamed to `DrawServer` in 2.0."),
            both("PaintServer", "DrawServer")
        );
        assert_eq!(
            p("[DrawServer](https://x/draw.html) (formerly `PaintServer`) draws."),
            both("PaintServer", "DrawServer")
        );
        assert_eq!(
            p("DrawServer has been renamed from PaintServer."),
            both("PaintServer", "DrawServer")
        );
        assert_eq!(
            p("The PaintServer singleton was renamed to DrawServer."),
            both("PaintServer", "DrawServer")
        );
        // One word of a longer name, or of a compound, is not the name.
        assert!(p("Use the Cloud Canvas, formerly Paint Studio, to draw.").is_empty());
        assert!(p("Hooks can replace output via hookOutput (previously MCP-only).").is_empty());
        // Prose that only looks like a declaration maps nothing.
        assert!(p("The callback was called twice; it was named after its author.").is_empty());
        assert!(p("This value was called zero by older releases.").is_empty());
        assert!(p("Nothing here is renamed.").is_empty());
    }

    #[test]
    fn successors_of_a_deprecation_note() {
        assert_eq!(
            successors("**Deprecated:** Use the [DrawNode2D](https://x/y.html) node instead."),
            vec!["DrawNode2D"]
        );
        assert_eq!(
            successors(
                "**Deprecated:** Consider using [Color.from_bytes()](x) or `get_tint()` instead."
            ),
            vec!["from_bytes", "get_tint"]
        );
        // An everyday word is not kept; a note with no "use ... instead" names nothing.
        assert!(successors("**Deprecated:** Use [changed](x) instead.").is_empty());
        assert!(successors("**Deprecated:** Override `_setup()` instead.").is_empty());
    }

    #[test]
    fn this_names_the_sections_subject() {
        let s = sec(
            &["Materials", "Tint"],
            "In previous versions, this channel was named *Shade*.",
        );
        assert_eq!(pairs(&s), vec![("Shade".to_string(), "Tint".to_string())]);
        // A heading of several words is no name: nothing maps.
        let s = sec(
            &["Materials", "Base tint"],
            "In previous versions, this channel was named *Shade*.",
        );
        assert!(pairs(&s).is_empty());
    }

    #[test]
    fn rename_tables_by_their_headers() {
        let text = "## Renamed\n\n| Old name | New name | Notes |\n| --- | --- | --- |\n\
                    | `PaintServer` | [DrawServer](x) | singleton |\n| FrameNode | FrameNode | same |\n\
                    | two words | DrawServer | skipped |\n\nAfter the table.";
        assert_eq!(
            pairs(&sec(&["Guide", "Renamed"], text)),
            vec![("PaintServer".to_string(), "DrawServer".to_string())]
        );
        let versions = "| Version 4.x | Version 3.x |\n|---|---|\n| Box3D | BoxShape |\n";
        assert_eq!(
            pairs(&sec(&["Guide"], versions)),
            vec![("BoxShape".to_string(), "Box3D".to_string())]
        );
        // A table that is not about renames maps nothing.
        let other = "| Returns | Method |\n| --- | --- |\n| Color | ToColor |\n";
        assert!(pairs(&sec(&["Class"], other)).is_empty());
    }
}
