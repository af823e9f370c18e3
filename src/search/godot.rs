//! The Godot tools (seed 001): `search_godot_docs`, `fetch_godot_doc`,
//! `get_godot_class`, `get_godot_class_member`.
//!
//! Search runs over the Godot artifact's sections like every other tool; the
//! class reference additionally answers from `classes.jsonl`, so a hit on a
//! member carries `class_name` and `member_name` exactly as the class tools
//! take them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::classes::ClassReference;
use super::{Library, LoadedSource, ToolError};
use crate::normalize::godot_class::{GodotClass, Member};
use crate::util::collapse_whitespace;

/// Default and largest number of hits.
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;
/// Total characters of hit content a response may carry (well under 25k tokens).
const RESPONSE_BUDGET: usize = 40_000;
/// Characters of a hit's snippet.
const SNIPPET_CHARS: usize = 280;
/// Characters of member lines per `get_godot_class` call.
const CLASS_BUDGET: usize = 60_000;

/// A hit's snippet: the start of its section as the text it reads as.
/// Link targets and emphasis markers are left out: a class page opens with
/// its inheritance chain, whose link URLs would fill the snippet before the
/// class's own description begins, and the hit's `uri` is the link that
/// matters.
fn snippet_of(section_text: &str) -> String {
    let body = super::strip_heading_line(section_text);
    // Rendering reads only what can reach the snippet: a few times its
    // length of Markdown, more where links leave less text than that (a
    // list of links).
    let mut budget = 4 * SNIPPET_CHARS;
    loop {
        let (mut head, cut) = crate::util::cut(body, budget);
        if cut {
            // A link cut in two would read as its raw Markdown.
            if let Some(open) = head.rfind('[').filter(|&i| !head[i..].contains(')')) {
                head.truncate(open);
            }
        }
        let text = collapse_whitespace(&crate::markdown::heading_text(&head));
        if !cut || text.chars().count() >= SNIPPET_CHARS {
            return crate::util::cut(&text, SNIPPET_CHARS).0;
        }
        budget *= 4;
    }
}

/// The parts of the Godot docs a search can be restricted to.
pub const KINDS: [&str; 3] = ["manual", "tutorials", "class"];

