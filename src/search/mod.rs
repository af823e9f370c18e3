//! The query engine over loaded artifacts: what the tools answer from.

pub mod agent_docs;
pub mod aliases;
pub mod asked_words;
pub mod changes;
pub mod classes;
pub mod godot;
pub mod leapview;
pub mod quoted;
pub mod rank;
pub mod read_section;
pub mod types;
pub mod variants;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use std::path::Path;

use crate::index::SectionIndex;
use crate::model::{Manifest, Page, Section, ToolSet};
use crate::util::{canonical_page_key, version_key};

/// A tool call that cannot be answered. Both kinds become `isError` tool
/// results whose text names what was wrong; they are kept apart so a caller
/// (and the server's log and metrics) can tell "fix your call" from "docsnap
/// failed, retrying the same call may work".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments cannot be answered as given: the text says which one
    /// and how to fix it.
    #[error("{0}")]
    Invalid(String),
    /// docsnap itself failed answering a valid call (an index read error,
    /// say). Not the caller's fault.
    #[error("internal error (not caused by the arguments): {0}")]
    Internal(String),
}

impl From<crate::index::IndexError> for ToolError {
    fn from(e: crate::index::IndexError) -> Self {
        ToolError::Internal(e.to_string())
    }
}

impl From<crate::artifact::ArtifactError> for ToolError {
    fn from(e: crate::artifact::ArtifactError) -> Self {
        ToolError::Internal(e.to_string())
    }
}

impl ToolError {
    /// A bad-argument error.
    pub fn invalid(msg: impl Into<String>) -> Self {
        ToolError::Invalid(msg.into())
    }
}

/// One loaded artifact: a (source, version) snapshot.
pub struct LoadedSource {
    pub manifest: Manifest,
    /// Page records. For an artifact opened from disk their `markdown` is
    /// empty: bodies are read on demand ([`LoadedSource::page_markdown`]).
    pub pages: Vec<Page>,
    pub sections: Vec<Section>,
    /// For each page, the range of its sections in `sections`.
    pub page_sections: Vec<std::ops::Range<usize>>,
    /// For each section, the index of its page.
    pub section_page: Vec<usize>,
    /// For each section, how many links in the snapshot point at it (at its
    /// anchor, or at its page for the page's lead section): a popularity prior.
    pub section_inlinks: Vec<u32>,
    /// For each page, how many links in the snapshot point at it.
    pub page_inlinks: Vec<u32>,
    /// Full-text index of the sections.
    pub index: SectionIndex,
    /// For each section, the first section of its unit: the parts an
    /// overlong section was split into form one unit, one answer.
    unit_start: Vec<u32>,
    /// Term counts of each unit's head, for pseudo-relevance feedback.
    pub unit_terms: crate::index::UnitTerms,
    /// The renames the docs declare, by the old name's term: a query word
    /// that is an old name also matches the new one.
    pub aliases: aliases::AliasMap,
    /// The manifest's `editions` pattern, compiled: which pages are one
    /// page in several editions.
    pub editions: Option<regex::Regex>,
    /// For each page, 1 + the index of the first of the manifest's `areas`
    /// it belongs to, 0 for none (empty when the source declares none).
    page_area: Vec<u16>,
    /// Twin pages one word of their titles tells apart (`RigidBody2D`,
    /// `RigidBody3D`), read from the titles at load.
    pub variants: variants::Variants,
    /// Dense vectors of the sections or pages (see `vector_unit`), when
    /// the artifact has them and they were made by the library's model.
    pub vectors: Option<crate::embed::store::VectorStore>,
    /// What a row of `vectors` stands for.
    pub vector_unit: crate::model::VectorUnit,
    /// The artifact's query adapter, applied to a question before it is
    /// compared with `vectors` (present only with them).
    pub adapter: Option<crate::embed::adapter::QueryAdapter>,
    /// Questions asked of the pages (see `embed::asked`): their vectors,
    /// moved by `adapter`, and each row's page (present only with
    /// `vectors` and page units).
    pub asked: Option<(crate::embed::store::VectorStore, Vec<u32>)>,
    /// The words of the questions asked of the pages (see `asked_words`),
    /// read whether or not a model is loaded.
    pub asked_words: Option<asked_words::AskedWords>,
    /// Each asked question's page, read with their words when the artifact
    /// opened: `asked.json` is read and parsed once.
    asked_pages: Vec<u32>,
    /// The embedding's files, read and fitted to the records when the
    /// artifact opened, until a model takes them into `vectors`, `adapter`
    /// and `asked` (and back when another is attached).
    dense: Option<DenseFiles>,
    /// The structured class reference (Godot artifacts; empty elsewhere),
    /// parsed on first use ([`LoadedSource::classes`]).
    classes: classes::LazyClasses,
    url_to_page: HashMap<String, usize>,
    /// Where the pages' bodies are, when they are not in `pages`.
    bodies: Option<crate::artifact::PageBodies>,
    /// The artifact directory it was opened from (`None` when assembled in
    /// memory): where its vectors are read once a model is known.
    dir: Option<std::path::PathBuf>,
}

