//! Publishing artifacts: an archive per snapshot, checksums, a `latest`
//! pointer per (source, version) and a catalog of everything published, laid
//! out so a server or a mirror can fetch and verify them.
//!
//! ```text
//! DIR/
//!   index.json                          catalog of every published snapshot
//!   <source>/<version>/
//!     <snapshot-id>.tar.zst             the artifact directory, tar + zstd
//!     <snapshot-id>.manifest.json       copy of its manifest.json
//!     <snapshot-id>.SHA256SUMS          sha256sum lines for the files above
//!     <snapshot-id>.diff.md|.diff.json  (from `rebuild`) what changed since the previous one
//!     latest                            the snapshot id being served
//! ```
//!
//! Crash safety: every file is written under a hidden temporary name, synced,
//! and renamed into place, and the directory is synced. The order is archive,
//! manifest copy, attachments, `SHA256SUMS`, catalog, and only then `latest`,
//! so whatever instant a publish dies at, `latest` names a complete snapshot
//! (the previous one, or the new one). Leftover temporaries are hidden names,
//! ignored by readers and removed by the next publish. Publishers of one
//! directory are serialized by a lock on `DIR/.lock`.

mod archive;
pub mod remote;
mod verify;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::artifact::{self, Artifact, ArtifactError};
use crate::model::{Counts, Manifest};

pub use archive::{parse_sums, sha256_file, sums_text, TempDir};
pub use verify::{verify_path, VerifyReport};

/// File name of the catalog at the top of a publish directory.
pub const CATALOG: &str = "index.json";
/// File name of the pointer to the served snapshot of a (source, version).
pub const LATEST: &str = "latest";
/// Version of the catalog layout.
pub const CATALOG_VERSION: u32 = 1;

/// Test hook: `DOCSNAP_PUBLISH_CRASH_AT=<step>` ends the process at once
/// with status [`CRASH_EXIT`] (no cleanup, like `kill -9`) when a publish
/// reaches that step. Steps, in order:
/// `archive-temp`, `archive`, `manifest`, `attachments`, `sums`, `catalog`,
/// `latest-temp`, `latest`, `prune-catalog`, `prune-files`.
pub const CRASH_ENV: &str = "DOCSNAP_PUBLISH_CRASH_AT";
/// Exit status of a process stopped by [`CRASH_ENV`].
pub const CRASH_EXIT: i32 = 99;

/// Publish, verify or read failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Content that fails a check: a checksum, a format, a missing file.
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The request itself cannot be carried out (bad argument, nothing there).
    #[error("{0}")]
    Invalid(String),
}

impl PublishError {
    /// Whether the error says some content is damaged (rather than that the
    /// job could not be done): decides exit status 1 versus 2.
    pub fn is_corruption(&self) -> bool {
        match self {
            PublishError::Corrupt { .. } => true,
            PublishError::Artifact(ArtifactError::Corrupt { .. }) => true,
            PublishError::Artifact(ArtifactError::Index(_)) => true,
            PublishError::Artifact(ArtifactError::Io { source, .. })
            | PublishError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            PublishError::Invalid(_) => false,
        }
    }
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PublishError + '_ {
    move |source| PublishError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn crash_point(step: &str) {
    if std::env::var(CRASH_ENV).is_ok_and(|v| v == step) {
        eprintln!("docsnap: {CRASH_ENV}={step}: stopping here");
        std::process::exit(CRASH_EXIT);
    }
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), PublishError> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io_err(dir))
}

/// Write `bytes` to `path` atomically: hidden temporary, fsync, rename, fsync
/// of the directory. `step` names the crash point between sync and rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PublishError> {
    write_atomic_step(path, bytes, None)
}

fn write_atomic_step(
    path: &Path,
    bytes: &[u8],
    temp_step: Option<&str>,
) -> Result<(), PublishError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = temp_name(path);
    let mut f = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(bytes).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    drop(f);
    if let Some(s) = temp_step {
        crash_point(s);
    }
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(parent)
}

