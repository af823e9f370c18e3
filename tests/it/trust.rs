//! Failures are reported, never swallowed: a page that fetched but did not
//! normalize is a failed page (summary, exit status, `crawl.jsonl`), and the
//! snapshot is not silently smaller.

use crate::common;

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
    build_leapview(&mirror.url, &t.path().join("out"), extra)
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

/// Artifact directories of one (source, version) a server would consider.
fn visible_artifacts(
    out: &std::path::Path,
    source: &str,
    version: &str,
) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(out.join(source).join(version)) else {
        return Vec::new();
    };
    let mut v: Vec<_> = rd
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// Run docsnap and kill -9 it after `ms` milliseconds (if still running).
fn killed_after(args: &[&str], ms: u64) {
    let mut child = std::process::Command::new(common::docsnap())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("DOCSNAP_LOG", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn docsnap");
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let _ = child.kill(); // SIGKILL on Unix
    let _ = child.wait();
}

/// A few of `scripts/soak`'s crash trials: whatever moment a build or a
/// publish is killed at, everything visible verifies and the next run
/// completes. (The kill moments vary with the machine's speed; the checks
/// hold at any moment, which is the point.)
#[test]
fn kill_9_never_leaves_a_partial_artifact_or_publish() {
    let t = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let out = t.path().join("out");
    let pubdir = t.path().join("pub");
    let out_s = out.to_str().unwrap();
    let build = [
        "build",
        "--source",
        "leapview",
        "--mirror",
        &mirror.url,
        "--out",
        out_s,
        "--rate",
        "0",
    ];
    let (code, _, err) = run_docsnap(&build);
    assert_eq!(code, 0, "{err}");
    let mut forced = build.to_vec();
    forced.push("--force");
    for ms in [30, 120, 250, 400] {
        killed_after(&forced, ms);
        for v in ["3.1", "3.2"] {
            let dirs = visible_artifacts(&out, "leapview", v);
            assert!(!dirs.is_empty(), "the first snapshot of {v} is still there");
            for d in dirs {
                let (code, stdout, _) = run_docsnap(&["verify", d.to_str().unwrap()]);
                assert_eq!(
                    code,
                    0,
                    "killed after {ms} ms: {} is visible but does not verify\n{stdout}",
                    d.display()
                );
            }
        }
        let (code, _, err) = run_docsnap(&forced);
        assert_eq!(code, 0, "the run after a kill at {ms} ms completes\n{err}");
    }

    let snaps = visible_artifacts(&out, "leapview", "3.2");
    let pub_s = pubdir.to_str().unwrap();
    let first = snaps[0].to_str().unwrap();
    let (code, _, err) = run_docsnap(&["publish", first, "--to", pub_s]);
    assert_eq!(code, 0, "{err}");
    for (i, ms) in [5u64, 20, 60, 150].into_iter().enumerate() {
        let snap = snaps[(i + 1) % snaps.len()].to_str().unwrap();
        killed_after(&["publish", snap, "--to", pub_s], ms);
        let (code, stdout, _) = run_docsnap(&["verify", pub_s]);
        assert_eq!(
            code, 0,
            "publish killed after {ms} ms: the publish directory does not verify\n{stdout}"
        );
        let (code, _, err) = run_docsnap(&["publish", snap, "--to", pub_s]);
        assert_eq!(
            code, 0,
            "the publish after a kill at {ms} ms completes\n{err}"
        );
    }
}

/// `scripts/fault_proxy.py` in front of the mirror; killed when dropped.
struct FaultProxy {
    child: std::process::Child,
    url: String,
}

impl FaultProxy {
    fn start(upstream: &str, args: &[&str]) -> FaultProxy {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fault_proxy.py"))
            .arg(upstream)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start fault_proxy.py");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .expect(&line)
            .to_string();
        FaultProxy { child, url }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `docsnap build --source leapview` from `mirror` into `out`, rate off.
fn build_leapview(mirror: &str, out: &std::path::Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["build", "--source", "leapview", "--mirror", mirror, "--out"];
    args.push(out.to_str().unwrap());
    args.extend(["--rate", "0"]);
    args.extend_from_slice(extra);
    let (code, _, err) = run_docsnap(&args);
    (code, err)
}

/// robots.txt that cannot be read stops the crawl of its host: every page
/// is a failure (never requested), so the build fails instead of quietly
/// writing nothing and exiting 0.
#[test]
fn an_unavailable_robots_txt_fails_the_build() {
    let t = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let proxy = FaultProxy::start(&mirror.url, &["--robots-503"]);
    let out = t.path().join("out");
    let (code, err) = build_leapview(&proxy.url, &out, &["--retries", "0"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("robots.txt"), "the cause is named:\n{err}");
    assert!(visible_artifacts(&out, "leapview", "3.2").is_empty());
}

/// A page that stalls mid-body times out, is retried, and then fails the
/// build, naming the page; nothing is written.
#[test]
fn a_page_that_stalls_mid_body_fails_the_build() {
    let t = tempfile::tempdir().unwrap();
    let mirror = Mirror::start(None, &[]);
    let proxy = FaultProxy::start(&mirror.url, &["--stall", "/v3.2/cli/login"]);
    let out = t.path().join("out");
    let (code, err) = build_leapview(&proxy.url, &out, &["--timeout", "1", "--retries", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cli/login"), "the page is named:\n{err}");
    assert!(visible_artifacts(&out, "leapview", "3.2").is_empty());
    assert_eq!(
        visible_artifacts(&out, "leapview", "3.1").len(),
        1,
        "3.1 is unaffected"
    );
}

/// Write `bytes` as the artifact's file `name` and list it in the manifest
/// with its right sha256, as a writer with a defect would (or a hand that
/// recomputed the sums): the sums then prove nothing about the fit.
fn relist(artifact: &std::path::Path, name: &str, bytes: &[u8]) {
    std::fs::write(artifact.join(name), bytes).unwrap();
    let mpath = artifact.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["files"][name] = docsnap::util::sha256_hex(bytes).into();
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// `verify` and `publish` open an artifact as a server does. Files whose
/// sums match but that do not fit one another (link counts for one page of
/// three) are corruption, named, in an artifact directory and inside a
/// published archive; `publish` refuses them and moves nothing.
#[test]
fn verify_and_publish_refuse_an_artifact_no_server_could_load() {
    let t = tempfile::tempdir().unwrap();
    let art = common::synthetic(&t.path().join("a"), 3, "servable");
    let pubdir = t.path().join("pub");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (code, out, err) = run_docsnap(&["verify", &s(&art)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("load as a server loads them"), "{out}");
    let (code, out, err) = run_docsnap(&["publish", "--to", &s(&pubdir), &s(&art)]);
    assert_eq!(code, 0, "{out}{err}");
    let id = art.file_name().unwrap().to_str().unwrap().to_string();
    let vdir = pubdir.join("synthetic").join("1");
    let archive = vdir.join(format!("{id}.tar.zst"));
    let (code, out, err) = run_docsnap(&["verify", &s(&archive)]);
    assert_eq!(code, 0, "{out}{err}");

    let unfit = br#"{"sections":[0],"pages":[0]}"#;
    relist(&art, "links.json", unfit);
    let (code, out, err) = run_docsnap(&["verify", &s(&art)]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("CORRUPT") && out.contains("links.json: link counts do not match"),
        "{out}"
    );
    let latest = std::fs::read(vdir.join("latest")).unwrap();
    let (code, out, err) = run_docsnap(&["publish", "--to", &s(&pubdir), &s(&art)]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("links.json"), "{err}");
    assert_eq!(std::fs::read(vdir.join("latest")).unwrap(), latest);
    let archives = std::fs::read_dir(&vdir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".tar.zst")
        })
        .count();
    assert_eq!(archives, 1, "nothing more was published");

    // The same artifact packed into the published archive, its sums
    // recomputed: `verify` names the archive and the file inside it.
    {
        let f = std::fs::File::create(&archive).unwrap();
        let enc = zstd::Encoder::new(f, 3).unwrap().auto_finish();
        let mut tar = tar::Builder::new(enc);
        tar.append_dir_all(&id, &art).unwrap();
        tar.into_inner().unwrap();
    }
    let sum = docsnap::util::sha256_hex(&std::fs::read(&archive).unwrap());
    std::fs::write(
        vdir.join(format!("{id}.SHA256SUMS")),
        format!("{sum}  {id}.tar.zst\n"),
    )
    .unwrap();
    std::fs::copy(
        art.join("manifest.json"),
        vdir.join(format!("{id}.manifest.json")),
    )
    .unwrap();
    let (code, out, err) = run_docsnap(&["verify", &s(&archive)]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("{id}.tar.zst: links.json inside does not load")),
        "{out}"
    );
}
