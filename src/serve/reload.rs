//! Picking up newer artifacts while serving.
//!
//! A background task looks at the artifacts directory every few seconds. When
//! the newest snapshot of any (source, version) differs from the loaded one,
//! it loads and verifies a whole new [`Library`] off the request path and then
//! swaps the handle's `Arc` in one step: requests in flight finish on the
//! library they started with, new ones see the new one, and an artifact that
//! fails verification is never swapped in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::publish::PublishError;
use crate::search::{Library, LibraryHandle};

/// What the reloader watches and how it builds a library.
#[derive(Debug, Clone)]
pub struct ReloadOptions {
    /// Artifacts directory the library is loaded from (the unpack cache when
    /// serving a publish directory).
    pub dir: PathBuf,
    /// A publish directory whose `latest` snapshots are unpacked into `dir`.
    pub publish: Option<PathBuf>,
    pub every: Duration,
    /// Swap in newer snapshots; when false, only set the library's notice.
    pub swap: bool,
    /// Carried over to every new library (`--leapview-version`).
    pub leapview_version: Option<String>,
    /// Where reloads, failed reloads and refused artifacts are counted.
    pub metrics: Option<Arc<super::Metrics>>,
    /// The bucket `publish` mirrors: pulled (conditional GETs of the catalog
    /// and each `latest`) before every look.
    pub remote: Option<Arc<crate::publish::remote::RemoteStore>>,
}

/// Whether `dir` is a publish directory (it has a catalog) rather than a
/// directory of artifacts.
pub fn is_publish_dir(dir: &Path) -> bool {
    dir.join("index.json").is_file()
}

/// Unpack the latest published snapshots of `publish` into `cache` (verified).
pub fn materialize(publish: &Path, cache: &Path) -> Result<Vec<String>, PublishError> {
    Ok(crate::publish::materialize_latest(publish, cache)?.skipped)
}

/// Why a reload kept the library it had.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("pulling {url}: {source}")]
    Pull {
        url: String,
        #[source]
        source: PublishError,
    },
    #[error(transparent)]
    Materialize(#[from] PublishError),
    #[error(transparent)]
    Load(#[from] crate::artifact::ArtifactError),
    #[error("no complete artifact; keeping the loaded library")]
    Empty,
}

/// Snapshot ids of a library, sorted: what "the loaded set" means.
pub fn loaded_ids(lib: &Library) -> Vec<String> {
    let mut v: Vec<String> = lib
        .sources
        .iter()
        .map(|s| {
            format!(
                "{}/{}/{}",
                s.manifest.source, s.manifest.version, s.manifest.snapshot_id
            )
        })
        .collect();
    v.sort();
    v
}

/// Snapshot ids that would be loaded now.
pub fn available(opts: &ReloadOptions) -> Vec<String> {
    match &opts.publish {
        Some(p) => {
            let mut v: Vec<String> = crate::publish::latest_ids(p)
                .unwrap_or_default()
                .into_iter()
                .map(|((s, ver), id)| format!("{s}/{ver}/{id}"))
                .collect();
            v.sort();
            v
        }
        None => available_ids(&opts.dir),
    }
}

/// What the directory holds, down to the manifests' modification times, so
/// a snapshot repaired in place counts as a change.
fn fingerprint(opts: &ReloadOptions) -> Vec<String> {
    let dirs = match &opts.publish {
        Some(p) => vec![p.join("index.json")],
        None => crate::artifact::newest_artifacts(&opts.dir)
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.join("manifest.json"))
            .collect(),
    };
    dirs.iter()
        .map(|f| {
            let t = std::fs::metadata(f)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            format!("{}@{t}", f.display())
        })
        .chain(available(opts))
        .collect()
}

/// Snapshot ids the directory would load now.
pub fn available_ids(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = crate::artifact::newest_artifacts(dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let snap = p.file_name()?.to_str()?;
            let version = p.parent()?.file_name()?.to_str()?;
            let source = p.parent()?.parent()?.file_name()?.to_str()?;
            Some(format!("{source}/{version}/{snap}"))
        })
        .collect();
    v.sort();
    v
}

/// Load a new library when the directory's newest snapshots changed; `Ok(true)`
/// when a new library was swapped in. `last_seen` is what the previous call
/// saw: an unchanged directory (say, a newest snapshot that failed
/// verification) is not loaded and verified again and again.
pub fn reload_once(
    handle: &LibraryHandle,
    opts: &ReloadOptions,
    last_seen: &mut Vec<String>,
) -> Result<bool, ReloadError> {
    let current = super::current(handle);
    if let (Some(r), Some(p)) = (&opts.remote, &opts.publish) {
        r.pull(p, &crate::publish::remote::Scope::Latest)
            .map_err(|source| ReloadError::Pull {
                url: r.url().to_string(),
                source,
            })?;
    }
    let now = available(opts);
    let print = fingerprint(opts);
    if now == loaded_ids(&current) || &print == last_seen {
        return Ok(false);
    }
    *last_seen = print;
    if !opts.swap {
        let newer: Vec<&String> = now
            .iter()
            .filter(|id| !loaded_ids(&current).contains(id))
            .collect();
        if let Ok(mut n) = current.notice.lock() {
            *n = Some(format!(
                "a newer index has been published ({}); the server still answers from the one it loaded — restart it to serve the new one",
                newer.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        return Ok(false);
    }
    let rejected = |n: usize| {
        if let Some(m) = &opts.metrics {
            m.record_rejected(n);
        }
    };
    if let Some(p) = &opts.publish {
        let skipped = materialize(p, &opts.dir)?;
        rejected(skipped.len());
        for s in skipped {
            tracing::warn!("reload: skipped {s}");
        }
    }
    let (mut lib, warnings) = Library::load_dir_with(&opts.dir, current.model.clone())?;
    rejected(lib.rejected);
    for w in warnings {
        tracing::warn!("reload: {w}");
    }
    if lib.sources.is_empty() {
        return Err(ReloadError::Empty);
    }
    lib.leapview_version = opts.leapview_version.clone();
    lib.rank = current.rank.clone();
    let ids = loaded_ids(&lib);
    if ids == loaded_ids(&current) {
        return Ok(false);
    }
    match handle.write() {
        Ok(mut g) => *g = Arc::new(lib),
        Err(p) => *p.into_inner() = Arc::new(lib),
    }
    tracing::info!("reloaded: {}", ids.join(", "));
    Ok(true)
}

/// Run [`reload_once`] every `opts.every` until the runtime stops.
pub fn spawn(handle: LibraryHandle, opts: ReloadOptions) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(opts.every);
        tick.tick().await;
        let last_seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        loop {
            tick.tick().await;
            let h = handle.clone();
            let o = opts.clone();
            let seen = last_seen.clone();
            let r = tokio::task::spawn_blocking(move || {
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                reload_once(&h, &o, &mut seen)
            })
            .await;
            let failed = !matches!(r, Ok(Ok(_)));
            match r {
                Ok(Err(e)) => tracing::warn!("reload skipped: {e}"),
                Err(e) => tracing::warn!("reload failed: {e}"),
                Ok(Ok(true)) => {
                    if let Some(m) = &opts.metrics {
                        m.record_reload();
                    }
                }
                Ok(Ok(false)) => {}
            }
            if failed {
                if let Some(m) = &opts.metrics {
                    m.record_reload_failure();
                }
            }
        }
    })
}