/// `.NAME.tmp-PID` beside `path`.
fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// One published snapshot in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub source: String,
    pub product: String,
    pub version: String,
    pub snapshot_id: String,
    /// When the artifact was built (from its manifest).
    pub created_at: String,
    /// When it was published.
    pub published_at: String,
    pub content_sha256: String,
    /// Archive path relative to the publish directory (`leapview/3.2/<id>.tar.zst`).
    pub archive: String,
    /// sha256 of the archive file.
    pub sha256: String,
    pub bytes: u64,
    pub counts: Counts,
}

/// `index.json`: every published snapshot, sorted by source, version and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Catalog {
    pub schema_version: u32,
    pub snapshots: Vec<CatalogEntry>,
}

impl Catalog {
    /// Entries of one (source, version), oldest first.
    pub fn of<'a>(
        &'a self,
        source: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a CatalogEntry> + 'a {
        self.snapshots
            .iter()
            .filter(move |e| e.source == source && e.version == version)
    }

    pub(crate) fn sort(&mut self) {
        self.snapshots.sort_by(|a, b| {
            (&a.source, &a.version, &a.snapshot_id).cmp(&(&b.source, &b.version, &b.snapshot_id))
        });
    }
}

/// Read `DIR/index.json` (an empty catalog when there is none yet).
pub fn read_catalog(dir: &Path) -> Result<Catalog, PublishError> {
    let p = dir.join(CATALOG);
    match std::fs::read(&p) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| PublishError::Corrupt {
            path: p,
            message: format!("not a valid catalog: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Catalog {
            schema_version: CATALOG_VERSION,
            snapshots: Vec::new(),
        }),
        Err(e) => Err(PublishError::Io { path: p, source: e }),
    }
}

fn write_catalog(dir: &Path, cat: &Catalog) -> Result<(), PublishError> {
    write_atomic(&dir.join(CATALOG), &catalog_bytes(cat)?)
}

