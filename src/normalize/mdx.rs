//! MDX → plain Markdown, shared by the Markdown-alternate families.
//!
//! Mintlify, Cursor and Astro sites serve their pages' source: Markdown mixed
//! with JSX components (`<Note>`, `<Steps>`, `<Tabs>` …), raw HTML, JSX
//! comments and `export const` program code. Agents and the search index want
//! plain Markdown, so every component becomes the Markdown that reads like what
//! the site shows, and nothing inside fenced code is ever touched.
//!
//! The conversion is a small parser, not regex substitution: the body is cut
//! into text, inline code, fenced code and tags; tags are nested into a tree;
//! the tree is rendered back to Markdown. Markdown inside components is
//! indented in the source (MDX has no indented code blocks), so every
//! component's content is dedented by its common indentation before it is
//! placed, re-indented to the component's own column (list items keep their
//! content).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use super::{NormalizeError, Normalized};
use crate::markdown::{
    atx_headings, code_span, decode_entities, fence_opener, fenced, heading_text, FenceLine,
    FenceTracker,
};
use crate::model::HeadingAnchor;
use crate::util::collapse_whitespace;

/// Renders one component of a family's library; `None` leaves the element
/// to the next renderer, and finally to plain HTML rendering.
pub(crate) type ComponentRenderer = fn(&Renderer, &Elem) -> Option<Out>;

/// What sets one site family's MDX apart. Each family adapter defines its
/// own and hands it to [`finish`]: this module knows no family by name, so
/// the adapters depend on it and never the other way round.
#[derive(Clone, Copy)]
pub(crate) struct Dialect {
    /// Heading levels the site's generator gives ids to.
    pub anchored_levels: (u8, u8),
    /// Whether a raw HTML heading without `id` gets a slug like a Markdown
    /// one (Astro) or stays an unanchored bold line (Mintlify).
    pub slug_html_headings: bool,
    /// The component renderers, tried in order.
    pub components: &'static [ComponentRenderer],
}

/// Title and description lifted from a page's head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub title: String,
    pub description: String,
}

/// Marks an explicit heading id inside a heading line until [`take_anchors`]
/// moves it into [`Normalized::anchors`]. Private-use code points never
/// occur in documentation text.
const ID_OPEN: char = '\u{E000}';
const ID_CLOSE: char = '\u{E001}';

/// A heading line carrying the id the live page gives it.
pub(crate) fn heading_with_id(level: usize, text: &str, id: &str) -> String {
    let hashes = "#".repeat(level.clamp(1, 6));
    if id.is_empty() {
        format!("{hashes} {text}")
    } else {
        format!("{hashes} {text}{ID_OPEN}{id}{ID_CLOSE}")
    }
}

// ---------------------------------------------------------------------------
// Entry points used by the family adapters

/// Line endings and BOM, so the parsers only ever see `\n`.
pub(crate) fn prepare(body: &str) -> String {
    let body = body.strip_prefix('\u{feff}').unwrap_or(body);
    if body.contains('\r') {
        body.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        body.to_string()
    }
}

/// Convert an MDX body (header already removed) and assemble the page.
pub(crate) fn finish(
    header: Header,
    body: &str,
    public_url: &str,
    dialect: Dialect,
) -> Result<Normalized, NormalizeError> {
    let markdown = convert(body, public_url, dialect);
    let (lo, hi) = dialect.anchored_levels;
    let (markdown, anchors) = take_anchors(&markdown, lo..=hi);
    let mut title = header.title;
    if title.is_empty() {
        if let Some(h) = atx_headings(&markdown).first() {
            title = heading_text(&h.inline);
        }
    }
    if title.is_empty() && markdown.is_empty() {
        return Err(NormalizeError::NoContent {
            url: public_url.to_string(),
            why: "empty Markdown body".to_string(),
        });
    }
    if title.is_empty() {
        return Err(NormalizeError::NoContent {
            url: public_url.to_string(),
            why: "no title (no `# heading`, front matter or meta export)".to_string(),
        });
    }
    Ok(Normalized::new(
        title,
        header.description,
        markdown,
        anchors,
    ))
}

/// MDX → Markdown with absolute links; heading-id markers still inside.
pub(crate) fn convert(body: &str, public_url: &str, dialect: Dialect) -> String {
    let (nodes, exports) = parse(body);
    let r = Renderer {
        dialect,
        exports: &exports,
    };
    let md = r.render_nodes(&nodes, true);
    let md = tidy(&md);
    let md = absolutize_links(&md, public_url);
    md.trim().to_string()
}

/// Split the page head off the body: YAML front matter, a Cursor-style
/// `export const meta = {title, description};`, the `# Title` line and the
/// `> description` blockquote right under it, in whatever order they come.
pub(crate) fn take_header(text: &str) -> (Header, String) {
    let mut header = Header::default();
    let mut meta = Header::default();
    let mut rest: &str = text;
    loop {
        rest = skip_blank_lines(rest);
        if let Some(after) = rest.strip_prefix("---\n") {
            // Front matter: up to the next `---` line.
            let (yaml, tail) = match after.find("\n---") {
                Some(i) => {
                    let tail = &after[i + 4..];
                    let tail = tail.split_once('\n').map(|x| x.1).unwrap_or("");
                    (&after[..i], tail)
                }
                None => break,
            };
            if let Ok(serde_yaml::Value::Mapping(m)) =
                serde_yaml::from_str::<serde_yaml::Value>(yaml)
            {
                let get = |k: &str| {
                    m.get(k)
                        .and_then(|v| v.as_str())
                        .map(|s| s.trim().to_string())
                };
                meta.title = get("title")
                    .or_else(|| get("sidebarTitle"))
                    .unwrap_or(meta.title);
                meta.description = get("description").unwrap_or(meta.description);
            }
            rest = tail;
            continue;
        }
        if let Some(caps) = META_EXPORT.captures(rest) {
            let start = caps.get(0).map_or(0, |m| m.end());
            let mut p = JsParser::new(rest, start);
            if let Some(Js::Obj(fields)) = p.value() {
                for (k, v) in fields {
                    if let Js::Str(s) = v {
                        match k.as_str() {
                            "title" => meta.title = s.trim().to_string(),
                            "description" => meta.description = s.trim().to_string(),
                            _ => {}
                        }
                    }
                }
                let end = p.pos;
                let tail = &rest[end..];
                rest = tail.split_once('\n').map(|x| x.1).unwrap_or("");
                continue;
            }
            // Not a literal: fall back to the closing line.
            match rest.find("\n};") {
                Some(i) => {
                    rest = rest[i + 3..].split_once('\n').map(|x| x.1).unwrap_or("");
                    continue;
                }
                None => break,
            }
        }
        if header.title.is_empty() {
            let first = rest.lines().next().unwrap_or("");
            if let Some((1, text)) = crate::markdown::parse_atx(first) {
                if !first.starts_with(' ') {
                    header.title = heading_text(&text);
                    rest = rest.split_once('\n').map(|x| x.1).unwrap_or("");
                    // Description: a blockquote right under the title.
                    let after = skip_blank_lines(rest);
                    if after.starts_with('>') {
                        let mut lines = Vec::new();
                        let mut consumed = 0;
                        for line in after.split_inclusive('\n') {
                            if !line.starts_with('>') {
                                break;
                            }
                            consumed += line.len();
                            lines.push(line.trim_start_matches('>').trim().to_string());
                        }
                        let joined = lines.join(" ");
                        header.description = heading_text(joined.trim());
                        rest = &after[consumed..];
                    }
                    continue;
                }
            }
        }
        break;
    }
    if header.title.is_empty() {
        header.title = heading_text(&meta.title);
    }
    if header.description.is_empty() {
        header.description = heading_text(&meta.description);
    }
    (header, rest.to_string())
}

static META_EXPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^export\s+const\s+meta\s*=\s*").expect("static regex"));

fn skip_blank_lines(mut s: &str) -> &str {
    loop {
        match s.split_once('\n') {
            Some((line, tail)) if line.trim().is_empty() => s = tail,
            _ => {
                if s.trim().is_empty() {
                    return "";
                }
                return s;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Tree

/// An attribute value as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attr {
    Str(String),
    /// The source of a `{…}` expression, braces removed.
    Expr(String),
    Flag,
}

/// A component or HTML element with its content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Elem {
    pub name: String,
    pub attrs: Vec<(String, Attr)>,
    pub children: Vec<Node>,
    /// Only whitespace precedes the tag on its line.
    pub line_start: bool,
}

impl Elem {
    /// A string attribute (`a="x"`, `a={"x"}`), entities decoded.
    pub(crate) fn attr(&self, key: &str) -> Option<String> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Attr::Str(s) => Some(decode_entities(s, false).into_owned()),
                Attr::Expr(e) => match JsParser::new(e, 0).value() {
                    Some(Js::Str(s)) => Some(s),
                    Some(Js::Num(n)) => Some(n),
                    _ => None,
                },
                Attr::Flag => None,
            })
    }

    /// The raw source of an expression attribute (`a={…}`).
    pub(crate) fn expr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Attr::Expr(e) => Some(e.as_str()),
                _ => None,
            })
    }

    /// A boolean attribute: present bare, or `={true}`/`="true"`.
    pub(crate) fn flag(&self, key: &str) -> bool {
        self.attrs.iter().any(|(k, v)| {
            k == key
                && match v {
                    Attr::Flag => true,
                    Attr::Str(s) => s != "false",
                    Attr::Expr(e) => e.trim() != "false",
                }
        })
    }

    fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .or_else(|| self.attr("className"))
            .is_some_and(|c| c.split_whitespace().any(|x| x == class))
    }
}

