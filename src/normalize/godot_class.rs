//! Structured reading of a Godot class-reference page (`classes/class_*.html`).
//!
//! The generated reference has a fixed shape: after the `<h1>`, "Inherits:" /
//! "Inherited By:" paragraphs and the brief; then `section.classref-introduction-group`
//! (description, tutorials), `section.classref-reftable-group` (summary tables) and
//! `section.classref-descriptions-group` (one entry per member). A member entry is a
//! `p.classref-<kind>` whose `id` is the live anchor, followed by its description
//! paragraphs up to the next entry or `hr.classref-item-separator`. Overloads after
//! the first carry no `id`; they share the anchor of the entry before them, which is
//! where the live site's links for them point.

use std::sync::LazyLock;

use scraper::{CaseSensitivity, ElementRef, Html, Node, Selector};
use serde::{Deserialize, Serialize};

use super::html::{self, sel, Converter, NoHooks, NodeRef};
use super::NormalizeError;
use crate::util::collapse_whitespace;

static SEL_ROOT: LazyLock<Selector> = LazyLock::new(|| sel("div[itemprop=articleBody]"));
static SEL_H1: LazyLock<Selector> = LazyLock::new(|| sel("h1"));
static SEL_DESC_GROUPS: LazyLock<Selector> =
    LazyLock::new(|| sel("section.classref-descriptions-group"));
static SEL_INTRO_DESCRIPTION: LazyLock<Selector> =
    LazyLock::new(|| sel("section.classref-introduction-group#description"));
static SEL_TUTORIAL_LINKS: LazyLock<Selector> =
    LazyLock::new(|| sel("section.classref-introduction-group#tutorials li a[href]"));
static SEL_PROPERTY_ROWS: LazyLock<Selector> =
    LazyLock::new(|| sel("section.classref-reftable-group#properties tr"));
static SEL_STRONG: LazyLock<Selector> = LazyLock::new(|| sel("strong"));
static SEL_A: LazyLock<Selector> = LazyLock::new(|| sel("a[href]"));

/// A titled link (tutorials).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub title: String,
    pub url: String,
}

/// Which list of the class a member belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberKind {
    Property,
    Method,
    Signal,
    Constant,
    EnumValue,
    ThemeProperty,
    Annotation,
    Constructor,
    Operator,
}

impl MemberKind {
    fn from_class(class: &str) -> Option<Self> {
        Some(match class {
            "classref-property" => MemberKind::Property,
            "classref-method" => MemberKind::Method,
            "classref-signal" => MemberKind::Signal,
            "classref-constant" => MemberKind::Constant,
            "classref-enumeration-constant" => MemberKind::EnumValue,
            "classref-themeproperty" => MemberKind::ThemeProperty,
            "classref-annotation" => MemberKind::Annotation,
            "classref-constructor" => MemberKind::Constructor,
            "classref-operator" => MemberKind::Operator,
            _ => return None,
        })
    }
}

/// One documented member, as the reference shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub kind: MemberKind,
    /// `add_child`, `position`, `operator !=`, `@export`, `PROCESS_MODE_INHERIT`.
    pub name: String,
    /// The full entry line: return type/type, name, arguments with defaults, qualifiers.
    pub signature: String,
    /// Type of a property, theme property or enum value; return type of a method,
    /// constructor or operator.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Default value of a property or theme property.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Value of a constant or enum value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Setter method name of a property.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setter: Option<String>,
    /// Getter method name of a property.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub getter: Option<String>,
    /// `const`, `virtual`, `static`, `vararg`, `required`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qualifiers: Vec<String>,
    /// For a property row that only overrides a base-class default: the base class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<String>,
    /// Markdown of the member's description; empty when the page has none.
    pub description: String,
    /// Id on the live page (`class-node-method-add-child`).
    pub anchor: String,
    /// Public URL with the anchor as fragment.
    pub url: String,
}

/// An enumeration (or bit-flag set) with its values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GodotEnum {
    pub name: String,
    /// `flags` rather than `enum` (values combine as a bitmask).
    #[serde(default)]
    pub flags: bool,
    pub anchor: String,
    pub url: String,
    pub description: String,
    pub values: Vec<Member>,
}

