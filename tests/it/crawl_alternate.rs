//! A site crawled from its sitemap (HTML URLs) is read from the Markdown
//! alternates its pages announce with `<link rel="alternate" type="text/markdown">`.

use crate::common;

use common::*;

#[test]
fn html_pages_announcing_markdown_are_read_from_it() {
    let config = r#"
sources:
  - id: claude-code
    product: claude-code
    tools: agent-docs
    family: mintlify
    slug: mintlify-runs
    prefer_markdown: true
    versions:
      - label: current
        root: https://code.claude.com/docs/en/
        discovery:
          - sitemap: { url: "https://code.claude.com/docs/sitemap.xml" }
        scope:
          prefixes: ["https://code.claude.com/docs/en/"]
          include: ["/docs/en/(hooks|memory|settings)(\\.md)?$"]
"#;
    let mirror = Mirror::start(None, &[]);
    let out = tempfile::tempdir().unwrap();
    build_with_config(&mirror, config, out.path());
    let art = only_artifact(out.path(), "claude-code", "current");
    let pages = read_jsonl(&art.join("pages.jsonl"));
    let urls: Vec<&str> = pages.iter().map(|p| p["url"].as_str().unwrap()).collect();
    assert_eq!(
        urls,
        [
            "https://code.claude.com/docs/en/hooks",
            "https://code.claude.com/docs/en/memory",
            "https://code.claude.com/docs/en/settings"
        ]
    );
    for p in &pages {
        let md = p["markdown"].as_str().unwrap();
        assert!(
            !md.contains("Was this page helpful"),
            "HTML chrome in {}",
            p["url"]
        );
        assert!(md.len() > 1000, "{}: {} bytes", p["url"], md.len());
    }
    let crawl = read_jsonl(&art.join("crawl.jsonl"));
    let fetched_md = crawl
        .iter()
        .filter(|o| o["fetched"].as_str().unwrap().ends_with(".md") && o["status"] == 200)
        .count();
    assert_eq!(fetched_md, 3, "{crawl:?}");
}
