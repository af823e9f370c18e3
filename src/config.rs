//! `sources.yaml`: which documentation sources exist, where their entry points
//! are, how to discover and read their pages, and how politely to fetch them.
//!
//! All site knowledge that is data (URLs, scopes, selectors, rates) lives in this
//! file; knowledge that is code lives in one adapter per [`Family`]. A mistake
//! in the file is reported with the file name, the line and the field.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::markdown::SlugStyle;

/// Site families docsnap knows how to read. Each has one adapter module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Mintlify sites (code.claude.com, modelcontextprotocol.io): MDX Markdown alternates.
    Mintlify,
    /// cursor.com/docs: Markdown alternates with an `export const meta` header.
    Cursor,
    /// developers.openai.com (Astro): Markdown twins.
    Openai,
    /// Sphinx with the Read the Docs theme (docs.godotengine.org): HTML only.
    Sphinx,
    /// LeapView's static generator: HTML only, `<article>` is the content.
    Leapview,
}

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Contact URL put into the User-Agent, so site owners can reach the operator.
    #[serde(default = "default_contact")]
    pub contact: String,
    pub sources: Vec<Source>,
}

fn default_contact() -> String {
    "https://github.com/docsnap/docsnap".to_string()
}

/// One documentation source (a product's docs site).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Short id used on the command line and in artifact paths (`mcp`, `godot`).
    pub id: String,
    /// Product id the tools filter on (`claude-code`, `mcp`, `godot`, `leapview`).
    pub product: String,
    /// Which tool family serves it: `agent-docs`, `godot` or `leapview`
    /// (written into every manifest; the server routes by it).
    pub tools: crate::model::ToolSet,
    /// Which adapter reads its pages.
    pub family: Family,
    /// How the live site derives heading ids from Markdown headings (used when the
    /// page is read from a Markdown alternate; HTML pages carry their ids).
    #[serde(default)]
    pub slug: Option<SlugStyle>,
    /// Fetch `.md` alternates where the site offers them.
    #[serde(default)]
    pub prefer_markdown: bool,
    /// Documentation versions; each becomes its own artifact.
    pub versions: Vec<VersionSpec>,
    /// Requests per second and parallel requests per host.
    #[serde(default)]
    pub rate: RateSpec,
    /// CSS selectors of the main content and of chrome to drop (HTML pages).
    #[serde(default)]
    pub selectors: Selectors,
    /// Pages that are also read as class-reference records (for the class
    /// tools): a path prefix under the version root (Godot: `classes/class_`).
    #[serde(default)]
    pub class_pages: Option<String>,
    /// Index fenced code apart from the prose, so that the tool family's
    /// code weight (`FieldWeights::code`) applies: for docs whose tutorials
    /// interleave long sample scripts with the text (Godot), where a
    /// script's identifiers (`enemy`, `player`, `floor`) match questions
    /// put in everyday words.
    #[serde(default)]
    pub code_apart: bool,
    /// Named groups of pages, each a list of path prefixes under the version
    /// root, that a tool's filters name (search_godot_docs' `kind`). Written
    /// into every manifest, so the server needs no configuration.
    #[serde(default)]
    pub page_kinds: std::collections::BTreeMap<String, Vec<String>>,
    /// Pages that are one page in several dated editions (MCP keeps each
    /// specification version under `/specification/<date>/`): a regular
    /// expression over page URLs whose one capture group is the edition.
    /// Search then shows such a page once. Written into every manifest.
    #[serde(default)]
    pub editions: Option<String>,
    /// Parts of the docs for other readers than the product's users at
    /// large (see [`crate::model::Area`]): their pages rank below the rest
    /// for a question that does not name them. Written into every manifest.
    #[serde(default)]
    pub areas: Vec<crate::model::Area>,
    /// A query adapter (`scripts/train-query-adapter.py`) the build copies
    /// into the artifact when it embeds with the model the adapter was
    /// learned for; relative to sources.yaml's folder.
    #[serde(default)]
    pub query_adapter: Option<PathBuf>,
    /// Questions asked of the pages, in users' words (JSON Lines of
    /// `{"query", "url"}`): one file or a list, read in order. With a
    /// model, the build embeds those about this source's pages into the
    /// artifact (`embed::asked`); relative to sources.yaml's folder. A list
    /// lets questions the adapter learns from (`training-questions.jsonl`)
    /// and questions only asked (`asked-questions.jsonl`) stay apart.
    #[serde(default, deserialize_with = "one_or_many")]
    pub asked: Vec<PathBuf>,
    /// Rows of those questions embedded ahead of the build
    /// (`embed::asked::ShippedRows`, made by `examples/asked_rows.rs`): a
    /// build takes a question's row from here when its key (model, adapter,
    /// text) is there instead of embedding it; relative to sources.yaml's
    /// folder.
    #[serde(default)]
    pub asked_rows: Option<PathBuf>,
}

