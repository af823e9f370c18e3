//! The crawl on all six mirrored sites: completeness against each site's own
//! index, politeness under injected faults, incremental rebuilds with 304s,
//! and resuming a build killed with SIGKILL.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::time::Duration;

use common::*;
use docsnap::util::canonical_page_key;

/// Links of a Mintlify-style llms.txt (`- [Title](url)`), `.md` dropped;
/// links under a heading named in `skip_sections` are left out.
fn llms_links(file: &Path, skip_sections: &[&str]) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let re = regex::Regex::new(r"\]\((https?://[^)\s]+)\)").unwrap();
    let mut skip = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            skip = skip_sections.contains(&h.trim());
            continue;
        }
        if skip {
            continue;
        }
        for c in re.captures_iter(line) {
            out.push(c[1].strip_suffix(".md").unwrap_or(&c[1]).to_string());
        }
    }
    out
}

/// Pages reachable from `start` by following `href`s within `prefix`,
/// computed from the mirror's files alone.
fn reachable(sites: &Path, start: &str, prefix: &str) -> BTreeSet<String> {
    let href = regex::Regex::new(r##"href="([^"#]*)(?:#[^"]*)?""##).unwrap();
    let mut seen = BTreeSet::new();
    let mut queue = vec![start.to_string()];
    while let Some(u) = queue.pop() {
        let key = canonical_page_key(&u);
        if !seen.insert(key) {
            continue;
        }
        let rest = u.split_once("://").unwrap().1;
        let (host, path) = rest.split_once('/').unwrap();
        let path = docsnap::util::percent_decode(path);
        let file = if path.ends_with('/') || path.is_empty() {
            sites.join(host).join(&path).join("index.html")
        } else {
            sites.join(host).join(&path)
        };
        let Ok(html) = std::fs::read_to_string(&file) else {
            continue;
        };
        let base = url::Url::parse(&u).unwrap();
        for c in href.captures_iter(&html) {
            let h = &c[1];
            if h.is_empty() {
                continue;
            }
            if let Ok(v) = base.join(h) {
                let s = v.to_string();
                if s.starts_with(prefix) && s.ends_with(".html")
                    || s.ends_with('/') && s.starts_with(prefix)
                {
                    let decoded = docsnap::util::percent_decode(&s);
                    let rest = decoded.split_once("://").unwrap().1;
                    let (h2, p2) = rest.split_once('/').unwrap();
                    let f = if p2.ends_with('/') {
                        sites.join(h2).join(p2).join("index.html")
                    } else {
                        sites.join(h2).join(p2)
                    };
                    if f.is_file() {
                        queue.push(s);
                    }
                }
            }
        }
    }
    seen
}

/// The expected set of page keys per (source, version), derived from the
/// mirror's own files.
fn expected(sites: &Path) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut m = BTreeMap::new();
    let keys = |v: Vec<String>| -> BTreeSet<String> {
        v.iter()
            .filter(|u| mirrored(sites, u))
            .map(|u| canonical_page_key(u))
            .collect()
    };
    m.insert(
        ("claude-code".into(), "current".into()),
        keys(llms_links(
            &sites.join("code.claude.com/docs/llms.txt"),
            &[],
        )),
    );
    m.insert(
        ("mcp".into(), "current".into()),
        keys(llms_links(
            &sites.join("modelcontextprotocol.io/llms.txt"),
            &[],
        )),
    );
    m.insert(
        ("cursor".into(), "current".into()),
        keys(llms_links(&sites.join("cursor.com/llms.txt"), &[])),
    );
    m.insert(
        ("codex".into(), "current".into()),
        keys(llms_links(
            &sites.join("developers.openai.com/codex/llms.txt"),
            &["Documentation sets"],
        )),
    );
    m.insert(
        ("godot".into(), "stable".into()),
        reachable(
            sites,
            "https://docs.godotengine.org/en/stable/index.html",
            "https://docs.godotengine.org/en/stable/",
        ),
    );
    for v in ["3.1", "3.2"] {
        let text = std::fs::read_to_string(
            sites.join(format!("docs.leapview.example/v{v}/manifest.json")),
        )
        .unwrap();
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        let urls = j["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["url"].as_str().unwrap().to_string())
            .collect();
        m.insert(("leapview".into(), v.to_string()), keys(urls));
    }
    m
}

fn built_pages(out: &Path, source: &str, version: &str) -> (BTreeSet<String>, serde_json::Value) {
    let art = only_artifact(out, source, version);
    let pages = read_jsonl(&art.join("pages.jsonl"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(art.join("manifest.json")).unwrap()).unwrap();
    (
        pages
            .iter()
            .map(|p| canonical_page_key(p["url"].as_str().unwrap()))
            .collect(),
        manifest,
    )
}

/// Index in `lib.sources` of the source whose id is `id`.
fn source_index(lib: &docsnap::search::Library, id: &str) -> usize {
    (0..lib.sources.len())
        .find(|&i| lib.sources[i].manifest.source == id)
        .unwrap_or_else(|| panic!("no source {id} loaded"))
}

fn assert_sets(out: &Path, want: &BTreeMap<(String, String), BTreeSet<String>>) {
    for ((s, v), exp) in want {
        let (got, _) = built_pages(out, s, v);
        let missing: Vec<_> = exp.difference(&got).take(10).collect();
        let extra: Vec<_> = got.difference(exp).take(10).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{s} {v}: {} expected, {} built; missing {missing:?}; extra {extra:?}",
            exp.len(),
            got.len()
        );
    }
}

#[test]
fn all_sources_build_completely_and_rebuild_with_304s() {
    let sites = shared().join("sites");
    let want = expected(&sites);
    assert_eq!(
        want[&("godot".to_string(), "stable".to_string())].len(),
        588
    );
    assert_eq!(
        want[&("cursor".to_string(), "current".to_string())].len(),
        102
    );

    let mirror = Mirror::start(None, &[]);
    let out = tempfile::tempdir().unwrap();
    build_from_mirror(&mirror, out.path(), &[]);
    assert_sets(out.path(), &want);

    // A member named as the docs write it comes first, from its own class,
    // whatever namesakes in other classes match the words as well; without
    // that lever a namesake wins at least one of these.
    let (mut lib, _) = docsnap::search::Library::load_dir(out.path()).unwrap();
    let queries = [
        ("Node.add_child", "Node", "add_child"),
        ("how do I call treeitem.add_child", "TreeItem", "add_child"),
        (
            "RigidBody2D.apply_central_impulse",
            "RigidBody2D",
            "apply_central_impulse",
        ),
        ("Input.is_action_pressed", "Input", "is_action_pressed"),
    ];
    let top = |lib: &docsnap::search::Library, query: &str| {
        let args = docsnap::search::godot::SearchArgs {
            query: query.into(),
            kind: None,
            limit: None,
        };
        let found = lib.search_godot_docs(&args).unwrap();
        let scores: Vec<f64> = found.hits.iter().map(|h| h.score).collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{query}: {scores:?}"
        );
        let h = &found.hits[0];
        (h.class_name.clone(), h.member_name.clone())
    };
    for (query, class, member) in queries {
        assert_eq!(
            top(&lib, query),
            (Some(class.to_string()), Some(member.to_string())),
            "{query}"
        );
    }
    // Lexically these already come first; with the page vectors' cosine
    // (or any strong other signal, here an exaggerated link prior that
    // favours the most linked-to class) a namesake can win, and the lever
    // is what puts the named member back on top.
    lib.rank.inlink_weight = 5.0;
    let right = |lib: &docsnap::search::Library| {
        queries
            .iter()
            .filter(|(q, c, m)| top(lib, q) == (Some(c.to_string()), Some(m.to_string())))
            .count()
    };
    assert_eq!(
        right(&lib),
        queries.len(),
        "with the lever, against the prior"
    );
    lib.rank.named_members = false;
    assert!(
        right(&lib) < queries.len(),
        "the prior alone changes no answer: the check above proves nothing"
    );
    lib.rank.named_members = true;
    lib.rank.inlink_weight = docsnap::search::rank::RankConfig::default().inlink_weight;

    // The areas sources.yaml declares reach the artifact and the loaded
    // source. `pages` are a source's pages whose URL passes `pick`;
    // `in_area` whether a page is in an area the word names.
    let source = |id: &str| &lib.sources[source_index(&lib, id)];
    let pages = |src: &docsnap::search::LoadedSource, pick: &dyn Fn(&str) -> bool| {
        (0..src.pages.len())
            .filter(|&i| pick(&src.pages[i].url))
            .collect::<Vec<usize>>()
    };
    let in_area = |src: &docsnap::search::LoadedSource, i: usize, word: &str| {
        src.area_of(i)
            .is_some_and(|a| a.named_by.iter().any(|w| w == word))
    };
    // Claude Code: every Agent SDK page is in one, its changelog in
    // another, its hooks page in none.
    let src = source("claude-code");
    assert!(!src.manifest.areas.is_empty(), "{:?}", src.manifest);
    let sdk = pages(src, &|u| u.contains("/docs/en/agent-sdk/"));
    assert!(sdk.len() > 10, "{sdk:?}");
    assert!(sdk.iter().all(|&i| in_area(src, i, "sdk")));
    let changelog = pages(src, &|u| u == "https://code.claude.com/docs/en/changelog");
    assert_eq!(changelog.len(), 1);
    assert!(in_area(src, changelog[0], "changelog"));
    let hooks = pages(src, &|u| u == "https://code.claude.com/docs/en/hooks");
    assert!(src.area_of(hooks[0]).is_none());
    // MCP's enhancement proposals (the index and every SEP) are one area,
    // each specification edition's changelog another; the specification's
    // own pages are in none.
    let src = source("mcp");
    let seps = pages(src, &|u| {
        u.starts_with("https://modelcontextprotocol.io/seps")
    });
    assert!(seps.len() > 10, "{seps:?}");
    assert!(seps.iter().all(|&i| in_area(src, i, "sep")));
    let changelogs = pages(src, &|u| u.ends_with("/changelog"));
    assert_eq!(changelogs.len(), 2, "one a specification edition");
    assert!(changelogs.iter().all(|&i| in_area(src, i, "changelog")));
    let spec = pages(src, &|u| {
        u.contains("/specification/") && !u.ends_with("/changelog")
    });
    assert!(spec.len() > 40, "{spec:?}");
    assert!(spec.iter().all(|&i| src.area_of(i).is_none()));
    // Codex's release notes, wherever under /codex/ they are, and nothing else.
    let src = source("codex");
    let notes = pages(src, &|u| u.ends_with("/changelog"));
    assert!(!notes.is_empty());
    assert_eq!(
        pages(src, &|_| true)
            .into_iter()
            .filter(|&i| src.area_of(i).is_some())
            .collect::<Vec<_>>(),
        notes
    );
    // Godot's first-game tutorials (both series, every step) are one area;
    // the step-by-step introduction beside them is not.
    let src = source("godot");
    let series = pages(src, &|u| u.contains("/getting_started/first_"));
    assert!(series.len() >= 10, "{series:?}");
    assert!(series.iter().all(|&i| in_area(src, i, "tutorial")));
    let step = pages(src, &|u| u.contains("/getting_started/step_by_step/"));
    assert!(!step.is_empty());
    assert!(step.iter().all(|&i| src.area_of(i).is_none()));

    // A class page gives its place to a tutorial it lists (its Tutorials
    // section), when the question names neither the class nor a member of
    // it; a question that names one (`randi_range`) keeps the class first.
    // The first ten hits of a search_godot_docs question (checked to be in
    // score order), and the pages of the first three.
    let list = |lib: &docsnap::search::Library, query: &str| {
        let args = docsnap::search::godot::SearchArgs {
            query: query.into(),
            kind: None,
            limit: Some(10.0),
        };
        let found = lib.search_godot_docs(&args).unwrap();
        let scores: Vec<f64> = found.hits.iter().map(|h| h.score).collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{query}: {scores:?}"
        );
        found
            .hits
            .into_iter()
            .map(|h| (h.uri, h.member_name))
            .collect::<Vec<_>>()
    };
    let pages = |lib: &docsnap::search::Library, query: &str| -> Vec<String> {
        list(lib, query)
            .into_iter()
            .take(3)
            .map(|(uri, _)| uri.split('#').next().unwrap().to_string())
            .collect()
    };
    let rng = "https://docs.godotengine.org/en/stable/classes/class_randomnumbergenerator.html";
    let tutorial =
        "https://docs.godotengine.org/en/stable/tutorials/math/random_number_generation.html";
    let goal = "numbers generated from a seed";
    let named = "randi_range numbers generated from a seed";
    lib.rank.tutorials_first = 0;
    let (goal_off, named_off) = (pages(&lib, goal), pages(&lib, named));
    lib.rank.tutorials_first = docsnap::search::rank::RankConfig::default().tutorials_first;
    let (goal_on, named_on) = (pages(&lib, goal), pages(&lib, named));
    assert_eq!(goal_off[..2], [rng, tutorial], "without the step");
    assert_eq!(goal_on[..2], [tutorial, rng], "with it");
    assert_eq!(named_off[..2], [rng, tutorial]);
    assert_eq!(named_on, named_off, "a named member keeps its class first");

    // Renames the docs declare reach the artifact: the Node3D page's note
    // that the class was once named Spatial, and deprecated classes that
    // name their successor.
    let godot = only_artifact(out.path(), "godot", "stable");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(godot.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest["files"]["aliases.json"].is_string(), "{manifest}");
    let file: docsnap::aliases::AliasFile =
        serde_json::from_slice(&std::fs::read(godot.join("aliases.json")).unwrap()).unwrap();
    let has = |old: &str, new: &str| file.aliases.iter().any(|a| a.old == old && a.new == new);
    assert!(has("Spatial", "Node3D"), "{:?}", file.aliases);
    assert!(has("ParallaxLayer", "Parallax2D"), "{:?}", file.aliases);
    // And the ranking: the old name finds the new class's member, which
    // never says it.
    let old_name = "Spatial look_at";
    let node3d = (Some("Node3D".to_string()), Some("look_at".to_string()));
    assert_eq!(top(&lib, old_name), node3d);
    // Without aliases, and without the words of the questions asked of the
    // pages (some asked of Node3D say "Spatial" too, a second route there).
    let words = lib.rank.godot.asked_words_lexical;
    lib.rank.godot.asked_words_lexical = 0.0;
    lib.rank.aliases = false;
    assert_ne!(top(&lib, old_name), node3d, "without aliases");
    lib.rank.aliases = true;
    lib.rank.godot.asked_words_lexical = words;

    // A bare member name: among the classes that declare it, the member the
    // docs link to (Node.add_child) comes before its namesakes, which BM25
    // alone orders by shorter description (TreeItem.add_child first). Hits
    // that are not namesakes keep their places.
    for query in ["add_child", "apply_central_impulse"] {
        let with = list(&lib, query);
        lib.rank.namesakes_by_links = false;
        let without = list(&lib, query);
        lib.rank.namesakes_by_links = true;
        let is_namesake = |h: &(String, Option<String>)| h.1.as_deref() == Some(query);
        assert!(
            with.iter().filter(|h| is_namesake(h)).count() >= 2,
            "{query}: {with:?}"
        );
        let mut a: Vec<_> = with.iter().filter(|h| is_namesake(h)).collect();
        let mut b: Vec<_> = without.iter().filter(|h| is_namesake(h)).collect();
        for (x, y) in with.iter().zip(&without) {
            assert_eq!(is_namesake(x), is_namesake(y), "{query}: places moved");
            if !is_namesake(x) {
                assert_eq!(x, y, "{query}: a hit that is no namesake moved");
            }
        }
        a.sort();
        b.sort();
        assert_eq!(a, b, "{query}: the same namesakes, reordered");
    }
    // What the docs mark deprecated ranks after what replaced it, and
    // stays in the list.
    let parallax = |lib: &docsnap::search::Library| {
        list(lib, "parallax background")
            .into_iter()
            .map(|h| h.0)
            .collect::<Vec<_>>()
    };
    let deprecated = |u: &String| u.contains("class_parallaxlayer.html");
    let with = parallax(&lib);
    assert!(!deprecated(&with[0]), "{with:?}");
    assert!(with.iter().any(deprecated), "{with:?}");
    lib.rank.deprecated_factor = 1.0;
    let without = parallax(&lib);
    assert!(
        deprecated(&without[0]),
        "the words alone already rank ParallaxLayer lower: the check above proves nothing ({without:?})"
    );
    lib.rank.deprecated_factor = docsnap::search::rank::RankConfig::default().deprecated_factor;

    let first = |lib: &docsnap::search::Library| list(lib, "add_child")[0].0.clone();
    assert!(first(&lib).contains("class_node.html#"), "{}", first(&lib));
    lib.rank.namesakes_by_links = false;
    assert!(
        !first(&lib).contains("class_node.html#"),
        "BM25 alone already puts Node first: the check above proves nothing"
    );
    lib.rank.namesakes_by_links = true;

    // A larger limit shows the same first hits and more after them: the
    // deeper candidate cut a larger limit needs must not reorder the top.
    let godot_queries = [
        "make the camera shake when the player takes damage",
        "save the game to a file and load it again",
        "rotate a sprite towards the mouse",
        "play a sound when a button is pressed",
        "character's cape should flap and drape like real cloth",
    ];
    let urls = |lib: &docsnap::search::Library, query: &str, limit: f64| {
        let args = docsnap::search::godot::SearchArgs {
            query: query.into(),
            kind: None,
            limit: Some(limit),
        };
        let found = lib.search_godot_docs(&args).unwrap();
        found.hits.into_iter().map(|h| h.uri).collect::<Vec<_>>()
    };
    for q in godot_queries {
        let (short, long) = (urls(&lib, q, 5.0), urls(&lib, q, 40.0));
        assert!(long.len() > short.len(), "{q}: {long:?}");
        assert_eq!(short[..], long[..short.len()], "{q}");
    }
    let passages = |lib: &docsnap::search::Library, query: &str, limit: u32| {
        let args = docsnap::search::types::SearchDocsArgs {
            query: query.into(),
            limit,
            product: None,
            response_format: Default::default(),
        };
        let found = lib.search_docs(&args).unwrap();
        found
            .passages
            .into_iter()
            .map(|p| p.url)
            .collect::<Vec<_>>()
    };
    for q in [
        "run a command before every tool call",
        "use a different model for one session",
        "limit which files the agent can edit",
        "connect a remote server over http",
        "use a different model for one session in cursor",
    ] {
        let (short, long) = (passages(&lib, q, 3), passages(&lib, q, 20));
        assert!(long.len() > short.len(), "{q}: {long:?}");
        assert_eq!(short[..], long[..short.len()], "{q}");
    }
    // And the cut does reorder when asked for directly, so the checks above
    // can fail.
    let si = source_index(&lib, "godot");
    let top5 = |want: usize, q: &str| {
        lib.rank_pages(&[si], q, None, want, lib.rank.godot)
            .unwrap()
            .iter()
            .take(5)
            .map(|h| h.page)
            .collect::<Vec<_>>()
    };
    assert!(
        godot_queries.iter().any(|q| top5(6, q) != top5(41, q)),
        "no query's top five depends on the candidate cut: the checks above prove nothing"
    );

    // The Cursor llms.txt's pages that the mirror lacks are reported as broken links.
    let art = only_artifact(out.path(), "cursor", "current");
    let crawl = read_jsonl(&art.join("crawl.jsonl"));
    let broken: Vec<_> = crawl.iter().filter(|o| o["status"] == 404).collect();
    assert_eq!(broken.len(), 3, "{broken:?}");

    // A second build against the unchanged mirror: conditional requests answered 304.
    let first: BTreeMap<_, _> = want
        .keys()
        .map(|(s, v)| {
            (
                (s.clone(), v.clone()),
                built_pages(out.path(), s, v).1["content_sha256"].clone(),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1100)); // a new snapshot id (time-stamped)

    // Nothing changed: every version keeps its snapshot and says so.
    let err = build_with(&mirror, out.path(), &[], &[]);
    assert_eq!(err.matches("unchanged: ").count(), want.len(), "{err}");
    for (s, v) in want.keys() {
        let n = std::fs::read_dir(out.path().join(s).join(v))
            .unwrap()
            .filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(n, 1, "{s} {v}: a second snapshot of unchanged content");
    }
    // Forced, a new snapshot is written from conditional requests.
    build_with(&mirror, out.path(), &[], &["--force"]);
    assert_sets(out.path(), &want);
    let (mut pages, mut not_modified) = (0usize, 0usize);
    for (s, v) in want.keys() {
        let art = only_artifact(out.path(), s, v);
        let (_, m) = built_pages(out.path(), s, v);
        assert_eq!(
            m["content_sha256"],
            first[&(s.clone(), v.clone())],
            "{s} {v}"
        );
        for o in read_jsonl(&art.join("crawl.jsonl")) {
            if o["status"] == 200 || o["status"] == 304 {
                pages += 1;
                if o["status"] == 304 {
                    not_modified += 1;
                }
            }
        }
    }
    let share = not_modified as f64 / pages as f64;
    eprintln!(
        "second build: {not_modified}/{pages} answered 304 ({:.1} %)",
        share * 100.0
    );
    assert!(
        share >= 0.95,
        "only {not_modified}/{pages} pages answered 304"
    );
}

