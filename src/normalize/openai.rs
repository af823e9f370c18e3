//! developers.openai.com (Astro): each page has a Markdown twin (`<page>.md`).
//!
//! The twins are MDX with Astro components. Some carry real content in props
//! rather than children — reference tables (`<ConfigTable options={…}>`, data
//! sometimes in an `export const` of the same page), file trees, model cards,
//! tab labels, example prompts — so those are rendered from their props;
//! interactive widgets (demos, download buttons) have no text and vanish.
//! The twins have no description line; the description stays empty.

use super::mdx::{
    self, block_or_nothing, heading_with_id, indent, table_cell, titled, Dialect, Elem, Js,
    JsParser, Node, Out, Renderer,
};
use super::{NormalizeError, Normalized};
use crate::markdown::{code_span, fenced};
use crate::util::collapse_whitespace;

/// Normalize a developers.openai.com Markdown twin.
pub fn normalize(body: &str, public_url: &str) -> Result<Normalized, NormalizeError> {
    let text = mdx::prepare(body);
    let (header, rest) = mdx::take_header(&text);
    mdx::finish(header, &rest, public_url, DIALECT)
}

/// Astro leaves body-level h1s without id and slugs raw HTML headings like
/// Markdown ones; the site's own components first, then Mintlify-style
/// ones it shares.
const DIALECT: Dialect = Dialect {
    anchored_levels: (2, 6),
    slug_html_headings: true,
    components: &[render, super::mintlify::render],
};

/// Render an Astro component of this site; `None` leaves it to the shared
/// renderers.
pub(crate) fn render(r: &Renderer, e: &Elem) -> Option<Out> {
    let out = match e.name.as_str() {
        "ConfigTable" => block_or_nothing(config_table(r, e)),
        "GlossaryTable" => block_or_nothing(glossary_table(r, e)),
        "FileTree" => block_or_nothing(file_tree(r, e)),
        "Tabs" if e.expr("tabs").is_some() => block_or_nothing(slotted(r, e, "tabs", "id", "slot")),
        "ContentSwitcher" if e.expr("options").is_some() => {
            block_or_nothing(slotted(r, e, "options", "value", "data-value"))
        }
        "CodexScreenshot" => {
            let src = e
                .attr("lightSrc")
                .or_else(|| e.attr("src"))
                .or_else(|| e.attr("darkSrc"));
            match src {
                Some(s) => Out::Block(format!(
                    "![{}]({s})",
                    collapse_whitespace(&e.attr("alt").unwrap_or_default())
                )),
                None => Out::Nothing,
            }
        }
        "YouTubeEmbed" => match e.attr("videoId") {
            Some(id) => {
                let title = e.attr("title").unwrap_or_else(|| "Video".into());
                Out::Block(format!(
                    "[Video: {}](https://www.youtube.com/watch?v={id})",
                    collapse_whitespace(&title)
                ))
            }
            None => Out::Nothing,
        },
        "CtaPillLink" | "ButtonLink" => {
            let label = e.attr("label").unwrap_or_else(|| r.inline(&e.children));
            match e.attr("href") {
                Some(h) if !label.is_empty() => {
                    Out::Block(format!("[{}]({h})", collapse_whitespace(&label)))
                }
                _ if !label.is_empty() => Out::Block(label),
                _ => Out::Nothing,
            }
        }
        // A callout with a target is a link card on the page.
        "LinkCard" | "CodexCallout" if e.name == "LinkCard" || e.attr("href").is_some() => {
            let title = e.attr("title").unwrap_or_default();
            let desc = e.attr("description").unwrap_or_default();
            let head = match e.attr("href") {
                Some(h) if !title.is_empty() => format!("[{title}]({h})"),
                _ => title,
            };
            match (head.is_empty(), desc.is_empty()) {
                (true, true) => Out::Nothing,
                (false, true) => Out::Block(format!("- {head}")),
                (true, false) => Out::Block(format!("- {desc}")),
                (false, false) => Out::Block(format!("- {head}: {desc}")),
            }
        }
        "BentoContent" => {
            let mut body = r.block(&e.children);
            if let Some(h) = e.attr("href").filter(|h| !h.is_empty()) {
                body = format!("{body}\n\n[Read more]({h})");
            }
            block_or_nothing(body)
        }
        // Used as the text of a surrounding Markdown link: stays inline.
        "IconItem" => {
            let title = collapse_whitespace(&e.attr("title").unwrap_or_default());
            let body = r.inline(&e.children);
            Out::Inline(match (title.is_empty(), body.is_empty()) {
                (true, _) => body,
                (false, true) => format!("**{title}**"),
                (false, false) => format!("**{title}**: {body}"),
            })
        }
        "ExampleTask" => block_or_nothing(example_task(e)),
        "PricingCard" => block_or_nothing(pricing_card(r, e)),
        "ModelDetails" => block_or_nothing(model_details(e)),
        "CodexPlanFeatureMatrix" => block_or_nothing(feature_matrix(r, e)),
        "ToggleSection" => block_or_nothing(titled(
            &e.attr("title").unwrap_or_default(),
            &r.block(&e.children),
        )),
        "ElevatedRiskBadge" => Out::Nothing,
        _ => return None,
    };
    Some(out)
}

