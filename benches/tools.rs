//! In-process latency of every MCP tool over the dev queries.
//!
//! Loads the artifacts under `DOCSNAP_ARTIFACTS` (default `snapshots`), runs
//! each query of `DOCSNAP_QUERIES` (default `../shared/eval/dev-queries.jsonl`)
//! through the same `ToolRegistry::call` the server uses (validation, ranking,
//! serialization), and derives follow-up calls (`read_section`,
//! `fetch_godot_doc`, `get_godot_class`, `get_godot_class_member`) from the
//! results. Prints one JSON object: p50 / p99 / mean in microseconds per tool.
//! With `DOCSNAP_MODEL` the model embeds each query, as `serve --model`
//! does, but without its memory of recent questions (each query is asked
//! once per round, so that memory would answer all rounds but the first):
//! the figures are a new question's cost. `DOCSNAP_QUERY_CACHE=N` keeps
//! N, as the server does. `scripts/bench` runs it; nothing here asserts a
//! time.

use std::collections::BTreeMap;
use std::time::Instant;

use docsnap::search::Library;
use docsnap::serve::tools::{ToolFamily, ToolRegistry};
use serde_json::{json, Map, Value};

fn main() {
    let dir = std::env::var("DOCSNAP_ARTIFACTS").unwrap_or_else(|_| "snapshots".into());
    let queries = std::env::var("DOCSNAP_QUERIES")
        .unwrap_or_else(|_| "../shared/eval/dev-queries.jsonl".into());
    let rounds: usize = std::env::var("DOCSNAP_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    if !std::path::Path::new(&dir).is_dir() {
        // `cargo test --all-targets` runs benches once too; with nothing
        // built there is nothing to measure.
        eprintln!("no artifacts at {dir}: run `docsnap build` first (or set DOCSNAP_ARTIFACTS); nothing measured");
        return;
    }
    let t0 = Instant::now();
    // With DOCSNAP_MODEL set, queries are embedded as the server would.
    let cache: usize = std::env::var("DOCSNAP_QUERY_CACHE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let model = std::env::var_os("DOCSNAP_MODEL").map(|m| {
        let m = std::path::PathBuf::from(m);
        std::sync::Arc::new(
            docsnap::embed::Embedder::load(&m)
                .unwrap_or_else(|e| panic!("DOCSNAP_MODEL {}: {e}", m.display()))
                .with_query_cache(cache),
        )
    });
    let (lib, warnings) = Library::load_dir_with(std::path::Path::new(&dir), model)
        .unwrap_or_else(|e| panic!("loading {dir}: {e}"));
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    let reg = ToolRegistry::new(ToolFamily::ALL);
    let text = std::fs::read_to_string(&queries).unwrap_or_else(|e| panic!("{queries}: {e}"));
    let mut calls: Vec<(String, Map<String, Value>)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let q: Value = serde_json::from_str(line).expect("query line is JSON");
        let tool = q["tool"].as_str().unwrap_or_default().to_string();
        let args = q["args"].as_object().cloned().unwrap_or_default();
        calls.push((tool, args));
    }
    // Follow-up calls from the first answers, as an agent would make them.
    let mut follow = Vec::new();
    for (tool, args) in &calls {
        let Some(r) = reg.call(&lib, tool, Some(args.clone())) else {
            continue;
        };
        let v = r.structured_content.clone().unwrap_or(Value::Null);
        if let Some(p) = v["passages"].get(0) {
            let url = p["url"].as_str().unwrap_or_default();
            let page = url.split('#').next().unwrap_or_default();
            follow.push(("read_section".to_string(), obj(json!({"url": page}))));
            follow.push((
                "read_section".to_string(),
                obj(json!({"url": page, "heading": p["heading"].as_str().unwrap_or_default().rsplit(" > ").next().unwrap_or_default()})),
            ));
        }
        if let Some(h) = v["hits"].get(0) {
            follow.push(("fetch_godot_doc".to_string(), obj(json!({"uri": h["uri"]}))));
            if let Some(c) = h["class_name"].as_str() {
                follow.push(("get_godot_class".to_string(), obj(json!({"class_name": c}))));
                if let Some(m) = h["member_name"].as_str() {
                    follow.push((
                        "get_godot_class_member".to_string(),
                        obj(json!({"class_name": c, "member_name": m})),
                    ));
                }
            }
        }
    }
    calls.extend(follow);
    let mut times: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for round in 0..=rounds {
        for (tool, args) in &calls {
            let t = Instant::now();
            let r = reg.call(&lib, tool, Some(args.clone()));
            let us = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(r);
            if round > 0 {
                times.entry(tool.clone()).or_default().push(us);
            }
        }
    }
    let mut out = Map::new();
    for (tool, mut v) in times {
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
        out.insert(
            tool,
            json!({
                "calls": v.len(),
                "p50_us": (pct(0.5) * 10.0).round() / 10.0,
                "p99_us": (pct(0.99) * 10.0).round() / 10.0,
                "mean_us": ((v.iter().sum::<f64>() / v.len() as f64) * 10.0).round() / 10.0,
            }),
        );
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"load_ms": load_ms, "tools": out})).unwrap()
    );
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}
