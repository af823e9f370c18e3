//! Dense retrieval end to end with the real teacher: `docsnap distill`, a
//! build with `--model` through the mirror, the vectors in the artifact
//! (manifest record, checksum, one row per section), and a library that
//! serves them — or says why it serves lexically.

use crate::common;

use std::sync::Arc;

use common::{build_with, run_docsnap, run_docsnap_env, teacher_dir, Mirror};
use docsnap::embed::store::VectorStore;
use docsnap::embed::{Embedder, StaticModel};
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
    let model = Arc::new(Embedder::Static(Box::new(
        StaticModel::load(&model_dir).expect("load the distilled model"),
    )));

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
    assert!(!ship_query(&lib).matches.is_empty());
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

/// The transformer itself as `--model`: one vector per page, named in the
/// manifest with its keys; served with score fusion; a rebuild of the same
/// content runs the transformer on nothing and writes the same vectors.
#[test]
fn build_with_transformer_page_vectors_and_reuse_them() {
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED build_with_transformer_page_vectors_and_reuse_them: no BERT model on this machine");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let snaps = tmp.path().join("snapshots");
    let model_arg = teacher.to_str().unwrap();
    // At log level info, the build says how many texts each version embedded.
    let build = |extra: &[&str]| {
        let out = snaps.to_str().unwrap();
        let mut args = vec!["--model", model_arg, "build", "--mirror", &mirror.url];
        args.extend(["--out", out, "--rate", "0", "--source", "leapview"]);
        args.extend(extra);
        let (code, _, err) = run_docsnap_env(&args, &[("DOCSNAP_LOG".into(), "info".into())]);
        assert_eq!(code, 0, "{err}");
        err
    };
    let err = build(&[]);
    assert_eq!(err.matches(" texts)").count(), 2, "{err}");
    assert!(
        !err.contains("(0 texts)"),
        "first build embedded nothing:\n{err}"
    );
    // The pages were embedded while the crawl ran, every one of them.
    for (texts, early) in embedded_texts(&err) {
        assert!(texts > 0 && early == texts, "{err}");
    }
    let model = Arc::new(Embedder::load(&teacher).expect("load the BERT folder"));
    assert_eq!(model.unit(), docsnap::model::VectorUnit::Page);
    // And their rows are what embedding each page's text after the crawl
    // gives, bit for bit.
    let Embedder::Contextual(cm) = model.as_ref() else {
        panic!("a BERT folder loads as the transformer")
    };
    for d in docsnap::artifact::newest_artifacts(&snaps).unwrap() {
        let a = docsnap::artifact::load(&d).unwrap();
        let texts = docsnap::embed::contextual::page_texts(&a.pages, &a.sections);
        let rows: Vec<Vec<f32>> = texts.iter().map(|t| cm.embed_document(t)).collect();
        let want = docsnap::embed::store::encode_vectors(&d, 384, &rows).unwrap();
        let got = std::fs::read(d.join(docsnap::embed::VECTORS_FILE)).unwrap();
        assert!(got == want, "{}: page rows differ", d.display());
    }

    let dirs = docsnap::artifact::newest_artifacts(&snaps).unwrap();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let mut first = Vec::new();
    for d in &dirs {
        let m = docsnap::artifact::verify(d).expect("artifact verifies");
        let e = m.embedding.clone().expect("embedding record");
        assert_eq!(
            e,
            model.info(),
            "manifest names the model that made the vectors"
        );
        assert!(m.files.contains_key(docsnap::embed::VECTOR_KEYS_FILE));
        let v = VectorStore::load(&d.join(&e.file)).unwrap();
        assert_eq!(v.len() as u64, m.counts.pages, "one row per page");
        assert_eq!(v.dims(), 384);
        first.push(v);
    }

    let (mut lib, warnings) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(lib.sources.iter().all(|s| s.vectors.is_some()));
    assert!(!ship_query(&lib).matches.is_empty());
    let ship = |lib: &Library| {
        lib.rank_pages(
            &[0],
            "how do I ship my app to users",
            None,
            10,
            lib.rank.leapview,
        )
        .unwrap()
    };
    let hits = ship(&lib);
    assert!(hits.iter().any(|h| h.cosine > 0.0), "no page cosine fused");
    // The same question twice (ship_query, then rank_pages): embedded once.
    let st = model
        .query_cache_stats()
        .expect("the transformer keeps questions");
    assert_eq!((st.hits, st.misses, st.kept), (1, 1, 1), "{st:?}");
    let scores: Vec<f64> = hits.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Scores take in the page cosine: the first hit's is at least its
    // cosine, none is below what the question's words alone give, and some
    // is above (so the checks can fail).
    assert!(
        hits[0].score >= f64::from(hits[0].cosine) - 5e-4,
        "{:?}",
        hits[0]
    );
    lib.rank.cosine_scores = false;
    let words_only = ship(&lib);
    lib.rank.cosine_scores = true;
    assert_eq!(words_only.len(), hits.len());
    assert!(hits
        .iter()
        .zip(&words_only)
        .all(|(a, b)| a.page == b.page && a.score >= b.score));
    assert!(hits.iter().zip(&words_only).any(|(a, b)| a.score > b.score));
    // A list longer than the first ranking holds ranks twice (the default
    // depth, then a deeper one for the pages after it) and embeds the
    // question once, with no cache to remember it.
    let uncached = Arc::new(
        Embedder::load(&teacher)
            .expect("load the BERT folder")
            .with_query_cache(0),
    );
    let (lib0, _) = Library::load_dir_with(&snaps, Some(uncached.clone())).unwrap();
    let pages = lib0.sources[0].pages.len();
    let long = lib0
        .rank_pages_stable(
            &[0],
            "how do I ship my app to users",
            None,
            pages + 10,
            5,
            lib0.rank.leapview,
            |_| {},
        )
        .unwrap();
    assert!(!long.is_empty() && long.len() <= pages);
    let st = uncached.query_cache_stats().unwrap();
    assert_eq!((st.misses, st.kept), (1, 0), "{st:?}");

    // Same content, written again: every row comes from the previous snapshot.
    let err = build(&["--force"]);
    assert_eq!(err.matches("(0 texts)").count(), 2, "{err}");
    let dirs = docsnap::artifact::newest_artifacts(&snaps).unwrap();
    for (d, before) in dirs.iter().zip(&first) {
        // The same rows.
        let after = VectorStore::load(&d.join(docsnap::embed::VECTORS_FILE)).unwrap();
        assert_eq!(after.len(), before.len());
        for i in 0..after.len() {
            let (a, b) = (after.row(i), before.row(i));
            assert!(
                a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6),
                "row {i} of {} differs after reuse",
                d.display()
            );
        }
    }
}