/// A class-reference page, structured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GodotClass {
    pub name: String,
    /// Public URL of the page (no fragment).
    pub url: String,
    /// Ancestors, nearest first.
    pub inherits: Vec<String>,
    pub inherited_by: Vec<String>,
    /// One-line summary (Markdown).
    pub brief: String,
    /// Markdown of the Description section, preceded by any Experimental/Deprecated note.
    pub description: String,
    pub tutorials: Vec<Link>,
    pub properties: Vec<Member>,
    pub methods: Vec<Member>,
    pub signals: Vec<Member>,
    pub constants: Vec<Member>,
    pub enums: Vec<GodotEnum>,
    pub theme_properties: Vec<Member>,
    pub annotations: Vec<Member>,
    pub constructors: Vec<Member>,
    pub operators: Vec<Member>,
}

/// Whether a description opens as the class reference opens that of an API
/// it is phasing out (the page's "Deprecated:" label, as normalized here).
fn marked_deprecated(description: &str) -> bool {
    description.trim_start().starts_with("**Deprecated:**")
}

impl Member {
    /// A member with only its kind, name and anchor: what tests of the
    /// lookups need.
    #[cfg(test)]
    pub fn for_test(kind: MemberKind, name: &str, anchor: &str) -> Member {
        Member {
            kind,
            name: name.into(),
            signature: String::new(),
            type_: None,
            default: None,
            value: None,
            setter: None,
            getter: None,
            qualifiers: Vec::new(),
            overrides: None,
            description: String::new(),
            anchor: anchor.into(),
            url: String::new(),
        }
    }

    /// Whether the docs mark this member deprecated.
    pub fn is_deprecated(&self) -> bool {
        marked_deprecated(&self.description)
    }
}

impl GodotClass {
    /// Whether the docs mark the whole class deprecated.
    pub fn is_deprecated(&self) -> bool {
        marked_deprecated(&self.description)
    }

    /// The renames this page declares by deprecation: a deprecated class
    /// whose note names what to use instead ("**Deprecated:** Use the
    /// Parallax2D node instead") maps its name to that successor.
    ///
    /// Members' notes are left out: a member name is not unique across
    /// classes (`AnimationPlayer.get_root` is deprecated for `root_node`,
    /// `Tree.get_root` is not), so mapping it would send questions about
    /// the namesakes to the successor; and the deprecated member's own
    /// section, which names the successor, already answers its name.
    pub fn renames(&self) -> Vec<crate::aliases::Alias> {
        if !self.is_deprecated() || !crate::aliases::plausible_name(&self.name) {
            return Vec::new();
        }
        let note = self
            .description
            .trim_start()
            .split("\n\n")
            .next()
            .unwrap_or("");
        crate::aliases::successors(note)
            .into_iter()
            .filter(|new| *new != self.name)
            .map(|new| crate::aliases::Alias {
                old: self.name.clone(),
                new,
                from: self.url.clone(),
            })
            .collect()
    }

    /// Every member, enum values included, in page order per kind.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.properties
            .iter()
            .chain(&self.methods)
            .chain(&self.signals)
            .chain(&self.constants)
            .chain(self.enums.iter().flat_map(|e| e.values.iter()))
            .chain(&self.theme_properties)
            .chain(&self.annotations)
            .chain(&self.constructors)
            .chain(&self.operators)
    }
}

fn label_of(p: ElementRef<'_>) -> Option<String> {
    let first = p.child_elements().next()?;
    (first.value().name() == "strong").then(|| html::plain_text(first))
}