/// A piece of the parsed body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// Markdown text as written (indentation included).
    Text(String),
    /// An inline code span, backticks included.
    Code(String),
    /// A whole fenced code block, from the opener's line start to after the
    /// closing line; always closed.
    Fence(String),
    Elem(Elem),
}

enum Tok {
    Text(String),
    Code(String),
    Fence(String),
    /// The element, whether it closes itself, and its source text.
    Open(Elem, bool, String),
    Close(String),
}

const VOID: &[&str] = &[
    "br", "hr", "img", "input", "source", "wbr", "col", "meta", "link", "area", "embed", "param",
    "track",
];

/// HTML elements recognised as tags; any other lower-case `<word>` is text
/// (`<session-id>` placeholders in prose).
static HTML_TAGS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    [
        "a",
        "abbr",
        "article",
        "aside",
        "audio",
        "b",
        "blockquote",
        "br",
        "button",
        "canvas",
        "caption",
        "center",
        "cite",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "dfn",
        "div",
        "dl",
        "dt",
        "em",
        "embed",
        "figcaption",
        "figure",
        "font",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "i",
        "iframe",
        "img",
        "input",
        "ins",
        "kbd",
        "label",
        "li",
        "main",
        "mark",
        "nav",
        "noscript",
        "object",
        "ol",
        "option",
        "p",
        "picture",
        "pre",
        "q",
        "s",
        "samp",
        "script",
        "section",
        "select",
        "small",
        "source",
        "span",
        "strike",
        "strong",
        "style",
        "sub",
        "summary",
        "sup",
        "svg",
        "table",
        "tbody",
        "td",
        "template",
        "textarea",
        "tfoot",
        "th",
        "thead",
        "time",
        "tr",
        "track",
        "tt",
        "u",
        "ul",
        "var",
        "video",
        "wbr",
        "path",
        "g",
        "circle",
        "rect",
        "line",
        "polyline",
        "polygon",
        "use",
        "astro-island",
        "astro-slot",
    ]
    .into_iter()
    .collect()
});

/// Elements whose whole content is program or drawing, skipped unparsed.
const RAW_SKIP: &[&str] = &["style", "script", "svg", "template"];

/// Parse a body into nodes; also returns the literal values of `export const`
/// declarations (Astro pages keep table data there).
pub(crate) fn parse(src: &str) -> (Vec<Node>, HashMap<String, Js>) {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        pos: 0,
        toks: Vec::new(),
        text: String::new(),
        exports: HashMap::new(),
    };
    lx.run();
    let exports = std::mem::take(&mut lx.exports);
    (build_tree(lx.toks), exports)
}

/// Nest tokens into elements. A tag that is never closed is not a container:
/// a component name stays as the text it was (`Promise<T>` in prose), an HTML
/// tag is dropped, and what followed it stays where it was.
fn build_tree(toks: Vec<Tok>) -> Vec<Node> {
    fn push(parent: &mut Vec<Node>, n: Node) {
        if let (Node::Text(t), Some(Node::Text(prev))) = (&n, parent.last_mut()) {
            prev.push_str(t);
            return;
        }
        parent.push(n);
    }
    /// Pop the top element, closed (`closed`) or abandoned.
    fn pop(stack: &mut Vec<(Elem, String)>, closed: bool) {
        let Some((done, raw)) = stack.pop() else {
            return;
        };
        let Some((parent, _)) = stack.last_mut() else {
            return;
        };
        if closed {
            push(&mut parent.children, Node::Elem(done));
            return;
        }
        if done.name.starts_with(|c: char| c.is_ascii_uppercase()) {
            push(&mut parent.children, Node::Text(raw));
        }
        for c in done.children {
            push(&mut parent.children, c);
        }
    }
    let root = Elem {
        name: "#root".into(),
        attrs: Vec::new(),
        children: Vec::new(),
        line_start: true,
    };
    let mut stack: Vec<(Elem, String)> = vec![(root, String::new())];
    let push_top = |stack: &mut Vec<(Elem, String)>, n: Node| {
        if let Some((top, _)) = stack.last_mut() {
            push(&mut top.children, n);
        }
    };
    for t in toks {
        match t {
            Tok::Text(s) => push_top(&mut stack, Node::Text(s)),
            Tok::Code(s) => push_top(&mut stack, Node::Code(s)),
            Tok::Fence(s) => push_top(&mut stack, Node::Fence(s)),
            Tok::Open(e, self_closing, raw) => {
                if stack.len() > super::html::MAX_DEPTH {
                    // Nested past any real page: kept as text, so rendering
                    // (and dropping) the tree never recurses deeper.
                    push_top(&mut stack, Node::Text(raw));
                } else if self_closing || VOID.contains(&e.name.as_str()) {
                    push_top(&mut stack, Node::Elem(e));
                } else {
                    stack.push((e, raw));
                }
            }
            Tok::Close(name) => {
                let pos = stack.iter().rposition(|(e, _)| e.name == name);
                if let Some(p) = pos.filter(|&p| p > 0) {
                    while stack.len() > p + 1 {
                        pop(&mut stack, false);
                    }
                    pop(&mut stack, true);
                }
            }
        }
    }
    while stack.len() > 1 {
        pop(&mut stack, false);
    }
    stack.pop().map(|(r, _)| r.children).unwrap_or_default()
}

struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    toks: Vec<Tok>,
    text: String,
    exports: HashMap<String, Js>,
}

static EXPORT_DECL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^export\s+(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*").expect("static regex")
});
static EXPORT_OTHER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^export\s+(?:default\s|function\s|async\s+function\s|\{)").expect("static regex")
});
static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^import\s+(?:["']|\{|\*|[A-Za-z_$][\w$]*\s*(?:,|from\b))"#).expect("static regex")
});
static EXPORT_CLOSER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\]\})][\]\});,]*\s*$").expect("static regex"));

