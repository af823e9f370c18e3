//! Static embeddings against the real teacher (all-MiniLM-L6-v2), when it is on
//! this machine: `DOCSNAP_TEST_BERT` (teacher dir) or the default cache path;
//! `DOCSNAP_TEST_STATIC` (an already distilled dir) skips the distillation.
//! Without either the tests say they were skipped and pass.

use crate::common;

use std::path::PathBuf;

use docsnap::embed::{distill, DistillOptions, StaticModel};

/// The static model to test, and the temp dir that holds it (if distilled here).
fn static_model() -> Option<(StaticModel, Option<tempfile::TempDir>)> {
    if let Some(dir) = std::env::var_os("DOCSNAP_TEST_STATIC") {
        let dir = PathBuf::from(dir);
        if dir.join("model.json").is_file() {
            return Some((
                StaticModel::load(&dir).expect("load DOCSNAP_TEST_STATIC"),
                None,
            ));
        }
    }
    let bert = common::teacher_dir()?;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("static");
    let t = std::time::Instant::now();
    let info = distill(&bert, &out, &DistillOptions::default()).expect("distill");
    eprintln!("distilled {} in {:.1?}", info.name, t.elapsed());
    Some((StaticModel::load(&out).expect("load distilled"), Some(tmp)))
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn static_model_end_to_end() {
    let Some((model, _tmp)) = static_model() else {
        eprintln!(
            "SKIPPED static_model_end_to_end: no teacher in the cache or $DOCSNAP_TEST_BERT, \
             and no $DOCSNAP_TEST_STATIC"
        );
        return;
    };
    let id = model.identity();
    eprintln!("identity: {id}");
    assert_eq!(id.dims, 256);
    assert_eq!(id.vectors_sha256.len(), 64);
    if let Some(bert) = common::teacher_dir() {
        let w = std::fs::read(bert.join("model.safetensors")).unwrap();
        assert_eq!(id.teacher_sha256, docsnap::util::sha256_hex(&w));
    }
    assert_eq!(model.info().method, "model2vec-static");

    // Unit vectors; nothing known → zero vector.
    for t in ["hello world", "Node2D.rotation", "x"] {
        let v = model.embed(t);
        assert_eq!(v.len(), 256);
        let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-4, "{t}: norm {n}");
    }
    assert!(model.embed("").iter().all(|&x| x == 0.0));

    // embed_many keeps order and agrees with embed.
    let texts: Vec<String> = (0..300)
        .map(|i| format!("signal number {i} emitted"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(|s| s.as_str()).collect();
    let many = model.embed_many(&refs);
    assert_eq!(many.len(), 300);
    assert_eq!(many[123], model.embed(refs[123]));

    // (query, related, unrelated): the related text must score higher.
    let triples = [
        (
            "floating damage numbers above enemies",
            "Label3D displays text in 3D space",
            "audio bus volume",
        ),
        (
            "play a sound when the player gets hit",
            "AudioStreamPlayer plays back an audio stream",
            "TileMap draws a grid of tiles",
        ),
        (
            "save game progress to a file",
            "FileAccess reads and writes files on disk",
            "rotate a sprite towards the mouse cursor",
        ),
        (
            "make the character jump and fall with gravity",
            "CharacterBody2D velocity, move_and_slide and is_on_floor for platformer movement",
            "translate the user interface into other languages",
        ),
    ];
    let mut failed = Vec::new();
    for (q, rel, unrel) in triples {
        let qv = model.embed(q);
        let a = cos(&qv, &model.embed(rel));
        let b = cos(&qv, &model.embed(unrel));
        eprintln!("{q:?}: related {a:.3}  unrelated {b:.3}");
        if a <= b {
            failed.push(q);
        }
    }
    assert!(failed.is_empty(), "related text did not win for {failed:?}");
}

/// `cargo test --release --test it embed_model:: -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_embed() {
    let Some((model, _tmp)) = static_model() else {
        eprintln!("SKIPPED bench_embed: no model");
        return;
    };
    let q = "how do I show floating damage numbers above enemies in a 3D game when they get hit by the player";
    assert_eq!(q.split_whitespace().count(), 20);
    let n = 20_000;
    let t = std::time::Instant::now();
    let mut acc = 0f32;
    for _ in 0..n {
        acc += model.embed(q)[0];
    }
    let per = t.elapsed() / n;
    eprintln!("embed (20 words): {per:?} per query ({acc})");
    let docs: Vec<String> = (0..15_000).map(|i| format!("{q} passage {i}")).collect();
    let refs: Vec<&str> = docs.iter().map(|s| s.as_str()).collect();
    let t = std::time::Instant::now();
    let _ = model.embed_many(&refs);
    eprintln!("embed_many 15000 texts: {:.1?}", t.elapsed());
}

/// docsnap-bert's forward pass gives the reference implementation's
/// sentence embeddings: vectors recorded from candle-transformers 0.11.1's
/// `BertModel` (the implementation docsnap ran before its own) for three
/// texts, short to long, come back to float rounding in f32, and within a
/// cosine of 0.995 in the 8 bits docsnap runs by default.
#[test]
fn transformer_matches_the_reference_implementation() {
    let Some(bert) = common::teacher_dir() else {
        eprintln!("SKIPPED transformer_matches_the_reference_implementation: no teacher");
        return;
    };
    use docsnap::embed::contextual::{ContextualModel, Precision};
    let f32_model = ContextualModel::load_with(&bert, Precision::F32).expect("load teacher");
    let int8_model = ContextualModel::load(&bert).expect("load teacher");
    assert_ne!(
        f32_model.identity().vectors_sha256,
        int8_model.identity().vectors_sha256,
        "the precision is part of the identity"
    );
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/it/golden/minilm-reference.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let texts = golden["texts"].as_array().unwrap();
    assert_eq!(texts.len(), 3);
    for t in texts {
        let text = t["text"].as_str().unwrap();
        let want: Vec<f32> = t["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let got = f32_model.embed(text);
        assert_eq!(got.len(), want.len(), "{text}");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 2e-5, "{text}: a component differs by {worst}");
        assert!(
            cos(&got, &want) > 0.99999,
            "{text}: cosine {}",
            cos(&got, &want)
        );
        let q = int8_model.embed(text);
        let c = cos(&q, &want);
        assert!(c > 0.995 && c < 0.99999, "{text}: int8 cosine {c}");
    }
}

/// A question is read up to its first `QUERY_TOKENS` tokens (a page up to
/// `CONTEXT_TOKENS`): past that, pasted noise only costs time.
#[test]
fn a_question_is_read_up_to_its_first_query_tokens() {
    let Some(bert) = common::teacher_dir() else {
        eprintln!("SKIPPED a_question_is_read_up_to_its_first_query_tokens: no teacher");
        return;
    };
    use docsnap::embed::contextual::{ContextualModel, QUERY_TOKENS};
    let model = ContextualModel::load(&bert).expect("load teacher");
    // Words of one token each: n words are n tokens between [CLS] and [SEP].
    let words = [
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far",
    ];
    let text = |n: usize| -> String {
        (0..n)
            .map(|i| words[i % words.len()])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let long = text(200);
    let asked = model.embed_query(&long);
    let cut = model.embed(&text(QUERY_TOKENS - 2));
    let page = model.embed(&long);
    let c = cos(&asked, &cut);
    assert!(c > 0.99999, "the question's first tokens: cosine {c}");
    let c = cos(&asked, &page);
    assert!(c < 0.9999, "a page reads past them: cosine {c}");
}
