//! The whole distillation pipeline on a tiny random BERT made here (no real
//! model needed): files, sizes, zero rows for special tokens, load checks, and
//! the errors for a wrong tensor shape and corrupted vectors.

use std::fs;
use std::path::Path;

use docsnap::embed::{distill, ContextualModel, DistillOptions, StaticModel, Weighting};
use serde_json::json;

const VOCAB: &[&str] = &[
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "[unused0]",
    "[unused1]",
    "the",
    "a",
    "node",
    "signal",
    "audio",
    "play",
    "sound",
    "label",
    "text",
    "jump",
    "##s",
    "##ing",
    "file",
];

fn config(hidden: usize) -> serde_json::Value {
    json!({
        "vocab_size": VOCAB.len(), "hidden_size": hidden, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "max_position_embeddings": 16, "type_vocab_size": 2,
        "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "model_type": "bert"
    })
}

fn tokenizer_json() -> serde_json::Value {
    let special = |id: usize| {
        json!({"id": id, "content": VOCAB[id], "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let vocab: serde_json::Map<String, serde_json::Value> = VOCAB
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
    json!({
        "version": "1.0",
        "truncation": {"max_length": 8, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 8}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [special(0), special(1), special(2), special(3), special(4)],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
    })
}

/// A teacher directory whose weights have `weights_hidden` dims and whose
/// config.json claims `config_hidden`.
fn make_teacher(dir: &Path, config_hidden: usize, weights_hidden: usize) {
    let (h, inter, vocab) = (weights_hidden, 16usize, VOCAB.len());
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![vocab, h]),
        ("embeddings.position_embeddings.weight".into(), vec![16, h]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, h]),
        ("embeddings.LayerNorm.weight".into(), vec![h]),
        ("embeddings.LayerNorm.bias".into(), vec![h]),
    ];
    let p = "encoder.layer.0";
    for (name, shape) in [
        ("attention.self.query", [h, h]),
        ("attention.self.key", [h, h]),
        ("attention.self.value", [h, h]),
        ("attention.output.dense", [h, h]),
        ("intermediate.dense", [inter, h]),
        ("output.dense", [h, inter]),
    ] {
        shapes.push((format!("{p}.{name}.weight"), shape.to_vec()));
        shapes.push((format!("{p}.{name}.bias"), vec![shape[0]]));
    }
    for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
        shapes.push((format!("{p}.{norm}.weight"), vec![h]));
        shapes.push((format!("{p}.{norm}.bias"), vec![h]));
    }
    // Random weights from a fixed LCG: a reproducible teacher.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = shapes
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            let data: Vec<u8> = (0..n)
                .flat_map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let v = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2;
                    v.to_le_bytes()
                })
                .collect();
            (name, shape, data)
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
        .iter()
        .map(|(name, shape, data)| {
            let view =
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), data)
                    .unwrap();
            (name.clone(), view)
        })
        .collect();
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
    fs::write(dir.join("config.json"), config(config_hidden).to_string()).unwrap();
    fs::write(dir.join("tokenizer.json"), tokenizer_json().to_string()).unwrap();
}