impl Lexer<'_> {
    fn flush(&mut self) {
        if !self.text.is_empty() {
            self.toks.push(Tok::Text(std::mem::take(&mut self.text)));
        }
    }

    fn line_end(&self, from: usize) -> usize {
        self.src[from..]
            .find('\n')
            .map_or(self.src.len(), |i| from + i)
    }

    /// After the line containing `from` (past its `\n`).
    fn next_line(&self, from: usize) -> usize {
        let e = self.line_end(from);
        if e < self.src.len() {
            e + 1
        } else {
            e
        }
    }

    fn run(&mut self) {
        let len = self.b.len();
        while self.pos < len {
            let at_line_start = self.pos == 0 || self.b[self.pos - 1] == b'\n';
            if at_line_start && (self.fence() || self.export()) {
                continue;
            }
            let start = self.pos;
            let mut i = start;
            while i < len && !matches!(self.b[i], b'\\' | b'`' | b'<' | b'{' | b'\n') {
                i += 1;
            }
            self.text.push_str(&self.src[start..i]);
            self.pos = i;
            if i >= len {
                break;
            }
            match self.b[i] {
                b'\n' => {
                    self.text.push('\n');
                    self.pos += 1;
                }
                b'\\' => self.escape(),
                b'`' => self.inline_code(),
                b'<' => self.tag(),
                _ => self.expression(),
            }
        }
        self.flush();
    }

    fn escape(&mut self) {
        let next = self.src[self.pos + 1..].chars().next();
        match next {
            Some(c) if c.is_ascii_punctuation() => {
                self.text.push('\\');
                self.text.push(c);
                self.pos += 2;
            }
            _ => {
                self.text.push('\\');
                self.pos += 1;
            }
        }
    }

    /// A fenced block starting at this line; it is taken whole.
    fn fence(&mut self) -> bool {
        let end = self.line_end(self.pos);
        let line = &self.src[self.pos..end];
        let body = line.trim_start_matches([' ', '\t', '>']);
        let Some((ch, len)) = fence_opener(body) else {
            return false;
        };
        let prefix = &line[..line.len() - body.len()];
        let mut p = self.next_line(self.pos);
        let mut close_end = None;
        while p < self.src.len() {
            let e = self.line_end(p);
            let l = self.src[p..e].trim_start_matches([' ', '\t', '>']);
            let run = l.bytes().take_while(|&b| b == ch).count();
            if run >= len && l[run..].trim().is_empty() {
                close_end = Some(self.next_line(p));
                break;
            }
            p = self.next_line(p);
        }
        self.flush();
        if let Some(ce) = close_end {
            // An empty fence without language is a leftover, not code.
            let inner_start = self.next_line(self.pos);
            if inner_start >= p && body.trim_end().len() == len {
                self.pos = ce;
                return true;
            }
        }
        let mut block = match close_end {
            Some(ce) => self.src[self.pos..ce].to_string(),
            None => {
                let mut s = self.src[self.pos..].to_string();
                if !s.ends_with('\n') {
                    s.push('\n');
                }
                s.push_str(prefix);
                s.push_str(&(ch as char).to_string().repeat(len));
                s
            }
        };
        if !block.ends_with('\n') {
            block.push('\n');
        }
        self.pos = close_end.unwrap_or(self.src.len());
        self.toks.push(Tok::Fence(block));
        true
    }

    /// `export`/`import` statements at column 0: program code, dropped. Literal
    /// values of `export const` are kept for components that render them.
    fn export(&mut self) -> bool {
        let rest = &self.src[self.pos..];
        if !(rest.starts_with("export") || rest.starts_with("import")) {
            return false;
        }
        if IMPORT.is_match(rest) {
            let mut p = self.pos;
            for _ in 0..60 {
                let e = self.line_end(p);
                let line = &self.src[p..e];
                p = self.next_line(p);
                if line.contains(" from ")
                    || line.contains("from\"")
                    || line.trim_end().ends_with(';')
                {
                    break;
                }
                if p >= self.src.len() {
                    break;
                }
            }
            self.pos = p;
            return true;
        }
        if let Some(caps) = EXPORT_DECL.captures(rest) {
            let name = caps.get(1).map_or("", |m| m.as_str()).to_string();
            let start = self.pos + caps.get(0).map_or(0, |m| m.end());
            let mut jp = JsParser::new(self.src, start);
            if let Some(v) = jp.value() {
                jp.ws();
                if jp.peek() == Some(b';') {
                    jp.pos += 1;
                }
                let line_rest_end = self.line_end(jp.pos);
                if self.src[jp.pos..line_rest_end].trim().is_empty() {
                    self.exports.insert(name, v);
                    self.flush();
                    self.pos = self.next_line(jp.pos);
                    return true;
                }
            }
        } else if !EXPORT_OTHER.is_match(rest) {
            return false;
        }
        self.flush();
        self.pos = self.export_end(self.pos);
        true
    }

    /// End of a non-literal export: a one-line statement, or the first line at
    /// column 0 that only closes brackets, outside template literals (component
    /// bodies carry CSS in template strings, whose `}` lines sit at column 0).
    fn export_end(&self, from: usize) -> usize {
        let first_end = self.line_end(from);
        let first = &self.src[from..first_end];
        let depth: i32 = first
            .bytes()
            .map(|b| match b {
                b'(' | b'{' | b'[' => 1,
                b')' | b'}' | b']' => -1,
                _ => 0,
            })
            .sum();
        if depth <= 0 {
            return self.next_line(from);
        }
        let mut in_template = backticks_odd(first);
        let mut p = self.next_line(from);
        while p < self.src.len() {
            let e = self.line_end(p);
            let line = &self.src[p..e];
            if !in_template && EXPORT_CLOSER.is_match(line) {
                return self.next_line(p);
            }
            if backticks_odd(line) {
                in_template = !in_template;
            }
            p = self.next_line(p);
        }
        self.src.len()
    }

    fn inline_code(&mut self) {
        let run = self.b[self.pos..]
            .iter()
            .take_while(|&&b| b == b'`')
            .count();
        let from = self.pos + run;
        let mut j = from;
        let mut close = None;
        while j < self.b.len() {
            if self.b[j] == b'`' {
                let r = self.b[j..].iter().take_while(|&&b| b == b'`').count();
                if r == run {
                    close = Some(j);
                    break;
                }
                j += r;
            } else if self.b[j] == b'\n'
                && self.src[j + 1..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with('\n')
            {
                break; // a code span never crosses a blank line
            } else {
                j += 1;
            }
        }
        match close {
            Some(c) => {
                self.flush();
                self.toks
                    .push(Tok::Code(self.src[self.pos..c + run].to_string()));
                self.pos = c + run;
            }
            None => {
                self.text.push_str(&self.src[self.pos..from]);
                self.pos = from;
            }
        }
    }

    fn expression(&mut self) {
        let rest = &self.src[self.pos..];
        if rest.starts_with("{/*") {
            if let Some(i) = rest.find("*/") {
                let after = rest[i + 2..].trim_start();
                if after.starts_with('}') {
                    let consumed = rest.len() - after.len() + 1;
                    self.pos += consumed;
                    return;
                }
            }
        }
        let mut jp = JsParser::new(self.src, self.pos + 1);
        jp.ws();
        if matches!(jp.peek(), Some(b'"' | b'\'' | b'`')) {
            if let Some(Js::Str(s)) = jp.value() {
                jp.ws();
                if jp.peek() == Some(b'}') {
                    self.text.push_str(&s);
                    self.pos = jp.pos + 1;
                    return;
                }
            }
        }
        self.text.push('{');
        self.pos += 1;
    }

    fn tag(&mut self) {
        let rest = &self.src[self.pos..];
        if rest.starts_with("<!--") {
            if let Some(i) = rest.find("-->") {
                self.pos += i + 3;
                return;
            }
        }
        let line_start = {
            let mut k = self.pos;
            while k > 0 && matches!(self.b[k - 1], b' ' | b'\t') {
                k -= 1;
            }
            k == 0 || self.b[k - 1] == b'\n'
        };
        match parse_tag(self.src, self.pos) {
            Some((ParsedTag::Close(name), end)) => {
                self.flush();
                self.toks.push(Tok::Close(name));
                self.pos = end;
            }
            Some((ParsedTag::Open(name, attrs, self_closing), end)) => {
                self.flush();
                if !self_closing && RAW_SKIP.contains(&name.as_str()) {
                    self.pos = skip_raw(self.src, end, &name);
                    return;
                }
                self.toks.push(Tok::Open(
                    Elem {
                        name,
                        attrs,
                        children: Vec::new(),
                        line_start,
                    },
                    self_closing,
                    self.src[self.pos..end].to_string(),
                ));
                self.pos = end;
            }
            None => {
                self.text.push('<');
                self.pos += 1;
            }
        }
    }
}

fn backticks_odd(line: &str) -> bool {
    // Backticks inside '…' or "…" string literals (`s.split('`')`) do not
    // open or close a template literal.
    let mut n = 0;
    let mut quote: Option<u8> = None;
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let escaped = i > 0 && b[i - 1] == b'\\';
        match quote {
            Some(q) if c == q && !escaped => quote = None,
            Some(_) => {}
            None if (c == b'\'' || c == b'"') && n % 2 == 0 => quote = Some(c),
            None if c == b'`' && !escaped => n += 1,
            None => {}
        }
    }
    n % 2 == 1
}

fn skip_raw(src: &str, from: usize, name: &str) -> usize {
    let close = format!("</{name}");
    let found = src[from..]
        .find(&close)
        .or_else(|| src[from..].to_ascii_lowercase().find(&close));
    match found {
        Some(i) => {
            let at = from + i;
            src[at..].find('>').map_or(src.len(), |j| at + j + 1)
        }
        None => from,
    }
}

enum ParsedTag {
    Open(String, Vec<(String, Attr)>, bool),
    Close(String),
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_'
}

/// Parse a tag at `pos` (`<`), returning it and the position after `>`.
fn parse_tag(src: &str, pos: usize) -> Option<(ParsedTag, usize)> {
    let b = src.as_bytes();
    let mut p = pos + 1;
    let closing = b.get(p) == Some(&b'/');
    if closing {
        p += 1;
    }
    if b.get(p) == Some(&b'>') {
        // Fragment `<>` / `</>`.
        let name = String::new();
        return Some((
            if closing {
                ParsedTag::Close(name)
            } else {
                ParsedTag::Open(name, Vec::new(), false)
            },
            p + 1,
        ));
    }
    if !b.get(p)?.is_ascii_alphabetic() {
        return None;
    }
    let ns = p;
    while p < b.len() && is_name_byte(b[p]) {
        p += 1;
    }
    let name = &src[ns..p];
    let component = name.as_bytes()[0].is_ascii_uppercase();
    if !component && !HTML_TAGS.contains(name.to_ascii_lowercase().as_str()) {
        return None;
    }
    let name = if component {
        name.to_string()
    } else {
        name.to_ascii_lowercase()
    };
    if closing {
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        return (b.get(p) == Some(&b'>')).then(|| (ParsedTag::Close(name), p + 1));
    }
    let mut attrs = Vec::new();
    let limit = (pos + 1_000_000).min(b.len());
    loop {
        while p < limit && b[p].is_ascii_whitespace() {
            p += 1;
        }
        if p >= limit {
            return None;
        }
        match b[p] {
            b'/' if b.get(p + 1) == Some(&b'>') => {
                return Some((ParsedTag::Open(name, attrs, true), p + 2))
            }
            b'>' => return Some((ParsedTag::Open(name, attrs, false), p + 1)),
            b'{' => {
                p = skip_balanced(src, p)?;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b':' || c == b'@' => {}
            _ => return None,
        }
        let an = p;
        while p < limit && (is_name_byte(b[p]) || b[p] == b':' || b[p] == b'@') {
            p += 1;
        }
        let key = src[an..p].to_string();
        let mut q = p;
        while q < limit && b[q].is_ascii_whitespace() {
            q += 1;
        }
        if b.get(q) != Some(&b'=') {
            attrs.push((key, Attr::Flag));
            continue;
        }
        q += 1;
        while q < limit && b[q].is_ascii_whitespace() {
            q += 1;
        }
        match b.get(q)? {
            quote @ (b'"' | b'\'') => {
                let end = src[q + 1..].find(*quote as char)? + q + 1;
                attrs.push((key, Attr::Str(src[q + 1..end].to_string())));
                p = end + 1;
            }
            b'{' => {
                let end = skip_balanced(src, q)?;
                attrs.push((key, Attr::Expr(src[q + 1..end - 1].to_string())));
                p = end;
            }
            _ => {
                let vs = q;
                while q < limit && !b[q].is_ascii_whitespace() && b[q] != b'>' {
                    q += 1;
                }
                if q > vs && b[q - 1] == b'/' && b.get(q) == Some(&b'>') {
                    q -= 1;
                }
                attrs.push((key, Attr::Str(src[vs..q].to_string())));
                p = q;
            }
        }
    }
}

/// Position after the `}` matching the `{` at `open`, skipping strings.
fn skip_balanced(src: &str, open: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut p = open;
    let limit = (open + 1_000_000).min(b.len());
    while p < limit {
        match b[p] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(p + 1);
                }
            }
            q @ (b'"' | b'\'' | b'`') => {
                p += 1;
                while p < limit && b[p] != q {
                    if b[p] == b'\\' {
                        p += 1;
                    }
                    p += 1;
                }
            }
            _ => {}
        }
        p += 1;
    }
    None
}