impl LoadedSource {
    /// Assemble a loaded source from its records, indexing them in memory.
    /// Sections must be grouped by page in page order (as `sections.jsonl` is).
    pub fn new(manifest: Manifest, pages: Vec<Page>, sections: Vec<Section>) -> Self {
        let page_of = crate::artifact::page_of(&pages, &sections);
        let index = crate::index::build_in_ram(&pages, &sections, &page_of, Default::default())
            .expect("an in-memory index of valid records cannot fail");
        let links = crate::inlinks::count_records(&pages, &sections);
        let editions = manifest.editions.as_deref().map(|p| {
            crate::model::edition_pattern(p)
                .expect("an in-memory source's editions pattern is valid")
        });
        let mut s = Self::with_index(manifest, pages, sections, index, links, None, None);
        s.editions = editions;
        s.page_area = s
            .areas_of_pages()
            .expect("an in-memory source's areas are valid");
        s
    }

    /// Load a verified artifact directory with its on-disk index (page
    /// bodies stay on disk until asked for).
    pub fn open(dir: &Path) -> Result<Self, crate::artifact::ArtifactError> {
        Self::open_reading(dir, true)
    }

    /// [`LoadedSource::open`]; without `dense` the embedding's files are
    /// only verified (streamed through their sha256), not read and fitted:
    /// a server without a model uses none of them, and holding them while
    /// it loads left their size in its resident memory for good.
    fn open_reading(dir: &Path, dense: bool) -> Result<Self, crate::artifact::ArtifactError> {
        use crate::artifact::{parse_json, CLASSES_FILE, LINKS_FILE};
        use crate::embed::{adapter::ADAPTER_FILE, asked};
        use crate::index::{UnitTerms, UNIT_TERMS_FILE};
        let also: &[&str] = match dense {
            true => &[ADAPTER_FILE, asked::ASKED_VECTORS, asked::ASKED_META],
            false => &[asked::ASKED_META],
        };
        let mut a = crate::artifact::open_served(dir, also, dense)?;
        let index = SectionIndex::open(&dir.join("index"))?;
        // Counted at build time; older artifacts are counted here, from
        // their pages' bodies.
        let links = match a.extras.remove(LINKS_FILE) {
            Some(b) => parse_json(&dir.join(LINKS_FILE), &b)?,
            None => {
                let mut full = a.pages.clone();
                for (i, p) in full.iter_mut().enumerate() {
                    p.markdown = a.bodies.markdown(i, &p.sha256)?;
                }
                crate::inlinks::count_records(&full, &a.sections)
            }
        };
        if !links.fits(a.pages.len(), a.sections.len()) {
            return Err(crate::artifact::ArtifactError::Corrupt {
                path: dir.join(LINKS_FILE),
                message: "link counts do not match the page and section records".into(),
            });
        }
        // Counted at build time too; older artifacts are counted here.
        let unit_terms =
            match a.extras.remove(UNIT_TERMS_FILE) {
                Some(b) => Some(UnitTerms::from_bytes(&b, a.sections.len()).map_err(
                    |message| crate::artifact::ArtifactError::Corrupt {
                        path: dir.join(UNIT_TERMS_FILE),
                        message,
                    },
                )?),
                None => None,
            };
        let editions = match a.manifest.editions.as_deref() {
            Some(p) => Some(crate::model::edition_pattern(p).map_err(|e| {
                crate::artifact::ArtifactError::Corrupt {
                    path: dir.join("manifest.json"),
                    message: format!("editions: {e}"),
                }
            })?),
            None => None,
        };
        let aliases = match a.extras.remove(crate::aliases::ALIASES_FILE) {
            Some(b) => Some(parse_json(&dir.join(crate::aliases::ALIASES_FILE), &b)?),
            None => None,
        };
        let mut s = Self::with_index(
            a.manifest, a.pages, a.sections, index, links, unit_terms, aliases,
        );
        s.editions = editions;
        s.page_area = s
            .areas_of_pages()
            .map_err(|e| crate::artifact::ArtifactError::Corrupt {
                path: dir.join("manifest.json"),
                message: format!("areas: {e}"),
            })?;
        s.bodies = Some(a.bodies);
        s.dir = Some(dir.to_path_buf());
        (s.asked_words, s.asked_pages) = s.read_asked(dir, a.extras.remove(asked::ASKED_META))?;
        // Read now, so that files which do not fit the records refuse the
        // artifact (and a server loads the previous snapshot) instead of
        // serving it without its vectors.
        if dense {
            s.dense = s.read_dense(dir, |name| Ok(a.extras.remove(name)))?;
        }
        if let Some(b) = a.extras.remove(CLASSES_FILE) {
            s.classes = classes::LazyClasses::pending(dir.join(CLASSES_FILE), b);
        }
        Ok(s)
    }

    /// The Markdown body of page `i`: from memory, or read from the
    /// artifact and checked against the page's content hash.
    pub fn page_markdown(&self, i: usize) -> Result<String, crate::artifact::ArtifactError> {
        match &self.bodies {
            Some(b) => b.markdown(i, &self.pages[i].sha256),
            None => Ok(self.pages[i].markdown.clone()),
        }
    }

