//! The MCP server end to end: JSON-RPC over an in-process stream (what stdio
//! carries) and over Streamable HTTP on port 0, against a small hand-made
//! library.

use std::sync::{Arc, RwLock};

use docsnap::model::{Counts, Manifest, Page, Section};
use docsnap::search::{Library, LibraryHandle, LoadedSource};
use docsnap::serve::{serve_io, serve_listener, DocsServer, HttpOptions, ToolFamily};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};

const HOOKS: &str = "https://code.claude.com/docs/en/hooks";
const MEMORY: &str = "https://code.claude.com/docs/en/memory";

fn manifest(snapshot_id: &str, pages: u64, sections: u64) -> Manifest {
    Manifest {
        schema_version: 1,
        tool_version: "test".into(),
        source: "claude-code".into(),
        product: "claude-code".into(),
        version: "latest".into(),
        snapshot_id: snapshot_id.into(),
        created_at: "2026-01-02T03:04:05Z".into(),
        counts: Counts { pages, sections },
        files: Default::default(),
        content_sha256: String::new(),
        embedding: None,
        page_kinds: Default::default(),
        records_fingerprint: None,
        tools: None,
        artifact_revision: None,
        editions: None,
        areas: Vec::new(),
        code_apart: false,
    }
}

fn page(url: &str, title: &str, description: &str) -> Page {
    Page {
        url: url.into(),
        title: title.into(),
        description: description.into(),
        markdown: String::new(),
        sha256: String::new(),
        path: String::new(),
        etag: None,
        last_modified: None,
    }
}

fn section(
    url: &str,
    path: &[&str],
    level: u8,
    anchor: &str,
    text: String,
    ordinal: u32,
) -> Section {
    Section {
        url: url.into(),
        anchor: anchor.into(),
        heading_path: path.iter().map(|s| s.to_string()).collect(),
        level,
        text,
        ordinal,
        part: 0,
    }
}

/// The long section's body: numbered lines, some with multi-byte characters.
fn long_body() -> String {
    (0..400)
        .map(|i| format!("Line {i:03}: hooks run before and after tools — ✓ ünïcödé\n"))
        .collect()
}

fn library() -> Library {
    let h = "Hooks reference";
    let sections = vec![
        section(
            HOOKS,
            &[h],
            1,
            "",
            "Hooks are shell commands run at points of Claude Code's lifecycle.".into(),
            0,
        ),
        section(
            HOOKS,
            &[h, "Hook events"],
            2,
            "hook-events",
            "## Hook events\n\nEvery event a hook can handle.".into(),
            1,
        ),
        section(
            HOOKS,
            &[h, "Hook events", "PreToolUse"],
            3,
            "pretooluse",
            "### PreToolUse\n\nRuns before a tool call; exit code 2 blocks it.".into(),
            2,
        ),
        section(
            HOOKS,
            &[h, "Hook events", "PreToolUse", "Input"],
            4,
            "input",
            "#### Input\n\nThe tool name and its input.".into(),
            3,
        ),
        section(
            HOOKS,
            &[h, "Hook events", "PostToolUse"],
            3,
            "posttooluse",
            "### PostToolUse\n\nRuns after a tool call.".into(),
            4,
        ),
        section(
            HOOKS,
            &[h, "Hook events", "PostToolUse", "Input"],
            4,
            "input-1",
            "#### Input\n\nThe tool response.".into(),
            5,
        ),
        section(
            HOOKS,
            &[h, "Debugging"],
            2,
            "debugging",
            format!("## Debugging\n\n{}", long_body()),
            6,
        ),
    ];
    let mut all = sections;
    all.push(section(
        MEMORY,
        &["Memory"],
        1,
        "",
        "CLAUDE.md files hold instructions.".into(),
        0,
    ));
    all.push(section(
        MEMORY,
        &["Memory", "Imports"],
        2,
        "imports",
        "## Imports\n\nImport files with @path/to/file.".into(),
        1,
    ));
    let pages = vec![
        page(HOOKS, h, "Reference for Claude Code hook events."),
        page(MEMORY, "Memory", "How Claude Code remembers instructions."),
    ];
    Library {
        sources: vec![LoadedSource::new(manifest("snap-1", 2, 9), pages, all)],
        ..Default::default()
    }
}

