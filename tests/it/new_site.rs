//! A documentation site docsnap has never seen, added by configuration
//! alone: a Sphinx site with a theme no adapter knows (content in
//! `div.page-content`, a sponsor note inside it, sidebar and footer around
//! it) is crawled from its sitemap, its content root and chrome taken from
//! the `selectors` of its sources.yaml entry, cut into sections at the ids
//! Sphinx gives them, indexed and searched. No code knows it; without the
//! selectors its pages have no content root and fail.

use crate::common;

use common::*;
use docsnap::serve::ToolFamily;

/// One page of the synthetic site, as Sphinx's default theme lays it out.
fn page(title: &str, id: &str, sub: (&str, &str), body: &str) -> String {
    format!(
        r##"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title} — Widgetry 2.0 documentation</title></head>
<body>
<div class="sphinxsidebar"><h3>Quick search</h3><ul><li>Navigation sidebar</li></ul></div>
<div class="document"><div class="page-content">
<div class="sponsor-note">Sponsored: buy more widgets</div>
<section id="{id}">
<h1>{title}<a class="headerlink" href="#{id}" title="Link to this heading">¶</a></h1>
<p>{body}</p>
<section id="{sub_id}">
<h2>{sub_title}<a class="headerlink" href="#{sub_id}" title="Link to this heading">¶</a></h2>
<p>See <a class="reference internal" href="/en/latest/guide/config.html#reload">reloading</a> for more.</p>
<div class="highlight-shell notranslate"><div class="highlight"><pre><span></span>make frobnicate --{id}
</pre></div></div>
</section>
</section>
</div></div>
<div class="footer">&#169; Widgetry authors. Built with Sphinx.</div>
</body></html>
"##,
        sub_id = sub.0,
        sub_title = sub.1,
    )
}

/// The synthetic site's mirror folder: three pages and a sitemap.
fn widgetry_site() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let site = root.path().join("docs.widgetry.example/en/latest");
    std::fs::create_dir_all(site.join("guide")).unwrap();
    let pages = [
        (
            "index.html",
            page(
                "Widgetry",
                "widgetry",
                ("overview", "Overview"),
                "Widgetry arranges widgets on a grid.",
            ),
        ),
        (
            "guide/install.html",
            page(
                "Installing",
                "installing",
                ("from-source", "From source"),
                "Install the flux capacitor before the widgets.",
            ),
        ),
        (
            "guide/config.html",
            page(
                "Configuration",
                "configuration",
                ("reload", "Reloading"),
                "The gizmo setting sets the spacing between widgets.",
            ),
        ),
    ];
    let mut sitemap = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for (path, html) in &pages {
        std::fs::write(site.join(path), html).unwrap();
        sitemap.push_str(&format!(
            "<url><loc>https://docs.widgetry.example/en/latest/{}</loc></url>",
            path.trim_end_matches("index.html")
        ));
    }
    sitemap.push_str("</urlset>");
    std::fs::write(site.join("sitemap.xml"), sitemap).unwrap();
    std::fs::write(
        root.path().join("docs.widgetry.example/PROVENANCE.md"),
        "Synthetic test site.\n",
    )
    .unwrap();

    root
}

/// The site's sources.yaml entry, with `selectors` (YAML lines at the
/// entry's indentation).
fn widgetry_config(selectors: &str) -> String {
    widgetry_config_for("agent-docs", selectors)
}

/// The same entry, served by the tool family `tools`.
fn widgetry_config_for(tools: &str, selectors: &str) -> String {
    let mut c = format!(
        r#"
sources:
  - id: widgetry
    product: widgetry
    tools: {tools}
    family: sphinx
"#,
    );
    c.push_str(selectors);
    c.push_str(
        r#"    versions:
      - label: latest
        root: https://docs.widgetry.example/en/latest/
        discovery:
          - sitemap: { url: "https://docs.widgetry.example/en/latest/sitemap.xml" }
        scope:
          prefixes: ["https://docs.widgetry.example/en/latest/"]
"#,
    );
    c
}