// ---------------------------------------------------------------------------
// JavaScript literals (component props and exported data)

/// A JavaScript literal value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Js {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Js>),
    Obj(Vec<(String, Js)>),
    /// A bare identifier (a reference to an exported value).
    Ident(String),
}

impl Js {
    pub(crate) fn get(&self, key: &str) -> Option<&Js> {
        match self {
            Js::Obj(f) => f.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as display text (strings, numbers, booleans).
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Js::Str(s) | Js::Num(s) => Some(s.clone()),
            Js::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub(crate) fn str_of(&self, key: &str) -> Option<String> {
        self.get(key).and_then(Js::text).filter(|s| !s.is_empty())
    }
}

/// The text of a string-valued expression: a string literal, or an array of
/// string literals joined with `.join("…")` (how long prompts are written).
pub(crate) fn string_expr(src: &str) -> Option<String> {
    let mut p = JsParser::new(src, 0);
    let value = p.value()?;
    p.ws();
    let rest = &src[p.pos..];
    match value {
        Js::Str(s) if rest.trim().is_empty() => Some(s),
        Js::Arr(items) => {
            let parts: Option<Vec<String>> = items
                .iter()
                .map(|i| match i {
                    Js::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            let parts = parts?;
            let call = rest.strip_prefix(".join")?.trim_start().strip_prefix('(')?;
            let mut q = JsParser::new(call, 0);
            let sep = match q.value() {
                Some(Js::Str(s)) => s,
                _ => return None,
            };
            q.ws();
            let tail = call[q.pos..].strip_prefix(')')?;
            tail.trim().is_empty().then(|| parts.join(&sep))
        }
        _ => None,
    }
}

/// A parser for the literal subset of JavaScript; anything else fails.
pub(crate) struct JsParser<'a> {
    src: &'a str,
    b: &'a [u8],
    pub pos: usize,
    /// Arrays and objects open around the value being read: past
    /// [`super::html::MAX_DEPTH`] the value is refused (hostile input nests
    /// thousands deep; the descent must not overflow the stack).
    depth: usize,
}

impl<'a> JsParser<'a> {
    pub(crate) fn new(src: &'a str, pos: usize) -> Self {
        JsParser {
            src,
            b: src.as_bytes(),
            pos,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        loop {
            while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            let rest = &self.src[self.pos..];
            if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if rest.starts_with("/*") {
                self.pos += rest.find("*/").map_or(rest.len(), |i| i + 2);
            } else {
                return;
            }
        }
    }

    pub(crate) fn value(&mut self) -> Option<Js> {
        if self.depth >= super::html::MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let v = self.value_here();
        self.depth -= 1;
        v
    }

    fn value_here(&mut self) -> Option<Js> {
        self.ws();
        match self.peek()? {
            b'"' | b'\'' | b'`' => self.string().map(Js::Str),
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.peek()? == b']' {
                        self.pos += 1;
                        return Some(Js::Arr(items));
                    }
                    items.push(self.value()?);
                    self.ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {}
                        _ => return None,
                    }
                }
            }
            b'{' => {
                self.pos += 1;
                let mut fields = Vec::new();
                loop {
                    self.ws();
                    let key = match self.peek()? {
                        b'}' => {
                            self.pos += 1;
                            return Some(Js::Obj(fields));
                        }
                        b'"' | b'\'' => self.string()?,
                        _ => self.ident()?,
                    };
                    self.ws();
                    let value = match self.peek()? {
                        b':' => {
                            self.pos += 1;
                            self.value()?
                        }
                        b',' | b'}' => Js::Ident(key.clone()),
                        _ => return None,
                    };
                    fields.push((key, value));
                    self.ws();
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => {}
                        _ => return None,
                    }
                }
            }
            c if c == b'-' || c.is_ascii_digit() => {
                let s = self.pos;
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_')
                {
                    self.pos += 1;
                }
                Some(Js::Num(self.src[s..self.pos].to_string()))
            }
            _ => {
                let id = self.ident()?;
                let save = self.pos;
                self.ws();
                // A call, member access or arrow is code, not a literal.
                if matches!(self.peek(), Some(b'(' | b'.' | b'=' | b'[')) {
                    return None;
                }
                self.pos = save;
                Some(match id.as_str() {
                    "true" => Js::Bool(true),
                    "false" => Js::Bool(false),
                    "null" | "undefined" => Js::Null,
                    _ => Js::Ident(id),
                })
            }
        }
    }

    fn ident(&mut self) -> Option<String> {
        let s = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
        {
            self.pos += 1;
        }
        (self.pos > s).then(|| self.src[s..self.pos].to_string())
    }

    fn string(&mut self) -> Option<String> {
        let q = self.peek()?;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.src[self.pos..];
            let mut chars = rest.chars();
            let c = chars.next()?;
            if c as u32 == q as u32 {
                self.pos += 1;
                return Some(out);
            }
            if c == '\n' && q != b'`' {
                return None;
            }
            if c == '\\' {
                let e = chars.next()?;
                self.pos += 1 + e.len_utf8();
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => {}
                    '\n' => {}
                    'u' => {
                        let hex: String = self.src[self.pos..].chars().take(4).collect();
                        if let Some(ch) =
                            u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                        {
                            out.push(ch);
                            self.pos += 4;
                        }
                    }
                    other => out.push(other),
                }
                continue;
            }
            out.push(c);
            self.pos += c.len_utf8();
        }
    }
}

// ---------------------------------------------------------------------------
// Rendering

/// What an element renders to.
pub(crate) enum Out {
    Inline(String),
    Block(String),
    /// `<br>`: a line break, or a space inside a table row.
    Break,
    Nothing,
}

/// Renders the tree; `exports` holds literal `export const` values by name.
pub(crate) struct Renderer<'a> {
    pub dialect: Dialect,
    pub exports: &'a HashMap<String, Js>,
}

fn leading_ws(s: &str) -> usize {
    s.bytes().take_while(|&b| b == b' ' || b == b'\t').count()
}

fn strip_indent(s: &str, n: usize) -> &str {
    let w = leading_ws(s).min(n);
    &s[w..]
}

/// Indent every non-empty line by `n` spaces.
pub(crate) fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `first` + `rest` lines indented by `n` (a list item's continuation).
fn hang(marker: &str, body: &str) -> String {
    let n = marker.chars().count();
    let mut lines = body.lines();
    let first = lines.next().unwrap_or("");
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        return format!("{marker}{first}");
    }
    format!("{marker}{first}\n{}", indent(&rest.join("\n"), n))
}

/// Remove leading blank lines and trailing whitespace, and indentation common
/// to all lines (a block re-placed at its own column). Spacing before the first
/// line alone (text that followed its opening tag on the same line) goes too,
/// unless that line opens a fence.
fn trim_block(s: &str) -> String {
    let mut start = 0;
    for line in s.split_inclusive('\n') {
        if line.trim().is_empty() {
            start += line.len();
        } else {
            break;
        }
    }
    let body = s[start..].trim_end();
    let common = body
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(leading_ws)
        .min()
        .unwrap_or(0);
    let mut lines: Vec<&str> = body.lines().map(|l| strip_indent(l, common)).collect();
    if let Some(first) = lines.first_mut() {
        let rest_flush = lines_after_first_flush(body, common);
        if rest_flush && fence_opener(first.trim_start()).is_none() {
            *first = first.trim_start_matches([' ', '\t']);
        }
    }
    lines.join("\n")
}