/// The catalog as written to `index.json` (pretty JSON, final newline).
pub(crate) fn catalog_bytes(cat: &Catalog) -> Result<Vec<u8>, PublishError> {
    let mut bytes =
        serde_json::to_vec_pretty(cat).map_err(|e| PublishError::Invalid(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A small text file of a publish directory; bytes that are not UTF-8 are
/// corruption (a flipped bit), not an I/O trouble.
fn text_of<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str, PublishError> {
    std::str::from_utf8(bytes).map_err(|_| PublishError::Corrupt {
        path: path.to_path_buf(),
        message: "not text (invalid UTF-8)".into(),
    })
}

/// The snapshot id `DIR/<source>/<version>/latest` names, if any.
pub fn read_latest(version_dir: &Path) -> Result<Option<String>, PublishError> {
    let p = version_dir.join(LATEST);
    match std::fs::read(&p) {
        Ok(bytes) => {
            let id = text_of(&p, &bytes)?.trim().to_string();
            if !is_safe_name(&id) {
                return Err(PublishError::Corrupt {
                    path: p,
                    message: format!("`{id}` is not a snapshot id"),
                });
            }
            Ok(Some(id))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PublishError::Io { path: p, source: e }),
    }
}

/// The snapshot id each (source, version) of a publish directory serves, so a
/// server can tell whether a newer snapshot than the one it loaded exists.
pub fn latest_ids(dir: &Path) -> Result<BTreeMap<(String, String), String>, PublishError> {
    let mut out = BTreeMap::new();
    for (source, version, vdir) in version_dirs(dir)? {
        if let Some(id) = read_latest(&vdir)? {
            out.insert((source, version), id);
        }
    }
    Ok(out)
}

/// Visible `<source>/<version>/` folders of a publish directory.
fn version_dirs(dir: &Path) -> Result<Vec<(String, String, PathBuf)>, PublishError> {
    let mut out = Vec::new();
    for s in visible_dirs(dir)? {
        for v in visible_dirs(&s)? {
            let name = |p: &Path| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            out.push((name(&s), name(&v), v));
        }
    }
    Ok(out)
}

fn visible_dirs(dir: &Path) -> Result<Vec<PathBuf>, PublishError> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => {
            return Err(PublishError::Io {
                path: dir.to_path_buf(),
                source: e,
            })
        }
    };
    for e in rd {
        let e = e.map_err(io_err(dir))?;
        let visible = !e.file_name().to_string_lossy().starts_with('.');
        if visible && e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// A path component we are willing to create: no separators, not hidden, not `..`.
fn is_safe_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\', '\0']) && s.len() <= 200
}

/// What `publish` should do beyond the archive.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions {
    /// Keep only the N newest snapshots of the (source, version) (never
    /// dropping the one `latest` names).
    pub keep: Option<usize>,
    /// Extra files stored as `<snapshot-id>.<suffix>` and listed in the sums
    /// (e.g. `diff.md`), written before `latest` moves.
    pub attachments: Vec<(String, Vec<u8>)>,
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    /// A new archive, now `latest`.
    Published(Box<CatalogEntry>),
    /// The same content is already what `latest` names: nothing added.
    AlreadyLatest(String),
    /// The same content was published before as another snapshot; `latest`
    /// now names that one again and no archive was added.
    Repointed(String),
}

/// The result of [`publish`].
#[derive(Debug, Clone)]
pub struct PublishReport {
    pub source: String,
    pub version: String,
    pub outcome: PublishOutcome,
    /// Snapshot ids removed by `keep`.
    pub pruned: Vec<String>,
    /// A damaged published snapshot of the same content, replaced by this one.
    pub replaced: Option<String>,
}

impl PublishReport {
    /// One line for a terminal.
    pub fn describe(&self) -> String {
        let what = match &self.outcome {
            PublishOutcome::Published(e) => {
                format!("published {} ({} bytes) as latest", e.archive, e.bytes)
            }
            PublishOutcome::AlreadyLatest(id) => {
                format!("same content as latest {id}: nothing published")
            }
            PublishOutcome::Repointed(id) => {
                format!("same content as published {id}: no new archive, latest points at it again")
            }
        };
        let mut s = format!("{} {}: {what}", self.source, self.version);
        if let Some(bad) = &self.replaced {
            s.push_str(&format!("; replaced damaged {bad}"));
        }
        if !self.pruned.is_empty() {
            s.push_str(&format!("; pruned {}", self.pruned.join(", ")));
        }
        s
    }
}

fn now_iso() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
        ))
        .unwrap_or_default()
}

fn epoch_of(iso: &str) -> u64 {
    time::PrimitiveDateTime::parse(
        iso,
        &time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z"),
    )
    .map(|t| t.assume_utc().unix_timestamp().max(0) as u64)
    .unwrap_or(0)
}

/// Holds `DIR/.lock` for the life of a publish.
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    fn acquire(dir: &Path) -> Result<DirLock, PublishError> {
        let p = dir.join(".lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(io_err(&p))?;
        f.lock().map_err(io_err(&p))?;
        Ok(DirLock { _file: f })
    }
}

