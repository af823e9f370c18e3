//! The pipeline end to end on the MCP documentation: mirror → `docsnap build`
//! → artifact → `docsnap serve --stdio` → JSON-RPC tool calls.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use serde_json::json;

/// Strings of Mintlify chrome that must never reach the Markdown.
const CHROME: &[&str] = &[
    "Was this page helpful",
    "On this page",
    "Powered by Mintlify",
    "Navigate to header",
    "copy-code-button",
    "Suggest edits",
    "Raise issue",
    "__NEXT_DATA__",
    "<div",
    "<script",
    "Documentation Index",
];

/// Public page URLs the mirror's llms.txt lists (the `.md` alternates stand
/// for their pages).
fn llms_txt_pages() -> BTreeSet<String> {
    let text = std::fs::read_to_string(shared().join("sites/modelcontextprotocol.io/llms.txt"))
        .expect("llms.txt");
    let re = regex::Regex::new(r"\]\((https://[^)\s]+)\)").unwrap();
    re.captures_iter(&text)
        .map(|c| c[1].strip_suffix(".md").unwrap_or(&c[1]).to_string())
        .collect()
}

/// The Markdown without its fenced code blocks (code may quote HTML legitimately).
fn outside_fences(md: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let t = line.trim_start();
        match &fence {
            Some(f)
                if t.starts_with(f.as_str())
                    && t.trim_end()
                        .trim_start_matches(f.chars().next().unwrap())
                        .is_empty() =>
            {
                fence = None
            }
            Some(_) => {}
            None if t.starts_with("```") || t.starts_with("~~~") => {
                let ch = t.chars().next().unwrap();
                let n = t.chars().take_while(|&c| c == ch).count();
                fence = Some(std::iter::repeat_n(ch, n).collect());
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn mcp_builds_from_the_mirror_and_serves_over_stdio() {
    let mirror = Mirror::start(None, &[]);
    let out = tempfile::tempdir().unwrap();
    let outs = out.path().to_str().unwrap();
    let (code, _stdout, stderr) = run_docsnap(&[
        "build",
        "--source",
        "mcp",
        "--mirror",
        &mirror.url,
        "--out",
        outs,
        "--rate",
        "50",
    ]);
    assert_eq!(code, 0, "build failed:\n{stderr}");
    assert!(stderr.contains("summary"), "no summary:\n{stderr}");

    // The artifact: every llms.txt page under its public URL, real Markdown, no chrome.
    let art = only_artifact(out.path(), "mcp", "current");
    let pages = read_jsonl(&art.join("pages.jsonl"));
    let got: BTreeSet<String> = pages
        .iter()
        .map(|p| p["url"].as_str().unwrap().to_string())
        .collect();
    let want = llms_txt_pages();
    assert_eq!(want.len(), 182, "the mirror's llms.txt changed");
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    for p in &pages {
        let url = p["url"].as_str().unwrap();
        assert!(!url.ends_with(".md") && !url.contains("127.0.0.1"), "{url}");
        let md = p["markdown"].as_str().unwrap();
        assert!(!md.trim().is_empty(), "{url}: empty markdown");
        assert!(!p["title"].as_str().unwrap().is_empty(), "{url}: no title");
        assert_eq!(p["sha256"].as_str().unwrap().len(), 64);
        let prose = outside_fences(md);
        for c in CHROME {
            assert!(!prose.contains(c), "{url}: chrome `{c}` in the Markdown");
        }
    }

    // The manifest names every file with its checksum and the counts.
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(art.join("manifest.json")).unwrap()).unwrap();
    for k in [
        "schema_version",
        "tool_version",
        "source",
        "product",
        "version",
        "snapshot_id",
        "created_at",
        "counts",
        "files",
        "content_sha256",
    ] {
        assert!(m.get(k).is_some(), "manifest lacks {k}");
    }
    assert_eq!(m["counts"]["pages"], json!(pages.len()));
    let sections = read_jsonl(&art.join("sections.jsonl"));
    assert_eq!(m["counts"]["sections"], json!(sections.len()));
    assert!(sections.len() > pages.len());
    let files = m["files"].as_object().unwrap();
    for f in [
        "pages.jsonl",
        "sections.jsonl",
        "crawl.jsonl",
        "links.json",
        "unit_terms.bin",
    ] {
        assert!(files.contains_key(f), "manifest.files lacks {f}");
    }
    // The feedback counts a build writes are those of its sections.
    let terms = docsnap::index::UnitTerms::from_bytes(
        &std::fs::read(art.join("unit_terms.bin")).unwrap(),
        sections.len(),
    )
    .unwrap();
    let records: Vec<docsnap::model::Section> = std::fs::read_to_string(art.join("sections.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let starts = docsnap::section::unit_starts(&records);
    assert_eq!(terms, docsnap::index::UnitTerms::compute(&records, &starts));
    assert!(files.keys().any(|k| k.starts_with("index/")));
    for (rel, sum) in files {
        let bytes = std::fs::read(art.join(rel)).unwrap();
        assert_eq!(&json!(docsnap::util::sha256_hex(&bytes)), sum, "{rel}");
    }
    assert!(m["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(art
        .file_name()
        .unwrap()
        .to_string_lossy()
        .ends_with(&m["content_sha256"].as_str().unwrap()[..12]));

    // Every section anchor is an id of the page's live HTML (the mirror's copy).
    let site = shared().join("sites/modelcontextprotocol.io");
    let id_re = regex::Regex::new(r#"\bid="([^"]+)""#).unwrap();
    let mut checked = 0;
    for s in &sections {
        let anchor = s["anchor"].as_str().unwrap();
        if anchor.is_empty() {
            continue;
        }
        let url = s["url"].as_str().unwrap();
        let path = url
            .strip_prefix("https://modelcontextprotocol.io/")
            .unwrap();
        let html = std::fs::read_to_string(site.join(format!("{path}.html"))).unwrap();
        assert!(
            id_re.captures_iter(&html).any(|c| &c[1] == anchor),
            "{url}#{anchor} is not an id in the HTML"
        );
        checked += 1;
    }
    assert!(checked > 500, "only {checked} anchors checked");

    // The server: initialize, tools/list, both tools.
    let mut c = StdioClient::spawn(&["serve", "--stdio", "--artifacts", outs]);
    let init = c.handshake();
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let list = c.request("tools/list", json!({}));
    let names: BTreeSet<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains("search_docs") && names.contains("read_section"),
        "{names:?}"
    );

    let r = c.call(
        "search_docs",
        json!({"query": "sampling modelPreferences costPriority speedPriority", "product": "mcp", "limit": 5}),
    );
    let sc = &r["result"]["structuredContent"];
    let passages = sc["passages"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(!passages.is_empty() && passages.len() <= 5);
    let top = passages[0]["url"].as_str().unwrap();
    assert!(top.contains("/client/sampling"), "top hit {top}");
    assert!(sc["index_snapshot"].is_string());
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    let as_text: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(&as_text, sc, "text content differs from structuredContent");
    for p in passages {
        let s = p["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&s));
        assert!(p["content"].as_str().unwrap().chars().count() <= 300);
    }

    let page_url = top.split('#').next().unwrap();
    let r = c.call("read_section", json!({"url": page_url}));
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["url"], json!(page_url), "{r}");
    let outline = sc["outline"].as_array().unwrap();
    assert!(
        outline
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("## Data Types")),
        "{outline:?}"
    );
    assert!(
        !outline
            .iter()
            .any(|l| l.as_str().unwrap().contains("Model Preferences")),
        "{outline:?}"
    );
    let r = c.call("read_section", json!({"url": page_url, "outline_depth": 3}));
    let outline = r["result"]["structuredContent"]["outline"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        outline
            .iter()
            .any(|l| l.as_str().unwrap().contains("Model Preferences")),
        "{outline:?}"
    );

    let r = c.call(
        "read_section",
        json!({"url": page_url, "heading": "Model Preferences"}),
    );
    let sc = &r["result"]["structuredContent"];
    assert!(sc["text"].as_str().unwrap().contains("costPriority"), "{r}");

    // Bad input is a tool error naming the field.
    let r = c.call("search_docs", json!({"query": "x", "limit": 50}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("limit"));

    // `docsnap call` runs a tool in process: what the server answered.
    let args = json!({"url": page_url, "heading": "Model Preferences"});
    let over_stdio = c.call("read_section", args.clone())["result"]["structuredContent"].clone();
    let (code, stdout, stderr) = run_docsnap(&[
        "call",
        "read_section",
        &args.to_string(),
        "--artifacts",
        outs,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let in_process: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(in_process, over_stdio);
    // The tool's own error exits 1 and names the field; a tool these
    // artifacts do not offer exits 2 and names those they do.
    let bad = r#"{"query": "x", "limit": 50}"#;
    let (code, _, stderr) = run_docsnap(&["call", "search_docs", bad, "--artifacts", outs]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("limit"), "{stderr}");
    let (code, _, stderr) = run_docsnap(&["call", "search_godot_docs", "--artifacts", outs]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("search_godot_docs") && stderr.contains("search_docs, read_section"),
        "{stderr}"
    );
}