/// A YAML value that is one path or a list of paths. Written as a visitor,
/// not an untagged enum, so that a wrong value is named where it stands
/// ("expected a path or a list of paths") instead of as its whole source.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
    struct Paths;
    impl<'de> serde::de::Visitor<'de> for Paths {
        type Value = Vec<PathBuf>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a path or a list of paths")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![PathBuf::from(v)])
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(p) = seq.next_element::<PathBuf>()? {
                out.push(p);
            }
            Ok(out)
        }
    }
    d.deserialize_any(Paths)
}

/// One documentation version of a source.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VersionSpec {
    /// Version label in artifact paths and manifests (`stable`, `3.2`, `current`).
    pub label: String,
    /// Public URL of the version's root; page paths are relative to it.
    pub root: String,
    /// How pages are found; several methods are combined. Written as a list
    /// of one-key maps (`- llms_txt: {url: ...}`).
    #[serde(with = "serde_yaml::with::singleton_map_recursive")]
    pub discovery: Vec<Discovery>,
    /// Which URLs may be fetched at all.
    pub scope: Scope,
}

/// A way of finding a version's pages.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Discovery {
    /// An llms.txt index (Mintlify `- [Title](url): description` lines or bare URLs).
    LlmsTxt { url: String },
    /// A sitemap.xml or sitemap index.
    Sitemap { url: String },
    /// A JSON page manifest (`{"pages": [{"url", "title", "summary", "path"}]}`).
    Manifest { url: String },
    /// Follow links from `start`, within the scope, up to `max_depth` hops.
    Links {
        start: String,
        #[serde(default = "default_depth")]
        max_depth: u32,
    },
}

fn default_depth() -> u32 {
    20
}

/// URL scope of a version: a URL is in scope when it starts with one of
/// `prefixes`, matches `include` (if any) and matches no `exclude` regex.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    pub prefixes: Vec<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Query strings are dropped from URLs unless this is true.
    #[serde(default)]
    pub keep_query: bool,
}

/// Politeness settings per host.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateSpec {
    /// Requests per second per host; 0 means unlimited.
    #[serde(default = "default_rps")]
    pub per_second: u32,
    /// Requests in flight per host.
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
}

impl Default for RateSpec {
    fn default() -> Self {
        RateSpec {
            per_second: default_rps(),
            concurrency: default_concurrency(),
        }
    }
}

fn default_rps() -> u32 {
    10
}
fn default_concurrency() -> u32 {
    4
}

/// A `--source` id sources.yaml does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown source `{id}`; sources.yaml defines: {}", known.join(", "))]
pub struct UnknownSource {
    pub id: String,
    pub known: Vec<String>,
}

/// CSS selectors used by the HTML adapters.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Selectors {
    /// The element holding the main content.
    #[serde(default)]
    pub content: Option<String>,
    /// Elements inside the content to drop.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// A source's `selectors`, compiled once (for validation and per build):
/// where an HTML page's content is (tried before the adapter's own
/// guesses) and which elements inside it are chrome to drop (besides the
/// adapter's).
#[derive(Debug, Clone, Default)]
pub struct PageRules {
    pub content: Option<scraper::Selector>,
    pub remove: Vec<scraper::Selector>,
}

/// A `selectors` entry that is not CSS the HTML adapters can use.
#[derive(Debug, thiserror::Error)]
#[error("selectors.{field}: `{css}` is not a CSS selector the HTML adapters can use: {why}")]
pub struct SelectorError {
    pub field: &'static str,
    pub css: String,
    pub why: String,
}