/// Remove hidden temporaries a killed publish left in `dir`.
fn remove_temporaries(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.contains(".tmp-") {
            let p = e.path();
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(&p);
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// Publish the artifact directory `artifact_dir` under `to`.
pub fn publish(
    artifact_dir: &Path,
    to: &Path,
    opts: &PublishOptions,
) -> Result<PublishReport, PublishError> {
    // Opened as a server opens it: every file against its sum (sums that
    // match prove the files are the writer's), then whether a server can
    // use them; what every server would skip is not published.
    let manifest = crate::search::check_servable(artifact_dir)?;
    for (what, v) in [
        ("source", &manifest.source),
        ("version", &manifest.version),
        ("snapshot id", &manifest.snapshot_id),
    ] {
        if !is_safe_name(v) {
            return Err(PublishError::Invalid(format!(
                "{}: {what} `{v}` cannot name a folder",
                artifact_dir.display()
            )));
        }
    }
    for (suffix, _) in &opts.attachments {
        if !is_safe_name(suffix)
            || matches!(suffix.as_str(), "tar.zst" | "SHA256SUMS" | "manifest.json")
        {
            return Err(PublishError::Invalid(format!(
                "attachment suffix `{suffix}` is not allowed"
            )));
        }
    }
    std::fs::create_dir_all(to).map_err(io_err(to))?;
    let _lock = DirLock::acquire(to)?;
    let vdir = to.join(&manifest.source).join(&manifest.version);
    std::fs::create_dir_all(&vdir).map_err(io_err(&vdir))?;
    remove_temporaries(to);
    remove_temporaries(&vdir);

    let mut cat = read_catalog(to)?;
    let latest = read_latest(&vdir)?;
    let existing = cat
        .of(&manifest.source, &manifest.version)
        .filter(|e| e.content_sha256 == manifest.content_sha256)
        .max_by(|a, b| a.snapshot_id.cmp(&b.snapshot_id))
        .cloned();
    // A published copy of the same content counts only if it is intact;
    // a damaged one is replaced by this publish (entry and files).
    let mut replaced: Option<String> = None;
    let existing = existing.and_then(|e| {
        let archive = vdir.join(format!("{}.tar.zst", e.snapshot_id));
        let intact = archive::sha256_file(&archive).is_ok_and(|h| h == e.sha256)
            && check_sums(&archive).is_ok();
        if intact {
            Some(e.snapshot_id)
        } else {
            replaced = Some(e.snapshot_id);
            None
        }
    });
    if let Some(bad) = &replaced {
        cat.snapshots.retain(|e| {
            !(e.source == manifest.source && e.version == manifest.version && &e.snapshot_id == bad)
        });
    }
    let outcome = match existing {
        Some(id) if latest.as_deref() == Some(id.as_str()) => PublishOutcome::AlreadyLatest(id),
        Some(id) => {
            point_latest(&vdir, &id)?;
            PublishOutcome::Repointed(id)
        }
        _ => PublishOutcome::Published(Box::new(publish_new(
            artifact_dir,
            &manifest,
            to,
            &vdir,
            &mut cat,
            opts,
        )?)),
    };
    if let Some(bad) = &replaced {
        // After `latest` moved; not when the damaged copy had this very id
        // (its files were just rewritten).
        if *bad != manifest.snapshot_id {
            remove_snapshot_files(&vdir, bad)?;
        }
    }
    let pruned = match opts.keep {
        Some(n) => prune(to, &vdir, &manifest.source, &manifest.version, n, &mut cat)?,
        None => Vec::new(),
    };
    Ok(PublishReport {
        source: manifest.source.clone(),
        version: manifest.version.clone(),
        outcome,
        pruned,
        replaced,
    })
}

fn publish_new(
    artifact_dir: &Path,
    manifest: &Manifest,
    to: &Path,
    vdir: &Path,
    cat: &mut Catalog,
    opts: &PublishOptions,
) -> Result<CatalogEntry, PublishError> {
    let id = &manifest.snapshot_id;
    let archive_name = format!("{id}.tar.zst");
    let archive = vdir.join(&archive_name);

    // 1. The archive, aside, then renamed into place.
    let tmp = temp_name(&archive);
    let f = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
    let packed = archive::pack(artifact_dir, id, epoch_of(&manifest.created_at), f, &tmp);
    let (sha, bytes) = match packed {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    crash_point("archive-temp");
    std::fs::rename(&tmp, &archive).map_err(io_err(&archive))?;
    sync_dir(vdir)?;
    crash_point("archive");

    // 2. The manifest copy and the attachments, then the sums over all of them.
    let manifest_name = format!("{id}.manifest.json");
    let mbytes = std::fs::read(artifact_dir.join("manifest.json")).map_err(io_err(artifact_dir))?;
    write_atomic(&vdir.join(&manifest_name), &mbytes)?;
    crash_point("manifest");
    let mut sums = vec![
        (archive_name.clone(), sha.clone()),
        (manifest_name, crate::util::sha256_hex(&mbytes)),
    ];
    for (suffix, data) in &opts.attachments {
        let name = format!("{id}.{suffix}");
        write_atomic(&vdir.join(&name), data)?;
        sums.push((name, crate::util::sha256_hex(data)));
    }
    crash_point("attachments");
    write_atomic(
        &vdir.join(format!("{id}.SHA256SUMS")),
        archive::sums_text(&sums).as_bytes(),
    )?;
    crash_point("sums");

    // 3. The catalog, then the pointer.
    let entry = CatalogEntry {
        source: manifest.source.clone(),
        product: manifest.product.clone(),
        version: manifest.version.clone(),
        snapshot_id: id.clone(),
        created_at: manifest.created_at.clone(),
        published_at: now_iso(),
        content_sha256: manifest.content_sha256.clone(),
        archive: format!("{}/{}/{archive_name}", manifest.source, manifest.version),
        sha256: sha,
        bytes,
        counts: manifest.counts.clone(),
    };
    cat.schema_version = CATALOG_VERSION;
    cat.snapshots.retain(|e| {
        !(e.source == entry.source
            && e.version == entry.version
            && e.snapshot_id == entry.snapshot_id)
    });
    cat.snapshots.push(entry.clone());
    cat.sort();
    write_catalog(to, cat)?;
    crash_point("catalog");
    point_latest(vdir, id)?;
    Ok(entry)
}

/// Make `id` the version's latest snapshot (one atomic step).
fn point_latest(vdir: &Path, id: &str) -> Result<(), PublishError> {
    write_atomic_step(
        &vdir.join(LATEST),
        format!("{id}\n").as_bytes(),
        Some("latest-temp"),
    )?;
    crash_point("latest");
    Ok(())
}

/// Drop all but the `keep` newest snapshots of a (source, version), never the
/// latest: catalog first (atomically), then the files.
fn prune(
    to: &Path,
    vdir: &Path,
    source: &str,
    version: &str,
    keep: usize,
    cat: &mut Catalog,
) -> Result<Vec<String>, PublishError> {
    let latest = read_latest(vdir)?;
    let mut ids: Vec<String> = cat
        .of(source, version)
        .map(|e| e.snapshot_id.clone())
        .collect();
    ids.sort();
    ids.reverse();
    let doomed: Vec<String> = ids
        .into_iter()
        .skip(keep)
        .filter(|id| latest.as_deref() != Some(id.as_str()))
        .collect();
    if doomed.is_empty() {
        return Ok(doomed);
    }
    cat.snapshots.retain(|e| {
        !(e.source == source && e.version == version && doomed.contains(&e.snapshot_id))
    });
    write_catalog(to, cat)?;
    crash_point("prune-catalog");
    for id in &doomed {
        remove_snapshot_files(vdir, id)?;
        crash_point("prune-files");
    }
    sync_dir(vdir)?;
    Ok(doomed)
}

/// Every `<id>.*` file of a version folder.
fn remove_snapshot_files(vdir: &Path, id: &str) -> Result<(), PublishError> {
    let prefix = format!("{id}.");
    for e in std::fs::read_dir(vdir).map_err(io_err(vdir))? {
        let e = e.map_err(io_err(vdir))?;
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let p = e.path();
            std::fs::remove_file(&p).map_err(io_err(&p))?;
        }
    }
    Ok(())
}

/// Check an archive against the `SHA256SUMS` beside it (every file it lists).
pub fn check_sums(archive: &Path) -> Result<(), PublishError> {
    let (vdir, id) = split_archive_path(archive)?;
    let sums_path = vdir.join(format!("{id}.SHA256SUMS"));
    let bytes = match std::fs::read(&sums_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PublishError::Corrupt {
                path: sums_path,
                message: format!("missing beside {}", archive.display()),
            })
        }
        Err(e) => return Err(io_err(&sums_path)(e)),
    };
    let sums =
        archive::parse_sums(text_of(&sums_path, &bytes)?).ok_or_else(|| PublishError::Corrupt {
            path: sums_path.clone(),
            message: "not in sha256sum format".into(),
        })?;
    let archive_name = format!("{id}.tar.zst");
    if !sums.iter().any(|(n, _)| *n == archive_name) {
        return Err(PublishError::Corrupt {
            path: sums_path,
            message: format!("does not list {archive_name}"),
        });
    }
    for (name, want) in &sums {
        if !is_safe_name(name) {
            return Err(PublishError::Corrupt {
                path: sums_path.clone(),
                message: format!("lists `{name}`, outside its folder"),
            });
        }
        let p = vdir.join(name);
        let got = match archive::sha256_file(&p) {
            Ok(h) => h,
            Err(PublishError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(PublishError::Corrupt {
                    path: p,
                    message: format!("listed in {} but missing", sums_path.display()),
                })
            }
            Err(e) => return Err(e),
        };
        if &got != want {
            return Err(PublishError::Corrupt {
                path: p,
                message: format!(
                    "sha256 {got} does not match {}'s {want}",
                    sums_path.display()
                ),
            });
        }
    }
    Ok(())
}