fn handle() -> LibraryHandle {
    Arc::new(RwLock::new(Arc::new(library())))
}

/// The seed's four JSON blocks (search_docs in/out, read_section in/out) and
/// its prose lines (family title, then the two tool descriptions).
fn seed() -> (Vec<Value>, Vec<String>) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/seeds/000_000f0cbc4671a749.txt"
    );
    let text = std::fs::read_to_string(path).expect("seed 000 beside the repository");
    let (mut blocks, mut prose, mut cur) = (Vec::new(), Vec::new(), None::<String>);
    for line in text.lines() {
        match cur.as_mut() {
            None if line == "{" => cur = Some(String::from("{\n")),
            None if !line.trim().is_empty() => prose.push(line.to_string()),
            None => {}
            Some(buf) => {
                buf.push_str(line);
                buf.push('\n');
                if line.starts_with('}') {
                    blocks.push(serde_json::from_str(buf).expect("seed JSON block"));
                    cur = None;
                }
            }
        }
    }
    assert_eq!(blocks.len(), 4);
    (blocks, prose)
}

/// A line-oriented JSON-RPC client over the in-process stream.
struct Client {
    lines: Lines<BufReader<ReadHalf<tokio::io::DuplexStream>>>,
    write: WriteHalf<tokio::io::DuplexStream>,
    next_id: u64,
}

impl Client {
    async fn start(lib: LibraryHandle) -> Client {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (r, w) = tokio::io::split(theirs);
        // The agent-docs family: the seed-000 contract this file checks.
        tokio::spawn(serve_io(
            DocsServer::new(lib, &[ToolFamily::AgentDocs]),
            r,
            w,
        ));
        let (read, write) = tokio::io::split(ours);
        let mut c = Client {
            lines: BufReader::new(read).lines(),
            write,
            next_id: 1,
        };
        let init = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "docsnap");
        assert!(init["result"]["capabilities"]["tools"].is_object());
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        c
    }

    async fn send(&mut self, msg: Value) {
        let line = format!("{msg}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.flush().await.unwrap();
    }

    /// Send a request; the response with its id (server notifications skipped).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line =
                tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line())
                    .await
                    .expect("response in time")
                    .unwrap()
                    .expect("server still open");
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == json!(id) {
                return msg;
            }
        }
    }

    async fn call(&mut self, tool: &str, args: Value) -> Value {
        let resp = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        resp["result"].clone()
    }

    /// A successful call's structured result, checked against its text twin.
    async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone()).await;
        assert_eq!(r["isError"], json!(false), "{tool} {args}: {r}");
        let content = r["content"].as_array().unwrap();
        assert_eq!(content.len(), 1);
        assert_eq!(content[0]["type"], "text");
        let text: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"]);
        r["structuredContent"].clone()
    }

    /// A failed call's message.
    async fn err(&mut self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args.clone()).await;
        assert_eq!(r["isError"], json!(true), "{tool} {args}: {r}");
        assert!(r.get("structuredContent").is_none());
        r["content"][0]["text"].as_str().unwrap().to_string()
    }
}

#[tokio::test]
async fn tools_list_matches_the_seed_exactly() {
    let (blocks, prose) = seed();
    let mut c = Client::start(handle()).await;
    let list = c.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search_docs", "read_section"]);
    for (i, t) in tools.iter().enumerate() {
        assert_eq!(t["inputSchema"], blocks[2 * i], "{} input", names[i]);
        assert_eq!(t["outputSchema"], blocks[2 * i + 1], "{} output", names[i]);
        assert_eq!(t["description"], prose[1 + i], "{} description", names[i]);
        assert_eq!(t["annotations"]["readOnlyHint"], true);
    }
}

