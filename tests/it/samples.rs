//! The query samples kept beside the dev set (`benches/*-queries.jsonl`)
//! decide settings in BENCHMARKS.md; a question whose expected page the
//! mirror does not hold would count as a miss for every setting and skew
//! that choice without anyone noticing. So each line is checked here: it
//! parses, its id is unique, its tool belongs to its family, and every
//! expected page is a file of the mirror by the mirror's URL rules.

use std::collections::HashSet;
use std::path::Path;

use crate::common::{mirrored, shared};

fn check_sample(file: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let sites = shared().join("sites");
    let mut ids = HashSet::new();
    let mut n = 0;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = format!("{file}:{}", i + 1);
        let q: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
        let id = q["id"].as_str().unwrap_or_else(|| panic!("{at}: no id"));
        assert!(ids.insert(id.to_string()), "{at}: id {id} twice");
        let tool = match q["family"].as_str() {
            Some("godot") => "search_godot_docs",
            Some("agent-docs") => "search_docs",
            Some("leapview") => "docs_search",
            other => panic!("{at}: family {other:?}"),
        };
        assert_eq!(q["tool"].as_str(), Some(tool), "{at}: tool of its family");
        let query = q["args"]["query"].as_str().unwrap_or("");
        assert!(!query.trim().is_empty(), "{at}: empty query");
        let expect = q["expect"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: no expect"));
        if q["answerable"].as_bool() != Some(false) {
            assert!(!expect.is_empty(), "{at}: answerable but expects nothing");
        } else {
            // An off-topic question that names a page would be scored as
            // answerable by one tool and not by the other.
            assert!(expect.is_empty(), "{at}: unanswerable but expects pages");
        }
        for e in expect {
            let url = e.as_str().unwrap_or_else(|| panic!("{at}: {e} is no URL"));
            assert!(
                mirrored(&sites, url),
                "{at}: {url} is not a page of the mirror"
            );
        }
        n += 1;
    }
    n
}

/// Every sample beside the dev set, with its number of questions.
const SAMPLES: &[(&str, usize)] = &[
    ("team-queries.jsonl", 50),
    ("blind-queries.jsonl", 80),
    ("blind2-queries.jsonl", 148),
    ("blind3-queries.jsonl", 80),
    ("blind4-queries.jsonl", 80),
    ("blind5-queries.jsonl", 110),
    ("blind6-queries.jsonl", 140),
    ("blind7-queries.jsonl", 128),
    ("blind8-queries.jsonl", 120),
    ("blind9-queries.jsonl", 120),
    ("blind10-queries.jsonl", 120),
    ("blind11-queries.jsonl", 120),
    ("blind12-queries.jsonl", 120),
    ("blind13-queries.jsonl", 120),
    ("blind14-queries.jsonl", 68),
    ("blind15-queries.jsonl", 64),
    ("blind16-queries.jsonl", 64),
    ("blind17-queries.jsonl", 64),
    ("blind18-queries.jsonl", 64),
    ("offtopic-queries.jsonl", 150),
];

#[test]
fn the_samples_expect_pages_the_mirror_holds() {
    for &(file, n) in SAMPLES {
        assert_eq!(check_sample(&format!("benches/{file}")), n, "{file}");
    }
}

/// A sample added to `benches/` is checked as soon as it is there: one
/// that is not listed in [`SAMPLES`] fails here (blind9 to blind15 once
/// went unchecked for want of a line).
#[test]
fn every_sample_in_benches_is_checked() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with("-queries.jsonl"))
        .collect();
    found.sort();
    let mut listed: Vec<String> = SAMPLES.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "benches/*-queries.jsonl against SAMPLES");
}

#[test]
fn a_page_the_mirror_lacks_is_reported() {
    let sites = shared().join("sites");
    assert!(mirrored(
        &sites,
        "https://docs.godotengine.org/en/stable/tutorials/physics/soft_body.html"
    ));
    assert!(mirrored(&sites, "https://code.claude.com/docs/en/memory"));
    assert!(!mirrored(
        &sites,
        "https://code.claude.com/docs/en/no-such-page"
    ));
}
