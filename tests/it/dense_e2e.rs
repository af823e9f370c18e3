//! Dense retrieval end to end with the real teacher: `docsnap distill`, a
//! build with `--model` through the mirror, the vectors in the artifact
//! (manifest record, checksum, one row per section), and a library that
//! serves them — or says why it serves lexically.

use crate::common;

use std::sync::Arc;

use common::{build_with, run_docsnap, teacher_dir, Mirror};
use docsnap::embed::store::VectorStore;
use docsnap::embed::StaticModel;
use docsnap::search::Library;

#[test]
fn build_with_model_and_serve_hybrid() {
    let Some(teacher) = teacher_dir() else {
        eprintln!(
            "SKIPPED build_with_model_and_serve_hybrid: no embedding teacher on this machine"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model_dir = tmp.path().join("static");
    let (code, out, err) = run_docsnap(&[
        "distill",
        "--teacher",
        teacher.to_str().unwrap(),
        "--out",
        model_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "distill failed: {out}\n{err}");
    let model = Arc::new(StaticModel::load(&model_dir).expect("load the distilled model"));

    let mirror = Mirror::start(None, &[]);
    let snaps = tmp.path().join("snapshots");
    build_with(
        &mirror,
        &snaps,
        &["leapview"],
        &["--model", model_dir.to_str().unwrap()],
    );

    // Every artifact names the model and carries one vector per section.
    let dirs = docsnap::artifact::newest_artifacts(&snaps).unwrap();
    assert_eq!(dirs.len(), 2, "leapview 3.1 and 3.2: {dirs:?}");
    for d in &dirs {
        let m = docsnap::artifact::verify(d).expect("artifact verifies");
        let e = m
            .embedding
            .clone()
            .expect("manifest has an embedding record");
        let id = model.identity();
        assert_eq!(e.vectors_sha256, id.vectors_sha256);
        assert_eq!(e.teacher_sha256, id.teacher_sha256);
        assert_eq!(e.dims as usize, id.dims);
        assert!(m.files.contains_key(&e.file), "{} not checksummed", e.file);
        let v = VectorStore::load(&d.join(&e.file)).unwrap();
        assert_eq!(v.len() as u64, m.counts.sections);
    }

    // Served with the model: vectors attached, no warning, hybrid answers
    // in score order.
    let (lib, warnings) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(lib.sources.iter().all(|s| s.vectors.is_some()));
    let r = lib
        .docs_search(&docsnap::search::leapview::DocsSearchArgs {
            query: "how do I ship my app to users".into(),
            limit: Some(10),
            path: None,
            cursor: None,
        })
        .unwrap();
    assert!(!r.matches.is_empty());
    // The dense side alone finds pages too (a query with no word of the docs).
    let lib_dense = Library {
        rank: docsnap::search::rank::RankConfig {
            leapview: docsnap::search::rank::FamilyLevers {
                dense: 1.0,
                feedback: 0.0,
                ..Default::default()
            },
            dense_adaptive: 0.0,
            ..Default::default()
        },
        ..Library::load_dir_with(&snaps, Some(model.clone()))
            .unwrap()
            .0
    };
    let r = lib_dense
        .docs_search(&docsnap::search::leapview::DocsSearchArgs {
            query: "zzqx qqvv wwpt".into(),
            limit: Some(5),
            path: None,
            cursor: None,
        })
        .unwrap();
    assert!(!r.matches.is_empty(), "dense retrieval found nothing");

    // Without a model the same artifacts serve lexically, silently.
    let (lib, warnings) = Library::load_dir(&snaps).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(lib.sources.iter().all(|s| s.vectors.is_none()));

    // Artifacts built without --model, served with one: said, and lexical.
    let plain = tmp.path().join("plain");
    build_with(&mirror, &plain, &["leapview"], &[]);
    let (lib, warnings) = Library::load_dir_with(&plain, Some(model)).unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("no vectors"), "{warnings:?}");
    assert!(lib.sources.iter().all(|s| s.vectors.is_none()));
}