#[tokio::test]
async fn read_section_outline_heading_and_paging() {
    let mut c = Client::start(handle()).await;
    let r = c.ok("read_section", json!({"url": HOOKS})).await;
    assert_eq!(r["title"], "Hooks reference");
    assert_eq!(r["description"], "Reference for Claude Code hook events.");
    assert_eq!(
        r["outline"],
        json!(["## Hook events (4 subsections)", "## Debugging"])
    );
    assert_eq!(r["heading"], Value::Null);
    assert_eq!(
        (r["text"].as_str(), &r["next_offset"], &r["total_chars"]),
        (Some(""), &Value::Null, &json!(0))
    );

    let r = c
        .ok(
            "read_section",
            json!({"url": format!("{HOOKS}.md"), "outline_depth": 3}),
        )
        .await;
    assert_eq!(
        r["url"], HOOKS,
        "the page URL, whatever spelling was passed"
    );
    assert_eq!(
        r["outline"],
        json!([
            "## Hook events (4 subsections)",
            "  ### PreToolUse (1 subsection)",
            "  ### PostToolUse (1 subsection)",
            "## Debugging"
        ])
    );

    let r = c
        .ok(
            "read_section",
            json!({"url": HOOKS, "heading": "## PreToolUse"}),
        )
        .await;
    assert_eq!(r["heading"], "Hook events > PreToolUse");
    assert_eq!(
        r["text"],
        "### PreToolUse\n\nRuns before a tool call; exit code 2 blocks it.\n\n#### Input\n\nThe tool name and its input."
    );
    assert_eq!(r["outline"], json!([]));
    let r = c
        .ok(
            "read_section",
            json!({"url": HOOKS, "heading": "posttool", "heading_extra": 1}),
        )
        .await;
    assert_eq!(r["heading"], "Hook events > PostToolUse");
    let r = c
        .ok(
            "read_section",
            json!({"url": HOOKS, "heading": "PostToolUse > Input"}),
        )
        .await;
    assert_eq!(r["text"], "#### Input\n\nThe tool response.");

    // Paging: next_offset until null; the pages put together are the section.
    let full = format!("## Debugging\n\n{}", long_body());
    let full = full.trim_end();
    let mut offset = json!(0);
    let mut joined = String::new();
    let mut calls = 0;
    while !offset.is_null() {
        let r = c
            .ok(
                "read_section",
                json!({"url": HOOKS, "heading": "debugging", "offset": offset}),
            )
            .await;
        let text = r["text"].as_str().unwrap();
        assert!(text.chars().count() <= 8_000);
        assert_eq!(r["offset"], offset);
        assert_eq!(r["total_chars"], json!(full.chars().count()));
        if !r["next_offset"].is_null() {
            assert!(text.ends_with('\n'), "cut at a line break");
        }
        joined.push_str(text);
        offset = r["next_offset"].clone();
        calls += 1;
    }
    assert!(calls >= 3, "{calls} pages");
    assert_eq!(joined, full);
}

#[tokio::test]
async fn invalid_calls_are_tool_errors_naming_the_field() {
    let mut c = Client::start(handle()).await;
    assert_eq!(
        c.err("read_section", json!({})).await,
        "invalid arguments for read_section: url: required"
    );
    assert_eq!(
        c.err("read_section", json!({"url": HOOKS, "offset": -1}))
            .await,
        "invalid arguments for read_section: offset: must be at least 0, got -1"
    );
    assert_eq!(
        c.err("read_section", json!({"url": HOOKS, "outline_depth": 4}))
            .await,
        "invalid arguments for read_section: outline_depth: must be one of 2, 3, got 4"
    );
    assert_eq!(
        c.err("search_docs", json!({"query": "hooks", "limit": 50}))
            .await,
        "invalid arguments for search_docs: limit: must be between 1 and 20, got 50"
    );
    let e = c
        .err(
            "read_section",
            json!({"url": HOOKS, "heading": "Permissions"}),
        )
        .await;
    assert!(
        e.starts_with("no heading 'Permissions' on https://code.claude.com/docs/en/hooks"),
        "{e}"
    );
    assert!(
        e.contains("'Hook events'") && e.contains("'Debugging'"),
        "candidates: {e}"
    );
    let e = c
        .err("read_section", json!({"url": HOOKS, "heading": "Input"}))
        .await;
    assert!(
        e.contains("matches 2 sections")
            && e.contains(
                "'Hook events > PreToolUse > Input', 'Hook events > PostToolUse > Input'"
            ),
        "{e}"
    );
    let e = c
        .err(
            "read_section",
            json!({"url": "https://code.claude.com/docs/en/hook"}),
        )
        .await;
    assert!(
        e.contains("unknown URL") && e.contains("search_docs"),
        "{e}"
    );
    let e = c
        .err(
            "read_section",
            json!({"url": HOOKS, "heading": "debugging", "offset": 99_999}),
        )
        .await;
    assert!(e.contains("past the end"), "{e}");

    let resp = c
        .request(
            "tools/call",
            json!({"name": "fetch_godot_doc", "arguments": {}}),
        )
        .await;
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert!(resp["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown tool 'fetch_godot_doc'"));
}

