//! Artifact directories: `<out>/<source>/<version>/<snapshot-id>/` holding
//! `manifest.json`, `pages.jsonl`, `sections.jsonl`, `crawl.jsonl` and `index/`.
//!
//! Invariant: an artifact directory exists under its final name only when it
//! is complete. It is written under a hidden temporary name beside its final
//! place, every file is synced, the manifest (with the checksum of every other
//! file) is written last, and one `rename` publishes it. Readers skip hidden
//! names and verify the checksums before serving.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::aliases::ALIASES_FILE;
use crate::index::UNIT_TERMS_FILE;
use crate::model::{Counts, Manifest, Page, Section, UrlOutcome, SCHEMA_VERSION};
use crate::util::sha256_hex;
use sha2::{Digest, Sha256};

/// The structured class reference of a Godot artifact.
pub const CLASSES_FILE: &str = "classes.jsonl";
/// Incoming links per section and page ([`crate::inlinks::LinkCounts`]).
pub const LINKS_FILE: &str = "links.json";
/// Artifact I/O failure, naming the path.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Identity of an artifact to write.
#[derive(Debug, Clone, Default)]
pub struct ArtifactMeta {
    pub source: String,
    pub product: String,
    pub version: String,
    /// Set when the artifact carries section vectors (written as an extra file).
    pub embedding: Option<crate::model::EmbeddingInfo>,
    /// The source's named page groups (see [`Manifest::page_kinds`]).
    pub page_kinds: std::collections::BTreeMap<String, Vec<String>>,
    /// See [`Manifest::records_fingerprint`].
    pub records_fingerprint: Option<String>,
    /// See [`Manifest::tools`].
    pub tools: Option<crate::model::ToolSet>,
    /// See [`Manifest::editions`].
    pub editions: Option<String>,
    /// See [`Manifest::areas`].
    pub areas: Vec<crate::model::Area>,
    /// Write [`UNIT_TERMS_FILE`], counted from the sections (what builds
    /// do; a server counts them itself for an artifact without the file).
    pub unit_terms: bool,
    /// Counts an earlier artifact holds for sections taken over from it.
    pub unit_terms_prior: Option<crate::index::Prior>,
    /// How the sections are indexed (the source's `code_apart`).
    pub index: crate::index::IndexOptions,
}

/// sha256 over the sorted page hashes: identical content, identical value,
/// whatever the crawl order or date.
pub fn content_sha256(pages: &[Page]) -> String {
    let mut hs: Vec<&str> = pages.iter().map(|p| p.sha256.as_str()).collect();
    hs.sort_unstable();
    sha256_hex(hs.join("\n").as_bytes())
}

/// Current time as ISO 8601 UTC and as the compact form used in snapshot ids.
/// ISO and compact stamps for a new snapshot in `parent`: now, or one second
/// past the newest snapshot already there. Snapshot ids sort by their stamp
/// and "newest" means last in that order, so two snapshots made within one
/// second must not tie (their hashes would decide which one is served).
fn stamps_after(parent: &Path) -> (String, String) {
    let compact_fmt =
        time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let mut now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let newest = std::fs::read_dir(parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stamp = name.split('-').next()?.to_string();
            time::PrimitiveDateTime::parse(&stamp, &compact_fmt)
                .ok()
                .map(|t| t.assume_utc())
        })
        .max();
    if let Some(t) = newest {
        if t >= now {
            now = t + time::Duration::seconds(1);
        }
    }
    let iso = now
        .format(&time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
        ))
        .unwrap_or_default();
    let compact = now.format(&compact_fmt).unwrap_or_default();
    (iso, compact)
}

fn write_jsonl<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<(), ArtifactError> {
    let f = std::fs::File::create(path).map_err(io(path))?;
    let mut w = std::io::BufWriter::new(f);
    for it in items {
        let line = serde_json::to_string(it).map_err(|e| ArtifactError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        w.write_all(line.as_bytes()).map_err(io(path))?;
        w.write_all(b"\n").map_err(io(path))?;
    }
    let f = w.into_inner().map_err(|e| ArtifactError::Io {
        path: path.to_path_buf(),
        source: e.into_error(),
    })?;
    f.sync_all().map_err(io(path))
}

/// Serialize records as JSON lines (the bytes `write_jsonl` would write).
/// A record that cannot be serialized is an error, never a shorter file.
pub fn to_jsonl<T: serde::Serialize>(items: &[T]) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    for it in items {
        serde_json::to_writer(&mut out, it)?;
        out.push(b'\n');
    }
    Ok(out)
}

