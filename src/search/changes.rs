//! `docs_changes`: what changed in a product's docs since an earlier
//! snapshot, answered from the artifacts directory the library was loaded
//! from (older snapshots stay there until pruned).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{Library, ToolError};
use crate::changes::{self, Changes, ChangesArgs, ChangesError};
use crate::diff::Diff;

/// Diffs kept per library: each costs two artifact loads to make, and an
/// agent asking "since X" tends to ask again with another path or limit.
const CACHED_DIFFS: usize = 4;

/// Bytes of JSON an answer may take (agents' tool results are capped near
/// 25,000 tokens; this leaves room for the text copy of the result).
pub const ANSWER_BUDGET: usize = 40_000;

/// One cached diff, keyed by (from, to) artifact directory.
type DiffEntry = ((PathBuf, PathBuf), Arc<Diff>);

/// The diffs `docs_changes` computed, newest last; dropped with the library
/// (a reload starts afresh, since the served snapshot changed).
#[derive(Default)]
pub struct DiffCache(Mutex<Vec<DiffEntry>>);

impl From<ChangesError> for ToolError {
    fn from(e: ChangesError) -> Self {
        match e {
            ChangesError::Invalid(m) => ToolError::Invalid(m),
            ChangesError::Artifact(e) => ToolError::Internal(e.to_string()),
        }
    }
}

impl Library {
    /// Answer `docs_changes` against the snapshot of `args.product` this
    /// library serves (the pinned LeapView version, else the newest loaded).
    pub fn docs_changes(&self, args: &ChangesArgs) -> Result<Changes, ToolError> {
        let product = args.product.trim();
        let Some(root) = &self.root else {
            return Err(ToolError::invalid(
                "this server was not loaded from an artifacts directory, so it holds no earlier snapshots",
            ));
        };
        let served = self.served_source(product).map(|i| &self.sources[i]);
        let Some(served) = served else {
            let mut loaded: Vec<&str> = self
                .sources
                .iter()
                .map(|s| s.manifest.product.as_str())
                .collect();
            loaded.sort();
            loaded.dedup();
            return Err(ToolError::invalid(format!(
                "product: `{product}` is not served here (products: {})",
                loaded.join(", ")
            )));
        };
        let cands = changes::candidates(root, product).map_err(ToolError::from)?;
        let to = cands
            .iter()
            .find(|c| {
                c.manifest.snapshot_id == served.manifest.snapshot_id
                    && c.manifest.version == served.manifest.version
            })
            .ok_or_else(|| {
                ToolError::Internal(format!(
                    "the served snapshot {} is no longer under {}",
                    served.manifest.snapshot_id,
                    root.display()
                ))
            })?;
        let from = changes::resolve(&cands, to, &args.since)?;
        let sides = changes::Sides {
            from: from.clone(),
            to: to.clone(),
        };
        let diff = self.cached_diff(&sides)?;
        Ok(changes::report(
            &diff,
            product,
            args.path.as_deref(),
            changes::limit_of(args.limit),
            Some(ANSWER_BUDGET),
        ))
    }

    fn cached_diff(&self, s: &changes::Sides) -> Result<Arc<Diff>, ToolError> {
        let key = (s.from.dir.clone(), s.to.dir.clone());
        {
            let cache = self.diffs.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, d)) = cache.iter().find(|(k, _)| *k == key) {
                return Ok(d.clone());
            }
        }
        // Computed outside the lock: two agents asking the same question at
        // once both compute it, rather than every other call waiting.
        let d = Arc::new(changes::compare(s)?);
        let mut cache = self.diffs.0.lock().unwrap_or_else(|p| p.into_inner());
        if !cache.iter().any(|(k, _)| *k == key) {
            if cache.len() >= CACHED_DIFFS {
                cache.remove(0);
            }
            cache.push((key, d.clone()));
        }
        Ok(d)
    }
}
