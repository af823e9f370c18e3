//! Sphinx with the Read the Docs theme (docs.godotengine.org).
//!
//! Main content is `div[itemprop=articleBody]`; the RTD chrome (sidebar, breadcrumbs,
//! "Edit on GitHub", Previous/Next buttons, footer, version flyout) lies outside it.
//! sphinx-tabs code tabs come out as one labelled fence per language through the
//! generic tab handling of [`super::html`].
//!
//! Class-reference pages (`classes/class_*.html`) get two extra rules so sections
//! line up with the live site's anchors: each member entry (`p.classref-method`,
//! `p.classref-property`, …, whose `id` is the member anchor) becomes an `###`
//! heading carrying its plain signature, and the summary tables get column names.
//! The item separators (`hr.classref-*-separator`) are dropped.

use std::sync::LazyLock;

use scraper::{ElementRef, Html, Selector};

use super::html::{self, sel, Action, Hooks};
use super::{NormalizeError, Normalized, PageRules};
use crate::util::cut_marked;

static SEL_ROOTS: LazyLock<[Selector; 4]> = LazyLock::new(|| {
    [
        sel("div[itemprop=articleBody]"),
        sel("div.body[role=main]"),
        sel("[role=main]"),
        sel("main"),
    ]
});
static SEL_TITLE: LazyLock<Selector> = LazyLock::new(|| sel("head > title"));

/// Member entry classes of the class reference that become headings.
const MEMBER_CLASSES: &[&str] = &[
    "classref-method",
    "classref-property",
    "classref-signal",
    "classref-constant",
    "classref-constructor",
    "classref-operator",
    "classref-annotation",
    "classref-themeproperty",
    "classref-enumeration",
];

/// Is this `<p>` a class-reference member entry (not an enum value)?
pub fn is_member_entry(el: ElementRef<'_>) -> bool {
    el.value().name() == "p" && el.value().classes().any(|c| MEMBER_CLASSES.contains(&c))
}

/// The `id` of the nearest enclosing `<section>`, if any.
fn section_id<'a>(el: ElementRef<'a>) -> Option<&'a str> {
    let mut node = el.parent();
    while let Some(n) = node {
        if let Some(e) = ElementRef::wrap(n) {
            if e.value().name() == "section" {
                return e.value().id();
            }
        }
        node = n.parent();
    }
    None
}

#[derive(Default)]
struct SphinxHooks {
    /// Anchor of the previous member entry: overloads after the first carry no `id`.
    last_member_anchor: String,
}

impl Hooks for SphinxHooks {
    fn action(&mut self, el: ElementRef<'_>) -> Action {
        let e = el.value();
        match e.name() {
            "hr" if e.classes().any(|c| c.starts_with("classref-")) => Action::Skip,
            "p" if is_member_entry(el) => {
                if let Some(id) = e.id() {
                    self.last_member_anchor = id.to_string();
                }
                let mut text = html::plain_text(el);
                if e.has_class(
                    "classref-enumeration",
                    scraper::CaseSensitivity::CaseSensitive,
                ) {
                    let t = text.trim_end_matches([':', ' ']).len();
                    text.truncate(t);
                }
                Action::Heading {
                    level: 3,
                    text,
                    anchor: self.last_member_anchor.clone(),
                }
            }
            _ => Action::Default,
        }
    }

    fn table_header(&mut self, table: ElementRef<'_>, columns: usize) -> Option<Vec<String>> {
        let names: &[&str] = match (section_id(table)?, columns) {
            ("properties" | "theme-properties", 3) => &["Type", "Name", "Default"],
            ("methods", 2) => &["Returns", "Method"],
            ("constructors", 2) => &["Type", "Constructor"],
            ("operators", 2) => &["Returns", "Operator"],
            _ => return None,
        };
        Some(names.iter().map(|s| s.to_string()).collect())
    }
}

/// Paragraph labels of the class reference that are not prose.
fn is_label_paragraph(p: ElementRef<'_>) -> bool {
    if is_member_entry(p)
        || p.value().classes().any(|c| {
            c.starts_with("classref-") || matches!(c, "admonition-title" | "rubric" | "caption")
        })
    {
        return true;
    }
    let Some(first) = p.child_elements().next() else {
        return false;
    };
    if first.value().name() != "strong" {
        return false;
    }
    let label = html::plain_text(first);
    matches!(
        label.as_str(),
        "Inherits:" | "Inherited By:" | "Experimental:" | "Deprecated:"
    )
}

