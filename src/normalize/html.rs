//! Generic HTML → Markdown conversion over a parsed `scraper` tree.
//!
//! One pass over the content subtree writes Markdown into a `String` through a
//! small writer that collapses whitespace, owes blank lines lazily and opens
//! inline markers only when content follows, so empty `<strong>` or permalink
//! leftovers never leave stray `**` or `[]()` behind. Containers that prefix
//! their lines (lists, block quotes, admonitions) render into a fresh writer
//! and are indented once, which keeps the cost linear in size × nesting depth.
//!
//! Site adapters steer the conversion through [`Hooks`] (drop an element,
//! replace it by a heading, name the columns of a header-less table) instead
//! of post-processing the Markdown.
//!
//! Heading anchors (`anchors`, one per ATX heading line of the output, in
//! order) follow this rule, chosen so that `public_url#anchor` opens the
//! heading on the live site:
//! 1. the heading's own `id`;
//! 2. else the `id` of the nearest enclosing element that has one, provided no
//!    other heading came before this one inside that element — Sphinx puts the
//!    id on `<section id=…>`, and its `a.headerlink` points there;
//! 3. else the nearest `id` met before the heading in document order (an
//!    `<a id>`/`<span id>` marker, or the previous heading's anchor);
//! 4. else the empty string (the page itself).
//!
//! Headings nested in lists, quotes, admonitions or tables are written as bold
//! paragraphs, not ATX headings, and get no entry in `anchors`.

use std::sync::LazyLock;

use scraper::{CaseSensitivity, ElementRef, Html, Node, Selector};
use url::Url;

use super::{NormalizeError, Normalized, PageRules};
use crate::markdown::{code_span, fence_for};
use crate::model::HeadingAnchor;
use crate::util::{collapse_whitespace, cut_marked, first_sentence};

/// A node of the parsed tree (`ego_tree::NodeRef<Node>`), named without a
/// direct dependency on `ego_tree`.
pub type NodeRef<'a> = <ElementRef<'a> as std::ops::Deref>::Target;

/// Markdown for one subtree plus the anchors of its headings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    pub markdown: String,
    /// Anchor of each ATX heading line of `markdown`, in order (see module docs).
    pub anchors: Vec<HeadingAnchor>,
}

/// What an adapter wants done with one element, asked before generic handling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Convert the element the generic way.
    Default,
    /// Leave the element and its subtree out.
    Skip,
    /// Write a heading with this plain text and anchor instead of the element.
    Heading {
        level: u8,
        text: String,
        anchor: String,
    },
}

/// Site-specific steering of the generic converter.
pub trait Hooks {
    /// Decide about `el` before the generic rules run.
    fn action(&mut self, _el: ElementRef<'_>) -> Action {
        Action::Default
    }
    /// Column names for a table that has no header row, or `None` for an empty header.
    fn table_header(&mut self, _table: ElementRef<'_>, _columns: usize) -> Option<Vec<String>> {
        None
    }
}

/// The generic rules only.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;
impl Hooks for NoHooks {}

/// Compile a built-in selector (for `LazyLock` statics).
pub(crate) fn sel(css: &str) -> Selector {
    // The selectors are literals in this crate; a typo is a programming error.
    Selector::parse(css).unwrap_or_else(|e| panic!("invalid built-in selector {css:?}: {e:?}"))
}

/// Generic content roots, most specific first.
static SEL_ROOTS: LazyLock<Vec<Selector>> = LazyLock::new(|| {
    [
        "main article",
        "main",
        "[role=main]",
        "#content-area",
        "article",
        "#content",
        "body",
    ]
    .into_iter()
    .map(sel)
    .collect()
});
#[cfg(test)]
static SEL_BODY: LazyLock<Selector> = LazyLock::new(|| sel("body"));
static SEL_H1: LazyLock<Selector> = LazyLock::new(|| sel("h1"));
static SEL_TITLE: LazyLock<Selector> = LazyLock::new(|| sel("head > title"));
static SEL_META_DESC: LazyLock<Selector> = LazyLock::new(|| sel("meta[name=description]"));
static SEL_OG_DESC: LazyLock<Selector> = LazyLock::new(|| sel("meta[property=\"og:description\"]"));
static SEL_P: LazyLock<Selector> = LazyLock::new(|| sel("p"));

// ---------------------------------------------------------------------------
// Output writer
// ---------------------------------------------------------------------------

/// Markdown being written, with whitespace and separators owed lazily.
#[derive(Default)]
struct Out {
    s: String,
    /// Newlines owed before the next content (2 = blank line).
    newlines: u8,
    /// A collapsible space is owed before the next content.
    space: bool,
    /// A hard line break is owed (dropped if a block break follows instead).
    hard_break: bool,
    /// Inline openers (`**`, `*`, `[`) not yet written because no content followed yet.
    marks: String,
    /// This writer holds one list item: nested lists follow text on the next line.
    tight: bool,
}

impl Out {
    fn tight() -> Self {
        Out {
            tight: true,
            ..Out::default()
        }
    }

    fn block(&mut self) {
        self.newlines = 2;
        self.space = false;
        self.hard_break = false;
    }

    fn line(&mut self) {
        self.newlines = self.newlines.max(1);
        self.space = false;
        self.hard_break = false;
    }

    fn owes(&self) -> bool {
        self.newlines > 0 || self.space || self.hard_break || !self.marks.is_empty()
    }

    /// Pay what is owed before content is written.
    fn flush(&mut self) {
        if self.s.is_empty() {
            // Nothing before: no separator, but keep the openers.
        } else if self.newlines > 0 {
            let kept = self.s.trim_end_matches([' ', '\t']).len();
            self.s.truncate(kept);
            let have = self.s.len() - self.s.trim_end_matches('\n').len();
            for _ in have..usize::from(self.newlines) {
                self.s.push('\n');
            }
        } else if self.hard_break {
            self.s.push_str("\\\n");
        } else if self.space && !self.s.ends_with([' ', '\n']) {
            self.s.push(' ');
        }
        self.newlines = 0;
        self.space = false;
        self.hard_break = false;
        if !self.marks.is_empty() {
            self.s.push_str(&self.marks);
            self.marks.clear();
        }
    }

    /// Write pre-formatted Markdown (already escaped) as inline content.
    fn raw(&mut self, md: &str) {
        if md.is_empty() {
            return;
        }
        self.flush();
        self.s.push_str(md);
    }

    fn open(&mut self, mark: &str) {
        self.marks.push_str(mark);
    }

    /// Close an inline marker; if nothing was written since it opened, drop it.
    fn close(&mut self, open: &str, close: &str) -> bool {
        if self.marks.ends_with(open) {
            let keep = self.marks.len() - open.len();
            self.marks.truncate(keep);
            false
        } else {
            self.s.push_str(close);
            true
        }
    }

    /// Write text from the document: collapse whitespace and escape what Markdown would read.
    fn text(&mut self, t: &str, in_link: bool) {
        let mut list_escape_at = usize::MAX;
        for (i, c) in t.char_indices() {
            if c.is_whitespace() {
                self.space = true;
                continue;
            }
            if self.owes() {
                self.flush();
            }
            let rest = &t[i + c.len_utf8()..];
            let next = rest.chars().next();
            let prev = self.s.chars().next_back();
            let line_start = prev.is_none() || prev == Some('\n');
            if line_start && c.is_ascii_digit() {
                list_escape_at = ordered_marker_end(&t[i..]).map_or(usize::MAX, |n| i + n);
            }
            if i == list_escape_at || needs_escape(c, prev, next, line_start, in_link, rest) {
                self.s.push('\\');
            }
            self.s.push(c);
        }
    }

