//! Records that cross stage boundaries. Every one of them is serialized with
//! serde and written to disk as JSON lines, so a stage can be re-run, inspected
//! or replaced without touching its neighbours.

use serde::{Deserialize, Serialize};

/// One documentation page after normalization: what `pages.jsonl` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// Canonical public URL of the HTML page (never the `.md` alternate, never a mirror URL).
    pub url: String,
    /// Page title (the document's h1 or front-matter title).
    pub title: String,
    /// One sentence on what the page is; empty when the site gives none.
    pub description: String,
    /// Normalized Markdown body, without title and description lines.
    pub markdown: String,
    /// sha256 (hex) of `markdown`, `title` and `description`; identical content, identical hash.
    pub sha256: String,
    /// Path of the page relative to the version root (`specification/2025-11-25/server/tools`).
    #[serde(default)]
    pub path: String,
    /// HTTP validators of the fetched body, for conditional requests on the next build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// One section of a page: the text from a heading to the next heading of any level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// Public URL of the page the section belongs to (no fragment).
    pub url: String,
    /// Id of the heading on the live site, so `url#anchor` opens it; empty for the
    /// page's lead text before its first heading.
    pub anchor: String,
    /// Heading texts from the page title down to this section (h1 › h2 › h3).
    pub heading_path: Vec<String>,
    /// Heading level 1–6 (1 for the lead section under the title).
    pub level: u8,
    /// Markdown of the section body, starting with its heading line (except for the lead).
    pub text: String,
    /// Position of this section in its page, 0-based; sections of a page are contiguous.
    pub ordinal: u32,
    /// 0 for a whole section; 1.. when an overlong section was split into bounded parts.
    #[serde(default)]
    pub part: u32,
}

impl Section {
    /// The heading path joined as `A > B > C`, the form the tools show.
    pub fn heading_display(&self) -> String {
        self.heading_path.join(" > ")
    }

    /// URL with the anchor as fragment (the page URL for the lead section).
    pub fn url_with_anchor(&self) -> String {
        if self.anchor.is_empty() {
            self.url.clone()
        } else {
            format!("{}#{}", self.url, self.anchor)
        }
    }
}

/// Counts recorded in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Counts {
    pub pages: u64,
    pub sections: u64,
}

/// `manifest.json` of an artifact directory: identity, provenance and checksums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub tool_version: String,
    pub source: String,
    pub product: String,
    pub version: String,
    pub snapshot_id: String,
    /// ISO 8601 UTC, e.g. `2026-12-01T06:40:00Z`.
    pub created_at: String,
    pub counts: Counts,
    /// Relative path → sha256 of every file of the artifact except the manifest itself.
    pub files: std::collections::BTreeMap<String, String>,
    /// sha256 over the sorted page hashes: same content, same value.
    pub content_sha256: String,
    /// The dense vectors of the sections, when the build had an embedding
    /// model; absent in lexical-only artifacts (and in those of older builds,
    /// which load as lexical-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbeddingInfo>,
    /// Named groups of pages by path prefix (the source's `page_kinds`), for
    /// tools that filter by them; empty in artifacts of older builds.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub page_kinds: std::collections::BTreeMap<String, Vec<String>>,
    /// Fingerprint of what turned pages into these records: [`RECORDS_VERSION`]
    /// and the source's family, selectors, class-page prefix, slug style and
    /// section size. A rebuild reuses records of pages answered 304 only under
    /// the same fingerprint; absent in artifacts of older builds, which are
    /// therefore never reused that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_fingerprint: Option<String>,
    /// The tool family that serves this artifact (see [`Manifest::tool_set`]
    /// for artifacts without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolSet>,
    /// [`ARTIFACT_REVISION`] of the docsnap that wrote it; absent in older
    /// artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_revision: Option<u32>,
    /// The source's `editions` pattern (see [`edition_pattern`]); absent
    /// when its pages have no editions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editions: Option<String>,
    /// The source's `areas` (see [`Area`]); absent when it declares none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<Area>,
    /// Fenced code indexed apart from the prose (the source's
    /// `code_apart`): a rebuild whose configuration changes it indexes
    /// again rather than keep the snapshot as unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code_apart: bool,
}