/// Read a JSON-lines file.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, ArtifactError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    parse_jsonl(path, &text)
}

/// Parse one JSON document read from `path`.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<T, ArtifactError> {
    serde_json::from_slice(bytes).map_err(|e| ArtifactError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Parse JSON lines read from `path`.
pub fn parse_jsonl_bytes<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<T>, ArtifactError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ArtifactError::Corrupt {
        path: path.to_path_buf(),
        message: "not UTF-8".into(),
    })?;
    parse_jsonl(path, text)
}

fn parse_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<Vec<T>, ArtifactError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| ArtifactError::Corrupt {
                path: path.to_path_buf(),
                message: format!("line {}: {e}", i + 1),
            })
        })
        .collect()
}

/// Every file under `dir`, as relative path (with `/`) → sha256.
fn hash_tree(dir: &Path) -> Result<BTreeMap<String, String>, ArtifactError> {
    hash_tree_except(dir, &[])
}

/// [`hash_tree`], but the files named in `later` are listed with an empty
/// hash: their caller hashes the bytes it reads to parse them, so each is
/// read once.
fn hash_tree_except(dir: &Path, later: &[&str]) -> Result<BTreeMap<String, String>, ArtifactError> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io(&d))? {
            let e = e.map_err(io(&d))?;
            let p = e.path();
            let ft = e.file_type().map_err(io(&p))?;
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                if rel == "manifest.json" || rel.ends_with(".lock") {
                    continue;
                }
                if later.contains(&rel.as_str()) {
                    out.insert(rel, String::new());
                    continue;
                }
                let file = std::fs::File::open(&p).map_err(io(&p))?;
                out.insert(rel, crate::util::sha256_reader(file).map_err(io(&p))?);
            }
        }
    }
    Ok(out)
}

/// The `check` of [`write`] that accepts every artifact.
pub fn no_check(_: &Path) -> Result<(), ArtifactError> {
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), ArtifactError> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io(dir))
}