    fn finish(mut self) -> String {
        self.marks.clear();
        let end = self.s.trim_end().len();
        self.s.truncate(end);
        let start = self.s.len() - self.s.trim_start_matches('\n').len();
        if start > 0 {
            self.s.drain(..start);
        }
        self.s
    }
}

/// Byte offset of the `.`/`)` of an ordered-list marker (`12. `) starting `t`.
fn ordered_marker_end(t: &str) -> Option<usize> {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let b = t.as_bytes();
    match b.get(digits) {
        Some(b'.') | Some(b')') => match b.get(digits + 1) {
            None => Some(digits),
            Some(c) if c.is_ascii_whitespace() => Some(digits),
            _ => None,
        },
        _ => None,
    }
}

fn needs_escape(
    c: char,
    prev: Option<char>,
    next: Option<char>,
    line_start: bool,
    in_link: bool,
    rest: &str,
) -> bool {
    // A missing `next` is an element boundary: unknown, so treated as neither space nor word.
    let ws_prev = prev.is_none_or(char::is_whitespace);
    let ws_next = next.is_some_and(char::is_whitespace);
    let alnum = |x: Option<char>| x.is_some_and(char::is_alphanumeric);
    match c {
        '\\' => next.is_none_or(|n| n.is_ascii_punctuation()),
        '`' => true,
        '*' => line_start || !(ws_prev && ws_next),
        '_' => !((alnum(prev) && alnum(next)) || (ws_prev && ws_next)),
        '~' => line_start || !(ws_prev && ws_next),
        '<' => next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
        '[' => in_link,
        ']' => in_link || matches!(next, Some('(' | '[')),
        '&' => looks_like_entity(rest),
        '#' | '>' => line_start,
        '-' | '+' => line_start && (next.is_none_or(char::is_whitespace) || next == Some(c)),
        '=' => line_start,
        _ => false,
    }
}

fn looks_like_entity(rest: &str) -> bool {
    let name = rest
        .bytes()
        .take(12)
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'#')
        .count();
    name > 0 && rest.as_bytes().get(name) == Some(&b';')
}

/// Prefix every line of `md`: `first` on line one, `rest` on the others, `blank` on empty ones.
fn prefix_lines(md: &str, first: &str, rest: &str, blank: &str) -> String {
    let mut out = String::with_capacity(md.len() + 8 * (1 + md.len() / 40));
    for (i, line) in md.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.is_empty() {
            out.push_str(if i == 0 { first.trim_end() } else { blank });
        } else {
            out.push_str(if i == 0 { first } else { rest });
            out.push_str(line);
        }
    }
    out
}

/// Does this Markdown begin with ordinary paragraph text (so a label may precede it on the line)?
fn starts_with_paragraph(md: &str) -> bool {
    let first = md.lines().next().unwrap_or("");
    let t = first.trim_start();
    if t.is_empty() || first.len() - t.len() >= 4 {
        return false;
    }
    !(t.starts_with("```")
        || t.starts_with("~~~")
        || t.starts_with('#')
        || t.starts_with('>')
        || t.starts_with('|')
        || t.starts_with(": ")
        || t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("+ ")
        || t == "-"
        || ordered_marker_end(t).is_some())
}

// ---------------------------------------------------------------------------
// Element classification
// ---------------------------------------------------------------------------

const DROP_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "button", "form", "input", "select",
    "textarea", "svg", "iframe", "object", "embed", "canvas", "head", "link", "meta", "footer",
    "dialog", "map", "area", "audio",
];

const DROP_CLASSES: &[&str] = &[
    "headerlink",
    "heading-anchor",
    "anchor-link",
    "hash-link",
    "anchorjs-link",
    "permalink",
    "copybtn",
    "copy-button",
    "copy-code-button",
    "clipboard-button",
    "code-block__header",
    "code-block__lang",
    "breadcrumb",
    "breadcrumbs",
    "wy-breadcrumbs",
    "rst-versions",
    "rst-footer-buttons",
    "edit-this-page",
    "edit-on-github",
    "edit-link",
    "toc",
    "table-of-contents",
    "toc-container",
    "on-this-page",
    "pagination-nav",
    "pager",
    "prev-next",
    "version-banner",
    "version-warning",
    "skip-link",
    "sidebar",
    "sr-only",
    "visually-hidden",
    "screen-reader-text",
    "last-updated",
];

const DROP_CLASS_PREFIXES: &[&str] = &["cookie", "feedback", "consent"];

/// Id prefixes of chrome containers (Mintlify and similar generators mark them by id).
const DROP_IDS: &[&str] = &[
    "sidebar",
    "navbar",
    "table-of-contents",
    "footer",
    "pagination",
    "cookie",
    "feedback",
];

/// Chrome that never belongs to page content, whatever the site.
pub fn is_boilerplate(el: &scraper::node::Element) -> bool {
    if DROP_TAGS.contains(&el.name()) {
        return true;
    }
    if el.attr("aria-hidden") == Some("true") {
        return true;
    }
    let role = el.attr("role");
    if el.attr("hidden").is_some() && role != Some("tabpanel") {
        return true;
    }
    if matches!(
        role,
        Some("navigation" | "search" | "banner" | "contentinfo" | "dialog" | "alertdialog")
    ) {
        return true;
    }
    if el
        .id()
        .is_some_and(|id| DROP_IDS.iter().any(|d| id.starts_with(d)))
    {
        return true;
    }
    el.classes()
        .any(|c| DROP_CLASSES.contains(&c) || DROP_CLASS_PREFIXES.iter().any(|p| c.starts_with(p)))
}

/// Text a permalink anchor shows instead of words.
fn is_permalink_glyph(t: &str) -> bool {
    matches!(t, "" | "¶" | "#" | "🔗" | "§" | "⚓" | "∞" | "link")
}

/// `<a href="#…">¶</a>` and friends: self-links that only show a glyph.
fn is_permalink(el: ElementRef<'_>) -> bool {
    let Some(href) = el.value().attr("href") else {
        return false;
    };
    if !href.starts_with('#') {
        return false;
    }
    let mut t = String::new();
    for piece in el.text() {
        t.push_str(piece.trim_matches(|c: char| {
            c.is_whitespace() || matches!(c, '\u{200b}' | '\u{200c}' | '\u{200d}' | '\u{feff}')
        }));
        if t.len() > 8 {
            return false;
        }
    }
    if t.is_empty() && el.descendent_elements().any(|d| d.value().name() == "img") {
        return false;
    }
    is_permalink_glyph(&t)
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

fn is_block_tag(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "body"
            | "center"
            | "details"
            | "div"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "header"
            | "hgroup"
            | "html"
            | "main"
            | "p"
            | "section"
            | "summary"
            | "caption"
            | "legend"
    )
}

fn has_class(el: ElementRef<'_>, class: &str) -> bool {
    el.value().has_class(class, CaseSensitivity::CaseSensitive)
}