/// Whether every non-blank line after the first starts at the common column.
fn lines_after_first_flush(body: &str, common: usize) -> bool {
    body.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .all(|l| leading_ws(l) == common)
}

/// A single paragraph of prose (fits on one list line).
fn is_simple_paragraph(s: &str) -> bool {
    !s.contains("\n\n")
        && s.lines().all(|l| {
            let t = l.trim_start();
            !(t.starts_with("```")
                || t.starts_with("~~~")
                || t.starts_with("- ")
                || t.starts_with("* ")
                || t.starts_with('|')
                || t.starts_with('>')
                || t.starts_with('#')
                || t.starts_with("<")
                || LIST_NUM.is_match(t))
        })
}

static LIST_NUM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d+[.)]\s").expect("static regex"));

impl Renderer<'_> {
    /// Render sibling nodes: dedent them by their common indentation, place
    /// blocks at their own column.
    pub(crate) fn render_nodes(&self, nodes: &[Node], at_line_start: bool) -> String {
        let n = common_indent(nodes, at_line_start);
        let mut out = String::new();
        let mut at_ls = at_line_start;
        for node in nodes {
            match node {
                Node::Text(t) => {
                    if t.is_empty() {
                        continue;
                    }
                    for (k, part) in t.split('\n').enumerate() {
                        if k > 0 {
                            out.push('\n');
                        }
                        if k > 0 || at_ls {
                            out.push_str(&decode_entities(strip_indent(part, n), true));
                        } else {
                            out.push_str(&decode_entities(part, true));
                        }
                    }
                    at_ls = t.ends_with('\n');
                }
                Node::Code(c) => {
                    out.push_str(c);
                    at_ls = false;
                }
                Node::Fence(f) => {
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    for line in f.lines() {
                        out.push_str(strip_indent(line, n));
                        out.push('\n');
                    }
                    at_ls = true;
                }
                Node::Elem(e) => {
                    match self.render_elem(e) {
                        Out::Inline(s) => out.push_str(&s),
                        Out::Block(s) => push_block(&mut out, &s, e.line_start),
                        Out::Break => {
                            let line = out.rsplit('\n').next().unwrap_or("");
                            if line.trim_start().starts_with('|') {
                                out.push(' ');
                            } else {
                                out.push('\n');
                            }
                        }
                        Out::Nothing => {}
                    }
                    at_ls = false;
                }
            }
        }
        out
    }

    /// Children as a dedented, trimmed Markdown block.
    pub(crate) fn block(&self, nodes: &[Node]) -> String {
        trim_block(&self.render_nodes(nodes, false))
    }

    /// Children as one line of inline Markdown.
    pub(crate) fn inline(&self, nodes: &[Node]) -> String {
        collapse_whitespace(&self.render_nodes(nodes, false))
    }

    /// Children as plain text (for code): tags dropped, entities decoded,
    /// `<br>` as newline.
    pub(crate) fn plain(&self, nodes: &[Node]) -> String {
        let mut out = String::new();
        for node in nodes {
            match node {
                Node::Text(t) => out.push_str(&decode_entities(t, false)),
                Node::Code(c) => out.push_str(c.trim_matches('`')),
                Node::Fence(f) => out.push_str(f),
                Node::Elem(e) => match e.name.as_str() {
                    "br" => out.push('\n'),
                    "button" | "svg" | "style" | "script" => {}
                    _ => out.push_str(&self.plain(&e.children)),
                },
            }
        }
        out
    }

    fn render_elem(&self, e: &Elem) -> Out {
        for render in self.dialect.components {
            if let Some(out) = render(self, e) {
                return out;
            }
        }
        self.render_html(e)
    }

    /// Plain HTML elements, and the fallback for unknown components.
    fn render_html(&self, e: &Elem) -> Out {
        let name = e.name.as_str();
        if e.has_class("hidden") && matches!(name, "div" | "span" | "p" | "img" | "picture") {
            // Never shown, or only in dark mode: the light-mode twin of a
            // `hidden dark:block` image is the one the page shows.
            return Out::Nothing;
        }
        match name {
            "br" => Out::Break,
            "hr" => Out::Block("---".into()),
            "img" => match e.attr("src") {
                Some(src) if !src.is_empty() => {
                    let alt = collapse_whitespace(&e.attr("alt").unwrap_or_default());
                    Out::Inline(format!("![{}]({})", alt.replace(['[', ']'], ""), src))
                }
                _ => Out::Nothing,
            },
            "a" => {
                let text = self.inline(&e.children);
                match e.attr("href") {
                    _ if text.is_empty() => Out::Nothing,
                    Some(href) if !href.is_empty() => Out::Inline(format!("[{text}]({href})")),
                    _ => Out::Inline(text),
                }
            }
            "code" if e.has_class("tsd-tag") => {
                Out::Inline(format!("{} ", code_span(&self.plain(&e.children))))
            }
            "code" | "kbd" | "samp" | "tt" | "var" => {
                Out::Inline(code_span(&collapse_whitespace(&self.plain(&e.children))))
            }
            "pre" => {
                let code = self.plain(&e.children);
                if code.trim().is_empty() {
                    Out::Nothing
                } else {
                    Out::Block(fenced("", &code))
                }
            }
            "strong" | "b" => wrap_inline(self.inline(&e.children), "**"),
            "em" | "i" | "cite" | "dfn" => wrap_inline(self.inline(&e.children), "*"),
            "del" | "s" | "strike" => wrap_inline(self.inline(&e.children), "~~"),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let text = self.inline(&e.children);
                if text.is_empty() {
                    return Out::Nothing;
                }
                let level = name[1..].parse::<usize>().unwrap_or(2);
                match e.attr("id") {
                    // An explicit id is what the live page uses.
                    Some(id) if !id.is_empty() => Out::Block(heading_with_id(level, &text, &id)),
                    // Astro slugs raw HTML headings like Markdown ones.
                    _ if self.dialect.slug_html_headings => {
                        Out::Block(heading_with_id(level, &text, ""))
                    }
                    // Mintlify leaves them without id: not a section.
                    _ => Out::Block(format!("**{text}**")),
                }
            }
            "ul" | "ol" => {
                let items: Vec<String> = e
                    .children
                    .iter()
                    .filter_map(|c| match c {
                        Node::Elem(li) if li.name == "li" => Some(self.block(&li.children)),
                        _ => None,
                    })
                    .filter(|s| !s.is_empty())
                    .collect();
                let lines: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let marker = if name == "ol" {
                            format!("{}. ", i + 1)
                        } else {
                            "- ".to_string()
                        };
                        hang(&marker, s)
                    })
                    .collect();
                block_or_nothing(lines.join("\n"))
            }
            "li" => block_or_nothing(hang("- ", &self.block(&e.children))),
            "table" => block_or_nothing(self.table(e)),
            "blockquote" => block_or_nothing(quote(&self.block(&e.children))),
            "dt" => match self.inline(&e.children) {
                t if t.is_empty() => Out::Nothing,
                t => Out::Block(format!("**{t}**")),
            },
            "details" => {
                let mut title = String::new();
                let mut rest = Vec::new();
                for c in &e.children {
                    match c {
                        Node::Elem(s) if s.name == "summary" && title.is_empty() => {
                            title = self.inline(&s.children)
                        }
                        other => rest.push(other.clone()),
                    }
                }
                block_or_nothing(titled(&title, &self.block(&rest)))
            }
            "summary" => match self.inline(&e.children) {
                t if t.is_empty() => Out::Nothing,
                t => Out::Block(format!("**{t}**")),
            },
            "figcaption" | "caption" => match self.inline(&e.children) {
                t if t.is_empty() => Out::Nothing,
                t => Out::Block(format!("*{t}*")),
            },
            "video" => {
                let src = e.attr("src").filter(|s| !s.trim().is_empty()).or_else(|| {
                    e.children.iter().find_map(|c| match c {
                        Node::Elem(s) if s.name == "source" => {
                            s.attr("src").filter(|s| !s.trim().is_empty())
                        }
                        _ => None,
                    })
                });
                let label = e
                    .attr("title")
                    .or_else(|| e.attr("aria-label"))
                    .map(|l| collapse_whitespace(&l).replace(['[', ']'], ""))
                    .filter(|l| !l.is_empty());
                match (src, label) {
                    (Some(src), Some(l)) => Out::Block(format!("[Video: {l}]({})", src.trim())),
                    (Some(src), None) => Out::Block(format!("[Video]({})", src.trim())),
                    (None, _) => Out::Nothing,
                }
            }
            "sup" => match self.inline(&e.children) {
                t if t.is_empty() => Out::Nothing,
                // `2<sup>53</sup>` is 2^53, not 253.
                t if t.chars().all(char::is_alphanumeric) => Out::Inline(format!("^{t}")),
                t => Out::Inline(format!("^({t})")),
            },
            "audio" | "source" | "iframe" | "button" | "input" | "svg" | "style" | "script"
            | "noscript" | "template" | "select" | "option" | "textarea" | "canvas" | "object"
            | "embed" | "track" | "form" | "path" | "g" | "circle" | "rect" | "line"
            | "polyline" | "polygon" | "use" | "col" | "colgroup" | "wbr" => Out::Nothing,
            "div" | "section" if e.has_class("tsd-signature") => {
                let code = self.plain(&e.children);
                block_or_nothing(fenced("typescript", code.trim()))
            }
            "div" if e.attr("data-typedoc-h").is_some() && !e.has_class("tsd-anchor-link") => {
                match self.inline(&e.children) {
                    t if t.is_empty() => Out::Nothing,
                    t => Out::Block(format!("**{t}**")),
                }
            }
            "div" if e.has_class("tsd-anchor-link") => {
                let t = collapse_whitespace(&self.plain(&e.children));
                if t.is_empty() {
                    Out::Nothing
                } else {
                    Out::Block(format!("**{}**", code_span(&t)))
                }
            }
            "span" | "sub" | "small" | "mark" | "u" | "ins" | "abbr" | "time" | "q" | "label"
            | "font" => Out::Inline(self.render_nodes(&e.children, false)),
            // Block-level HTML is a block wherever its tag sits.
            "div" | "p" | "section" | "article" | "aside" | "header" | "footer" | "main"
            | "nav" | "figure" | "center" | "dl" | "dd" => {
                block_or_nothing(self.block(&e.children))
            }
            _ => self.unwrap(e),
        }
    }

    /// Drop the tag, keep the content: a block when the tag opens a line.
    pub(crate) fn unwrap(&self, e: &Elem) -> Out {
        if e.children.is_empty() {
            return Out::Nothing;
        }
        if e.line_start {
            block_or_nothing(self.block(&e.children))
        } else {
            let s = self.render_nodes(&e.children, false);
            if s.contains("\n\n") {
                block_or_nothing(trim_block(&s))
            } else {
                Out::Inline(s)
            }
        }
    }

    fn table(&self, e: &Elem) -> String {
        let mut rows: Vec<Vec<String>> = Vec::new();
        collect_rows(self, &e.children, &mut rows);
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return String::new();
        }
        let mut out = String::new();
        for (i, row) in rows.iter().enumerate() {
            let mut cells = row.clone();
            cells.resize(cols, String::new());
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
            if i == 0 {
                out.push_str(&format!("|{}\n", " --- |".repeat(cols)));
            }
        }
        out.trim_end().to_string()
    }
}

