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

use crate::search::{Library, LibraryHandle};

/// What the reloader watches and how it builds a library.
#[derive(Debug, Clone)]
pub struct ReloadOptions {
    pub dir: PathBuf,
    pub every: Duration,
    /// Carried over to every new library (`--leapview-version`).
    pub leapview_version: Option<String>,
}

/// Snapshot ids of a library, sorted: what "the loaded set" means.
pub fn loaded_ids(lib: &Library) -> Vec<String> {
    let mut v: Vec<String> = lib
        .sources
        .iter()
        .map(|s| format!("{}/{}/{}", s.manifest.source, s.manifest.version, s.manifest.snapshot_id))
        .collect();
    v.sort();
    v
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
/// when a new library was swapped in.
pub fn reload_once(handle: &LibraryHandle, opts: &ReloadOptions) -> Result<bool, String> {
    let current = super::current(handle);
    if available_ids(&opts.dir) == loaded_ids(&current) {
        return Ok(false);
    }
    let (mut lib, warnings) = Library::load_dir(&opts.dir).map_err(|e| e.to_string())?;
    for w in warnings {
        tracing::warn!("reload: {w}");
    }
    if lib.sources.is_empty() {
        return Err("no complete artifact; keeping the loaded library".into());
    }
    lib.leapview_version = opts.leapview_version.clone();
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
        loop {
            tick.tick().await;
            let h = handle.clone();
            let o = opts.clone();
            match tokio::task::spawn_blocking(move || reload_once(&h, &o)).await {
                Ok(Err(e)) => tracing::warn!("reload skipped: {e}"),
                Err(e) => tracing::warn!("reload failed: {e}"),
                Ok(Ok(_)) => {}
            }
        }
    })
}
