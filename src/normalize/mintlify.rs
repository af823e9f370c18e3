//! Mintlify sites (code.claude.com, modelcontextprotocol.io): pages read from
//! their `.md` alternates, which are the MDX source behind the page.
//!
//! The alternate starts with boilerplate the HTML page does not show (a
//! "Documentation Index" blockquote pointing agents at llms.txt), then
//! `# Title` and `> description`, then MDX using Mintlify's component library.
//! The components are rendered here; Cursor's scraped Mintlify-era pages use
//! the same library, so its adapter shares this renderer.

use super::mdx::{
    self, block_or_nothing, callout, indent, titled, Dialect, Elem, Node, Out, Renderer,
};
use super::{NormalizeError, Normalized};
use crate::markdown::code_span;
use crate::util::collapse_whitespace;

/// Normalize a Mintlify Markdown alternate.
pub fn normalize(body: &str, public_url: &str) -> Result<Normalized, NormalizeError> {
    let text = mdx::prepare(body);
    let text = strip_doc_index(&text);
    let (header, rest) = mdx::take_header(text);
    mdx::finish(header, &rest, public_url, DIALECT)
}

/// Mintlify ids every heading level; raw HTML headings stay unanchored.
pub(crate) const DIALECT: Dialect = Dialect {
    anchored_levels: (1, 6),
    slug_html_headings: false,
    components: &[render],
};

/// Drop a leading blockquote that only tells agents where llms.txt is.
pub(crate) fn strip_doc_index(text: &str) -> &str {
    let start = text.len() - text.trim_start().len();
    let body = &text[start..];
    if !body.starts_with('>') {
        return text;
    }
    let mut end = 0;
    let mut quote = String::new();
    for line in body.split_inclusive('\n') {
        if !line.starts_with('>') {
            break;
        }
        end += line.len();
        quote.push_str(line);
    }
    if quote.contains("Documentation Index")
        || quote.contains("llms.txt") && quote.contains("Fetch the complete")
    {
        &body[end..]
    } else {
        text
    }
}

fn callout_label(e: &Elem) -> Option<String> {
    let label = match e.name.as_str() {
        "Note" | "Tip" | "Warning" | "Info" | "Danger" | "Check" | "Caution" | "Important"
        | "Success" | "Error" => e.name.clone(),
        "WarningTip" => "Warning".into(),
        "Callout" | "Alert" | "CodexCallout" | "Aside" => {
            let kind = e
                .attr("title")
                .or_else(|| e.attr("type"))
                .or_else(|| e.attr("variant").filter(|v| v != "soft" && v != "outline"))
                .or_else(|| e.attr("color"))
                .unwrap_or_else(|| "Note".into());
            let mut c = kind.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => "Note".into(),
            }
        }
        _ => return None,
    };
    Some(label)
}

/// Render a Mintlify component; `None` for anything this library lacks.
pub(crate) fn render(r: &Renderer, e: &Elem) -> Option<Out> {
    if let Some(label) = callout_label(e) {
        let mut body = r.block(&e.children);
        if let Some(d) = e.attr("description") {
            body = if body.is_empty() {
                d
            } else {
                format!("{d}\n\n{body}")
            };
        }
        return Some(Out::Block(callout(&label, &body)));
    }
    let out = match e.name.as_str() {
        "Steps" | "WorkflowSteps" if has_child(e, "Step") => block_or_nothing(steps(r, e)),
        "Step" => block_or_nothing(step(r, e, None)),
        "Tabs" if has_child(e, "Tab") => block_or_nothing(labelled_children(r, e, "Tab")),
        "Tab" => block_or_nothing(titled(
            &e.attr("title").unwrap_or_default(),
            &r.block(&e.children),
        )),
        "CodeGroup" | "RequestExample" | "ResponseExample" => {
            block_or_nothing(r.block(&e.children))
        }
        "CardGroup" | "Columns" => block_or_nothing(card_group(r, e)),
        "Card" => block_or_nothing(card(r, e)),
        "AccordionGroup" => block_or_nothing(r.block(&e.children)),
        "Accordion" | "Expandable" | "ToggleSection" => block_or_nothing(titled(
            &e.attr("title").unwrap_or_default(),
            &r.block(&e.children),
        )),
        "Frame" => {
            let body = r.block(&e.children);
            let out = match e
                .attr("caption")
                .map(|c| collapse_whitespace(&c))
                .filter(|c| !c.is_empty())
            {
                Some(c) if body.is_empty() => format!("*{c}*"),
                Some(c) => format!("{body}\n\n*{c}*"),
                None => body,
            };
            block_or_nothing(out)
        }
        "Update" => block_or_nothing(update(r, e)),
        "ResponseField" | "ParamField" | "Field" => block_or_nothing(field(r, e)),
        "Tree" | "Tree.Folder" | "Tree.File" => {
            block_or_nothing(tree(std::slice::from_ref(&Node::Elem(e.clone())), 0))
        }
        "Kbd" => Out::Inline(code_span(&collapse_whitespace(&r.plain(&e.children)))),
        "SlackInlineMessage" => match e.attr("message") {
            Some(m) => Out::Inline(code_span(&m)),
            None => Out::Nothing,
        },
        "Tooltip" | "Badge" | "Mention" => Out::Inline(r.render_nodes(&e.children, false)),
        "Icon" => Out::Nothing,
        _ => return None,
    };
    Some(out)
}