fn collect_rows(r: &Renderer, nodes: &[Node], rows: &mut Vec<Vec<String>>) {
    for n in nodes {
        if let Node::Elem(e) = n {
            match e.name.as_str() {
                "tr" => {
                    let cells: Vec<String> = e
                        .children
                        .iter()
                        .filter_map(|c| match c {
                            Node::Elem(td) if td.name == "td" || td.name == "th" => {
                                Some(table_cell(&r.render_nodes(&td.children, false)))
                            }
                            _ => None,
                        })
                        .collect();
                    rows.push(cells);
                }
                _ => collect_rows(r, &e.children, rows),
            }
        }
    }
}

/// Text fit for one Markdown table cell.
pub(crate) fn table_cell(s: &str) -> String {
    let s = collapse_whitespace(s);
    let mut out = String::with_capacity(s.len());
    let mut prev = ' ';
    for c in s.chars() {
        if c == '|' && prev != '\\' {
            out.push('\\');
        }
        out.push(c);
        prev = c;
    }
    out
}

fn wrap_inline(s: String, mark: &str) -> Out {
    if s.is_empty() {
        Out::Nothing
    } else {
        Out::Inline(format!("{mark}{s}{mark}"))
    }
}

pub(crate) fn block_or_nothing(s: String) -> Out {
    if s.trim().is_empty() {
        Out::Nothing
    } else {
        Out::Block(s)
    }
}

/// `**title**` followed by the content.
pub(crate) fn titled(title: &str, body: &str) -> String {
    let title = collapse_whitespace(title);
    match (title.is_empty(), body.is_empty()) {
        (true, _) => body.to_string(),
        (false, true) => format!("**{title}**"),
        (false, false) => format!("**{title}**\n\n{body}"),
    }
}

/// Prefix every line with `> `.
pub(crate) fn quote(body: &str) -> String {
    body.lines()
        .map(|l| {
            if l.is_empty() {
                ">".to_string()
            } else {
                format!("> {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A callout as a blockquote whose first line carries the label.
pub(crate) fn callout(label: &str, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return format!("> **{label}**");
    }
    let first = body.lines().next().unwrap_or("");
    if is_simple_paragraph(first) {
        quote(&format!("**{label}:** {body}"))
    } else {
        quote(&format!("**{label}:**\n\n{body}"))
    }
}

/// Place a rendered block at the column of the line it starts on, with blank
/// lines around it. Whitespace before a tag that does not open its source line
/// is spacing between tags, not indentation.
fn push_block(out: &mut String, block: &str, tag_opens_line: bool) {
    if block.trim().is_empty() {
        return;
    }
    let line_begin = out.rfind('\n').map_or(0, |i| i + 1);
    let cur = &out[line_begin..];
    let col = if cur.trim().is_empty() {
        let w = if tag_opens_line { cur.len() } else { 0 };
        out.truncate(line_begin);
        w
    } else {
        let w = leading_ws(cur);
        out.push('\n');
        w
    };
    let col = list_context_col(out, col);
    if !out.is_empty() {
        while !out.ends_with("\n\n") {
            out.push('\n');
        }
    }
    out.push_str(&indent(block, col));
    out.push_str("\n\n");
}

/// The indentation to strip from sibling nodes: the least indentation of their
/// text lines (fences count only when there is no text: MDX does not care
/// where a fence sits, and sources often leave fences at column 0 inside
/// indented components).
/// The column a block indented by `col` may keep: the content column of the
/// list item it continues, else that of the text it follows (indentation
/// outside a list means nothing in MDX, and in Markdown would make code).
fn list_context_col(out: &str, col: usize) -> usize {
    if col == 0 {
        return 0;
    }
    for line in out.lines().rev() {
        if line.trim().is_empty() {
            continue;
        }
        let ind = leading_ws(line);
        if ind >= col {
            continue;
        }
        return match LIST_ITEM.find(&line[ind..]) {
            Some(m) => (ind + m.end()).min(col),
            None => ind,
        };
    }
    0
}

static LIST_ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[-*+]|\d{1,9}[.)])[ \t]{1,4}").expect("static regex"));

fn common_indent(nodes: &[Node], at_line_start: bool) -> usize {
    let mut min = usize::MAX;
    let mut fence_min = usize::MAX;
    let mut at_ls = at_line_start;
    for (i, node) in nodes.iter().enumerate() {
        match node {
            Node::Text(t) => {
                if t.is_empty() {
                    continue;
                }
                let parts: Vec<&str> = t.split('\n').collect();
                let last = parts.len() - 1;
                for (k, part) in parts.iter().enumerate() {
                    if k == 0 && !at_ls {
                        continue;
                    }
                    let ws = leading_ws(part);
                    // A whitespace-only last part is the column of the tag or
                    // code span that follows on the same line (fences carry
                    // their own indentation).
                    let before_inline = k == last
                        && matches!(nodes.get(i + 1), Some(Node::Elem(_) | Node::Code(_)));
                    if ws < part.len() || before_inline {
                        min = min.min(ws);
                    }
                }
                at_ls = t.ends_with('\n');
            }
            Node::Code(_) | Node::Elem(_) => {
                if at_ls {
                    min = 0;
                }
                at_ls = false;
            }
            Node::Fence(f) => {
                fence_min = fence_min.min(leading_ws(f));
                at_ls = true;
            }
        }
    }
    if min == usize::MAX {
        min = fence_min;
    }
    if min == usize::MAX {
        0
    } else {
        min
    }
}

// ---------------------------------------------------------------------------
// Post-processing

/// Display options in a fence's info string that are not part of the code's
/// identity: line wrapping, line numbers, highlighted or folded lines, theme.
const FENCE_FLAGS: &[&str] = &["wrap", "lines", "expandable", "showLineNumbers"];
const FENCE_OPTIONS: &[&str] = &[
    "theme",
    "highlight",
    "focus",
    "hidelines",
    "icon",
    "mark",
    "ins",
    "del",
    "collapse",
    "frame",
    "showLineNumbers",
    "startLineNumber",
    "className",
];

/// Split an info string into words; quoted strings and `{…}` stay whole.
fn info_words(info: &str) -> Vec<&str> {
    let b = info.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        let mut depth = 0usize;
        let mut quote: Option<u8> = None;
        while i < b.len() {
            let c = b[i];
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    b'"' | b'\'' => quote = Some(c),
                    b'{' => depth += 1,
                    b'}' => depth = depth.saturating_sub(1),
                    c if c.is_ascii_whitespace() && depth == 0 => break,
                    _ => {}
                },
            }
            i += 1;
        }
        if i > start {
            words.push(&info[start..i]);
        }
    }
    words
}

