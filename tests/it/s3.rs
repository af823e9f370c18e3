//! Publish directories on a real S3 API: moto's S3 server (from PyPI,
//! installed by scripts/test.sh) on loopback, no mocks of the client.
//! Publish, verify, two replicas serving from the bucket while a new snapshot
//! is published, a corrupt object refused by `verify` and by the replicas,
//! and two publishers racing on one `latest`.

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use docsnap::publish::remote::{Pulled, RemoteStore, Scope};

const BUCKET: &str = "docsnap-test";

/// moto's S3 server on a free loopback port; killed on drop.
struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    fn start() -> Moto {
        let ok = Command::new("python3")
            .args(["-c", "import moto.server"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "moto is not installed: scripts/test.sh installs it (python3 -m pip install 'moto[server]')"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto.server");
        let m = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while m.request("GET", "/").is_err() {
            assert!(Instant::now() < deadline, "moto never answered on {port}");
            std::thread::sleep(Duration::from_millis(200));
        }
        m
    }

    /// One unsigned request (moto does not check signatures); the status line.
    fn request(&self, method: &str, path: &str) -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out.lines().next().unwrap_or_default().to_string())
    }

    fn env(&self, cache: &Path) -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".into(), "test".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
            ("AWS_REGION".into(), "us-east-1".into()),
            (
                "AWS_ENDPOINT_URL".into(),
                format!("http://127.0.0.1:{}", self.port),
            ),
            (
                "XDG_CACHE_HOME".into(),
                cache.to_string_lossy().into_owned(),
            ),
        ]
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small artifact of product "synthetic", version 1, whose text depends
/// on `salt`, named a second after the previous one (snapshot ids carry the
/// build second, and the newest name is the newest snapshot).
fn synthetic_later(out: &Path, salt: &str) -> PathBuf {
    std::thread::sleep(Duration::from_millis(1100));
    synthetic(out, 3, salt)
}