fn has_child(e: &Elem, name: &str) -> bool {
    e.children
        .iter()
        .any(|c| matches!(c, Node::Elem(x) if x.name == name))
}

/// Render each child separately, skipping whitespace between them.
fn rendered_children<'a>(
    r: &Renderer,
    e: &'a Elem,
    mut f: impl FnMut(&'a Elem) -> Option<String>,
) -> Vec<String> {
    let mut items = Vec::new();
    for c in &e.children {
        let s = match c {
            Node::Elem(x) => match f(x) {
                Some(s) => s,
                None => r.block(std::slice::from_ref(c)),
            },
            other => r.block(std::slice::from_ref(other)),
        };
        if !s.trim().is_empty() {
            items.push(s);
        }
    }
    items
}

fn steps(r: &Renderer, e: &Elem) -> String {
    let mut k = 0;
    rendered_children(r, e, |s| {
        (s.name == "Step").then(|| {
            k += 1;
            step(r, s, Some(k))
        })
    })
    .join("\n\n")
}

/// `N. **Title**` with the step's content under it. Step titles are not
/// headings on the live page (no id), so they are not Markdown headings here.
fn step(r: &Renderer, s: &Elem, n: Option<usize>) -> String {
    let body = r.block(&s.children);
    let title = s
        .attr("title")
        .map(|t| collapse_whitespace(&t))
        .filter(|t| !t.is_empty());
    let Some(n) = n else {
        return titled(&title.unwrap_or_default(), &body);
    };
    let marker = format!("{n}. ");
    match (title, body.is_empty()) {
        (Some(t), true) => format!("{marker}**{t}**"),
        (Some(t), false) => format!("{marker}**{t}**\n\n{}", indent(&body, marker.len())),
        (None, true) => String::new(),
        (None, false) => {
            let mut lines = body.lines();
            let first = lines.next().unwrap_or("");
            let rest: Vec<&str> = lines.collect();
            if rest.is_empty() {
                format!("{marker}{first}")
            } else {
                format!(
                    "{marker}{first}\n{}",
                    indent(&rest.join("\n"), marker.len())
                )
            }
        }
    }
}

/// Tabs and similar: each child as a bold label line followed by its content.
fn labelled_children(r: &Renderer, e: &Elem, child: &str) -> String {
    rendered_children(r, e, |t| {
        (t.name == child)
            .then(|| titled(&t.attr("title").unwrap_or_default(), &r.block(&t.children)))
    })
    .join("\n\n")
}

fn card_group(r: &Renderer, e: &Elem) -> String {
    let items = rendered_children(r, e, |c| (c.name == "Card").then(|| card(r, c)));
    let one_line = items.iter().all(|i| !i.contains('\n'));
    items.join(if one_line { "\n" } else { "\n\n" })
}

/// `- [title](href): text`. Card titles are h2s without id on the live page, so
/// they are never Markdown headings.
fn card(r: &Renderer, e: &Elem) -> String {
    let title = e
        .attr("title")
        .map(|t| collapse_whitespace(&t))
        .unwrap_or_default();
    let href = e.attr("href").unwrap_or_default();
    let body = r.block(&e.children);
    let head = match (title.is_empty(), href.is_empty()) {
        (false, false) => format!("[{}]({})", title.replace(['[', ']'], ""), href),
        (false, true) => format!("**{title}**"),
        (true, false) => format!("<{href}>"),
        (true, true) => String::new(),
    };
    if body.is_empty() {
        return if head.is_empty() {
            String::new()
        } else {
            format!("- {head}")
        };
    }
    if !body.contains("\n\n")
        && !body.contains("```")
        && !body
            .lines()
            .any(|l| l.trim_start().starts_with(['-', '*', '|', '>', '#']))
    {
        let b = collapse_whitespace(&body);
        return if head.is_empty() {
            format!("- {b}")
        } else {
            format!("- {head}: {b}")
        };
    }
    if head.is_empty() {
        format!("- {}", indent(&body, 2).trim_start())
    } else {
        format!("- {head}\n\n{}", indent(&body, 2))
    }
}