/// The info string of a fence as a reader needs it: the language and the
/// block's label (file name or tab title), without Mintlify/Astro display
/// options (`wrap`, `{3}`, `highlight={…}`, `theme={null}` …); `title="x"`
/// becomes the bare label.
fn clean_fence_info(info: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for w in info_words(info) {
        if FENCE_FLAGS.contains(&w) || w.starts_with('{') {
            continue;
        }
        if let Some((key, value)) = w.split_once('=') {
            if FENCE_OPTIONS.contains(&key) {
                continue;
            }
            if matches!(key, "title" | "filename") {
                let v = value.trim_matches(|c| c == '"' || c == '\'');
                if !v.trim().is_empty() {
                    out.push(v.trim().to_string());
                }
                continue;
            }
        }
        out.push(w.to_string());
    }
    out.join(" ")
}

/// A fence opening line with its info string cleaned (see [`clean_fence_info`]).
fn clean_fence_opener(line: &str) -> String {
    let line = line.trim_end();
    let body = line.trim_start_matches([' ', '\t', '>']);
    let prefix = &line[..line.len() - body.len()];
    let first = body.bytes().next().unwrap_or(b'`');
    let run = body.bytes().take_while(|&b| b == first).count();
    let info = clean_fence_info(&body[run..]);
    format!("{prefix}{}{info}", &body[..run])
}

/// Close open fences, clean fence info strings, trim trailing spaces and
/// collapse blank-line runs — outside code only.
pub(crate) fn tidy(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut fences = FenceTracker::default();
    let mut blank = 0;
    let mut open_prefix = String::new();
    let mut after_close = false;
    for line in md.lines() {
        let kind = fences.line(line);
        let follows_close = std::mem::replace(&mut after_close, kind == FenceLine::Close);
        match kind {
            FenceLine::Inside => {
                out.push_str(line);
            }
            FenceLine::Open => {
                blank = 0;
                let body = line.trim_start_matches([' ', '\t', '>']);
                open_prefix = line[..line.len() - body.len()].to_string();
                if follows_close {
                    // Back-to-back blocks (a CodeGroup written without
                    // blank lines): keep them apart, inside their quote.
                    out.push_str(open_prefix.trim_end_matches([' ', '\t']));
                    out.push('\n');
                }
                out.push_str(&clean_fence_opener(line));
            }
            FenceLine::Close => {
                out.push_str(line.trim_end());
            }
            FenceLine::Outside => {
                let t = line.trim_end();
                if t.trim().is_empty() {
                    blank += 1;
                    if blank > 1 || out.is_empty() {
                        continue;
                    }
                    out.push('\n');
                    continue;
                }
                blank = 0;
                out.push_str(t);
            }
        }
        out.push('\n');
    }
    if let Some(closer) = fences.closer() {
        out.push_str(&open_prefix);
        out.push_str(&closer);
        out.push('\n');
    }
    out
}

static LINK_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)").expect("static regex")
});
static REF_DEF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*\[[^\]]+\]:\s*)(\S+)").expect("static regex"));

/// Make every link and image target absolute against the page's public URL;
/// same-host `.md` alternates and `…/index` sources become the page URL.
/// Code is left alone.
pub(crate) fn absolutize_links(md: &str, public_url: &str) -> String {
    let Ok(base) = url::Url::parse(public_url) else {
        return md.to_string();
    };
    let mut out = String::with_capacity(md.len() + 256);
    let mut fences = FenceTracker::default();
    for line in md.split_inclusive('\n') {
        if fences.line(line.trim_end_matches('\n')) != FenceLine::Outside
            || !(line.contains("](") || line.contains("]:"))
        {
            out.push_str(line);
            continue;
        }
        let line = if let Some(c) = REF_DEF.captures(line) {
            let (pre, target) = (
                c.get(1).map_or("", |m| m.as_str()),
                c.get(2).map_or("", |m| m.as_str()),
            );
            let end = c.get(0).map_or(0, |m| m.end());
            format!("{pre}{}{}", resolve(&base, target), &line[end..])
        } else {
            line.to_string()
        };
        // Rewrite outside inline code spans only.
        let mut rest = line.as_str();
        while !rest.is_empty() {
            match rest.find('`') {
                None => {
                    out.push_str(&rewrite_targets(&base, rest));
                    break;
                }
                Some(i) => {
                    out.push_str(&rewrite_targets(&base, &rest[..i]));
                    let after = &rest[i..];
                    let run = after.bytes().take_while(|&b| b == b'`').count();
                    let ticks = &after[..run];
                    let close = after[run..]
                        .find(ticks)
                        .filter(|&j| !after[run + j + run..].starts_with('`'));
                    match close {
                        Some(j) => {
                            out.push_str(&after[..run + j + run]);
                            rest = &after[run + j + run..];
                        }
                        None => {
                            out.push_str(ticks);
                            rest = &after[run..];
                        }
                    }
                }
            }
        }
    }
    out
}

fn rewrite_targets(base: &url::Url, s: &str) -> String {
    if !s.contains("](") {
        return s.to_string();
    }
    LINK_TARGET
        .replace_all(s, |c: &regex::Captures| {
            let t = c.get(1).map_or("", |m| m.as_str());
            let (inner, angle) = match t.strip_prefix('<').and_then(|x| x.strip_suffix('>')) {
                Some(x) => (x, true),
                None => (t, false),
            };
            let r = resolve(base, inner);
            if angle {
                format!("](<{r}>")
            } else {
                format!("]({r}")
            }
        })
        .into_owned()
}

static SCHEME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:").expect("static regex"));

fn resolve(base: &url::Url, href: &str) -> String {
    if href.is_empty() {
        return href.to_string();
    }
    let abs = if SCHEME.is_match(href) {
        // Absolute already: only same-host `.md` alternates and index sources change.
        let same_host_source = url::Url::parse(href).ok().filter(|u| {
            u.host_str() == base.host_str()
                && (u.path().ends_with(".md") || u.path().ends_with("/index"))
        });
        match same_host_source {
            Some(u) => u,
            None => return href.to_string(),
        }
    } else {
        match base.join(href) {
            Ok(u) => u,
            Err(_) => return href.to_string(),
        }
    };
    let mut abs = abs;
    if abs.host_str() == base.host_str() && matches!(abs.scheme(), "http" | "https") {
        let path = abs.path();
        let path = path.strip_suffix(".md").unwrap_or(path);
        // `x/index` is the source file of the page served at `x`.
        let path = match path.strip_suffix("/index") {
            Some("") => "/",
            Some(p) => p,
            None => path,
        };
        if path != abs.path() {
            let p = path.to_string();
            abs.set_path(&p);
        }
    }
    abs.to_string()
}