#[test]
fn tiny_teacher_distills_and_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let teacher = tmp.path().join("tiny-bert");
    fs::create_dir(&teacher).unwrap();
    make_teacher(&teacher, 8, 8);
    let out = tmp.path().join("static");
    let opts = DistillOptions {
        dims: 4,
        batch_size: 3, // several batches, the last one partial
        weighting: Weighting::Zipf,
        name: None,
    };
    let info = distill(&teacher, &out, &opts).unwrap();
    assert_eq!(info.name, "static-tiny-bert-4");
    assert_eq!(info.method, "model2vec-static");
    assert_eq!(info.dims, 4);
    assert_eq!(info.vocab_size, VOCAB.len());
    assert_eq!(info.weighting, "zipf-log1p-rank");
    let w = fs::read(teacher.join("model.safetensors")).unwrap();
    assert_eq!(info.teacher_sha256, docsnap::util::sha256_hex(&w));

    let vectors = fs::read(out.join("vectors.f16")).unwrap();
    assert_eq!(vectors.len(), VOCAB.len() * 4 * 2);
    assert_eq!(info.vectors_sha256, docsnap::util::sha256_hex(&vectors));
    for (id, tok) in VOCAB.iter().enumerate() {
        let row = &vectors[id * 8..(id + 1) * 8];
        let zero = row.iter().all(|&b| b == 0);
        assert_eq!(zero, tok.starts_with('['), "token {tok}");
    }
    assert_eq!(
        fs::read(out.join("tokenizer.json")).unwrap(),
        fs::read(teacher.join("tokenizer.json")).unwrap()
    );
    // Only the model directory next to the teacher: no temp dirs left.
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 2);

    let model = StaticModel::load(&out).unwrap();
    assert_eq!(model.identity().vectors_sha256, info.vectors_sha256);
    let v = model.embed("Play the sounds");
    let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((n - 1.0).abs() < 1e-5, "norm {n}");
    // The tokenizer file pads to 8 and truncates at 8; loading switches both off,
    // so a 9-token text differs from its first 8 tokens.
    let long = "play the sound the audio the label the file";
    let cut = "play the sound the audio the label the";
    assert_ne!(model.embed(long), model.embed(cut));
    let capped = StaticModel::load(&out).unwrap().with_max_tokens(8);
    assert_eq!(capped.embed(long), capped.embed(cut));
    assert!(model.embed("[PAD] [CLS]").iter().all(|&x| x == 0.0));

    // Distilling again replaces the directory whole.
    let again = distill(&teacher, &out, &opts).unwrap();
    assert_eq!(again.vectors_sha256, info.vectors_sha256, "deterministic");

    // A flipped byte in the vectors is caught at load, naming the file.
    let mut bad = vectors.clone();
    bad[8 * 9] ^= 1;
    fs::write(out.join("vectors.f16"), &bad).unwrap();
    let err = StaticModel::load(&out).unwrap_err().to_string();
    assert!(
        err.contains("vectors.f16") && err.contains("sha256"),
        "{err}"
    );
    bad.truncate(10);
    fs::write(out.join("vectors.f16"), &bad).unwrap();
    let err = StaticModel::load(&out).unwrap_err().to_string();
    assert!(
        err.contains("vectors.f16") && err.contains("10 bytes"),
        "{err}"
    );
}

#[test]
fn wrong_tensor_shape_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let teacher = tmp.path().join("bad-bert");
    fs::create_dir(&teacher).unwrap();
    make_teacher(&teacher, 8, 6);
    let out = tmp.path().join("static");
    let err = distill(
        &teacher,
        &out,
        &DistillOptions {
            dims: 4,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    assert!(err.contains("shape"), "{err}");
    assert!(!out.exists());
}

#[test]
fn too_many_dims_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    make_teacher(tmp.path(), 8, 8);
    let err = distill(
        tmp.path(),
        &tmp.path().join("o"),
        &DistillOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("config.json") && err.contains("256 dims"),
        "{err}"
    );
}

/// Token ids of `words` framed as the tiny tokenizer frames a text.
fn ids(words: &[&str]) -> Vec<u32> {
    let id = |w: &str| VOCAB.iter().position(|t| *t == w).unwrap() as u32;
    let mut v = vec![id("[CLS]")];
    v.extend(words.iter().map(|w| id(w)));
    v.push(id("[SEP]"));
    v
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
}