    /// Give this source the embedding's files when `model` made them;
    /// otherwise say why it is served lexically (`None` when there is
    /// nothing to say: no vectors and no model, or no artifact on disk).
    fn attach_vectors(&mut self, model: Option<&crate::embed::Embedder>) -> Option<String> {
        // What an earlier model took goes back where the next one takes it.
        if let Some(vectors) = self.vectors.take() {
            self.dense = Some(DenseFiles {
                vectors,
                adapter: self.adapter.take(),
                asked: self.asked.take().map(|(v, _)| v),
            });
        }
        let dir = self.dir.clone()?;
        let name = format!("{} {}", self.manifest.source, self.manifest.version);
        let (info, m) = match (self.manifest.embedding.clone(), model) {
            (None, None) => return None,
            (None, Some(_)) => {
                return Some(format!(
                    "{name}: the artifact has no vectors (built without --model); served lexically"
                ))
            }
            (Some(_), None) => {
                // A lexical server does not hold them; a model attached
                // later reads them again.
                self.dense = None;
                return None;
            }
            (Some(info), Some(m)) => (info, m),
        };
        let id = m.identity();
        if id.vectors_sha256 != info.vectors_sha256
            || id.dims != info.dims as usize
            || info.unit != m.unit()
        {
            return Some(format!(
                "{name}: vectors were made by {} ({}), the server's model is {id}; served lexically",
                info.model,
                &info.vectors_sha256[..info.vectors_sha256.len().min(12)]
            ));
        }
        let files = match self.dense.take() {
            Some(f) => f,
            None => {
                let read = |file: &str| {
                    crate::artifact::read_verified(&dir, &self.manifest, file).map(Some)
                };
                match self.read_dense(&dir, read) {
                    Ok(Some(f)) => f,
                    Ok(None) => return None,
                    Err(e) => return Some(format!("{name}: {e}; served lexically")),
                }
            }
        };
        self.vector_unit = info.unit;
        self.vectors = Some(files.vectors);
        self.adapter = files.adapter;
        self.asked = files.asked.map(|v| (v, self.asked_pages.clone()));
        None
    }

    /// The embedding's files (the manifest's `embedding`), each taken by
    /// `bytes` (verified bytes, `None` when missing) and checked against
    /// the records and the manifest: a vector for every row, the query
    /// adapter learned for these vectors, a row for every question asked.
    /// No model is needed; only their shapes and identities are compared.
    fn read_dense(
        &self,
        dir: &Path,
        mut bytes: impl FnMut(&str) -> Result<Option<Vec<u8>>, crate::artifact::ArtifactError>,
    ) -> Result<Option<DenseFiles>, crate::artifact::ArtifactError> {
        use crate::artifact::ArtifactError;
        use crate::embed::{adapter, asked, store::VectorStore};
        let Some(info) = &self.manifest.embedding else {
            return Ok(None);
        };
        let corrupt = |file: &str, message: String| ArtifactError::Corrupt {
            path: dir.join(file),
            message,
        };
        let dims = info.dims as usize;
        let (rows, what) = match info.unit {
            crate::model::VectorUnit::Section => (self.sections.len(), "sections"),
            crate::model::VectorUnit::Page => (self.pages.len(), "pages"),
        };
        let mut listed_bytes = |file: &str| match self.manifest.files.contains_key(file) {
            true => bytes(file),
            false => Ok(None),
        };
        let Some(b) = listed_bytes(&info.file)? else {
            return Err(corrupt(
                &info.file,
                "the manifest's embedding names it, but the artifact does not list it".into(),
            ));
        };
        let vectors = VectorStore::from_vec(&dir.join(&info.file), b)?;
        if vectors.len() != rows || vectors.dims() != dims {
            return Err(corrupt(
                &info.file,
                format!(
                    "{} vectors of {} dims for {rows} {what} of {dims} dims (the manifest's embedding)",
                    vectors.len(),
                    vectors.dims()
                ),
            ));
        }
        let adapter = match listed_bytes(adapter::ADAPTER_FILE)? {
            None => None,
            Some(b) => {
                let a = adapter::QueryAdapter::from_bytes(&dir.join(adapter::ADAPTER_FILE), &b)?;
                if a.vectors_sha256() != info.vectors_sha256 || a.dims() != dims {
                    return Err(corrupt(
                        adapter::ADAPTER_FILE,
                        format!(
                            "learned for vectors {} of {} dims, the artifact's are {} of {dims}",
                            a.vectors_sha256(),
                            a.dims(),
                            info.vectors_sha256
                        ),
                    ));
                }
                Some(a)
            }
        };
        // Questions are asked of pages: with section rows they are not read.
        let asked = match listed_bytes(asked::ASKED_VECTORS)? {
            Some(b) if info.unit == crate::model::VectorUnit::Page => {
                let path = dir.join(asked::ASKED_VECTORS);
                let v = VectorStore::from_vec(&path, b)?;
                asked::check_rows(&path, self.asked_pages.len(), &v, dims)?;
                Some(v)
            }
            _ => None,
        };
        Ok(Some(DenseFiles {
            vectors,
            adapter,
            asked,
        }))
    }