/// (folder, snapshot id) of `<folder>/<id>.tar.zst`.
fn split_archive_path(archive: &Path) -> Result<(PathBuf, String), PublishError> {
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = name
        .strip_suffix(".tar.zst")
        .filter(|id| is_safe_name(id))
        .ok_or_else(|| {
            PublishError::Invalid(format!(
                "{}: not a `<snapshot-id>.tar.zst` archive",
                archive.display()
            ))
        })?;
    let vdir = archive.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((vdir, id.to_string()))
}

/// An artifact read from a directory or unpacked from an archive; the
/// unpacked copy lives as long as this value.
pub struct Opened {
    pub artifact: Artifact,
    _tmp: Option<TempDir>,
}

/// Load a snapshot for reading (e.g. for `diff`): an artifact directory, a
/// `.tar.zst` archive (checked against its `SHA256SUMS` when one is beside
/// it), a folder of artifacts of one version (the newest), or a published
/// version folder (the one `latest` names). Always verified.
pub fn open_snapshot(path: &Path) -> Result<Opened, PublishError> {
    if path.is_file() {
        return open_archive(path, false);
    }
    if !path.is_dir() {
        return Err(PublishError::Invalid(format!(
            "{}: no such artifact or archive",
            path.display()
        )));
    }
    if path.join("manifest.json").is_file() {
        return Ok(Opened {
            artifact: artifact::load(path)?,
            _tmp: None,
        });
    }
    if let Some(id) = read_latest(path)? {
        return open_archive(&path.join(format!("{id}.tar.zst")), true);
    }
    let newest = visible_dirs(path)?
        .into_iter()
        .filter(|d| d.join("manifest.json").is_file())
        .max();
    match newest {
        Some(d) => Ok(Opened {
            artifact: artifact::load(&d)?,
            _tmp: None,
        }),
        None => Err(PublishError::Invalid(format!(
            "{}: not an artifact directory, archive or version folder",
            path.display()
        ))),
    }
}