/// Names listed after a "Label:" in a paragraph, split on `sep`.
fn listed_names(p: ElementRef<'_>, label: &str, sep: char) -> Vec<String> {
    let t = html::plain_text(p);
    t.strip_prefix(label)
        .unwrap_or(&t)
        .split(sep)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The parts of an entry line around its `<strong>` name.
struct EntryParts {
    before: String,
    name: String,
    after: String,
    qualifiers: Vec<String>,
}

fn entry_parts(p: ElementRef<'_>) -> EntryParts {
    fn text_into(node: NodeRef<'_>, out: &mut String) {
        match node.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(e) => {
                if let Some(el) = ElementRef::wrap(node) {
                    if e.name() == "a" && html::plain_text(el).is_empty() {
                        return;
                    }
                    if e.name() == "a"
                        && e.attr("href").is_some_and(|h| h.starts_with('#'))
                        && html::plain_text(el) == "🔗"
                    {
                        return;
                    }
                }
                for c in node.children() {
                    text_into(c, out);
                }
            }
            _ => {}
        }
    }
    let mut parts = EntryParts {
        before: String::new(),
        name: String::new(),
        after: String::new(),
        qualifiers: Vec::new(),
    };
    let mut seen_name = false;
    for c in p.children() {
        if let Some(el) = ElementRef::wrap(c) {
            let name = el.value().name();
            if !seen_name && name == "strong" {
                parts.name = html::plain_text(el);
                seen_name = true;
                continue;
            }
            if seen_name && name == "abbr" {
                let q = html::plain_text(el);
                if !q.is_empty() {
                    parts.qualifiers.push(q);
                }
            }
        }
        let target = if seen_name {
            &mut parts.after
        } else {
            &mut parts.before
        };
        text_into(c, target);
    }
    parts.before = collapse_whitespace(&parts.before);
    parts.after = collapse_whitespace(&parts.after);
    parts
}

/// `= value` at the start of `after` → `value` (up to the end or the first qualifier).
fn value_after_eq(after: &str) -> Option<String> {
    let v = after.strip_prefix('=')?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

struct Parser<'a> {
    conv: Converter<'a, NoHooks>,
    page_url: String,
}

impl<'a> Parser<'a> {
    fn url_for(&self, anchor: &str) -> String {
        if anchor.is_empty() {
            self.page_url.clone()
        } else {
            format!("{}#{}", self.page_url, anchor)
        }
    }

    fn markdown(&mut self, nodes: Vec<NodeRef<'a>>) -> String {
        self.conv.convert_nodes(nodes).markdown
    }

    fn member(&self, kind: MemberKind, p: ElementRef<'a>, anchor: &str) -> Member {
        let signature = html::plain_text(p);
        let parts = entry_parts(p);
        let mut m = Member {
            kind,
            name: parts.name,
            signature,
            type_: None,
            default: None,
            value: None,
            setter: None,
            getter: None,
            qualifiers: parts.qualifiers,
            overrides: None,
            description: String::new(),
            anchor: anchor.to_string(),
            url: self.url_for(anchor),
        };
        let before = (!parts.before.is_empty()).then_some(parts.before);
        match kind {
            MemberKind::Property | MemberKind::ThemeProperty => {
                m.type_ = before;
                m.default = value_after_eq(&parts.after);
            }
            MemberKind::Constant | MemberKind::EnumValue => {
                m.type_ = before;
                m.value = value_after_eq(&parts.after);
            }
            MemberKind::Method | MemberKind::Constructor | MemberKind::Operator => {
                m.type_ = before;
            }
            MemberKind::Signal | MemberKind::Annotation => {}
        }
        m
    }

    fn setget(&self, ul: ElementRef<'a>, m: &mut Member) {
        for li in ul.child_elements() {
            let Some(strong) = li.select(&SEL_STRONG).next() else {
                continue;
            };
            let name = html::plain_text(strong);
            let text = html::plain_text(li);
            let args = text
                .split_once('(')
                .map(|(_, a)| a.trim_end_matches(')').trim().to_string())
                .unwrap_or_default();
            if args.is_empty() && m.getter.is_none() {
                m.getter = Some(name);
            } else if m.setter.is_none() {
                m.setter = Some(name);
            }
        }
    }
}

fn member_kind(p: ElementRef<'_>) -> Option<MemberKind> {
    if p.value().name() != "p" {
        return None;
    }
    p.value().classes().find_map(MemberKind::from_class)
}

fn is_enum_header(p: ElementRef<'_>) -> bool {
    p.value().name() == "p"
        && p.value()
            .has_class("classref-enumeration", CaseSensitivity::CaseSensitive)
}

fn is_separator(el: ElementRef<'_>) -> bool {
    el.value().name() == "hr"
}

/// Parse a class-reference page into its members. `public_url` is the page's public URL.
pub fn parse_class(html_body: &str, public_url: &str) -> Result<GodotClass, NormalizeError> {
    parse_class_doc(&Html::parse_document(html_body), public_url)
}