const ADMONITION_KINDS: &[&str] = &[
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "danger",
    "attention",
    "error",
    "seealso",
    "deprecated",
    "info",
    "success",
    "todo",
    "versionadded",
    "versionchanged",
];

/// Is this element a callout/admonition box?
fn is_admonition(el: ElementRef<'_>) -> bool {
    el.value()
        .classes()
        .any(|c| matches!(c, "admonition" | "callout" | "alert" | "admonition-block"))
}

/// Label of an admonition taken from its classes (`callout-tip` → `Tip`).
fn admonition_class_label(el: ElementRef<'_>) -> Option<String> {
    for c in el.value().classes() {
        let kind = c
            .strip_prefix("callout-")
            .or_else(|| c.strip_prefix("alert-"))
            .or_else(|| c.strip_prefix("admonition-"))
            .unwrap_or(c);
        if ADMONITION_KINDS.contains(&kind) {
            let label = match kind {
                "seealso" => "See also".to_string(),
                "versionadded" => "New".to_string(),
                "versionchanged" => "Changed".to_string(),
                k => {
                    let mut cs = k.chars();
                    cs.next()
                        .map(|f| f.to_uppercase().collect::<String>() + cs.as_str())
                        .unwrap_or_default()
                }
            };
            return Some(label);
        }
    }
    None
}

fn is_admonition_title(el: ElementRef<'_>) -> bool {
    el.value().classes().any(|c| {
        matches!(c, "admonition-title" | "callout-title" | "alert-title") || c.ends_with("__title")
    })
}

/// Language of a code block from the usual markers on it, its `<code>` or its wrappers.
fn code_language(pre: ElementRef<'_>) -> String {
    fn from_el(el: ElementRef<'_>) -> Option<String> {
        let e = el.value();
        for a in ["data-language", "data-lang"] {
            if let Some(v) = e.attr(a) {
                let v = v.trim();
                if !v.is_empty() {
                    return Some(v.to_string());
                }
            }
        }
        for c in e.classes() {
            let lang = c
                .strip_prefix("language-")
                .or_else(|| c.strip_prefix("lang-"))
                .or_else(|| c.strip_prefix("highlight-"));
            if let Some(l) = lang {
                if !l.is_empty() && l != "source" {
                    return Some(l.to_string());
                }
            }
        }
        None
    }
    let own = pre
        .child_elements()
        .find(|c| c.value().name() == "code")
        .and_then(from_el)
        .or_else(|| from_el(pre));
    let found = own.or_else(|| {
        let mut node = pre.parent();
        for _ in 0..3 {
            let el = node.and_then(ElementRef::wrap)?;
            if let Some(l) = from_el(el) {
                return Some(l);
            }
            node = el.parent();
        }
        None
    });
    match found.as_deref() {
        None | Some("default" | "none" | "nohighlight" | "plaintext-none") => String::new(),
        Some(l) => l
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#' | '_' | '.'))
            .collect(),
    }
}

/// Text of a `<pre>` exactly as shown (line numbers and buttons left out).
fn pre_text(node: NodeRef<'_>, out: &mut String) {
    for child in node.children() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(e) => {
                if e.name() == "br" {
                    out.push('\n');
                } else if e.name() == "button"
                    || e.classes()
                        .any(|c| matches!(c, "linenos" | "lineno" | "line-number"))
                {
                    continue;
                } else {
                    pre_text(child, out);
                }
            }
            _ => {}
        }
    }
}

/// Tidy code text: unix newlines, no leading/trailing blank lines, at most two blank lines in a row.
fn tidy_code(raw: &str) -> String {
    let raw = raw.replace("\r\n", "\n");
    let mut out = String::with_capacity(raw.len());
    let mut blanks = 0usize;
    let mut started = false;
    for line in raw.split('\n') {
        let line = line.trim_end_matches(['\r', ' ', '\t']);
        if line.is_empty() {
            if started {
                blanks += 1;
            }
            continue;
        }
        if started {
            out.push('\n');
            for _ in 0..blanks.min(2) {
                out.push('\n');
            }
        }
        blanks = 0;
        started = true;
        out.push_str(line);
    }
    out
}

/// Visible text of an element: boilerplate and permalink glyphs left out, whitespace collapsed.
pub fn plain_text(el: ElementRef<'_>) -> String {
    fn walk(node: NodeRef<'_>, out: &mut String, depth: usize) {
        if depth >= MAX_DEPTH {
            // Too deep for recursion: all of the text, iteratively.
            for d in node.descendants() {
                if let Node::Text(t) = d.value() {
                    out.push_str(t);
                }
            }
            return;
        }
        for child in node.children() {
            match child.value() {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => {
                    if is_boilerplate(e) {
                        continue;
                    }
                    if let Some(c) = ElementRef::wrap(child) {
                        if e.name() == "a" && is_permalink(c) {
                            continue;
                        }
                    }
                    if e.name() == "br" {
                        out.push(' ');
                    }
                    walk(child, out, depth + 1);
                }
                _ => {}
            }
        }
    }
    let mut s = String::new();
    walk(*el, &mut s, 0);
    collapse_whitespace(&s)
}

// ---------------------------------------------------------------------------
// Converter
// ---------------------------------------------------------------------------

/// Converts subtrees of one document to Markdown; keeps heading-anchor state across calls.
pub struct Converter<'a, H: Hooks> {
    base: Option<Url>,
    hooks: H,
    skip: Vec<NodeRef<'a>>,
    anchors: Vec<HeadingAnchor>,
    /// Most recent `id` met in document order.
    last_id: &'a str,
    /// Enclosing elements with an `id`, with the number of headings seen when entered.
    id_stack: Vec<(&'a str, usize)>,
    headings_seen: usize,
    /// > 0 inside list items, quotes, admonitions, cells: headings become bold text.
    nest: u32,
    /// > 0 inside links, emphasis, headings and cells: blocks become spaces.
    inline_only: u32,
    in_table: u32,
    in_link: u32,
    in_strong: u32,
    in_em: u32,
    /// Elements open around the one being converted.
    depth: usize,
}

/// Deepest element nesting converted with its structure. Real documentation
/// content nests a few dozen levels; past this, an element's text is
/// written as plain text (read iteratively). Hostile pages nest thousands of
/// levels deep: without the bound the recursion overflows the stack and
/// nested lists and superscripts grow quadratically with the depth.
pub const MAX_DEPTH: usize = 96;

impl<'a, H: Hooks> Converter<'a, H> {
    /// Links and images resolve against `public_url`; when it does not parse they are kept as written.
    pub fn new(public_url: &str, hooks: H) -> Self {
        Converter {
            base: Url::parse(public_url).ok(),
            hooks,
            skip: Vec::new(),
            anchors: Vec::new(),
            last_id: "",
            id_stack: Vec::new(),
            headings_seen: 0,
            nest: 0,
            inline_only: 0,
            in_table: 0,
            in_link: 0,
            in_strong: 0,
            in_em: 0,
            depth: 0,
        }
    }

    /// Leave this element out wherever it is met (the title `<h1>`, lifted into a field).
    pub fn skip(&mut self, el: ElementRef<'a>) -> &mut Self {
        self.skip.push(*el);
        self
    }

    /// Convert `root` (the element itself and its subtree).
    pub fn convert(&mut self, root: ElementRef<'a>) -> Converted {
        self.convert_nodes(std::iter::once(*root))
    }