/// A LeapView question in the user's words, answered by `lib`.
fn ship_query(lib: &Library) -> docsnap::search::leapview::DocsSearchResult {
    lib.docs_search(&docsnap::search::leapview::DocsSearchArgs {
        query: "how do I ship my app to users".into(),
        limit: Some(10),
        path: None,
        cursor: None,
    })
    .unwrap()
}

/// Without `--model`, build and serve pick up the model where
/// `scripts/fetch-model.sh` installs it, `--no-default-model` (or its
/// variable) turns that off, and an empty cache leaves search lexical with
/// a message saying how to get the model.
#[test]
fn the_default_model_is_found_and_can_be_turned_off() {
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED the_default_model_is_found_and_can_be_turned_off: no BERT model");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let with = tmp.path().join("with");
    std::fs::create_dir(&with).unwrap();
    std::os::unix::fs::symlink(&teacher, with.join("all-minilm-l6-v2")).unwrap();
    let without = tmp.path().join("without");
    std::fs::create_dir(&without).unwrap();
    // `search` loads the model (beside the artifacts) before it finds there
    // is nothing to search. A missing folder is refused before either.
    let empty = tmp.path().join("no-artifacts");
    std::fs::create_dir(&empty).unwrap();
    let run = |cache: &std::path::Path, no_default: &str, extra: &[&str]| {
        let mut args: Vec<&str> = extra.to_vec();
        args.extend(["search", "node", "--artifacts", empty.to_str().unwrap()]);
        let env = [
            ("DOCSNAP_LOG".to_string(), "info".to_string()),
            ("DOCSNAP_CACHE".to_string(), cache.display().to_string()),
            (
                "DOCSNAP_NO_DEFAULT_MODEL".to_string(),
                no_default.to_string(),
            ),
        ];
        let (code, _, err) = run_docsnap_env(&args, &env);
        assert_ne!(code, 0, "there are no artifacts to search");
        assert!(err.contains("no complete artifact under"), "{err}");
        err
    };
    let err = run(&with, "false", &[]);
    assert!(
        err.contains("embedding model (the default model): all-minilm-l6-v2"),
        "{err}"
    );
    let err = run(&with, "1", &[]);
    assert!(
        err.contains("--no-default-model: search is lexical only"),
        "{err}"
    );
    assert!(!err.contains("embedding model ("), "{err}");
    let err = run(&with, "false", &["--no-default-model"]);
    assert!(err.contains("search is lexical only"), "{err}");
    let err = run(&without, "false", &[]);
    assert!(
        err.contains("no embedding model at") && err.contains("scripts/fetch-model.sh"),
        "{err}"
    );
    // An explicit --model wins over the switch, which only concerns the default.
    let err = run(&without, "1", &["--model", teacher.to_str().unwrap()]);
    assert!(
        err.contains("embedding model (--model): all-minilm-l6-v2"),
        "{err}"
    );
    // No folder at all: said at once, without loading the model first.
    let missing = tmp.path().join("missing");
    let (code, _, err) = run_docsnap_env(
        &["search", "node", "--artifacts", missing.to_str().unwrap()],
        &[
            ("DOCSNAP_LOG".to_string(), "info".to_string()),
            ("DOCSNAP_CACHE".to_string(), with.display().to_string()),
            ("DOCSNAP_NO_DEFAULT_MODEL".to_string(), "false".to_string()),
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("no artifacts at"), "{err}");
    assert!(!err.contains("embedding model ("), "{err}");
}

/// A source's `query_adapter`: found beside the sources.yaml that names it,
/// copied into the artifact (checksummed) without embedding anything again,
/// applied to every question compared with that artifact's vectors; one
/// learned for other vectors is left out with a warning; a damaged copy in
/// the artifact is said and not used; a configured file that is missing
/// fails the build naming it.
#[test]
fn a_query_adapter_is_copied_checked_and_applied() {
    use docsnap::embed::adapter::{QueryAdapter, ADAPTER_FILE};
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED a_query_adapter_is_copied_checked_and_applied: no BERT model");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let snaps = tmp.path().join("snapshots");
    let model = Arc::new(Embedder::load(&teacher).expect("load the BERT folder"));
    let info = model.info();
    let dims = info.dims as usize;
    // A real move: the components in reverse order.
    let mut w = vec![0f32; dims * dims];
    for i in 0..dims {
        w[i * dims + (dims - 1 - i)] = 1.0;
    }
    let adapter = QueryAdapter::new(dims, w, &info.vectors_sha256);
    let cfg_dir = tmp.path().join("cfg");
    let cfg = leapview_config(&cfg_dir, "query_adapter: adapter.safetensors");
    let build = |extra: &[&str]| build_leapview(&cfg, &snaps, Some(&teacher), &mirror.url, extra);

    // Named but missing: the build fails and names the file.
    let (code, _, err) = build(&[]);
    assert_ne!(code, 0, "a missing adapter was ignored");
    assert!(err.contains("adapter.safetensors"), "{err}");

    // Learned for other vectors: left out, said.
    let other = QueryAdapter::new(dims, vec![0.0; dims * dims], "not-these-vectors");
    std::fs::write(cfg_dir.join("adapter.safetensors"), other.to_bytes()).unwrap();
    let (code, _, err) = build(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("not-these-vectors") && err.contains("not used"),
        "{err}"
    );
    for d in docsnap::artifact::newest_artifacts(&snaps).unwrap() {
        let m = docsnap::artifact::verify(&d).unwrap();
        assert!(!m.files.contains_key(ADAPTER_FILE), "{}", d.display());
    }

    // Learned for these vectors: a new snapshot that carries it, with
    // nothing embedded again.
    let bytes = adapter.to_bytes();
    std::fs::write(cfg_dir.join("adapter.safetensors"), &bytes).unwrap();
    let (code, _, err) = build(&[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("(0 texts)").count(), 2, "{err}");
    assert!(
        !err.contains("unchanged:"),
        "kept the snapshot without the adapter:\n{err}"
    );
    let dirs = docsnap::artifact::newest_artifacts(&snaps).unwrap();
    for d in &dirs {
        let m = docsnap::artifact::verify(d).unwrap();
        assert_eq!(
            m.files.get(ADAPTER_FILE),
            Some(&docsnap::util::sha256_hex(&bytes))
        );
    }
    // Built again with the same adapter: unchanged.
    let (code, _, err) = build(&[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("unchanged:").count(), 2, "{err}");

    // Served: the cosine fused is the adapted question's.
    let (lib, warnings) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let q = "how do I ship my app to users";
    let qv = model.embed_query(q);
    let moved = adapter.apply(&qv);
    let hits = lib
        .rank_pages(&[0], q, None, 10, lib.rank.leapview)
        .unwrap();
    let src = &lib.sources[0];
    assert!(src.adapter.is_some());
    let v = src.vectors.as_ref().unwrap();
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    // The int8 rows and question leave ~1e-3 of error: the page checked is
    // the one whose adapted and unadapted cosines differ most.
    let gap = |h: &&docsnap::search::rank::PageHit| {
        let row = v.row(h.page);
        (dot(&moved, &row) - dot(&qv, &row)).abs()
    };
    let h = hits
        .iter()
        .filter(|h| h.cosine != 0.0)
        .max_by(|a, b| gap(a).total_cmp(&gap(b)))
        .expect("a page cosine fused");
    let row = v.row(h.page);
    let (adapted, plain) = (dot(&moved, &row), dot(&qv, &row));
    assert!(
        (adapted - plain).abs() > 0.01 && (h.cosine - adapted).abs() < 0.003,
        "fused {} is not the adapted cosine {adapted} (unadapted {plain})",
        h.cosine
    );

    // The lever off: the same page is compared unmoved.
    let off = Library {
        rank: docsnap::search::rank::RankConfig {
            query_adapters: false,
            ..Default::default()
        },
        ..Library::load_dir_with(&snaps, Some(model.clone()))
            .unwrap()
            .0
    };
    // (Every page of the version competes: it has 45.)
    let hits = off
        .rank_pages(&[0], q, None, 100, off.rank.leapview)
        .unwrap();
    let h2 = hits
        .iter()
        .find(|x| x.page == h.page)
        .expect("the page is ranked");
    assert!(
        (h2.cosine - plain).abs() < 0.003,
        "{} vs {plain}",
        h2.cosine
    );

    // A damaged copy: that snapshot is refused, named, and its version is
    // served by the one before it, which has no adapter.
    let copy = dirs[0].join(ADAPTER_FILE);
    let mut b = std::fs::read(&copy).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0x40;
    std::fs::write(&copy, b).unwrap();
    let (lib, warnings) = Library::load_dir_with(&snaps, Some(model)).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(ADAPTER_FILE) && w.contains("does not match")),
        "{warnings:?}"
    );
    assert_eq!(lib.sources.len(), 2, "both versions still served");
    assert_eq!(
        lib.sources.iter().filter(|s| s.adapter.is_some()).count(),
        1,
        "the damaged snapshot's adapter was used"
    );
    assert!(lib.sources.iter().all(|s| s.vectors.is_some()));
}

/// Questions asked of the pages (`asked` in sources.yaml): embedded by the
/// build into the artifact of the version whose pages they ask about,
/// listed in its manifest, kept on a rebuild with nothing changed, and mixed
/// into the page's cosine by the server.
#[test]
fn questions_asked_of_pages_are_embedded_kept_and_used() {
    use docsnap::embed::asked::{ASKED_META, ASKED_VECTORS};
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED questions_asked_of_pages_are_embedded_kept_and_used: no BERT model");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let snaps = tmp.path().join("snapshots");
    let model = Arc::new(Embedder::load(&teacher).expect("load the BERT folder"));
    let cfg_dir = tmp.path().join("cfg");
    let cfg = leapview_config(&cfg_dir, "asked: asked.jsonl");
    let build = || build_leapview(&cfg, &snaps, Some(&teacher), &mirror.url, &[]);

    // Named but missing: the build fails and names the file.
    let (code, _, err) = build();
    assert_ne!(code, 0, "a missing questions file was ignored");
    assert!(err.contains("asked.jsonl"), "{err}");

    // No question about these pages: built as without.
    let questions = cfg_dir.join("asked.jsonl");
    ask_elsewhere(&questions);
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    let (lib, _) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    assert!(lib.sources.iter().all(|s| s.asked.is_none()));

    // Two questions about one page of one version.
    let (si, page) = (0usize, 3usize);
    let url = lib.sources[si].pages[page].url.clone();
    let asked = "my users want the thing installed on their own machines";
    std::fs::write(
        &questions,
        format!(
            "{}\n{}\n",
            serde_json::json!({"query": asked, "url": format!("{url}#anchor")}),
            serde_json::json!({"query": "a second way to say it", "url": url}),
        ),
    )
    .unwrap();
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("unchanged:").count(), 1, "{err}");
    assert!(
        err.contains("(2 texts)"),
        "page vectors reused, two questions embedded:\n{err}"
    );
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("unchanged:").count(), 2, "{err}");

    let (lib, warnings) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let src = lib
        .sources
        .iter()
        .position(|s| s.asked.is_some())
        .expect("a version carries its questions");
    assert_eq!(lib.sources[src].pages[page].url, url);
    let asked_artifact = || newest_asked_artifact(&snaps);
    let (d, m) = asked_artifact();
    assert!(m.files.contains_key(ASKED_META) && m.files.contains_key(ASKED_VECTORS));
    let (av, rows) = lib.sources[src].asked.as_ref().unwrap();
    assert_eq!(rows, &vec![page as u32, page as u32]);
    // Their texts are kept, for the words of the questions.
    let meta: docsnap::embed::asked::AskedMeta =
        serde_json::from_slice(&std::fs::read(d.join(ASKED_META)).unwrap()).unwrap();
    assert_eq!(meta.texts, vec![asked, "a second way to say it"]);
    assert!(lib.sources[src].asked_words.is_some());
    // The model attached again (`asked.json` was parsed once, at open):
    // the same rows, the same pages.
    let mut again = Library::load_dir_with(&snaps, Some(model.clone()))
        .unwrap()
        .0;
    for _ in 0..2 {
        assert!(again.attach_model(Some(model.clone())).is_empty());
        let (v, r) = again.sources[src].asked.as_ref().expect("rows again");
        assert_eq!((v.len(), r), (av.len(), rows));
    }
    assert!(again.attach_model(None).is_empty());
    assert!(again.sources[src].asked.is_none());
    assert!(again.attach_model(Some(model.clone())).is_empty());
    assert_eq!(again.sources[src].asked.as_ref().unwrap().1, *rows);

    // Served: the page's cosine is half its own, half the nearest question's.
    let qv = model.embed_query(asked);
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let plain = dot(&qv, &lib.sources[src].vectors.as_ref().unwrap().row(page));
    let near = dot(&qv, &av.row(0)).max(dot(&qv, &av.row(1)));
    assert!(near > 0.98, "the question is its own nearest: {near}");
    let levers = docsnap::search::rank::FamilyLevers {
        asked: 0.5,
        ..lib.rank.leapview
    };
    let hits = lib.rank_pages(&[src], asked, None, 100, levers).unwrap();
    let h = hits
        .iter()
        .find(|h| h.page == page)
        .expect("the page is ranked");
    assert!(
        (h.cosine - (0.5 * plain + 0.5 * near)).abs() < 0.005 && near - plain > 0.1,
        "fused {} is not the mix of {plain} and {near}",
        h.cosine
    );
    let off = docsnap::search::rank::FamilyLevers {
        asked: 0.0,
        ..levers
    };
    let hits = lib.rank_pages(&[src], asked, None, 100, off).unwrap();
    let h = hits.iter().find(|h| h.page == page).unwrap();
    assert!((h.cosine - plain).abs() < 0.003, "{} vs {plain}", h.cosine);
    // The words of its questions put the page first when they weigh most.
    let worded = docsnap::search::rank::FamilyLevers {
        asked: 0.0,
        asked_words: 100.0,
        asked_words_adaptive: 0.0,
        ..levers
    };
    let words_first = |q: &str, l| lib.rank_pages(&[src], q, None, 10, l).unwrap()[0].page;
    assert_eq!(words_first("second way to say it", worded), page);
    assert_ne!(
        words_first("second way to say it", off),
        page,
        "the page is first only by its questions' words"
    );

    // The same questions about another page: a new snapshot, its rows
    // taken over (nothing embedded), pointing at the new page.
    let other = lib.sources[src].pages[page + 2].url.clone();
    let text = std::fs::read_to_string(&questions).unwrap();
    std::fs::write(&questions, text.replace(&url, &other)).unwrap();
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("unchanged:").count(), 1, "{err}");
    assert!(err.contains("(0 texts)"), "{err}");
    let (lib, _) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    let (before, rows) = lib.sources[src].asked.as_ref().unwrap();
    assert_eq!(rows, &vec![page as u32 + 2; 2]);

    // One question added: the other two rows are taken over by their keys
    // (same text, model and adapter), only the new one is embedded.
    let mut text = std::fs::read_to_string(&questions).unwrap();
    text.push_str(&format!(
        "{}\n",
        serde_json::json!({"query": "one more way to ask", "url": url})
    ));
    std::fs::write(&questions, text).unwrap();
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(1 texts)"), "{err}");
    let (d, m) = asked_artifact();
    assert!(m.files.contains_key(docsnap::embed::asked::ASKED_KEYS));
    let (lib, _) = Library::load_dir_with(&snaps, Some(model.clone())).unwrap();
    let (after, rows) = lib.sources[src].asked.as_ref().unwrap();
    assert_eq!(rows, &vec![page as u32 + 2, page as u32 + 2, page as u32]);
    assert_eq!(after.len(), 3);
    for i in 0..2 {
        assert_eq!(after.row(i), before.row(i), "row {i} taken over unchanged");
    }
    // The new row is the question as the server embeds it.
    let qv = model.embed_query("one more way to ask");
    assert!(dot(&qv, &after.row(2)) > 0.98);

    // A damaged keys file is not trusted: everything is embedded again.
    let keys = d.join(docsnap::embed::asked::ASKED_KEYS);
    let mut k = std::fs::read(&keys).unwrap();
    k[0] ^= 1;
    std::fs::write(&keys, k).unwrap();
    let text = std::fs::read_to_string(&questions).unwrap();
    std::fs::write(&questions, text.replace("one more way", "yet another way")).unwrap();
    let (code, _, err) = build();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(3 texts)"), "{err}");
}