/// [`parse_class`] of a page already parsed (the build parses each class
/// page once, for its Markdown and for this record).
pub fn parse_class_doc(doc: &Html, public_url: &str) -> Result<GodotClass, NormalizeError> {
    let no_content = |why: &str| NormalizeError::NoContent {
        url: public_url.to_string(),
        why: why.to_string(),
    };
    let root = doc
        .select(&SEL_ROOT)
        .next()
        .ok_or_else(|| no_content("no div[itemprop=articleBody]"))?;
    let h1 = root
        .select(&SEL_H1)
        .next()
        .ok_or_else(|| no_content("no <h1> class name"))?;
    let page_url = public_url
        .split('#')
        .next()
        .unwrap_or(public_url)
        .to_string();
    let mut class = GodotClass {
        name: html::plain_text(h1),
        url: page_url.clone(),
        ..GodotClass::default()
    };
    let mut parser = Parser {
        conv: Converter::new(public_url, NoHooks),
        page_url,
    };

    // Lead: the paragraphs between the <h1> and the first section.
    let mut notes: Vec<NodeRef<'_>> = Vec::new();
    if let Some(top) = h1.parent().and_then(ElementRef::wrap) {
        for p in top.child_elements() {
            match p.value().name() {
                "section" => break,
                "p" => {}
                _ => continue,
            }
            match label_of(p).as_deref() {
                Some("Inherits:") => class.inherits = listed_names(p, "Inherits:", '<'),
                Some("Inherited By:") => class.inherited_by = listed_names(p, "Inherited By:", ','),
                Some("Experimental:" | "Deprecated:") => notes.push(*p),
                _ if class.brief.is_empty() => class.brief = parser.markdown(vec![*p]),
                _ => notes.push(*p),
            }
        }
    }
    let mut description = if notes.is_empty() {
        String::new()
    } else {
        parser.markdown(notes)
    };
    if let Some(sec) = root.select(&SEL_INTRO_DESCRIPTION).next() {
        let nodes: Vec<NodeRef<'_>> = sec
            .children()
            .filter(|n| {
                ElementRef::wrap(*n).is_none_or(|e| !matches!(e.value().name(), "h2" | "h3"))
            })
            .collect();
        let d = parser.markdown(nodes);
        if !description.is_empty() && !d.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(&d);
    }
    class.description = description;

    for a in root.select(&SEL_TUTORIAL_LINKS) {
        let href = a.value().attr("href").unwrap_or("");
        class.tutorials.push(Link {
            title: html::plain_text(a),
            url: parser.conv.absolute(href),
        });
    }

    // Property rows that only override a base-class default have no entry below.
    let mut overrides: Vec<Member> = Vec::new();
    for row in root.select(&SEL_PROPERTY_ROWS) {
        let cells: Vec<ElementRef<'_>> = row
            .child_elements()
            .filter(|c| c.value().name() == "td")
            .collect();
        let [ty, name, default] = cells.as_slice() else {
            continue;
        };
        let dtext = html::plain_text(*default);
        let Some(pos) = dtext.find("(overrides ") else {
            continue;
        };
        let base = dtext[pos + "(overrides ".len()..]
            .trim_end_matches(')')
            .trim()
            .to_string();
        let link = name.select(&SEL_A).next();
        let url = link
            .and_then(|a| a.value().attr("href"))
            .map(|h| parser.conv.absolute(h))
            .unwrap_or_default();
        let anchor = url
            .split_once('#')
            .map(|(_, f)| f.to_string())
            .unwrap_or_default();
        let pname = html::plain_text(*name);
        let ptype = html::plain_text(*ty);
        overrides.push(Member {
            kind: MemberKind::Property,
            signature: format!("{ptype} {pname} = {}", dtext[..pos].trim()),
            name: pname,
            type_: Some(ptype),
            default: Some(dtext[..pos].trim().to_string()),
            value: None,
            setter: None,
            getter: None,
            qualifiers: Vec::new(),
            overrides: Some(base),
            description: String::new(),
            anchor,
            url,
        });
    }

    for section in root.select(&SEL_DESC_GROUPS) {
        parse_descriptions(section, &mut parser, &mut class);
    }
    class.properties.extend(overrides);
    Ok(class)
}

/// Where the entry being read goes.
enum Target {
    None,
    Member(Member),
    Enum(GodotEnum),
    EnumValue(Member),
}