    /// The questions asked of the artifact's pages, from the verified
    /// bytes of its [`crate::embed::asked::ASKED_META`] when it has one:
    /// their words, when they were kept with their texts (with or without
    /// a model; a build without one keeps only the texts), and each
    /// question's page, for their rows.
    fn read_asked(
        &self,
        dir: &std::path::Path,
        bytes: Option<Vec<u8>>,
    ) -> Result<(Option<asked_words::AskedWords>, Vec<u32>), crate::artifact::ArtifactError> {
        use crate::embed::asked::{check_meta, AskedMeta, ASKED_META};
        let Some(bytes) = bytes else {
            return Ok((None, Vec::new()));
        };
        let path = dir.join(ASKED_META);
        let meta: AskedMeta = crate::artifact::parse_json(&path, &bytes)?;
        check_meta(&path, &meta, self.pages.len())?;
        let words = asked_words::AskedWords::new(
            self.pages.len(),
            (meta.texts.iter().zip(&meta.pages)).map(|(t, &p)| (t.as_str(), p)),
        );
        Ok(((!words.is_empty()).then_some(words), meta.pages))
    }

    /// Attach the structured class reference.
    pub fn set_classes(&mut self, classes: Vec<crate::normalize::godot_class::GodotClass>) {
        self.classes = classes::LazyClasses::ready(classes::ClassReference::new(classes));
    }

    /// The structured class reference (empty for a source without one).
    pub fn classes(&self) -> Result<&classes::ClassReference, ToolError> {
        self.classes.get()
    }

    fn with_index(
        manifest: Manifest,
        pages: Vec<Page>,
        sections: Vec<Section>,
        index: SectionIndex,
        links: crate::inlinks::LinkCounts,
        unit_terms: Option<crate::index::UnitTerms>,
        aliases: Option<crate::aliases::AliasFile>,
    ) -> Self {
        let url_to_page = crate::inlinks::page_keys(&pages);
        let page_sections = crate::inlinks::page_ranges(pages.len(), &sections, &url_to_page);
        let mut section_page = vec![0; sections.len()];
        for (p, r) in page_sections.iter().enumerate() {
            for i in r.clone() {
                section_page[i] = p;
            }
        }
        let (section_inlinks, page_inlinks) = (links.sections, links.pages);
        let unit_start = crate::section::unit_starts(&sections);
        let unit_terms =
            unit_terms.unwrap_or_else(|| crate::index::UnitTerms::compute(&sections, &unit_start));
        // Read at build time; artifacts without the file (older builds,
        // sources assembled in memory) read their sections' declarations
        // here.
        let aliases = aliases::AliasMap::new(
            &aliases.unwrap_or_else(|| crate::aliases::collect(&sections, Vec::new())),
        );
        let variants = variants::Variants::of_titles(pages.iter().map(|p| p.title.as_str()));
        LoadedSource {
            manifest,
            pages,
            sections,
            page_sections,
            section_page,
            section_inlinks,
            page_inlinks,
            index,
            unit_start,
            unit_terms,
            aliases,
            editions: None,
            page_area: Vec::new(),
            variants,
            vectors: None,
            vector_unit: crate::model::VectorUnit::Section,
            adapter: None,
            asked: None,
            asked_words: None,
            asked_pages: Vec::new(),
            dense: None,
            classes: classes::LazyClasses::default(),
            url_to_page,
            bodies: None,
            dir: None,
        }
    }

    /// For each page, 1 + the index of the first of the manifest's areas
    /// whose pattern matches its URL, 0 for none; empty without areas.
    fn areas_of_pages(&self) -> Result<Vec<u16>, String> {
        let areas = &self.manifest.areas;
        if areas.is_empty() {
            return Ok(Vec::new());
        }
        if areas.len() >= usize::from(u16::MAX) {
            return Err(format!(
                "{} areas; at most {} are kept",
                areas.len(),
                u16::MAX - 1
            ));
        }
        let patterns = areas
            .iter()
            .map(crate::model::Area::compile)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .pages
            .iter()
            .map(|p| {
                patterns
                    .iter()
                    .position(|re| re.is_match(&p.url))
                    .map_or(0, |i| i as u16 + 1)
            })
            .collect())
    }

    /// The area (see [`crate::model::Area`]) page `page` belongs to, if any.
    pub fn area_of(&self, page: usize) -> Option<&crate::model::Area> {
        match self.page_area.get(page).copied() {
            None | Some(0) => None,
            Some(a) => self.manifest.areas.get(usize::from(a) - 1),
        }
    }

    /// The sections of the unit `sec` belongs to.
    pub fn unit_of(&self, sec: usize) -> std::ops::Range<usize> {
        self.unit_range(self.unit_start[sec] as usize)
    }

    /// The sections of the unit that starts at section `start`.
    pub fn unit_range(&self, start: usize) -> std::ops::Range<usize> {
        crate::section::unit_range(&self.unit_start, start)
    }

    /// The page at `url` (any spelling that canonicalizes to it) and its sections.
    pub fn find_page(&self, url: &str) -> Option<PageRef<'_>> {
        let &i = self.url_to_page.get(&canonical_page_key(url))?;
        Some(PageRef {
            source: self,
            index: i,
            page: &self.pages[i],
            sections: &self.sections[self.page_sections[i].clone()],
        })
    }
}

/// A page with its sections, as [`Library::find_page`] returns it.
pub struct PageRef<'a> {
    pub source: &'a LoadedSource,
    /// The page's number in its source.
    pub index: usize,
    /// Its record (`markdown` may be empty: see [`PageRef::markdown`]).
    pub page: &'a Page,
    pub sections: &'a [Section],
}