/// Write a complete artifact under `out` and return its directory. Pages must be
/// sorted by URL and sections grouped by page in page order. `extras` are
/// further files of the artifact (e.g. `classes.jsonl`), named relative to it.
///
/// `check` runs on the finished artifact under its hidden name, before the
/// rename that makes it visible: an artifact it refuses is removed and
/// never seen by a reader. The build passes the server's own load
/// (`search::check_servable`), which this layer cannot name; [`no_check`]
/// accepts everything.
pub fn write(
    out: &Path,
    meta: &ArtifactMeta,
    pages: &[Page],
    sections: &[Section],
    outcomes: &[UrlOutcome],
    extras: &[(&str, Vec<u8>)],
    check: &dyn Fn(&Path) -> Result<(), ArtifactError>,
) -> Result<PathBuf, ArtifactError> {
    let content = content_sha256(pages);
    let parent = out.join(&meta.source).join(&meta.version);
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let (created_at, compact) = stamps_after(&parent);
    let snapshot_id = format!("{compact}-{}", &content[..12]);
    remove_dead_temporaries(&parent);
    let tmp = parent.join(format!(".tmp-{snapshot_id}-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    std::fs::create_dir(&tmp).map_err(io(&tmp))?;
    let result = (|| {
        let idx = tmp.join("index");
        std::fs::create_dir(&idx).map_err(io(&idx))?;
        let page_of = page_of(pages, sections);
        // The index (two tantivy threads, then a merge on one) and the
        // record files are written side by side: the merge leaves a core
        // free, and the records take it.
        let (indexed, records) = std::thread::scope(|s| {
            let index =
                s.spawn(|| crate::index::build(&idx, pages, sections, &page_of, meta.index));
            let records = (|| {
                write_jsonl(&tmp.join("pages.jsonl"), pages)?;
                write_jsonl(&tmp.join("sections.jsonl"), sections)?;
                write_jsonl(&tmp.join("crawl.jsonl"), outcomes)?;
                // Feedback's words of every unit, counted once here rather
                // than from the text of each query's best pages; beside the
                // index build, whose merge leaves a core free.
                let unit_terms = meta.unit_terms.then(|| {
                    let starts = crate::section::unit_starts(sections);
                    let prior = meta.unit_terms_prior.as_ref();
                    let counts = crate::index::UnitTerms::compute_with(sections, &starts, prior);
                    (UNIT_TERMS_FILE, counts.to_bytes())
                });
                for (name, bytes) in extras.iter().chain(&unit_terms) {
                    let p = tmp.join(name);
                    let mut f = std::fs::File::create(&p).map_err(io(&p))?;
                    f.write_all(bytes).map_err(io(&p))?;
                    f.sync_all().map_err(io(&p))?;
                }
                Ok::<(), ArtifactError>(())
            })();
            (index.join(), records)
        });
        records?;
        indexed.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        for e in std::fs::read_dir(&idx).map_err(io(&idx))? {
            let p = e.map_err(io(&idx))?.path();
            if p.is_file() {
                std::fs::File::open(&p)
                    .and_then(|f| f.sync_all())
                    .map_err(io(&p))?;
            }
        }
        sync_dir(&idx)?;
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            source: meta.source.clone(),
            product: meta.product.clone(),
            version: meta.version.clone(),
            snapshot_id: snapshot_id.clone(),
            created_at,
            counts: Counts {
                pages: pages.len() as u64,
                sections: sections.len() as u64,
            },
            files: hash_tree(&tmp)?,
            content_sha256: content.clone(),
            embedding: meta.embedding.clone(),
            page_kinds: meta.page_kinds.clone(),
            editions: meta.editions.clone(),
            areas: meta.areas.clone(),
            records_fingerprint: meta.records_fingerprint.clone(),
            tools: meta.tools,
            artifact_revision: Some(crate::model::ARTIFACT_REVISION),
            code_apart: meta.index.code_apart,
        };
        let mpath = tmp.join("manifest.json");
        let mut f = std::fs::File::create(&mpath).map_err(io(&mpath))?;
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| ArtifactError::Corrupt {
            path: mpath.clone(),
            message: e.to_string(),
        })?;
        f.write_all(&json).map_err(io(&mpath))?;
        f.sync_all().map_err(io(&mpath))?;
        sync_dir(&tmp)?;
        check(&tmp).map_err(|e| match e {
            // Named as the artifact would have been: the hidden folder goes.
            ArtifactError::Corrupt { path, message } => ArtifactError::Corrupt {
                path: parent
                    .join(&snapshot_id)
                    .join(path.strip_prefix(&tmp).unwrap_or(&path)),
                message: format!("written, then refused before it became visible: {message}"),
            },
            other => other,
        })
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let dest = parent.join(&snapshot_id);
    if dest.exists() {
        // Same second, same content: the artifact is already there.
        let _ = std::fs::remove_dir_all(&tmp);
        return Ok(dest);
    }
    std::fs::rename(&tmp, &dest).map_err(io(&dest))?;
    sync_dir(&parent)?;
    Ok(dest)
}

/// Remove an artifact directory without ever leaving a half-deleted one
/// visible: it is first renamed to a hidden temporary name (one atomic step),
/// then deleted. A process killed mid-delete leaves only the hidden name,
/// which the next write in that folder sweeps away.
pub fn remove_artifact(dir: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return std::fs::remove_dir_all(dir);
    };
    let hidden = parent.join(format!(
        ".tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::rename(dir, &hidden)?;
    if let Ok(f) = std::fs::File::open(parent) {
        let _ = f.sync_all();
    }
    std::fs::remove_dir_all(&hidden)
}

/// Remove the `.tmp-<id>-<pid>` directories of writers that are no longer
/// running (a build killed mid-write), so crashes do not leak disk. A
/// directory whose writer may still be alive is left alone; where process
/// liveness cannot be told (no `/proc`), nothing is removed.
fn remove_dead_temporaries(parent: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(".tmp-")
            .and_then(|rest| rest.rsplit('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// For each section, the index of its page in `pages` (sorted by URL).
pub fn page_of(pages: &[Page], sections: &[Section]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sections.len());
    let mut p = 0usize;
    for s in sections {
        while p < pages.len() && pages[p].url != s.url {
            p += 1;
        }
        if p == pages.len() {
            // Not in order: fall back to a search (keeps this total).
            p = pages.iter().position(|pg| pg.url == s.url).unwrap_or(0);
        }
        out.push(p);
    }
    out
}

/// An artifact read back from disk, checksums verified.
pub struct Artifact {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub pages: Vec<Page>,
    pub sections: Vec<Section>,
}

/// Read the manifest of an artifact directory.
pub fn read_manifest(dir: &Path) -> Result<Manifest, ArtifactError> {
    let p = dir.join("manifest.json");
    let bytes = std::fs::read(&p).map_err(io(&p))?;
    serde_json::from_slice(&bytes).map_err(|e| ArtifactError::Corrupt {
        path: p,
        message: format!("manifest is not valid: {e}"),
    })
}

/// Check every file listed in the manifest against its sha256, and that no
/// file is missing or unlisted.
pub fn verify(dir: &Path) -> Result<Manifest, ArtifactError> {
    let m = read_manifest(dir)?;
    check_schema(dir, &m)?;
    check_files(dir, &m, &hash_tree(dir)?)?;
    Ok(m)
}

/// Every file the manifest lists is there with its sha256 (an empty hash in
/// `actual`: checked elsewhere), and no other file is.
fn check_files(
    dir: &Path,
    m: &Manifest,
    actual: &BTreeMap<String, String>,
) -> Result<(), ArtifactError> {
    for (rel, want) in &m.files {
        match actual.get(rel) {
            None => {
                return Err(ArtifactError::Corrupt {
                    path: dir.join(rel),
                    message: "listed in the manifest but missing".into(),
                })
            }
            Some(got) if !got.is_empty() && got != want => {
                return Err(ArtifactError::Corrupt {
                    path: dir.join(rel),
                    message: format!("sha256 {got} does not match the manifest's {want}"),
                })
            }
            _ => {}
        }
    }
    if let Some(extra) = actual.keys().find(|k| !m.files.contains_key(*k)) {
        return Err(ArtifactError::Corrupt {
            path: dir.join(extra),
            message: "not listed in the manifest".into(),
        });
    }
    Ok(())
}

/// An artifact as a server holds it: every file verified, each record file
/// read once (hashed from the bytes that are parsed), and the pages' Markdown
/// bodies — the bulk of `pages.jsonl`, needed only to hand out a whole page —
/// left on disk ([`PageBodies`]).
pub struct Served {
    pub manifest: Manifest,
    /// Page records with `markdown` empty.
    pub pages: Vec<Page>,
    pub sections: Vec<Section>,
    pub bodies: PageBodies,
    /// Verified bytes of the further files a server parses itself
    /// ([`CLASSES_FILE`], [`LINKS_FILE`], [`UNIT_TERMS_FILE`],
    /// [`ALIASES_FILE`], the manifest's embedding file and the caller's
    /// `also`), by name, when the artifact has them.
    pub extras: BTreeMap<String, Vec<u8>>,
}

/// A page record without its body, as [`Served`] parses `pages.jsonl`.
#[derive(serde::Deserialize)]
struct PageHead {
    url: String,
    title: String,
    description: String,
    sha256: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    last_modified: Option<String>,
}

/// Open an artifact directory for serving (see [`Served`]). `also` names
/// further files the caller parses (the embedding's companions), and
/// `embedding` asks for the manifest's vector file: like the record files
/// they are read once, their sha256 taken from the bytes that are handed
/// over in [`Served::extras`]; the others are streamed through their sha256.
pub fn open_served(dir: &Path, also: &[&str], embedding: bool) -> Result<Served, ArtifactError> {
    const PAGES: &str = "pages.jsonl";
    const SECTIONS: &str = "sections.jsonl";
    let manifest = read_manifest(dir)?;
    check_schema(dir, &manifest)?;
    let embedding = (manifest.embedding.as_ref())
        .filter(|_| embedding)
        .map(|e| e.file.as_str());
    let handed: Vec<&str> = [CLASSES_FILE, LINKS_FILE, UNIT_TERMS_FILE, ALIASES_FILE]
        .into_iter()
        .chain(embedding)
        .chain(also.iter().copied())
        .collect();
    let later: Vec<&str> = [PAGES, SECTIONS]
        .into_iter()
        .chain(handed.iter().copied())
        .collect();
    check_files(dir, &manifest, &hash_tree_except(dir, &later)?)?;

    // The handle that is hashed is the one held for the bodies: a page stays
    // readable when its artifact is removed or replaced while this server
    // still answers from it.
    let path = dir.join(PAGES);
    let mut file = std::fs::File::open(&path).map_err(io(&path))?;
    let mut pages = Vec::with_capacity(manifest.counts.pages as usize);
    let mut lines = Vec::with_capacity(pages.capacity());
    for_each_listed_line(&path, &mut file, &manifest, PAGES, |n, at, line| {
        let h: PageHead = serde_json::from_slice(line).map_err(|e| ArtifactError::Corrupt {
            path: path.clone(),
            message: format!("line {n}: {e}"),
        })?;
        lines.push((at, line.len()));
        pages.push(Page {
            url: h.url,
            title: h.title,
            description: h.description,
            markdown: String::new(),
            sha256: h.sha256,
            path: h.path,
            etag: h.etag,
            last_modified: h.last_modified,
        });
        Ok(())
    })?;
    let sections: Vec<Section> = read_listed_jsonl(dir, &manifest, SECTIONS)?;
    if pages.len() as u64 != manifest.counts.pages
        || sections.len() as u64 != manifest.counts.sections
    {
        return Err(ArtifactError::Corrupt {
            path: dir.to_path_buf(),
            message: "page or section count differs from the manifest".into(),
        });
    }
    let mut extras = BTreeMap::new();
    for name in handed {
        if manifest.files.contains_key(name) {
            extras.insert(name.to_string(), read_verified(dir, &manifest, name)?);
        }
    }
    Ok(Served {
        manifest,
        pages,
        sections,
        bodies: PageBodies {
            path,
            file: std::sync::Mutex::new(file),
            lines,
        },
        extras,
    })
}

/// The Markdown bodies of a served artifact's pages, read from its
/// `pages.jsonl` when asked for.
pub struct PageBodies {
    path: PathBuf,
    file: std::sync::Mutex<std::fs::File>,
    /// Byte offset and length of each page's line.
    lines: Vec<(u64, usize)>,
}

impl PageBodies {
    /// The body of page `i`, checked against the page's content hash `sha256`
    /// (verified when the artifact was opened): bytes that changed on disk
    /// since are refused, never served.
    pub fn markdown(&self, i: usize, sha256: &str) -> Result<String, ArtifactError> {
        use std::io::{Read, Seek, SeekFrom};
        let corrupt = |message: String| ArtifactError::Corrupt {
            path: self.path.clone(),
            message,
        };
        let &(at, len) = self
            .lines
            .get(i)
            .ok_or_else(|| corrupt(format!("no page {i}")))?;
        let mut buf = vec![0u8; len];
        {
            let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
            f.seek(SeekFrom::Start(at)).map_err(io(&self.path))?;
            f.read_exact(&mut buf).map_err(io(&self.path))?;
        }
        let p: Page = serde_json::from_slice(&buf)
            .map_err(|e| corrupt(format!("page {i} changed on disk since it was loaded: {e}")))?;
        if p.sha256 != sha256
            || crate::model::page_hash(&p.title, &p.description, &p.markdown) != sha256
        {
            return Err(corrupt(format!(
                "page {i} changed on disk since it was loaded"
            )));
        }
        Ok(p.markdown)
    }
}

/// What a build needs first of its previous snapshot: the manifest and the
/// pages (validators for conditional requests, records of unchanged pages).
/// Sections and class records are read later, and only when a new snapshot
/// is written ([`load_sections`], [`read_listed_jsonl`]).
#[derive(Debug, Clone)]
pub struct PreviousPages {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub pages: Vec<Page>,
}

/// Parse one file the manifest lists, after checking its sha256 against the
/// manifest: what a build reuses is verified like what a server loads.
pub fn read_listed_jsonl<T: serde::de::DeserializeOwned>(
    dir: &Path,
    manifest: &Manifest,
    name: &str,
) -> Result<Vec<T>, ArtifactError> {
    let path = dir.join(name);
    let mut file = std::fs::File::open(&path).map_err(io(&path))?;
    let mut out = Vec::new();
    for_each_listed_line(&path, &mut file, manifest, name, |n, _, line| {
        out.push(
            serde_json::from_slice(line).map_err(|e| ArtifactError::Corrupt {
                path: path.clone(),
                message: format!("line {n}: {e}"),
            })?,
        );
        Ok(())
    })?;
    Ok(out)
}

/// Stream the lines of `file` (the file `name` the manifest lists) to
/// `each` — line number from 1, byte offset, bytes without the newline,
/// empty lines skipped — hashing the same bytes on the way, so a large
/// record file is read once and never held whole. The sha256 is checked at
/// the end; when it differs that is the error reported, whatever `each`
/// said of the (then untrusted) lines, so a flipped byte reads as a flipped
/// byte and not as a parse error.
fn for_each_listed_line(
    path: &Path,
    file: &mut std::fs::File,
    manifest: &Manifest,
    name: &str,
    mut each: impl FnMut(usize, u64, &[u8]) -> Result<(), ArtifactError>,
) -> Result<(), ArtifactError> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
    let mut hasher = Sha256::new();
    let mut line = Vec::new();
    let mut first_error = None;
    let (mut n, mut at) = (0usize, 0u64);
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(io(path))?;
        if read == 0 {
            break;
        }
        hasher.update(&line);
        n += 1;
        let start = at;
        at += read as u64;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if !body.is_empty() && first_error.is_none() {
            if let Err(e) = each(n, start, body) {
                first_error = Some(e);
            }
        }
    }
    check_digest(path, manifest, name, &hex::encode(hasher.finalize()))?;
    first_error.map_or(Ok(()), Err)
}

/// The bytes of one file the manifest lists, checked against its sha256.
pub fn read_verified(
    dir: &Path,
    manifest: &Manifest,
    name: &str,
) -> Result<Vec<u8>, ArtifactError> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    check_digest(&path, manifest, name, &sha256_hex(&bytes))?;
    Ok(bytes)
}

/// `got`, the sha256 of the file `name` read from `path`, is the one the
/// manifest lists.
fn check_digest(
    path: &Path,
    manifest: &Manifest,
    name: &str,
    got: &str,
) -> Result<(), ArtifactError> {
    let corrupt = |message: String| ArtifactError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    let Some(want) = manifest.files.get(name) else {
        return Err(corrupt("not listed in the manifest".into()));
    };
    if got != want {
        return Err(corrupt(format!(
            "sha256 {got} does not match the manifest's {want}"
        )));
    }
    Ok(())
}

/// The manifest and verified pages of an artifact directory.
pub fn load_pages(dir: &Path) -> Result<PreviousPages, ArtifactError> {
    let manifest = read_manifest(dir)?;
    check_schema(dir, &manifest)?;
    let pages: Vec<Page> = read_listed_jsonl(dir, &manifest, "pages.jsonl")?;
    if pages.len() as u64 != manifest.counts.pages {
        return Err(ArtifactError::Corrupt {
            path: dir.join("pages.jsonl"),
            message: "page count differs from the manifest".into(),
        });
    }
    Ok(PreviousPages {
        dir: dir.to_path_buf(),
        manifest,
        pages,
    })
}

/// The verified sections of an artifact directory whose manifest is known.
pub fn load_sections(dir: &Path, manifest: &Manifest) -> Result<Vec<Section>, ArtifactError> {
    let sections: Vec<Section> = read_listed_jsonl(dir, manifest, "sections.jsonl")?;
    if sections.len() as u64 != manifest.counts.sections {
        return Err(ArtifactError::Corrupt {
            path: dir.join("sections.jsonl"),
            message: "section count differs from the manifest".into(),
        });
    }
    Ok(sections)
}

/// Refuse a manifest of another schema version.
fn check_schema(dir: &Path, m: &Manifest) -> Result<(), ArtifactError> {
    if m.schema_version != SCHEMA_VERSION {
        return Err(ArtifactError::Corrupt {
            path: dir.to_path_buf(),
            message: format!(
                "schema_version {} is not the supported {}",
                m.schema_version, SCHEMA_VERSION
            ),
        });
    }
    Ok(())
}

/// Load and verify an artifact directory.
pub fn load(dir: &Path) -> Result<Artifact, ArtifactError> {
    let manifest = verify(dir)?;
    let pages: Vec<Page> = read_jsonl(&dir.join("pages.jsonl"))?;
    let sections: Vec<Section> = read_jsonl(&dir.join("sections.jsonl"))?;
    if pages.len() as u64 != manifest.counts.pages
        || sections.len() as u64 != manifest.counts.sections
    {
        return Err(ArtifactError::Corrupt {
            path: dir.to_path_buf(),
            message: "page or section count differs from the manifest".into(),
        });
    }
    Ok(Artifact {
        dir: dir.to_path_buf(),
        manifest,
        pages,
        sections,
    })
}

/// The newest complete artifact directory of each (source, version) under
/// `root`, sorted by source and version. Hidden (temporary) names are skipped.
pub fn newest_artifacts(root: &Path) -> Result<Vec<PathBuf>, ArtifactError> {
    Ok(artifacts_by_version(root)?
        .into_iter()
        .filter_map(|mut v| (!v.is_empty()).then(|| v.remove(0)))
        .collect())
}

/// Every artifact directory under `root`, grouped per (source, version) in
/// source and version order, newest first within a group.
pub fn artifacts_by_version(root: &Path) -> Result<Vec<Vec<PathBuf>>, ArtifactError> {
    let mut out = Vec::new();
    let visible = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .map(|n| !n.starts_with('.'))
            .unwrap_or(false)
    };
    let mut sources: Vec<PathBuf> = list_dirs(root)?
        .into_iter()
        .filter(|p| visible(p))
        .collect();
    sources.sort();
    for s in sources {
        let mut versions: Vec<PathBuf> =
            list_dirs(&s)?.into_iter().filter(|p| visible(p)).collect();
        versions.sort();
        for v in versions {
            let mut snaps: Vec<PathBuf> = list_dirs(&v)?
                .into_iter()
                .filter(|p| visible(p) && p.join("manifest.json").is_file())
                .collect();
            snaps.sort();
            snaps.reverse();
            out.push(snaps);
        }
    }
    Ok(out)
}

/// The previous artifact of one (source, version), if any.
pub fn previous(out: &Path, source: &str, version: &str) -> Option<PathBuf> {
    let v = out.join(source).join(version);
    let mut snaps: Vec<PathBuf> = list_dirs(&v)
        .ok()?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .map(|n| !n.starts_with('.'))
                .unwrap_or(false)
                && p.join("manifest.json").is_file()
        })
        .collect();
    snaps.sort();
    snaps.pop()
}

