//! A running server picks up newer artifacts — from a snapshots directory and
//! from a publish directory — without a restart, and never serves a corrupt one.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The LeapView version docs_search answers from, read off a match id.
fn served_version(c: &mut StdioClient) -> String {
    let r = c.call("docs_search", json!({"query": "publish", "limit": 1}));
    let id = r["result"]["structuredContent"]["matches"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    id.split('/').nth(1).unwrap().to_string()
}

fn wait_for(c: &mut StdioClient, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while served_version(c) != want {
        assert!(Instant::now() < deadline, "server never switched to {want}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// LeapView built from the mirror: the build folder and its 3.1 and 3.2 artifacts.
fn leapview_built() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let mirror = Mirror::start(None, &[]);
    let built = tempfile::tempdir().unwrap();
    build_from_mirror(&mirror, built.path(), &["leapview"]);
    let a31 = only_artifact(built.path(), "leapview", "3.1");
    let a32 = only_artifact(built.path(), "leapview", "3.2");
    (built, a31, a32)
}

/// A snapshots directory holding a copy of `artifact` (LeapView 3.1).
fn serving(artifact: &Path) -> tempfile::TempDir {
    let serve = tempfile::tempdir().unwrap();
    copy_dir(
        artifact,
        &serve
            .path()
            .join("leapview/3.1")
            .join(artifact.file_name().unwrap()),
    );
    serve
}

/// A copy of the 3.2 artifact under `snapshots` with one flipped byte in its
/// pages (it fails verification); its path.
fn damaged_copy(a32: &Path, snapshots: &Path) -> std::path::PathBuf {
    let bad = snapshots
        .join("leapview/3.2")
        .join(a32.file_name().unwrap());
    copy_dir(a32, &bad);
    let pages = bad.join("pages.jsonl");
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[100] ^= 0x20;
    std::fs::write(&pages, bytes).unwrap();
    bad
}

#[test]
fn newer_artifacts_are_swapped_in_while_serving() {
    let (_built, a31, a32) = leapview_built();

    // A snapshots directory that starts with 3.1 only.
    let serve = serving(&a31);
    let s = serve.path();
    let mut c = StdioClient::spawn(&[
        "serve",
        "--stdio",
        "--artifacts",
        s.to_str().unwrap(),
        "--reload-secs",
        "1",
    ]);
    c.handshake();
    assert_eq!(served_version(&mut c), "3.1");

    // A corrupt 3.2 is never swapped in.
    let bad = damaged_copy(&a32, s);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(served_version(&mut c), "3.1");

    // A complete 3.2, published by rename, is.
    std::fs::remove_dir_all(&bad).unwrap();
    let tmp = s.join("leapview/3.2/.incoming");
    copy_dir(&a32, &tmp);
    std::fs::rename(&tmp, &bad).unwrap();
    wait_for(&mut c, "3.2");
    drop(c);

    // From a publish directory: publish 3.1, serve, publish 3.2.
    let pubdir = tempfile::tempdir().unwrap();
    let p = pubdir.path().to_str().unwrap();
    let (code, _, err) = run_docsnap(&["publish", a31.to_str().unwrap(), "--to", p]);
    assert_eq!(code, 0, "{err}");
    let cache = tempfile::tempdir().unwrap();
    let mut c = StdioClient::spawn(&[
        "serve",
        "--stdio",
        "--artifacts",
        p,
        "--cache",
        cache.path().to_str().unwrap(),
        "--reload-secs",
        "1",
    ]);
    c.handshake();
    assert_eq!(served_version(&mut c), "3.1");
    let (code, _, err) = run_docsnap(&["publish", a32.to_str().unwrap(), "--to", p]);
    assert_eq!(code, 0, "{err}");
    wait_for(&mut c, "3.2");
}

#[test]
fn reloads_and_refused_artifacts_show_in_metrics() {
    let (_built, a31, a32) = leapview_built();
    let serve = serving(&a31);
    let s = serve.path();

    let replica = Replica::start(
        &["--reload-secs", "1", "--artifacts", s.to_str().unwrap()],
        &[],
    );
    let addr = replica.addr.clone();
    let scrape = || http_get(&addr, "/metrics");
    let wait = |what: &str, ok: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let t = scrape();
            if ok(&t) {
                return t;
            }
            assert!(Instant::now() < deadline, "never saw {what}:\n{t}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let t = scrape();
    assert_eq!(sample(&t, "docsnap_reloads_total"), 0.0);
    assert_eq!(sample(&t, "docsnap_rejected_artifacts_total"), 0.0);

    // A corrupt 3.2 is refused and counted; nothing is swapped in.
    let bad = damaged_copy(&a32, s);
    let t = wait("the refused artifact", &|t| {
        sample(t, "docsnap_rejected_artifacts_total") >= 1.0
    });
    assert_eq!(sample(&t, "docsnap_reloads_total"), 0.0);
    assert!(!t.contains("version=\"3.2\""), "{t}");

    // A complete 3.2 is swapped in and counted.
    std::fs::remove_dir_all(&bad).unwrap();
    let tmp = s.join("leapview/3.2/.incoming");
    copy_dir(&a32, &tmp);
    std::fs::rename(&tmp, &bad).unwrap();
    let t = wait("the reload", &|t| sample(t, "docsnap_reloads_total") >= 1.0);
    assert!(
        t.contains("docsnap_snapshot_pages{source=\"leapview\",version=\"3.2\""),
        "{t}"
    );
    assert_eq!(sample(&t, "docsnap_reload_failures_total"), 0.0);
}

#[test]
fn two_replicas_on_one_publish_directory_switch_without_a_failed_request() {
    let (_built, a31, a32) = leapview_built();
    let pubdir = tempfile::tempdir().unwrap();
    let p = pubdir.path().to_str().unwrap();
    let (code, _, err) = run_docsnap(&["publish", a31.to_str().unwrap(), "--to", p]);
    assert_eq!(code, 0, "{err}");

    // Two stateless replicas, each with its own unpack cache, one store.
    let caches = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let replicas: Vec<Replica> = caches
        .iter()
        .map(|c| {
            Replica::start(
                &[
                    "--artifacts",
                    p,
                    "--cache",
                    c.path().to_str().unwrap(),
                    "--reload-secs",
                    "1",
                ],
                &[],
            )
        })
        .collect();
    for r in &replicas {
        assert_eq!(served_over_http(&r.addr).unwrap(), "3.1");
    }

    // Clients keep calling both replicas while 3.2 is published.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = replicas
        .iter()
        .flat_map(|r| [r.addr.clone(), r.addr.clone()])
        .map(|addr| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut seen: Vec<(Instant, Result<String, String>)> = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    seen.push((Instant::now(), served_over_http(&addr)));
                }
                seen
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let published = Instant::now();
    let (code, _, err) = run_docsnap(&["publish", a32.to_str().unwrap(), "--to", p]);
    assert_eq!(code, 0, "{err}");
    let deadline = Instant::now() + Duration::from_secs(30);
    for r in &replicas {
        while served_over_http(&r.addr).unwrap() != "3.2" {
            assert!(
                Instant::now() < deadline,
                "{} never switched to 3.2",
                r.addr
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);

    let mut total = 0;
    let mut last_switch = Duration::ZERO;
    for c in clients {
        let seen = c.join().unwrap();
        total += seen.len();
        let failed: Vec<&String> = seen.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
        assert!(
            failed.is_empty(),
            "failed requests during the switch: {failed:?}"
        );
        let versions: Vec<&str> = seen.iter().map(|(_, r)| r.as_deref().unwrap()).collect();
        // Each client sees 3.1, then 3.2, and never 3.1 again.
        let first_new = versions.iter().position(|v| *v == "3.2").expect("saw 3.2");
        assert!(
            versions[..first_new].iter().all(|v| *v == "3.1"),
            "{versions:?}"
        );
        assert!(
            versions[first_new..].iter().all(|v| *v == "3.2"),
            "{versions:?}"
        );
        last_switch = last_switch.max(seen[first_new].0.saturating_duration_since(published));
    }
    eprintln!(
        "two replicas: {total} requests, 0 failed; both answered from 3.2 {last_switch:.1?} after publish (reload interval 1 s)"
    );
}