/// A part of a source's docs written for other readers than its users at
/// large (sources.yaml `areas`): Claude Code's Agent SDK reference is for
/// developers who build their own agents, its weekly release notes name
/// every feature in passing. Their pages answer a question that says one of
/// the area's words (`named_by`); for others they rank below the rest (by
/// `RankConfig::other_area`), because a question that never says "SDK" is
/// asked by someone using the product, not building on it. DocSearch's
/// crawler weighs URL patterns (`pageRank`) for the same reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Area {
    /// A regular expression over page URLs: the area's pages.
    pub pages: String,
    /// Words (lower case, letters and digits) a question names the area
    /// by; any one of them, as a word of the question, is enough.
    pub named_by: Vec<String>,
}

impl Area {
    /// The compiled `pages` pattern, after checking the area is usable; the
    /// error says what is wrong with it.
    pub fn compile(&self) -> Result<regex::Regex, String> {
        let re = regex::Regex::new(&self.pages).map_err(|e| format!("`{}`: {e}", self.pages))?;
        if self.named_by.is_empty() {
            return Err(format!("`{}`: `named_by` lists no word", self.pages));
        }
        if let Some(w) = (self.named_by.iter())
            .find(|w| w.is_empty() || !w.chars().all(|c| c.is_alphanumeric() && !c.is_uppercase()))
        {
            return Err(format!(
                "`{}`: `named_by` word `{w}` must be one lower-case word of letters and digits",
                self.pages
            ));
        }
        Ok(re)
    }
}

/// Compile a source's `editions` pattern: a regular expression over page
/// URLs with exactly one capture group, the edition (`2025-11-25`). The
/// error says what is wrong with it.
pub fn edition_pattern(pattern: &str) -> Result<regex::Regex, String> {
    let re = regex::Regex::new(pattern).map_err(|e| format!("`{pattern}`: {e}"))?;
    if re.captures_len() != 2 {
        return Err(format!(
            "`{pattern}` has {} capture groups; it needs exactly one, the edition",
            re.captures_len() - 1
        ));
    }
    Ok(re)
}

/// Which tools serve a source's artifacts (its `tools` in sources.yaml).
/// Routing goes by this, never by product id, so a new source joins a tool
/// family by configuration alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolSet {
    /// `search_docs` and `read_section` (seed 000).
    AgentDocs,
    /// `search_godot_docs` and the class tools (seed 001).
    Godot,
    /// `docs_search`, one version at a time (seed 003).
    Leapview,
}

impl Manifest {
    /// The tools that serve this artifact. Artifacts written before the
    /// manifest carried `tools` are routed as their builds' sources.yaml
    /// did, by the product ids it then gave these families.
    pub fn tool_set(&self) -> ToolSet {
        self.tools.unwrap_or(match self.product.as_str() {
            "godot" => ToolSet::Godot,
            "leapview" => ToolSet::Leapview,
            _ => ToolSet::AgentDocs,
        })
    }
}

/// Which model embedded an artifact's sections and where the vectors are: a
/// server embeds queries with the same model or not at all, since vectors of
/// two models are not comparable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingInfo {
    /// Model name (informative; the hashes decide).
    pub model: String,
    /// sha256 of the teacher model's weights.
    pub teacher_sha256: String,
    /// sha256 of the static token vectors the sections were embedded with;
    /// for a contextual model, of its tokenizer and embedding recipe.
    pub vectors_sha256: String,
    /// Components per vector.
    pub dims: u32,
    /// The vector file, relative to the artifact (its sha256 is in `files`).
    pub file: String,
    /// What a row of the vector file stands for. Absent in manifests of
    /// section vectors, which is all there was before pages had vectors.
    #[serde(default, skip_serializing_if = "VectorUnit::is_section")]
    pub unit: VectorUnit,
}