impl PageRef<'_> {
    /// The page's Markdown body.
    pub fn markdown(&self) -> Result<String, crate::artifact::ArtifactError> {
        self.source.page_markdown(self.index)
    }
}

/// What loading one (source, version) gave: its artifact, if one verified,
/// and what was said along the way.
/// What loading one version gave: its source, warnings, artifacts refused.
type Loaded = (Option<LoadedSource>, Vec<String>, usize);

/// Open the artifact at `dir` as a server would and read every file a
/// server reads later too (the class reference, the vectors, the query
/// adapter, the rows of the questions asked), checking that they fit one
/// another; no model is needed, so only their shape is compared. Every
/// file is checked against its sum on the way, as
/// [`crate::artifact::verify`] checks them.
///
/// Why more than [`crate::artifact::verify`]: the sha256 sums prove that the
/// files are the ones the writer listed, not that the writer wrote files a
/// server can use. An artifact whose sums match but whose files disagree (a
/// writer's defect, or sums recomputed by hand) would be skipped by every
/// server that loads it, or served without its vectors; the build, `verify`
/// and `publish` refuse it here instead, naming the file.
pub fn check_servable(dir: &Path) -> Result<Manifest, crate::artifact::ArtifactError> {
    // Opening reads and fits the embedding's files too (`read_dense`).
    let s = LoadedSource::open(dir)?;
    s.classes.parsed()?;
    Ok(s.manifest)
}

/// An artifact's embedding files, read and fitted to its records
/// ([`LoadedSource::read_dense`]), before a model takes them.
struct DenseFiles {
    vectors: crate::embed::store::VectorStore,
    adapter: Option<crate::embed::adapter::QueryAdapter>,
    /// The rows of the questions asked of the pages (page vectors only).
    asked: Option<crate::embed::store::VectorStore>,
}

/// Every loaded artifact.
#[derive(Default)]
pub struct Library {
    pub sources: Vec<LoadedSource>,
    /// The LeapView version `docs_search` answers for; the newest when unset.
    pub leapview_version: Option<String>,
    /// The ranking's levers (defaults: what docsnap ships).
    pub rank: rank::RankConfig,
    /// The model that embeds queries for dense retrieval; `None` serves
    /// lexically. Only sources whose vectors this model made use it.
    pub model: Option<std::sync::Arc<crate::embed::Embedder>>,
    /// Advisory about the index itself (a newer snapshot has been published);
    /// set by the server's watcher while this library is being served.
    pub notice: std::sync::Mutex<Option<String>>,
    /// Artifacts refused while loading this library (failed verification
    /// or unreadable); an older snapshot of the same version may serve instead.
    pub rejected: usize,
    /// The artifacts directory this library was loaded from, where
    /// `docs_changes` finds earlier snapshots; `None` for a library built in memory.
    pub root: Option<std::path::PathBuf>,
    /// Diffs `docs_changes` computed for this library.
    pub diffs: changes::DiffCache,
}

/// The library a server answers from; replaced whole when a newer artifact is
/// loaded, so a request in flight keeps the `Arc` it started with.
pub type LibraryHandle = Arc<RwLock<Arc<Library>>>;

impl Library {
    /// The loaded artifact a product's tools answer from: for LeapView the
    /// version the server was told to serve (`--leapview-version`), else
    /// the newest version loaded. One rule for every tool that picks one.
    pub fn served_source(&self, product: &str) -> Option<usize> {
        self.newest_served(|m| m.product == product)
    }

    /// The served artifact among those `pick` accepts: the newest version,
    /// or the pinned one (`--leapview-version`) for LeapView's tools.
    pub fn newest_served(&self, pick: impl Fn(&Manifest) -> bool) -> Option<usize> {
        let pinned = |m: &Manifest| {
            (m.tool_set() == ToolSet::Leapview)
                .then_some(self.leapview_version.as_deref())
                .flatten()
        };
        let mut best: Option<usize> = None;
        for (i, s) in self.sources.iter().enumerate() {
            let m = &s.manifest;
            if !pick(m) || pinned(m).is_some_and(|v| m.version != v) {
                continue;
            }
            let newer = best.is_none_or(|b| {
                version_key(&s.manifest.version) > version_key(&self.sources[b].manifest.version)
            });
            if newer {
                best = Some(i);
            }
        }
        best
    }