#[tokio::test]
async fn search_docs_answers_with_its_contract() {
    let mut c = Client::start(handle()).await;
    let r = c
        .ok(
            "search_docs",
            json!({"query": "import files with @path in CLAUDE.md", "limit": 3}),
        )
        .await;
    let passages = r["passages"].as_array().unwrap();
    assert!(!passages.is_empty() && passages.len() <= 3, "{r}");
    let url = passages[0]["url"].as_str().unwrap();
    assert!(url.starts_with(MEMORY), "{url}");
    assert_eq!(r["index_snapshot"], "2026-01-02T03:04:05Z");
    // A passage URL goes straight to read_section: the outline, and the
    // passage's section when the URL names one.
    let r = c.ok("read_section", json!({"url": url})).await;
    assert_eq!(r["url"], MEMORY);
    assert_eq!(r["outline"], json!(["## Imports"]));
    if url.ends_with("#imports") {
        assert_eq!(r["heading"], "Imports");
        assert_eq!(r["text"], "## Imports\n\nImport files with @path/to/file.");
    }
}

#[tokio::test]
async fn a_reload_is_seen_by_the_next_call() {
    let lib = handle();
    let mut c = Client::start(lib.clone()).await;
    c.ok("read_section", json!({"url": HOOKS})).await;
    let url = "https://cursor.com/docs/rules";
    let fresh = Library {
        sources: vec![LoadedSource::new(
            manifest("snap-2", 1, 1),
            vec![page(url, "Rules", "")],
            vec![section(url, &["Rules"], 1, "", "Rules text.".into(), 0)],
        )],
        ..Default::default()
    };
    *lib.write().unwrap() = Arc::new(fresh);
    let r = c.ok("read_section", json!({"url": url})).await;
    assert_eq!(r["text"], "Rules text.");
    c.err("read_section", json!({"url": HOOKS})).await;
}

struct Http {
    base: String,
    client: reqwest::Client,
}

impl Http {
    async fn start(opts: HttpOptions) -> Http {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve_listener(
            listener,
            handle(),
            opts,
            std::future::pending(),
        ));
        // reqwest is built without a TLS provider of its own.
        docsnap::util::install_tls();
        Http {
            base,
            client: reqwest::Client::new(),
        }
    }

    /// A tools/call (or any request) with the bearer token, past initialization.
    async fn call(&self, body: &Value, token: &str) -> reqwest::Response {
        self.post(body)
            .bearer_auth(token)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap()
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    }
}

fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

#[tokio::test]
async fn http_healthz_origin_token_and_calls() {
    let h = Http::start(HttpOptions {
        token: Some("s3cret".into()),
        max_body_bytes: 64 * 1024,
        tools: vec![ToolFamily::AgentDocs],
        ..HttpOptions::default()
    })
    .await;

    let resp = h
        .client
        .get(format!("{}/healthz", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let health: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(
        health["snapshots"],
        json!([{"source": "claude-code", "product": "claude-code", "version": "latest", "snapshot_id": "snap-1",
                "created_at": "2026-01-02T03:04:05Z", "pages": 2, "sections": 9}])
    );
    assert_eq!(health["tools"], json!(["search_docs", "read_section"]));

    let resp = h.post(&init_body()).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    let resp = h
        .post(&init_body())
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    let resp = h
        .post(&init_body())
        .bearer_auth("s3cret")
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = h
        .client
        .get(format!("{}/healthz", h.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);

    let resp = h
        .post(&init_body())
        .bearer_auth("s3cret")
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let init: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "docsnap");

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "read_section", "arguments": {"url": MEMORY, "heading": "imports"}}});
    let resp = h.call(&call, "s3cret").await;
    assert_eq!(resp.status(), 200);
    let r: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(
        r["result"]["structuredContent"]["text"], "## Imports\n\nImport files with @path/to/file.",
        "{r}"
    );

    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "search_docs", "arguments": {"query": "x".repeat(100_000)}}});
    let resp = h.post(&big).bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(resp.status(), 413);
}