/// What one row of an artifact's vector file embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorUnit {
    /// One row per section (row = section number).
    #[default]
    Section,
    /// One row per page (row = page number).
    Page,
}

impl VectorUnit {
    /// For serde: section rows are the default and not written.
    pub fn is_section(&self) -> bool {
        *self == VectorUnit::Section
    }
}

/// Version of the on-disk artifact layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Version of what normalize and section make of a page: bumped whenever the
/// same page body gives different page, section or class records. A rebuild
/// keeps the records of pages the site answers 304 for, so without this an
/// improved normalizer would never reach pages that do not change. The golden
/// test `records_version_guard` fails when the goldens change and this does not.
pub const RECORDS_VERSION: u32 = 3;

/// Revision of what a build writes beside the records (index options, derived
/// files such as `links.json`): bumped whenever the same records would give a
/// different artifact, so a no-change rebuild replaces a snapshot an older
/// docsnap wrote instead of keeping it as "unchanged". (The crate version
/// cannot serve: it moves on releases, not on such changes.) Revision 2:
/// `links.json`, an index without positions. Revision 3: `unit_terms.bin`.
/// Revision 4: fenced code in its own index field. Revision 5:
/// `aliases.json` (the renames the docs declare).
/// Bump it too when the analyzer, the stop words or the unit-terms head
/// size change: a rebuild copies unit-term counts between artifacts of one
/// revision (`index::Prior`).
pub const ARTIFACT_REVISION: u32 = 5;

/// Outcome of one URL during a crawl, recorded in `crawl.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlOutcome {
    /// Public URL as discovered.
    pub url: String,
    /// URL actually requested (public form, before any mirror mapping).
    pub fetched: String,
    /// Final HTTP status, or 0 when no response was received.
    pub status: u16,
    pub attempts: u32,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl UrlOutcome {
    /// A URL that was never requested (or got no response), and why.
    pub fn not_fetched(url: String, fetched: String, why: String) -> Self {
        UrlOutcome {
            url,
            fetched,
            status: 0,
            attempts: 0,
            bytes: 0,
            etag: None,
            error: Some(why),
        }
    }
}

/// Where the live site puts one heading of a normalized page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadingAnchor {
    /// The live page gives the heading this id.
    Id(String),
    /// The live page gives it no id: its section links to the enclosing one.
    Unanchored,
    /// Computed from the heading's text with the source's slug style
    /// (Markdown adapters spell out only the ids the source fixes, e.g. `<h2 id>`).
    Slug,
}

impl HeadingAnchor {
    /// An id read from a page: empty means the page gives none.
    pub fn from_id(id: String) -> HeadingAnchor {
        if id.is_empty() {
            HeadingAnchor::Unanchored
        } else {
            HeadingAnchor::Id(id)
        }
    }
}

/// An id the page gives, compared with the id a test expects; "" is
/// [`HeadingAnchor::Unanchored`], and a computed anchor equals no text.
impl PartialEq<&str> for HeadingAnchor {
    fn eq(&self, other: &&str) -> bool {
        match self {
            HeadingAnchor::Id(id) => id == other,
            HeadingAnchor::Unanchored => other.is_empty(),
            HeadingAnchor::Slug => false,
        }
    }
}

/// The result of normalizing one page: its Markdown, rendered once, and the
/// structure the later stages read instead of scanning that text again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Normalized {
    pub title: String,
    pub description: String,
    /// Markdown body without the title (h1) line and without the description line.
    pub markdown: String,
    /// Every ATX heading of `markdown` outside code fences, in order.
    pub headings: Vec<Heading>,
}

/// One heading of a normalized page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// The 0-based line of `Normalized::markdown` it is on.
    pub line: usize,
    /// 1–6.
    pub level: u8,
    /// Its text, inline Markdown (links, emphasis, code marks) removed.
    pub text: String,
    /// Where the live page anchors it, so a section links to the id the
    /// HTML really has.
    pub anchor: HeadingAnchor,
}

