//! The tools a server offers, grouped in families (`--tools agent-docs,godot`).
//!
//! A tool is a [`ToolSpec`]: its contract (name, description, input and output
//! schema as JSON text, copied from the seed) and a plain function from the
//! library and validated arguments to the result object. Adding a family is a
//! new [`ToolFamily`] variant and a `&[ToolSpec]` for it; the server, the
//! validation and both transports need no change.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::validate::validate_args;
use crate::search::godot;
use crate::search::leapview::DocsSearchArgs;
use crate::search::read_section::read_section;
use crate::search::types::{ReadSectionArgs, SearchDocsArgs};
use crate::search::{Library, ToolError};

/// A tool's answer from the library and its schema-checked arguments.
pub type ToolFn = fn(&Library, Map<String, Value>) -> Result<Value, ToolError>;

/// One tool's contract and implementation.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// Input schema, JSON text.
    pub input_schema: &'static str,
    /// Output schema, JSON text; the result object must satisfy it.
    pub output_schema: &'static str,
    pub call: ToolFn,
}

/// A group of tools over one documentation family, selected as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolFamily {
    /// `search_docs`, `read_section` (seed 000): Claude Code, Cursor, Codex, MCP.
    AgentDocs,
    /// `search_godot_docs`, `fetch_godot_doc`, `get_godot_class`,
    /// `get_godot_class_member` (seed 001): Godot manual and class reference.
    Godot,
    /// `docs_search` (seed 003): LeapView, one version.
    Leapview,
    /// `docs_changes` (beyond the seeds): what changed in any product's docs
    /// since an earlier snapshot.
    Changes,
}

impl ToolFamily {
    /// Every family this build can serve.
    pub const ALL: &'static [ToolFamily] = &[
        ToolFamily::AgentDocs,
        ToolFamily::Godot,
        ToolFamily::Leapview,
        ToolFamily::Changes,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ToolFamily::AgentDocs => "agent-docs",
            ToolFamily::Godot => "godot",
            ToolFamily::Leapview => "leapview",
            ToolFamily::Changes => "changes",
        }
    }

    pub fn tools(self) -> &'static [ToolSpec] {
        match self {
            ToolFamily::AgentDocs => AGENT_DOCS,
            ToolFamily::Godot => GODOT,
            ToolFamily::Leapview => LEAPVIEW,
            ToolFamily::Changes => CHANGES,
        }
    }

    /// A comma-separated selection (`agent-docs,godot`), duplicates dropped.
    pub fn parse_list(s: &str) -> Result<Vec<ToolFamily>, ToolFamilyError> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let f: ToolFamily = name.parse()?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        if out.is_empty() {
            return Err(ToolFamilyError::Empty);
        }
        Ok(out)
    }
}

fn available() -> String {
    ToolFamily::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `--tools` selection that names no tool family, or one that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFamilyError {
    #[error("unknown tool family '{0}' (available: {list})", list = available())]
    Unknown(String),
    #[error("no tool family given (available: {})", available())]
    Empty,
}

impl FromStr for ToolFamily {
    type Err = ToolFamilyError;

    fn from_str(s: &str) -> Result<Self, ToolFamilyError> {
        let s = s.trim().to_ascii_lowercase();
        ToolFamily::ALL
            .iter()
            .find(|f| f.name() == s)
            .copied()
            .ok_or(ToolFamilyError::Unknown(s))
    }
}

impl std::fmt::Display for ToolFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Deserialize checked arguments, answer, serialize the result object.
fn typed<A: DeserializeOwned, R: Serialize>(
    args: Map<String, Value>,
    f: impl FnOnce(&A) -> Result<R, ToolError>,
) -> Result<Value, ToolError> {
    let a: A = serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::invalid(format!("invalid arguments: {e}")))?;
    let r = f(&a)?;
    serde_json::to_value(r)
        .map_err(|e| ToolError::invalid(format!("internal error: result not serializable: {e}")))
}

const AGENT_DOCS: &[ToolSpec] = &[
    ToolSpec {
        name: "search_docs",
        description: "Search the official documentation of Claude Code, Cursor, OpenAI Codex and MCP. Use it before answering any question about using, configuring or administering these products. Not for other products or general programming. If the answer could differ between products and the user hasn't said which one, ask. Returns one passage per page, with the page's one-line description and a relevance score; under ~0.5 means the docs probably don't cover it. One topic per call: split multi-part questions. Need more than the passage? Call read_section(url), or read_section(url, heading) for one of the passage's other_sections.",
        input_schema: include_str!("schemas/search_docs.input.json"),
        output_schema: include_str!("schemas/search_docs.output.json"),
        call: |lib, args| typed(args, |a: &SearchDocsArgs| lib.search_docs(a)),
    },
    ToolSpec {
        name: "read_section",
        description: "Read a page found by search_docs. Without a heading: the page's description and outline (top-level sections with subsection counts). With a heading: that section's full text, including its subsections; continue long sections with next_offset. outline_depth=3 also lists subsections; use it only on long pages to find one specific subsection.",
        input_schema: include_str!("schemas/read_section.input.json"),
        output_schema: include_str!("schemas/read_section.output.json"),
        call: |lib, args| typed(args, |a: &ReadSectionArgs| read_section(lib, a)),
    },
];

