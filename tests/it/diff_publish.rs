//! Issue 5: reproducible builds, `docsnap diff`, `publish`, `verify` and
//! `rebuild`, against the mirrors (LeapView 3.1/3.2, the two dated Claude Code
//! copies) and synthetic artifacts.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{copy_dir, only_artifact, read_jsonl, run_docsnap, shared, synthetic, Mirror};
use docsnap::artifact;

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// `docsnap build --source SOURCE` from `mirror` into `out`, unthrottled.
fn build(mirror: &Mirror, source: &str, out: &Path) {
    common::build_with(mirror, out, &[source], &[]);
}

/// Every artifact directory of out/source/version, oldest first.
fn artifacts_of(out: &Path, source: &str, version: &str) -> Vec<PathBuf> {
    let dir = out.join(source).join(version);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    v.sort();
    v
}

fn json_of(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

fn strings(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("string").to_string())
        .collect()
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
        .expect("manifest JSON")
}

/// `docsnap changes` and the server's `docs_changes` name the same pages as
/// the `docsnap diff --format json` output `d`, with the same changed
/// sections; returns the tool's answer.
fn assert_changes_match_diff(
    artifacts: &Path,
    product: &str,
    since: &str,
    d: &serde_json::Value,
) -> serde_json::Value {
    let (code, stdout, err) = run_docsnap(&[
        "changes",
        "--artifacts",
        s(artifacts),
        "--product",
        product,
        "--since",
        since,
        "--limit",
        "1000",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "something changed, so exit 1\n{err}");
    let c = json_of(&stdout);
    let urls = |v: &serde_json::Value, k: &str| -> BTreeSet<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x[k].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(urls(&c["added"], "url"), strings(&d["added"]), "added");
    assert_eq!(
        urls(&c["removed"], "url"),
        strings(&d["removed"]),
        "removed"
    );
    assert_eq!(
        urls(&c["moved"], "from_url"),
        urls(&d["moved"], "from"),
        "moved from"
    );
    assert_eq!(
        urls(&c["moved"], "url"),
        urls(&d["moved"], "to"),
        "moved to"
    );
    assert_eq!(
        urls(&c["changed"], "url"),
        urls(&d["changed"], "url"),
        "changed"
    );
    for (k, list) in [
        ("added", "added"),
        ("removed", "removed"),
        ("moved", "moved"),
        ("changed", "changed"),
    ] {
        assert_eq!(c["counts"][k], d[list].as_array().unwrap().len(), "{k}");
    }
    assert_eq!(c["truncated"], false);
    assert_eq!(c["from"]["snapshot_id"], d["from"]);
    assert_eq!(c["to"]["snapshot_id"], d["to"]);
    // Each changed page: the same sections, in the same order, with excerpts.
    for cp in c["changed"].as_array().unwrap() {
        let dp = d["changed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["url"] == cp["url"])
            .unwrap();
        let anchors = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    format!(
                        "{}:{}",
                        x["anchor"].as_str().unwrap(),
                        x["change"].as_str().unwrap()
                    )
                })
                .collect()
        };
        let want: Vec<String> = anchors(&dp["sections"]).into_iter().take(12).collect();
        assert_eq!(anchors(&cp["sections"]), want, "{}", cp["url"]);
        assert_eq!(
            cp["sections_changed"],
            dp["sections"].as_array().unwrap().len()
        );
        for sc in cp["sections"].as_array().unwrap() {
            let e = sc["excerpt"].as_str().unwrap();
            assert!(
                e.starts_with("+ ") || e.starts_with("- ") || e.is_empty(),
                "{e}"
            );
        }
    }
    // The tool over MCP names the same pages, its answer bounded in size:
    // on a large change it carries less of each page, never other pages.
    let mut srv = common::StdioClient::spawn(&["serve", "--stdio", "--artifacts", s(artifacts)]);
    srv.handshake();
    let r = srv.call(
        "docs_changes",
        serde_json::json!({"product": product, "since": since, "limit": 1000}),
    );
    let t = &r["result"]["structuredContent"];
    assert!(
        t.to_string().len() <= 40_000,
        "{} bytes",
        t.to_string().len()
    );
    for k in ["product", "from", "to", "counts", "truncated"] {
        assert_eq!(t[k], c[k], "{k}");
    }
    for (k, u) in [
        ("added", "url"),
        ("removed", "url"),
        ("moved", "url"),
        ("changed", "url"),
    ] {
        assert_eq!(urls(&t[k], u), urls(&c[k], u), "{k}");
    }
    for (tp, cp) in t["changed"]
        .as_array()
        .unwrap()
        .iter()
        .zip(c["changed"].as_array().unwrap())
    {
        let (ts, cs) = (
            tp["sections"].as_array().unwrap(),
            cp["sections"].as_array().unwrap(),
        );
        assert!(ts.len() <= cs.len());
        for (a, b) in ts.iter().zip(cs) {
            assert_eq!(a["anchor"], b["anchor"]);
            let (ea, eb) = (
                a["excerpt"].as_str().unwrap(),
                b["excerpt"].as_str().unwrap(),
            );
            assert!(
                ea.is_empty() || eb.starts_with(ea.trim_end_matches(" …")),
                "{ea:?} vs {eb:?}"
            );
        }
    }
    c
}