const SELECTORS: &str =
    "    selectors:\n      content: \"div.page-content\"\n      remove: [\"div.sponsor-note\"]\n";

#[test]
fn a_new_sphinx_site_is_added_by_configuration_alone() {
    let root = widgetry_site();
    let config = widgetry_config(SELECTORS);
    let mirror = Mirror::start(Some(root.path()), &[]);
    let out = tempfile::tempdir().unwrap();
    let _ = build_with_config(&mirror, &config, out.path());

    let art = only_artifact(out.path(), "widgetry", "latest");
    let pages = read_jsonl(&art.join("pages.jsonl"));
    let titles: Vec<&str> = pages.iter().map(|p| p["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len(), 3, "{pages:?}");
    for want in ["Widgetry", "Installing", "Configuration"] {
        assert!(titles.contains(&want), "{want} missing from {titles:?}");
    }
    for p in &pages {
        let md = p["markdown"].as_str().unwrap();
        // Chrome outside the content root, and the permalink marks the
        // `remove` selector names, are gone; the code block is kept.
        for chrome in [
            "Sponsored",
            "Quick search",
            "Navigation sidebar",
            "Built with Sphinx",
            "¶",
        ] {
            assert!(!md.contains(chrome), "{chrome:?} in {}: {md}", p["url"]);
        }
        assert!(md.contains("```") && md.contains("make frobnicate"), "{md}");
        // Links are made absolute against the page.
        assert!(
            md.contains("(https://docs.widgetry.example/en/latest/guide/config.html#reload)"),
            "{md}"
        );
    }
    let sections = read_jsonl(&art.join("sections.jsonl"));
    let install = sections
        .iter()
        .find(|s| s["anchor"] == "from-source")
        .unwrap_or_else(|| panic!("no section at the id Sphinx gave: {sections:?}"));
    assert_eq!(
        install["url"],
        "https://docs.widgetry.example/en/latest/guide/install.html"
    );
    assert_eq!(
        install["heading_path"],
        serde_json::json!(["Installing", "From source"])
    );

    // The artifact loads and answers like any other source.
    let (lib, warnings) = docsnap::search::Library::load_dir(out.path()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let hits = lib
        .rank_pages(&[0], "gizmo spacing", None, 3, Default::default())
        .unwrap();
    let top = &lib.sources[0].pages[hits[0].page];
    assert!(top.url.ends_with("guide/config.html"), "{}", top.url);
    assert!(hits[0].score >= 0.5, "{}", hits[0].score);

    // Its `tools: agent-docs` routes it to search_docs, under its own
    // product id (not one of the four the seed names for the filter).
    assert_eq!(
        docsnap::serve::families_for(&lib),
        [ToolFamily::AgentDocs, ToolFamily::Changes]
    );
    let args: docsnap::search::types::SearchDocsArgs =
        serde_json::from_value(serde_json::json!({"query": "gizmo spacing"})).unwrap();
    let found = lib.search_docs(&args).unwrap();
    let top = serde_json::to_value(&found).unwrap();
    assert!(
        top.to_string().contains("guide/config.html"),
        "search_docs does not serve the new source: {top}"
    );
}

/// A source joins a tool family by its `tools` alone: the same site under
/// `tools: leapview` is what `docs_search` answers from, whatever its
/// product id, and search_docs no longer sees it.
#[test]
fn tools_in_the_entry_route_a_source_to_its_tool_family() {
    let root = widgetry_site();
    let mirror = Mirror::start(Some(root.path()), &[]);
    let out = tempfile::tempdir().unwrap();
    let _ = build_with_config(
        &mirror,
        &widgetry_config_for("leapview", SELECTORS),
        out.path(),
    );
    let art = only_artifact(out.path(), "widgetry", "latest");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(art.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["tools"], "leapview", "{manifest}");

    let (lib, _) = docsnap::search::Library::load_dir(out.path()).unwrap();
    assert_eq!(
        docsnap::serve::families_for(&lib),
        [ToolFamily::Leapview, ToolFamily::Changes]
    );
    let args: docsnap::search::leapview::DocsSearchArgs =
        serde_json::from_value(serde_json::json!({"query": "flux capacitor"})).unwrap();
    let r = lib.docs_search(&args).unwrap();
    assert!(!r.matches.is_empty(), "docs_search found nothing");
    assert!(
        r.matches[0].url.contains("guide/install.html"),
        "{:?}",
        r.matches
    );
    assert!(
        r.matches[0].id.starts_with("widgetry/latest/"),
        "{:?}",
        r.matches[0]
    );
    let args: docsnap::search::types::SearchDocsArgs =
        serde_json::from_value(serde_json::json!({"query": "flux capacitor"})).unwrap();
    let none = serde_json::to_value(lib.search_docs(&args).unwrap()).unwrap();
    assert!(
        !none.to_string().contains("install.html"),
        "search_docs answers from a leapview-tools source: {none}"
    );
}

/// Every snapshot directory of the widgetry source, oldest first.
fn snapshots(out: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(out.join("widgetry/latest"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    v.sort();
    v
}

/// A rebuild whose pages all come back 304 still applies a changed
/// configuration: records made under other selectors (or by another
/// normalizer) are not reused, so the sponsor note dropped by a newly added
/// `remove` selector leaves the served pages at once, not when the site
/// next changes them.
#[test]
fn a_changed_selector_reaches_pages_the_site_answers_304_for() {
    let root = widgetry_site();
    let mirror = Mirror::start(Some(root.path()), &[]);
    let out = tempfile::tempdir().unwrap();
    let content_only = "    selectors:\n      content: \"div.page-content\"\n";
    let _ = build_with_config(&mirror, &widgetry_config(content_only), out.path());
    let first = snapshots(out.path());
    assert_eq!(first.len(), 1);
    let kept = std::fs::read_to_string(first[0].join("pages.jsonl")).unwrap();
    assert!(kept.contains("Sponsored"), "no remove selector yet: {kept}");

    // The same site, the selector added: a new snapshot without the note.
    let err = build_with_config(&mirror, &widgetry_config(SELECTORS), out.path());
    assert!(!err.contains("unchanged: "), "{err}");
    assert!(err.contains("another normalizer or configuration"), "{err}");
    let second = snapshots(out.path());
    assert_eq!(second.len(), 2, "{err}");
    let pages = read_jsonl(&second[1].join("pages.jsonl"));
    assert_eq!(pages.len(), 3, "{pages:?}");
    for p in &pages {
        assert!(
            !p["markdown"].as_str().unwrap().contains("Sponsored"),
            "{p}"
        );
    }

    // And with nothing changed since, the rebuild is a no-change one again.
    let err = build_with_config(&mirror, &widgetry_config(SELECTORS), out.path());
    assert!(err.contains("unchanged: "), "{err}");
    assert_eq!(snapshots(out.path()).len(), 2);

    // A snapshot an older docsnap wrote (another artifact revision) is
    // replaced, its records reused: the pages come back 304, nothing is
    // fetched again.
    let latest = snapshots(out.path()).pop().unwrap();
    let mpath = latest.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["artifact_revision"] = serde_json::json!(1);
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let err = build_with_config(&mirror, &widgetry_config(SELECTORS), out.path());
    assert!(!err.contains("unchanged: "), "{err}");
    assert_eq!(snapshots(out.path()).len(), 3, "{err}");
    let newest = snapshots(out.path()).pop().unwrap();
    let outcomes = read_jsonl(&newest.join("crawl.jsonl"));
    let pages: Vec<_> = outcomes
        .iter()
        .filter(|o| {
            o["url"].as_str().unwrap().ends_with(".html")
                || o["url"].as_str().unwrap().ends_with('/')
        })
        .collect();
    assert_eq!(pages.len(), 3, "{outcomes:?}");
    assert!(pages.iter().all(|o| o["status"] == 304), "{outcomes:?}");
    assert_eq!(read_jsonl(&newest.join("pages.jsonl")).len(), 3);
}