const GODOT: &[ToolSpec] = &[
    ToolSpec {
        name: "search_godot_docs",
        description: "Find Godot documentation pages, tutorials, and class reference entries by keyword or question. Returns ranked matches with links and identifiers, so you can fetch the right doc or inspect a class member.\n\nSearch the Godot documentation -- manual, tutorials, and class reference -- and return ranked matches. Start here whenever the exact class or page is not already known. Natural-language questions work as well as keywords: framing words are stripped before searching, so 'how do I make a character jump' finds the tutorial rather than every page titled 'How do I'. Follow a hit with its own fields: uri is what fetch_godot_doc takes, and a hit from the class reference also carries class_name and member_name, which are what get_godot_class and get_godot_class_member take. At most one hit is returned per page or class; also_matched counts the further matches on that same source that were folded into it.",
        input_schema: include_str!("schemas/search_godot_docs.input.json"),
        output_schema: include_str!("schemas/search_godot_docs.output.json"),
        call: |lib, args| typed(args, |a: &godot::SearchArgs| lib.search_godot_docs(a)),
    },
    ToolSpec {
        name: "fetch_godot_doc",
        description: "Read a Godot documentation page as Markdown, in pieces of at most 8,000 characters: pass a hit's uri from search_godot_docs (with its #anchor to read just that section), and next_offset to continue.",
        input_schema: include_str!("schemas/fetch_godot_doc.input.json"),
        output_schema: include_str!("schemas/fetch_godot_doc.output.json"),
        call: |lib, args| typed(args, |a: &godot::FetchArgs| lib.fetch_godot_doc(a)),
    },
    ToolSpec {
        name: "get_godot_class",
        description: "A Godot class from the class reference: inheritance, brief and description, tutorials, and every member listed compactly by kind (properties, methods, signals, constants, enums, theme properties, annotations, constructors, operators). Unknown names get suggestions.",
        input_schema: include_str!("schemas/get_godot_class.input.json"),
        output_schema: include_str!("schemas/get_godot_class.output.json"),
        call: |lib, args| typed(args, |a: &godot::ClassArgs| lib.get_godot_class(a)),
    },
    ToolSpec {
        name: "get_godot_class_member",
        description: "One member of a Godot class with its full signature and description; members inherited from ancestors are found too. Unknown names get suggestions.",
        input_schema: include_str!("schemas/get_godot_class_member.input.json"),
        output_schema: include_str!("schemas/get_godot_class_member.output.json"),
        call: |lib, args| typed(args, |a: &godot::MemberArgs| lib.get_godot_class_member(a)),
    },
];

const LEAPVIEW: &[ToolSpec] = &[ToolSpec {
    name: "docs_search",
    description: "Search LeapView's version-matched product documentation. Returns ranked, bounded matches with stable document IDs and excerpts. Continue with nextCursor when hasMore is true, or use the optional path prefix to narrow broad searches.",
    input_schema: include_str!("schemas/docs_search.input.json"),
    output_schema: include_str!("schemas/docs_search.output.json"),
    call: |lib, args| typed(args, |a: &DocsSearchArgs| lib.docs_search(a)),
}];

const CHANGES: &[ToolSpec] = &[ToolSpec {
    name: "docs_changes",
    description: "What changed in a product's documentation since an earlier snapshot this server holds: pages added, removed, moved and changed, each changed page with its changed sections' anchors and a short excerpt of the changed lines. `since` takes a snapshot id (or a unique prefix of one), a version label such as 3.1 (its newest snapshot, compared with the version served), or a date YYYY-MM-DD or RFC 3339 time (the newest snapshot of the served version made by then). Use it before relying on remembered docs, or to see what a new version changed; `path` narrows to one part of the docs. Answers stay under about 40 KB: on a large change, excerpts and section lists shorten first, then page lists are cut (truncated: true; counts stay whole). Read a changed section in full with the product's read tool.",
    input_schema: include_str!("schemas/docs_changes.input.json"),
    output_schema: include_str!("schemas/docs_changes.output.json"),
    call: |lib, args| typed(args, |a: &crate::changes::ChangesArgs| lib.docs_changes(a)),
}];

