//! Golden snapshots of normalize + section for representative pages of every
//! site family, read from the local mirrors (`../shared/sites`).
//!
//! Each snapshot (`tests/it/golden/<name>.snap`) holds the page's title,
//! description and Markdown body, then one line per section:
//! `anchor | heading path | level | part | chars` (`-` for the page lead). Every golden was reviewed against
//! the mirrored page; a change here is a change in what agents read.
//!
//! Update after a deliberate change with `INSTA_UPDATE=always cargo test --test
//! it golden::` (or `cargo insta review`), then review the diff like code.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use docsnap::build::MAX_SECTION_CHARS;
use docsnap::config::Config;
use docsnap::markdown::SlugStyle;
use docsnap::normalize::{normalize, BodyKind};
use docsnap::section::split;

/// The repository's own sources.yaml: family and slug style per source.
static CONFIG: LazyLock<Config> = LazyLock::new(|| {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sources.yaml");
    Config::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
});

fn sites() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sites")
}

/// Normalize and section one mirrored page and render the snapshot text.
///
/// `file` is the page's path under the mirror's host folder; `url` its public URL.
fn render(source: &str, host: &str, file: &str, url: &str) -> String {
    let src = CONFIG
        .source(source)
        .unwrap_or_else(|| panic!("source {source} not in sources.yaml"));
    let slug = src.slug.unwrap_or(SlugStyle::Github);
    let kind = if file.ends_with(".md") {
        BodyKind::Markdown
    } else {
        BodyKind::Html
    };
    let path = sites().join(host).join(file);
    let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let n = normalize(src.family, kind, &body, url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let sections = split(url, &n.title, &n, slug, MAX_SECTION_CHARS);
    if let Some(dir) = std::env::var_os("GOLDEN_DUMP") {
        // Inspection aid: GOLDEN_DUMP=/tmp/dir writes each section's text.
        let dump: Vec<String> = sections
            .iter()
            .map(|s| format!("=== #{} part {}\n{}\n", s.anchor, s.part, s.text))
            .collect();
        let name = url.trim_start_matches("https://").replace('/', "_");
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(Path::new(&dir).join(name), dump.concat());
    }

    let mut out = String::with_capacity(n.markdown.len() + 64 * sections.len() + 256);
    out.push_str(&format!(
        "url: {url}\ntitle: {}\ndescription: {}\n",
        n.title, n.description
    ));
    out.push_str("\n======== markdown ========\n\n");
    out.push_str(&n.markdown);
    out.push_str(
        "\n\n======== sections: anchor | heading path | level | part | chars ========\n\n",
    );
    for s in &sections {
        out.push_str(&format!(
            "{} | {} | {} | {} | {}\n",
            if s.anchor.is_empty() { "-" } else { &s.anchor },
            s.heading_path.join(" > "),
            s.level,
            s.part,
            s.text.chars().count()
        ));
    }
    out
}

macro_rules! golden {
    ($($test:ident: $source:literal, $host:literal, $file:literal, $url:literal;)+) => {$(
        #[test]
        fn $test() {
            let text = render($source, $host, $file, $url);
            insta::with_settings!({
                snapshot_path => "golden",
                prepend_module_to_snapshot => false,
                omit_expression => true,
                description => $url,
            }, {
                insta::assert_snapshot!(stringify!($test), text);
            });
        }
    )+};
}

golden! {
    // code.claude.com (Mintlify, runs slugs)
    claude_hooks: "claude-code", "code.claude.com", "docs/en/hooks.md",
        "https://code.claude.com/docs/en/hooks";
    claude_settings: "claude-code", "code.claude.com", "docs/en/settings.md",
        "https://code.claude.com/docs/en/settings";
    claude_quickstart: "claude-code", "code.claude.com", "docs/en/quickstart.md",
        "https://code.claude.com/docs/en/quickstart";
    claude_terminal_config: "claude-code", "code.claude.com", "docs/en/terminal-config.md",
        "https://code.claude.com/docs/en/terminal-config";

    // modelcontextprotocol.io (Mintlify, words slugs)
    mcp_spec_versioning: "mcp", "modelcontextprotocol.io",
        "specification/2026-07-28/basic/versioning.md",
        "https://modelcontextprotocol.io/specification/2026-07-28/basic/versioning";
    mcp_spec_tools: "mcp", "modelcontextprotocol.io",
        "specification/2026-07-28/server/tools.md",
        "https://modelcontextprotocol.io/specification/2026-07-28/server/tools";
    mcp_connect_local_servers: "mcp", "modelcontextprotocol.io",
        "docs/2026-07-28/develop/connect-local-servers.md",
        "https://modelcontextprotocol.io/docs/2026-07-28/develop/connect-local-servers";
    mcp_intro: "mcp", "modelcontextprotocol.io",
        "docs/2026-07-28/getting-started/intro.md",
        "https://modelcontextprotocol.io/docs/2026-07-28/getting-started/intro";

    // cursor.com
    cursor_rules: "cursor", "cursor.com", "docs/context/rules.md",
        "https://cursor.com/docs/context/rules";
    cursor_mcp: "cursor", "cursor.com", "docs/context/mcp.md",
        "https://cursor.com/docs/context/mcp";
    cursor_bugbot: "cursor", "cursor.com", "docs/bugbot.md",
        "https://cursor.com/docs/bugbot";

    // developers.openai.com/codex
    codex_cli_reference: "codex", "developers.openai.com", "codex/cli/reference.md",
        "https://developers.openai.com/codex/cli/reference";
    codex_quickstart: "codex", "developers.openai.com", "codex/quickstart.md",
        "https://developers.openai.com/codex/quickstart";
    codex_windows: "codex", "developers.openai.com", "codex/windows.md",
        "https://developers.openai.com/codex/windows";

    // docs.godotengine.org (Sphinx)
    godot_2d_movement: "godot", "docs.godotengine.org",
        "en/stable/tutorials/2d/2d_movement.html",
        "https://docs.godotengine.org/en/stable/tutorials/2d/2d_movement.html";
    godot_scripting_first_script: "godot", "docs.godotengine.org",
        "en/stable/getting_started/step_by_step/scripting_first_script.html",
        "https://docs.godotengine.org/en/stable/getting_started/step_by_step/scripting_first_script.html";
    godot_inputevent: "godot", "docs.godotengine.org",
        "en/stable/tutorials/inputs/inputevent.html",
        "https://docs.godotengine.org/en/stable/tutorials/inputs/inputevent.html";
    godot_class_node: "godot", "docs.godotengine.org", "en/stable/classes/class_node.html",
        "https://docs.godotengine.org/en/stable/classes/class_node.html";
    godot_class_tween: "godot", "docs.godotengine.org", "en/stable/classes/class_tween.html",
        "https://docs.godotengine.org/en/stable/classes/class_tween.html";

    // docs.leapview.example
    leapview_cli_build: "leapview", "docs.leapview.example", "v3.2/cli/build.html",
        "https://docs.leapview.example/v3.2/cli/build";
    leapview_getting_started: "leapview", "docs.leapview.example", "v3.2/getting-started.html",
        "https://docs.leapview.example/v3.2/getting-started";
    leapview_yaml_reference: "leapview", "docs.leapview.example",
        "v3.2/reference/leapview-yaml.html",
        "https://docs.leapview.example/v3.2/reference/leapview-yaml";
    leapview_v31_embed: "leapview", "docs.leapview.example", "v3.1/guides/embed.html",
        "https://docs.leapview.example/v3.1/guides/embed";
}

/// The goldens as they were when [`docsnap::model::RECORDS_VERSION`] was last
/// set: `<version> <sha256 of the goldens' bodies>`.
const RECORDED: &str = include_str!("golden/records-version.txt");

/// A change in what normalize and section make of a page must bump
/// `RECORDS_VERSION`, or rebuilds keep serving the old records of every
/// page the site answers 304 for. The goldens are the witness: when their
/// bodies change and the version does not, this fails.
#[test]
fn records_version_guard() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "goldens missing from {}", dir.display());
    let mut all = String::new();
    for p in &names {
        let text = std::fs::read_to_string(p).unwrap();
        // The body only: insta's metadata header is not a record.
        let body = text.splitn(3, "---\n").nth(2).unwrap_or(&text);
        all.push_str(body);
    }
    let sha = docsnap::util::sha256_hex(all.as_bytes());
    let version = docsnap::model::RECORDS_VERSION;
    let now = format!("{version} {sha}");
    let (was_version, was_sha) = RECORDED.trim().split_once(' ').unwrap_or(("?", "?"));
    assert!(
        was_sha == sha || was_version != version.to_string(),
        "the goldens changed but RECORDS_VERSION is still {version}: bump it in src/model.rs \
         (rebuilds must not reuse records the old normalizer made), then write `{}` \
         into tests/it/golden/records-version.txt",
        format_args!("{} {sha}", version + 1),
    );
    assert_eq!(
        RECORDED.trim(),
        now,
        "RECORDS_VERSION changed: write `{now}` into tests/it/golden/records-version.txt"
    );
}