/// The `options` prop: an inline literal or the name of an exported one.
fn options<'a>(r: &'a Renderer, e: &Elem, prop: &str) -> Option<std::borrow::Cow<'a, Js>> {
    let src = e.expr(prop)?;
    match JsParser::new(src, 0).value()? {
        Js::Ident(name) => r.exports.get(&name).map(std::borrow::Cow::Borrowed),
        v => Some(std::borrow::Cow::Owned(v)),
    }
}

fn rows(v: &Js) -> &[Js] {
    match v {
        Js::Arr(items) => items,
        _ => &[],
    }
}

/// Reference table of keys or flags, as the page shows it:
/// Key | Type / Values | Details.
fn config_table(r: &Renderer, e: &Elem) -> String {
    let Some(opts) = options(r, e, "options") else {
        return String::new();
    };
    let second = e
        .attr("secondColumnTitle")
        .unwrap_or_else(|| "Type / Values".into());
    let second_key = e
        .attr("secondColumnVariant")
        .unwrap_or_else(|| "type".into());
    let mut out = format!(
        "| Key | {} | Details |\n| --- | --- | --- |\n",
        table_cell(&second)
    );
    let mut any = false;
    for row in rows(&opts) {
        let Some(key) = row.str_of("key") else {
            continue;
        };
        any = true;
        let kind = row
            .str_of(&second_key)
            .or_else(|| row.str_of("type"))
            .unwrap_or_default();
        let kind = if second_key == "type" {
            code_span(&kind)
        } else {
            kind
        };
        let mut details = row.str_of("description").unwrap_or_default();
        if let Some(d) = row.str_of("defaultValue").or_else(|| row.str_of("default")) {
            details = format!("{details} Default: {}.", code_span(&d))
                .trim()
                .to_string();
        }
        let key = match row.str_of("href") {
            Some(h) => format!("[{}]({h})", code_span(&key)),
            None => code_span(&key),
        };
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            table_cell(&key),
            table_cell(&kind),
            table_cell(&details)
        ));
    }
    if any {
        out.trim_end().to_string()
    } else {
        String::new()
    }
}

fn glossary_table(r: &Renderer, e: &Elem) -> String {
    let Some(opts) = options(r, e, "options") else {
        return String::new();
    };
    let mut out = String::from("| Term | Applies to | Definition |\n| --- | --- | --- |\n");
    for row in rows(&opts) {
        let Some(key) = row.str_of("key") else {
            continue;
        };
        let term = match row.str_of("href") {
            Some(h) => format!("[{key}]({h})"),
            None => key,
        };
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            table_cell(&term),
            table_cell(&row.str_of("appliesTo").unwrap_or_default()),
            table_cell(&row.str_of("description").unwrap_or_default())
        ));
    }
    out.trim_end().to_string()
}

fn file_tree(r: &Renderer, e: &Elem) -> String {
    fn walk(items: &[Js], depth: usize, out: &mut Vec<String>) {
        for it in items {
            let Some(name) = it.str_of("name") else {
                continue;
            };
            let pad = "  ".repeat(depth);
            match it.str_of("comment") {
                Some(c) => out.push(format!("{pad}- {} — {c}", code_span(&name))),
                None => out.push(format!("{pad}- {}", code_span(&name))),
            }
            if let Some(Js::Arr(children)) = it.get("children") {
                walk(children, depth + 1, out);
            }
        }
    }
    let Some(tree) = options(r, e, "tree") else {
        return String::new();
    };
    let mut lines = Vec::new();
    walk(rows(&tree), 0, &mut lines);
    lines.join("\n")
}