struct Registered {
    spec: &'static ToolSpec,
    input: Arc<JsonObject>,
}

/// The selected families' tools, schemas parsed once: what `tools/list`
/// returns and `tools/call` dispatches on.
pub struct ToolRegistry {
    listed: Vec<Tool>,
    by_name: HashMap<&'static str, Registered>,
}

fn parse_schema(tool: &str, which: &str, text: &str) -> Arc<JsonObject> {
    // The schemas are compiled in; a test parses every one of them.
    let parsed: JsonObject = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{which} schema of {tool} is not a JSON object: {e}"));
    Arc::new(parsed)
}

impl ToolRegistry {
    /// The tools of `families`, in family then contract order.
    pub fn new(families: &[ToolFamily]) -> Self {
        let mut listed = Vec::new();
        let mut by_name = HashMap::new();
        for family in families {
            for spec in family.tools() {
                if by_name.contains_key(spec.name) {
                    continue;
                }
                let input = parse_schema(spec.name, "input", spec.input_schema);
                let output = parse_schema(spec.name, "output", spec.output_schema);
                let tool = Tool::new(spec.name, spec.description, input.clone())
                    .with_raw_output_schema(output)
                    .with_annotations(
                        ToolAnnotations::new()
                            .read_only(true)
                            .destructive(false)
                            .idempotent(true)
                            .open_world(false),
                    );
                listed.push(tool);
                by_name.insert(spec.name, Registered { spec, input });
            }
        }
        ToolRegistry { listed, by_name }
    }

    /// Tool definitions, as `tools/list` shows them.
    pub fn tools(&self) -> &[Tool] {
        &self.listed
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.listed.iter().find(|t| t.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.listed.iter().map(|t| t.name.as_ref()).collect()
    }

    /// Run tool `name`; `None` when there is no such tool. Bad arguments and
    /// [`ToolError`]s become `isError` results whose text says what was wrong;
    /// a success carries the result as `structuredContent` and as JSON text.
    pub fn call(
        &self,
        lib: &Library,
        name: &str,
        args: Option<JsonObject>,
    ) -> Option<CallToolResult> {
        let reg = self.by_name.get(name)?;
        let mut args = args.unwrap_or_default();
        if let Err(msg) = validate_args(&reg.input, &mut args) {
            return Some(tool_error(format!("invalid arguments for {name}: {msg}")));
        }
        Some(match (reg.spec.call)(lib, args) {
            Ok(value) => CallToolResult::structured(value),
            Err(e @ ToolError::Invalid(_)) => tool_error(e.to_string()),
            Err(e @ ToolError::Internal(_)) => {
                tracing::error!(tool = name, "{e}");
                tool_error(e.to_string())
            }
        })
    }
}

fn tool_error(msg: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_parses_and_names_are_unique() {
        let r = ToolRegistry::new(ToolFamily::ALL);
        assert_eq!(
            r.names(),
            [
                "search_docs",
                "read_section",
                "search_godot_docs",
                "fetch_godot_doc",
                "get_godot_class",
                "get_godot_class_member",
                "docs_search",
                "docs_changes"
            ]
        );
        for t in r.tools() {
            assert_eq!(t.input_schema.get("type"), Some(&Value::from("object")));
            assert!(t.output_schema.is_some());
        }
    }

    #[test]
    fn families_parse() {
        assert_eq!(
            ToolFamily::parse_list(" agent-docs, AGENT-DOCS ").unwrap(),
            [ToolFamily::AgentDocs]
        );
        assert_eq!(
            ToolFamily::parse_list("godot,leapview").unwrap(),
            [ToolFamily::Godot, ToolFamily::Leapview]
        );
        let e = ToolFamily::parse_list("vim").unwrap_err();
        assert_eq!(e, ToolFamilyError::Unknown("vim".into()));
        assert!(
            e.to_string()
                .starts_with("unknown tool family 'vim' (available: agent-docs"),
            "{e}"
        );
        assert_eq!(ToolFamily::parse_list(" , "), Err(ToolFamilyError::Empty));
    }

    #[test]
    fn calls_validate_before_dispatch() {
        let r = ToolRegistry::new(ToolFamily::ALL);
        let lib = Library::default();
        assert!(r.call(&lib, "nope", None).is_none());
        let res = r.call(&lib, "read_section", None).unwrap();
        assert_eq!(res.is_error, Some(true));
        let text = res.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert_eq!(text, "invalid arguments for read_section: url: required");
        let args = serde_json::json!({"url": "https://x.y/z"})
            .as_object()
            .cloned();
        let res = r.call(&lib, "read_section", args).unwrap();
        assert_eq!(res.is_error, Some(true));
    }
}