/// Without a model the build keeps the questions' texts (`asked.json`, no
/// rows) and the server, lexical, ranks a page by its questions' words.
#[test]
fn without_a_model_the_questions_texts_are_kept_and_ranked() {
    use docsnap::embed::asked::{AskedMeta, ASKED_META, ASKED_VECTORS};
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let snaps = tmp.path().join("snapshots");
    let cfg_dir = tmp.path().join("cfg");
    let cfg = leapview_config(&cfg_dir, "asked: asked.jsonl");
    let questions = cfg_dir.join("asked.jsonl");
    let build = || {
        let (code, _, err) = build_leapview(&cfg, &snaps, None, &mirror.url, &[]);
        assert_eq!(code, 0, "{err}");
    };
    ask_elsewhere(&questions);
    build();
    let (lib, _) = Library::load_dir_with(&snaps, None).unwrap();
    assert!(lib.sources.iter().all(|s| s.asked_words.is_none()));
    let (si, page) = (0usize, 3usize);
    let url = lib.sources[si].pages[page].url.clone();
    let asked = "zorbleflux gizmo keeps wobbling";
    std::fs::write(
        &questions,
        format!("{}\n", serde_json::json!({"query": asked, "url": url})),
    )
    .unwrap();
    build();
    let (lib, _) = Library::load_dir_with(&snaps, None).unwrap();
    let src = lib
        .sources
        .iter()
        .position(|s| s.asked_words.is_some())
        .expect("a version carries its questions' words");
    assert_eq!(lib.sources[src].pages[page].url, url);
    let (d, m) = newest_asked_artifact(&snaps);
    assert!(m.files.contains_key(ASKED_META) && !m.files.contains_key(ASKED_VECTORS));
    let meta: AskedMeta =
        serde_json::from_slice(&std::fs::read(d.join(ASKED_META)).unwrap()).unwrap();
    assert_eq!(
        (meta.texts, meta.pages),
        (vec![asked.to_string()], vec![page as u32])
    );
    // The docs hold neither word: only the question's words find the page.
    let levers = |w: f64| docsnap::search::rank::FamilyLevers {
        asked_words_lexical: w,
        ..lib.rank.leapview
    };
    let hits = lib
        .rank_pages(&[src], "zorbleflux gizmo", None, 10, levers(6.0))
        .unwrap();
    assert_eq!(hits.first().map(|h| h.page), Some(page));
    let hits = lib
        .rank_pages(&[src], "zorbleflux gizmo", None, 10, levers(0.0))
        .unwrap();
    assert!(
        hits.iter().all(|h| h.page != page),
        "found without the words"
    );
}

