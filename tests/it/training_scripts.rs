//! The scripts that make and split the adapters' training questions
//! (`scripts/training-questions.py`, `scripts/training-folds.py`). What
//! they drop or place decides what the adapters learn and what the
//! crosswise measure reads, so their rules are tested here, on small files.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::read_jsonl;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

fn run_python(args: &[&Path]) -> (bool, String) {
    let out = Command::new("python3")
        .args(args)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

fn write(path: &Path, lines: &[serde_json::Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn q(query: &str, url: &str) -> serde_json::Value {
    serde_json::json!({ "query": query, "url": url })
}

/// Runs `training-folds.py` on `rows` (written to a fresh `q.jsonl`) with
/// the repository's sources.yaml: (success, its output, the folds folder).
fn folds(rows: &[serde_json::Value]) -> (bool, String, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("q.jsonl");
    let out = dir.path().join("folds");
    write(&questions, rows);
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("sources.yaml");
    let (ok, log) = run_python(&[
        &script("training-folds.py"),
        &questions,
        &out,
        Path::new("--config"),
        &config,
    ]);
    (ok, log, out, dir)
}

const PAGE_A: &str = "https://code.claude.com/docs/en/hooks";
const PAGE_B: &str = "https://docs.godotengine.org/en/stable/classes/class_node.html";

#[test]
fn merge_drops_evaluation_lookalikes_and_same_page_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = dir.path().join("shipped.jsonl");
    let writer = dir.path().join("writer.jsonl");
    let eval = dir.path().join("eval.jsonl");
    let out = dir.path().join("out.jsonl");
    write(&shipped, &[q("run a script after every file edit", PAGE_A)]);
    write(
        &writer,
        &[
            // Repeats the shipped question for the same page: dropped.
            q("run a script after every single file edit", PAGE_A),
            // The same words for another page: kept.
            q("run a script after every single file edit", PAGE_B),
            // Like an evaluation question: dropped.
            q("block rm -rf with a pre tool use hook", PAGE_A),
            // New for its page: kept.
            q("  stop the agent from touching my .env  ", PAGE_A),
        ],
    );
    write(
        &eval,
        &[serde_json::json!({"args": {"query": "block rm -rf commands with a PreToolUse hook"}})],
    );
    let (ok, log) = run_python(&[
        &script("training-questions.py"),
        &out,
        &shipped,
        &writer,
        Path::new("--not-like"),
        &eval,
    ]);
    assert!(ok, "{log}");
    assert!(
        log.contains("3 questions kept, 1 too like an evaluation question, 1 repeating"),
        "{log}"
    );
    let kept: Vec<(String, String)> = read_jsonl(&out)
        .iter()
        .map(|r| {
            (
                r["url"].as_str().unwrap().to_string(),
                r["query"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Sorted by URL, then question; whitespace trimmed.
    assert_eq!(
        kept,
        vec![
            (
                PAGE_A.to_string(),
                "run a script after every file edit".to_string()
            ),
            (
                PAGE_A.to_string(),
                "stop the agent from touching my .env".to_string()
            ),
            (
                PAGE_B.to_string(),
                "run a script after every single file edit".to_string()
            ),
        ]
    );
}

#[test]
fn merge_names_the_line_that_is_not_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let writer = dir.path().join("writer.jsonl");
    let out = dir.path().join("out.jsonl");
    std::fs::write(
        &writer,
        format!(
            "{}\n{}\n",
            q("fine", PAGE_A),
            serde_json::json!({"query": 3, "url": PAGE_A})
        ),
    )
    .unwrap();
    let (ok, log) = run_python(&[&script("training-questions.py"), &out, &writer]);
    assert!(!ok);
    assert!(log.contains("writer.jsonl:2"), "{log}");
    assert!(!out.exists(), "nothing written on bad input");
}

#[test]
fn folds_alternate_a_pages_questions_and_carry_their_tool() {
    let (ok, log, out, _dir) = folds(&[
        q("first on hooks", PAGE_A),
        q("first on node", PAGE_B),
        q("second on hooks", PAGE_A),
        q("third on hooks", PAGE_A),
    ]);
    assert!(ok, "{log}");
    let queries = |name: &str| -> Vec<String> {
        read_jsonl(&out.join(name))
            .iter()
            .map(|r| r["query"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        queries("fold-a.jsonl"),
        ["first on hooks", "first on node", "third on hooks"]
    );
    assert_eq!(queries("fold-b.jsonl"), ["second on hooks"]);
    let eval_a = read_jsonl(&out.join("eval-a.jsonl"));
    let tools: Vec<(&str, &str)> = eval_a
        .iter()
        .map(|r| (r["family"].as_str().unwrap(), r["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tools,
        [
            ("agent-docs", "search_docs"),
            ("godot", "search_godot_docs"),
            ("agent-docs", "search_docs"),
        ]
    );
    assert_eq!(eval_a[1]["expect"], serde_json::json!([PAGE_B]));
    assert_eq!(eval_a[1]["args"]["query"], "first on node");
}

#[test]
fn folds_refuse_a_page_outside_every_source_and_write_nothing() {
    let (ok, log, out, _dir) = folds(&[
        q("fine", PAGE_A),
        q("elsewhere", "https://example.org/docs/page"),
    ]);
    assert!(!ok);
    assert!(
        log.contains("q.jsonl:2") && log.contains("example.org"),
        "{log}"
    );
    assert!(!out.exists(), "no fold files half made");
}
