//! The data `scripts/train-query-adapter.py` learns a query adapter from:
//! the page vectors of some sources' artifacts, exactly as the server reads
//! them, and the vectors of training questions, embedded as the server
//! embeds a question.
//!
//! `cargo run --release --example adapter_data -- ARTIFACTS MODEL QUESTIONS SOURCES OUT`
//! with QUESTIONS a JSON Lines file of `{"query", "url"}` and SOURCES a
//! comma-separated list of source ids. Writes `OUT/pages.f32`,
//! `OUT/questions.f32` (little-endian rows) and `OUT/meta.json` (page URLs,
//! each question's answer page and its text as embedded: a question-side
//! model can be learned from the same text the server will see).
use std::io::{BufRead, Write};
use std::path::Path;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [artifacts, model, questions, sources, out] = &args[..] else {
        anyhow::bail!("usage: adapter_data ARTIFACTS MODEL QUESTIONS SOURCES OUT");
    };
    let wanted: Vec<&str> = sources.split(',').collect();
    let m = std::sync::Arc::new(docsnap::embed::Embedder::load(Path::new(model))?);
    let (lib, _) = docsnap::search::Library::load_dir_with(Path::new(artifacts), Some(m.clone()))?;
    let out = Path::new(out);
    std::fs::create_dir_all(out)?;
    // Pages are matched by URL without fragment and without `index.html`, as
    // the evaluation matches them.
    let canon = |u: &str| {
        let u = u.split('#').next().unwrap_or(u);
        u.strip_suffix("index.html").unwrap_or(u).to_string()
    };
    let mut urls = Vec::new();
    let mut pv = std::io::BufWriter::new(std::fs::File::create(out.join("pages.f32"))?);
    let mut vectors_sha256 = None;
    for s in &lib.sources {
        if !wanted.contains(&s.manifest.source.as_str()) {
            continue;
        }
        let Some(v) = &s.vectors else {
            anyhow::bail!("{}: no vectors this model made", s.manifest.source);
        };
        vectors_sha256 = s
            .manifest
            .embedding
            .as_ref()
            .map(|e| e.vectors_sha256.clone());
        for (i, p) in s.pages.iter().enumerate() {
            urls.push(canon(&p.url));
            for x in v.row(i) {
                pv.write_all(&x.to_le_bytes())?;
            }
        }
    }
    // The Godot tool strips a question's framing ("in godot 4, how do I")
    // before it ranks; its adapter learns from questions as stripped.
    let godot = lib.sources.iter().any(|s| {
        wanted.contains(&s.manifest.source.as_str())
            && s.manifest.tool_set() == docsnap::model::ToolSet::Godot
    });
    let index: std::collections::HashMap<&str, usize> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (u.as_str(), i))
        .collect();
    let mut qv = std::io::BufWriter::new(std::fs::File::create(out.join("questions.f32"))?);
    let mut answers = Vec::new();
    let mut texts = Vec::new();
    let mut skipped = 0usize;
    for line in std::io::BufReader::new(std::fs::File::open(questions)?).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let q: serde_json::Value = serde_json::from_str(&line)?;
        let (Some(text), Some(url)) = (q["query"].as_str(), q["url"].as_str()) else {
            anyhow::bail!("{questions}: a line without `query` and `url`: {line}");
        };
        let Some(&page) = index.get(canon(url).as_str()) else {
            skipped += 1;
            continue;
        };
        let stripped = docsnap::search::godot::strip_framing(text);
        let text = if godot { stripped.as_str() } else { text };
        for x in m.embed_query(text).iter() {
            qv.write_all(&x.to_le_bytes())?;
        }
        answers.push(page);
        texts.push(text.to_string());
    }
    let meta = serde_json::json!({
        "dims": m.identity().dims,
        "vectors_sha256": vectors_sha256,
        "pages": urls,
        "answers": answers,
        "texts": texts,
        "skipped": skipped,
    });
    std::fs::write(out.join("meta.json"), meta.to_string())?;
    eprintln!(
        "{} pages, {} questions ({skipped} name no page of these sources)",
        urls.len(),
        answers.len()
    );
    Ok(())
}