#[tokio::test]
async fn http_without_token_is_open_on_loopback() {
    let h = Http::start(HttpOptions::default()).await;
    let resp = h.post(&init_body()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let resp = h
        .client
        .get(format!("{}/mcp/other", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}

/// A line that is not JSON, or JSON that is not a message, is answered with
/// JSON-RPC's error (rmcp alone would skip the first in silence and leave
/// the client waiting), and the stream goes on.
#[tokio::test]
async fn stdio_answers_lines_that_are_not_messages() {
    let mut c = Client::start(handle()).await;
    for (line, code, id) in [
        (
            r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":"#,
            -32700,
            Value::Null,
        ),
        ("[]", -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":42}"#, -32600, json!(42)),
    ] {
        c.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        c.write.flush().await.unwrap();
        let answer = tokio::time::timeout(std::time::Duration::from_secs(20), c.lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("server still open");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], json!(code), "{line}: {answer}");
        assert_eq!(answer["id"], id, "{line}: {answer}");
    }
    let pong = c.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

/// Over HTTP the same bodies get 400 and the same errors, not the
/// library's 415; a JSON body past the limit still gets 413.
#[tokio::test]
async fn http_answers_bodies_that_are_not_messages() {
    let h = Http::start(HttpOptions {
        max_body_bytes: 64 * 1024,
        ..HttpOptions::default()
    })
    .await;
    let post = |body: String| {
        h.client
            .post(format!("{}/mcp", h.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    for (body, code, id) in [
        ("garbage".to_string(), -32700, Value::Null),
        ("[1]".to_string(), -32600, Value::Null),
        (
            r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#.to_string(),
            -32600,
            json!("a"),
        ),
    ] {
        let resp = post(body.clone()).await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let answer: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], json!(code), "{body}: {answer}");
        assert_eq!(answer["id"], id, "{body}: {answer}");
    }
    let resp = post(format!("{{\"pad\": \"{}\"}}", "x".repeat(70_000)))
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let resp = post(init_body().to_string()).await.unwrap();
    assert_eq!(resp.status(), 200);
}

/// The value of the sample line that starts with `series` in a scrape.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn metrics_count_calls_and_errors_under_the_token() {
    let h = Http::start(HttpOptions {
        token: Some("s3cret".into()),
        tools: vec![ToolFamily::AgentDocs],
        ..HttpOptions::default()
    })
    .await;
    let url = format!("{}/metrics", h.base);
    let resp = h.client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 401, "the token guards /metrics like /mcp");
    let resp = h
        .client
        .get(&url)
        .bearer_auth("s3cret")
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let scrape = || async {
        let resp = h
            .client
            .get(&url)
            .bearer_auth("s3cret")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        resp.text().await.unwrap()
    };
    let before = scrape().await;
    let rs = "docsnap_tool_requests_total{tool=\"read_section\"}";
    let es = "docsnap_tool_errors_total{tool=\"read_section\"}";
    let count = "docsnap_tool_latency_seconds_count{tool=\"read_section\"}";
    let unknown = "docsnap_tool_errors_total{tool=\"(unknown)\"}";
    assert_eq!(sample(&before, rs), 0.0);
    // The loaded snapshot is listed with its age.
    assert!(
        sample(
            &before,
            "docsnap_snapshot_age_seconds{source=\"claude-code\",version=\"latest\",snapshot_id=\"snap-1\"}"
        ) > 0.0
    );

    let call = |id: u64, name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": args}})
    };
    for body in [
        call(2, "read_section", json!({"url": MEMORY})),
        call(
            3,
            "read_section",
            json!({"url": MEMORY, "heading": "imports"}),
        ),
        call(4, "read_section", json!({"heading": "no url"})),
        call(5, "no_such_tool", json!({})),
    ] {
        let resp = h.call(&body, "s3cret").await;
        assert_eq!(resp.status(), 200);
    }
    let after = scrape().await;
    assert_eq!(sample(&after, rs), 3.0);
    assert_eq!(
        sample(&after, es),
        1.0,
        "the call without a url is an error"
    );
    assert_eq!(sample(&after, count), 3.0);
    assert!(
        sample(
            &after,
            "docsnap_tool_latency_seconds_sum{tool=\"read_section\"}"
        ) > 0.0
    );
    assert_eq!(sample(&after, unknown) - sample(&before, unknown), 1.0);
    assert!(
        !after.contains("no_such_tool"),
        "unknown names are not labels"
    );
}