impl Selectors {
    /// Compile the selectors; the first that does not parse is named.
    pub fn compile(&self) -> Result<PageRules, SelectorError> {
        let parse = |field: &'static str, css: &str| {
            scraper::Selector::parse(css).map_err(|e| SelectorError {
                field,
                css: css.to_string(),
                why: e.to_string(),
            })
        };
        Ok(PageRules {
            content: self
                .content
                .as_deref()
                .map(|c| parse("content", c))
                .transpose()?,
            remove: self
                .remove
                .iter()
                .map(|r| parse("remove", r))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// A configuration problem, located in the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl Config {
    /// Read and validate a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut cfg = Config::parse(&text, path)?;
        // Files the configuration names are found beside it, wherever the
        // build runs from.
        let base = path.parent().unwrap_or(Path::new(""));
        for s in &mut cfg.sources {
            let files = (s.query_adapter.iter_mut())
                .chain(s.asked.iter_mut())
                .chain(s.asked_rows.iter_mut());
            for a in files {
                if a.is_relative() {
                    *a = base.join(&*a);
                }
            }
        }
        Ok(cfg)
    }

    /// Parse and validate configuration text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = serde_yaml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: e.location().map(|l| l.line()).unwrap_or(0),
            message: e.to_string(),
        })?;
        cfg.validate(text, path)?;
        Ok(cfg)
    }

    /// The source with this id.
    pub fn source(&self, id: &str) -> Option<&Source> {
        self.sources.iter().find(|s| s.id == id)
    }

    /// Resolve `--source` ids (empty = all) in the order given.
    pub fn select(&self, ids: &[String]) -> Result<Vec<&Source>, UnknownSource> {
        if ids.is_empty() {
            return Ok(self.sources.iter().collect());
        }
        ids.iter()
            .map(|id| {
                self.source(id).ok_or_else(|| UnknownSource {
                    id: id.clone(),
                    known: self.sources.iter().map(|s| s.id.clone()).collect(),
                })
            })
            .collect()
    }

    fn validate(&self, text: &str, path: &Path) -> Result<(), ConfigError> {
        let err = |id: &str, field: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: locate(text, id, field),
            message: format!("source `{id}`, field `{field}`: {message}"),
        };
        let mut seen = std::collections::HashSet::new();
        for s in &self.sources {
            if !is_id(&s.id) {
                return Err(err(
                    &s.id,
                    "id",
                    format!("`{}` must be lower-case letters, digits and `-`", s.id),
                ));
            }
            if !seen.insert(s.id.clone()) {
                return Err(err(&s.id, "id", "defined twice".into()));
            }
            if s.rate.concurrency == 0 {
                return Err(err(&s.id, "concurrency", "must be at least 1".into()));
            }
            if s.class_pages.is_some() && s.family != Family::Sphinx {
                return Err(err(
                    &s.id,
                    "class_pages",
                    "class-reference records are read from Sphinx pages only (family: sphinx)"
                        .into(),
                ));
            }
            for (kind, prefixes) in &s.page_kinds {
                if let Some(p) = prefixes
                    .iter()
                    .find(|p| p.is_empty() || p.starts_with('/') || p.contains("://"))
                {
                    return Err(err(
                        &s.id,
                        "page_kinds",
                        format!("`{kind}`: `{p}` must be a non-empty path under the version root, like `tutorials/`"),
                    ));
                }
            }
            if let Some(e) = &s.editions {
                crate::model::edition_pattern(e).map_err(|m| err(&s.id, "editions", m))?;
            }
            for a in &s.areas {
                a.compile().map_err(|m| err(&s.id, "areas", m))?;
            }
            // search_godot_docs' `kind` filter names these groups (seed 001).
            if s.tools == crate::model::ToolSet::Godot {
                if let Some(k) = ["class", "tutorials"]
                    .iter()
                    .find(|k| !s.page_kinds.contains_key(**k))
                {
                    return Err(err(
                        &s.id,
                        "page_kinds",
                        format!("the godot tools filter by `{k}`: give its path prefixes"),
                    ));
                }
            }
            if s.versions.is_empty() {
                return Err(err(
                    &s.id,
                    "versions",
                    "at least one version is needed".into(),
                ));
            }
            let mut labels = std::collections::HashSet::new();
            for v in &s.versions {
                if v.label.is_empty() || v.label.contains(['/', '\\']) || v.label.starts_with('.') {
                    return Err(err(
                        &s.id,
                        "label",
                        format!("bad version label `{}`", v.label),
                    ));
                }
                if !labels.insert(&v.label) {
                    return Err(err(&s.id, "label", format!("version `{}` twice", v.label)));
                }
                check_url(&v.root).map_err(|m| err(&s.id, "root", m.to_string()))?;
                if v.discovery.is_empty() {
                    return Err(err(
                        &s.id,
                        "discovery",
                        "at least one method is needed".into(),
                    ));
                }
                for d in &v.discovery {
                    let u = match d {
                        Discovery::LlmsTxt { url }
                        | Discovery::Sitemap { url }
                        | Discovery::Manifest { url } => url,
                        Discovery::Links { start, .. } => start,
                    };
                    check_url(u).map_err(|m| err(&s.id, "discovery", m.to_string()))?;
                }
                if v.scope.prefixes.is_empty() {
                    return Err(err(&s.id, "prefixes", "at least one URL prefix".into()));
                }
                for p in &v.scope.prefixes {
                    check_url(p).map_err(|m| err(&s.id, "prefixes", m.to_string()))?;
                }
                for r in v.scope.include.iter().chain(&v.scope.exclude) {
                    regex::Regex::new(r)
                        .map_err(|e| err(&s.id, "include/exclude", format!("bad regex: {e}")))?;
                }
            }
            s.selectors
                .compile()
                .map_err(|e| err(&s.id, e.field, format!("bad CSS selector: {}", e.why)))?;
        }
        Ok(())
    }
}

fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// What is wrong with a URL in the configuration.
#[derive(Debug, thiserror::Error)]
enum BadUrl {
    #[error("`{url}`: scheme `{scheme}` is not http(s)")]
    Scheme { url: String, scheme: String },
    #[error("`{url}` is not a URL: {source}")]
    Parse {
        url: String,
        source: url::ParseError,
    },
}

fn check_url(u: &str) -> Result<(), BadUrl> {
    match url::Url::parse(u) {
        Ok(p) if p.scheme() == "https" || p.scheme() == "http" => Ok(()),
        Ok(p) => Err(BadUrl::Scheme {
            url: u.to_string(),
            scheme: p.scheme().to_string(),
        }),
        Err(source) => Err(BadUrl::Parse {
            url: u.to_string(),
            source,
        }),
    }
}

/// Best-effort line of `field` within the block of source `id` (1-based; the
/// source's own line when the field is not found, 0 when neither is).
fn locate(text: &str, id: &str, field: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| {
        let t = l.trim_start().trim_start_matches("- ").trim();
        t.strip_prefix("id:")
            .map(|v| v.trim().trim_matches(['"', '\'']) == id)
            .unwrap_or(false)
    });
    let Some(start) = start else { return 0 };
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        let t = l.trim_start().trim_start_matches("- ");
        if t.starts_with("id:") {
            break;
        }
        if t.starts_with(&format!("{field}:")) {
            return i + 1;
        }
    }
    start + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_selector_is_named() {
        let e = Selectors {
            content: None,
            remove: vec!["div[".into()],
        }
        .compile()
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("selectors.remove") && msg.contains("div["),
            "{msg}"
        );
    }

    const GOOD: &str = r#"
sources:
  - id: mcp
    product: mcp
    tools: agent-docs
    family: mintlify
    versions:
      - label: current
        root: https://modelcontextprotocol.io/
        discovery:
          - llms_txt: { url: "https://modelcontextprotocol.io/llms.txt" }
        scope:
          prefixes: ["https://modelcontextprotocol.io/"]