fn open_archive(path: &Path, require_sums: bool) -> Result<Opened, PublishError> {
    let (vdir, id) = split_archive_path(path)?;
    if require_sums || vdir.join(format!("{id}.SHA256SUMS")).is_file() {
        check_sums(path)?;
    }
    let tmp = TempDir::new("open")?;
    let dir = archive::unpack(path, tmp.path(), false)?;
    let artifact = artifact::load(&dir)?;
    Ok(Opened {
        artifact,
        _tmp: Some(tmp),
    })
}

/// Unpack and verify the archive of `<vdir>/<id>.tar.zst` into a temporary
/// directory; the manifest inside must name that snapshot.
fn unpack_verified(
    archive: &Path,
    into: &Path,
    durable: bool,
) -> Result<(PathBuf, Manifest), PublishError> {
    let (_, id) = split_archive_path(archive)?;
    let dir = archive::unpack(archive, into, durable)?;
    if dir
        .file_name()
        .map(|n| n.to_string_lossy() != id.as_str())
        .unwrap_or(true)
    {
        return Err(PublishError::Corrupt {
            path: archive.to_path_buf(),
            message: format!("holds `{}`, not `{id}/`", dir.display()),
        });
    }
    let m = artifact::verify(&dir)?;
    if m.snapshot_id != id {
        return Err(PublishError::Corrupt {
            path: archive.to_path_buf(),
            message: format!("its manifest names snapshot {}, not {id}", m.snapshot_id),
        });
    }
    Ok((dir, m))
}