fn parse_descriptions<'a>(
    section: ElementRef<'a>,
    parser: &mut Parser<'a>,
    class: &mut GodotClass,
) {
    let mut target = Target::None;
    let mut desc: Vec<NodeRef<'a>> = Vec::new();
    let mut last_anchor = String::new();

    fn finish<'a>(
        target: &mut Target,
        desc: &mut Vec<NodeRef<'a>>,
        parser: &mut Parser<'a>,
        class: &mut GodotClass,
    ) {
        let md = if desc.is_empty() {
            String::new()
        } else {
            parser.markdown(std::mem::take(desc))
        };
        match std::mem::replace(target, Target::None) {
            Target::None => {}
            Target::Member(mut m) => {
                m.description = md;
                let list = match m.kind {
                    MemberKind::Property => &mut class.properties,
                    MemberKind::Method => &mut class.methods,
                    MemberKind::Signal => &mut class.signals,
                    MemberKind::Constant | MemberKind::EnumValue => &mut class.constants,
                    MemberKind::ThemeProperty => &mut class.theme_properties,
                    MemberKind::Annotation => &mut class.annotations,
                    MemberKind::Constructor => &mut class.constructors,
                    MemberKind::Operator => &mut class.operators,
                };
                list.push(m);
            }
            Target::Enum(mut e) => {
                e.description = md;
                class.enums.push(e);
            }
            Target::EnumValue(mut v) => {
                v.description = md;
                match class.enums.last_mut() {
                    Some(e) => e.values.push(v),
                    None => class.constants.push(v),
                }
            }
        }
    }

    for node in section.children() {
        let Some(el) = ElementRef::wrap(node) else {
            if !desc.is_empty() {
                desc.push(node);
            }
            continue;
        };
        let name = el.value().name();
        if matches!(name, "h2" | "h3") {
            continue;
        }
        if is_separator(el) {
            finish(&mut target, &mut desc, parser, class);
            continue;
        }
        if is_enum_header(el) {
            finish(&mut target, &mut desc, parser, class);
            if let Some(id) = el.value().id() {
                last_anchor = id.to_string();
            }
            let text = html::plain_text(el);
            let parts = entry_parts(el);
            target = Target::Enum(GodotEnum {
                name: parts.name,
                flags: text.starts_with("flags"),
                url: parser.url_for(&last_anchor),
                anchor: last_anchor.clone(),
                description: String::new(),
                values: Vec::new(),
            });
            continue;
        }
        if let Some(kind) = member_kind(el) {
            // An enum's own description ends at its first value; the enum stays open.
            match std::mem::replace(&mut target, Target::None) {
                Target::Enum(mut e) if kind == MemberKind::EnumValue => {
                    e.description = if desc.is_empty() {
                        String::new()
                    } else {
                        parser.markdown(std::mem::take(&mut desc))
                    };
                    class.enums.push(e);
                }
                other => {
                    target = other;
                    finish(&mut target, &mut desc, parser, class);
                }
            }
            if let Some(id) = el.value().id() {
                last_anchor = id.to_string();
            }
            let m = parser.member(kind, el, &last_anchor);
            target = if kind == MemberKind::EnumValue {
                Target::EnumValue(m)
            } else {
                Target::Member(m)
            };
            continue;
        }
        if name == "ul"
            && el
                .value()
                .has_class("classref-property-setget", CaseSensitivity::CaseSensitive)
        {
            if let Target::Member(m) = &mut target {
                parser.setget(el, m);
            }
            continue;
        }
        if !matches!(target, Target::None) {
            desc.push(node);
        }
    }
    finish(&mut target, &mut desc, parser, class);
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r##"<div itemprop="articleBody"><section id="node"><span id="class-node"></span><h1>Node</h1>
<p><strong>Inherits:</strong> <a href="class_object.html#class-object">Object</a></p>
<p>Base class for all scene objects.</p>
<section class="classref-introduction-group" id="description"><h2>Description</h2><p>Nodes are <em>building blocks</em>.</p></section>
<section class="classref-introduction-group" id="tutorials"><h2>Tutorials</h2><ul><li><p><a href="../getting_started/nodes.html">Nodes and scenes</a></p></li></ul></section>
<section class="classref-descriptions-group" id="enumerations"><h2>Enumerations</h2>
<p class="classref-enumeration" id="enum-node-processmode">enum <strong>ProcessMode</strong>: <a href="#enum-node-processmode">🔗</a></p>
<p class="classref-enumeration-constant" id="class-node-constant-process-mode-inherit"><a href="#enum-node-processmode">ProcessMode</a> <strong>PROCESS_MODE_INHERIT</strong> = <code>0</code></p>
<p>Inherits the mode.</p>
</section>
<section class="classref-descriptions-group" id="property-descriptions"><h2>Property Descriptions</h2>
<p class="classref-property" id="class-node-property-name"><a href="class_stringname.html">StringName</a> <strong>name</strong> = <code>&quot;&quot;</code> <a href="#class-node-property-name">🔗</a></p>
<ul class="classref-property-setget simple"><li><p><abbr>void</abbr> <strong>set_name</strong>(value: StringName)</p></li><li><p>StringName <strong>get_name</strong>()</p></li></ul>
<p>The name of the node.</p>
</section>
<section class="classref-descriptions-group" id="method-descriptions"><h2>Method Descriptions</h2>
<p class="classref-method" id="class-node-method-get-child"><a href="#class-node">Node</a> <strong>get_child</strong>(idx: <a>int</a>, include_internal: <a>bool</a> = false) <abbr title="x">const</abbr> <a href="#class-node-method-get-child">🔗</a></p>
<p>Fetches a child.</p>
<hr class="classref-item-separator docutils" />
</section></section></div>"##;

    #[test]
    fn parses_members() {
        let c = parse_class(
            PAGE,
            "https://docs.godotengine.org/en/stable/classes/class_node.html",
        )
        .expect("parses");
        assert_eq!(c.name, "Node");
        assert_eq!(c.inherits, vec!["Object"]);
        assert_eq!(c.brief, "Base class for all scene objects.");
        assert_eq!(c.description, "Nodes are *building blocks*.");
        assert_eq!(c.tutorials.len(), 1);
        assert_eq!(
            c.tutorials[0].url,
            "https://docs.godotengine.org/en/stable/getting_started/nodes.html"
        );
        assert_eq!(c.enums.len(), 1);
        assert_eq!(c.enums[0].name, "ProcessMode");
        assert_eq!(c.enums[0].values[0].value.as_deref(), Some("0"));
        assert_eq!(c.enums[0].values[0].description, "Inherits the mode.");
        let p = &c.properties[0];
        assert_eq!(p.type_.as_deref(), Some("StringName"));
        assert_eq!(p.default.as_deref(), Some("\"\""));
        assert_eq!(p.setter.as_deref(), Some("set_name"));
        assert_eq!(p.getter.as_deref(), Some("get_name"));
        let m = &c.methods[0];
        assert_eq!(
            m.signature,
            "Node get_child(idx: int, include_internal: bool = false) const"
        );
        assert_eq!(m.qualifiers, vec!["const"]);
        assert_eq!(m.type_.as_deref(), Some("Node"));
        assert_eq!(
            m.url,
            "https://docs.godotengine.org/en/stable/classes/class_node.html#class-node-method-get-child"
        );
        assert_eq!(m.description, "Fetches a child.");
    }

    #[test]
    fn deprecation_notes_name_successors() {
        let mut c = parse_class(PAGE, "https://x/class_node.html").expect("parses");
        c.description = "**Deprecated:** Use the [Branch2D](https://x/class_branch2d.html) node \
                         instead.\n\nNodes are building blocks."
            .into();
        c.methods[0].description =
            "**Deprecated:** Use [Branch2D.child_at()](https://x#m) instead.\n\nFetches a child."
                .into();
        // A member whose note points nowhere, and one not deprecated.
        c.properties[0].description = "**Deprecated:** This is ignored.".into();
        let renames = |c: &GodotClass| -> Vec<(String, String)> {
            c.renames().into_iter().map(|a| (a.old, a.new)).collect()
        };
        // The class maps to its successor; its deprecated member does not
        // (namesakes in other classes are not deprecated).
        assert_eq!(
            renames(&c),
            vec![("Node".to_string(), "Branch2D".to_string())]
        );
        c.description = "Nodes are building blocks.".into();
        assert!(renames(&c).is_empty());
    }
}