    /// The current advisory, empty when there is none.
    pub fn notice(&self) -> String {
        self.notice
            .lock()
            .map(|n| n.clone().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Load the newest verified artifact of every (source, version) under
    /// `root`. An artifact that fails verification is skipped with a warning
    /// and the next older one is tried: a corrupt snapshot is never served.
    /// Served lexically: the embedding's files are verified, not read.
    pub fn load_dir(root: &Path) -> Result<(Library, Vec<String>), crate::artifact::ArtifactError> {
        Self::load_dir_with(root, None)
    }

    /// [`Library::load_dir`] for a model attached afterwards
    /// ([`Library::attach_model`]): the embedding's files are read and
    /// fitted with the records, and an artifact whose files do not fit
    /// gives way to the previous snapshot.
    pub fn load_dir_awaiting_model(
        root: &Path,
    ) -> Result<(Library, Vec<String>), crate::artifact::ArtifactError> {
        Self::load_artifacts(root, true)
    }

    /// [`Library::load_dir`] with a model for dense retrieval: each artifact
    /// whose vectors that model made gets them loaded; the others are served
    /// lexically, with a warning that says why.
    pub fn load_dir_with(
        root: &Path,
        model: Option<std::sync::Arc<crate::embed::Embedder>>,
    ) -> Result<(Library, Vec<String>), crate::artifact::ArtifactError> {
        let (mut lib, mut warnings) = Self::load_artifacts(root, model.is_some())?;
        warnings.extend(lib.attach_model(model));
        Ok((lib, warnings))
    }

    /// Give the library its model for dense retrieval: each loaded
    /// artifact whose vectors that model made gets them; the others are
    /// served lexically, with a warning that says why (returned). Apart from
    /// [`Library::load_dir_with`] so that the model can load while the
    /// artifacts do: each takes a few hundred milliseconds of start-up.
    pub fn attach_model(
        &mut self,
        model: Option<std::sync::Arc<crate::embed::Embedder>>,
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        for s in &mut self.sources {
            warnings.extend(s.attach_vectors(model.as_deref()));
        }
        self.model = model;
        warnings
    }

    /// The artifacts under `root`, verified and parsed; with `dense`, the
    /// embedding's files read and fitted too (see [`LoadedSource::open`]).
    fn load_artifacts(
        root: &Path,
        dense: bool,
    ) -> Result<(Library, Vec<String>), crate::artifact::ArtifactError> {
        let mut lib = Library {
            root: Some(root.to_path_buf()),
            ..Library::default()
        };
        let mut warnings = Vec::new();
        // Versions load in parallel (verifying and parsing dominate start-up);
        // within a version, the newest verified artifact wins, older ones are
        // tried in order only when a newer one fails.
        let groups = crate::artifact::artifacts_by_version(root)?;
        let load_group = |group: &Vec<std::path::PathBuf>| {
            let mut warnings = Vec::new();
            let mut rejected = 0;
            for dir in group {
                match LoadedSource::open_reading(dir, dense) {
                    Ok(s) => return (Some(s), warnings, rejected),
                    Err(e) => {
                        rejected += 1;
                        warnings.push(format!("skipped {}: {e}", dir.display()));
                    }
                }
            }
            (None, warnings, rejected)
        };
        // As many workers as cores, largest artifacts first so the last one
        // to finish is a small one.
        let size = |g: &Vec<std::path::PathBuf>| {
            g.first()
                .and_then(|d| std::fs::metadata(d.join("sections.jsonl")).ok())
                .map(|m| m.len())
                .unwrap_or(0)
        };
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(size(&groups[i])));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, groups.len().max(1));
        // Each worker takes the next group in `order` and returns what it
        // loaded with the group's position, so the library keeps the order
        // of `groups` whoever finished first.
        let mut loaded: Vec<(usize, Loaded)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&i) = order.get(k) else { break };
                            mine.push((i, load_group(&groups[i])));
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join().unwrap_or_else(|_| {
                        vec![(
                            usize::MAX,
                            (None, vec!["loading an artifact panicked".into()], 1),
                        )]
                    })
                })
                .collect()
        });
        loaded.sort_by_key(|(i, _)| *i);
        let loaded = loaded.into_iter().map(|(_, r)| r);
        for (source, w, rejected) in loaded {
            warnings.extend(w);
            lib.sources.extend(source);
            lib.rejected += rejected;
        }
        Ok((lib, warnings))
    }

    /// The page at `url` in any loaded source.
    pub fn find_page(&self, url: &str) -> Option<PageRef<'_>> {
        self.sources.iter().find_map(|s| s.find_page(url))
    }
}

pub(crate) use crate::model::strip_heading_line;