/// Move heading-id markers out of the text into one id per ATX heading;
/// headings outside `anchored` levels have no id, the rest are computed.
pub(crate) fn take_anchors(
    md: &str,
    anchored: std::ops::RangeInclusive<u8>,
) -> (String, Vec<HeadingAnchor>) {
    let heads = atx_headings(md);
    let all_computed = heads.iter().all(|h| anchored.contains(&h.level));
    if !md.contains(ID_OPEN) && all_computed {
        return (md.to_string(), Vec::new());
    }
    let heading_lines: HashMap<usize, usize> =
        heads.iter().enumerate().map(|(i, h)| (h.line, i)).collect();
    let mut ids: Vec<HeadingAnchor> = heads
        .iter()
        .map(|h| {
            if anchored.contains(&h.level) {
                HeadingAnchor::Slug
            } else {
                HeadingAnchor::Unanchored
            }
        })
        .collect();
    let mut out = String::with_capacity(md.len());
    for (i, line) in md.lines().enumerate() {
        let mut line = line.to_string();
        while let Some(a) = line.find(ID_OPEN) {
            let b = line[a..].find(ID_CLOSE).map_or(line.len(), |j| a + j);
            let id = line[a + ID_OPEN.len_utf8()..b].to_string();
            let end = (b + ID_CLOSE.len_utf8()).min(line.len());
            line.replace_range(a..end, "");
            if let Some(&h) = heading_lines.get(&i) {
                ids[h] = HeadingAnchor::from_id(id);
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    if ids.iter().all(|i| *i == HeadingAnchor::Slug) {
        ids.clear();
    }
    (out.trim_end().to_string(), ids)
}

#[cfg(test)]
mod tests {

    #[test]
    fn backticks_in_string_literals_are_not_templates() {
        assert!(!backticks_odd("const f = s => s.split('`').map(x => x);"));
        assert!(backticks_odd("<style>{`"));
        assert!(!backticks_odd("a `code` b"));
    }

    use super::*;

    fn md(src: &str) -> String {
        let (m, _) = take_anchors(
            &convert(
                src,
                "https://docs.example.com/docs/page",
                crate::normalize::mintlify::DIALECT,
            ),
            1..=6,
        );
        m
    }

    #[test]
    fn callouts_become_labelled_blockquotes() {
        assert_eq!(
            md("<Note>\n  Keep this.\n</Note>"),
            "> **Note:** Keep this."
        );
        assert_eq!(
            md("<Warning>\n  First line\n  second line.\n\n  More.\n</Warning>"),
            "> **Warning:** First line\n> second line.\n>\n> More."
        );
        assert_eq!(
            md("Text\n\n<Tip>Inline tip</Tip>\n\nAfter"),
            "Text\n\n> **Tip:** Inline tip\n\nAfter"
        );
        assert_eq!(
            md("<Info>\n  ```bash\n  echo <Note>\n  ```\n</Info>"),
            "> **Info:**\n>\n> ```bash\n> echo <Note>\n> ```"
        );
    }

    #[test]
    fn steps_become_a_numbered_list() {
        let src = "<Steps>\n  <Step title=\"Install\">\n    Run this:\n\n    ```bash\n    npm i\n    ```\n  </Step>\n  <Step title=\"Use\">\n    Done.\n  </Step>\n</Steps>";
        assert_eq!(md(src), "1. **Install**\n\n   Run this:\n\n   ```bash\n   npm i\n   ```\n\n2. **Use**\n\n   Done.");
    }

    #[test]
    fn tabs_become_labelled_blocks() {
        let src = "<Tabs>\n  <Tab title=\"macOS\">\n    brew install x\n  </Tab>\n  <Tab title=\"Linux\">\n    apt install x\n  </Tab>\n</Tabs>";
        assert_eq!(
            md(src),
            "**macOS**\n\nbrew install x\n\n**Linux**\n\napt install x"
        );
    }

    #[test]
    fn code_group_keeps_fences_and_labels() {
        let src = "<CodeGroup>\n  ```bash npm theme={null}\n  npm i x\n  ```\n\n  ```bash yarn\n  yarn add x\n  ```\n</CodeGroup>";
        assert_eq!(
            md(src),
            "```bash npm\nnpm i x\n```\n\n```bash yarn\nyarn add x\n```"
        );
    }

    #[test]
    fn cards_become_link_lists() {
        let src = "<CardGroup cols={2}>\n  <Card title=\"Quickstart\" icon=\"rocket\" href=\"/docs/quickstart\">\n    Get going\n    fast.\n  </Card>\n  <Card title=\"API\" href=\"https://x.dev/api\" />\n</CardGroup>";
        assert_eq!(
            md(src),
            "- [Quickstart](https://docs.example.com/docs/quickstart): Get going fast.\n- [API](https://x.dev/api)"
        );
    }

    #[test]
    fn accordions_and_details_become_titled_blocks() {
        let src = "<AccordionGroup>\n  <Accordion title=\"Why?\">\n    Because.\n  </Accordion>\n</AccordionGroup>\n\n<details>\n<summary>More</summary>\n\nHidden text.\n</details>";
        assert_eq!(md(src), "**Why?**\n\nBecause.\n\n**More**\n\nHidden text.");
    }

    #[test]
    fn drops_exports_comments_and_decoration() {
        let src = "export const Widget = () => {\n  const css = `\n.a {\n}\n`;\n  return <div>{x}</div>;\n};\n\n{/* hidden */}\nBefore <Icon icon=\"x\" /> after<br />next\n\n<Frame caption=\"Shot\">\n  <img src=\"/img/a.png\" alt=\"A screen\" />\n</Frame>\n\n<Widget />";
        assert_eq!(
            md(src),
            "Before  after\nnext\n\n![A screen](https://docs.example.com/img/a.png)\n\n*Shot*"
        );
    }

    #[test]
    fn fields_tooltips_badges() {
        let src = "<ResponseField name=\"id\" type=\"string\" required>\n  The id.\n</ResponseField>\n\nA <Tooltip tip=\"t\">term</Tooltip> and <Badge>New</Badge> and <Kbd>Cmd+K</Kbd>.";
        assert_eq!(
            md(src),
            "- **`id`** (`string`, required): The id.\n\nA term and New and `Cmd+K`."
        );
    }

    #[test]
    fn links_are_absolute() {
        let src = "See [a](/docs/a), [b](#anchor), [c](other.md), [d](https://docs.example.com/docs/d.md#x), `[e](/e)` and ![i](/i.png).\n\n[ref]: /docs/ref";
        assert_eq!(
            md(src),
            "See [a](https://docs.example.com/docs/a), [b](https://docs.example.com/docs/page#anchor), [c](https://docs.example.com/docs/other), [d](https://docs.example.com/docs/d#x), `[e](/e)` and ![i](https://docs.example.com/i.png).\n\n[ref]: https://docs.example.com/docs/ref"
        );
    }

    #[test]
    fn fences_are_untouched_and_closed() {
        let src = "~~~md\n<Note>keep</Note>\n[x](/y)\n\n\n\nend\n~~~\n\n\n\n```js\nunclosed <Tip>";
        assert_eq!(
            md(src),
            "~~~md\n<Note>keep</Note>\n[x](/y)\n\n\n\nend\n~~~\n\n```js\nunclosed <Tip>\n```"
        );
    }

    #[test]
    fn fence_info_keeps_language_and_label_only() {
        let src = "```text wrap\na\n```\n\n```json ~/.claude/settings.json {3} highlight={1-2}\nb\n```\n\n```txt title=\"claude (plan mode)\" wrap theme={null}\nc\n```";
        assert_eq!(
            md(src),
            "```text\na\n```\n\n```json ~/.claude/settings.json\nb\n```\n\n```txt claude (plan mode)\nc\n```"
        );
    }

    #[test]
    fn back_to_back_fences_are_kept_apart() {
        let src = "<CodeGroup>\n  ```json A\n  {}\n  ```\n  ```json B\n  []\n  ```\n</CodeGroup>\n\n<Note>\n  ```a\n  x\n  ```\n  ```b\n  y\n  ```\n</Note>";
        assert_eq!(
            md(src),
            "```json A\n{}\n```\n\n```json B\n[]\n```\n\n> **Note:**\n>\n> ```a\n> x\n> ```\n>\n> ```b\n> y\n> ```"
        );
    }

    #[test]
    fn media_superscripts_and_index_links() {
        let src = "<Frame>\n  <img src=\"/a.svg\" className=\"dark:hidden\" alt=\"Flow\" />\n  <img src=\"/a-dark.svg\" className=\"hidden dark:block\" alt=\"Flow\" />\n</Frame>\n\n<video src=\"/v.mp4\" autoplay></video>\n\nUp to 2<sup>53</sup> and x<sup>n+1</sup>; see [meta](/docs/basic/index#meta).";
        assert_eq!(
            md(src),
            "![Flow](https://docs.example.com/a.svg)\n\n[Video](https://docs.example.com/v.mp4)\n\nUp to 2^53 and x^(n+1); see [meta](https://docs.example.com/docs/basic#meta)."
        );
    }

    #[test]
    fn string_expressions() {
        assert_eq!(string_expr(r#""one""#).as_deref(), Some("one"));
        assert_eq!(
            string_expr("[\n  \"a\",\n  \"\",\n  \"b\",\n].join(\"\\n\")").as_deref(),
            Some("a\n\nb")
        );
        assert_eq!(string_expr("[\"a\"].map(f)"), None);
    }

    #[test]
    fn html_headings_keep_their_ids() {
        let (m, ids) = take_anchors(
            &convert(
                "## Plain\n\n<h2 id=\"custom\">\n  Title with `code`\n</h2>\n\ntext",
                "https://x.dev/p",
                crate::normalize::mintlify::DIALECT,
            ),
            1..=6,
        );
        assert_eq!(m, "## Plain\n\n## Title with `code`\n\ntext");
        assert_eq!(
            ids,
            vec![HeadingAnchor::Slug, HeadingAnchor::Id("custom".to_string())]
        );
    }

    #[test]
    fn header_is_lifted() {
        let (h, rest) = take_header("export const meta = {\n  title: \"Planning\",\n  description: \"How it \\\"plans\\\"\"\n};\n\n# Planning\n\nBody");
        assert_eq!(h.title, "Planning");
        assert_eq!(h.description, "How it \"plans\"");
        assert_eq!(rest.trim(), "Body");
        let (h, rest) = take_header("---\ntitle: FM\ndescription: From YAML\n---\n\n# `codex` CLI\n\n> One line\n> two.\n\nBody");
        assert_eq!(h.title, "codex CLI");
        assert_eq!(h.description, "One line two.");
        assert_eq!(rest.trim(), "Body");
    }

    #[test]
    fn unclosed_tags_are_not_containers() {
        assert_eq!(
            md("Returns a Promise<T> of <b>results and <Note>ok</Note>"),
            "Returns a Promise<T> of results and\n\n> **Note:** ok"
        );
    }

    #[test]
    fn js_literals() {
        let v = JsParser::new(r#"[{ key: "a", n: 1, ok: true, list: ['x', `y`], }, ]"#, 0).value();
        let expected = Js::Arr(vec![Js::Obj(vec![
            ("key".into(), Js::Str("a".into())),
            ("n".into(), Js::Num("1".into())),
            ("ok".into(), Js::Bool(true)),
            (
                "list".into(),
                Js::Arr(vec![Js::Str("x".into()), Js::Str("y".into())]),
            ),
        ])]);
        assert_eq!(v, Some(expected));
        assert_eq!(JsParser::new("() => 1", 0).value(), None);
        assert_eq!(JsParser::new("foo()", 0).value(), None);
    }
}