/// A changelog entry: the live page gives each one an id (its label's slug)
/// and lists it in the table of contents, so it is a section of its own.
fn update(r: &Renderer, e: &Elem) -> String {
    let body = r.block(&e.children);
    let label = e
        .attr("label")
        .map(|l| collapse_whitespace(&l))
        .unwrap_or_default();
    let mut meta = e
        .attr("description")
        .map(|d| collapse_whitespace(&d))
        .unwrap_or_default();
    if let Some(tags) = e.expr("tags") {
        if let Some(mdx::Js::Arr(items)) = mdx::JsParser::new(tags, 0).value() {
            let tags: Vec<String> = items.iter().filter_map(mdx::Js::text).collect();
            if !tags.is_empty() {
                meta = if meta.is_empty() {
                    tags.join(", ")
                } else {
                    format!("{meta} ({})", tags.join(", "))
                };
            }
        }
    }
    let mut out = String::new();
    if !label.is_empty() {
        out.push_str(&format!("## {label}\n\n"));
    }
    if !meta.is_empty() {
        out.push_str(&format!("*{meta}*\n\n"));
    }
    out.push_str(&body);
    out.trim_end().to_string()
}

/// `- **`name`** (`type`, required): description`, nested content indented.
fn field(r: &Renderer, e: &Elem) -> String {
    let name = ["name", "path", "query", "body", "header", "param"]
        .iter()
        .find_map(|k| e.attr(k))
        .unwrap_or_default();
    let mut facts = Vec::new();
    if let Some(t) = e.attr("type").filter(|t| !t.is_empty()) {
        facts.push(code_span(&t));
    }
    if e.flag("required") {
        facts.push("required".to_string());
    }
    if let Some(d) = e.attr("default").filter(|d| !d.is_empty()) {
        facts.push(format!("default: {}", code_span(&d)));
    }
    let mut head = if name.is_empty() {
        String::new()
    } else {
        format!("**{}**", code_span(&name))
    };
    if !facts.is_empty() {
        head = format!("{head} ({})", facts.join(", ")).trim().to_string();
    }
    let body = r.block(&e.children);
    if body.is_empty() {
        return if head.is_empty() {
            String::new()
        } else {
            format!("- {head}")
        };
    }
    if !body.contains("\n\n") && !body.contains("```") && !body.contains("\n- ") {
        return format!("- {head}: {}", collapse_whitespace(&body));
    }
    format!("- {head}\n\n{}", indent(&body, 2))
}

fn tree(nodes: &[Node], depth: usize) -> String {
    let mut lines = Vec::new();
    for n in nodes {
        let Node::Elem(e) = n else { continue };
        let pad = "  ".repeat(depth);
        match e.name.as_str() {
            "Tree" => lines.push(tree(&e.children, depth)),
            "Tree.Folder" => {
                lines.push(format!("{pad}- {}/", e.attr("name").unwrap_or_default()));
                let inner = tree(&e.children, depth + 1);
                if !inner.is_empty() {
                    lines.push(inner);
                }
            }
            "Tree.File" => lines.push(format!("{pad}- {}", e.attr("name").unwrap_or_default())),
            _ => {}
        }
    }
    lines.retain(|l| !l.is_empty());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(src: &str) -> Normalized {
        normalize(src, "https://code.claude.com/docs/en/page").expect("normalizes")
    }

    #[test]
    fn lifts_doc_index_title_and_description() {
        let n = norm("> ## Documentation Index\n> Fetch the complete documentation index at: https://code.claude.com/docs/llms.txt\n> Use this file to discover all available pages before exploring further.\n\n# Overview\n\n> Claude Code is a tool.\n\nBody [link](/docs/en/x.md).\n");
        assert_eq!(n.title, "Overview");
        assert_eq!(n.description, "Claude Code is a tool.");
        assert_eq!(
            n.markdown,
            "Body [link](https://code.claude.com/docs/en/x)."
        );
        assert!(n.anchors().is_empty());
    }

    #[test]
    fn update_entries_are_sections() {
        let n = norm("# Changelog\n\n<Update label=\"2.1.240\" description=\"August 22, 2026\">\n  * Fixes\n</Update>\n");
        assert_eq!(n.markdown, "## 2.1.240\n\n*August 22, 2026*\n\n* Fixes");
    }

    #[test]
    fn nested_components_keep_structure() {
        let src = "# T\n\n1. Step one\n   <Note>\n     Inside a list.\n   </Note>\n2. Step two\n\n<Tabs>\n  <Tab title=\"A\">\n    <Steps>\n      <Step title=\"Go\">\n        ### Real heading\n\n        text\n      </Step>\n    </Steps>\n  </Tab>\n</Tabs>\n";
        let n = norm(src);
        assert_eq!(
            n.markdown,
            "1. Step one\n\n   > **Note:** Inside a list.\n\n2. Step two\n\n**A**\n\n1. **Go**\n\n   ### Real heading\n\n   text"
        );
    }

    #[test]
    fn tree_and_expandable() {
        let src = "# T\n\n<Tree>\n  <Tree.Folder name=\"src\" defaultOpen>\n    <Tree.File name=\"main.rs\" />\n  </Tree.Folder>\n</Tree>\n\n<Expandable title=\"properties\">\n  <ResponseField name=\"a\" type=\"int\">A.</ResponseField>\n</Expandable>";
        assert_eq!(
            norm(src).markdown,
            "- src/\n  - main.rs\n\n**properties**\n\n- **`a`** (`int`): A."
        );
    }
}
