//! The `build` job: crawl → normalize → section → index → artifact, for each
//! selected source and version. This module only wires the stages together;
//! each stage lives in its own module and hands the next one its records.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::artifact::{self, ArtifactMeta};
use crate::config::{Config, Source, VersionSpec};
use crate::crawl::fetch::{FetchOptions, Fetcher, Validators};
use crate::crawl::{self, CrawlStats, FetchedPage, Progress};
use crate::markdown::SlugStyle;
use crate::model::{page_hash, Page, Section};
use crate::normalize::{self, godot_class::GodotClass};
use crate::section;

/// Longest section text before it is split into parts (characters).
pub const MAX_SECTION_CHARS: usize = 3200;

/// Progress callback of a build: (source id, version, done, total).
pub type BuildProgress = Arc<dyn Fn(&str, &str, u64, u64) + Send + Sync>;

/// Options of one build run.
#[derive(Clone)]
pub struct BuildOptions {
    pub out: PathBuf,
    pub mirror: Option<url::Url>,
    /// Override of every source's requests per second (0 = unlimited).
    pub rate: Option<u32>,
    pub concurrency: Option<u32>,
    /// Override of the per-request timeout (body included).
    pub timeout: Option<std::time::Duration>,
    /// Override of the retries after a failed attempt.
    pub retries: Option<u32>,
    /// Pages that may fail after their retries; with more, no artifact is
    /// written (never a silently smaller snapshot).
    pub allow_failures: usize,
    /// Called with (source id, version, done, total) as URLs finish.
    pub progress: BuildProgress,
    /// Embeds sections (static model) or pages (transformer) for dense
    /// retrieval when set.
    pub model: Option<Arc<crate::embed::Embedder>>,
    /// Write a new snapshot even when the content equals the previous one.
    pub force: bool,
}

/// What one (source, version) build produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VersionReport {
    pub source: String,
    pub version: String,
    pub artifact: Option<PathBuf>,
    pub pages: usize,
    pub sections: usize,
    pub stats: CrawlStats,
    pub warnings: Vec<String>,
    /// URLs that failed after their retries, with the reason.
    pub failures: Vec<String>,
    /// URLs that answered 404/410.
    pub broken: Vec<String>,
    /// The content equals the previous snapshot's (same docsnap, same model):
    /// `artifact` is that snapshot and nothing was indexed, embedded or written.
    pub unchanged: bool,
    /// Where the time went.
    pub timings: StageTimings,
}

/// Wall time of a version's build by stage, in milliseconds. Normalize
/// includes sectioning (they run together on all cores, page by page);
/// write includes indexing (tantivy writes the index into the artifact).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StageTimings {
    pub crawl_ms: u64,
    pub normalize_ms: u64,
    pub embed_ms: u64,
    pub write_ms: u64,
    /// Texts the model embedded (not reused from the previous snapshot).
    pub embedded: usize,
    /// Of those, pages embedded while the crawl ran (`EarlyVectors`).
    pub embedded_early: usize,
}