/// Strip the project suffix from `<title>` ("Page — Godot Engine (stable) …" → "Page").
fn title_from_head(doc: &Html) -> String {
    let t = doc
        .select(&SEL_TITLE)
        .next()
        .map(html::plain_text)
        .unwrap_or_default();
    t.split(" — ").next().unwrap_or("").trim().to_string()
}

/// Normalize one Sphinx page: title from the `<h1>`, body without it.
pub fn normalize(body: &str, public_url: &str) -> Result<Normalized, NormalizeError> {
    normalize_with(body, public_url, &PageRules::default())
}

/// [`normalize`] with a source's [`PageRules`].
pub fn normalize_with(
    body: &str,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    normalize_doc(&Html::parse_document(body), public_url, rules)
}

/// [`normalize_with`] of a page already parsed.
pub fn normalize_doc(
    doc: &Html,
    public_url: &str,
    rules: &PageRules,
) -> Result<Normalized, NormalizeError> {
    let root = html::content_root(
        doc,
        rules,
        &*SEL_ROOTS,
        public_url,
        "div[itemprop=articleBody]",
    )?;
    let (h1, converted) = html::convert_without_h1(root, public_url, SphinxHooks::default(), rules);
    let mut title = h1.map(html::plain_text).unwrap_or_default();
    if title.is_empty() {
        title = title_from_head(doc);
    }
    let description = html::meta_description(doc)
        .map(|d| cut_marked(&d, 200))
        .unwrap_or_else(|| {
            let d = html::description_from_paragraphs(
                root,
                |p| !is_label_paragraph(p) && !html::in_aside_block(p, root),
                200,
            );
            if d.is_empty() {
                // Pages that open with a list: take its first item's text.
                html::description_from_paragraphs(root, |p| !is_label_paragraph(p), 200)
            } else {
                d
            }
        });
    html::finish(title, description, converted, public_url, "article body")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r##"<html><head><title>Thing — Godot Engine (stable) documentation</title></head><body>
<div class="wy-breadcrumbs"><a href="x">Edit on GitHub</a></div>
<div itemprop="articleBody"><section id="thing"><span id="doc-thing"></span>
<h1>Thing<a class="headerlink" href="#thing" title="Link to this heading">¶</a></h1>
<p>Things are nice, e.g. this one. They are.</p>
<section id="usage"><h2>Usage<a class="headerlink" href="#usage">¶</a></h2>
<p>See <a class="reference internal" href="../classes/class_node.html#class-node"><span class="std std-ref">Node</span></a>.</p>
</section></section></div>
<footer>Built with Sphinx</footer></body></html>"##;

    #[test]
    fn title_description_body() {
        let n = normalize(
            PAGE,
            "https://docs.godotengine.org/en/stable/tutorials/thing.html",
        )
        .expect("normalizes");
        assert_eq!(n.title, "Thing");
        assert_eq!(n.description, "Things are nice, e.g. this one.");
        assert_eq!(
            n.markdown,
            "Things are nice, e.g. this one. They are.\n\n## Usage\n\nSee \
             [Node](https://docs.godotengine.org/en/stable/classes/class_node.html#class-node)."
        );
        assert_eq!(n.anchors(), vec!["usage"]);
    }

    #[test]
    fn class_member_entries_become_headings() {
        let page = r##"<div itemprop="articleBody"><section id="node"><h1>Node</h1>
<section class="classref-descriptions-group" id="method-descriptions"><h2>Method Descriptions</h2>
<p class="classref-method" id="class-node-method-add-child"><abbr title="No return value.">void</abbr> <strong>add_child</strong>(node: <a href="#class-node">Node</a>) <a class="reference internal" href="#class-node-method-add-child"><span>🔗</span></a></p>
<p>Adds a child.</p><hr class="classref-item-separator docutils" />
<p class="classref-method"><abbr>void</abbr> <strong>add_child</strong>(a: int)</p><p>Overload.</p>
</section></section></div>"##;
        let n = normalize(page, "https://x.org/classes/class_node.html").expect("normalizes");
        assert_eq!(
            n.markdown,
            "## Method Descriptions\n\n### void add_child(node: Node)\n\nAdds a child.\n\n\
             ### void add_child(a: int)\n\nOverload."
        );
        assert_eq!(
            n.anchors(),
            vec![
                "method-descriptions",
                "class-node-method-add-child",
                "class-node-method-add-child"
            ]
        );
    }
}