/// A questions file whose one question asks about no page of the mirror.
/// Questions embedded ahead of the build (`asked_rows` in sources.yaml,
/// as `examples/asked_rows.rs` writes them): a build from scratch takes
/// their rows instead of embedding them and writes the very bytes embedding
/// them gives; a damaged rows file is named in a warning and every
/// question is embedded as without it.
#[test]
fn questions_embedded_ahead_are_taken_over() {
    use docsnap::embed::asked::{ShippedRows, ASKED_KEYS, ASKED_VECTORS};
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED questions_embedded_ahead_are_taken_over: no BERT model");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let cfg_dir = tmp.path().join("cfg");
    let plain = leapview_config(&cfg_dir, "asked: asked.jsonl");
    let ahead = leapview_config(
        &cfg_dir.join("ahead"),
        "asked: ../asked.jsonl\n    asked_rows: rows.i8",
    );
    let texts = |err: &str| -> usize { embedded_texts(err).iter().map(|t| t.0).sum() };
    // A build that embeds its questions, and what it wrote.
    let snaps = tmp.path().join("plain");
    ask_elsewhere(&cfg_dir.join("asked.jsonl"));
    let (code, _, err) = build_leapview(&plain, &snaps, Some(&teacher), &mirror.url, &[]);
    assert_eq!(code, 0, "{err}");
    let model = Arc::new(Embedder::load(&teacher).unwrap());
    let (lib, _) = Library::load_dir_with(&snaps, Some(model)).unwrap();
    let url = lib.sources[0].pages[2].url.clone();
    let lines: String = [
        "where do my saved dashboards go",
        "share a chart with my team",
    ]
    .iter()
    .map(|q| format!("{}\n", serde_json::json!({"query": q, "url": url})))
    .collect();
    std::fs::write(cfg_dir.join("asked.jsonl"), lines).unwrap();
    let _ = std::fs::remove_dir_all(&snaps);
    let (code, _, err) = build_leapview(&plain, &snaps, Some(&teacher), &mirror.url, &[]);
    assert_eq!(code, 0, "{err}");
    let embedded_all = texts(&err);
    let (d, m) = newest_asked_artifact(&snaps);
    let want = std::fs::read(d.join(ASKED_VECTORS)).unwrap();
    let store = docsnap::embed::store::VectorStore::from_bytes(&d, &want).unwrap();
    let keys = docsnap::artifact::read_verified(&d, &m, ASKED_KEYS).unwrap();
    let mut rows: Vec<(String, Vec<f32>)> = (String::from_utf8(keys).unwrap().split('\n'))
        .enumerate()
        .map(|(i, k)| (k.to_string(), store.row(i)))
        .collect();
    assert_eq!(rows.len(), 2);
    let rows_file = cfg_dir.join("ahead/rows.i8");
    ShippedRows::write(&rows_file, store.dims(), &mut rows).unwrap();

    // From scratch with them: the questions are not embedded, the bytes
    // are the same.
    let snaps = tmp.path().join("ahead");
    let (code, _, err) = build_leapview(&ahead, &snaps, Some(&teacher), &mirror.url, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(texts(&err), embedded_all - 2, "{err}");
    let (d, _) = newest_asked_artifact(&snaps);
    assert!(std::fs::read(d.join(ASKED_VECTORS)).unwrap() == want);

    // One flipped byte: named, not used, the same bytes embedded again.
    let mut bytes = std::fs::read(&rows_file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&rows_file, bytes).unwrap();
    let snaps = tmp.path().join("damaged");
    let (code, _, err) = build_leapview(&ahead, &snaps, Some(&teacher), &mirror.url, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("rows.i8") && err.contains("not used"), "{err}");
    assert_eq!(texts(&err), embedded_all, "{err}");
    let (d, _) = newest_asked_artifact(&snaps);
    assert!(std::fs::read(d.join(ASKED_VECTORS)).unwrap() == want);
}

/// Per timings line of a build's log: the texts it embedded, and how many
/// of them during the crawl.
fn embedded_texts(log: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(" texts)")).collect();
    assert!(!lines.is_empty(), "no timings in the build's log:\n{log}");
    lines
        .into_iter()
        .map(|line| {
            let n = |after: &str, before: &str| -> usize {
                let end = line.find(before).unwrap();
                let start = line[..end].rfind(after).unwrap() + after.len();
                line[start..end].trim().parse().unwrap()
            };
            (n("(", " texts)"), n("),", " of them during the crawl"))
        })
        .collect()
}