/// Build failure of a whole (source, version).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Crawl(#[from] crawl::CrawlError),
    #[error(transparent)]
    Artifact(#[from] artifact::ArtifactError),
    #[error("HTTP client: {0}")]
    Fetcher(#[from] crawl::fetch::FetchError),
    #[error("crawl journal {}: {source}", path.display())]
    Journal {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Selectors(#[from] crate::config::SelectorError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(String),
    #[error("embedding sections: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    #[error("serializing {what}: {source}")]
    Serialize {
        what: &'static str,
        source: serde_json::Error,
    },
}

/// Build one version of one source into `opts.out`.
pub async fn build_version(
    cfg: &Config,
    source: &Source,
    version: &VersionSpec,
    opts: &BuildOptions,
) -> Result<VersionReport, BuildError> {
    let defaults = FetchOptions::default();
    let fetch_opts = FetchOptions {
        mirror: opts.mirror.clone(),
        per_second: opts.rate.unwrap_or(source.rate.per_second),
        concurrency: opts.concurrency.unwrap_or(source.rate.concurrency),
        user_agent: format!("docsnap/{} (+{})", env!("CARGO_PKG_VERSION"), cfg.contact),
        timeout: opts.timeout.unwrap_or(defaults.timeout),
        retries: opts.retries.unwrap_or(defaults.retries),
        ..defaults
    };
    let fetcher = Arc::new(Fetcher::new(fetch_opts)?);

    // The previous snapshot of this (source, version) supplies validators for
    // conditional requests and the records of pages that did not change.
    // A previous snapshot that does not load is not reused (the build starts
    // from scratch) and the summary says why.
    let mut prev_warning = None;
    let prev = match artifact::previous(&opts.out, &source.id, &version.label) {
        Some(d) => match artifact::load_pages(&d) {
            Ok(p) => Some(p),
            Err(e) => {
                prev_warning = Some(format!(
                    "previous snapshot {} not reused, building from scratch: {e}",
                    d.display()
                ));
                None
            }
        },
        None => None,
    };
    // Records of pages answered 304 are reused only when this docsnap and
    // this configuration would make the same records; otherwise every page
    // is fetched again (a 304 carries no body to normalize anew).
    let fingerprint = records_fingerprint(source);
    let same_records = |p: &&artifact::PreviousPages| {
        p.manifest.records_fingerprint.as_deref() == Some(fingerprint.as_str())
    };
    let reusable = prev.as_ref().filter(same_records);
    if let (Some(p), None) = (&prev, reusable) {
        prev_warning = Some(format!(
            "previous snapshot {} was made by another normalizer or configuration \
             (records fingerprint {}, here {}): every page fetched and normalized again",
            p.dir.display(),
            p.manifest
                .records_fingerprint
                .as_deref()
                .map_or("absent", |f| &f[..f.len().min(12)]),
            &fingerprint[..12],
        ));
    }
    let mut validators = BTreeMap::new();
    if let Some(p) = reusable {
        for pg in &p.pages {
            validators.insert(
                pg.url.clone(),
                Validators {
                    etag: pg.etag.clone(),
                    last_modified: pg.last_modified.clone(),
                },
            );
        }
    }

    let cb = opts.progress.clone();
    let (sid, vl) = (source.id.clone(), version.label.clone());
    let progress: Progress = Arc::new(move |d, t| cb(&sid, &vl, d, t));
    // The journal of an interrupted build of this version, if any.
    let journal_dir = opts
        .out
        .join(&source.id)
        .join(&version.label)
        .join(".journal");
    let journal = Arc::new(
        crawl::journal::Journal::open(&journal_dir).map_err(|source| BuildError::Journal {
            path: journal_dir.clone(),
            source,
        })?,
    );
    let slug = source.slug.unwrap_or(SlugStyle::Github);
    // Pages are normalized as they arrive, on other threads, while the
    // crawl waits on the network; what the crawl finally lists is the truth.
    let pipeline = Arc::new(PagePipeline {
        family: source.family,
        class_pages: source.class_pages.clone(),
        slug,
        rules: source.selectors.compile()?,
    });
    let early_vectors = EarlyVectors::new(opts.model.as_ref(), prev.as_ref());
    let early = EarlyNormalizer::start(pipeline.clone(), early_vectors.clone());
    let t_crawl = std::time::Instant::now();
    let crawled = crawl::crawl_version(
        source,
        version,
        fetcher,
        &validators,
        Some(journal.clone()),
        progress,
        Some(early.sink()),
    )
    .await;
    let done_early = early.finish();
    let mut crawled = crawled?;

    let mut pages: Vec<Page> = Vec::new();
    let mut sections_by_url: HashMap<String, Vec<Section>> = HashMap::new();
    let mut classes: Vec<GodotClass> = Vec::new();
    let mut warnings = crawled.warnings.clone();
    warnings.extend(prev_warning);
    let mut timings = StageTimings {
        crawl_ms: ms(t_crawl),
        ..Default::default()
    };
    let t_norm = std::time::Instant::now();
    let normalized = normalize_all(&pipeline, &crawled.pages, done_early);
    timings.normalize_ms = ms(t_norm);
    // A page that fetched but did not normalize is a failed page (in the
    // summary and in crawl.jsonl), never a silently smaller snapshot.
    let mut unnormalized: HashMap<String, String> = HashMap::new();
    for (r, f) in normalized.into_iter().zip(&crawled.pages) {
        match r {
            Ok((page, secs, class)) => {
                sections_by_url.insert(page.url.clone(), secs);
                pages.push(page);
                classes.extend(class);
            }
            Err(e) => {
                unnormalized.insert(f.url.clone(), format!("normalize failed: {e}"));
            }
        }
    }
    for o in &mut crawled.outcomes {
        if let Some(e) = unnormalized.remove(&o.url) {
            crawled.failed.push(format!("{}: {e}", o.url));
            o.error = Some(e);
            crawled.stats.failed += 1;
        }
    }
    // A failed page without an outcome of its own still counts.
    for (url, e) in unnormalized {
        crawled.stats.failed += 1;
        crawled.failed.push(format!("{url}: {e}"));
    }
    // Pages answered 304 come from the previous snapshot unchanged; their
    // sections and class records are read only if a snapshot is written.
    let mut reused: std::collections::HashSet<String> = std::collections::HashSet::new();
    if let Some(p) = reusable {
        let not_modified: std::collections::HashSet<&str> = crawled
            .outcomes
            .iter()
            .filter(|o| o.status == 304)
            .map(|o| o.url.as_str())
            .collect();
        for pg in &p.pages {
            if not_modified.contains(pg.url.as_str()) {
                reused.insert(pg.url.clone());
                pages.push(pg.clone());
            }
        }
    }
    pages.sort_by(|a, b| a.url.cmp(&b.url));
    pages.dedup_by(|a, b| a.url == b.url);

    // Pages of the previous snapshot that this build no longer has.
    if let Some(p) = &prev {
        let now: std::collections::HashSet<&str> = pages.iter().map(|p| p.url.as_str()).collect();
        for old in &p.pages {
            if !now.contains(old.url.as_str()) {
                warnings.push(format!("gone since the previous snapshot: {}", old.url));
            }
        }
    }
    let failures: Vec<String> = crawled.failed.clone();
    let broken: Vec<String> = crawled
        .outcomes
        .iter()
        .filter(|o| matches!(o.status, 404 | 410))
        .map(|o| o.url.clone())
        .collect();

    // Nothing is written when too many pages failed (never a silently smaller
    // snapshot) or nothing was found.
    let writable = !pages.is_empty() && failures.len() <= opts.allow_failures;
    // Same content as the previous snapshot, made by this docsnap with this
    // model: that snapshot is the answer. Nothing is re-indexed, re-embedded
    // or written twice (`force` writes a new one anyway).
    let embedding = opts.model.as_deref().map(crate::embed::Embedder::info);
    let adapter = query_adapter(source, embedding.as_ref(), &mut warnings)?;
    let adapter_sha = adapter.as_deref().map(crate::util::sha256_hex);
    let asked = asked_questions(source, embedding.as_ref(), adapter.as_deref(), &pages)?;
    let asked_meta_sha = asked
        .as_ref()
        .map(|a| crate::util::sha256_hex(&a.meta_bytes));
    let unchanged_dir = reusable
        .filter(|p| {
            writable
                && !opts.force
                && p.manifest.schema_version == crate::model::SCHEMA_VERSION
                && p.manifest.tool_version == env!("CARGO_PKG_VERSION")
                && p.manifest.artifact_revision == Some(crate::model::ARTIFACT_REVISION)
                && p.manifest.embedding == embedding
                && p.manifest.page_kinds == source.page_kinds
                && p.manifest.editions == source.editions
                && p.manifest.areas == source.areas
                && p.manifest.tools == Some(source.tools)
                && p.manifest.code_apart == source.code_apart
                && p.manifest.files.get(crate::embed::adapter::ADAPTER_FILE) == adapter_sha.as_ref()
                && p.manifest.files.get(crate::embed::asked::ASKED_META) == asked_meta_sha.as_ref()
                && p.manifest.content_sha256 == artifact::content_sha256(&pages)
                // Kept only whole: a damaged snapshot is replaced, not kept
                // as "unchanged" run after run.
                && match artifact::verify(&p.dir) {
                    Ok(_) => true,
                    Err(e) => {
                        warnings.push(format!("previous snapshot damaged, writing a new one: {e}"));
                        false
                    }
                }
        })
        .map(|p| p.dir.clone());
    let unchanged = unchanged_dir.is_some();
    let mut sections = Vec::new();
    // Where each section taken over from the previous snapshot was in it,
    // and that snapshot's unit-term counts (see `index::Prior`).
    let mut previous_at: HashMap<String, Vec<u32>> = HashMap::new();
    let mut prior_terms: Option<crate::index::UnitTerms> = None;
    let dir = if unchanged || !writable {
        unchanged_dir
    } else {
        if let (Some(p), false) = (&prev, reused.is_empty()) {
            let t_reuse = std::time::Instant::now();
            let prev_sections = artifact::load_sections(&p.dir, &p.manifest)?;
            let n_prev = prev_sections.len();
            for (j, s) in prev_sections.into_iter().enumerate() {
                if reused.contains(&s.url) {
                    previous_at.entry(s.url.clone()).or_default().push(j as u32);
                    sections_by_url.entry(s.url.clone()).or_default().push(s);
                }
            }
            let same_revision =
                p.manifest.artifact_revision == Some(crate::model::ARTIFACT_REVISION);
            if same_revision && p.manifest.files.contains_key(crate::index::UNIT_TERMS_FILE) {
                let name = crate::index::UNIT_TERMS_FILE;
                let read = artifact::read_verified(&p.dir, &p.manifest, name)
                    .map_err(|e| e.to_string())
                    .and_then(|b| crate::index::UnitTerms::from_bytes(&b, n_prev));
                match read {
                    Ok(t) => prior_terms = Some(t),
                    // Counted anew, as for a first build.
                    Err(e) => warnings.push(format!(
                        "previous snapshot's {name}: {e}; counting every unit again"
                    )),
                }
            }
            if p.manifest.files.contains_key(artifact::CLASSES_FILE) {
                let prev_classes: Vec<GodotClass> =
                    artifact::read_listed_jsonl(&p.dir, &p.manifest, artifact::CLASSES_FILE)?;
                classes.extend(prev_classes.into_iter().filter(|c| reused.contains(&c.url)));
            }
            timings.normalize_ms += ms(t_reuse);
        }
        let mut previous: Vec<Option<u32>> = Vec::new();
        for p in &pages {
            if let Some(s) = sections_by_url.remove(&p.url) {
                match previous_at.remove(&p.url) {
                    Some(at) if at.len() == s.len() => previous.extend(at.into_iter().map(Some)),
                    _ => previous.extend(std::iter::repeat_n(None, s.len())),
                }
                sections.extend(s);
            }
        }
        let unit_terms_prior = prior_terms.map(|terms| crate::index::Prior { terms, previous });
        classes.sort_by(|a, b| a.url.cmp(&b.url));
        classes.dedup_by(|a, b| a.url == b.url);
        let mut extras: Vec<(&str, Vec<u8>)> = if classes.is_empty() {
            Vec::new()
        } else {
            let bytes = artifact::to_jsonl(&classes).map_err(|source| BuildError::Serialize {
                what: "class records",
                source,
            })?;
            vec![(artifact::CLASSES_FILE, bytes)]
        };
        // Counted once here rather than by every server at start-up.
        let links = crate::inlinks::count_records(&pages, &sections);
        extras.push((
            artifact::LINKS_FILE,
            serde_json::to_vec(&links).map_err(|source| BuildError::Serialize {
                what: "link counts",
                source,
            })?,
        ));
        // Renames the docs declare, read once here for every server.
        let renames = classes.iter().flat_map(GodotClass::renames).collect();
        let aliases = crate::aliases::collect(&sections, renames);
        extras.push((
            crate::aliases::ALIASES_FILE,
            serde_json::to_vec(&aliases).map_err(|source| BuildError::Serialize {
                what: "aliases",
                source,
            })?,
        ));
        let t_embed = std::time::Instant::now();
        if let Some(m) = &opts.model {
            // Rows of unchanged texts come from the previous snapshot when
            // this very model made its vectors.
            let same_model = prev
                .as_ref()
                .filter(|p| p.manifest.embedding == embedding)
                .map(|p| (p.dir.as_path(), &p.manifest));
            let early_rows = early_vectors.map(|e| e.take()).unwrap_or_default();
            timings.embedded_early = early_rows.len();
            let (files, embedded) = m.embed_artifact(&pages, &sections, same_model, early_rows)?;
            timings.embedded = embedded;
            extras.extend(files);
            if let Some(a) = asked {
                // Questions are texts the model embeds too: a no-change
                // rebuild embeds none of them either.
                let shipped = || shipped_rows(source, &mut warnings);
                let (vectors, keys, embedded) =
                    a.vectors(m, adapter.as_deref(), same_model, shipped)?;
                timings.embedded += embedded;
                extras.push((crate::embed::asked::ASKED_VECTORS, vectors));
                extras.push((crate::embed::asked::ASKED_KEYS, keys));
                extras.push((crate::embed::asked::ASKED_META, a.meta_bytes));
            }
            if let Some(bytes) = adapter {
                extras.push((crate::embed::adapter::ADAPTER_FILE, bytes));
            }
        } else if let Some(a) = asked {
            // No rows without a model: the questions' texts, for their words.
            extras.push((crate::embed::asked::ASKED_META, a.meta_bytes));
        }
        timings.embed_ms = ms(t_embed);
        let meta = ArtifactMeta {
            source: source.id.clone(),
            product: source.product.clone(),
            version: version.label.clone(),
            embedding,
            page_kinds: source.page_kinds.clone(),
            editions: source.editions.clone(),
            areas: source.areas.clone(),
            records_fingerprint: Some(fingerprint.clone()),
            tools: Some(source.tools),
            unit_terms: true,
            unit_terms_prior,
            index: crate::index::IndexOptions {
                code_apart: source.code_apart,
            },
        };
        let t_write = std::time::Instant::now();
        // The artifact is opened as a server opens it before it becomes
        // visible: a writer's defect fails this build, naming the file,
        // instead of leaving a snapshot every server would skip.
        let dir = artifact::write(
            &opts.out,
            &meta,
            &pages,
            &sections,
            &crawled.outcomes,
            &extras,
            &|dir| crate::search::check_servable(dir).map(drop),
        )?;
        timings.write_ms = ms(t_write);
        Some(dir)
    };
    if dir.is_some() {
        // The artifact (new or kept) holds everything the journal did.
        if let Ok(j) = Arc::try_unwrap(journal) {
            let _ = j.remove();
        }
    }
    Ok(VersionReport {
        source: source.id.clone(),
        version: version.label.clone(),
        artifact: dir,
        pages: pages.len(),
        sections: if unchanged {
            prev.as_ref()
                .map_or(0, |p| p.manifest.counts.sections as usize)
        } else {
            sections.len()
        },
        stats: crawled.stats,
        warnings,
        failures,
        broken,
        unchanged,
        timings,
    })
}

/// One (source, version) of [`build_sources`] and how its build ended.
#[derive(Debug)]
pub struct VersionRun {
    pub source: String,
    pub version: String,
    pub result: Result<VersionReport, BuildError>,
}

/// Build every version of every source in `sources`, up to `jobs` sources
/// at once, calling `on_done` as each version ends; the runs come back in
/// the order given.
///
/// Sources run side by side because a crawl spends most of its time waiting
/// on the network, and one source's indexing can fill another's wait. Each
/// source gets its own thread and async runtime, so that one source's
/// CPU-bound stages never hold up another's fetches. The versions of one
/// source share a host and run one after another: politeness per host is
/// exactly what a lone build would have.
pub fn build_sources(
    cfg: &Config,
    sources: &[&Source],
    opts: &BuildOptions,
    jobs: usize,
    on_done: &(dyn Fn(&VersionRun) + Sync),
) -> Vec<VersionRun> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Vec<VersionRun>>> =
        sources.iter().map(|_| Default::default()).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, sources.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(s) = sources.get(i) else { break };
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let mut runs = Vec::new();
                for v in &s.versions {
                    let result = match &rt {
                        Ok(rt) => rt.block_on(build_version(cfg, s, v, opts)),
                        Err(e) => Err(BuildError::Runtime(e.to_string())),
                    };
                    let run = VersionRun {
                        source: s.id.clone(),
                        version: v.label.clone(),
                        result,
                    };
                    on_done(&run);
                    runs.push(run);
                }
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = runs;
            });
        }
    });
    slots
        .into_iter()
        .flat_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// Milliseconds since `t`.
