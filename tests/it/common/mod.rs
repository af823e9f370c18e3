//! Shared test support: the mirror server of `../shared/tools` on port 0, and
//! a line-oriented JSON-RPC client over a child's stdio.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// `../shared` beside the repository.
pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    assert!(
        p.join("tools/mirror_server.py").is_file(),
        "../shared/tools/mirror_server.py not found beside the repository"
    );
    p
}

/// Does the mirror hold a page for this public URL (by the mirror's file rules)?
pub fn mirrored(sites: &Path, url: &str) -> bool {
    let rest = url.split_once("://").unwrap().1;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let base = sites.join(host);
    let p = base.join(path);
    path.is_empty() && base.join("index.html").is_file()
        || p.is_file()
        || p.with_extension(
            p.extension()
                .map(|e| format!("{}.html", e.to_string_lossy()))
                .unwrap_or_else(|| "html".into()),
        )
        .is_file()
        || base.join(format!("{path}.html")).is_file()
        || p.join("index.html").is_file()
}

/// A running mirror server; stopped when dropped.
pub struct Mirror {
    child: Child,
    pub url: String,
}

impl Mirror {
    /// Start the mirror over `root` (default `../shared/sites`) with extra args.
    pub fn start(root: Option<&Path>, extra: &[&str]) -> Mirror {
        let shared = shared();
        let root = root
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| shared.join("sites"));
        let mut child = Command::new("python3")
            .arg(shared.join("tools/mirror_server.py"))
            .arg("--root")
            .arg(&root)
            .args(["--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mirror_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("read the mirror's first line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from mirror: {line:?}"))
            .to_string();
        Mirror { child, url }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copy a directory tree (a site of the mirror, to edit it in a test).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Path of the docsnap binary built for these tests.
pub fn docsnap() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_docsnap"))
}

/// Run `docsnap` with args from the repository root; returns (status, stdout, stderr).
pub fn run_docsnap(args: &[&str]) -> (i32, String, String) {
    run_docsnap_env(args, &[])
}

/// [`run_docsnap`] with extra environment variables (which may raise the
/// log level from its default, `DOCSNAP_LOG=warn`).
pub fn run_docsnap_env(args: &[&str], env: &[(String, String)]) -> (i32, String, String) {
    let out = Command::new(docsnap())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("DOCSNAP_LOG", "warn")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run docsnap");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `docsnap build --mirror URL --out OUT --rate 0 [--source S]...`, which must succeed.
pub fn build_from_mirror(mirror: &Mirror, out: &Path, sources: &[&str]) {
    build_with(mirror, out, sources, &[]);
}

/// `docsnap --config FILE build` from the mirror into `out`, rate off, with
/// `config` (a sources.yaml text) written to a temporary file; asserts
/// success and returns stderr (where the summary is).
pub fn build_with_config(mirror: &Mirror, config: &str, out: &Path) -> String {
    let cfg = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(cfg.path(), config).expect("write config");
    let (code, _, err) = run_docsnap(&[
        "--config",
        cfg.path().to_str().expect("utf-8 path"),
        "build",
        "--mirror",
        &mirror.url,
        "--out",
        out.to_str().expect("utf-8 path"),
        "--rate",
        "0",
    ]);
    assert_eq!(code, 0, "{err}");
    err
}

/// `docsnap build` of `sources` (all when empty) from the mirror into `out`,
/// rate off, with `extra` arguments; asserts success and returns stderr
/// (where the summary is).
pub fn build_with(mirror: &Mirror, out: &Path, sources: &[&str], extra: &[&str]) -> String {
    let mut args = vec![
        "build".to_string(),
        "--mirror".into(),
        mirror.url.clone(),
        "--out".into(),
        out.to_string_lossy().into_owned(),
        "--rate".into(),
        "0".into(),
    ];
    for s in sources {
        args.push("--source".into());
        args.push(s.to_string());
    }
    args.extend(extra.iter().map(|e| e.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run_docsnap(&args);
    assert_eq!(code, 0, "docsnap {args:?} failed:\n{err}");
    err
}

/// A JSON-RPC peer over a child process's stdin/stdout, one message a line.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    pub fn spawn(args: &[&str]) -> StdioClient {
        let mut child = Command::new(docsnap())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .env("DOCSNAP_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn docsnap serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        StdioClient {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    pub fn notify(&mut self, method: &str, params: serde_json::Value) {
        let m = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        writeln!(self.stdin, "{m}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Send a request and return its response (skipping notifications).
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        let m = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{m}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "server closed stdout while waiting for {method}");
            let v: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("non-JSON line on stdout ({e}): {line}"));
            if v.get("id") == Some(&serde_json::json!(id)) {
                return v;
            }
        }
    }

    /// initialize + notifications/initialized.
    pub fn handshake(&mut self) -> serde_json::Value {
        let r = self.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "docsnap-test", "version": "0"}
            }),
        );
        self.notify("notifications/initialized", serde_json::json!({}));
        r
    }

    pub fn call(&mut self, tool: &str, args: serde_json::Value) -> serde_json::Value {
        self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": args}),
        )
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read a JSON-lines file.
pub fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// The single artifact directory under `out/source/version`.
pub fn only_artifact(out: &Path, source: &str, version: &str) -> PathBuf {
    let dir = out.join(source).join(version);
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    snaps.sort();
    snaps.pop().expect("an artifact")
}