/// A library of one source made from records in memory (unit tests).
#[cfg(test)]
pub(crate) fn test_library(pages: Vec<Page>, sections: Vec<Section>) -> Library {
    let manifest = crate::model::testing::manifest("s", "v", "id", "2026-01-01T00:00:00Z");
    Library {
        sources: vec![LoadedSource::new(manifest, pages, sections)],
        ..Default::default()
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    /// The link counts a build writes into `links.json` are what a server
    /// uses, they equal what it would count itself from the records (as it
    /// does for artifacts without the file), and a damaged file is refused
    /// like any other. Page bodies are read from disk when asked for.
    #[test]
    fn link_counts_and_page_bodies_come_from_the_artifact_verified() {
        let a = "https://d.example/a";
        let b = "https://d.example/b";
        let page = |url: &str, md: &str| Page {
            url: url.into(),
            title: "T".into(),
            description: String::new(),
            markdown: md.into(),
            sha256: crate::model::page_hash("T", "", md),
            path: url.rsplit('/').next().unwrap_or_default().into(),
            etag: None,
            last_modified: None,
        };
        let sec = |url: &str, anchor: &str| Section {
            url: url.into(),
            anchor: anchor.into(),
            heading_path: vec!["T".into()],
            level: 2,
            text: "words".into(),
            ordinal: 0,
            part: 0,
        };
        let pages = vec![
            page(a, "See [x](https://d.example/b#x)."),
            page(b, "Back to [a](https://d.example/a)."),
        ];
        let sections = vec![sec(a, ""), sec(b, ""), sec(b, "x")];
        let meta = crate::artifact::ArtifactMeta {
            source: "s".into(),
            product: "p".into(),
            version: "v".into(),
            ..Default::default()
        };
        let want = crate::inlinks::count_records(&pages, &sections);
        assert_eq!(want.sections, [1, 0, 1]);
        // These records under `out`, with `extras`, unchecked.
        let write = |out: &Path, extras: &[(&str, Vec<u8>)]| {
            use crate::artifact::{no_check, write};
            write(out, &meta, &pages, &sections, &[], extras, &no_check).unwrap()
        };

        let with = tempfile::tempdir().unwrap();
        let write_with_links = || {
            let bytes = serde_json::to_vec(&want).unwrap();
            write(with.path(), &[(crate::artifact::LINKS_FILE, bytes)])
        };
        let dir = write_with_links();
        let s = LoadedSource::open(&dir).unwrap();
        assert_eq!(
            (s.section_inlinks, s.page_inlinks),
            (want.sections.clone(), want.pages.clone())
        );

        let without = tempfile::tempdir().unwrap();
        let old = write(without.path(), &[]);
        let s = LoadedSource::open(&old).unwrap();
        assert_eq!(
            (&s.section_inlinks, &s.page_inlinks),
            (&want.sections, &want.pages)
        );

        // Page bodies stay on disk and come back whole, checked; bytes that
        // change on disk after loading are refused, never served; a removed
        // artifact's pages stay readable while it is served.
        let s = LoadedSource::open(&dir).unwrap();
        assert!(s.pages.iter().all(|p| p.markdown.is_empty()));
        assert_eq!(s.page_markdown(1).unwrap(), pages[1].markdown);
        assert_eq!(
            s.find_page(b).unwrap().markdown().unwrap(),
            pages[1].markdown
        );
        let moved = with.path().join("gone");
        std::fs::rename(&dir, &moved).unwrap();
        std::fs::remove_dir_all(&moved).unwrap();
        assert_eq!(s.page_markdown(0).unwrap(), pages[0].markdown);
        let s = LoadedSource::open(&old).unwrap();
        let body = old.join("pages.jsonl");
        let text = std::fs::read_to_string(&body).unwrap();
        std::fs::write(&body, text.replace("Back to", "Back at")).unwrap();
        let e = s.page_markdown(1).unwrap_err().to_string();
        assert!(e.contains("changed on disk"), "{e}");
        assert_eq!(s.page_markdown(0).unwrap(), pages[0].markdown);
        let dir = write_with_links();

        // Feedback's term counts: read from the artifact when it has them
        // (equal to counting them here, as is done for older artifacts); a
        // file whose bytes match the manifest but do not parse is refused.
        let terms = tempfile::tempdir().unwrap();
        let write_terms = |bytes: Option<Vec<u8>>| {
            let extras: Vec<_> = bytes
                .into_iter()
                .map(|b| (crate::index::UNIT_TERMS_FILE, b))
                .collect();
            write(terms.path(), &extras)
        };
        let counted = LoadedSource::open(&write_terms(None)).unwrap().unit_terms;
        assert!(counted.sections() == sections.len() && counted != Default::default());
        let d = write_terms(Some(counted.to_bytes()));
        assert_eq!(LoadedSource::open(&d).unwrap().unit_terms, counted);
        let d = write_terms(Some(b"DSUT0001 and then nonsense".to_vec()));
        let e = LoadedSource::open(&d).err().unwrap().to_string();
        assert!(e.contains("unit_terms.bin"), "{e}");

        // Counts that are not the ones the manifest lists are refused.
        std::fs::write(
            dir.join(crate::artifact::LINKS_FILE),
            br#"{"sections":[9,9,9],"pages":[9,9]}"#,
        )
        .unwrap();
        assert!(LoadedSource::open(&dir).is_err());
    }
}

#[cfg(test)]
mod servable_tests {
    use super::*;
    use crate::embed::asked::{AskedMeta, ASKED_META, ASKED_VECTORS};
    use crate::embed::store::encode_vectors;

    /// An artifact whose files match their sums but not one another is
    /// refused by name, whether the server would skip it (questions about
    /// a page it does not have) or drop its vectors (rows that do not fit
    /// the pages, or the questions); the same files that fit load.
    #[test]
    fn files_that_match_their_sums_but_not_one_another_are_refused_by_name() {
        let asked = |pages: Vec<u32>| {
            let texts = pages.iter().map(|p| format!("question {p}")).collect();
            serde_json::to_vec(&AskedMeta {
                inputs_sha256: "i".into(),
                pages,
                texts,
            })
            .unwrap()
        };
        let t = tempfile::tempdir().unwrap();
        let write = |extras: Vec<(&str, Vec<u8>)>| {
            write_two_pages(&t.path().join(rand_suffix().to_string()), &extras)
        };
        let fits = write(vec![
            ("vectors.i8", rows(2)),
            (ASKED_META, asked(vec![0, 1, 1])),
            (ASKED_VECTORS, rows(3)),
        ]);
        let m = check_servable(&fits).unwrap();
        assert_eq!(m.counts.pages, 2);

        let refused = |extras: Vec<(&str, Vec<u8>)>| {
            let dir = write(extras);
            // The sums match: only the files' fit is wrong.
            crate::artifact::verify(&dir).unwrap();
            check_servable(&dir).unwrap_err().to_string()
        };
        let e = refused(vec![("vectors.i8", rows(1))]);
        assert!(
            e.contains("vectors.i8: 1 vectors of 4 dims for 2 pages"),
            "{e}"
        );
        let e = refused(vec![
            ("vectors.i8", rows(2)),
            (ASKED_META, asked(vec![0, 1, 1])),
            (ASKED_VECTORS, rows(2)),
        ]);
        assert!(
            e.contains("asked.i8: 2 rows of 4 dims for 3 questions"),
            "{e}"
        );
        let e = refused(vec![
            ("vectors.i8", rows(2)),
            (ASKED_META, asked(vec![0, 7])),
            (ASKED_VECTORS, rows(2)),
        ]);
        assert!(
            e.contains("asked.json: a question asks about page 7"),
            "{e}"
        );
        // The reason is said once, after the file's path.
        assert_eq!(e.matches("asked.json").count(), 1, "{e}");
    }

    /// A server that finds the newest snapshot's embedding files at odds
    /// with its records (their sums match) serves the previous snapshot, as
    /// it does for a corrupt one; it did serve the newest without vectors.
    /// A class reference that does not parse is refused naming its file once.
    #[test]
    fn a_server_passes_over_a_snapshot_whose_vectors_do_not_fit() {
        let t = tempfile::tempdir().unwrap();
        let write = |extras: Vec<(&str, Vec<u8>)>, name: &str| {
            let made = t.path().join("made").join(rand_suffix().to_string());
            let dir = write_two_pages(&made, &extras);
            // Named so that the second sorts as the newer.
            let to = t.path().join("root/s/v").join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::rename(&dir, &to).unwrap();
            to
        };
        let older = write(
            vec![("vectors.i8", rows(2))],
            "20260101T000000Z-aaaaaaaaaaaa",
        );
        let newer = write(
            vec![("vectors.i8", rows(1))],
            "20260102T000000Z-bbbbbbbbbbbb",
        );
        crate::artifact::verify(&newer).unwrap();

        let root = t.path().join("root");
        let (lib, warnings) = Library::load_dir_awaiting_model(&root).unwrap();
        assert_eq!(lib.sources.len(), 1);
        assert_eq!(lib.sources[0].dir.as_deref(), Some(older.as_path()));
        assert_eq!(lib.rejected, 1);
        let w = warnings.join("\n");
        assert!(
            w.contains("vectors.i8: 1 vectors of 4 dims for 2 pages"),
            "{w}"
        );
        assert_eq!(w.matches("vectors.i8").count(), 1, "{w}");
        // The previous snapshot's files wait for the model.
        assert_eq!(
            lib.sources[0].dense.as_ref().map(|d| d.vectors.len()),
            Some(2)
        );
        // A server without a model uses none of them: it serves the newest,
        // whose records are sound, and holds no vectors.
        let (lexical, _) = Library::load_dir(&root).unwrap();
        assert_eq!(lexical.sources[0].dir.as_deref(), Some(newer.as_path()));
        assert_eq!(lexical.rejected, 0);
        assert!(lexical.sources[0].dense.is_none() && lexical.sources[0].vectors.is_none());

        // A class reference whose bytes match their sum but do not parse.
        let classes = write(
            vec![
                ("vectors.i8", rows(2)),
                (crate::artifact::CLASSES_FILE, b"{not json".to_vec()),
            ],
            "20260103T000000Z-cccccccccccc",
        );
        let e = check_servable(&classes).unwrap_err().to_string();
        assert!(e.contains("classes.jsonl: line 1"), "{e}");
        assert_eq!(e.matches("classes.jsonl").count(), 1, "{e}");
    }

    /// An artifact under `out` of two pages of one section each, whose
    /// manifest says it has page vectors of 4 dims in `vectors.i8`, with
    /// `extras` (unchecked).
    fn write_two_pages(out: &Path, extras: &[(&str, Vec<u8>)]) -> std::path::PathBuf {
        use crate::model::testing::{lead_section, page_of};
        let (a, b) = ("https://d.example/a", "https://d.example/b");
        let pages = vec![page_of(a, "words"), page_of(b, "words")];
        let sections = vec![lead_section(a, "words"), lead_section(b, "words")];
        let meta = crate::artifact::ArtifactMeta {
            source: "s".into(),
            product: "p".into(),
            version: "v".into(),
            embedding: Some(crate::model::EmbeddingInfo {
                model: "m".into(),
                teacher_sha256: "t".into(),
                vectors_sha256: "v".into(),
                dims: 4,
                file: "vectors.i8".into(),
                unit: crate::model::VectorUnit::Page,
            }),
            ..Default::default()
        };
        let no_check = crate::artifact::no_check;
        crate::artifact::write(out, &meta, &pages, &sections, &[], extras, &no_check).unwrap()
    }

    /// `n` rows of 4 dims, as a vector file holds them.
    fn rows(n: usize) -> Vec<u8> {
        let r: Vec<Vec<f32>> = (0..n).map(|i| vec![1.0, i as f32, 0.5, 0.0]).collect();
        encode_vectors(Path::new("v"), 4, &r).unwrap()
    }

    /// A fresh number for each artifact's output folder.
    fn rand_suffix() -> usize {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        N.fetch_add(1, Ordering::Relaxed)
    }
}
