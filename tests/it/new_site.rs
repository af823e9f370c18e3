//! A documentation site docsnap has never seen, added by configuration
//! alone: a Sphinx site with a theme no adapter knows (content in
//! `div.page-content`, a sponsor note inside it, sidebar and footer around
//! it) is crawled from its sitemap, its content root and chrome taken from
//! the `selectors` of its sources.yaml entry, cut into sections at the ids
//! Sphinx gives them, indexed and searched. No code knows it; without the
//! selectors its pages have no content root and fail.

use crate::common;

use common::*;

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

#[test]
fn a_new_sphinx_site_is_added_by_configuration_alone() {
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

    let config = r#"
sources:
  - id: widgetry
    product: widgetry
    tools: agent-docs
    family: sphinx
    selectors:
      content: "div.page-content"
      remove: ["div.sponsor-note"]
    versions:
      - label: latest
        root: https://docs.widgetry.example/en/latest/
        discovery:
          - sitemap: { url: "https://docs.widgetry.example/en/latest/sitemap.xml" }
        scope:
          prefixes: ["https://docs.widgetry.example/en/latest/"]
"#;
    let mirror = Mirror::start(Some(root.path()), &[]);
    let out = tempfile::tempdir().unwrap();
    build_with_config(&mirror, config, out.path());

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
    let hits = lib.rank_pages(&[0], "gizmo spacing", None, 3, 0.0).unwrap();
    let top = &lib.sources[0].pages[hits[0].page];
    assert!(top.url.ends_with("guide/config.html"), "{}", top.url);
    assert!(hits[0].score >= 0.5, "{}", hits[0].score);
}
