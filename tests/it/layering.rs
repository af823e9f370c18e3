//! The module graph stays a graph without cycles: each stage depends only on
//! the stages and shared modules below it (ARCHITECTURE.md, "Layers").
//!
//! Read from the sources: a module `m` (a file `src/m.rs` or a folder
//! `src/m/`) depends on `n` when its code names `crate::n`. Tests inside a
//! module count too: a test that reaches up a layer is a dependency like any
//! other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level module name → the top-level modules it names as `crate::x`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .expect("a path")
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if first == "main" || first == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("source is UTF-8");
        let deps = graph.entry(first.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() && name != first {
                deps.insert(name);
            }
        }
    }
    graph
}

/// A cycle through `start`, if any, as the list of modules on it.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    node: &str,
    path: &mut Vec<String>,
    seen: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    for next in graph.get(node).into_iter().flatten() {
        if next == start {
            let mut c = path.clone();
            c.push(start.to_string());
            return Some(c);
        }
        if seen.insert(next.clone()) {
            path.push(next.clone());
            if let Some(c) = cycle_from(graph, start, next, path, seen) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let graph = module_graph();
    assert!(
        graph.contains_key("section") && graph.contains_key("normalize"),
        "the scan found the stage modules: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    let mut cycles = Vec::new();
    for m in graph.keys() {
        let mut path = vec![m.clone()];
        if let Some(c) = cycle_from(&graph, m, m, &mut path, &mut BTreeSet::new()) {
            cycles.push(c.join(" → "));
        }
    }
    assert!(
        cycles.is_empty(),
        "module cycles (move the shared piece down a layer):\n  {}",
        cycles.join("\n  ")
    );
}

#[test]
fn the_shared_bottom_layer_depends_on_no_stage() {
    let graph = module_graph();
    let stages = [
        "crawl",
        "normalize",
        "section",
        "index",
        "artifact",
        "build",
        "search",
        "serve",
    ];
    for low in ["util", "markdown", "model", "config", "aliases"] {
        let deps = graph.get(low).cloned().unwrap_or_default();
        let bad: Vec<_> = deps
            .iter()
            .filter(|d| stages.contains(&d.as_str()))
            .collect();
        assert!(bad.is_empty(), "{low} depends on stage(s) {bad:?}");
    }
}