/// `*.html` pages of a LeapView version folder, keyed by path, without the
/// version landing page: the `<article>` element with the version's link
/// prefix (`/v3.1/`) made neutral.
fn leapview_articles(version: &str) -> BTreeMap<String, String> {
    let root = shared()
        .join("sites/docs.leapview.example")
        .join(format!("v{version}"));
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read mirror") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let Some(path) = rel.strip_suffix(".html") else {
                continue;
            };
            if path == "index" {
                continue;
            }
            let html = std::fs::read_to_string(&p).expect("read page");
            let start = html.find("<article").expect("an <article>");
            let end = html[start..].find("</article>").expect("</article>") + start;
            let article = html[start..end].replace(&format!("/v{version}/"), "/vX/");
            out.insert(path.to_string(), article);
        }
    }
    out
}

#[test]
fn leapview_builds_are_reproducible_and_the_diff_names_what_changed() {
    let mirror = Mirror::start(None, &[]);
    let t = tempfile::tempdir().unwrap();
    let (out1, out2) = (t.path().join("out1"), t.path().join("out2"));
    build(&mirror, "leapview", &out1);
    build(&mirror, "leapview", &out2);
    // A second build into out1 finds nothing changed: it keeps the snapshot
    // it has and says so, writing nothing.
    let err = common::build_with(&mirror, &out1, &["leapview"], &[]);
    assert_eq!(err.matches("unchanged: ").count(), 2, "{err}");
    for v in ["3.1", "3.2"] {
        assert_eq!(artifacts_of(&out1, "leapview", v).len(), 1);
    }
    // Forced, it writes a new snapshot, incrementally (every page answers 304).
    common::build_with(&mirror, &out1, &["leapview"], &["--force"]);

    // 1. Same content, same hash and the same bytes, fresh or incremental.
    for v in ["3.1", "3.2"] {
        let a = artifacts_of(&out1, "leapview", v);
        assert_eq!(a.len(), 2, "{a:?}");
        let b = only_artifact(&out2, "leapview", v);
        for other in [&a[1], &b] {
            assert_eq!(
                manifest(&a[0])["content_sha256"],
                manifest(other)["content_sha256"],
                "{v}: content_sha256 differs between {} and {}",
                a[0].display(),
                other.display()
            );
            for f in ["pages.jsonl", "sections.jsonl"] {
                assert!(
                    std::fs::read(a[0].join(f)).unwrap() == std::fs::read(other.join(f)).unwrap(),
                    "{v}: {f} differs between {} and {}",
                    a[0].display(),
                    other.display()
                );
            }
        }
    }

    // 2. The expected difference, from the mirror's HTML.
    let (h31, h32) = (leapview_articles("3.1"), leapview_articles("3.2"));
    let only31: BTreeSet<&String> = h31.keys().filter(|k| !h32.contains_key(*k)).collect();
    let only32: BTreeSet<&String> = h32.keys().filter(|k| !h31.contains_key(*k)).collect();
    let body = |a: &str| a[a.find("doc-markdown").unwrap_or(0)..].to_string();
    let mut moved_exp: BTreeSet<(String, String)> = BTreeSet::new();
    for a in &only31 {
        for b in &only32 {
            if body(&h31[*a]) == body(&h32[*b]) {
                moved_exp.insert((a.to_string(), b.to_string()));
            }
        }
    }
    let moved_from: BTreeSet<&String> = moved_exp.iter().map(|(a, _)| a).collect();
    let moved_to: BTreeSet<&String> = moved_exp.iter().map(|(_, b)| b).collect();
    let url31 = |p: &str| format!("https://docs.leapview.example/v3.1/{p}");
    let url32 = |p: &str| format!("https://docs.leapview.example/v3.2/{p}");
    let removed_exp: BTreeSet<String> = only31
        .iter()
        .filter(|p| !moved_from.contains(*p))
        .map(|p| url31(p))
        .collect();
    let added_exp: BTreeSet<String> = only32
        .iter()
        .filter(|p| !moved_to.contains(*p))
        .map(|p| url32(p))
        .collect();
    let changed_exp: BTreeSet<String> = h31
        .iter()
        .filter(|(k, a)| h32.get(*k).is_some_and(|b| b != *a))
        .map(|(k, _)| url32(k))
        .collect();
    assert!(!changed_exp.is_empty() && !added_exp.is_empty() && !removed_exp.is_empty());
    assert_eq!(
        moved_exp.len(),
        1,
        "the mirror has one moved page: {moved_exp:?}"
    );

    let a31 = only_artifact(&out2, "leapview", "3.1");
    let a32 = only_artifact(&out2, "leapview", "3.2");
    let (code, stdout, err) = run_docsnap(&["diff", s(&a31), s(&a32), "--format", "json"]);
    assert_eq!(code, 1, "diff of different versions exits 1\n{err}");
    let d = json_of(&stdout);
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["from", "to", "added", "removed", "moved", "changed"]);
    assert_eq!(d["from"], manifest(&a31)["snapshot_id"]);
    assert_eq!(d["to"], manifest(&a32)["snapshot_id"]);
    assert_eq!(strings(&d["added"]), added_exp);
    assert_eq!(strings(&d["removed"]), removed_exp);
    let moved: BTreeSet<(String, String)> = d["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["from", "to"]);
            (
                m["from"].as_str().unwrap().to_string(),
                m["to"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let moved_exp_urls: BTreeSet<(String, String)> = moved_exp
        .iter()
        .map(|(a, b)| (url31(a), url32(b)))
        .collect();
    assert_eq!(moved, moved_exp_urls);
    let changed: BTreeSet<String> = d["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(changed, changed_exp, "changed pages");
    for c in d["changed"].as_array().unwrap() {
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["url", "sections"]);
        let secs = c["sections"].as_array().unwrap();
        assert!(!secs.is_empty(), "{c}");
        for sc in secs {
            let keys: Vec<&String> = sc.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["anchor", "change", "diff"]);
            let kind = sc["change"].as_str().unwrap();
            assert!(["added", "removed", "changed"].contains(&kind), "{kind}");
            let diff = sc["diff"].as_str().unwrap();
            assert!(
                diff.starts_with("--- ") && diff.contains("\n+++ ") && diff.contains("\n@@ "),
                "{diff}"
            );
            // Version-only link changes were normalized away: no changed line
            // differs from a removed one by the version segment alone.
            let minus: BTreeSet<&str> = diff.lines().filter_map(|l| l.strip_prefix('-')).collect();
            for plus in diff.lines().filter_map(|l| l.strip_prefix('+')) {
                assert!(
                    !minus.contains(plus.replace("/v3.2/", "/v3.1/").as_str())
                        || plus.contains("/v3.1/")
                );
            }
        }
    }
    // What changed since 3.1, asked as an agent would.
    assert_changes_match_diff(&out2, "leapview", "3.1", &d);

    eprintln!(
        "leapview 3.1 → 3.2: {} added, {} removed, {} moved, {} changed",
        added_exp.len(),
        removed_exp.len(),
        moved.len(),
        changed.len()
    );

    // Markdown and text renderings, and the exit statuses.
    let (code, md, _) = run_docsnap(&["diff", s(&a31), s(&a32), "--format", "markdown"]);
    assert_eq!(code, 1);
    for h in [
        "## Added\n",
        "## Removed\n",
        "## Moved\n",
        "## Changed\n",
        "```diff\n",
    ] {
        assert!(md.contains(h), "markdown lacks {h:?}");
    }
    assert!(
        md.contains("### [leapview publish](https://docs.leapview.example/v3.2/cli/publish)"),
        "{md}"
    );
    let (code, text, _) = run_docsnap(&["diff", s(&a31), s(&a32)]);
    assert_eq!(code, 1);
    assert!(text.contains(&format!(
        "{} added, {} removed, {} moved, {} changed",
        added_exp.len(),
        removed_exp.len(),
        moved.len(),
        changed.len()
    )));
    let again = only_artifact(&out1, "leapview", "3.2");
    let (code, text, _) = run_docsnap(&["diff", s(&a32), s(&again)]);
    assert_eq!(code, 0, "same content: exit 0\n{text}");
    assert!(text.contains("no differences"));
    let (code, _, err) = run_docsnap(&["diff", s(&a32), s(&t.path().join("nothing"))]);
    assert_eq!(code, 2, "a missing side is trouble: {err}");
    let (code, _, _) = run_docsnap(&["diff", s(&a32), s(&a32), "--format", "yaml"]);
    assert_eq!(code, 2);

    // Published archives diff the same as their directories.
    let pubdir = t.path().join("pub");
    for a in [&a31, &a32] {
        let (code, out, err) = run_docsnap(&["publish", s(a), "--to", s(&pubdir)]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let arch = |a: &Path, v: &str| {
        pubdir.join("leapview").join(v).join(format!(
            "{}.tar.zst",
            manifest(a)["snapshot_id"].as_str().unwrap()
        ))
    };
    let (code, stdout2, err) = run_docsnap(&[
        "diff",
        s(&arch(&a31, "3.1")),
        s(&arch(&a32, "3.2")),
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(json_of(&stdout2), d);
    let (code, out, _) = run_docsnap(&["verify", s(&pubdir)]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run_docsnap(&["verify", s(&arch(&a31, "3.1"))]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run_docsnap(&["verify", s(&a31)]);
    assert_eq!(code, 0, "{out}");
}

/// `.md` alternates of a Claude Code mirror, keyed by page path.
fn claude_md_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let base = root.join("code.claude.com/docs/en");
    let mut out = BTreeMap::new();
    let mut stack = vec![base.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read mirror") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(rel) = p
                .strip_prefix(&base)
                .unwrap()
                .to_str()
                .and_then(|r| r.strip_suffix(".md"))
            {
                out.insert(rel.replace('\\', "/"), std::fs::read(&p).expect("read md"));
            }
        }
    }
    out
}

#[test]
fn claude_code_dated_mirrors_diff_matches_the_markdown_files() {
    let old_root = shared().join("sites-history/2026-05-22");
    let new_root = shared().join("sites");
    let t = tempfile::tempdir().unwrap();
    let (old_out, new_out) = (t.path().join("old"), t.path().join("new"));
    {
        let m = Mirror::start(Some(&old_root), &[]);
        build(&m, "claude-code", &old_out);
    }
    {
        let m = Mirror::start(Some(&new_root), &[]);
        build(&m, "claude-code", &new_out);
    }
    let a = only_artifact(&old_out, "claude-code", "current");
    let b = only_artifact(&new_out, "claude-code", "current");
    let (code, stdout, err) = run_docsnap(&["diff", s(&a), s(&b), "--format", "json"]);
    assert_eq!(code, 1, "{err}");
    let d = json_of(&stdout);

    // Independently: which .md files were added, removed, changed.
    let (mo, mn) = (claude_md_files(&old_root), claude_md_files(&new_root));
    let url = |p: &str| format!("https://code.claude.com/docs/en/{p}");
    let added_exp: BTreeSet<String> = mn
        .keys()
        .filter(|k| !mo.contains_key(*k))
        .map(|k| url(k))
        .collect();
    let removed_exp: BTreeSet<String> = mo
        .keys()
        .filter(|k| !mn.contains_key(*k))
        .map(|k| url(k))
        .collect();
    let changed_md: BTreeSet<String> = mo
        .iter()
        .filter(|(k, v)| mn.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| url(k))
        .collect();
    assert_eq!(strings(&d["added"]), added_exp);
    assert_eq!(strings(&d["removed"]), removed_exp);
    assert_eq!(d["moved"], serde_json::json!([]));
    let changed: BTreeSet<String> = d["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap().to_string())
        .collect();
    assert!(
        changed.is_subset(&changed_md),
        "changed pages whose .md did not change: {:?}",
        changed.difference(&changed_md).collect::<Vec<_>>()
    );
    // A page whose .md changed but the diff calls unchanged must be one the
    // normalizer turned into the same record on both sides.
    let pages = |dir: &Path| -> BTreeMap<String, (String, String, String)> {
        read_jsonl(&dir.join("pages.jsonl"))
            .into_iter()
            .map(|p| {
                let f = |k: &str| p[k].as_str().unwrap_or_default().to_string();
                (f("url"), (f("title"), f("description"), f("markdown")))
            })
            .collect()
    };
    let (pa, pb) = (pages(&a), pages(&b));
    let missed: Vec<&String> = changed_md.difference(&changed).collect();
    for u in &missed {
        assert_eq!(
            pa.get(*u),
            pb.get(*u),
            "{u}: the records differ but the diff says unchanged"
        );
    }
    assert!(
        missed.len() <= 2,
        "too many changed .md files lost in normalization: {missed:?}"
    );
    eprintln!(
        "claude-code 2026-05-22 → 2026-08-22: {} added, {} removed, 0 moved, {} changed ({} .md files changed; same record after normalization: {missed:?})",
        added_exp.len(),
        removed_exp.len(),
        changed.len(),
        changed_md.len()
    );
    assert_eq!(
        (added_exp.len(), removed_exp.len(), changed_md.len()),
        (52, 3, 137),
        "PROVENANCE's figures"
    );

    // Both snapshots under one artifacts directory: what changed since the
    // older one, named by id, by its creation time, and by a date before both.
    copy_dir(
        &a,
        &new_out
            .join("claude-code/current")
            .join(a.file_name().unwrap()),
    );
    let old_id = manifest(&a)["snapshot_id"].as_str().unwrap().to_string();
    let c = assert_changes_match_diff(&new_out, "claude-code", &old_id, &d);
    assert_eq!(c["to"]["snapshot_id"], manifest(&b)["snapshot_id"]);
    let created = manifest(&a)["created_at"].as_str().unwrap().to_string();
    assert_changes_match_diff(&new_out, "claude-code", &created, &d);
    let (code, _, err) = run_docsnap(&[
        "changes",
        "--artifacts",
        s(&new_out),
        "--product",
        "claude-code",
        "--since",
        "2026-05-22",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no snapshot of claude-code current was made by 2026-05-22"),
        "{err}"
    );
    // A path narrows the lists and keeps whole counts for what it covers.
    let (code, stdout, err) = run_docsnap(&[
        "changes",
        "--artifacts",
        s(&new_out),
        "--product",
        "claude-code",
        "--since",
        &old_id,
        "--path",
        "docs/en/hooks",
        "--format",
        "json",
    ]);
    assert!(code <= 1, "{err}");
    let narrowed = json_of(&stdout);
    for list in ["added", "removed", "changed"] {
        for p in narrowed[list].as_array().unwrap() {
            assert!(
                p["url"]
                    .as_str()
                    .unwrap()
                    .starts_with("https://code.claude.com/docs/en/hooks"),
                "{p}"
            );
        }
    }
}

fn latest_of(pubdir: &Path, source: &str, version: &str) -> Option<String> {
    std::fs::read_to_string(pubdir.join(source).join(version).join("latest"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn archives_in(pubdir: &Path, source: &str, version: &str) -> BTreeSet<String> {
    std::fs::read_dir(pubdir.join(source).join(version))
        .map(|rd| {
            rd.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_suffix(".tar.zst")
                    .map(str::to_string)
            })
            .collect()
        })
        .unwrap_or_default()
}

#[test]
fn rebuild_publishes_only_what_changed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("sites");
    copy_dir(
        &shared().join("sites/docs.leapview.example"),
        &root.join("docs.leapview.example"),
    );
    let mirror = Mirror::start(Some(&root), &[]);
    let (out, pubdir) = (t.path().join("out"), t.path().join("pub"));
    let rebuild = |extra: &[&str]| {
        let mut args = vec![
            "rebuild",
            "--source",
            "leapview",
            "--publish-to",
            s(&pubdir),
            "--out",
            s(&out),
            "--mirror",
            &mirror.url,
            "--rate",
            "0",
        ];
        args.extend_from_slice(extra);
        run_docsnap(&args)
    };

    // First run: everything is new.
    let (code, stdout, err) = rebuild(&[]);
    assert_eq!(code, 3, "first publish exits 3\n{stdout}{err}");
    let first31 = latest_of(&pubdir, "leapview", "3.1").expect("3.1 latest");
    let first32 = latest_of(&pubdir, "leapview", "3.2").expect("3.2 latest");
    let catalog = |p: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p.join("index.json")).unwrap()).unwrap()
    };
    assert_eq!(catalog(&pubdir)["snapshots"].as_array().unwrap().len(), 2);
    let first_report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            pubdir
                .join("leapview/3.2")
                .join(format!("{first32}.diff.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(first_report["from"], serde_json::Value::Null);
    assert_eq!(first_report["added"].as_array().unwrap().len(), 48);

    // Unchanged mirror: nothing new.
    let (code, stdout, err) = rebuild(&[]);
    assert_eq!(code, 0, "unchanged rebuild exits 0\n{stdout}{err}");
    assert!(stdout.contains("unchanged"), "{stdout}");
    assert_eq!(catalog(&pubdir)["snapshots"].as_array().unwrap().len(), 2);
    assert_eq!(
        archives_in(&pubdir, "leapview", "3.2"),
        BTreeSet::from([first32.clone()])
    );
    assert_eq!(
        latest_of(&pubdir, "leapview", "3.2").as_deref(),
        Some(first32.as_str())
    );

    // One page edited: one new 3.2 snapshot whose report names that page.
    let page = root.join("docs.leapview.example/v3.2/cli/login.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let i = html
        .find("<div class=\"doc-markdown\"")
        .expect("doc-markdown");
    let j = html[i..].find("<p>").expect("a paragraph") + i + 3;
    let edited = format!("{}Edited for the rebuild test. {}", &html[..j], &html[j..]);
    std::fs::write(&page, edited).unwrap();
    let report = t.path().join("report.md");
    let (code, stdout, err) = rebuild(&["--report", s(&report)]);
    assert_eq!(code, 3, "a change exits 3\n{stdout}{err}");
    let new32 = latest_of(&pubdir, "leapview", "3.2").unwrap();
    assert_ne!(new32, first32);
    // The pages answered 304 kept their feedback counts from the first
    // snapshot: the same as counting the new snapshot's sections.
    let art = out.join("leapview/3.2").join(&new32);
    let records: Vec<docsnap::model::Section> = std::fs::read_to_string(art.join("sections.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let counted = docsnap::index::UnitTerms::from_bytes(
        &std::fs::read(art.join("unit_terms.bin")).unwrap(),
        records.len(),
    )
    .unwrap();
    let starts = docsnap::section::unit_starts(&records);
    assert_eq!(
        counted,
        docsnap::index::UnitTerms::compute(&records, &starts)
    );
    assert_eq!(
        latest_of(&pubdir, "leapview", "3.1").as_deref(),
        Some(first31.as_str())
    );
    assert_eq!(
        archives_in(&pubdir, "leapview", "3.2"),
        BTreeSet::from([first32.clone(), new32.clone()])
    );
    assert_eq!(
        archives_in(&pubdir, "leapview", "3.1"),
        BTreeSet::from([first31.clone()])
    );
    let vdir = pubdir.join("leapview/3.2");
    let dj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vdir.join(format!("{new32}.diff.json"))).unwrap())
            .unwrap();
    assert_eq!(dj["from"], serde_json::json!(first32));
    assert_eq!(dj["to"], serde_json::json!(new32));
    assert_eq!(dj["added"], serde_json::json!([]));
    assert_eq!(dj["removed"], serde_json::json!([]));
    assert_eq!(dj["moved"], serde_json::json!([]));
    let changed = dj["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{dj}");
    assert_eq!(
        changed[0]["url"],
        "https://docs.leapview.example/v3.2/cli/login"
    );
    assert!(changed[0]["sections"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("+Edited for the rebuild test."));
    let md = std::fs::read_to_string(vdir.join(format!("{new32}.diff.md"))).unwrap();
    assert!(
        md.contains("[leapview login](https://docs.leapview.example/v3.2/cli/login)"),
        "{md}"
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap().trim(), md.trim());
    // The sums cover the reports too.
    let sums = std::fs::read_to_string(vdir.join(format!("{new32}.SHA256SUMS"))).unwrap();
    for suffix in ["tar.zst", "manifest.json", "diff.md", "diff.json"] {
        assert!(sums.contains(&format!("  {new32}.{suffix}\n")), "{sums}");
    }
    let (code, out, _) = run_docsnap(&["verify", s(&pubdir)]);
    assert_eq!(code, 0, "{out}");

    // The working directory keeps the two newest artifacts per version.
    assert_eq!(
        artifacts_of(&t.path().join("out"), "leapview", "3.2").len(),
        2
    );

    // --keep 1 prunes the older 3.2 snapshot but never the latest.
    let (code, stdout, err) = rebuild(&["--keep", "1"]);
    assert_eq!(code, 0, "{stdout}{err}");
    assert_eq!(
        archives_in(&pubdir, "leapview", "3.2"),
        BTreeSet::from([new32.clone()])
    );
    assert!(!vdir.join(format!("{first32}.diff.md")).exists());
    assert_eq!(catalog(&pubdir)["snapshots"].as_array().unwrap().len(), 2);
    let (code, out, _) = run_docsnap(&["verify", s(&pubdir)]);
    assert_eq!(code, 0, "{out}");

    // The server's view: latest ids and verified unpacked artifacts.
    let ids = docsnap::publish::latest_ids(&pubdir).unwrap();
    assert_eq!(
        ids.get(&("leapview".to_string(), "3.2".to_string())),
        Some(&new32)
    );
    let cache = t.path().join("cache");
    let m = docsnap::publish::materialize_latest(&pubdir, &cache).unwrap();
    assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    assert_eq!(m.artifacts.len(), 2);
    assert!(m
        .artifacts
        .contains(&cache.join("leapview/3.2").join(&new32)));
    for a in &m.artifacts {
        docsnap::search::LoadedSource::open(a).expect("loads");
    }
    // Again: reused, still the same.
    let m2 = docsnap::publish::materialize_latest(&pubdir, &cache).unwrap();
    assert_eq!(m2.artifacts, m.artifacts);

    // Corruption is exit 1 and names the file; trouble is exit 2.
    let archive = vdir.join(format!("{new32}.tar.zst"));
    let mut bytes = std::fs::read(&archive).unwrap();
    let k = bytes.len() / 2;
    bytes[k] ^= 0x55;
    std::fs::write(&archive, bytes).unwrap();
    let (code, out, _) = run_docsnap(&["verify", s(&pubdir)]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("CORRUPT {}", archive.display())),
        "{out}"
    );
    let (code, _, _) = run_docsnap(&["verify", s(&archive)]);
    assert_eq!(code, 1);
    let m3 = docsnap::publish::materialize_latest(&pubdir, &t.path().join("cache2")).unwrap();
    assert_eq!(m3.artifacts.len(), 1, "the corrupt snapshot is not served");
    assert_eq!(m3.skipped.len(), 1);
    let (code, _, _) = run_docsnap(&["verify", s(&t.path().join("missing"))]);
    assert_eq!(code, 2);
    // A publish directory that is a file: the build succeeds, publishing is trouble.
    let file = t.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let (code, stdout, _) = run_docsnap(&[
        "rebuild",
        "--source",
        "leapview",
        "--publish-to",
        s(&file),
        "--out",
        s(&t.path().join("out")),
        "--mirror",
        &mirror.url,
        "--rate",
        "0",
    ]);
    assert_eq!(code, 2, "{stdout}");
    // Nothing to crawl: a build failure.
    let empty = tempfile::tempdir().unwrap();
    let dead = Mirror::start(Some(empty.path()), &[]);
    let (code, stdout, _) = run_docsnap(&[
        "rebuild",
        "--source",
        "leapview",
        "--publish-to",
        s(&pubdir),
        "--out",
        s(&t.path().join("out-dead")),
        "--mirror",
        &dead.url,
        "--rate",
        "0",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("BUILD FAILED"), "{stdout}");
    drop(dead);

    // The damaged latest is replaced by the next rebuild (reported as trouble).
    let (code, stdout, err) = rebuild(&[]);
    assert_eq!(code, 2, "{stdout}{err}");
    assert!(stdout.contains("damaged"), "{stdout}");
    // The build found nothing changed, so the same snapshot is published
    // again, whole, in place of the damaged copy.
    let healed = latest_of(&pubdir, "leapview", "3.2").unwrap();
    assert_eq!(
        archives_in(&pubdir, "leapview", "3.2"),
        BTreeSet::from([healed])
    );
    let (code, out, _) = run_docsnap(&["verify", s(&pubdir)]);
    assert_eq!(code, 0, "{out}");
    let (code, _, _) = rebuild(&[]);
    assert_eq!(code, 0);
}

fn snapshot_id(dir: &Path) -> String {
    manifest(dir)["snapshot_id"].as_str().unwrap().to_string()
}

/// After an interrupted publish: the directory verifies, `latest` names one
/// of `allowed`, and that snapshot unpacks and loads.
fn assert_consistent(pubdir: &Path, allowed: &[&str], what: &str) {
    let (code, out, err) = run_docsnap(&["verify", s(pubdir)]);
    assert_eq!(code, 0, "{what}: verify failed\n{out}{err}");
    let latest = latest_of(pubdir, "synthetic", "1").unwrap_or_else(|| panic!("{what}: no latest"));
    assert!(
        allowed.contains(&latest.as_str()),
        "{what}: latest is {latest}, not one of {allowed:?}"
    );
    let archive = pubdir.join("synthetic/1").join(format!("{latest}.tar.zst"));
    let (code, out, _) = run_docsnap(&["verify", s(&archive)]);
    assert_eq!(code, 0, "{what}: latest archive\n{out}");
    let cache = tempfile::tempdir().unwrap();
    let m = docsnap::publish::materialize_latest(pubdir, cache.path()).unwrap();
    assert!(m.skipped.is_empty(), "{what}: {:?}", m.skipped);
    assert_eq!(m.artifacts.len(), 1);
    let a = artifact::load(&m.artifacts[0]).unwrap();
    assert_eq!(a.manifest.snapshot_id, latest);
}

#[test]
fn a_publish_killed_at_any_point_leaves_latest_complete() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let v1 = synthetic(&out, 120, "one");
    let v2 = synthetic(&out, 120, "two");
    let v3 = synthetic(&out, 120, "three");
    let (id1, id2, id3) = (snapshot_id(&v1), snapshot_id(&v2), snapshot_id(&v3));
    let base = t.path().join("base");
    for v in [&v1, &v2] {
        let (code, o, e) = run_docsnap(&["publish", s(v), "--to", s(&base)]);
        assert_eq!(code, 0, "{o}{e}");
    }
    let (code, o, _) = run_docsnap(&["publish", s(&v2), "--to", s(&base)]);
    assert_eq!(code, 0);
    assert!(
        o.contains("nothing published"),
        "same content again adds nothing: {o}"
    );
    assert_eq!(
        archives_in(&base, "synthetic", "1"),
        BTreeSet::from([id1.clone(), id2.clone()])
    );
    // Publishing v1 again: no new archive, latest goes back to it.
    let back = t.path().join("back");
    copy_dir(&base, &back);
    let (code, o, _) = run_docsnap(&["publish", s(&v1), "--to", s(&back)]);
    assert_eq!(code, 0);
    assert!(o.contains("no new archive"), "{o}");
    assert_eq!(
        latest_of(&back, "synthetic", "1").as_deref(),
        Some(id1.as_str())
    );

    // Failure injected at every step of publishing v3 with --keep 1 (so the
    // prune steps run too): latest is v2 or v3, never anything broken.
    let steps = [
        "archive-temp",
        "archive",
        "manifest",
        "attachments",
        "sums",
        "catalog",
        "latest-temp",
        "latest",
        "prune-catalog",
        "prune-files",
    ];
    for step in steps {
        let dir = t.path().join(format!("crash-{step}"));
        copy_dir(&base, &dir);
        let st = Command::new(common::docsnap())
            .args(["publish", s(&v3), "--to", s(&dir), "--keep", "1"])
            .env("DOCSNAP_LOG", "warn")
            .env(docsnap::publish::CRASH_ENV, step)
            .output()
            .unwrap();
        assert_eq!(
            st.status.code(),
            Some(docsnap::publish::CRASH_EXIT),
            "{step}: did not stop at the step"
        );
        let want: &[&str] = match step {
            "archive-temp" | "archive" | "manifest" | "attachments" | "sums" | "catalog"
            | "latest-temp" => &[&id2],
            _ => &[&id3],
        };
        assert_consistent(&dir, want, step);
        // The next publish finishes the job and cleans up.
        let (code, o, e) = run_docsnap(&["publish", s(&v3), "--to", s(&dir), "--keep", "1"]);
        assert_eq!(code, 0, "{step}: {o}{e}");
        assert_consistent(&dir, &[&id3], step);
        let (_, vo, _) = run_docsnap(&["verify", s(&dir)]);
        assert!(!vo.contains("temporary"), "{step}: {vo}");
    }

    // Real kill -9 at a spread of moments.
    for delay_ms in [0u64, 5, 10, 20, 40, 80, 160] {
        let dir = t.path().join(format!("kill-{delay_ms}"));
        copy_dir(&base, &dir);
        let mut child = Command::new(common::docsnap())
            .args(["publish", s(&v3), "--to", s(&dir)])
            .env("DOCSNAP_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        assert_consistent(&dir, &[&id2, &id3], &format!("kill after {delay_ms} ms"));
    }
}

#[test]
fn publish_rejects_a_damaged_artifact() {
    let t = tempfile::tempdir().unwrap();
    let a = synthetic(&t.path().join("out"), 3, "damaged");
    let p = a.join("pages.jsonl");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push('\n');
    std::fs::write(&p, text).unwrap();
    let (code, _, err) = run_docsnap(&["publish", s(&a), "--to", s(&t.path().join("pub"))]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pages.jsonl"), "{err}");
    assert!(
        !t.path().join("pub/synthetic").exists()
            || archives_in(&t.path().join("pub"), "synthetic", "1").is_empty()
    );
    let (code, out, _) = run_docsnap(&["verify", s(&a)]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("pages.jsonl"), "{out}");
}
