//! HTML adapters over the local mirrors (`../shared/sites`): every page of
//! docs.godotengine.org/en/stable and of docs.leapview.example v3.1 and v3.2.
//!
//! LeapView's host index and version landing pages (`/index.html`, `/v3.x/index.html`)
//! are generated link lists, not authored pages (see its PROVENANCE.md): they only get
//! the smoke check (normalizes, has a title), not the content checks.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Instant;

use docsnap::config::Family;
use docsnap::markdown::SlugStyle;
use docsnap::model::{HeadingAnchor, Normalized};
use docsnap::normalize::godot_class::{parse_class, GodotClass};
use docsnap::normalize::html_dispatch;
use docsnap::section::split;
use regex::Regex;
use scraper::{Html, Selector};

fn sites() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sites")
}

fn html_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

static CANONICAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"<link rel="canonical" href="([^"]+)""#).expect("regex"));

/// The page's public URL: its canonical link, else host + path.
fn public_url(host: &str, host_dir: &Path, file: &Path, html: &str) -> String {
    if let Some(c) = CANONICAL.captures(html) {
        return c[1].to_string();
    }
    let rel = file.strip_prefix(host_dir).unwrap_or(file);
    format!("https://{host}/{}", rel.to_string_lossy())
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Strings that are chrome on this family: (text, may it also occur in the content?).
fn boilerplate(family: Family) -> &'static [(&'static str, bool)] {
    match family {
        Family::Sphinx => &[
            ("Edit on GitHub", false),
            ("Built with", false),
            ("sphinx_rtd_theme", false),
            ("Read the Docs", true),
            ("Copyright", false),
            ("Linietsky", true),
            ("Search docs", false),
            ("Hosted by", false),
            ("Project Home", false),
            ("v: stable", false),
            ("Link to this heading", false),
            ("Previous", true),
            ("Next", true),
            ("¶", false),
            ("🔗", false),
            ("![Logo]", false),
        ],
        _ => &[
            ("Edit this page", false),
            ("Was this helpful", false),
            ("Thanks for your feedback", false),
            ("On this page", false),
            ("We use cookies", false),
            ("Cookie policy", false),
            ("You are viewing an older version", false),
            ("latest version (3.2)", false),
            ("Skip to main content", false),
            ("Last updated on", false),
            ("Sign in", false),
            ("Search docs", false),
            ("Copy code", false),
            ("fictional product", false),
            ("Direct link to this heading", false),
            ("Docs 3.", false),
            ("Previous", true),
            ("Next", true),
            ("¶", false),
        ],
    }
}

/// Lines of Markdown with container prefixes (`> `, list indentation) removed.
fn bare(line: &str) -> &str {
    let mut l = line.trim_start();
    while let Some(rest) = l.strip_prefix('>') {
        l = rest.trim_start();
    }
    l
}

/// Problems with code fences, and the number of ATX heading lines outside them.
fn scan_markdown(md: &str) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut open: Option<(char, usize)> = None;
    let mut headings = 0;
    for (no, line) in md.lines().enumerate() {
        let b = bare(line);
        let fence_char = b.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(c) = fence_char {
            let n = b.chars().take_while(|x| *x == c).count();
            if n >= 3 {
                match open {
                    None => {
                        open = Some((c, n));
                        continue;
                    }
                    Some((oc, on)) if oc == c && n >= on && b[n..].trim().is_empty() => {
                        open = None;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        if open.is_none() && line.starts_with('#') {
            let level = line.chars().take_while(|c| *c == '#').count();
            if level <= 6 && line[level..].starts_with(' ') {
                headings += 1;
            }
        }
        let _ = no;
    }
    if let Some((c, n)) = open {
        problems.push(format!("unclosed fence {}", c.to_string().repeat(n)));
    }
    (problems, headings)
}

static SEL_ID: LazyLock<Selector> = LazyLock::new(|| Selector::parse("[id]").expect("sel"));

fn ids_of(doc: &Html) -> HashSet<String> {
    doc.select(&SEL_ID)
        .filter_map(|e| e.value().id().map(str::to_string))
        .collect()
}

fn content_text(doc: &Html, root_css: &str) -> String {
    let Ok(s) = Selector::parse(root_css) else {
        return String::new();
    };
    doc.select(&s)
        .next()
        .map(|r| r.text().collect::<Vec<_>>().join(" "))
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// All content checks for one page; returns the problems found.
fn check_page(family: Family, html: &str, n: &Normalized) -> Vec<String> {
    let mut problems = Vec::new();
    if n.title.trim().is_empty() {
        problems.push("empty title".into());
    }
    if n.markdown.trim().is_empty() {
        problems.push("empty body".into());
    }
    if n.markdown != n.markdown.trim() {
        problems.push("body not trimmed".into());
    }
    if n.markdown.contains("\n\n\n\n") {
        problems.push("more than two blank lines in a row".into());
    }
    let doc = Html::parse_document(html);
    let root_css = match family {
        Family::Sphinx => "div[itemprop=articleBody]",
        _ => "article.doc-article",
    };
    let content = content_text(&doc, root_css);
    let all = format!("{}\n{}\n{}", n.title, n.description, n.markdown);
    for (s, may_be_content) in boilerplate(family) {
        let got = count(&all, s);
        let allowed = if *may_be_content {
            count(&content, s)
        } else {
            0
        };
        if got > allowed {
            problems.push(format!("boilerplate {s:?} ×{got} (content has {allowed})"));
        }
    }
    let (fence_problems, headings) = scan_markdown(&n.markdown);
    problems.extend(fence_problems);
    if headings != n.anchors().len() {
        problems.push(format!(
            "{headings} heading lines but {} anchors",
            n.anchors().len()
        ));
    }
    let ids = ids_of(&doc);
    // Contract with the sectioner: one section per heading, anchored on our ids.
    let sections = split(
        "https://example.invalid/page",
        &n.title,
        n,
        SlugStyle::Github,
        0,
    );
    let heading_sections = sections
        .iter()
        .filter(|s| s.part == 0 && !(s.ordinal == 0 && s.anchor.is_empty() && s.level == 1))
        .count();
    if heading_sections != n.anchors().len() {
        problems.push(format!(
            "section::split made {heading_sections} heading sections for {} anchors",
            n.anchors().len()
        ));
    }
    for s in &sections {
        if !s.anchor.is_empty() && !ids.contains(&s.anchor) {
            problems.push(format!("section anchor {:?} not in the HTML", s.anchor));
        }
    }
    for a in &n.anchors() {
        match a {
            HeadingAnchor::Id(id) if !ids.contains(id) => {
                problems.push(format!("heading id {id:?} not in the HTML"))
            }
            HeadingAnchor::Id(_) => {}
            other => problems.push(format!("heading without an id of its own: {other:?}")),
        }
    }
    if n.description.chars().count() > 200 {
        problems.push("description over 200 chars".into());
    }
    problems
}

struct Tally {
    checked: usize,
    failures: Vec<String>,
}

fn run_family(family: Family, host: &str, subdirs: &[&str], skip: &dyn Fn(&Path) -> bool) -> Tally {
    let host_dir = sites().join(host);
    let mut tally = Tally {
        checked: 0,
        failures: Vec::new(),
    };
    let mut bytes = 0usize;
    let mut elapsed = std::time::Duration::ZERO;
    for sub in subdirs {
        for file in html_files(&host_dir.join(sub)) {
            let Ok(html) = std::fs::read_to_string(&file) else {
                tally
                    .failures
                    .push(format!("{}: unreadable", file.display()));
                continue;
            };
            let url = public_url(host, &host_dir, &file, &html);
            let t0 = Instant::now();
            let res = html_dispatch(family, &html, &url);
            elapsed += t0.elapsed();
            bytes += html.len();
            let n = match res {
                Ok(n) => n,
                Err(e) => {
                    tally.failures.push(format!("{url}: {e}"));
                    continue;
                }
            };
            if skip(&file) {
                if n.title.is_empty() {
                    tally.failures.push(format!("{url}: empty title"));
                }
                continue;
            }
            tally.checked += 1;
            for p in check_page(family, &html, &n) {
                tally.failures.push(format!("{url}: {p}"));
            }
        }
    }
    eprintln!(
        "{host}: {} pages checked, {:.1} MB normalized in {:.2?}",
        tally.checked,
        bytes as f64 / 1e6,
        elapsed
    );
    tally
}

fn report(t: Tally) {
    assert!(
        t.checked > 0,
        "no pages checked: is the mirror at {}?",
        sites().display()
    );
    if !t.failures.is_empty() {
        for f in t.failures.iter().take(60) {
            eprintln!("FAIL {f}");
        }
        panic!("{} problems over {} pages", t.failures.len(), t.checked);
    }
}

#[test]
fn godot_every_page() {
    let t = run_family(
        Family::Sphinx,
        "docs.godotengine.org",
        &["en/stable"],
        &|_| false,
    );
    report(t);
}

#[test]
fn leapview_every_page() {
    let host_dir = sites().join("docs.leapview.example");
    let landing: HashSet<PathBuf> = ["index.html", "v3.1/index.html", "v3.2/index.html"]
        .iter()
        .map(|p| host_dir.join(p))
        .collect();
    let mut t = run_family(
        Family::Leapview,
        "docs.leapview.example",
        &["v3.1", "v3.2"],
        &|p| landing.contains(p),
    );
    // The host index sits outside the version folders: smoke-check it too.
    let index = host_dir.join("index.html");
    if let Ok(html) = std::fs::read_to_string(&index) {
        match html_dispatch(Family::Leapview, &html, "https://docs.leapview.example/") {
            Ok(n) if !n.title.is_empty() => {}
            Ok(_) => t.failures.push("host index: empty title".into()),
            Err(e) => t.failures.push(format!("host index: {e}")),
        }
    }
    report(t);
}

// ---------------------------------------------------------------------------
// Class reference
// ---------------------------------------------------------------------------

fn class_dir() -> PathBuf {
    sites().join("docs.godotengine.org/en/stable/classes")
}

fn class_url(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("https://docs.godotengine.org/en/stable/classes/{name}")
}

/// Member anchors the page defines (`id=` of members, enums and enum values).
fn member_anchors(html: &str) -> Vec<String> {
    static SLUG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"<span id="class-([^"-]+)"></span><h1>"#).expect("regex"));
    let Some(slug) = SLUG.captures(html).map(|c| regex::escape(&c[1])) else {
        return Vec::new();
    };
    let re = Regex::new(&format!(
        r#"id="(class-{slug}-(?:private-method|method|property|signal|constant|theme-[a-z_]+|annotation|constructor|operator)-[^"]*|enum-{slug}-[^"]*)""#
    ))
    .expect("regex");
    re.captures_iter(html).map(|c| c[1].to_string()).collect()
}

/// Anchors whose entry is followed by description text on the page.
fn anchors_with_description(html: &str) -> HashSet<String> {
    static ENTRY: LazyLock<Selector> = LazyLock::new(|| {
        Selector::parse("section.classref-descriptions-group > p[class^=classref-][id]")
            .expect("sel")
    });
    let doc = Html::parse_document(html);
    let mut out = HashSet::new();
    for p in doc.select(&ENTRY) {
        let mut next = p.next_siblings().filter_map(scraper::ElementRef::wrap);
        let mut n = next.next();
        if n.is_some_and(|e| {
            e.value().has_class(
                "classref-property-setget",
                scraper::CaseSensitivity::CaseSensitive,
            )
        }) {
            n = next.next();
        }
        let Some(n) = n else { continue };
        let name = n.value().name();
        let is_entry = n.value().classes().any(|c| c.starts_with("classref-"));
        if name != "hr" && !is_entry && !n.text().collect::<String>().trim().is_empty() {
            if let Some(id) = p.value().id() {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// Member entries on the page, overloads without an `id` included.
fn entry_count(html: &str) -> usize {
    static ENTRY: LazyLock<Selector> = LazyLock::new(|| {
        Selector::parse("section.classref-descriptions-group > p[class^=classref-]").expect("sel")
    });
    Html::parse_document(html).select(&ENTRY).count()
}

fn class_counts(c: &GodotClass) -> String {
    let values: usize = c.enums.iter().map(|e| e.values.len()).sum();
    format!(
        "props {} methods {} signals {} constants {} enums {} (values {}) theme {} annotations {} ctors {} ops {}",
        c.properties.len(),
        c.methods.len(),
        c.signals.len(),
        c.constants.len(),
        c.enums.len(),
        values,
        c.theme_properties.len(),
        c.annotations.len(),
        c.constructors.len(),
        c.operators.len()
    )
}

fn check_class(file: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(html) = std::fs::read_to_string(file) else {
        return vec![format!("{}: unreadable", file.display())];
    };
    let url = class_url(file);
    let class = match parse_class(&html, &url) {
        Ok(c) => c,
        Err(e) => return vec![format!("{url}: {e}")],
    };
    let mut parsed: BTreeMap<&str, &str> = BTreeMap::new();
    for m in class.members() {
        parsed
            .entry(m.anchor.as_str())
            .or_insert(m.description.as_str());
    }
    for e in &class.enums {
        parsed
            .entry(e.anchor.as_str())
            .or_insert(e.description.as_str());
    }
    let anchors = member_anchors(&html);
    let described = anchors_with_description(&html);
    let mut missing = 0;
    let mut undescribed = 0;
    for a in &anchors {
        match parsed.get(a.as_str()) {
            None => {
                missing += 1;
                problems.push(format!("{url}: member {a} not parsed"));
            }
            Some(d) if d.trim().is_empty() && described.contains(a) => {
                undescribed += 1;
                problems.push(format!("{url}: member {a} lost its description"));
            }
            _ => {}
        }
    }
    for m in class.members() {
        if m.name.is_empty() || m.signature.is_empty() {
            problems.push(format!("{url}: member {} without name/signature", m.anchor));
        }
    }
    let total = class.members().count() + class.enums.len();
    let own = total
        - class
            .properties
            .iter()
            .filter(|p| p.overrides.is_some())
            .count();
    let entries = entry_count(&html);
    if own != entries {
        problems.push(format!(
            "{url}: {entries} entries on the page, {own} parsed"
        ));
    }
    eprintln!(
        "{}: {} member anchors / {} entries in HTML, {} parsed ({} missing, {} lost descriptions); {}",
        class.name,
        anchors.len(),
        entries,
        total,
        missing,
        undescribed,
        class_counts(&class)
    );
    problems
}

#[test]
fn godot_five_classes_complete() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for name in [
        "node",
        "characterbody2d",
        "vector2",
        "tween",
        "@globalscope",
    ] {
        let file = class_dir().join(format!("class_{name}.html"));
        assert!(file.exists(), "{} missing", file.display());
        problems.extend(check_class(&file));
        checked += 1;
    }
    assert_eq!(checked, 5);
    for p in problems.iter().take(60) {
        eprintln!("FAIL {p}");
    }
    assert!(problems.is_empty(), "{} problems", problems.len());
}

#[test]
fn godot_every_class_page_parses() {
    let files: Vec<PathBuf> = html_files(&class_dir())
        .into_iter()
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("class_"))
        })
        .collect();
    assert!(
        !files.is_empty(),
        "no class pages under {}",
        class_dir().display()
    );
    let mut problems = Vec::new();
    let t0 = Instant::now();
    for f in &files {
        problems.extend(check_class(f));
    }
    eprintln!("{} class pages parsed in {:.2?}", files.len(), t0.elapsed());
    for p in problems.iter().take(60) {
        eprintln!("FAIL {p}");
    }
    assert!(problems.is_empty(), "{} problems", problems.len());
}

#[test]
fn serializes_class() {
    let file = class_dir().join("class_vector2.html");
    let html = std::fs::read_to_string(&file).expect("mirror has Vector2");
    let c = parse_class(&html, &class_url(&file)).expect("parses");
    let json = serde_json::to_string(&c).expect("serializes");
    assert!(json.contains("\"name\":\"Vector2\""));
    assert!(!c.constructors.is_empty() && !c.operators.is_empty());
    let back: GodotClass = serde_json::from_str(&json).expect("round-trips");
    assert_eq!(back, c);
}

#[test]
fn godot_deprecated_classes_and_members_are_marked() {
    let class = |name: &str| {
        let file = class_dir().join(format!("class_{name}.html"));
        let html = std::fs::read_to_string(&file).unwrap();
        parse_class(&html, &class_url(&file)).unwrap()
    };
    // Whole classes the docs replace, and the ones that replace them.
    assert!(class("parallaxlayer").is_deprecated());
    assert!(class("tilemap").is_deprecated());
    assert!(!class("parallax2d").is_deprecated());
    assert!(!class("node").is_deprecated());
    // A member, beside a sibling that is not.
    let plugin = class("editorplugin");
    let member = |name: &str| plugin.members().find(|m| m.name == name).unwrap();
    assert!(member("add_control_to_dock").is_deprecated());
    assert!(!member("add_control_to_container").is_deprecated());
    assert!(plugin.members().filter(|m| m.is_deprecated()).count() < plugin.members().count() / 2);
}