    /// Convert a run of sibling nodes (e.g. the paragraphs that describe one class member).
    pub fn convert_nodes(&mut self, nodes: impl IntoIterator<Item = NodeRef<'a>>) -> Converted {
        let mut out = Out::default();
        for n in nodes {
            self.walk(n, &mut out);
        }
        Converted {
            markdown: finalize(out.finish()),
            anchors: std::mem::take(&mut self.anchors),
        }
    }

    /// Resolve an href/src against the public URL.
    pub fn absolute(&self, href: &str) -> String {
        let href = href.trim();
        match &self.base {
            Some(b) => b
                .join(href)
                .map(String::from)
                .unwrap_or_else(|_| href.to_string()),
            None => href.to_string(),
        }
    }

    fn walk(&mut self, node: NodeRef<'a>, out: &mut Out) {
        match node.value() {
            Node::Text(t) => out.text(t, self.in_link > 0),
            Node::Element(_) => {
                if let Some(el) = ElementRef::wrap(node) {
                    if self.depth >= MAX_DEPTH {
                        // Too deep to keep structure: the text, iteratively.
                        for t in el.text() {
                            out.text(t, self.in_link > 0);
                        }
                        out.space = true;
                        return;
                    }
                    self.depth += 1;
                    self.element(el, out);
                    self.depth -= 1;
                }
            }
            _ => {}
        }
    }

    fn children(&mut self, el: ElementRef<'a>, out: &mut Out) {
        for c in el.children() {
            self.walk(c, out);
        }
    }

    fn brk(&mut self, out: &mut Out) {
        if self.inline_only > 0 {
            out.space = true;
        } else {
            out.block();
        }
    }

    fn element(&mut self, el: ElementRef<'a>, out: &mut Out) {
        if !self.skip.is_empty() && self.skip.contains(&*el) {
            return;
        }
        match self.hooks.action(el) {
            Action::Default => {}
            Action::Skip => return,
            Action::Heading {
                level,
                text,
                anchor,
            } => {
                if let Some(id) = el.value().id() {
                    self.last_id = id;
                }
                self.headings_seen += 1;
                self.emit_heading(level, HeadingText::Plain(&text), anchor, out);
                return;
            }
        }
        let e = el.value();
        if is_boilerplate(e) {
            return;
        }
        let id = e.id();
        if let Some(id) = id {
            self.last_id = id;
            self.id_stack.push((id, self.headings_seen));
        }
        self.dispatch(el, out);
        if id.is_some() {
            self.id_stack.pop();
        }
    }

    fn dispatch(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let name = el.value().name();
        if let Some(level) = heading_level(name) {
            return self.heading(el, level, out);
        }
        match name {
            "pre" => self.pre(el, out),
            "code" | "kbd" | "samp" | "tt" => self.inline_code(el, out),
            "a" => self.link(el, out),
            "strong" | "b" => self.emphasis(el, out, "**", true),
            "em" | "i" | "cite" | "var" | "dfn" => self.emphasis(el, out, "*", false),
            "s" | "del" | "strike" => {
                self.inline_only += 1;
                out.open("~~");
                self.children(el, out);
                out.close("~~", "~~");
                self.inline_only -= 1;
            }
            "img" => self.image(el, out),
            "video" => self.video(el, out),
            "br" => {
                if self.in_table > 0 {
                    out.raw("<br>");
                } else if self.inline_only > 0 {
                    out.space = true;
                } else if !out.s.is_empty() {
                    out.hard_break = true;
                }
            }
            "hr" => {
                if self.inline_only == 0 {
                    out.block();
                    out.raw("---");
                    out.block();
                }
            }
            "ul" | "ol" | "menu" => self.list(el, name == "ol", out),
            "table" => self.table(el, out),
            "blockquote" => self.container(el, out, None),
            "dl" => self.definition_list(el, out),
            "dt" | "dd" => {
                // Outside a <dl>: treat as plain blocks.
                self.brk(out);
                self.children(el, out);
                self.brk(out);
            }
            "li" => {
                self.brk(out);
                self.children(el, out);
                self.brk(out);
            }
            "q" => {
                out.text("“", false);
                self.children(el, out);
                out.text("”", false);
            }
            "sup" => {
                // `2<sup>32</sup>` is 2^32, not 232.
                let t = plain_text(el);
                if t.is_empty() {
                    return;
                }
                let bare = t.chars().all(char::is_alphanumeric);
                out.text(if bare { "^" } else { "^(" }, self.in_link > 0);
                self.children(el, out);
                if !bare {
                    out.text(")", self.in_link > 0);
                }
            }
            _ => {
                if name == "div" || name == "aside" || name == "section" {
                    if el.value().attr("role") == Some("doc-footnote") || has_class(el, "footnote")
                    {
                        return self.footnote(el, out);
                    }
                    if is_admonition(el) {
                        return self.admonition(el, out);
                    }
                    if has_class(el, "line-block") {
                        return self.line_block(el, out);
                    }
                    if self.tabs(el, out) {
                        return;
                    }
                }
                if name == "summary" {
                    self.brk(out);
                    self.emphasis(el, out, "**", true);
                    self.brk(out);
                } else if is_block_tag(name) {
                    self.brk(out);
                    self.children(el, out);
                    self.brk(out);
                } else {
                    self.children(el, out);
                }
            }
        }
    }

    fn heading_anchor(&self, el: ElementRef<'a>) -> String {
        if let Some(id) = el.value().id() {
            return id.to_string();
        }
        if let Some(&(id, seen)) = self.id_stack.last() {
            if seen == self.headings_seen {
                return id.to_string();
            }
        }
        self.last_id.to_string()
    }

    fn heading(&mut self, el: ElementRef<'a>, level: u8, out: &mut Out) {
        let anchor = self.heading_anchor(el);
        self.headings_seen += 1;
        self.emit_heading(level, HeadingText::Element(el), anchor, out);
    }

    fn emit_heading(
        &mut self,
        level: u8,
        text: HeadingText<'_, 'a>,
        anchor: String,
        out: &mut Out,
    ) {
        let mut sub = Out::default();
        self.inline_only += 1;
        match text {
            HeadingText::Plain(t) => sub.text(t, false),
            HeadingText::Element(el) => self.children(el, &mut sub),
        }
        self.inline_only -= 1;
        let mut md = sub.finish();
        if md.is_empty() {
            return;
        }
        if self.nest > 0 || self.inline_only > 0 {
            self.brk(out);
            if self.in_strong > 0 {
                out.raw(&md);
            } else {
                out.raw("**");
                out.s.push_str(&md);
                out.s.push_str("**");
            }
            self.brk(out);
            return;
        }
        let hashes = md.len() - md.trim_end_matches('#').len();
        if hashes > 0 && (hashes == md.len() || md[..md.len() - hashes].ends_with(' ')) {
            md.insert(md.len() - hashes, '\\');
        }
        out.block();
        let mut line = "#".repeat(usize::from(level.clamp(1, 6)));
        line.push(' ');
        line.push_str(&md);
        out.raw(&line);
        out.block();
        self.anchors.push(HeadingAnchor::from_id(anchor));
    }