#[test]
fn faulty_mirror_gives_the_same_pages_politely() {
    let sites = shared().join("sites");
    let want = expected(&sites);
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("requests.jsonl");
    let mirror = Mirror::start(
        None,
        &[
            "--faults",
            "seed=3,p429=0.1,p500=0.1,ptrunc=0.05,pslow=0.02,fails=2,max_rps=50",
            "--log",
            log.to_str().unwrap(),
        ],
    );
    let out = tempfile::tempdir().unwrap();
    let outs = out.path().to_str().unwrap();
    let rate = 40u32;
    let (code, _, err) = run_docsnap(&[
        "build",
        "--mirror",
        &mirror.url,
        "--out",
        outs,
        "--rate",
        &rate.to_string(),
        "--concurrency",
        "8",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_sets(out.path(), &want);
    drop(mirror);

    // The request log: nothing outside the sources' scopes, no host above the rate.
    let cfg =
        docsnap::config::Config::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("sources.yaml"))
            .unwrap();
    let mut allowed_prefixes: Vec<String> = Vec::new();
    let mut discovery: HashSet<String> = HashSet::new();
    for s in &cfg.sources {
        for v in &s.versions {
            allowed_prefixes.extend(v.scope.prefixes.iter().cloned());
            for d in &v.discovery {
                let u = match d {
                    docsnap::config::Discovery::LlmsTxt { url }
                    | docsnap::config::Discovery::Sitemap { url }
                    | docsnap::config::Discovery::Manifest { url } => url,
                    docsnap::config::Discovery::Links { start, .. } => start,
                };
                discovery.insert(u.clone());
            }
        }
    }
    let lines = read_jsonl(&log);
    assert!(lines.len() > 1000, "only {} requests logged", lines.len());
    let mut faults = 0;
    let mut per_host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for l in &lines {
        let host = l["host"].as_str().unwrap();
        let path = l["path"].as_str().unwrap();
        let url = format!("https://{host}{path}");
        let ok = path == "/robots.txt"
            || discovery.contains(&url)
            || allowed_prefixes.iter().any(|p| url.starts_with(p.as_str()));
        assert!(ok, "request outside every scope: {url}");
        if !l["fault"].is_null() {
            faults += 1;
        }
        per_host
            .entry(host.to_string())
            .or_default()
            .push(l["ts"].as_f64().unwrap());
    }
    assert!(
        faults > 50,
        "the fault injection did not happen ({faults} faults)"
    );
    for (host, mut ts) in per_host {
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mut max = 0;
        let mut j = 0;
        for i in 0..ts.len() {
            while ts[i] - ts[j] >= 1.0 {
                j += 1;
            }
            max = max.max(i - j + 1);
        }
        // The limiter allows `rate` per second plus a burst of one.
        assert!(
            max <= rate as usize + 1,
            "{host}: {max} requests within one second"
        );
        let max_rps = lines
            .iter()
            .filter(|l| l["host"] == host.as_str() && l["fault"] == "max_rps")
            .count();
        assert_eq!(
            max_rps, 0,
            "{host}: the mirror's max_rps tripped {max_rps} times"
        );
    }
}

#[test]
fn a_killed_build_resumes_without_refetching() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("requests.jsonl");
    let mirror = Mirror::start(None, &["--log", log.to_str().unwrap()]);
    let out = tempfile::tempdir().unwrap();
    let outs = out.path().to_str().unwrap();
    let mut child = std::process::Command::new(docsnap())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--source",
            "godot",
            "--mirror",
            &mirror.url,
            "--out",
            outs,
            "--rate",
            "40",
        ])
        .env("DOCSNAP_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let entries = out.path().join("godot/stable/.journal/entries.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let n = std::fs::read_to_string(&entries)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if n >= 150 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "journal did not grow");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !out.path()
            .join("godot/stable")
            .read_dir()
            .unwrap()
            .any(|e| {
                let n = e.unwrap().file_name().to_string_lossy().to_string();
                !n.starts_with('.')
            }),
        "a killed build left an artifact"
    );
    // What the journal holds as finished (a torn last line does not count).
    let done: HashSet<String> = std::fs::read_to_string(&entries)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["fetched"].as_str().unwrap().to_string())
        .collect();
    assert!(done.len() >= 150);
    let before = read_jsonl(&log).len();

    let (code, _, err) = run_docsnap(&[
        "build",
        "--source",
        "godot",
        "--mirror",
        &mirror.url,
        "--out",
        outs,
        "--rate",
        "0",
    ]);
    assert_eq!(code, 0, "{err}");
    let (got, _) = built_pages(out.path(), "godot", "stable");
    assert_eq!(got.len(), 588);
    assert!(
        !out.path().join("godot/stable/.journal").exists(),
        "journal left behind"
    );
    let after: Vec<_> = read_jsonl(&log).into_iter().skip(before).collect();
    let refetched: Vec<String> = after
        .iter()
        .map(|l| {
            format!(
                "https://{}{}",
                l["host"].as_str().unwrap(),
                l["path"].as_str().unwrap()
            )
        })
        .filter(|u| done.contains(u))
        .collect();
    assert!(
        refetched.is_empty(),
        "fetched again after resume: {:?}",
        &refetched[..refetched.len().min(5)]
    );
    let fetched_after = after
        .iter()
        .filter(|l| {
            let p = l["path"].as_str().unwrap();
            p.ends_with(".html") || p.ends_with('/')
        })
        .count();
    assert!(
        fetched_after + done.len() >= 588,
        "{fetched_after} + {} pages",
        done.len()
    );
}