fn snapshot_id(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// The snapshot ids /healthz lists for `source`.
fn served_ids(addr: &str, source: &str) -> Vec<String> {
    let h: serde_json::Value = serde_json::from_str(&http_get(addr, "/healthz")).unwrap();
    h["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == source)
        .map(|s| s["snapshot_id"].as_str().unwrap().to_string())
        .collect()
}

fn wait_until(what: &str, ok: &dyn Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn publish_verify_serve_and_race_on_a_real_s3_api() {
    let moto = Moto::start();
    assert!(
        moto.request("PUT", &format!("/{BUCKET}"))
            .unwrap()
            .contains("200"),
        "cannot create the bucket"
    );
    let url = format!("s3://{BUCKET}/team/docs");
    let tmp = tempfile::tempdir().unwrap();
    let env = moto.env(&tmp.path().join("publisher-cache"));
    // The in-process RemoteStore below reads the same environment.
    for (k, v) in &env {
        std::env::set_var(k, v);
    }

    // 1. Publish LeapView 3.1 to the bucket; verify it; publish again: nothing new.
    let mirror = Mirror::start(None, &[]);
    let built = tmp.path().join("built");
    build_from_mirror(&mirror, &built, &["leapview"]);
    let a31 = only_artifact(&built, "leapview", "3.1");
    let a32 = only_artifact(&built, "leapview", "3.2");
    let (code, out, err) = run_docsnap_env(&["publish", a31.to_str().unwrap(), "--to", &url], &env);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("published leapview/3.1/"), "{out}");
    let (code, out, err) = run_docsnap_env(&["verify", &url], &env);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run_docsnap_env(&["publish", a31.to_str().unwrap(), "--to", &url], &env);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("same content as latest"), "{out}");

    // 2. Two replicas serve from the bucket; clients call both while 3.2 is
    // published; both switch to it and no request fails.
    let caches: Vec<PathBuf> = (0..2)
        .map(|i| tmp.path().join(format!("replica-{i}")))
        .collect();
    let renv: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let replicas: Vec<Replica> = caches
        .iter()
        .map(|c| {
            Replica::start(
                &[
                    "--artifacts",
                    &url,
                    "--cache",
                    c.to_str().unwrap(),
                    "--reload-secs",
                    "1",
                ],
                &renv,
            )
        })
        .collect();
    for r in &replicas {
        assert_eq!(served_over_http(&r.addr).unwrap(), "3.1");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = replicas
        .iter()
        .map(|r| {
            let (addr, stop) = (r.addr.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    seen.push(served_over_http(&addr));
                }
                seen
            })
        })
        .collect();
    let (code, _, err) = run_docsnap_env(&["publish", a32.to_str().unwrap(), "--to", &url], &env);
    assert_eq!(code, 0, "{err}");
    for r in &replicas {
        wait_until("a replica serves 3.2", &|| {
            served_over_http(&r.addr).as_deref() == Ok("3.2")
        });
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for c in clients {
        let seen = c.join().unwrap();
        total += seen.len();
        let failed: Vec<&String> = seen.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(
            failed.is_empty(),
            "failed requests during the switch: {failed:?}"
        );
    }
    eprintln!("two replicas on s3: {total} requests during the switch, 0 failed");

    // A scheduled rebuild against the bucket finds nothing new to publish.
    let rebuilt = tmp.path().join("rebuilt");
    let (code, out, err) = run_docsnap_env(
        &[
            "rebuild",
            "--source",
            "leapview",
            "--mirror",
            &mirror.url,
            "--rate",
            "0",
            "--out",
            rebuilt.to_str().unwrap(),
            "--publish-to",
            &url,
        ],
        &env,
    );
    assert_eq!(code, 0, "unchanged: exit 0\n{out}{err}");

    // 3. A snapshot whose archive is damaged in the bucket: verify names it,
    // the replicas keep serving the one they have.
    let good = synthetic_later(&tmp.path().join("syn"), "good");
    let (code, _, err) = run_docsnap_env(&["publish", good.to_str().unwrap(), "--to", &url], &env);
    assert_eq!(code, 0, "{err}");
    for r in &replicas {
        wait_until("a replica serves the synthetic snapshot", &|| {
            served_ids(&r.addr, "synthetic") == [snapshot_id(&good)]
        });
    }
    let bad = synthetic_later(&tmp.path().join("syn"), "bad");
    let store = RemoteStore::open(&url).unwrap();
    let m = tmp.path().join("hand-mirror");
    let scope = Scope::Version {
        source: "synthetic".into(),
        version: "1".into(),
    };
    store.pull(&m, &scope).unwrap();
    let before = Pulled::of(&m, "synthetic", "1").unwrap();
    docsnap::publish::publish(&bad, &m, &Default::default()).unwrap();
    let archive = m.join(format!("synthetic/1/{}.tar.zst", snapshot_id(&bad)));
    let mut bytes = std::fs::read(&archive).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&archive, bytes).unwrap();
    store.push(&m, "synthetic", "1", &before).unwrap();
    let (code, out, err) = run_docsnap_env(&["verify", &url], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("{}.tar.zst", snapshot_id(&bad))),
        "{out}"
    );
    for r in &replicas {
        wait_until("a replica counts the refused snapshot", &|| {
            sample(
                &http_get(&r.addr, "/metrics"),
                "docsnap_rejected_artifacts_total",
            ) >= 1.0
        });
        assert_eq!(served_ids(&r.addr, "synthetic"), [snapshot_id(&good)]);
        assert_eq!(served_over_http(&r.addr).unwrap(), "3.2");
    }
    drop(replicas);

    // 4. Two publishers of one version race: both pulled the same `latest`;
    // the first to move it wins, the second is told it lost.
    let (x, y) = (
        synthetic_later(&tmp.path().join("race"), "x"),
        synthetic_later(&tmp.path().join("race"), "y"),
    );
    let (sa, sb) = (
        RemoteStore::open(&url).unwrap(),
        RemoteStore::open(&url).unwrap(),
    );
    let (ma, mb) = (tmp.path().join("pub-a"), tmp.path().join("pub-b"));
    sa.pull(&ma, &scope).unwrap();
    sb.pull(&mb, &scope).unwrap();
    let (ba, bb) = (
        Pulled::of(&ma, "synthetic", "1").unwrap(),
        Pulled::of(&mb, "synthetic", "1").unwrap(),
    );
    docsnap::publish::publish(&x, &ma, &Default::default()).unwrap();
    docsnap::publish::publish(&y, &mb, &Default::default()).unwrap();
    sa.push(&ma, "synthetic", "1", &ba).unwrap();
    let e = sb.push(&mb, "synthetic", "1", &bb).unwrap_err().to_string();
    assert!(
        e.contains("another publisher moved it to")
            && e.contains(&snapshot_id(&x))
            && e.contains("lost"),
        "{e}"
    );
    let check = tmp.path().join("check");
    RemoteStore::open(&url)
        .unwrap()
        .pull(&check, &Scope::All)
        .unwrap();
    assert_eq!(
        docsnap::publish::read_latest(&check.join("synthetic/1")).unwrap(),
        Some(snapshot_id(&x))
    );
    // The catalog kept both publishers' entries and every other version's.
    let cat = docsnap::publish::read_catalog(&check).unwrap();
    let ids: Vec<&str> = cat
        .snapshots
        .iter()
        .map(|e| e.snapshot_id.as_str())
        .collect();
    for a in [&a31, &a32, &x, &y] {
        assert!(ids.contains(&snapshot_id(a).as_str()), "{ids:?}");
    }
}