/// Components whose children are panes picked by a prop list of labels
/// (`<Tabs tabs={[{id, label}]}>` with `<div slot="id">`): each pane under its
/// label.
fn slotted(r: &Renderer, e: &Elem, prop: &str, id_key: &str, slot_attr: &str) -> String {
    let labels: Vec<(String, String)> = options(r, e, prop)
        .map(|v| {
            rows(&v)
                .iter()
                .filter_map(|t| Some((t.str_of(id_key)?, t.str_of("label")?)))
                .collect()
        })
        .unwrap_or_default();
    let mut parts = Vec::new();
    for c in &e.children {
        let rendered = r.block(std::slice::from_ref(c));
        if rendered.is_empty() {
            continue;
        }
        let label = match c {
            Node::Elem(p) => p.attr(slot_attr).and_then(|s| {
                labels
                    .iter()
                    .find(|(id, _)| *id == s)
                    .map(|(_, l)| l.clone())
            }),
            _ => None,
        };
        parts.push(titled(&label.unwrap_or_default(), &rendered));
    }
    parts.join("\n\n")
}

/// An example prompt card: its title (the short description, else the
/// prompt) and the prompt itself, which the page shows for copying.
fn example_task(e: &Elem) -> String {
    let prompt = e
        .attr("prompt")
        .or_else(|| e.expr("prompt").and_then(mdx::string_expr))
        .unwrap_or_default();
    let prompt = prompt.trim();
    let title = e
        .attr("shortDescription")
        .map(|t| collapse_whitespace(&t))
        .filter(|t| !t.is_empty());
    match (title, prompt.is_empty()) {
        (None, true) => String::new(),
        (Some(t), true) => format!("**{t}**"),
        (Some(t), false) if t != prompt => {
            format!("**{t}**\n\n{}", fenced("text", prompt))
        }
        _ => fenced("text", prompt),
    }
}

fn pricing_card(r: &Renderer, e: &Elem) -> String {
    let name = collapse_whitespace(&e.attr("name").unwrap_or_default());
    let mut price = [e.attr("priceEyebrow"), e.attr("price")]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(interval) = e
        .attr("interval")
        .filter(|s| !s.is_empty() && !price.is_empty())
    {
        price.push_str(&interval);
    }
    let mut head = if name.is_empty() {
        String::new()
    } else {
        format!("**{name}**")
    };
    if !price.is_empty() {
        head = format!("{head} ({price})").trim().to_string();
    }
    if let Some(s) = e.attr("subtitle").filter(|s| !s.is_empty()) {
        head = format!("{head}: {s}");
    }
    let body = r.block(&e.children);
    match (head.is_empty(), body.is_empty()) {
        (true, _) => body,
        (false, true) => format!("- {head}"),
        (false, false) => format!("- {head}\n\n{}", indent(&body, 2)),
    }
}

/// Plan × feature availability (an empty widget on the page; the data is in
/// the props): one table per feature section.
fn feature_matrix(r: &Renderer, e: &Elem) -> String {
    let Some(data) = options(r, e, "data") else {
        return String::new();
    };
    let plans: Vec<(String, String)> = data
        .get("plans")
        .map(rows)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            Some((
                p.str_of("id")?,
                p.str_of("label").or_else(|| p.str_of("shortLabel"))?,
            ))
        })
        .collect();
    if plans.is_empty() {
        return String::new();
    }
    let mut out = Vec::new();
    for section in data.get("sections").map(rows).unwrap_or_default() {
        let mut table = format!(
            "| Feature | {} |\n|{}",
            plans
                .iter()
                .map(|(_, l)| table_cell(l))
                .collect::<Vec<_>>()
                .join(" | "),
            " --- |".repeat(plans.len() + 1)
        );
        let mut any = false;
        for f in section.get("features").map(rows).unwrap_or_default() {
            let Some(name) = f.str_of("name") else {
                continue;
            };
            any = true;
            let name = match f.str_of("href") {
                Some(h) => format!("[{name}]({h})"),
                None => name,
            };
            let cells: Vec<String> = plans
                .iter()
                .map(|(id, _)| {
                    let v = f.get("availability").and_then(|a| a.get(id));
                    let text = v
                        .and_then(Js::text)
                        .or_else(|| v.and_then(|v| v.str_of("label")))
                        .unwrap_or_default();
                    table_cell(&text)
                })
                .collect();
            table.push_str(&format!(
                "\n| {} | {} |",
                table_cell(&name),
                cells.join(" | ")
            ));
        }
        if any {
            let title = section
                .str_of("title")
                .map(|t| format!("**{t}**\n\n"))
                .unwrap_or_default();
            out.push(format!("{title}{table}"));
        }
    }
    out.join("\n\n")
}