fn list_dirs(dir: &Path) -> Result<Vec<PathBuf>, ArtifactError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(e.path());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Source "s", product "p", version "v", nothing else.
    fn test_meta() -> ArtifactMeta {
        ArtifactMeta {
            source: "s".into(),
            product: "p".into(),
            version: "v".into(),
            ..Default::default()
        }
    }

    /// A record serde cannot write.
    struct Unwritable;
    impl serde::Serialize for Unwritable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("cannot be written"))
        }
    }

    /// The streamed read of a record file checks the bytes it parsed: every
    /// line comes back when they match; a changed byte is reported as a
    /// sha256 mismatch naming the file, even where it also breaks the JSON.
    #[test]
    fn record_files_are_streamed_and_checked_against_the_manifest() {
        let page = |url: &str| Page {
            url: url.into(),
            title: "T".into(),
            description: String::new(),
            markdown: "body".into(),
            sha256: crate::model::page_hash("T", "", "body"),
            path: String::new(),
            etag: None,
            last_modified: None,
        };
        let sec = |url: &str| crate::model::testing::lead_section(url, "words");
        let meta = test_meta();
        let root = tempfile::tempdir().unwrap();
        let urls = ["https://d.example/a", "https://d.example/b"];
        let pages: Vec<Page> = urls.iter().map(|u| page(u)).collect();
        let sections: Vec<Section> = urls.iter().map(|u| sec(u)).collect();
        let dir = write(root.path(), &meta, &pages, &sections, &[], &[], &no_check).unwrap();

        let served = open_served(&dir, &[], true).unwrap();
        let got: Vec<&str> = served.sections.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(got, urls);
        let got: Vec<&str> = served.pages.iter().map(|p| p.url.as_str()).collect();
        assert_eq!(got, urls);
        assert_eq!(served.bodies.markdown(1, &pages[1].sha256).unwrap(), "body");

        for (name, from, to) in [
            ("sections.jsonl", "words", "wordz"),
            ("sections.jsonl", "\"url\"", "\"ur\u{7f}\""),
            ("pages.jsonl", "d.example/b", "d.example/c"),
        ] {
            let path = dir.join(name);
            let original = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, original.replacen(from, to, 1)).unwrap();
            let err = open_served(&dir, &[], true)
                .err()
                .expect("a changed record file is refused");
            let msg = err.to_string();
            assert!(
                msg.contains(name) && msg.contains("does not match the manifest"),
                "{name} {from}->{to}: {msg}"
            );
            std::fs::write(&path, original).unwrap();
        }
        assert!(open_served(&dir, &[], true).is_ok());
    }

    #[test]
    fn temporaries_of_dead_writers_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let dead = t.path().join(".tmp-20260101T000000Z-abc-4294967290");
        let alive = t
            .path()
            .join(format!(".tmp-20260101T000000Z-abc-{}", std::process::id()));
        let artifact = t.path().join("20260101T000000Z-abc");
        for d in [&dead, &alive, &artifact] {
            std::fs::create_dir(d).unwrap();
        }
        remove_dead_temporaries(t.path());
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists(), "a dead writer's temporary is removed");
        }
        assert!(alive.exists() && artifact.exists());
    }

    #[test]
    fn snapshots_made_within_one_second_sort_in_the_order_they_were_made() {
        let t = tempfile::tempdir().unwrap();
        let meta = test_meta();
        let page = |md: &str| Page {
            url: "https://d.example/a".into(),
            title: "A".into(),
            description: String::new(),
            markdown: md.into(),
            sha256: crate::util::sha256_hex(md.as_bytes()),
            path: "a".into(),
            etag: None,
            last_modified: None,
        };
        // Content hashes chosen in both orders: the hash never decides.
        let mut made = Vec::new();
        for md in ["one", "two", "three", "four"] {
            made.push(write(t.path(), &meta, &[page(md)], &[], &[], &[], &no_check).unwrap());
        }
        let mut sorted = made.clone();
        sorted.sort();
        assert_eq!(
            sorted, made,
            "names sort in the order the snapshots were made"
        );
        assert_eq!(previous(t.path(), "s", "v").as_ref(), made.last());
    }

    #[test]
    fn an_artifact_its_check_refuses_is_never_visible() {
        let t = tempfile::tempdir().unwrap();
        let meta = test_meta();
        let page = crate::model::testing::page_of("https://d.example/a", "one");
        let seen = std::cell::RefCell::new(None);
        let refuse = |dir: &Path| {
            // The check sees the finished artifact: its manifest lists
            // every file, and it verifies.
            *seen.borrow_mut() = Some(verify(dir).map(|m| m.files.len()));
            Err(ArtifactError::Corrupt {
                path: dir.join("links.json"),
                message: "counts do not fit".into(),
            })
        };
        let e = write(
            t.path(),
            &meta,
            std::slice::from_ref(&page),
            &[],
            &[],
            &[],
            &refuse,
        )
        .unwrap_err()
        .to_string();
        assert!(matches!(*seen.borrow(), Some(Ok(n)) if n > 0), "{seen:?}");
        assert!(
            e.contains("refused before it became visible: counts do not fit"),
            "{e}"
        );
        // Named as the artifact would have been, not by its hidden folder.
        assert!(e.contains("/s/v/") && !e.contains(".tmp-"), "{e}");
        let parent = t.path().join("s").join("v");
        let left: Vec<_> = std::fs::read_dir(&parent)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "nothing left behind: {left:?}");
        assert_eq!(previous(t.path(), "s", "v"), None);
        // A check that passes makes it visible.
        let dir = write(t.path(), &meta, &[page], &[], &[], &[], &no_check).unwrap();
        assert_eq!(previous(t.path(), "s", "v").as_ref(), Some(&dir));
    }

    #[test]
    fn a_record_that_does_not_serialize_is_an_error_not_a_shorter_file() {
        assert_eq!(to_jsonl(&[1, 2]).unwrap(), b"1\n2\n");
        let e = to_jsonl(&[Unwritable]).unwrap_err();
        assert!(e.to_string().contains("cannot be written"), "{e}");
    }
}