/// A folder is embedded as its sentence-transformers files say: [CLS]
/// pooling is the first token's state, not the mean; prompts go before
/// questions and pages (named, or the default prompt); `max_seq_length`
/// cuts the text; and each of these changes the model's identity, so its
/// vectors are never queried with another configuration's.
#[test]
fn a_folder_is_embedded_as_its_sentence_transformers_files_say() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-bert");
    fs::create_dir(&dir).unwrap();
    make_teacher(&dir, 8, 8);
    let bert = docsnap_bert::load_folder(
        &dir,
        docsnap_bert::read_config(&dir).unwrap(),
        docsnap_bert::Precision::Int8,
    )
    .unwrap();
    let seq = ids(&["play", "the", "sound"]);
    let states = bert.hidden_states(&[&seq]);
    let first = unit(states[..8].to_vec());
    let mean = unit(
        (0..8)
            .map(|c| states.chunks_exact(8).map(|r| r[c]).sum::<f32>() / seq.len() as f32)
            .collect(),
    );

    let plain = ContextualModel::load(&dir).unwrap();
    assert!(close(&plain.embed("play the sound"), &mean), "mean pooling");
    fs::create_dir(dir.join("1_Pooling")).unwrap();
    fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 8, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let cls = ContextualModel::load(&dir).unwrap();
    assert!(close(&cls.embed("play the sound"), &first), "[CLS] pooling");
    assert!(!close(&first, &mean));

    let st = dir.join("config_sentence_transformers.json");
    fs::write(
        &st,
        r#"{"prompts": {"query": "play ", "document": "label "}}"#,
    )
    .unwrap();
    let prompted = ContextualModel::load(&dir).unwrap();
    assert_eq!(
        &*prompted.embed_query("the sound"),
        &cls.embed("play the sound")[..]
    );
    assert_eq!(
        prompted.embed_document("the file"),
        cls.embed("label the file")
    );
    fs::write(
        &st,
        r#"{"prompts": {"jumping": "jump ", "passage": "text "}, "default_prompt_name": "jumping"}"#,
    )
    .unwrap();
    let default = ContextualModel::load(&dir).unwrap();
    assert_eq!(
        &*default.embed_query("the sound"),
        &cls.embed("jump the sound")[..]
    );
    assert_eq!(
        default.embed_document("the file"),
        cls.embed("text the file")
    );
    // A prompts file that says something docsnap cannot follow is refused,
    // naming the file and what is wrong.
    let valid = fs::read(&st).unwrap();
    for (text, says) in [
        (r#"{"prompts": ["query: "]}"#, "not an object"),
        (r#"{"prompts": {"query": 3}}"#, "\"query\" is 3"),
        (
            r#"{"prompts": {}, "default_prompt_name": "query"}"#,
            "names no prompt",
        ),
    ] {
        fs::write(&st, text).unwrap();
        let err = ContextualModel::load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("config_sentence_transformers.json") && err.contains(says),
            "{text}: {err}"
        );
    }
    fs::write(&st, valid).unwrap();

    fs::write(
        dir.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 4}"#,
    )
    .unwrap();
    let short = ContextualModel::load(&dir).unwrap();
    assert_eq!(
        short.embed("play the sound the audio"),
        short.embed("play the")
    );
    assert_ne!(cls.embed("play the sound the audio"), cls.embed("play the"));

    // A mean that would leave the prompt's tokens out is refused by name.
    fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"pooling_mode_mean_tokens": true, "include_prompt": false}"#,
    )
    .unwrap();
    let err = ContextualModel::load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("1_Pooling") && err.contains("include_prompt"),
        "{err}"
    );

    let id = |m: &ContextualModel| m.identity().vectors_sha256;
    let all = [
        id(&plain),
        id(&cls),
        id(&prompted),
        id(&default),
        id(&short),
    ];
    for (i, a) in all.iter().enumerate() {
        assert!(
            !all[i + 1..].contains(a),
            "configuration {i} shares an identity"
        );
    }
}

/// A module docsnap does not run is refused by name, not skipped: a
/// `Dense` projection after pooling changes every vector.
#[test]
fn a_module_docsnap_does_not_run_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    make_teacher(tmp.path(), 8, 8);
    let modules = |last: &str| {
        format!(
            r#"[{{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}},
                {{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}},
                {last}]"#
        )
    };
    let path = tmp.path().join("modules.json");
    fs::write(
        &path,
        modules(r#"{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}"#),
    )
    .unwrap();
    ContextualModel::load(tmp.path()).unwrap();
    fs::write(
        &path,
        modules(r#"{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}"#),
    )
    .unwrap();
    let err = ContextualModel::load(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("modules.json") && err.contains("2_Dense") && err.contains("Dense"),
        "{err}"
    );
    // Distillation mean-pools each token: a [CLS]-pooled teacher is refused.
    fs::remove_file(&path).unwrap();
    fs::create_dir(tmp.path().join("1_Pooling")).unwrap();
    fs::write(
        tmp.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true}"#,
    )
    .unwrap();
    let err = distill(
        tmp.path(),
        &tmp.path().join("o"),
        &DistillOptions {
            dims: 4,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("mean-pooled teacher"), "{err}");
}