/// A model card: the live page shows the name as an `h3` with id
/// `model-<slug>`, so it is a section with that anchor.
fn model_details(e: &Elem) -> String {
    let name = collapse_whitespace(&e.attr("name").unwrap_or_default());
    if name.is_empty() {
        return String::new();
    }
    let slug = e.attr("slug").unwrap_or_else(|| name.clone());
    let mut out = heading_with_id(3, &name, &format!("model-{slug}"));
    if let Some(d) = e.attr("description").filter(|d| !d.is_empty()) {
        out.push_str(&format!("\n\n{d}"));
    }
    if let Some(data) = e.expr("data").and_then(|s| JsParser::new(s, 0).value()) {
        let facts: Vec<String> = data
            .get("features")
            .map(rows)
            .unwrap_or_default()
            .iter()
            .filter_map(|f| {
                Some(format!(
                    "- **{}**: {}",
                    f.str_of("title")?,
                    f.str_of("value")?
                ))
            })
            .collect();
        if !facts.is_empty() {
            out.push_str(&format!("\n\n{}", facts.join("\n")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(src: &str) -> Normalized {
        normalize(src, "https://developers.openai.com/codex/page").expect("normalizes")
    }

    #[test]
    fn config_table_from_export_and_inline() {
        let src = "# Ref\n\nexport const flags = [\n  { key: \"--model, -m\", type: \"string\", description: \"Pick a `model`.\" },\n];\n\n## Flags\n\n<ConfigTable client:load options={flags} />\n\n<ConfigTable options={[{ key: \"a|b\", type: \"bool\", description: \"x\", defaultValue: \"false\" }]} />\n";
        let n = norm(src);
        assert_eq!(n.title, "Ref");
        assert_eq!(
            n.markdown,
            "## Flags\n\n| Key | Type / Values | Details |\n| --- | --- | --- |\n| `--model, -m` | `string` | Pick a `model`. |\n\n| Key | Type / Values | Details |\n| --- | --- | --- |\n| `a\\|b` | `bool` | x Default: `false`. |"
        );
    }

    #[test]
    fn slotted_tabs_and_screenshots() {
        let src = "# T\n\n<Tabs id=\"x\" tabs={[{ id: \"a\", label: \"Ubuntu\" }, { id: \"b\", label: \"Fedora\" }]}>\n  <div slot=\"a\">\n\n```bash\napt install x\n```\n\n  </div>\n  <div slot=\"b\">\n    dnf install x\n  </div>\n</Tabs>\n\n<CodexScreenshot alt=\"The app\" lightSrc=\"/images/a.webp\" darkSrc=\"/images/b.webp\" />\n";
        assert_eq!(
            norm(src).markdown,
            "**Ubuntu**\n\n```bash\napt install x\n```\n\n**Fedora**\n\ndnf install x\n\n![The app](https://developers.openai.com/images/a.webp)"
        );
    }

    #[test]
    fn link_callouts_example_tasks_and_linked_keys() {
        let src = "# T\n\n<CodexCallout href=\"/codex/app\" title=\"Use the app\" description=\"Native app.\" />\n\n<ExampleTask client:load id=\"a\" prompt=\"Tell me about this project\" />\n<ExampleTask shortDescription=\"Fix bugs.\" prompt={[\"Fix bugs.\", \"\", \"Be careful.\"].join(\"\\n\")} />\n\n<ConfigTable options={[{ key: \"codex exec\", href: \"/codex/cli#exec\", type: \"stable\", description: \"Run.\" }]} secondColumnTitle=\"Maturity\" secondColumnVariant=\"maturity\" />\n";
        assert_eq!(
            norm(src).markdown,
            "- [Use the app](https://developers.openai.com/codex/app): Native app.\n\n```text\nTell me about this project\n```\n\n**Fix bugs.**\n\n```text\nFix bugs.\n\nBe careful.\n```\n\n| Key | Maturity | Details |\n| --- | --- | --- |\n| [`codex exec`](https://developers.openai.com/codex/cli#exec) | stable | Run. |"
        );
    }

    #[test]
    fn model_details_keep_the_live_anchor() {
        let n = norm("# Models\n\n<ModelDetails client:load name=\"gpt-5.5\" slug=\"gpt-5.5\" description=\"Newest.\" data={{ features: [{ title: \"Speed\", value: \"fast\" }] }} />\n\n## Other\n");
        assert_eq!(
            n.markdown,
            "### gpt-5.5\n\nNewest.\n\n- **Speed**: fast\n\n## Other"
        );
        assert_eq!(
            n.anchors(),
            vec![
                crate::model::HeadingAnchor::Id("model-gpt-5.5".to_string()),
                crate::model::HeadingAnchor::Slug
            ]
        );
    }
}
