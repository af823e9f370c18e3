//! The server driven by a real MCP client — the official Python SDK — over
//! stdio and over Streamable HTTP (`tests/py/mcp_sdk_client.py` does the
//! talking; `scripts/test.sh` installs the SDK).

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;

fn run_client(args: &[&str]) {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mcp_sdk_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .env("DOCSNAP_LOG", "warn")
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP Python SDK is not installed: run `pip install mcp` (scripts/test.sh does)"
    );
    print!("{stdout}");
    assert!(
        out.status.success(),
        "SDK client failed:\n{stdout}\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.ends_with(" 0 failed") && !last.starts_with("0 passed"),
        "{last}"
    );
}

#[test]
fn python_sdk_over_stdio_and_http() {
    let mirror = Mirror::start(None, &[]);
    let out = tempfile::tempdir().unwrap();
    let outs = out.path().to_str().unwrap();
    build_from_mirror(&mirror, out.path(), &["claude-code", "godot", "leapview"]);
    drop(mirror);
    let seeds = shared().join("seeds");
    let seeds = seeds.to_str().unwrap();
    let bin = docsnap();

    run_client(&[seeds, "stdio", bin.to_str().unwrap(), outs]);

    let mut server = Command::new(&bin)
        .args(["serve", "--http", "127.0.0.1:0", "--artifacts", outs])
        .env("DOCSNAP_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    run_client(&[seeds, "http", &url]);
    let _ = server.kill();
    let _ = server.wait();
}
