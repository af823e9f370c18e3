//! Failures are reported, never swallowed: a page that fetched but did not
//! normalize is a failed page (summary, exit status, `crawl.jsonl`), and the
//! snapshot is not silently smaller.

mod common;

use common::{copy_dir, read_jsonl, run_docsnap, shared, Mirror};

/// A LeapView page whose body lost its content root.
const BROKEN: &str = "docs.leapview.example/v3.2/cli/login.html";
const BROKEN_URL: &str = "https://docs.leapview.example/v3.2/cli/login";

fn site_with_a_broken_page() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("sites");
    copy_dir(
        &shared().join("sites/docs.leapview.example"),
        &root.join("docs.leapview.example"),
    );
    std::fs::write(
        root.join(BROKEN),
        "<!doctype html><html><head><title>Login</title></head><body><nav>menu</nav></body></html>",
    )
    .unwrap();
    t
}

fn build(t: &tempfile::TempDir, mirror: &Mirror, extra: &[&str]) -> (i32, String) {
    let out = t.path().join("out");
    let mut args = vec![
        "build",
        "--source",
        "leapview",
        "--mirror",
        &mirror.url,
        "--out",
        out.to_str().unwrap(),
        "--rate",
        "0",
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = run_docsnap(&args);
    (code, err)
}

#[test]
fn a_page_that_does_not_normalize_fails_the_build() {
    let t = site_with_a_broken_page();
    let mirror = Mirror::start(Some(&t.path().join("sites")), &[]);

    let (code, err) = build(&t, &mirror, &[]);
    assert_eq!(code, 1, "a failed page must fail the build:\n{err}");
    assert!(
        err.contains(BROKEN_URL) && err.contains("normalize failed"),
        "{err}"
    );
    assert!(
        err.contains("no main content"),
        "the cause is named:\n{err}"
    );
    let v32 = t.path().join("out/leapview/3.2");
    let written: Vec<_> = std::fs::read_dir(&v32)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        written.is_empty(),
        "no 3.2 snapshot may be written: {written:?}"
    );

    // Allowed: the snapshot is written without the page, and its crawl
    // record says why the page is missing.
    let (code, err) = build(&t, &mirror, &["--allow-failures", "1"]);
    assert_eq!(code, 0, "{err}");
    let dir = common::only_artifact(&t.path().join("out"), "leapview", "3.2");
    let crawl = read_jsonl(&dir.join("crawl.jsonl"));
    let rec = crawl
        .iter()
        .find(|r| r["url"] == BROKEN_URL)
        .expect("the page's crawl record");
    assert!(
        rec["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("normalize failed")),
        "{rec}"
    );
    let pages = read_jsonl(&dir.join("pages.jsonl"));
    assert_eq!(pages.len(), 47, "the 47 other pages are there");
    assert!(pages.iter().all(|p| p["url"] != BROKEN_URL));
}