#[derive(Debug, Clone, Deserialize)]
pub struct SearchArgs {
    pub query: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    /// Read as a float so that any JSON integer the schema accepts
    /// (`1e20` included) is "above 50, reduced to 50", never a type error.
    pub limit: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub title: String,
    pub uri: String,
    /// `class` for the class reference, `manual` otherwise.
    pub kind: String,
    /// Heading path of the best-matching section.
    pub heading: String,
    pub snippet: String,
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_name: Option<String>,
    /// Further matching sections of the same page folded into this hit.
    pub also_matched: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResult {
    pub query: String,
    pub hits: Vec<Hit>,
    pub truncated: bool,
    pub hint: String,
    pub notice: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FetchArgs {
    pub uri: String,
    #[serde(default)]
    pub offset: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FetchResult {
    pub uri: String,
    pub title: String,
    /// Heading path when `uri` named a section (`#anchor`), else null.
    pub section: Option<String>,
    pub text: String,
    pub offset: u64,
    pub next_offset: Option<u64>,
    pub total_chars: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ClassArgs {
    pub class_name: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct MemberLists {
    pub properties: Vec<String>,
    pub methods: Vec<String>,
    pub signals: Vec<String>,
    pub constants: Vec<String>,
    pub enums: Vec<String>,
    pub theme_properties: Vec<String>,
    pub annotations: Vec<String>,
    pub constructors: Vec<String>,
    pub operators: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClassResult {
    pub class_name: String,
    pub url: String,
    pub inherits: Vec<String>,
    pub inherited_by: Vec<String>,
    pub brief: String,
    pub description: String,
    pub tutorials: Vec<String>,
    pub members: MemberLists,
    pub truncated: bool,
    pub hint: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MemberArgs {
    pub class_name: String,
    pub member_name: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemberResult {
    pub class_name: String,
    pub member_name: String,
    pub kind: String,
    pub signature: String,
    pub description: String,
    pub uri: String,
    /// The class that documents the member when it is inherited.
    pub defined_in: String,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub default: Option<String>,
    pub setter: Option<String>,
    pub getter: Option<String>,
    /// Signatures of further overloads with the same name.
    pub overloads: Vec<String>,
}

/// Question framing at the start of a query: words about asking, not about
/// the topic. "What's the difference between A and B" is framing too: the
/// page that explains A and B rarely says "difference", and a page listing
/// the differences of something else (C#'s API against GDScript's) would
/// otherwise win on that word alone.
static FRAMING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^\s*(?:
            (?:how\s+(?:do|can|would|should)\s+(?:i|you|we|one)\s+(?:go\s+about\s+)?)
          | (?:how\s+to\s+)
          | (?:what(?:'s|\s+is|\s+are)\s+(?:the\s+)?(?:best|right|correct|proper|recommended)\s+way\s+to\s+)
          | (?:is\s+there\s+(?:a|any)\s+way\s+to\s+)
          | (?:(?:what(?:'s|\s+is|\s+are)\s+)?(?:the\s+)?differences?\s+between\s+)
          | (?:what(?:'s|\s+is|\s+are|\s+does)\s+)
          | (?:where\s+(?:do|can|should)\s+i\s+)
          | (?:can\s+i\s+) | (?:i\s+(?:want|need)\s+to\s+)
          | (?:why\s+(?:does|do|is)\s+(?:my\s+)?)
        )",
    )
    .expect("valid regex")
});

/// The query without question framing ("how do I make a character jump?" →
/// "make a character jump"); the text itself when nothing is left.
pub fn strip_framing(q: &str) -> String {
    let t = q.trim();
    let stripped = FRAMING.replace(t, "");
    let stripped = stripped.trim().trim_end_matches(['?', '.', '!']).trim();
    if stripped.is_empty() {
        t.to_string()
    } else {
        stripped.to_string()
    }
}

/// One identifier, as a member is named (`add_child`, `CONNECT_ONE_SHOT`).
static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("valid regex"));

/// `Class.member`, as the docs write a member (`Input.is_action_pressed`).
static QUALIFIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z@][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)").expect("valid regex")
});

/// What a query calls things by, to tell whether it names a class: its
/// words, run together in twos and threes ("canvas layer" names
/// `CanvasLayer`), and the identifiers it writes (`change_scene_to_file`).
struct NamedInQuery {
    /// Lower-case words and their runs of two and three, joined.
    words: std::collections::HashSet<String>,
    /// Identifier-like tokens (see `crate::aliases::name_like`), lower case.
    identifiers: Vec<String>,
}

impl NamedInQuery {
    fn of(query: &str) -> NamedInQuery {
        let lower = crate::util::lower_words(query);
        let mut words: std::collections::HashSet<String> = lower.iter().cloned().collect();
        for n in [2, 3] {
            words.extend(lower.windows(n).map(|w| w.concat()));
        }
        let identifiers = query
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|t| crate::aliases::name_like(t))
            .map(str::to_lowercase)
            .collect();
        NamedInQuery { words, identifiers }
    }

    /// Whether the query names class `c` or, as an identifier, one of its
    /// members.
    fn names(&self, c: &crate::normalize::godot_class::GodotClass) -> bool {
        let name: String = c
            .name
            .chars()
            .filter(|ch| ch.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        self.words.contains(&name)
            || (!self.identifiers.is_empty()
                && c.members().any(|m| {
                    self.identifiers
                        .iter()
                        .any(|t| m.name.eq_ignore_ascii_case(t))
                }))
    }
}

/// Whether a page path is in a named group of the artifact's `page_kinds`;
/// `manual` is every page outside `class`.
fn in_kind(kinds: &BTreeMap<String, Vec<String>>, path: &str, kind: &str) -> bool {
    let under = |k: &str| {
        kinds
            .get(k)
            .is_some_and(|ps| ps.iter().any(|p| path.starts_with(p.as_str())))
    };
    match kind {
        "manual" => !under("class"),
        k => under(k),
    }
}

fn kind_of_path(kinds: &BTreeMap<String, Vec<String>>, path: &str) -> &'static str {
    if in_kind(kinds, path, "class") {
        "class"
    } else {
        "manual"
    }
}

impl Library {
    /// A question that names a member as the docs write it, `Class.member`,
    /// gets that member's entry first: "Input.is_action_pressed" is
    /// `Input`'s method, however well `InputEvent`'s namesake matches the
    /// words. Both names are looked up in the class reference (the docs'
    /// own names, nothing guessed), and only a page that already matched
    /// the member moves, ahead of the rest in its own order.
    fn named_members_first(
        &self,
        hits: &mut [super::rank::PageHit],
        query: &str,
        refs: &ClassReference,
    ) {
        let named: Vec<(String, &str)> = QUALIFIED
            .captures_iter(query)
            .filter_map(|c| {
                let class = refs.class(&c[1])?;
                let member = class
                    .members()
                    .find(|m| !m.anchor.is_empty() && m.name.eq_ignore_ascii_case(&c[2]))?;
                Some((
                    crate::util::canonical_page_key(&class.url),
                    member.anchor.as_str(),
                ))
            })
            .collect();
        if named.is_empty() || !self.rank.named_members {
            return;
        }
        let top = hits.iter().map(|h| h.rank).fold(0.0, f64::max);
        let mut moved = false;
        for h in hits.iter_mut() {
            let src = &self.sources[h.source];
            let key = crate::util::canonical_page_key(&src.pages[h.page].url);
            let Some((_, anchor)) = named.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            let at = h
                .sections
                .iter()
                .position(|u| src.sections[u.section].anchor == *anchor);
            if let Some(at) = at {
                h.sections[..=at].rotate_right(1);
                h.rank += top;
                moved = true;
            }
        }
        if moved {
            super::rank::sort_hits(hits, |h| h.rank);
        }
    }

    /// Whether a hit's page is a class the docs mark deprecated, or its best
    /// unit such a member.
    fn is_deprecated(&self, h: &super::rank::PageHit, refs: &ClassReference) -> bool {
        let src = &self.sources[h.source];
        refs.deprecated_members
            .contains(&src.sections[h.best().section].anchor)
            || refs
                .for_url(&src.pages[h.page].url)
                .is_some_and(|c| c.is_deprecated())
    }

    /// Hits on what the docs mark deprecated (`ParallaxLayer`, "use
    /// Parallax2D instead") rank lower: a user is better sent to what
    /// replaced it, which the deprecated entry itself names. A member named
    /// as `Class.member` still comes first (see `named_members_first`).
    fn deprecated_later(&self, hits: &mut [super::rank::PageHit], refs: &ClassReference) {
        let factor = self.rank.deprecated_factor;
        if factor == 1.0 {
            return;
        }
        let mut moved = false;
        for h in hits.iter_mut() {
            if self.is_deprecated(h, refs) {
                h.rank *= factor;
                moved = true;
            }
        }
        if moved {
            super::rank::sort_hits(hits, |h| h.rank);
        }
    }

    /// A query that is nothing but a member name (`add_child`) matches that
    /// member on every class that declares one, and the words cannot tell
    /// the namesakes apart: BM25 only prefers the shorter description
    /// (`TreeItem.add_child` over `Node.add_child`). Among the hits whose
    /// best unit is such a namesake, the one the docs link to most (the
    /// member's own links, then its page's; deprecated ones last) takes the
    /// first of their places; other hits keep theirs.
    fn namesakes_by_links(
        &self,
        hits: &mut [super::rank::PageHit],
        query: &str,
        refs: &ClassReference,
    ) {
        let name = query.trim().trim_end_matches("()");
        if !self.rank.namesakes_by_links || !IDENTIFIER.is_match(name) {
            return;
        }
        let at: Vec<usize> = (0..hits.len())
            .filter(|&i| {
                let src = &self.sources[hits[i].source];
                let anchor = &src.sections[hits[i].best().section].anchor;
                refs.member_by_anchor
                    .get(anchor)
                    .is_some_and(|m| m.eq_ignore_ascii_case(name))
            })
            .collect();
        if at.len() < 2 {
            return;
        }
        let mut namesakes: Vec<super::rank::PageHit> =
            at.iter().map(|&i| hits[i].clone()).collect();
        // A deprecated namesake stays behind the others (`deprecated_later`).
        let key = |h: &super::rank::PageHit| {
            let src = &self.sources[h.source];
            std::cmp::Reverse((
                !self.is_deprecated(h, refs),
                src.section_inlinks[h.best().section],
                src.page_inlinks[h.page],
            ))
        };
        // Stable: namesakes the docs link to equally keep their order. The
        // key (set and class lookups) is made once per namesake.
        namesakes.sort_by_cached_key(key);
        for (&i, mut h) in at.iter().zip(namesakes) {
            // Each place keeps its rank, so the list stays in rank order.
            h.rank = hits[i].rank;
            hits[i] = h;
        }
    }

    /// A class page ranked just above a tutorial the class itself lists
    /// (its "Tutorials": `CanvasLayer` lists "Canvas layers"), at nearly
    /// its rank, gives that place to the tutorial, when the query names
    /// neither the class nor one of its members. Both match, and for a
    /// goal in the user's words ("a health bar that stays put while the
    /// camera scrolls") the page written to explain how is the better
    /// first answer; the class follows right behind it. A query that
    /// names the class or its API asks about the reference, and keeps it
    /// first. The link is the docs' own, read from the class reference;
    /// nothing is listed here.
    fn tutorials_first(
        &self,
        hits: &mut [super::rank::PageHit],
        query: &str,
        refs: &ClassReference,
    ) {
        let window = self.rank.tutorials_first;
        if window == 0 || hits.len() < 2 {
            return;
        }
        let named = NamedInQuery::of(query);
        let mut i = 0;
        while i + 1 < hits.len() {
            let src = &self.sources[hits[i].source];
            let class = refs
                .for_url(&src.pages[hits[i].page].url)
                .filter(|c| !c.tutorials.is_empty() && !named.names(c));
            let listed = class.and_then(|c| {
                // The tutorials this source holds, as pages (links to the
                // asset library and other sites find none).
                let tutorials: Vec<usize> = c
                    .tutorials
                    .iter()
                    .filter_map(|t| src.find_page(&t.url).map(|p| p.index))
                    .collect();
                let end = (i + 1 + window).min(hits.len());
                let near = self.rank.tutorials_within * hits[i].rank;
                (i + 1..end).find(|&j| {
                    hits[j].source == hits[i].source
                        && hits[j].rank >= near
                        && tutorials.contains(&hits[j].page)
                })
            });
            match listed {
                Some(j) => {
                    // Each place keeps its rank, so the list stays in rank
                    // order (scores are assigned after these steps).
                    let ranks: Vec<f64> = hits[i..=j].iter().map(|h| h.rank).collect();
                    hits[i..=j].rotate_right(1);
                    for (h, r) in hits[i..=j].iter_mut().zip(ranks) {
                        h.rank = r;
                    }
                    // The class, now behind its tutorial, is not looked at
                    // again.
                    i += 2;
                }
                None => i += 1,
            }
        }
    }

    fn godot_source(&self) -> Result<usize, ToolError> {
        self.sources
            .iter()
            .position(|s| s.manifest.tool_set() == crate::model::ToolSet::Godot)
            .ok_or_else(|| ToolError::invalid("no Godot documentation is loaded"))
    }

    /// Answer `search_godot_docs`.
    pub fn search_godot_docs(&self, args: &SearchArgs) -> Result<SearchResult, ToolError> {
        let si = self.godot_source()?;
        let src = &self.sources[si];
        if let Some(k) = &args.kind {
            if !KINDS.contains(&k.as_str()) {
                return Err(ToolError::invalid(format!(
                    "kind: `{k}` is not one of {}",
                    KINDS.join(", ")
                )));
            }
        }
        let limit = match args.limit {
            None => DEFAULT_LIMIT,
            Some(n) if n < 1.0 => {
                return Err(ToolError::invalid(format!(
                    "limit: must be at least 1, got {n}"
                )))
            }
            Some(n) => (n as usize).min(MAX_LIMIT),
        };
        let query = strip_framing(&args.query);
        if query.is_empty() {
            return Err(ToolError::invalid("query: must not be empty"));
        }
        let kind = args.kind.clone();
        if let Some(k) = &kind {
            let group = if k == "manual" { "class" } else { k.as_str() };
            if !src.manifest.page_kinds.contains_key(group) {
                return Err(ToolError::invalid(format!(
                    "kind: the Godot artifact {} was built without the `{group}` page group (sources.yaml `page_kinds`); rebuild it, or search without kind",
                    src.manifest.snapshot_id
                )));
            }
        }
        let keep = |s: &LoadedSource, sec: usize| match &kind {
            None => true,
            Some(k) => in_kind(
                &s.manifest.page_kinds,
                &s.pages[s.section_page[sec]].path,
                k,
            ),
        };
        let keep_ref: super::rank::SectionFilter<'_> = &keep;
        let refs = src.classes()?;
        // These steps only reorder; the shown scores follow the final order.
        let hits = self.rank_pages_stable(
            &[si],
            &query,
            kind.as_ref().map(|_| keep_ref),
            limit + 1,
            DEFAULT_LIMIT + 1,
            self.rank.godot,
            |part| {
                self.deprecated_later(part, refs);
                self.named_members_first(part, &query, refs);
                self.namesakes_by_links(part, &query, refs);
                self.tutorials_first(part, &query, refs);
            },
        )?;
        let mut out = Vec::new();
        let mut used = 0usize;
        let mut truncated = false;
        for (place, h) in hits.iter().take(limit).enumerate() {
            let pg = &src.pages[h.page];
            let sec = &src.sections[h.best().section];
            super::rank::explain("search_godot_docs", place + 1, sec, h);
            let snippet = snippet_of(&sec.text);
            let class = refs.for_url(&pg.url);
            // Only a class page's sections are members.
            let member_name = class.and_then(|_| refs.member_by_anchor.get(&sec.anchor).cloned());
            let hit = Hit {
                title: pg.title.clone(),
                uri: sec.url_with_anchor(),
                kind: kind_of_path(&src.manifest.page_kinds, &pg.path).to_string(),
                heading: sec.heading_display(),
                snippet,
                score: h.score,
                class_name: class.map(|c| c.name.clone()),
                member_name,
                also_matched: (h.sections.len() - 1) as u32,
            };
            let size = hit.title.len() + hit.uri.len() + hit.heading.len() + hit.snippet.len() + 80;
            if used + size > RESPONSE_BUDGET {
                truncated = true;
                break;
            }
            used += size;
            out.push(hit);
        }
        let more = hits.len() > out.len();
        let hint = if truncated {
            format!(
                "{} hits fit the response budget; call again with a smaller limit, or narrow with kind ({})",
                out.len(),
                KINDS.join(", ")
            )
        } else if more && out.len() == limit {
            format!(
                "more matches exist; raise limit (at most {MAX_LIMIT}) or narrow with kind. Read a hit with fetch_godot_doc(uri); for class hits use get_godot_class(class_name) or get_godot_class_member(class_name, member_name)"
            )
        } else {
            String::new()
        };
        Ok(SearchResult {
            query,
            hits: out,
            truncated,
            hint,
            notice: self.notice(),
        })
    }

    /// Answer `fetch_godot_doc`.
    pub fn fetch_godot_doc(&self, args: &FetchArgs) -> Result<FetchResult, ToolError> {
        let si = self.godot_source()?;
        let src = &self.sources[si];
        let uri = args.uri.trim();
        let (base, anchor) = match uri.split_once('#') {
            Some((b, a)) => (b, Some(a)),
            None => (uri, None),
        };
        let full = if base.starts_with("http://") || base.starts_with("https://") {
            base.to_string()
        } else {
            // A path relative to the docs root (`classes/class_node.html`, `godot://classes/...`).
            let rel = base.trim_start_matches("godot://").trim_start_matches('/');
            // The version root is what any page's URL has before its path.
            let root = src
                .pages
                .iter()
                .find_map(|p| {
                    let i = p
                        .url
                        .rfind(p.path.as_str())
                        .filter(|_| !p.path.is_empty())?;
                    Some(p.url[..i].to_string())
                })
                .or_else(|| src.pages.first().map(|p| p.url.clone()))
                .unwrap_or_default();
            format!("{}/{}", root.trim_end_matches('/'), rel)
        };
        let Some(page) = src.find_page(&full) else {
            return Err(ToolError::invalid(format!(
                "uri: no Godot page `{uri}`; pass a uri exactly as search_godot_docs returned it"
            )));
        };
        let (text, section) = match anchor.filter(|a| !a.is_empty()) {
            None => (
                format!("# {}\n\n{}", page.page.title, page.markdown()?),
                None,
            ),
            Some(a) => {
                let Some(start) = page.sections.iter().position(|s| s.anchor == a) else {
                    return Err(ToolError::invalid(format!(
                        "uri: page `{base}` has no section `#{a}`; fetch the page without the fragment"
                    )));
                };
                let level = page.sections[start].level;
                let mut t = String::new();
                let mut i = start;
                while i < page.sections.len() {
                    let s = &page.sections[i];
                    if i > start && s.level <= level && s.anchor != a {
                        break;
                    }
                    if !t.is_empty() {
                        t.push_str("\n\n");
                    }
                    t.push_str(&s.text);
                    i += 1;
                }
                (t, Some(page.sections[start].heading_display()))
            }
        };
        let piece = super::read_section::text_page(&text, args.offset)?;
        Ok(FetchResult {
            uri: match anchor {
                Some(a) if !a.is_empty() => format!("{}#{a}", page.page.url),
                _ => page.page.url.clone(),
            },
            title: page.page.title.clone(),
            section,
            text: piece.text.to_string(),
            offset: args.offset,
            next_offset: piece.next_offset,
            total_chars: piece.total_chars,
        })
    }

    /// Answer `get_godot_class`.
    pub fn get_godot_class(&self, args: &ClassArgs) -> Result<ClassResult, ToolError> {
        let src = &self.sources[self.godot_source()?];
        let c = find_class(src.classes()?, &args.class_name)?;
        let mut lists = MemberLists::default();
        let mut used = 0usize;
        let mut truncated = false;
        {
            let mut add = |list: &mut Vec<String>, line: String| {
                if used + line.len() > CLASS_BUDGET {
                    truncated = true;
                    return;
                }
                used += line.len();
                list.push(line);
            };
            for m in &c.properties {
                add(&mut lists.properties, m.signature.clone());
            }
            for m in &c.methods {
                add(&mut lists.methods, m.signature.clone());
            }
            for m in &c.signals {
                add(&mut lists.signals, m.signature.clone());
            }
            for m in &c.constants {
                add(&mut lists.constants, m.signature.clone());
            }
            for e in &c.enums {
                let values: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
                add(
                    &mut lists.enums,
                    format!("{}: {}", e.name, values.join(", ")),
                );
            }
            for m in &c.theme_properties {
                add(&mut lists.theme_properties, m.signature.clone());
            }
            for m in &c.annotations {
                add(&mut lists.annotations, m.signature.clone());
            }
            for m in &c.constructors {
                add(&mut lists.constructors, m.signature.clone());
            }
            for m in &c.operators {
                add(&mut lists.operators, m.signature.clone());
            }
        }
        let (description, cut) = crate::util::cut(&c.description, 4000);
        Ok(ClassResult {
            class_name: c.name.clone(),
            url: c.url.clone(),
            inherits: c.inherits.clone(),
            inherited_by: c.inherited_by.clone(),
            brief: c.brief.clone(),
            description,
            tutorials: c
                .tutorials
                .iter()
                .map(|t| format!("{} <{}>", t.title, t.url))
                .collect(),
            members: lists,
            truncated: truncated || cut,
            hint: if truncated || cut {
                format!("lists cut to fit; get_godot_class_member(\"{}\", NAME) gives one member in full, fetch_godot_doc(\"{}\") the whole page", c.name, c.url)
            } else {
                format!(
                    "get_godot_class_member(\"{}\", NAME) gives one member's full description",
                    c.name
                )
            },
        })
    }

    /// Answer `get_godot_class_member`, looking through the class's ancestors
    /// when the class itself does not document the member.
    pub fn get_godot_class_member(&self, args: &MemberArgs) -> Result<MemberResult, ToolError> {
        let src = &self.sources[self.godot_source()?];
        let refs = src.classes()?;
        let c = find_class(refs, &args.class_name)?;
        let want = normalize_member(&args.member_name);
        let mut chain = vec![c];
        for a in &c.inherits {
            if let Some(ac) = refs.class(a) {
                chain.push(ac);
            }
        }
        for owner in &chain {
            let found: Vec<&Member> = owner
                .members()
                .filter(|m| normalize_member(&m.name) == want)
                .collect();
            if let Some(m) = found.first() {
                return Ok(MemberResult {
                    class_name: c.name.clone(),
                    member_name: m.name.clone(),
                    kind: serde_json::to_value(m.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    signature: m.signature.clone(),
                    description: m.description.clone(),
                    uri: m.url.clone(),
                    defined_in: owner.name.clone(),
                    type_: m.type_.clone(),
                    default: m.default.clone(),
                    setter: m.setter.clone(),
                    getter: m.getter.clone(),
                    overloads: found[1..].iter().map(|o| o.signature.clone()).collect(),
                });
            }
        }
        let names: Vec<&str> = chain
            .iter()
            .flat_map(|cl| cl.members().map(|m| m.name.as_str()))
            .collect();
        let sugg = did_you_mean(&args.member_name, names.iter().copied());
        Err(ToolError::invalid(format!(
            "member_name: `{}` is not a member of {}{}{}",
            args.member_name,
            c.name,
            if c.inherits.is_empty() {
                String::new()
            } else {
                format!(" or its ancestors ({})", c.inherits.join(", "))
            },
            suggestion_text(&sugg)
        )))
    }
}

fn find_class<'a>(refs: &'a ClassReference, name: &str) -> Result<&'a GodotClass, ToolError> {
    if refs.classes.is_empty() {
        return Err(ToolError::invalid(
            "the loaded Godot index has no class reference",
        ));
    }
    if let Some(c) = refs.class(name) {
        return Ok(c);
    }
    let sugg = did_you_mean(name, refs.classes.iter().map(|c| c.name.as_str()));
    Err(ToolError::invalid(format!(
        "class_name: no class `{name}` in the Godot class reference{}",
        suggestion_text(&sugg)
    )))
}

fn suggestion_text(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", s.join(", "))
    }
}

/// `add_child()`, `Add_Child`, `@export` → a comparable member name.
fn normalize_member(s: &str) -> String {
    let t = s.trim().trim_end_matches("()");
    let t = t.split('(').next().unwrap_or(t);
    t.trim().to_lowercase()
}

/// Up to five names closest to `want` by edit distance. A name that holds
/// `want` (or is held by it) qualifies however far apart the two are, but
/// ranks by its distance too: "Nod" is one edit from `Node` and ten from
/// `AnimationNode`, and dozens of classes hold "nod".
pub fn did_you_mean<'a>(want: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let w = want.trim().to_lowercase();
    let mut scored: Vec<(usize, String)> = Vec::new();
    for n in names {
        let l = n.to_lowercase();
        let d = strsim::levenshtein(&w, &l);
        if d <= (w.chars().count() / 3).max(2) || l.contains(&w) || w.contains(&l) {
            scored.push((d, n.to_string()));
        }
    }
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(5).map(|x| x.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snippet is the section's start as it reads: a class page's
    /// inheritance chain names its classes without their link targets, so
    /// the class's description reaches the snippet.
    #[test]
    fn snippets_read_as_text_without_link_targets() {
        let head = "## Light2D\n\n**Inherits:** [Node2D](https://docs.example/classes/class_node2d.html#class-node2d) **<** [CanvasItem](https://docs.example/classes/class_canvasitem.html#class-canvasitem) **<** [Node](https://docs.example/classes/class_node.html#class-node)\n\nCasts light in a 2D environment. Uses `energy` and a [texture](https://docs.example/t.html).";
        assert_eq!(
            snippet_of(head),
            "Inherits: Node2D < CanvasItem < Node Casts light in a 2D environment. Uses energy and a texture."
        );
        // Long text is cut to the snippet's length at a word boundary.
        let long = format!(
            "[Start](https://docs.example/s.html) {}",
            "word ".repeat(200)
        );
        let cut = snippet_of(&long);
        assert!(cut.starts_with("Start word word"), "{cut}");
        assert!(cut.chars().count() <= SNIPPET_CHARS && !cut.contains("https://"));
        // A list of links reads as their names, as many as fill the
        // snippet, and none cut in two.
        let list: String = (0..60)
            .map(|i| format!("- [Class{i}](https://docs.example/classes/class_class{i}.html#class-class{i})\n"))
            .collect();
        let names = snippet_of(&list);
        assert!(names.starts_with("- Class0 - Class1 - Class2"), "{names}");
        assert!(names.chars().count() > SNIPPET_CHARS - 10, "{names}");
        assert!(
            !names.contains("https://") && !names.contains('['),
            "{names}"
        );
    }

    /// A query names a class by its name, written as one word or in two or
    /// three, or by one of its members written as an identifier; an
    /// everyday word that happens to be a member's name does not.
    #[test]
    fn a_query_names_a_class_or_its_members() {
        use crate::normalize::godot_class::{GodotClass, Member, MemberKind};
        let member = |name: &str| Member::for_test(MemberKind::Method, name, "");
        let class = GodotClass {
            name: "CanvasLayer".into(),
            methods: vec![member("get_canvas"), member("show")],
            ..Default::default()
        };
        let names = |q: &str| NamedInQuery::of(q).names(&class);
        assert!(names("CanvasLayer follow viewport"));
        assert!(names("a canvas layer for the HUD"));
        assert!(names("what does get_canvas return"));
        assert!(!names("keep the HUD fixed while the camera scrolls"));
        assert!(!names("show the HUD above the game"), "`show` is a word");
        assert!(
            !names("canvas items and their layer"),
            "not one run of words"
        );
    }

    #[test]
    fn framing_is_stripped() {
        assert_eq!(
            strip_framing("how do I make a character jump?"),
            "make a character jump"
        );
        assert_eq!(
            strip_framing("How to detect collisions"),
            "detect collisions"
        );
        assert_eq!(
            strip_framing("what is the best way to save games?"),
            "save games"
        );
        assert_eq!(
            strip_framing("what's the difference between preload and load?"),
            "preload and load"
        );
        assert_eq!(
            strip_framing("Differences between Area2D and StaticBody2D"),
            "Area2D and StaticBody2D"
        );
        assert_eq!(
            strip_framing("the difference between"),
            "the difference between"
        );
        assert_eq!(strip_framing("add_child"), "add_child");
        assert_eq!(strip_framing("how do I"), "how do I");
    }

    #[test]
    fn kinds_partition_paths() {
        let kinds: BTreeMap<String, Vec<String>> = [
            ("class".to_string(), vec!["classes/".to_string()]),
            (
                "tutorials".to_string(),
                vec!["tutorials/".to_string(), "getting_started/".to_string()],
            ),
        ]
        .into();
        let in_kind = |p: &str, k: &str| in_kind(&kinds, p, k);
        assert!(in_kind("classes/class_node", "class"));
        assert!(!in_kind("classes/class_node", "manual"));
        assert!(in_kind("tutorials/2d/x", "tutorials") && in_kind("tutorials/2d/x", "manual"));
        assert!(in_kind("getting_started/step_by_step/x", "tutorials"));
        assert!(!in_kind("about/faq", "tutorials") && in_kind("about/faq", "manual"));
        assert_eq!(kind_of_path(&kinds, "classes/class_node"), "class");
        assert_eq!(kind_of_path(&kinds, "about/faq"), "manual");
    }

    #[test]
    fn suggestions() {
        let names = ["Node", "Node2D", "Node3D", "Tween", "Timer"];
        let s = did_you_mean("Nod2D", names.iter().copied());
        assert_eq!(s[0], "Node2D");
        assert!(did_you_mean("zzzzzzzz", names.iter().copied()).is_empty());
        // Names that hold the typed one rank by distance too: the nearest
        // is not crowded out by longer names sorted before it.
        let many = [
            "AnimationNode",
            "AnimationNodeAdd2",
            "AnimationNodeBlend2",
            "AnimationNodeOutput",
            "AnimationNodeSync",
            "EditorNode3DGizmo",
            "Node",
            "Node2D",
        ];
        assert_eq!(
            did_you_mean("Nod", many.iter().copied())[..3],
            ["Node", "Node2D", "AnimationNode"]
        );
        assert_eq!(normalize_member("add_child()"), "add_child");
    }
}