    fn pre(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let mut raw = String::new();
        pre_text(*el, &mut raw);
        if self.inline_only > 0 {
            let c = collapse_whitespace(&raw);
            if !c.is_empty() {
                out.raw(&code_span(&c));
            }
            return;
        }
        let code = tidy_code(&raw);
        if code.is_empty() {
            return;
        }
        let lang = code_language(el);
        let fence = fence_for(&code);
        let mut md = String::with_capacity(code.len() + 2 * fence.len() + lang.len() + 2);
        md.push_str(&fence);
        md.push_str(&lang);
        md.push('\n');
        md.push_str(&code);
        md.push('\n');
        md.push_str(&fence);
        out.block();
        out.raw(&md);
        out.block();
    }

    fn inline_code(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let mut raw = String::new();
        pre_text(*el, &mut raw);
        let had_lead = raw.starts_with(char::is_whitespace);
        let had_trail = raw.ends_with(char::is_whitespace);
        let c = collapse_whitespace(&raw);
        if c.is_empty() {
            if had_lead || had_trail {
                out.space = true;
            }
            return;
        }
        if had_lead {
            out.space = true;
        }
        out.raw(&code_span(&c));
        if had_trail {
            out.space = true;
        }
    }

    fn emphasis(&mut self, el: ElementRef<'a>, out: &mut Out, mark: &str, strong: bool) {
        let already = if strong { self.in_strong } else { self.in_em } > 0;
        self.inline_only += 1;
        if already {
            self.children(el, out);
        } else {
            if strong {
                self.in_strong += 1;
            } else {
                self.in_em += 1;
            }
            out.open(mark);
            self.children(el, out);
            out.close(mark, mark);
            if strong {
                self.in_strong -= 1;
            } else {
                self.in_em -= 1;
            }
        }
        self.inline_only -= 1;
    }

    fn link(&mut self, el: ElementRef<'a>, out: &mut Out) {
        if is_permalink(el) {
            return;
        }
        let href = el.value().attr("href").map(str::trim).unwrap_or("");
        if href.is_empty()
            || href.to_ascii_lowercase().starts_with("javascript:")
            || self.in_link > 0
        {
            return self.children(el, out);
        }
        let url = self.absolute(href);
        self.inline_only += 1;
        self.in_link += 1;
        out.open("[");
        self.children(el, out);
        let mut close = String::with_capacity(url.len() + 4);
        close.push_str("](");
        push_link_target(&mut close, &url);
        close.push(')');
        out.close("[", &close);
        self.in_link -= 1;
        self.inline_only -= 1;
    }

    fn image(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let e = el.value();
        let Some(src) = e.attr("src").or_else(|| e.attr("data-src")).map(str::trim) else {
            return;
        };
        if src.is_empty() || src.starts_with("data:") {
            return;
        }
        let alt = collapse_whitespace(e.attr("alt").unwrap_or(""));
        let mut md = String::with_capacity(alt.len() + src.len() + 8);
        md.push_str("![");
        for c in alt.chars() {
            if matches!(c, '[' | ']' | '\\') {
                md.push('\\');
            }
            md.push(c);
        }
        md.push_str("](");
        push_link_target(&mut md, &self.absolute(src));
        md.push(')');
        out.raw(&md);
    }

    fn video(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let e = el.value();
        let src = e.attr("src").map(str::to_string).or_else(|| {
            el.child_elements()
                .find(|c| c.value().name() == "source")
                .and_then(|s| s.value().attr("src").map(str::to_string))
        });
        let Some(src) = src.filter(|s| !s.trim().is_empty()) else {
            return;
        };
        let label = collapse_whitespace(
            e.attr("aria-label")
                .or_else(|| e.attr("title"))
                .unwrap_or(""),
        );
        let mut sub = Out::default();
        sub.text(&format!("Video: {label}"), true);
        let mut md = String::new();
        md.push('[');
        md.push_str(sub.finish().trim_end_matches([':', ' ']));
        md.push_str("](");
        push_link_target(&mut md, &self.absolute(&src));
        md.push(')');
        self.brk(out);
        out.raw(&md);
        self.brk(out);
    }

    /// Render `el`'s children into a fresh writer, one nesting level deeper.
    fn render_nested(&mut self, el: ElementRef<'a>, tight: bool, skip_title: bool) -> String {
        let mut sub = if tight { Out::tight() } else { Out::default() };
        self.nest += 1;
        for c in el.children() {
            if skip_title {
                if let Some(ce) = ElementRef::wrap(c) {
                    if is_admonition_title(ce) {
                        continue;
                    }
                }
            }
            self.walk(c, &mut sub);
        }
        self.nest -= 1;
        sub.finish()
    }

    /// A block quote (optionally labelled, for admonitions).
    fn container(&mut self, el: ElementRef<'a>, out: &mut Out, label: Option<String>) {
        if self.inline_only > 0 {
            out.space = true;
            self.children(el, out);
            out.space = true;
            return;
        }
        let body = self.render_nested(el, false, label.is_some());
        let combined = match label {
            Some(l) if !l.is_empty() => {
                let mut lab = Out::default();
                lab.text(l.trim_end_matches([':', ' ']), false);
                let lab = format!("**{}:**", lab.finish());
                if body.is_empty() {
                    lab
                } else if starts_with_paragraph(&body) {
                    format!("{lab} {body}")
                } else {
                    format!("{lab}\n\n{body}")
                }
            }
            _ => body,
        };
        if combined.is_empty() {
            return;
        }
        out.block();
        out.raw(&prefix_lines(&combined, "> ", "> ", ">"));
        out.block();
    }

    fn admonition(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let label = el
            .child_elements()
            .find(|c| is_admonition_title(*c))
            .map(plain_text)
            .filter(|t| !t.is_empty())
            .or_else(|| admonition_class_label(el));
        self.container(el, out, label)
    }

    /// `[1] text` for a footnote (Sphinx/docutils: `span.label`, back-references dropped).
    fn footnote(&mut self, el: ElementRef<'a>, out: &mut Out) {
        let is_label = |c: ElementRef<'_>| has_class(c, "label") || has_class(c, "fn-label");
        let label: String = el
            .child_elements()
            .find(|c| is_label(*c))
            .map(|l| collapse_whitespace(&l.text().collect::<String>()))
            .unwrap_or_default();
        let mut sub = Out::default();
        self.nest += 1;
        for c in el.children() {
            if let Some(ce) = ElementRef::wrap(c) {
                if is_label(ce) || has_class(ce, "backrefs") {
                    continue;
                }
            }
            self.walk(c, &mut sub);
        }
        self.nest -= 1;
        let body = sub.finish();
        let mut lab = Out::default();
        lab.text(&label, true);
        let lab = lab.finish();
        let md = match (lab.is_empty(), body.is_empty()) {
            (true, _) => body,
            (false, true) => lab,
            (false, false) if starts_with_paragraph(&body) => format!("{lab} {body}"),
            (false, false) => format!("{lab}\n\n{body}"),
        };
        if self.inline_only > 0 {
            out.space = true;
            out.raw(&md.replace('\n', " "));
            out.space = true;
            return;
        }
        out.block();
        out.raw(&md);
        out.block();
    }

    fn line_block(&mut self, el: ElementRef<'a>, out: &mut Out) {
        self.brk(out);
        let mut first = true;
        for line in el.child_elements() {
            if !first {
                if self.in_table > 0 {
                    out.raw("<br>");
                } else if self.inline_only > 0 {
                    out.space = true;
                } else {
                    out.hard_break = true;
                }
            }
            first = false;
            if has_class(line, "line-block") {
                self.line_block(line, out);
            } else {
                self.children(line, out);
            }
        }
        self.brk(out);
    }