impl Normalized {
    /// Assemble a page from an adapter's Markdown and the anchors of its
    /// headings in order: the headings are read here, once. A heading past
    /// the end of `anchors` gets [`HeadingAnchor::Slug`] (Markdown adapters
    /// give only the ids the source fixes, often none); more anchors than
    /// headings is a converter defect (checked in debug builds, the extra
    /// ones dropped).
    pub fn new(
        title: String,
        description: String,
        markdown: String,
        anchors: Vec<HeadingAnchor>,
    ) -> Normalized {
        let atx = crate::markdown::atx_headings(&markdown);
        debug_assert!(
            anchors.len() <= atx.len(),
            "{} anchors for {} headings",
            anchors.len(),
            atx.len()
        );
        let mut anchors = anchors.into_iter();
        let headings = atx
            .into_iter()
            .map(|h| Heading {
                line: h.line,
                level: h.level,
                text: crate::markdown::heading_text(&h.inline),
                anchor: anchors.next().unwrap_or(HeadingAnchor::Slug),
            })
            .collect();
        Normalized {
            title,
            description,
            markdown,
            headings,
        }
    }

    /// The anchor of each heading, in order.
    pub fn anchors(&self) -> Vec<HeadingAnchor> {
        self.headings.iter().map(|h| h.anchor.clone()).collect()
    }
}

/// Hash of a page's content fields (not of its validators or fetch details).
pub fn page_hash(title: &str, description: &str, markdown: &str) -> String {
    crate::util::sha256_hex(format!("{title}\n\u{0}{description}\n\u{0}{markdown}").as_bytes())
}

/// Section text without its leading heading line (every tool shows the
/// heading as its own field; an embedding has it from the heading path).
pub fn strip_heading_line(text: &str) -> &str {
    let t = text.trim_start();
    if t.starts_with('#') {
        match t.find('\n') {
            Some(i) => t[i + 1..].trim_start(),
            None => "",
        }
    } else {
        t
    }
}

/// Records for unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Page, Section};

    /// A page titled "T" holding `markdown`, its content hash right.
    pub(crate) fn page_of(url: &str, markdown: &str) -> Page {
        Page {
            markdown: markdown.into(),
            sha256: super::page_hash("T", "", markdown),
            ..page(url, "T")
        }
    }

    /// The lead section (level 1, heading "T") of the page at `url`.
    pub(crate) fn lead_section(url: &str, text: &str) -> Section {
        Section {
            url: url.into(),
            anchor: String::new(),
            heading_path: vec!["T".into()],
            level: 1,
            text: text.into(),
            ordinal: 0,
            part: 0,
        }
    }

    /// The manifest of an artifact of `source` (its product the same)
    /// `version`, snapshot `snapshot_id` made at `created_at`: no files,
    /// counts or hashes, no embedding, no options.
    pub(crate) fn manifest(
        source: &str,
        version: &str,
        snapshot_id: &str,
        created_at: &str,
    ) -> super::Manifest {
        super::Manifest {
            schema_version: super::SCHEMA_VERSION,
            tool_version: "t".into(),
            source: source.into(),
            product: source.into(),
            version: version.into(),
            snapshot_id: snapshot_id.into(),
            created_at: created_at.into(),
            counts: Default::default(),
            files: Default::default(),
            content_sha256: String::new(),
            embedding: None,
            page_kinds: Default::default(),
            records_fingerprint: None,
            tools: None,
            artifact_revision: None,
            code_apart: false,
            editions: None,
            areas: Vec::new(),
        }
    }

    /// A page with a URL and a title, nothing else.
    pub(crate) fn page(url: &str, title: &str) -> Page {
        Page {
            url: url.into(),
            title: title.into(),
            description: String::new(),
            markdown: String::new(),
            sha256: String::new(),
            path: url.rsplit('/').next().unwrap_or_default().into(),
            etag: None,
            last_modified: None,
        }
    }
}