/// What [`materialize_latest`] produced.
#[derive(Debug, Clone, Default)]
pub struct Materialized {
    /// Verified artifact directories, one per (source, version), sorted.
    pub artifacts: Vec<PathBuf>,
    /// (source, version) pairs skipped, with the reason (never served).
    pub skipped: Vec<String>,
}

/// Unpack the latest published snapshot of every (source, version) of
/// `publish_dir` into `cache_dir/<source>/<version>/<snapshot-id>/`, verified,
/// so the server can load straight from a publish directory (with
/// `LoadedSource::open` on each, or `Library::load_dir(cache_dir)`). A
/// snapshot already unpacked and intact is reused; other snapshots of the same
/// (source, version) are removed from the cache so the newest there is the
/// latest. A (source, version) whose archive fails a check is skipped.
pub fn materialize_latest(
    publish_dir: &Path,
    cache_dir: &Path,
) -> Result<Materialized, PublishError> {
    if !publish_dir.is_dir() {
        return Err(PublishError::Invalid(format!(
            "{}: no publish directory",
            publish_dir.display()
        )));
    }
    let mut out = Materialized::default();
    for ((source, version), id) in latest_ids(publish_dir)? {
        let archive = publish_dir
            .join(&source)
            .join(&version)
            .join(format!("{id}.tar.zst"));
        let dest_parent = cache_dir.join(&source).join(&version);
        let dest = dest_parent.join(&id);
        let r = (|| -> Result<(), PublishError> {
            if dest.join("manifest.json").is_file() && artifact::verify(&dest).is_ok() {
                return Ok(());
            }
            check_sums(&archive)?;
            let tmp = TempDir::new_in(&dest_parent, &id)?;
            let (dir, _) = unpack_verified(&archive, tmp.path(), true)?;
            if dest.exists() {
                artifact::remove_artifact(&dest).map_err(io_err(&dest))?;
            }
            std::fs::rename(&dir, &dest).map_err(io_err(&dest))?;
            sync_dir(&dest_parent)
        })();
        match r {
            Ok(()) => {
                for other in visible_dirs(&dest_parent)? {
                    if other != dest {
                        let _ = artifact::remove_artifact(&other);
                    }
                }
                out.artifacts.push(dest);
            }
            Err(e) => out.skipped.push(format!("{source} {version} {id}: {e}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names() {
        assert!(is_safe_name("20261201T073938Z-3c15769d7621"));
        assert!(is_safe_name("3.1"));
        for bad in ["", ".", "..", ".hidden", "a/b", "a\\b"] {
            assert!(!is_safe_name(bad), "{bad}");
        }
    }

    #[test]
    fn epoch_parses_manifest_times() {
        assert_eq!(epoch_of("1970-01-01T00:01:00Z"), 60);
        assert_eq!(epoch_of("garbage"), 0);
    }
}