    /// ARIA tab sets (sphinx-tabs, most doc themes): each panel in turn, under its tab label.
    fn tabs(&mut self, el: ElementRef<'a>, out: &mut Out) -> bool {
        let mut tablist = None;
        let mut panels = Vec::new();
        for c in el.child_elements() {
            match c.value().attr("role") {
                Some("tablist") => tablist = Some(c),
                Some("tabpanel") => panels.push(c),
                _ => {}
            }
        }
        if panels.is_empty() || (tablist.is_none() && !has_class(el, "sphinx-tabs")) {
            return false;
        }
        let tabs: Vec<(Option<&str>, Option<&str>, String)> = tablist
            .map(|tl| {
                tl.descendent_elements()
                    .filter(|t| t.value().attr("role") == Some("tab"))
                    .map(|t| {
                        (
                            t.value().id(),
                            t.value().attr("aria-controls"),
                            plain_text(t),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (i, panel) in panels.iter().enumerate() {
            let p = panel.value();
            let label = tabs
                .iter()
                .find(|(id, _, _)| id.is_some() && *id == p.attr("aria-labelledby"))
                .or_else(|| {
                    tabs.iter()
                        .find(|(_, ctl, _)| ctl.is_some() && *ctl == p.id())
                })
                .or_else(|| tabs.get(i))
                .map(|(_, _, l)| l.as_str())
                .unwrap_or("");
            if let Some(id) = p.id() {
                self.last_id = id;
                self.id_stack.push((id, self.headings_seen));
            }
            if self.inline_only > 0 {
                out.space = true;
                out.text(label, self.in_link > 0);
                out.space = true;
                self.children(*panel, out);
                out.space = true;
            } else {
                let mut sub = Out::default();
                self.children(*panel, &mut sub);
                let body = sub.finish();
                out.block();
                if !label.is_empty() {
                    let mut lab = Out::default();
                    lab.text(label, false);
                    out.raw(&format!("**{}**", lab.finish()));
                    if body.starts_with("```") || body.starts_with("~~~") {
                        out.line();
                    } else {
                        out.block();
                    }
                }
                out.raw(&body);
                out.block();
            }
            if p.id().is_some() {
                self.id_stack.pop();
            }
        }
        true
    }

    fn list(&mut self, el: ElementRef<'a>, ordered: bool, out: &mut Out) {
        if self.in_table > 0 || self.inline_only > 0 {
            let mut first = true;
            for li in el.child_elements() {
                if self.in_table > 0 {
                    if !first {
                        out.raw("<br>");
                    }
                    out.raw(if ordered { "1." } else { "-" });
                    out.space = true;
                } else {
                    out.space = true;
                }
                first = false;
                self.children(li, out);
            }
            out.space = true;
            return;
        }
        let mut n: u64 = el
            .value()
            .attr("start")
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1);
        let mut items: Vec<String> = Vec::new();
        let mut loose = false;
        for child in el.children() {
            let Some(ce) = ElementRef::wrap(child) else {
                continue;
            };
            if self.skip.contains(&*ce) || is_boilerplate(ce.value()) {
                continue;
            }
            let name = ce.value().name();
            if name == "li" {
                if let Some(id) = ce.value().id() {
                    self.last_id = id;
                }
                let md = self.render_nested(ce, true, false);
                if md.is_empty() {
                    continue;
                }
                loose |= md.contains("\n\n");
                let marker = if ordered {
                    let m = format!("{n}. ");
                    n += 1;
                    m
                } else {
                    "- ".to_string()
                };
                let indent = " ".repeat(marker.len());
                items.push(prefix_lines(&md, &marker, &indent, ""));
            } else {
                // A list nested directly in a list (invalid but common): continue the last item.
                let mut sub = Out::tight();
                self.nest += 1;
                self.element(ce, &mut sub);
                self.nest -= 1;
                let md = sub.finish();
                if md.is_empty() {
                    continue;
                }
                match items.last_mut() {
                    Some(last) => {
                        last.push('\n');
                        last.push_str(&prefix_lines(&md, "  ", "  ", ""));
                    }
                    None => items.push(md),
                }
            }
        }
        if items.is_empty() {
            return;
        }
        let md = items.join(if loose { "\n\n" } else { "\n" });
        if out.tight {
            out.line();
        } else {
            out.block();
        }
        out.raw(&md);
        out.block();
    }

    fn definition_list(&mut self, el: ElementRef<'a>, out: &mut Out) {
        if self.inline_only > 0 {
            out.space = true;
            self.children(el, out);
            out.space = true;
            return;
        }
        for child in el.child_elements() {
            if self.skip.contains(&*child) || is_boilerplate(child.value()) {
                continue;
            }
            if let Some(id) = child.value().id() {
                self.last_id = id;
            }
            match child.value().name() {
                "dt" => {
                    let mut sub = Out::default();
                    self.nest += 1;
                    self.inline_only += 1;
                    self.in_strong += 1;
                    self.children(child, &mut sub);
                    self.in_strong -= 1;
                    self.inline_only -= 1;
                    self.nest -= 1;
                    let t = sub.finish();
                    if !t.is_empty() {
                        out.block();
                        out.raw(&format!("**{t}**"));
                        out.line();
                    }
                }
                "dd" => {
                    let md = self.render_nested(child, false, false);
                    if md.is_empty() {
                        continue;
                    }
                    let md = if starts_with_paragraph(&md) {
                        prefix_lines(&md, ": ", "  ", "")
                    } else {
                        if out.newlines == 1 {
                            out.block();
                        }
                        md
                    };
                    out.raw(&md);
                    out.block();
                }
                "div" => {
                    // <dl><div><dt/><dd/></div></dl> (HTML allows grouping).
                    self.definition_list(child, out);
                }
                _ => self.element(child, out),
            }
        }
        out.block();
    }

    fn table(&mut self, el: ElementRef<'a>, out: &mut Out) {
        if self.in_table > 0 || self.inline_only > 0 {
            // Nested table: flatten cells to text.
            out.space = true;
            for row in table_rows(el) {
                for cell in row.child_elements() {
                    self.children(cell, out);
                    out.space = true;
                }
            }
            return;
        }
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut header_first = false;
        let mut caption = None;
        for c in el.child_elements() {
            if c.value().name() == "caption" {
                caption = Some(c);
            }
        }
        for (ri, (row, in_head)) in table_rows_with_section(el).into_iter().enumerate() {
            let mut cells = Vec::new();
            let mut all_th = true;
            for cell in row.child_elements() {
                let name = cell.value().name();
                if name != "td" && name != "th" {
                    continue;
                }
                all_th &= name == "th";
                let md = self.cell(cell);
                let span: usize = cell
                    .value()
                    .attr("colspan")
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(1usize)
                    .clamp(1, 50);
                cells.push(md);
                for _ in 1..span {
                    cells.push(String::new());
                }
            }
            if cells.is_empty() {
                continue;
            }
            if ri == 0 && rows.is_empty() {
                header_first = in_head || all_th;
            }
            rows.push(cells);
        }
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        // Rows are padded to the widest so the Markdown reads as a grid,
        // unless padding would outweigh the cells themselves (one wide row
        // over many short ones): GFM fills missing cells by itself, and the
        // output stays linear in the input.
        let cells: usize = rows.iter().map(Vec::len).sum();
        let pad_to = |r: &[String]| {
            if cols * rows.len() <= 4 * cells + 64 {
                cols
            } else {
                r.len()
            }
        };
        let padded: Vec<usize> = rows.iter().map(|r| pad_to(r)).collect();
        let mut md = String::new();
        if let Some(cap) = caption {
            let t = self.cell(cap);
            if !t.is_empty() {
                md.push_str(&t);
                md.push_str("\n\n");
            }
        }
        let mut body = rows.into_iter().zip(padded);
        let header: Vec<String> = if header_first {
            body.next().map(|(r, _)| r).unwrap_or_default()
        } else {
            self.hooks.table_header(el, cols).unwrap_or_default()
        };
        push_row(&mut md, &header, cols);
        md.push_str("\n|");
        for _ in 0..cols {
            md.push_str(" --- |");
        }
        for (r, width) in body {
            md.push('\n');
            push_row(&mut md, &r, width);
        }
        out.block();
        out.raw(&md);
        out.block();
    }

    /// One table cell as single-line Markdown with `|` escaped.
    fn cell(&mut self, cell: ElementRef<'a>) -> String {
        let mut sub = Out::default();
        self.nest += 1;
        self.in_table += 1;
        self.inline_only += 1;
        self.children(cell, &mut sub);
        self.inline_only -= 1;
        self.in_table -= 1;
        self.nest -= 1;
        let md = sub.finish();
        let mut s = String::with_capacity(md.len() + 4);
        for (i, line) in md.split('\n').filter(|l| !l.trim().is_empty()).enumerate() {
            if i > 0 {
                s.push_str("<br>");
            }
            s.push_str(line.trim_end_matches('\\').trim());
        }
        s.replace('|', "\\|")
    }
}

enum HeadingText<'t, 'a> {
    Plain(&'t str),
    Element(ElementRef<'a>),
}

fn push_link_target(md: &mut String, url: &str) {
    let balanced = {
        let mut depth = 0i32;
        let mut ok = true;
        for c in url.chars() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth < 0 {
                        ok = false;
                    }
                }
                _ => {}
            }
        }
        ok && depth == 0
    };
    if url.contains([' ', '<', '>']) || !balanced {
        md.push('<');
        md.push_str(&url.replace('<', "%3C").replace('>', "%3E"));
        md.push('>');
    } else {
        md.push_str(url);
    }
}

fn push_row(md: &mut String, cells: &[String], cols: usize) {
    md.push('|');
    for i in 0..cols {
        let c = cells.get(i).map(String::as_str).unwrap_or("");
        md.push(' ');
        md.push_str(c);
        if !c.is_empty() {
            md.push(' ');
        }
        md.push('|');
    }
}

fn table_rows(table: ElementRef<'_>) -> Vec<ElementRef<'_>> {
    table_rows_with_section(table)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// Rows of a table (not of nested tables), each with whether it sits in `<thead>`.
fn table_rows_with_section(table: ElementRef<'_>) -> Vec<(ElementRef<'_>, bool)> {
    let mut rows = Vec::new();
    for c in table.child_elements() {
        match c.value().name() {
            "tr" => rows.push((c, false)),
            "thead" | "tbody" | "tfoot" => {
                let head = c.value().name() == "thead";
                rows.extend(
                    c.child_elements()
                        .filter(|r| r.value().name() == "tr")
                        .map(|r| (r, head)),
                );
            }
            _ => {}
        }
    }
    rows
}

/// Final tidy-up: no trailing spaces on lines outside code, no runs of more than two blank lines.
fn finalize(md: String) -> String {
    if !md.contains("\n\n\n\n") {
        return md;
    }
    let mut out = String::with_capacity(md.len());
    let mut blanks = 0;
    for (i, line) in md.split('\n').enumerate() {
        if line.trim().is_empty() {
            blanks += 1;
            if blanks > 2 {
                continue;
            }
        } else {
            blanks = 0;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

// ---------------------------------------------------------------------------
// Page-level helpers shared by the adapters
// ---------------------------------------------------------------------------

/// Convert `root` with the generic rules only.
pub fn to_markdown(root: ElementRef<'_>, public_url: &str) -> Converted {
    Converter::new(public_url, NoHooks).convert(root)
}

/// `<meta name="description">`, else `og:description`, trimmed; `None` when absent or blank.
pub fn meta_description(doc: &Html) -> Option<String> {
    [&*SEL_META_DESC, &*SEL_OG_DESC].into_iter().find_map(|s| {
        doc.select(s)
            .filter_map(|m| m.value().attr("content"))
            .map(collapse_whitespace)
            .find(|d| !d.is_empty())
    })
}

/// Description from the first substantial paragraph under `root` (plain text, first sentence).
pub fn description_from_paragraphs(
    root: ElementRef<'_>,
    accept: impl Fn(ElementRef<'_>) -> bool,
    max: usize,
) -> String {
    let substantial = |t: &String| t.chars().filter(|c| c.is_alphanumeric()).count() >= 3;
    root.select(&SEL_P)
        .filter(|p| accept(*p))
        .map(plain_text)
        .find(substantial)
        .map(|t| first_sentence(&t, max))
        .unwrap_or_default()
}

/// Is `el` inside an element (below `root`) that is not running text: list, table, admonition, quote?
pub fn in_aside_block(el: ElementRef<'_>, root: ElementRef<'_>) -> bool {
    let mut node = el.parent();
    while let Some(n) = node {
        if n == *root {
            return false;
        }
        if let Some(e) = ElementRef::wrap(n) {
            let name = e.value().name();
            if matches!(
                name,
                "li" | "td" | "th" | "blockquote" | "dd" | "dt" | "figure" | "table"
            ) || is_admonition(e)
                || is_boilerplate(e.value())
            {
                return true;
            }
        }
        node = n.parent();
    }
    false
}

/// The first element the source's `content` selector, then one of the
/// adapter's `roots`, selects, in order of preference; a `NoContent` error
/// naming `what` was looked for otherwise.
pub fn content_root<'a>(
    doc: &'a Html,
    rules: &PageRules,
    roots: &[Selector],
    public_url: &str,
    what: &str,
) -> Result<ElementRef<'a>, NormalizeError> {
    rules
        .content
        .iter()
        .chain(roots)
        .find_map(|s| doc.select(s).next())
        .ok_or_else(|| NormalizeError::NoContent {
            url: public_url.to_string(),
            why: format!("no {what}"),
        })
}

/// The content's `<h1>` (the page title, kept out of the body) and the
/// Markdown of `root` without it.
/// Elements the source's `remove` selectors match are left out.
pub fn convert_without_h1<'a, H: Hooks>(
    root: ElementRef<'a>,
    public_url: &str,
    hooks: H,
    rules: &PageRules,
) -> (Option<ElementRef<'a>>, Converted) {
    let h1 = root.select(&SEL_H1).next();
    let mut conv = Converter::new(public_url, hooks);
    if let Some(h) = h1 {
        conv.skip(h);
    }
    for sel in &rules.remove {
        for el in root.select(sel) {
            conv.skip(el);
        }
    }
    (h1, conv.convert(root))
}

/// Assemble a normalized page; a page with neither title nor body is
/// `NoContent` (`empty` says which element was empty).
pub fn finish(
    title: String,
    description: String,
    converted: Converted,
    public_url: &str,
    empty: &str,
) -> Result<Normalized, NormalizeError> {
    if title.is_empty() && converted.markdown.is_empty() {
        return Err(NormalizeError::NoContent {
            url: public_url.to_string(),
            why: format!("{empty} is empty"),
        });
    }
    Ok(Normalized::new(
        title,
        description,
        converted.markdown,
        converted.anchors,
    ))
}

/// Generic page: content from `main article`, else `<main>`, `[role=main]`, `#content-area`,
/// `<article>`, `#content`, and `<body>` as the last resort.
///
/// Title is the first `<h1>` of the content (left out of the body), else `<title>`;
/// description is the meta description, else the first sentence of the first paragraph.
pub fn normalize(
    body: &str,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    let doc = Html::parse_document(body);
    let root = content_root(
        &doc,
        rules,
        &SEL_ROOTS,
        public_url,
        "<main>, <article> or <body>",
    )?;
    let (h1, converted) = convert_without_h1(root, public_url, NoHooks, rules);
    let title = h1
        .map(plain_text)
        .filter(|t| !t.is_empty())
        .or_else(|| doc.select(&SEL_TITLE).next().map(plain_text))
        .unwrap_or_default();
    let description = meta_description(&doc)
        .unwrap_or_else(|| description_from_paragraphs(root, |p| !in_aside_block(p, root), 200));
    finish(
        title,
        cut_marked(&description, 200),
        converted,
        public_url,
        "content element",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(html: &str) -> Converted {
        let doc = Html::parse_document(html);
        let body = doc.select(&SEL_BODY).next().expect("body");
        to_markdown(body, "https://example.com/docs/guide/page.html")
    }

    #[test]
    fn table_with_pipes_and_header() {
        let c = md("<table><thead><tr><th>Op</th><th>Meaning</th></tr></thead>\
             <tbody><tr><td><code>a|b</code></td><td>either <em>a</em> or b</td></tr>\
             <tr><td>x</td></tr></tbody></table>");
        assert_eq!(
            c.markdown,
            "| Op | Meaning |\n| --- | --- |\n| `a\\|b` | either *a* or b |\n| x | |"
        );
    }

    #[test]
    fn headerless_table_gets_empty_header() {
        let c = md("<table><tr><td><p>int</p></td><td><p>x</p></td></tr></table>");
        assert_eq!(c.markdown, "| | |\n| --- | --- |\n| int | x |");
    }

    #[test]
    fn nested_lists() {
        let c = md(
            "<ul><li>one<ul><li>one.a</li><li>one.b<ol><li>deep</li></ol></li></ul></li>\
             <li><p>two</p></li></ul><ol start=\"9\"><li>nine</li><li>ten</li></ol>",
        );
        assert_eq!(
            c.markdown,
            "- one\n  - one.a\n  - one.b\n    1. deep\n- two\n\n9. nine\n10. ten"
        );
    }

    #[test]
    fn code_tabs_become_labelled_fences() {
        let c = md(r#"<div class="sphinx-tabs docutils container">
<div role="tablist"><button role="tab" id="t1" aria-controls="p1">GDScript</button><button role="tab" id="t2" aria-controls="p2">C#</button></div>
<div role="tabpanel" id="p1" aria-labelledby="t1"><div class="highlight-gdscript notranslate"><div class="highlight"><pre><span class="k">func</span> <span>_ready</span>():
    pass
</pre></div></div></div>
<div role="tabpanel" id="p2" aria-labelledby="t2" hidden="true"><div class="highlight-csharp notranslate"><div class="highlight"><pre>public override void _Ready() { }
</pre></div></div></div></div>"#);
        assert_eq!(
            c.markdown,
            "**GDScript**\n```gdscript\nfunc _ready():\n    pass\n```\n\n**C#**\n```csharp\npublic override void _Ready() { }\n```"
        );
    }

    #[test]
    fn admonition_keeps_label() {
        let c = md(
            r#"<div class="admonition note"><p class="admonition-title">Note</p>
<p>Mind the <code>gap</code>.</p><p>Second.</p></div>
<div class="callout callout-warning" role="note"><p>No title here.</p></div>"#,
        );
        assert_eq!(
            c.markdown,
            "> **Note:** Mind the `gap`.\n>\n> Second.\n\n> **Warning:** No title here."
        );
    }

    #[test]
    fn relative_links_and_images_become_absolute() {
        let c = md(
            r##"<p>See <a href="../api/errors.html#codes">error <strong>codes</strong></a>,
<a href="/v3.2/cli">the CLI</a>, <a href="#local">here</a> and <img src="img/a.png" alt="A [x]"></p>"##,
        );
        assert_eq!(
            c.markdown,
            "See [error **codes**](https://example.com/docs/api/errors.html#codes), \
             [the CLI](https://example.com/v3.2/cli), \
             [here](https://example.com/docs/guide/page.html#local) and \
             ![A \\[x\\]](https://example.com/docs/guide/img/a.png)"
        );
    }

    #[test]
    fn headings_ids_and_permalinks() {
        let c = md(
            r##"<section id="intro"><span id="doc-intro"></span><h2>Intro<a class="headerlink" href="#intro">¶</a></h2>
<p>x</p><h3>No id</h3><h3 id="own">Own <a class="heading-anchor" href="#own">#</a></h3></section>"##,
        );
        assert_eq!(c.markdown, "## Intro\n\nx\n\n### No id\n\n### Own");
        assert_eq!(c.anchors, vec!["intro", "doc-intro", "own"]);
    }

    #[test]
    fn drops_chrome_and_escapes() {
        let c = md(
            r#"<nav>menu</nav><script>x()</script><div class="feedback-widget">Was this helpful?</div>
<p># not a heading, 2 * 3 and snake_case and _private and &lt;div&gt;</p><button>Copy</button>
<pre><code class="language-rust">let a = "```";</code></pre>"#,
        );
        assert_eq!(
            c.markdown,
            "\\# not a heading, 2 * 3 and snake_case and \\_private and \\<div>\n\n````rust\nlet a = \"```\";\n````"
        );
    }

    #[test]
    fn superscripts_keep_their_meaning() {
        let c = md("<p>less than 2<sup>32</sup>, or x<sup>n + 1</sup></p>");
        assert_eq!(c.markdown, "less than 2^32, or x^(n + 1)");
    }

    #[test]
    fn definition_list_and_quote() {
        let c = md(
            "<dl><dt>term<span class=\"colon\">:</span></dt><dd><p>meaning</p></dd></dl>\
             <blockquote><p>quoted</p><ul><li>item</li></ul></blockquote>",
        );
        assert_eq!(c.markdown, "**term:**\n: meaning\n\n> quoted\n>\n> - item");
    }

    #[test]
    fn first_sentence_rules() {
        assert_eq!(
            first_sentence("Use e.g. this. Then that.", 200),
            "Use e.g. this."
        );
        assert_eq!(
            first_sentence("Version 3.5 is out! Yes.", 200),
            "Version 3.5 is out!"
        );
        let long = "word ".repeat(80);
        let s = first_sentence(&long, 200);
        assert!(s.chars().count() <= 200 && s.ends_with('…'));
    }
}