fn ask_elsewhere(questions: &std::path::Path) {
    let line = serde_json::json!({"query": "elsewhere", "url": "https://other.example/x"});
    std::fs::write(questions, format!("{line}\n")).unwrap();
}

/// The newest snapshot under `snaps` that carries asked questions, and its
/// (verified) manifest.
fn newest_asked_artifact(
    snaps: &std::path::Path,
) -> (std::path::PathBuf, docsnap::model::Manifest) {
    let d = docsnap::artifact::newest_artifacts(snaps)
        .unwrap()
        .into_iter()
        .find(|d| d.join(docsnap::embed::asked::ASKED_META).exists())
        .unwrap();
    let m = docsnap::artifact::verify(&d).unwrap();
    (d, m)
}

/// The project's sources.yaml, written into `dir` with `line` added to the
/// leapview entry (its files are then found beside it, in `dir`).
fn leapview_config(dir: &std::path::Path, line: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let project = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sources.yaml"),
    )
    .unwrap();
    // The project's own questions for LeapView are left out: these tests
    // ask their own, or none.
    let start = project
        .find("  - id: leapview\n")
        .expect("the leapview entry");
    let end = project[start + 1..]
        .find("\n  - id: ")
        .map_or(project.len(), |e| start + 1 + e);
    let entry: String = project[start..end]
        .lines()
        .filter(|l| !l.starts_with("    asked:") && !l.starts_with("    asked_rows:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let project = format!("{}{entry}{}", &project[..start], &project[end..]);
    let with = project.replace(
        "    tools: leapview\n",
        &format!("    tools: leapview\n    {line}\n"),
    );
    assert_ne!(with, project, "the leapview entry was not found");
    let cfg = dir.join("sources.yaml");
    std::fs::write(&cfg, &with).unwrap();
    cfg
}

/// `docsnap build` of leapview alone through the mirror, with the model
/// `teacher` or without any (the default model turned off); exit code,
/// stdout, stderr (with info logs: the build's timings).
fn build_leapview(
    cfg: &std::path::Path,
    snaps: &std::path::Path,
    teacher: Option<&std::path::Path>,
    mirror: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let mut args = match teacher {
        Some(t) => vec!["--model", t.to_str().unwrap()],
        None => vec!["--no-default-model"],
    };
    args.extend(["--config", cfg.to_str().unwrap(), "build"]);
    args.extend([
        "--mirror",
        mirror,
        "--out",
        snaps.to_str().unwrap(),
        "--rate",
        "0",
    ]);
    args.extend(["--source", "leapview"]);
    args.extend(extra);
    run_docsnap_env(&args, &[("DOCSNAP_LOG".into(), "info".into())])
}

/// Which instruction sets the forward pass uses changes its speed, never
/// a bit of what it writes: LeapView built from scratch with the kernels
/// capped at plain loops, at AVX2 and uncapped (on this machine AMX and
/// AVX-512 where it has them) writes the same page and question rows; a
/// cap that names nothing known is refused with the variable named.
#[test]
fn vectors_are_the_same_bits_whatever_kernels_run() {
    let Some(teacher) = teacher_dir() else {
        eprintln!("SKIPPED vectors_are_the_same_bits_whatever_kernels_run: no BERT model");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let cfg_dir = tmp.path().join("cfg");
    let cfg = leapview_config(&cfg_dir, "asked: asked.jsonl");
    // Questions of a few tokens (a tail shorter than a tile of rows) and
    // one long enough for a tile of its own.
    let long = "how do I ".repeat(12) + "configure the viewer";
    let questions: String = ["rotate an access token", "revoke tokens", long.as_str()]
        .iter()
        .flat_map(|q| {
            ["v3.1", "v3.2"].map(|v| {
                let url = format!("https://docs.leapview.example/{v}/api/authentication");
                format!("{}\n", serde_json::json!({"query": q, "url": url}))
            })
        })
        .collect();
    std::fs::write(cfg_dir.join("asked.jsonl"), questions).unwrap();
    let rows = |cap: Option<&str>| -> Vec<(String, Vec<u8>, Vec<u8>)> {
        let snaps = tmp.path().join(format!("snaps-{}", cap.unwrap_or("all")));
        let mut args = vec!["--model", teacher.to_str().unwrap()];
        args.extend(["--config", cfg.to_str().unwrap(), "build"]);
        args.extend([
            "--mirror",
            &mirror.url,
            "--rate",
            "0",
            "--source",
            "leapview",
        ]);
        args.extend(["--out", snaps.to_str().unwrap()]);
        let env: Vec<(String, String)> = cap
            .map(|c| vec![(docsnap_bert::ISA_ENV.to_string(), c.to_string())])
            .unwrap_or_default();
        let (code, _, err) = run_docsnap_env(&args, &env);
        assert_eq!(code, 0, "{cap:?}: {err}");
        let mut out = Vec::new();
        for d in docsnap::artifact::newest_artifacts(&snaps).unwrap() {
            let m = docsnap::artifact::verify(&d).unwrap();
            let read = |f: &str| std::fs::read(d.join(f)).unwrap();
            out.push((
                m.version.clone(),
                read(docsnap::embed::VECTORS_FILE),
                read(docsnap::embed::asked::ASKED_VECTORS),
            ));
        }
        assert_eq!(out.len(), 2, "{cap:?}: both versions");
        out
    };
    let all = rows(None);
    for cap in ["portable", "avx2"] {
        let capped = rows(Some(cap));
        for (a, c) in all.iter().zip(&capped) {
            assert_eq!(a.0, c.0);
            assert!(a.1 == c.1, "{cap}: page rows of {} differ", a.0);
            assert!(a.2 == c.2, "{cap}: question rows of {} differ", a.0);
        }
    }
    let snaps = tmp.path().join("snaps-bad");
    let args = [
        "--model",
        teacher.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "build",
        "--mirror",
        &mirror.url,
        "--source",
        "leapview",
        "--out",
        snaps.to_str().unwrap(),
    ];
    let env = [(docsnap_bert::ISA_ENV.to_string(), "sse9".to_string())];
    let (code, _, err) = run_docsnap_env(&args, &env);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("DOCSNAP_BERT_ISA") && err.contains("sse9"),
        "{err}"
    );
    assert!(!snaps.exists(), "nothing built under a cap it cannot read");
}