/// The bytes of the source's query adapter when this build's embedding is
/// the one it was learned for. A configured file that cannot be read is an
/// error; an adapter of another embedding (a build with another `--model`)
/// is left out with a warning, and the artifact is ranked unadapted.
fn query_adapter(
    source: &Source,
    embedding: Option<&crate::model::EmbeddingInfo>,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<u8>>, BuildError> {
    let (Some(path), Some(info)) = (&source.query_adapter, embedding) else {
        return Ok(None);
    };
    let bytes = std::fs::read(path).map_err(|e| crate::embed::EmbedError::io(path, e))?;
    let a = crate::embed::adapter::QueryAdapter::from_bytes(path, &bytes)?;
    if a.vectors_sha256() != info.vectors_sha256 || a.dims() != info.dims as usize {
        warnings.push(format!(
            "{}: learned for the vectors {} ({} dims), this build's model {} makes {} ({} dims): not used",
            path.display(),
            a.vectors_sha256(),
            a.dims(),
            info.model,
            info.vectors_sha256,
            info.dims
        ));
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// The source's questions embedded ahead of the build (`asked_rows`), when
/// configured. Rows that do not read are not used, with a warning: every
/// question is then embedded, which costs time and changes nothing else.
fn shipped_rows(
    source: &Source,
    warnings: &mut Vec<String>,
) -> Option<crate::embed::asked::ShippedRows> {
    let path = source.asked_rows.as_ref()?;
    match crate::embed::asked::ShippedRows::read(path) {
        Ok(rows) => Some(rows),
        Err(e) => {
            warnings.push(format!("{e}: not used, every question asked is embedded"));
            None
        }
    }
}

/// The questions asked of a source's pages (`asked` in sources.yaml, see
/// `embed::asked`), selected for this build's pages: their meta is known
/// before anything is embedded, so an unchanged set keeps the previous
/// snapshot. Without a model only the meta (with the texts) is written.
struct AskedPlan {
    questions: Vec<(String, u32)>,
    /// What made the rows (`AskedMeta::inputs_sha256`).
    inputs_sha256: String,
    meta_bytes: Vec<u8>,
    /// Each row's key (`embed::asked::row_keys`).
    keys: Vec<String>,
}

fn asked_questions(
    source: &Source,
    embedding: Option<&crate::model::EmbeddingInfo>,
    adapter: Option<&[u8]>,
    pages: &[Page],
) -> Result<Option<AskedPlan>, BuildError> {
    if source.asked.is_empty() {
        return Ok(None);
    }
    let keys = crate::inlinks::page_keys(pages);
    // Asked as the source's tool will be asked: the Godot tool strips a
    // question's framing ("in godot 4, how do I") before it embeds it.
    let godot = source.tools == crate::model::ToolSet::Godot;
    let questions =
        crate::embed::asked::select(&source.asked, &keys, crate::util::canonical_page_key, |q| {
            if godot {
                crate::search::godot::strip_framing(q)
            } else {
                q.to_string()
            }
        })?;
    if questions.is_empty() {
        return Ok(None);
    }
    // Without a model only the texts are kept (no rows to key): the
    // server ranks by their words alone.
    let vectors_sha256 = embedding.map_or("", |i| i.vectors_sha256.as_str());
    let meta = crate::embed::asked::meta(vectors_sha256, adapter, &questions);
    let keys = match embedding {
        Some(_) => crate::embed::asked::row_keys(vectors_sha256, adapter, &questions),
        None => Vec::new(),
    };
    let meta_bytes = serde_json::to_vec(&meta).map_err(|source| BuildError::Serialize {
        what: "asked questions",
        source,
    })?;
    Ok(Some(AskedPlan {
        questions,
        inputs_sha256: meta.inputs_sha256,
        meta_bytes,
        keys,
    }))
}

impl AskedPlan {
    /// The rows' vector file and keys file: the previous snapshot's vectors
    /// when they were made from the very same inputs (`prev`: its directory
    /// and manifest, when the same model made it; the pages asked about may
    /// have moved); else each question's row taken from the previous
    /// snapshot where its key is there (the same text, model and adapter),
    /// the rest embedded as the server embeds a question, moved by the
    /// adapter. With how many were embedded.
    fn vectors(
        &self,
        m: &crate::embed::Embedder,
        adapter: Option<&[u8]>,
        prev: Option<(&Path, &crate::model::Manifest)>,
        shipped: impl FnOnce() -> Option<crate::embed::asked::ShippedRows>,
    ) -> Result<(Vec<u8>, Vec<u8>, usize), BuildError> {
        use crate::embed::asked::{AskedMeta, ASKED_KEYS, ASKED_META, ASKED_VECTORS};
        let keys_bytes = self.keys.join("\n").into_bytes();
        // Read as any file of the previous snapshot is: checked against its
        // manifest; a damaged one is embedded again, never copied.
        let read = |name: &str| {
            let (dir, manifest) = prev?;
            crate::artifact::read_verified(dir, manifest, name).ok()
        };
        let whole = read(ASKED_META)
            .and_then(|b| serde_json::from_slice::<AskedMeta>(&b).ok())
            .filter(|before| before.inputs_sha256 == self.inputs_sha256)
            .and_then(|_| read(ASKED_VECTORS));
        if let Some(bytes) = whole {
            return Ok((bytes, keys_bytes, 0));
        }
        // Rows by key, as page vectors are taken over.
        let before = prev
            .map(|p| crate::embed::previous_rows(p, ASKED_VECTORS, ASKED_KEYS))
            .unwrap_or_default();
        // The rows shipped with the questions, read only when the previous
        // snapshot lacks some (5.8 MB and a sha256: not for every rebuild).
        let shipped = match self.keys.iter().all(|k| before.contains_key(k)) {
            true => None,
            false => shipped(),
        };
        let adapter = adapter
            .map(|b| crate::embed::adapter::QueryAdapter::from_bytes(Path::new(ASKED_VECTORS), b))
            .transpose()?;
        let dims = m.info().dims as usize;
        // Questions on all cores, as pages are: a short question's own
        // forward pass leaves the second core mostly idle.
        use rayon::prelude::*;
        let embedded = std::sync::atomic::AtomicUsize::new(0);
        let rows: Vec<Vec<f32>> = self
            .questions
            .par_iter()
            .zip(&self.keys)
            .map(|((q, _), key)| {
                match before
                    .get(key)
                    .cloned()
                    .or_else(|| shipped.as_ref()?.row(key))
                {
                    // Dequantized, the row quantizes to the same int8
                    // components again.
                    Some(v) if v.len() == dims => v,
                    _ => {
                        embedded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let v = m.embed_query(q);
                        match &adapter {
                            Some(a) => a.apply(&v),
                            None => v.to_vec(),
                        }
                    }
                }
            })
            .collect();
        let bytes = crate::embed::store::encode_vectors(Path::new(ASKED_VECTORS), dims, &rows)?;
        Ok((bytes, keys_bytes, embedded.into_inner()))
    }
}

fn ms(t: std::time::Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

/// Results of pages normalized during the crawl, by URL, with a hash of the
/// body they were made from (a page is reused only for the very same body).
type EarlyResults = HashMap<String, (u64, Result<PageRecords, PageFailure>)>;

/// Why a fetched page gave no records.
#[derive(Debug, thiserror::Error)]
enum PageFailure {
    #[error(transparent)]
    Normalize(#[from] normalize::NormalizeError),
    /// The normalizer panicked; the message is the panic's.
    #[error("normalizer panicked: {0}")]
    Panicked(String),
}

fn body_hash(f: &FetchedPage) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    f.kind.hash(&mut h);
    f.body.hash(&mut h);
    f.title_hint.hash(&mut h);
    f.description_hint.hash(&mut h);
    f.path.hash(&mut h);
    h.finish()
}

/// How one source's pages become records: its adapter, slug style and
/// compiled selectors, shared by the normalizing threads.
struct PagePipeline {
    family: crate::config::Family,
    /// Path prefix of pages that are also class-reference records.
    class_pages: Option<String>,
    slug: SlugStyle,
    rules: crate::config::PageRules,
}

/// What decides the records a page body becomes: [`crate::model::RECORDS_VERSION`]
/// and the parts of the source's entry normalize and section read. Hex sha256.
fn records_fingerprint(source: &Source) -> String {
    let basis = serde_json::json!({
        "records_version": crate::model::RECORDS_VERSION,
        "family": source.family,
        "selectors": source.selectors,
        "class_pages": source.class_pages,
        "slug": source.slug.unwrap_or(SlugStyle::Github),
        "max_section_chars": MAX_SECTION_CHARS,
    });
    crate::util::sha256_hex(basis.to_string().as_bytes())
}

/// Page vectors made by the normalizing threads as pages arrive (a
/// transformer's page units only): a crawl held to a host's rate waits on
/// the network, and embedding the pages is most of a build's work, so it
/// runs in that wait instead of after it. Keyed as `embed_pages` keys page
/// texts, which takes them as it takes a previous snapshot's rows; a page
/// whose final text differs (the crawl's last word on a page is the
/// truth) is embedded again there.
struct EarlyVectors {
    model: Arc<crate::embed::Embedder>,
    /// Keys of the rows the previous snapshot has (made by this model):
    /// nothing to embed for those.
    known: std::collections::HashSet<String>,
    done: std::sync::Mutex<HashMap<String, Vec<f32>>>,
}

impl EarlyVectors {
    fn new(
        model: Option<&Arc<crate::embed::Embedder>>,
        prev: Option<&artifact::PreviousPages>,
    ) -> Option<Arc<EarlyVectors>> {
        let model = model?;
        if !matches!(model.as_ref(), crate::embed::Embedder::Contextual(_)) {
            return None;
        }
        let info = model.info();
        let known = prev
            .filter(|p| p.manifest.embedding.as_ref() == Some(&info))
            .and_then(|p| {
                let keys = crate::embed::VECTOR_KEYS_FILE;
                artifact::read_verified(&p.dir, &p.manifest, keys).ok()
            })
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .split('\n')
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some(Arc::new(EarlyVectors {
            model: model.clone(),
            known,
            done: Default::default(),
        }))
    }

    /// The text the page of `records` is embedded from.
    fn text((page, sections, _): &PageRecords) -> Option<String> {
        crate::embed::contextual::page_texts(std::slice::from_ref(page), sections).pop()
    }

    /// Embeds a page's `text` unless it has a row already.
    fn embed(&self, text: String) {
        let crate::embed::Embedder::Contextual(m) = self.model.as_ref() else {
            return;
        };
        let key = crate::util::sha256_hex(text.as_bytes());
        let seen = |k: &String| {
            self.known.contains(k) || self.done.lock().is_ok_and(|d| d.contains_key(k))
        };
        if seen(&key) {
            return;
        }
        let v = m.embed_document(&text);
        if let Ok(mut d) = self.done.lock() {
            d.insert(key, v);
        }
    }

    /// The rows made, once every thread is done.
    fn take(&self) -> HashMap<String, Vec<f32>> {
        self.done
            .lock()
            .map(|mut d| std::mem::take(&mut *d))
            .unwrap_or_default()
    }
}

/// Worker threads that normalize pages handed to them by the crawl's sink.
struct EarlyNormalizer {
    tx: std::sync::mpsc::Sender<FetchedPage>,
    workers: Vec<std::thread::JoinHandle<()>>,
    results: Arc<std::sync::Mutex<EarlyResults>>,
}

impl EarlyNormalizer {
    fn start(pipeline: Arc<PagePipeline>, vectors: Option<Arc<EarlyVectors>>) -> EarlyNormalizer {
        let (tx, rx) = std::sync::mpsc::channel::<FetchedPage>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let results: Arc<std::sync::Mutex<EarlyResults>> = Arc::default();
        let workers = (0..normalize_threads())
            .map(|_| {
                let (rx, pipeline, results) = (rx.clone(), pipeline.clone(), results.clone());
                let vectors = vectors.clone();
                std::thread::spawn(move || loop {
                    let next = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    let Ok(f) = next else { return };
                    let r = normalize_guarded(&pipeline, &f);
                    let text = (vectors.as_ref().zip(r.as_ref().ok()))
                        .and_then(|(_, records)| EarlyVectors::text(records));
                    if let Ok(mut m) = results.lock() {
                        m.insert(f.url.clone(), (body_hash(&f), r));
                    }
                    if let (Some(v), Some(t)) = (&vectors, text) {
                        v.embed(t);
                    }
                })
            })
            .collect();
        EarlyNormalizer {
            tx,
            workers,
            results,
        }
    }

    /// The crawl's sink: hands each accepted page to the workers.
    fn sink(&self) -> crawl::PageSink {
        let tx = self.tx.clone();
        // A page the workers can no longer take is simply normalized after
        // the crawl: the sink is only a head start.
        Arc::new(move |f: &FetchedPage| {
            let _ = tx.send(f.clone());
        })
    }

    /// Wait for the workers to drain what they were given.
    fn finish(self) -> EarlyResults {
        drop(self.tx);
        for w in self.workers {
            let _ = w.join();
        }
        Arc::try_unwrap(self.results)
            .ok()
            .and_then(|m| m.into_inner().ok())
            .unwrap_or_default()
    }
}

fn normalize_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8)
}

/// Normalize and section every fetched page, on all cores, taking the
/// results already made during the crawl for pages whose body is the same.
fn normalize_all(
    pipeline: &PagePipeline,
    fetched: &[FetchedPage],
    mut early: EarlyResults,
) -> Vec<Result<PageRecords, PageFailure>> {
    let mut out: Vec<Option<Result<PageRecords, PageFailure>>> = fetched
        .iter()
        .map(|f| match early.remove(&f.url) {
            Some((h, r)) if h == body_hash(f) => Some(r),
            _ => None,
        })
        .collect();
    let todo: Vec<usize> = (0..fetched.len()).filter(|&i| out[i].is_none()).collect();
    let chunk = todo.len().div_ceil(normalize_threads()).max(1);
    let done: Vec<(usize, Result<PageRecords, PageFailure>)> = std::thread::scope(|s| {
        let handles: Vec<_> = todo
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|&i| (i, normalize_guarded(pipeline, &fetched[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, r) in done {
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(PageFailure::Panicked("its worker thread died".into()))))
        .collect()
}

/// [`normalize_one`], with a panic caught and turned into that page's
/// failure: one malformed page must not take its neighbours (or the
/// build) down with it.
fn normalize_guarded(pipeline: &PagePipeline, f: &FetchedPage) -> Result<PageRecords, PageFailure> {
    caught(|| normalize_one(pipeline, f))
}

/// Run `f`; a panic becomes an `Err` naming its message.
fn caught<T>(f: impl FnOnce() -> Result<T, PageFailure>) -> Result<T, PageFailure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        Err(PageFailure::Panicked(why))
    })
}

/// A normalized page, its sections, and its class record (Godot class reference).
type PageRecords = (Page, Vec<Section>, Option<GodotClass>);

fn normalize_one(pipeline: &PagePipeline, f: &FetchedPage) -> Result<PageRecords, PageFailure> {
    let (n, class) = normalize::normalize_with_class(
        pipeline.family,
        f.kind,
        &f.body,
        &f.url,
        pipeline
            .class_pages
            .as_deref()
            .is_some_and(|prefix| f.path.starts_with(prefix)),
        &pipeline.rules,
        f.nesting,
    )?;
    let title = if n.title.trim().is_empty() {
        f.title_hint.clone()
    } else {
        n.title.clone()
    };
    let description = if !n.description.trim().is_empty() {
        n.description.clone()
    } else if !f.description_hint.trim().is_empty() {
        f.description_hint.clone()
    } else {
        lead_sentence(&n.markdown)
    };
    let sha256 = page_hash(&title, &description, &n.markdown);
    let sections = section::split(&f.url, &title, &n, pipeline.slug, MAX_SECTION_CHARS);
    let page = Page {
        url: f.url.clone(),
        title,
        description,
        markdown: n.markdown,
        sha256,
        path: f.path.clone(),
        etag: f.etag.clone(),
        last_modified: f.last_modified.clone(),
    };
    Ok((page, sections, class))
}

/// The first sentence of the page's first prose paragraph (at most 200
/// characters), for pages whose site gives no description. Prose is a
/// paragraph at the top level (not in a list, quote or table; code is no
/// paragraph) that starts with a word, emphasis, a link or code — not an
/// image, markup or a "**Note**" callout — read as pulldown-cmark renders
/// its text.
pub fn lead_sentence(markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut depth = 0usize;
    let mut text: Option<String> = None;
    for (event, range) in Parser::new_ext(markdown, Options::ENABLE_TABLES).into_offset_iter() {
        match (&mut text, event) {
            (None, Event::Start(Tag::Paragraph)) if depth == 0 => {
                let src = markdown[range].trim_start();
                let first = src.chars().next().unwrap_or(' ');
                let starts_as_prose = first.is_alphanumeric() || "*_[`".contains(first);
                if starts_as_prose && !src.starts_with("**Note") {
                    text = Some(String::new());
                }
                depth += 1;
            }
            (None, Event::Start(_)) => depth += 1,
            (None, Event::End(_)) => depth = depth.saturating_sub(1),
            (Some(t), Event::Text(s) | Event::Code(s)) => t.push_str(&s),
            (Some(t), Event::SoftBreak | Event::HardBreak) => t.push(' '),
            (Some(t), Event::End(TagEnd::Paragraph)) => {
                return crate::util::first_sentence(t, 200);
            }
            _ => {}
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heading_without_id_links_to_its_enclosing_section() {
        // cursor.com ids h2–h4 only: an h5 links to its enclosing section.
        let url = "https://cursor.com/docs/t";
        let n = normalize::cursor::normalize("# T\n\n## A\n\n##### Deep\n\nx\n", url)
            .expect("normalizes");
        let s = section::split(url, &n.title, &n, SlugStyle::Github, 0);
        let anchors: Vec<&str> = s.iter().map(|x| x.anchor.as_str()).collect();
        assert_eq!(anchors, ["a", "a"]);
    }

    #[test]
    fn lead_sentence_skips_code_and_lists() {
        let fenced = "```\nfirst\n\nA blank line inside the fence. Still code.\n```\n\nThe real lead sentence is here. Then more.";
        assert_eq!(lead_sentence(fenced), "The real lead sentence is here.");
        let md = "```json\n{}\n```\n\n- item\n\nThe [Model Context Protocol](https://x/y) lets servers expose tools. More text here.";
        assert_eq!(
            lead_sentence(md),
            "The Model Context Protocol lets servers expose tools."
        );
        assert_eq!(lead_sentence("# only heading"), "");
        // Quotes, tables, images, callouts and indented code are not the lead.
        let md = "> quoted. text\n\n| a | b |\n|---|---|\n| c | d |\n\n![shot](s.png)\n\n**Note:** aside.\n\n    indented code.\n\n*Tools* let `agents` act. More.";
        assert_eq!(lead_sentence(md), "Tools let agents act.");
    }

    #[test]
    fn a_panic_becomes_that_pages_failure() {
        let r: Result<(), PageFailure> = caught(|| panic!("bad table at row {}", 3));
        assert_eq!(
            r.unwrap_err().to_string(),
            "normalizer panicked: bad table at row 3"
        );
        let r: Result<(), PageFailure> = caught(|| panic!("plain"));
        assert_eq!(r.unwrap_err().to_string(), "normalizer panicked: plain");
        assert_eq!(caught(|| Ok::<_, PageFailure>(7)).unwrap(), 7);
    }
}