/// The embedding teacher (all-MiniLM-L6-v2) for dense-retrieval tests:
/// `$DOCSNAP_TEST_BERT`, else `scripts/fetch-model.sh`'s cache. `None` when
/// it is not on this machine — except under CI (`$CI` set), where
/// `scripts/test.sh` fetches it and its absence is a failure, not a skip.
pub fn teacher_dir() -> Option<PathBuf> {
    let p = std::env::var_os("DOCSNAP_TEST_BERT")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("DOCSNAP_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/docsnap"))
                })?;
            Some(cache.join("all-minilm-l6-v2"))
        })?;
    if p.join("model.safetensors").is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no embedding teacher at {} under CI: scripts/test.sh fetches it",
        p.display()
    );
    None
}

/// `GET path` on a plain HTTP/1.1 connection; the body.
pub fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The value of the sample `series` in a scrape, 0 when absent.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
        .unwrap_or(0.0)
}

/// A `serve --http` child on port 0; killed on drop.
pub struct Replica {
    child: std::process::Child,
    pub addr: String,
}

impl Replica {
    /// `docsnap serve --http 127.0.0.1:0 ARGS` with extra environment.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Replica {
        let mut child = std::process::Command::new(docsnap())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env("DOCSNAP_LOG", "error")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Replica { child, addr }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stateless MCP call over HTTP: the LeapView version `docs_search`
/// answered from, or why the request failed.
pub fn served_over_http(addr: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "docs_search", "arguments": {"query": "publish", "limit": 1}}})
    .to_string();
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut out = String::new();
    s.read_to_string(&mut out)
        .map_err(|e| format!("read: {e}"))?;
    let (head, body) = out.split_once("\r\n\r\n").ok_or("no HTTP head")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or_default().to_string());
    }
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))?;
    let id = v["result"]["structuredContent"]["matches"][0]["id"]
        .as_str()
        .ok_or_else(|| format!("no match in {v}"))?;
    Ok(id.split('/').nth(1).unwrap_or_default().to_string())
}

/// A synthetic artifact of `n` pages; `salt` changes every page's text.
pub fn synthetic(out: &Path, n: usize, salt: &str) -> PathBuf {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15
        ^ salt
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    let words = [
        "alpha", "beta", "gamma", "delta", "node", "signal", "export", "render", "queue", "token",
        "cache",
    ];
    let mut pages = Vec::new();
    let mut sections = Vec::new();
    for i in 0..n {
        let mut md = format!("Page {i} ({salt}).\n\n");
        for _ in 0..600 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            md.push_str(words[(seed >> 33) as usize % words.len()]);
            md.push(if (seed >> 20).is_multiple_of(13) {
                '\n'
            } else {
                ' '
            });
        }
        let url = format!("https://docs.example/v1/p{i:04}");
        let title = format!("Page {i}");
        sections.push(docsnap::model::Section {
            url: url.clone(),
            anchor: String::new(),
            heading_path: vec![title.clone()],
            level: 1,
            text: md.trim().to_string(),
            ordinal: 0,
            part: 0,
        });
        pages.push(docsnap::model::Page {
            sha256: docsnap::model::page_hash(&title, "", &md),
            url,
            title,
            description: String::new(),
            markdown: md,
            path: format!("p{i:04}"),
            etag: None,
            last_modified: None,
        });
    }
    let meta = docsnap::artifact::ArtifactMeta {
        source: "synthetic".into(),
        product: "synthetic".into(),
        version: "1".into(),
        ..Default::default()
    };
    docsnap::artifact::write(
        out,
        &meta,
        &pages,
        &sections,
        &[],
        &[],
        &docsnap::artifact::no_check,
    )
    .expect("write artifact")
}
