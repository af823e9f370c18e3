//! Writes the rows of the questions asked of the pages as the artifacts
//! under ARTIFACTS hold them (every source's newest snapshot of each
//! version) into one file pair, `OUT` and `OUT` with `.keys`: what
//! sources.yaml's `asked_rows` names, so that a build from scratch takes
//! them instead of embedding every question again
//! (`docsnap::embed::asked::ShippedRows`).
//!
//! `cargo run --release --example asked_rows -- snapshots adapters/all-minilm-l6-v2/asked-rows.i8`
//! after a build with the default model. Every artifact must have been
//! made by the same model: rows of several would be kept apart by their
//! keys, but a file for one model is what a source can name.
use std::collections::BTreeMap;
use std::path::Path;

use docsnap::artifact::{newest_artifacts, read_manifest, read_verified};
use docsnap::embed::asked::{ShippedRows, ASKED_KEYS, ASKED_VECTORS};
use docsnap::embed::store::VectorStore;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [artifacts, out] = &args[..] else {
        anyhow::bail!("usage: asked_rows ARTIFACTS OUT");
    };
    let mut rows: BTreeMap<String, Vec<f32>> = BTreeMap::new();
    let mut model: Option<String> = None;
    let mut dims = 0;
    for dir in newest_artifacts(Path::new(artifacts))? {
        let manifest = read_manifest(&dir)?;
        let Some(info) = &manifest.embedding else {
            continue;
        };
        if !manifest.files.contains_key(ASKED_VECTORS) {
            continue;
        }
        match &model {
            Some(m) if *m != info.vectors_sha256 => anyhow::bail!(
                "{}: vectors {} where the others are {m}: one model per file",
                dir.display(),
                info.vectors_sha256
            ),
            _ => model = Some(info.vectors_sha256.clone()),
        }
        let store = VectorStore::from_vec(
            &dir.join(ASKED_VECTORS),
            read_verified(&dir, &manifest, ASKED_VECTORS)?,
        )?;
        let keys = String::from_utf8(read_verified(&dir, &manifest, ASKED_KEYS)?)?;
        let keys: Vec<&str> = keys.split('\n').collect();
        anyhow::ensure!(
            keys.len() == store.len(),
            "{}: {} keys for {} rows",
            dir.display(),
            keys.len(),
            store.len()
        );
        dims = store.dims();
        for (i, k) in keys.into_iter().enumerate() {
            rows.entry(k.to_string()).or_insert_with(|| store.row(i));
        }
    }
    anyhow::ensure!(
        !rows.is_empty(),
        "no artifact under {artifacts} has rows of questions asked"
    );
    let mut rows: Vec<(String, Vec<f32>)> = rows.into_iter().collect();
    ShippedRows::write(Path::new(out), dims, &mut rows)?;
    println!("{} rows of {dims} dims written to {out}", rows.len());
    Ok(())
}