"#;

    #[test]
    fn parses_a_minimal_source() {
        let c = Config::parse(GOOD, Path::new("s.yaml")).unwrap();
        assert_eq!(c.sources[0].id, "mcp");
        assert_eq!(c.sources[0].rate.per_second, 10);
        assert!(matches!(
            c.sources[0].versions[0].discovery[0],
            Discovery::LlmsTxt { .. }
        ));
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let bad = GOOD.replace(
            "    family: mintlify",
            "    family: mintlify\n    colour: red",
        );
        let e = Config::parse(&bad, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.yaml:7:"), "{e}");
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn semantic_error_names_the_field_line() {
        let bad = GOOD.replace("root: https://modelcontextprotocol.io/", "root: ftp://x");
        let e = Config::parse(&bad, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.yaml:9:"), "{e}");
        assert!(e.contains("field `root`"), "{e}");
    }

    #[test]
    fn bad_family_is_rejected_with_line() {
        let bad = GOOD.replace("family: mintlify", "family: wordpress");
        let e = Config::parse(&bad, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.yaml:6:"), "{e}");
        assert!(e.contains("wordpress"), "{e}");
    }

    #[test]
    fn editions_patterns_are_checked() {
        let with = |pattern: &str| {
            GOOD.replace(
                "    versions:\n",
                &format!("    editions: {pattern}\n    versions:\n"),
            )
        };
        let ok = Config::parse(&with(r"'^https://x/spec/(\d{4})/'"), Path::new("s.yaml")).unwrap();
        assert!(ok.sources[0].editions.is_some());
        for (bad, says) in [
            (r"'^https://x/(a)/(b)/'", "2 capture groups"),
            (r"'^https://x/spec/'", "0 capture groups"),
            (r"'^https://x/(unclosed'", "unclosed"),
        ] {
            let e = Config::parse(&with(bad), Path::new("s.yaml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("editions") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn areas_are_checked() {
        let with = |area: &str| {
            GOOD.replace(
                "    versions:\n",
                &format!("    areas:\n      - {area}\n    versions:\n"),
            )
        };
        let ok = Config::parse(
            &with(r#"{ pages: '^https://x/sdk/', named_by: [sdk, sdks] }"#),
            Path::new("s.yaml"),
        )
        .unwrap();
        assert_eq!(ok.sources[0].areas[0].named_by, ["sdk", "sdks"]);
        for (bad, says) in [
            (
                r#"{ pages: '^https://x/(unclosed', named_by: [sdk] }"#,
                "unclosed",
            ),
            (
                r#"{ pages: '^https://x/sdk/', named_by: [] }"#,
                "lists no word",
            ),
            (
                r#"{ pages: '^https://x/sdk/', named_by: [SDK] }"#,
                "`SDK` must be",
            ),
            (
                r#"{ pages: '^https://x/sdk/', named_by: [agent sdk] }"#,
                "`agent sdk` must be",
            ),
        ] {
            let e = Config::parse(&with(bad), Path::new("s.yaml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("areas") && e.contains(says), "{e}");
        }
        // A misspelt key is named, not ignored.
        let e = Config::parse(
            &with(r#"{ page: '^https://x/', named_by: [sdk] }"#),
            Path::new("s.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("page"), "{e}");
    }

    #[test]
    fn page_groups_and_class_pages_are_checked() {
        let godot = GOOD
            .replace("tools: agent-docs", "tools: godot")
            .replace("family: mintlify", "family: sphinx");
        let e = Config::parse(&godot, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("page_kinds") && e.contains("`class`"), "{e}");
        let kinds =
            "    page_kinds:\n      class: [\"classes/\"]\n      tutorials: [\"tutorials/\"]\n";
        let ok = godot.replace(
            "    versions:\n",
            &format!("{kinds}    class_pages: classes/class_\n    versions:\n"),
        );
        let c = Config::parse(&ok, Path::new("s.yaml")).unwrap();
        assert_eq!(c.sources[0].page_kinds["tutorials"], ["tutorials/"]);
        assert_eq!(c.sources[0].class_pages.as_deref(), Some("classes/class_"));
        let absolute = ok.replace("[\"tutorials/\"]", "[\"https://x/tutorials/\"]");
        let e = Config::parse(&absolute, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("under the version root"), "{e}");
        let not_sphinx = ok.replace("family: sphinx", "family: leapview");
        let e = Config::parse(&not_sphinx, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("class_pages") && e.contains("sphinx"), "{e}");
    }

    #[test]
    fn project_sources_yaml_is_valid_and_has_six_sources() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("sources.yaml");
        let c = Config::load(&p).unwrap();
        let ids: Vec<_> = c.sources.iter().map(|s| s.id.as_str()).collect();
        for id in ["claude-code", "mcp", "cursor", "codex", "godot", "leapview"] {
            assert!(ids.contains(&id), "{id} missing from sources.yaml");
        }
        let lv = c.source("leapview").unwrap();
        let labels: Vec<_> = lv.versions.iter().map(|v| v.label.as_str()).collect();
        assert_eq!(labels, ["3.1", "3.2"]);
        // Every file a source names is there, found beside sources.yaml.
        for s in &c.sources {
            for f in s.query_adapter.iter().chain(&s.asked).chain(&s.asked_rows) {
                assert!(f.is_file(), "{}: {} is not a file", s.id, f.display());
            }
            if let Some(rows) = &s.asked_rows {
                let keys = crate::embed::asked::ShippedRows::keys_path(rows);
                assert!(keys.is_file(), "{}: {} is not a file", s.id, keys.display());
            }
        }
    }

    #[test]
    fn asked_is_one_file_or_a_list_found_beside_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        // The source's `asked` as read from `GOOD` with `value` given.
        let asked = |value: &str| {
            let text = GOOD.replace(
                "    family: mintlify",
                &format!("    family: mintlify\n    asked: {value}"),
            );
            std::fs::write(&p, text).unwrap();
            Config::load(&p).unwrap().sources[0].asked.clone()
        };
        assert_eq!(asked("q.jsonl"), [dir.path().join("q.jsonl")]);
        assert_eq!(
            asked("[q.jsonl, /abs/more.jsonl]"),
            [dir.path().join("q.jsonl"), PathBuf::from("/abs/more.jsonl")]
        );
        let none = Config::parse(GOOD, Path::new("s.yaml")).unwrap();
        assert!(none.sources[0].asked.is_empty());
        let bad = GOOD.replace(
            "    family: mintlify",
            "    family: mintlify\n    asked: {file: q.jsonl}",
        );
        let e = Config::parse(&bad, Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.yaml:7:") && e.contains("asked") && e.contains("a list of paths"),
            "{e}"
        );
    }
}
