//! Fuzzing on stable Rust: property tests that feed hostile, generated input
//! to every parser docsnap runs on fetched or client-supplied data.
//!
//! Each property checks what must hold for *any* input: the parser returns
//! (`Ok` or a typed `Err`) without panicking, within the hang guard, and —
//! where that truly holds — with output bounded by its input. Generators mix
//! fragments of real markup (HTML tags and classes the adapters look for, MDX
//! components the renderers know) with random bytes, control characters,
//! unbalanced structure and huge or deeply nested input; a few real pages of
//! the mirror (`../shared/sites`) are mutated too.
//!
//! Knobs (environment):
//! - `DOCSNAP_FUZZ_CASES`: cases per property (default: per property, sized so
//!   the file runs in about a minute in debug on 2 cores);
//! - `DOCSNAP_FUZZ_SEED`: a fixed RNG seed (default: a fresh one per run);
//! - `DOCSNAP_FUZZ_STACK_MIB`: stack of the threads the properties run on
//!   (default 1024). The parsers once recursed per nesting level and
//!   overflowed the 2 MiB stack production threads have; nesting is bounded
//!   now, and the regression tests at the end of this file run on production
//!   stacks to keep it so.
//! - `DOCSNAP_FUZZ_HANG_SECS`: when set (scripts/soak sets 10), a call that
//!   takes longer *on its thread's CPU clock* fails its case (CPU time, so
//!   that a busy machine does not fail a fast parser), and one still running
//!   after 12× as long by the wall clock aborts the run with its input saved.
//!   Off by default: tests do not assert times; a hang in CI shows as a CI
//!   timeout.
//!
//! Each property prints `fuzz: <property> <n> cases` to stderr (shrinking
//! steps included) for soak scripts to sum.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Once, RwLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use docsnap::config::Family;
use docsnap::crawl::discover::{parse_llms_txt, parse_manifest, parse_sitemap, SitemapKind};
use docsnap::crawl::links;
use docsnap::markdown::{self, SlugStyle, Slugger};
use docsnap::model::{HeadingAnchor, Normalized};
use docsnap::model::{Manifest, Page, Section};
use docsnap::normalize::godot_class::{self, GodotClass};
use docsnap::normalize::{normalize, BodyKind};
use docsnap::search::{Library, LoadedSource};
use docsnap::section;
use docsnap::serve::tools::{ToolFamily, ToolRegistry};
use docsnap::serve::validate::validate_args;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------
// Harness: case counts, counters, the hang guard, the output bound
// ---------------------------------------------------------------------------

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn config(default_cases: u32) -> Config {
    let cases = env_number("DOCSNAP_FUZZ_CASES").map_or(default_cases, |n| n as u32);
    Config {
        cases,
        max_shrink_iters: 200,
        // Nothing is written into the repository; a failure prints its
        // minimal input instead.
        failure_persistence: None,
        // A fixed seed by default, so CI is repeatable; scripts/soak passes
        // fresh seeds.
        rng_seed: RngSeed::Fixed(env_number("DOCSNAP_FUZZ_SEED").unwrap_or(0x5eed_d0c5)),
        ..Config::default()
    }
}

/// Run one property: `cases` inputs from `strategy` (built on the property's
/// own thread, with the big stack), each checked by `test`. Counts the cases
/// and prints the count, then fails with proptest's minimal input if any case
/// failed.
fn property<S, F>(name: &str, default_cases: u32, strategy: impl FnOnce() -> S + Send, test: F)
where
    S: Strategy,
    F: Fn(S::Value) -> Result<(), TestCaseError> + Send,
{
    let stack_mib = env_number("DOCSNAP_FUZZ_STACK_MIB").unwrap_or(1024) as usize;
    let count = AtomicU64::new(0);
    let counter = &count;
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(name.to_string())
            .stack_size(stack_mib << 20)
            .spawn_scoped(scope, move || {
                let strategy = strategy();
                let mut runner = TestRunner::new(config(default_cases));
                runner
                    .run(&strategy, |value| {
                        counter.fetch_add(1, Ordering::Relaxed);
                        test(value)
                    })
                    .map_err(|e| e.to_string())
            })
            .expect("spawn the property's thread")
            .join()
            .unwrap_or_else(|_| Err("the property's thread panicked".into()))
    });
    // Straight to the stderr handle: the test harness captures `eprintln!`
    // of passing tests, and soak scripts need these lines.
    let _ = writeln!(
        std::io::stderr(),
        "fuzz: {name} {} cases",
        count.load(Ordering::Relaxed)
    );
    if let Err(e) = outcome {
        panic!("{name}: {e}");
    }
}

/// The hang guard. This is the only time assertion in the file and it checks
/// for hangs and quadratic blowups, not for speed: 10 s is far above what any
/// generated input needs even in a debug build.
static HANG_GUARD: LazyLock<Option<Duration>> =
    LazyLock::new(|| env_number("DOCSNAP_FUZZ_HANG_SECS").map(Duration::from_secs));

/// A call still running after this long never returns to be shrunk: the
/// watchdog saves its input under the temp dir and aborts the run.
/// How long an async wait for the server may last: the hang guard when
/// set, else long enough that only a real hang reaches it.
fn hang_wait() -> Duration {
    HANG_GUARD.unwrap_or(Duration::from_secs(300))
}

fn hang_abort() -> Option<Duration> {
    HANG_GUARD.map(|g| g * 12)
}

struct Running {
    what: String,
    input: String,
    since: Instant,
}

static RUNNING: LazyLock<Mutex<HashMap<ThreadId, Running>>> = LazyLock::new(Default::default);

fn watchdog() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let Some(abort) = hang_abort() else { return };
        if let Some(r) = running.values().find(|r| r.since.elapsed() > abort) {
            let path =
                std::env::temp_dir().join(format!("docsnap-fuzz-hang-{}.txt", std::process::id()));
            let saved = std::fs::write(&path, &r.input).map_or("not saved".into(), |()| {
                format!("saved to {}", path.display())
            });
            let _ = writeln!(
                std::io::stderr(),
                "fuzz: HANG: {} still running after {abort:?}; its input ({} bytes) {saved}",
                r.what,
                r.input.len()
            );
            std::process::abort();
        }
    }
}

/// CPU time the calling thread has used.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Run one parser call under the hang guard (and the watchdog).
fn timed<T>(what: &str, input: &str, f: impl FnOnce() -> T) -> T {
    static WATCHDOG: Once = Once::new();
    WATCHDOG.call_once(|| {
        std::thread::spawn(watchdog);
    });
    let me = std::thread::current().id();
    let running = Running {
        what: what.to_string(),
        input: input.to_string(),
        since: Instant::now(),
    };
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(me, running);
    let t = thread_cpu_time();
    let out = f();
    let took = thread_cpu_time().saturating_sub(t);
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&me);
    if let Some(guard) = *HANG_GUARD {
        assert!(
            took < guard,
            "{what} took {took:?} of CPU on {} bytes of input (hang guard {guard:?})",
            input.len()
        );
    }
    out
}

/// Output no more than linear in the input: a page of N bytes never turns
/// into much more than N bytes of Markdown.
fn linear_bound(input_len: usize) -> usize {
    20 * input_len + 10_000
}

/// The converters' documented cost: "linear in size × nesting depth"
/// (`src/normalize/html.rs`). Containers that prefix their lines (lists,
/// quotes, callouts) indent every line once per level they render, so their
/// output grows with the rendered depth (at most `html::MAX_DEPTH`).
fn nesting_bound(input_len: usize, depth: usize) -> usize {
    (20 + depth) * input_len + 10_000
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

#[rustfmt::skip]
const HTML_TAGS: &[&str] = &[
    "div", "span", "p", "a", "b", "i", "em", "strong", "code", "pre", "kbd", "samp", "tt", "var",
    "ul", "ol", "li", "menu", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "th",
    "td", "caption", "colgroup", "col", "blockquote", "section", "article", "main", "aside", "nav",
    "header", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "img", "video", "source", "br", "hr",
    "sup", "sub", "details", "summary", "figure", "figcaption", "q", "s", "del", "ins", "script",
    "style", "svg", "template", "noscript", "iframe", "form", "input", "select", "option",
    "textarea", "button", "html", "head", "body", "title", "meta", "link", "base", "math", "font",
    "center", "abbr", "wbr", "frameset", "plaintext", "xmp", "listing", "custom-element",
];

#[rustfmt::skip]
const ATTR_NAMES: &[&str] = &[
    "class", "id", "href", "src", "alt", "title", "role", "itemprop", "name", "content", "rel",
    "type", "lang", "start", "colspan", "rowspan", "data-language", "charset", "http-equiv",
    "hidden", "aria-label", "style", "open",
];

/// Attribute values the adapters branch on, and some that break URL joining.
#[rustfmt::skip]
const ATTR_VALUES: &[&str] = &[
    "admonition note", "admonition warning", "admonition-title", "highlight",
    "highlight-python notranslate", "headerlink", "line-block", "footnote", "doc-footnote",
    "classref-method", "classref-property", "classref-signal", "classref-constant",
    "classref-enumeration", "classref-item-separator", "classref-introduction-group", "code-block",
    "code-block__header", "callout callout-tip", "callout-title", "doc-article", "doc-markdown",
    "heading-anchor", "sphinx-tabs", "sphinx-tabs-tab", "sphinx-tabs-panel", "tab-content",
    "articleBody", "main", "note", "alternate", "text/markdown", "language-rust", "windows-1252",
    "iso-8859-1", "Content-Type", "text/html; charset=windows-1252", "#", "#top", "", " ", "/",
    "..", "../../../../../../../../x", "//evil.example/x", "http://[::1", "http://a b/",
    "https://x.example/a?b#c", "mailto:a@b", "javascript:alert(1)", "data:text/html,<p>x</p>",
    "file:///etc/passwd", "x.png", "page.md", "99999999999999999999999", "-1", "0", "\u{0}",
    "\u{202e}rtl", "é\u{301}",
];

/// Strings that break naive text handling.
#[rustfmt::skip]
const NASTY: &[&str] = &[
    "\0", "\u{1}\u{2}\u{7f}", "\u{feff}", "\u{202e}", "\u{2028}", "\r\n", "\r", "\t", "\u{b}\u{c}",
    "&#0;", "&#x110000;", "&#xD800;", "&nbsp;", "&amp;amp;", "&lt;div&gt;", "&unknown;", "&",
    "\u{fffd}", "İ", "ﬃ", "ß", "e\u{301}\u{301}\u{301}", "👩‍👩‍👧‍👦", "\\", "`", "``", "```", "~~~",
    "{", "}", "${", "<", ">", "[", "]", "](", "(", ")", "*", "**", "_", "#", "|", "-", "'", "\"",
    "’", " ", "\n", "\n\n",
];

/// Random text: arbitrary Unicode, control characters, nasty literals.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::collection::vec(any::<char>(), 0..40).prop_map(String::from_iter),
        2 => "[a-zA-Z0-9 .,:;!?-]{0,60}",
        2 => prop::collection::vec(select(NASTY), 1..8).prop_map(|v| v.concat()),
        1 => prop::collection::vec(prop::char::range('\0', '\u{1f}'), 1..20)
            .prop_map(String::from_iter),
    ]
    .boxed()
}

/// Bytes a page in another charset is made of, read the two ways a decoder
/// can: lossily as UTF-8 (U+FFFD for every high byte) or as Latin-1.
fn foreign_bytes() -> BoxedStrategy<String> {
    (prop::collection::vec(any::<u8>(), 0..400), any::<bool>())
        .prop_map(|(bytes, latin1)| {
            if latin1 {
                bytes.iter().map(|&b| char::from(b)).collect()
            } else {
                String::from_utf8_lossy(&bytes).into_owned()
            }
        })
        .boxed()
}

/// Random bytes decoded lossily: invalid UTF-8 everywhere.
fn lossy_bytes(max: usize) -> BoxedStrategy<String> {
    prop::collection::vec(any::<u8>(), 0..max)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        .boxed()
}

fn attr() -> BoxedStrategy<String> {
    (
        select(ATTR_NAMES),
        prop_oneof![3 => select(ATTR_VALUES).prop_map(str::to_string), 1 => text()],
        0..4u8,
    )
        .prop_map(|(name, value, quoting)| match quoting {
            0 => format!(" {name}=\"{}\"", value.replace('"', "&quot;")),
            1 => format!(" {name}='{value}'"),
            2 => format!(" {name}={value}"),
            _ => format!(" {name}=\"{value}"), // unterminated
        })
        .boxed()
}

/// Odd but real HTML constructs.
const HTML_SNIPPETS: &[&str] = &[
    "<!DOCTYPE html>",
    "<!doctype html PUBLIC \"-//W3C//DTD HTML 4.01//EN\">",
    "<meta charset=\"windows-1252\">",
    "<meta charset=\"iso-8859-1\">",
    "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\">",
    "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>",
    "<!-- comment -->",
    "<!--",
    "-->",
    "<![CDATA[ x ]]>",
    "<![CDATA[",
    "</>",
    "<>",
    "< div>",
    "<div/>",
    "<br/>",
    "</br>",
    "</p>",
    "<p",
    "<a href=\"",
    "<a href=x.html#frag>",
    "<link rel=\"alternate\" type=\"text/markdown\" href=\"/x.md\">",
    "<div itemprop=\"articleBody\">",
    "<div class=\"body\" role=\"main\">",
    "<article class=\"doc-article\">",
    "<section id=\"s\">",
    "<h1>Title<a class=\"headerlink\" href=\"#t\">¶</a></h1>",
    "<div class=\"admonition note\"><p class=\"admonition-title\">Note</p>",
    "<div class=\"highlight-gdscript notranslate\"><div class=\"highlight\"><pre>",
    "<p class=\"classref-method\"><a href=\"#x\">void</a> <strong>f</strong>(a: int)</p>",
    "<table><tr><th>a<th>b<tr><td>1<td>2</table>",
    "<script>if (a < b) { document.write('</div>') }</script>",
    "<style>p { content: '</style>' }</style>",
    "<textarea><div></textarea>",
    "<plaintext>",
    "<math><mi>x</mi><annotation-xml encoding=\"text/html\"><div>",
    "<svg><foreignObject><p>x</p></foreignObject></svg>",
    "<template><p>x</template>",
    "<frameset><frame>",
    "<isindex>",
    "<image src=x>",
    "<table><td>",
    "<select><option><optgroup>",
];

fn html_fragment() -> BoxedStrategy<String> {
    let tag = select(HTML_TAGS);
    prop_oneof![
        4 => (tag.clone(), prop::collection::vec(attr(), 0..3))
            .prop_map(|(t, a)| format!("<{t}{}>", a.concat())),
        3 => tag.clone().prop_map(|t| format!("</{t}>")),
        4 => text(),
        2 => select(HTML_SNIPPETS).prop_map(str::to_string),
        1 => foreign_bytes(),
        // A short unbalanced run of one tag.
        1 => (tag, 2usize..40).prop_map(|(t, n)| format!("<{t}>").repeat(n)),
    ]
    .boxed()
}

/// Content roots of the HTML adapters, so generated bodies reach the converter.
const HTML_SKELETONS: &[(&str, &str)] = &[
    ("", ""),
    ("<html><head><title>T</title></head><body><main>", "</main></body></html>"),
    ("<html><body><article>", "</article></body></html>"),
    (
        "<html><head><title>T</title><meta name=\"description\" content=\"d\"></head><body><div itemprop=\"articleBody\"><section id=\"t\"><h1>T</h1>",
        "</section></div></body></html>",
    ),
    (
        "<html><head><title>T</title></head><body><article class=\"doc-article\"><header><h1 id=\"t\">T</h1></header><div class=\"doc-markdown\">",
        "</div></article></body></html>",
    ),
    ("<main><h1>T</h1>", ""),
];

/// A random HTML document: fragments of real markup in a skeleton (or none).
fn html_doc() -> BoxedStrategy<String> {
    (
        select(HTML_SKELETONS),
        prop::collection::vec(html_fragment(), 0..150),
    )
        .prop_map(|((head, tail), body)| format!("{head}{}{tail}", body.concat()))
        .boxed()
}

/// MDX components the Mintlify, Cursor and OpenAI renderers know, and some they do not.
#[rustfmt::skip]
const MDX_COMPONENTS: &[&str] = &[
    "Tabs", "Tab", "Note", "Tip", "Warning", "Info", "Danger", "Check", "Callout", "Aside",
    "Steps", "Step", "Card", "CardGroup", "Columns", "Accordion", "AccordionGroup", "CodeGroup",
    "Expandable", "ParamField", "ResponseField", "Field", "Frame", "Tree", "Tree.Folder",
    "Tree.File", "Update", "Badge", "Icon", "Kbd", "Tooltip", "RequestExample", "ResponseExample",
    "ToggleSection", "WorkflowSteps", "ConfigTable", "GlossaryTable", "FileTree", "ExampleTask",
    "PricingCard", "CodexPlanFeatureMatrix", "ModelDetails", "ContentSwitcher", "LinkCard",
    "YouTubeEmbed", "Video", "CodexCallout", "div", "details", "summary", "table", "tr", "td",
    "script", "style", "svg", "br", "img", "Unknown", "x-y",
];

const MDX_ATTRS: &[&str] = &[
    " title=\"T\"",
    " title='a \"b\"'",
    " title={\"expr\"}",
    " title={`tmpl ${x}`}",
    " cols={2}",
    " icon=\"x\"",
    " href=\"/docs/x\"",
    " href=\"../up\"",
    " name=\"f\"",
    " type=\"string\"",
    " required",
    " default=\"a\"",
    " options={[{\"value\": \"a\", \"label\": \"A\"}, {value: 'b'}]}",
    " rows={[[\"a\", \"b\"], [1, 2, {x: [3]}]]}",
    " tabs={[\"a\"",
    " id=\"h\"",
    " slot=\"a\"",
    " videoId=\"v\"",
    " {...props}",
    " =\"\"",
    " title=",
    " title=\"",
    " x={",
    " x={{}}}",
];

/// Lines and pieces of Markdown/MDX, many of them deliberately broken.
const MD_SNIPPETS: &[&str] = &[
    "---\ntitle: T\ndescription: \"d\"\n---\n",
    "---\ntitle: [unclosed\n",
    "---",
    "export const meta = { title: 'T', description: \"D\" };\n",
    "export const x = [1, {a: \"b\"}, `t`];\n",
    "export const y = {\n",
    "export default function X() {\n  return <div/>\n}\n",
    "export function F() {\n",
    "import X from './x'\n",
    "import {\n",
    "{/* comment */}",
    "{/* unterminated",
    "{\"string\"}",
    "{'single'}",
    "{`template ${1 + 1}`}",
    "{",
    "}",
    "{{}}",
    "```",
    "```js title=\"x\" {1,3}\n",
    "````\n",
    "~~~\n",
    "> ```\n",
    "   ```\n",
    "```\n```\n",
    "<!-- html comment -->",
    "<!--",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "|---|\n",
    "| a |",
    "- item\n",
    "  - nested\n",
    "1. one\n",
    "99999999999999999999. big\n",
    "* [ ] task\n",
    "> quote\n",
    "> > deeper\n",
    "[link](https://x.example/a)",
    "[rel](../b.md#c)",
    "[broken](",
    "![img](i.png)",
    "[ref]: https://x.example\n",
    "<https://auto.example>",
    "`code`",
    "``co`de``",
    "\\<Tabs>",
    "\\{",
    "***",
    "___\n",
    "Setext\n===\n",
    "Setext\n---\n",
    "\n\n",
    "&nbsp;&lt;&#123;",
];

fn heading() -> BoxedStrategy<String> {
    (
        1usize..9,
        select(&["", " ", "  ", "\t", "   "][..]),
        prop::collection::vec(
            prop_oneof![
                text(),
                select(MD_SNIPPETS).prop_map(str::to_string),
                Just("[a](b)".to_string()),
                Just("`x`".to_string()),
                Just("<Badge>x</Badge>".to_string()),
                Just("{#custom-id}".to_string()),
            ],
            0..5,
        ),
        select(&["", " #", " ##", "#", " \\#"][..]),
    )
        .prop_map(|(n, sep, parts, close)| {
            format!("\n{}{sep}{}{close}\n", "#".repeat(n), parts.concat())
        })
        .boxed()
}

fn mdx_fragment() -> BoxedStrategy<String> {
    let component = select(MDX_COMPONENTS);
    prop_oneof![
        3 => (component.clone(), prop::collection::vec(select(MDX_ATTRS), 0..3), 0..3u8)
            .prop_map(|(c, a, close)| match close {
                0 => format!("<{c}{}>", a.concat()),
                1 => format!("<{c}{} />", a.concat()),
                _ => format!("\n<{c}{}>\n", a.concat()),
            }),
        2 => component.prop_map(|c| format!("</{c}>")),
        4 => select(MD_SNIPPETS).prop_map(str::to_string),
        2 => heading(),
        4 => text(),
        1 => html_fragment(),
        1 => foreign_bytes(),
    ]
    .boxed()
}

/// A random Markdown/MDX page: maybe a title, then fragments joined oddly.
fn markdown_doc() -> BoxedStrategy<String> {
    (
        select(
            &[
                "",
                "# Title\n\n",
                "# T\n\n> Description line.\n\n",
                "\u{feff}# BOM\n",
            ][..],
        ),
        prop::collection::vec(mdx_fragment(), 0..150),
        select(&["", "\n", " ", "\n\n", "\r\n"][..]),
    )
        .prop_map(|(head, parts, sep)| format!("{head}{}", parts.join(sep)))
        .boxed()
}

/// A single huge text node or line: `unit` repeated up to half a megabyte.
fn huge_text() -> BoxedStrategy<String> {
    (
        select(
            &[
                "a", "é", "word ", "\0", " ", "<", "&amp;", "`", "*", "\\", "x\n",
            ][..],
        ),
        1_000usize..200_000,
        prop_oneof![
            Just(("<html><body><main><p>", "</p></main></body></html>")),
            Just(("# T\n\n", "\n")),
            Just(("", "")),
            Just(("<pre>", "</pre>")),
            Just(("```\n", "")),
            Just(("# ", "\n")),
        ],
    )
        .prop_map(|(unit, n, (head, tail))| format!("{head}{}{tail}", unit.repeat(n)))
        .boxed()
}

/// Every (family, body kind) pair; `normalize` routes each to its adapter.
const ADAPTERS: &[(Family, BodyKind)] = &[
    (Family::Mintlify, BodyKind::Html),
    (Family::Mintlify, BodyKind::Markdown),
    (Family::Cursor, BodyKind::Html),
    (Family::Cursor, BodyKind::Markdown),
    (Family::Openai, BodyKind::Html),
    (Family::Openai, BodyKind::Markdown),
    (Family::Sphinx, BodyKind::Html),
    (Family::Sphinx, BodyKind::Markdown),
    (Family::Leapview, BodyKind::Html),
    (Family::Leapview, BodyKind::Markdown),
];

const SLUG_STYLES: &[SlugStyle] = &[
    SlugStyle::Github,
    SlugStyle::MintlifyRuns,
    SlugStyle::MintlifyWords,
];

const PUBLIC_URLS: &[&str] = &[
    "https://code.claude.com/docs/en/hooks",
    "https://docs.godotengine.org/en/stable/classes/class_node.html",
    "https://docs.leapview.example/v3.2/cli/exit-codes",
    "https://developers.openai.com/codex/cli#section",
    "https://x.example/",
    "not a url",
    "",
];

// ---------------------------------------------------------------------------
// Checks shared by the properties
// ---------------------------------------------------------------------------

/// Normalize `body` with one adapter and check the result; then cut it into
/// sections with `style` and `max_chars` and check those.
fn check_normalize(
    family: Family,
    kind: BodyKind,
    body: &str,
    url: &str,
    style: SlugStyle,
    max_chars: usize,
    bound: usize,
) -> Result<Option<Normalized>, TestCaseError> {
    let what = format!("normalize({family:?}, {kind:?})");
    let r = timed(&what, body, || normalize(family, kind, body, url));
    let Ok(n) = r else {
        // The one typed error: no main content.
        return Ok(None);
    };
    let out = n.markdown.len() + n.title.len() + n.description.len();
    prop_assert!(
        out <= bound,
        "{what}: {} bytes in, {out} bytes out (bound {bound})",
        body.len()
    );
    check_split(url, &n.title, &n, style, max_chars)?;
    Ok(Some(n))
}

fn non_ws(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// What `section::split` promises for any normalized page.
fn check_split(
    url: &str,
    title: &str,
    n: &Normalized,
    style: SlugStyle,
    max_chars: usize,
) -> Result<(), TestCaseError> {
    let sections = timed("section::split", &n.markdown, || {
        section::split(url, title, n, style, max_chars)
    });
    let page = url.split('#').next().unwrap_or(url);
    for (i, s) in sections.iter().enumerate() {
        prop_assert_eq!(s.ordinal as usize, i, "ordinals count sections");
        prop_assert_eq!(&s.url, page, "section URL is the page URL without fragment");
        prop_assert!((1..=6).contains(&s.level), "level {}", s.level);
        prop_assert_eq!(s.heading_path.first().map(String::as_str), Some(title));
        prop_assert!(!s.text.trim().is_empty(), "empty section {i}: {s:?}");
        // Parts of one section are numbered 1, 2, … in a row; 0 is a whole section.
        if s.part > 1 {
            let prev = &sections[i - 1];
            prop_assert!(
                prev.part + 1 == s.part && prev.anchor == s.anchor,
                "part {} of section {i} does not follow part {}",
                s.part,
                prev.part
            );
        }
        // "Every part stays bounded unless one fence alone is longer than the
        // limit" (a section kept whole has its blank-line runs collapsed, so
        // whitespace cannot push it over either).
        let len = s.text.chars().count();
        if max_chars > 0 && len > max_chars {
            prop_assert!(
                s.text.contains("```") || s.text.contains("~~~"),
                "section {i} has {len} chars > max {max_chars} and no fence: {:?}",
                s.text
            );
        }
    }
    // Nothing is lost: uncut, the sections hold exactly the page's text;
    // cut, only table headers are repeated.
    let kept: usize = sections.iter().map(|s| non_ws(&s.text)).sum();
    if max_chars == 0 {
        prop_assert_eq!(kept, non_ws(&n.markdown), "split lost or added text");
    } else {
        prop_assert!(kept >= non_ws(&n.markdown), "split lost text");
    }
    Ok(())
}

/// Slugs of one page are unique whatever the heading texts (github-slugger's
/// numbering, `x`, `x-1`, …, must skip texts that already look numbered).
fn check_slugs(style: SlugStyle, texts: &[String]) -> Result<(), TestCaseError> {
    let mut slugger = Slugger::new(style);
    let mut seen = HashSet::new();
    for t in texts {
        let plain = markdown::heading_text(t);
        prop_assert!(
            plain.len() <= t.len(),
            "heading_text grew {t:?} -> {plain:?}"
        );
        let base = markdown::slugify(style, &plain);
        // Lower-casing may turn one character into up to three.
        prop_assert!(
            base.len() <= 3 * plain.len(),
            "slug grew {plain:?} -> {base:?}"
        );
        let slug = slugger.slug(&plain);
        prop_assert!(
            seen.insert(slug.clone()),
            "duplicate slug {slug:?} for {plain:?}"
        );
    }
    Ok(())
}

fn check_class(body: &str, url: &str) -> Result<Option<GodotClass>, TestCaseError> {
    let r = timed("godot_class::parse_class", body, || {
        godot_class::parse_class(body, url)
    });
    let Ok(class) = r else { return Ok(None) };
    let out = serde_json::to_string(&class).map(|s| s.len()).unwrap_or(0);
    prop_assert!(
        out <= linear_bound(body.len()),
        "parse_class: {} bytes in, {out} bytes of JSON out",
        body.len()
    );
    Ok(Some(class))
}

fn check_llms_txt(text: &str, base: &url::Url) -> Result<(), TestCaseError> {
    let p = timed("parse_llms_txt", text, || parse_llms_txt(text, base));
    let lines = text.lines().count();
    prop_assert!(
        p.candidates.len() + p.warnings.len() <= lines,
        "more results than lines"
    );
    let out: usize = p
        .candidates
        .iter()
        .map(|c| c.url.len() + c.title.len() + c.description.len())
        .sum();
    prop_assert!(out <= linear_bound(text.len()), "{out} bytes out");
    Ok(())
}

fn check_sitemap(xml: &str) -> Result<(), TestCaseError> {
    let locs = match timed("parse_sitemap", xml, || parse_sitemap(xml)) {
        Ok(SitemapKind::Pages(l) | SitemapKind::Index(l)) => l,
        // Broken XML is refused with where it broke.
        Err(e) => {
            prop_assert!(e.to_string().contains("at byte"), "{e}");
            return Ok(());
        }
    };
    prop_assert!(locs.len() <= xml.matches("<loc>").count());
    prop_assert!(locs.iter().map(String::len).sum::<usize>() <= xml.len());
    Ok(())
}

fn check_manifest(json: &str, base: &url::Url) -> Result<(), TestCaseError> {
    if let Ok(p) = timed("parse_manifest", json, || parse_manifest(json, base)) {
        let out: usize = p.candidates.iter().map(|c| c.url.len()).sum();
        prop_assert!(out <= linear_bound(json.len()) + 100 * p.candidates.len());
    }
    Ok(())
}

fn check_links(html: &str, base: &str) -> Result<(), TestCaseError> {
    let found = timed("links::extract", html, || links::extract(html, base));
    prop_assert!(
        found.len() <= html.matches('<').count(),
        "more links than tags"
    );
    for u in &found {
        let parsed = url::Url::parse(u);
        prop_assert!(parsed.is_ok(), "unparsable link {u:?}");
        let parsed = parsed.unwrap();
        prop_assert!(matches!(parsed.scheme(), "http" | "https"), "{u}");
        prop_assert!(parsed.fragment().is_none(), "{u}");
    }
    let alt = timed("links::markdown_alternate", html, || {
        links::markdown_alternate(html, base)
    });
    if let Some(u) = alt {
        prop_assert!(url::Url::parse(&u).is_ok_and(|p| matches!(p.scheme(), "http" | "https")));
    }
    Ok(())
}

fn check_robots(txt: &[u8], agent: &str, urls: &[String]) -> Result<(), TestCaseError> {
    let robot = timed("Robot::new", &String::from_utf8_lossy(txt), || {
        texting_robots::Robot::new(agent, txt)
    });
    if let Ok(robot) = robot {
        for u in urls {
            timed("Robot::allowed", u, || robot.allowed(u));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Properties: normalizers and sections
// ---------------------------------------------------------------------------

/// A page body made by `doc`, random bytes or a huge text, with a section
/// size limit.
fn page(doc: BoxedStrategy<String>) -> impl Strategy<Value = (String, usize)> {
    (
        prop_oneof![6 => doc, 1 => lossy_bytes(4000), 1 => huge_text()],
        select(&[0usize, 1, 40, 3200][..]),
    )
}

/// Normalize `body` with every adapter, splitting what they return.
fn through_every_adapter(
    (body, max): (String, usize),
    url: &str,
    style: SlugStyle,
) -> Result<(), TestCaseError> {
    let bound = linear_bound(body.len());
    for &(family, kind) in ADAPTERS {
        check_normalize(family, kind, &body, url, style, max, bound)?;
    }
    Ok(())
}

/// Random HTML (real tags and adapter classes, unbalanced, control
/// characters, other charsets, invalid UTF-8) through every adapter.
#[test]
fn normalize_hostile_html() {
    property(
        "normalize_hostile_html",
        64,
        || (page(html_doc()), select(PUBLIC_URLS), select(SLUG_STYLES)),
        |(page, url, style)| through_every_adapter(page, url, style),
    );
}

/// Random Markdown/MDX (unclosed components, stray braces, unterminated
/// fences and exports, weird headings) through every adapter.
#[test]
fn normalize_hostile_markdown() {
    property(
        "normalize_hostile_markdown",
        64,
        || {
            (
                page(markdown_doc()),
                select(PUBLIC_URLS),
                select(SLUG_STYLES),
            )
        },
        |(page, url, style)| through_every_adapter(page, url, style),
    );
}

/// One nesting construct: `open` repeated `depth` times around a leaf, then
/// `close` as often.
#[derive(Debug, Clone, Copy)]
struct Nest {
    open: &'static str,
    close: &'static str,
    /// Prefixes its lines (lists, quotes, callouts, steps, trees): each
    /// level adds to every line below it, up to the depth the converters
    /// render (`html::MAX_DEPTH`; deeper markup is read as text).
    prefixes: bool,
}

const fn nest(open: &'static str, close: &'static str) -> Nest {
    Nest {
        open,
        close,
        prefixes: false,
    }
}

const fn prefixing(open: &'static str, close: &'static str) -> Nest {
    Nest {
        open,
        close,
        prefixes: true,
    }
}

const NESTS: &[Nest] = &[
    nest("<div>", "</div>"),
    nest("<div>", ""),
    nest("<span>", "</span>"),
    nest("<section id=\"s\">", "</section>"),
    nest("<table><tr><td>", "</td></tr></table>"),
    nest("<table><tr><td>", ""),
    nest("<b>", ""),
    nest("<em><strong>", "</strong></em>"),
    nest("<a href=\"x\">", "</a>"),
    nest("<custom-el>", "</custom-el>"),
    nest("<details><summary>s</summary>", "</details>"),
    nest("<code>", "</code>"),
    nest("<sup>", "</sup>"),
    nest("<q>", "</q>"),
    nest("<h2>", "</h2>"),
    nest("<font>", ""),
    prefixing("<ul><li>x", "</li></ul>"),
    prefixing("<ol><li>", ""),
    prefixing("<blockquote>x", "</blockquote>"),
    prefixing("<dl><dt>t</dt><dd>", "</dd></dl>"),
    prefixing(
        "<div class=\"admonition note\"><p class=\"admonition-title\">N</p>",
        "</div>",
    ),
    nest("<Tabs><Tab title=\"t\">", "</Tab></Tabs>"),
    prefixing("<Note>\n", "\n</Note>"),
    prefixing("<Steps><Step title=\"s\">\n", "\n</Step></Steps>"),
    nest("<Accordion title=\"a\">", "</Accordion>"),
    nest("<CardGroup><Card title=\"c\">", "</Card></CardGroup>"),
    prefixing("<Tree><Tree.Folder name=\"f\">", "</Tree.Folder></Tree>"),
    nest("<Expandable>", "</Expandable>"),
    nest("<Unknown>", "</Unknown>"),
    nest("<Tabs><Tab title=\"a\">\n", ""),
    nest("{", "}"),
    nest("\n> ", ""),
];

/// Deeply nested markup, 2,000–20,000 levels, through one adapter per case,
/// wrapped in the content root that adapter looks for (or bare). Output stays
/// linear in the input; for containers that prefix their lines, linear in
/// size × rendered depth (the converters' documented cost).
#[test]
fn normalize_deep_nesting() {
    property(
        "normalize_deep_nesting",
        48,
        || {
            (select(NESTS), select(ADAPTERS), 0.0f64..1.0, any::<bool>()).prop_map(
                |(n, adapter, x, wrapped)| {
                    // Log-uniform depth: most cases cheap, some at the top.
                    let depth = (2_000.0 * 10f64.powf(x)) as usize;
                    let (head, tail) = match (wrapped, adapter) {
                        (false, _) => ("", ""),
                        (true, (Family::Sphinx, _)) => HTML_SKELETONS[3],
                        (true, (Family::Leapview, _)) => HTML_SKELETONS[4],
                        (true, (_, BodyKind::Html)) => HTML_SKELETONS[1],
                        (true, (_, BodyKind::Markdown)) => ("# T\n\n", "\n"),
                    };
                    let body = format!("{head}{}{tail}", nested(n.open, n.close, depth));
                    (n, adapter, depth, body)
                },
            )
        },
        |(n, (family, kind), depth, body)| {
            let bound = if n.prefixes {
                nesting_bound(body.len(), depth.min(docsnap::normalize::html::MAX_DEPTH))
            } else {
                linear_bound(body.len())
            };
            let url = PUBLIC_URLS[0];
            check_normalize(family, kind, &body, url, SlugStyle::Github, 3200, bound)?;
            Ok(())
        },
    );
}

/// Markdown straight into the section splitter (every slug style, ids given
/// or not, every size limit) and heading texts into the sluggers.
#[test]
fn split_and_slugs() {
    property(
        "split_and_slugs",
        256,
        || {
            (
                prop_oneof![4 => markdown_doc(), 1 => lossy_bytes(2000)],
                prop::collection::vec(
                    prop_oneof![
                        Just(HeadingAnchor::Unanchored),
                        Just(HeadingAnchor::Slug),
                        "[a-z0-9-]{0,12}".prop_map(HeadingAnchor::from_id),
                        text().prop_map(HeadingAnchor::from_id),
                    ],
                    0..20,
                ),
                select(PUBLIC_URLS),
                text(),
                select(SLUG_STYLES),
                prop_oneof![Just(0usize), 1usize..200, Just(3200usize)],
                prop::collection::vec(
                    prop_oneof![
                        text(),
                        select(&["x", "x-1", "x-2", "x 1", "X", "x!", "x-1-1", "", " "][..])
                            .prop_map(str::to_string),
                    ],
                    0..30,
                ),
            )
        },
        |(markdown, anchors, url, title, style, max, headings)| {
            // Any anchor on any heading (more or fewer given than headings).
            let mut n = Normalized::new(String::new(), String::new(), markdown, Vec::new());
            for (h, a) in n.headings.iter_mut().zip(anchors) {
                h.anchor = a;
            }
            check_split(url, &title, &n, style, max)?;
            check_slugs(style, &headings)
        },
    );
}

// ---------------------------------------------------------------------------
// Properties: real pages of the mirror, mutated
// ---------------------------------------------------------------------------

/// What a file of the mirror is read by.
#[derive(Debug, Clone, Copy)]
enum Reader {
    Page(Family, BodyKind),
    GodotClass,
    LlmsTxt,
    Sitemap,
    Manifest,
    Robots,
}

/// Real files of the mirror (path under `../shared/sites`, reader, public URL).
const REAL_FILES: &[(&str, Reader, &str)] = &[
    (
        "docs.godotengine.org/en/stable/classes/class_node.html",
        Reader::GodotClass,
        "https://docs.godotengine.org/en/stable/classes/class_node.html",
    ),
    (
        "docs.godotengine.org/en/stable/getting_started/step_by_step/nodes_and_scenes.html",
        Reader::Page(Family::Sphinx, BodyKind::Html),
        "https://docs.godotengine.org/en/stable/getting_started/step_by_step/nodes_and_scenes.html",
    ),
    (
        "docs.leapview.example/v3.2/cli/exit-codes.html",
        Reader::Page(Family::Leapview, BodyKind::Html),
        "https://docs.leapview.example/v3.2/cli/exit-codes",
    ),
    (
        "code.claude.com/docs/en/whats-new.md",
        Reader::Page(Family::Mintlify, BodyKind::Markdown),
        "https://code.claude.com/docs/en/whats-new",
    ),
    (
        "code.claude.com/docs/en/claude-tag.html",
        Reader::Page(Family::Mintlify, BodyKind::Html),
        "https://code.claude.com/docs/en/claude-tag",
    ),
    (
        "cursor.com/docs/configuration/kbd.md",
        Reader::Page(Family::Cursor, BodyKind::Markdown),
        "https://cursor.com/docs/configuration/kbd",
    ),
    (
        "developers.openai.com/codex/app.md",
        Reader::Page(Family::Openai, BodyKind::Markdown),
        "https://developers.openai.com/codex/app",
    ),
    (
        "modelcontextprotocol.io/extensions/client-matrix.md",
        Reader::Page(Family::Mintlify, BodyKind::Markdown),
        "https://modelcontextprotocol.io/extensions/client-matrix",
    ),
    (
        "code.claude.com/docs/llms.txt",
        Reader::LlmsTxt,
        "https://code.claude.com/docs/llms.txt",
    ),
    (
        "cursor.com/llms.txt",
        Reader::LlmsTxt,
        "https://cursor.com/llms.txt",
    ),
    (
        "docs.leapview.example/v3.2/sitemap.xml",
        Reader::Sitemap,
        "https://docs.leapview.example/v3.2/sitemap.xml",
    ),
    (
        "docs.leapview.example/v3.2/manifest.json",
        Reader::Manifest,
        "https://docs.leapview.example/v3.2/manifest.json",
    ),
    (
        "docs.godotengine.org/robots.txt",
        Reader::Robots,
        "https://docs.godotengine.org/robots.txt",
    ),
    (
        "cursor.com/robots.txt",
        Reader::Robots,
        "https://cursor.com/robots.txt",
    ),
];

fn sites() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sites")
}

static REAL_BODIES: LazyLock<Vec<String>> = LazyLock::new(|| {
    REAL_FILES
        .iter()
        .map(|(path, _, _)| {
            let p = sites().join(path);
            std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
});

/// One edit of a real file; positions are fractions of its length.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(f64),
    Splice(f64, String),
    Duplicate(f64, f64),
    Delete(f64, f64),
}

fn mutation() -> BoxedStrategy<Mutation> {
    let at = 0.0f64..1.0;
    let len = 0.0f64..0.2;
    prop_oneof![
        1 => at.clone().prop_map(Mutation::Truncate),
        4 => (at.clone(), prop_oneof![
            html_fragment(),
            mdx_fragment(),
            lossy_bytes(64),
            (select(NESTS), 1usize..300).prop_map(|(n, k)| n.open.repeat(k)),
        ]).prop_map(|(a, s)| Mutation::Splice(a, s)),
        2 => (at.clone(), len.clone()).prop_map(|(a, l)| Mutation::Duplicate(a, l)),
        2 => (at, len).prop_map(|(a, l)| Mutation::Delete(a, l)),
    ]
    .boxed()
}

/// The char boundary at or before byte `i` of `s`.
fn floor(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The char boundaries at fractions `a` and `a + l` of `s` (at most `max` bytes apart).
fn range(s: &str, a: f64, l: f64, max: usize) -> (usize, usize) {
    let at = |f: f64| floor(s, (s.len() as f64 * f.min(1.0)) as usize);
    let i = at(a);
    (i, floor(s, at(a + l).clamp(i, i.saturating_add(max))))
}

fn mutate(mut s: String, edits: &[Mutation]) -> String {
    for m in edits {
        match m {
            Mutation::Truncate(a) => s.truncate(range(&s, *a, 0.0, 0).0),
            Mutation::Splice(a, frag) => s.insert_str(range(&s, *a, 0.0, 0).0, frag),
            Mutation::Duplicate(a, l) => {
                // At most 64 KB more, so pages grow but do not explode.
                let (i, j) = range(&s, *a, *l, 65_536);
                let copy = s[i..j].to_string();
                s.insert_str(j, &copy);
            }
            Mutation::Delete(a, l) => {
                let (i, j) = range(&s, *a, *l, usize::MAX);
                s.replace_range(i..j, "");
            }
        }
    }
    s
}

/// Read one (mutated) real file with its reader.
fn check_real(reader: Reader, body: &str, url: &str) -> Result<(), TestCaseError> {
    let base = url::Url::parse(url).expect("real URLs parse");
    match reader {
        Reader::Page(family, kind) => {
            check_normalize(
                family,
                kind,
                body,
                url,
                SlugStyle::Github,
                3200,
                linear_bound(body.len()),
            )?;
            check_links(body, url)?;
        }
        Reader::GodotClass => {
            check_class(body, url)?;
            check_normalize(
                Family::Sphinx,
                BodyKind::Html,
                body,
                url,
                SlugStyle::Github,
                3200,
                linear_bound(body.len()),
            )?;
        }
        Reader::LlmsTxt => check_llms_txt(body, &base)?,
        Reader::Sitemap => check_sitemap(body)?,
        Reader::Manifest => check_manifest(body, &base)?,
        Reader::Robots => check_robots(body.as_bytes(), "docsnap", &[url.to_string()])?,
    }
    Ok(())
}

/// Real pages and indexes of the mirror, truncated, spliced with hostile
/// fragments, with ranges duplicated or deleted.
#[test]
fn real_files_mutated() {
    property(
        "real_files_mutated",
        64,
        || (0..REAL_FILES.len(), prop::collection::vec(mutation(), 1..6)),
        |(i, edits)| {
            let (_, reader, url) = REAL_FILES[i];
            let body = mutate(REAL_BODIES[i].clone(), &edits);
            check_real(reader, &body, url)
        },
    );
}

// ---------------------------------------------------------------------------
// Properties: discovery parsers, links, robots.txt, the class reference
// ---------------------------------------------------------------------------

const BASES: &[&str] = &[
    "https://code.claude.com/docs/llms.txt",
    "https://docs.leapview.example/v3.2/manifest.json",
    "https://x.example/",
    "file:///tmp/x",
    "data:text/plain,x",
    "http://[::1]:8080/a/b/c?q#f",
];

/// Lines an llms.txt, a sitemap or a manifest may hold, broken or not.
const INDEX_SNIPPETS: &[&str] = &[
    "- [Title](https://x.example/a.md): desc",
    "- [T](/rel.md)",
    "- [T](../../../up.md): d",
    "- [T](javascript:alert(1))",
    "- [T](http://[::1)",
    "- [broken](https://x.example/c.md",
    "* [](x)",
    "https://bare.example/x.md",
    "- https://bare.example/y",
    "# Heading",
    "> quote [a](b)",
    "```",
    "<loc>https://a.example/p</loc>",
    "<loc>\n https://a.example/q?a=1&amp;b=2 \n</loc>",
    "<loc>",
    "</loc>",
    "<sitemapindex>",
    "<urlset><url><loc>",
    "&amp;&lt;&gt;&quot;&apos;&amp;amp;",
    "{\"pages\": [",
    "{\"url\": \"https://x.example/a\", \"title\": \"T\", \"summary\": \"S\", \"path\": \"a\"}",
    "{\"url\": \"http://[::1\"}",
    "{\"url\": 1}",
    "]}",
    ",",
    "User-agent: *",
    "User-agent: docsnap",
    "Disallow: /",
    "Disallow: /*?*$",
    "Allow: /docs/$",
    "Crawl-delay: 1e308",
    "Crawl-delay: -1",
    "Crawl-delay: NaN",
    "Sitemap: https://x.example/sitemap.xml",
    "Disallow: *****************************a",
];

fn index_text() -> BoxedStrategy<String> {
    prop::collection::vec(
        prop_oneof![
            4 => select(INDEX_SNIPPETS).prop_map(str::to_string),
            2 => text(),
            1 => lossy_bytes(100),
        ],
        0..120,
    )
    .prop_flat_map(|parts| (Just(parts), select(&["\n", "", " ", "\r\n"][..])))
    .prop_map(|(parts, sep)| parts.join(sep))
    .boxed()
}

/// Random JSON values (shared with the tool-argument properties).
fn json_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        select(NUMBERS).prop_map(|n| json!(n)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Numbers at the edges: -0, huge, tiny, integral floats, past 2^53 and 2^64.
#[rustfmt::skip]
const NUMBERS: &[f64] = &[
    0.0, -0.0, 1.0, 2.0, 3.0, 8.0, 20.0, 21.0, 25.0, 26.0, 50.0, 51.0, -1.0, 2.5, 1e308, -1e308,
    5e-324, 9_007_199_254_740_993.0, 1e19, 18_446_744_073_709_551_616.0,
    -9_223_372_036_854_775_808.0, 1e20,
];

/// llms.txt, sitemaps, manifests and robots.txt made of real and broken lines.
#[test]
fn discovery_parsers() {
    property(
        "discovery_parsers",
        256,
        || {
            (
                prop_oneof![3 => index_text(), 1 => lossy_bytes(2000)],
                json_value(),
                select(BASES),
                prop::collection::vec(
                    prop_oneof![select(BASES).prop_map(str::to_string), text()],
                    0..4,
                ),
                prop_oneof![Just("docsnap".to_string()), text()],
            )
        },
        |(text, json, base, urls, agent)| {
            let base = url::Url::parse(base).expect("bases parse");
            check_llms_txt(&text, &base)?;
            check_sitemap(&text)?;
            check_manifest(&text, &base)?;
            check_manifest(&json.to_string(), &base)?;
            check_manifest(&json!({ "pages": [json] }).to_string(), &base)?;
            check_robots(text.as_bytes(), &agent, &urls)
        },
    );
}

/// Links and the Markdown alternate of random HTML, against odd base URLs.
#[test]
fn link_extraction() {
    property(
        "link_extraction",
        128,
        || {
            (
                prop_oneof![4 => html_doc(), 1 => lossy_bytes(2000)],
                prop_oneof![3 => select(BASES).prop_map(str::to_string), 1 => text()],
            )
        },
        |(html, base)| check_links(&html, &base),
    );
}

/// Class-reference pieces the parser keys on, to splice into random pages.
const CLASS_SNIPPETS: &[&str] = &[
    "<div itemprop=\"articleBody\">",
    "<section id=\"node\">",
    "<h1>Node<a class=\"headerlink\" href=\"#node\">¶</a></h1>",
    "<p><strong>Inherits:</strong> <a href=\"class_object.html\">Object</a></p>",
    "<p><strong>Inherited By:</strong> <a href=\"x.html\">A</a>, <a>B</a></p>",
    "<p class=\"classref-introduction-group\" id=\"class-node-description\">",
    "<section id=\"description\"><h2>Description</h2><p>Text.</p></section>",
    "<section id=\"tutorials\"><h2>Tutorials</h2><ul><li><p><a href=\"t.html\">T</a></p></li></ul></section>",
    "<section id=\"properties\"><h2>Properties</h2><table><tr><td>int</td><td><a>x</a></td><td><code>0</code></td></tr></table></section>",
    "<hr class=\"classref-section-separator docutils\" />",
    "<div class=\"classref-section-separator docutils container\"></div>",
    "<p class=\"classref-method\"><a id=\"class-node-method-f\"></a><span>void</span> <strong>f</strong>(a: <a>int</a> = 0) <span>const</span></p>",
    "<p class=\"classref-property\"><a id=\"class-node-property-p\"></a><span>int</span> <strong>p</strong> = <code>0</code></p>",
    "<p class=\"classref-signal\"><strong>s</strong>()</p>",
    "<p class=\"classref-constant\"><strong>C</strong> = <code>1</code></p>",
    "<p class=\"classref-enumeration\">enum <strong>E</strong>:</p>",
    "<p class=\"classref-enumeration-constant\"><strong>E_A</strong> = <code>0</code></p>",
    "<ul class=\"simple\"><li><p>x</p></li></ul>",
    "<div class=\"admonition warning\"><p class=\"admonition-title\">Warning</p><p>w</p></div>",
    "<p class=\"classref-method\"><strong>",
    " = ",
    "(",
    ")",
    "</section>",
    "</div>",
];

/// Godot class-reference pages built from the structure the parser reads,
/// shuffled, unbalanced and mixed with random markup.
#[test]
fn godot_class_reference() {
    property(
        "godot_class_reference",
        128,
        || {
            prop::collection::vec(
                prop_oneof![
                    4 => select(CLASS_SNIPPETS).prop_map(str::to_string),
                    2 => html_fragment(),
                    1 => text(),
                ],
                0..120,
            )
            .prop_map(|parts| {
                format!(
                    "<html><body><div itemprop=\"articleBody\"><section id=\"node\"><h1>Node</h1>{}",
                    parts.concat()
                )
            })
        },
        |body| {
            let url = "https://docs.godotengine.org/en/stable/classes/class_node.html#x";
            if let Some(class) = check_class(&body, url)? {
                prop_assert!(!class.url.contains('#'), "class URL keeps no fragment");
            }
            check_normalize(
                Family::Sphinx,
                BodyKind::Html,
                &body,
                url,
                SlugStyle::Github,
                3200,
                linear_bound(body.len()),
            )?;
            Ok(())
        },
    );
}

// ---------------------------------------------------------------------------
// Properties: tool arguments and the JSON-RPC stream
// ---------------------------------------------------------------------------

/// A small real library: a few pages of the mirror per tool family, normalized
/// and split the way a build does, plus the strings worth passing as arguments.
struct Fixture {
    lib: Arc<Library>,
    /// Arguments that reach past validation and lookup, by what they name.
    strings: Strings,
}

#[derive(Default)]
struct Strings {
    /// Page URLs (with and without anchors) and paths.
    urls: Vec<String>,
    /// Headings and heading paths.
    headings: Vec<String>,
    classes: Vec<String>,
    members: Vec<String>,
    /// Titles and search words.
    words: Vec<String>,
}

impl Strings {
    /// The strings worth passing as argument `key`.
    fn for_key(&self, key: &str) -> Vec<String> {
        let pick = match key {
            "url" | "uri" => &self.urls,
            "heading" => &self.headings,
            "class_name" => &self.classes,
            "member_name" => &self.members,
            _ => &self.words,
        };
        let mut out = pick.clone();
        // A few from the other lists: right type, wrong thing.
        out.extend(self.urls.iter().chain(&self.headings).step_by(7).cloned());
        out
    }
}

fn manifest(source: &str, product: &str, version: &str) -> Manifest {
    Manifest {
        schema_version: 1,
        tool_version: "fuzz".into(),
        source: source.into(),
        product: product.into(),
        version: version.into(),
        snapshot_id: format!("{source}-{version}"),
        created_at: "2026-01-01T00:00:00Z".into(),
        counts: Default::default(),
        files: Default::default(),
        content_sha256: String::new(),
        embedding: None,
        page_kinds: Default::default(),
        records_fingerprint: None,
        tools: None,
        artifact_revision: None,
        code_apart: false,
        editions: None,
        areas: Vec::new(),
    }
}

/// (file under the mirror, family, kind, public URL, path, slug style)
type FixturePage = (
    &'static str,
    Family,
    BodyKind,
    &'static str,
    &'static str,
    SlugStyle,
);

fn loaded_source(
    source: &str,
    product: &str,
    version: &str,
    files: &[FixturePage],
    strings: &mut Strings,
) -> LoadedSource {
    let mut pages = Vec::new();
    let mut sections: Vec<Section> = Vec::new();
    for &(file, family, kind, url, path, style) in files {
        let body = std::fs::read_to_string(sites().join(file)).expect("fixture page");
        let n = normalize(family, kind, &body, url).expect("fixture page normalizes");
        let s = section::split(url, &n.title, &n, style, 3200);
        strings
            .urls
            .extend([url.to_string(), path.to_string(), format!("{path}.html")]);
        strings.words.push(n.title.clone());
        for sec in &s {
            strings.urls.push(sec.url_with_anchor());
            strings.headings.extend(sec.heading_path.last().cloned());
            strings.headings.push(sec.heading_display());
            strings.words.extend(sec.heading_path.last().cloned());
        }
        sections.extend(s);
        pages.push(Page {
            url: url.into(),
            title: n.title,
            description: n.description,
            markdown: n.markdown,
            sha256: String::new(),
            path: path.into(),
            etag: None,
            last_modified: None,
        });
    }
    LoadedSource::new(manifest(source, product, version), pages, sections)
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    use BodyKind::{Html, Markdown};
    let mut strings = Strings::default();
    let claude = loaded_source(
        "claude-code",
        "claude-code",
        "latest",
        &[
            (
                "code.claude.com/docs/en/desktop-wsl.md",
                Family::Mintlify,
                Markdown,
                "https://code.claude.com/docs/en/desktop-wsl",
                "desktop-wsl",
                SlugStyle::MintlifyRuns,
            ),
            (
                "code.claude.com/docs/en/claude-tag.md",
                Family::Mintlify,
                Markdown,
                "https://code.claude.com/docs/en/claude-tag",
                "claude-tag",
                SlugStyle::MintlifyRuns,
            ),
        ],
        &mut strings,
    );
    let cursor = loaded_source(
        "cursor",
        "cursor",
        "latest",
        &[(
            "cursor.com/docs/models.md",
            Family::Cursor,
            Markdown,
            "https://cursor.com/docs/models",
            "models",
            SlugStyle::Github,
        )],
        &mut strings,
    );
    let class_file = "docs.godotengine.org/en/stable/classes/class_semaphore.html";
    let class_url = "https://docs.godotengine.org/en/stable/classes/class_semaphore.html";
    let mut godot = loaded_source(
        "godot",
        "godot",
        "stable",
        &[
            (
                class_file,
                Family::Sphinx,
                Html,
                class_url,
                "classes/class_semaphore",
                SlugStyle::Github,
            ),
            (
                "docs.godotengine.org/en/stable/getting_started/step_by_step/index.html",
                Family::Sphinx,
                Html,
                "https://docs.godotengine.org/en/stable/getting_started/step_by_step/index.html",
                "getting_started/step_by_step/index",
                SlugStyle::Github,
            ),
        ],
        &mut strings,
    );
    let class_body = std::fs::read_to_string(sites().join(class_file)).expect("class page");
    let class = godot_class::parse_class(&class_body, class_url).expect("class parses");
    strings.classes.extend([
        class.name.clone(),
        class.name.to_lowercase(),
        "Node".into(),
        "@GlobalScope".into(),
    ]);
    strings
        .members
        .extend(class.members().map(|m| m.name.clone()));
    strings
        .members
        .extend(["post".into(), "POST".into(), "add_child".into()]);
    godot.set_classes(vec![class]);
    let leapview = loaded_source(
        "leapview",
        "leapview",
        "3.2",
        &[
            (
                "docs.leapview.example/v3.2/cli/exit-codes.html",
                Family::Leapview,
                Html,
                "https://docs.leapview.example/v3.2/cli/exit-codes",
                "cli/exit-codes",
                SlugStyle::Github,
            ),
            (
                "docs.leapview.example/v3.2/concepts.html",
                Family::Leapview,
                Html,
                "https://docs.leapview.example/v3.2/concepts",
                "concepts",
                SlugStyle::Github,
            ),
        ],
        &mut strings,
    );
    strings.words.extend(
        [
            "signal",
            "exit code",
            "how do I wait for a thread",
            "Semaphore",
            "post",
            "cli",
            "api",
            "WSL",
        ]
        .map(str::to_string),
    );
    Fixture {
        lib: Arc::new(Library {
            sources: vec![claude, cursor, godot, leapview],
            ..Default::default()
        }),
        strings,
    }
});

/// Values for one tool argument: mostly plausible ones of its type (so calls
/// reach the tools), else random, deeply nested or huge.
fn arg_value(plausible: Vec<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        16 => select(plausible),
        2 => json_value(),
        1 => deep_json(),
        1 => (select(&["a", "é", "#", " ", "\0"][..]), 0usize..100_000)
            .prop_map(|(u, n)| Value::from(u.repeat(n))),
    ]
    .boxed()
}

/// JSON nested a few thousand levels deep (arrays, objects or both).
fn deep_json() -> BoxedStrategy<Value> {
    (1usize..4_000, 0..3u8)
        .prop_map(|(depth, shape)| {
            let mut v = json!("leaf");
            for i in 0..depth {
                v = match (shape, i % 2) {
                    (0, _) | (2, 0) => Value::Array(vec![v]),
                    _ => json!({ "a": v }),
                };
            }
            v
        })
        .boxed()
}

/// The JSON types a property schema admits (`type`, or those of its `anyOf`).
fn schema_types(schema: &Value) -> Vec<&str> {
    match (&schema["type"], schema["anyOf"].as_array()) {
        (Value::String(t), _) => vec![t.as_str()],
        (_, Some(branches)) => branches.iter().flat_map(schema_types).collect(),
        _ => Vec::new(),
    }
}

/// Plausible values for one property: its enum values, the numbers at and
/// around its bounds and at the edges of JSON, or the fixture's strings.
fn plausible_values(key: &str, prop: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut add_enums = |s: &Value| {
        if let Some(e) = s["enum"].as_array() {
            out.extend(e.iter().cloned());
        }
    };
    add_enums(prop);
    prop["anyOf"]
        .as_array()
        .into_iter()
        .flatten()
        .for_each(&mut add_enums);
    let enumerated = !out.is_empty();
    for t in schema_types(prop) {
        match t {
            "integer" | "number" if enumerated => out.push(json!(2.0)),
            "integer" | "number" => {
                out.extend(NUMBERS.iter().map(|n| json!(n)));
                out.extend([json!(u64::MAX), json!(i64::MIN), json!(i64::MAX)]);
                for bound in ["minimum", "maximum", "minLength", "maxLength"] {
                    if let Some(x) = prop[bound].as_i64() {
                        out.extend([json!(x - 1), json!(x), json!(x + 1)]);
                    }
                }
            }
            "string" if enumerated => out.push(json!("Concise")),
            "string" => {
                out.extend(FIXTURE.strings.for_key(key).into_iter().map(Value::from));
                out.extend([json!(""), json!(" "), json!("#"), json!("a".repeat(501))]);
            }
            "null" => out.push(Value::Null),
            _ => {}
        }
    }
    if out.is_empty() {
        out.push(Value::Null);
    }
    out
}

/// (tool name, arguments): each known property present or not, with a
/// plausible or hostile value; sometimes unknown keys too.
fn tool_call(reg: &ToolRegistry) -> BoxedStrategy<(String, Map<String, Value>)> {
    // (tool, [(property, required, plausible values)])
    type Props = Vec<(String, bool, Vec<Value>)>;
    let tools: Vec<(String, Props)> = reg
        .tools()
        .iter()
        .map(|t| {
            let schema = Value::Object((*t.input_schema).clone());
            let required = |k: &str| {
                schema["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!(k)))
            };
            let props = schema["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), required(k), plausible_values(k, v)))
                .collect();
            (t.name.to_string(), props)
        })
        .collect();
    select(tools)
        .prop_flat_map(|(name, props)| {
            let values: Vec<_> = props
                .iter()
                .map(|(_, required, plausible)| {
                    let p = if *required { 0.95 } else { 0.5 };
                    prop::option::weighted(p, arg_value(plausible.clone()))
                })
                .collect();
            let odd_key = prop_oneof![
                select(&["unknown", "", "__proto__", "query ", "Query", "limit\0"][..])
                    .prop_map(str::to_string),
                text(),
            ];
            let extra = prop_oneof![
                3 => Just(Vec::new()),
                1 => prop::collection::vec((odd_key, json_value()), 1..3),
            ];
            let keys: Vec<String> = props.into_iter().map(|(k, _, _)| k).collect();
            (Just(name), Just(keys), values, extra)
        })
        .prop_map(|(name, keys, values, extra)| {
            let mut args: Map<String, Value> = keys
                .into_iter()
                .zip(values)
                .filter_map(|(k, v)| Some((k, v?)))
                .collect();
            args.extend(extra);
            (name, args)
        })
        .boxed()
}

/// Tool arguments: random, hostile and nearly valid objects against every
/// tool's schema, then the call itself on an empty and a small real library.
/// Arguments the schema rejects must give an `isError` result naming them.
#[test]
fn tool_arguments() {
    let reg = ToolRegistry::new(ToolFamily::ALL);
    let empty = Library::default();
    let libs: [&Library; 2] = [&empty, &FIXTURE.lib];
    property(
        "tool_arguments",
        256,
        || tool_call(&reg),
        |(name, args)| {
            let schema = &reg.get(&name).expect("listed tool").input_schema;
            let input = format!("{name} {}", Value::Object(args.clone()));
            let mut checked = args.clone();
            let verdict = timed("validate_args", &input, || {
                validate_args(schema, &mut checked)
            });
            if verdict.is_ok() {
                // Validation normalizes in place; what it accepted it accepts again, unchanged.
                let mut again = checked.clone();
                prop_assert!(validate_args(schema, &mut again).is_ok());
                prop_assert_eq!(&again, &checked);
            }
            for lib in libs {
                let res = timed(&format!("call {name}"), &input, || {
                    reg.call(lib, &name, Some(args.clone()))
                });
                prop_assert!(res.is_some(), "a listed tool is always found");
                let res = res.unwrap();
                let text = res
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                if let Err(why) = &verdict {
                    prop_assert_eq!(res.is_error, Some(true), "accepted invalid args: {}", why);
                    prop_assert!(
                        text.starts_with(&format!("invalid arguments for {name}: ")),
                        "{text}"
                    );
                } else if res.is_error == Some(true) {
                    // A call the schema accepts is answered or refused by the
                    // tool, never by a serde error the schema should have caught.
                    prop_assert!(
                        !text.starts_with("invalid arguments: "),
                        "schema accepted what the tool cannot read: {text} (args {})",
                        Value::Object(checked.clone())
                    );
                } else {
                    prop_assert!(res.structured_content.is_some(), "success without a result");
                }
            }
            prop_assert!(reg.call(&empty, "no_such_tool", Some(args)).is_none());
            Ok(())
        },
    );
}

/// Lines a JSON-RPC client may send: garbage, JSON that is not JSON-RPC,
/// requests with odd ids, methods and params, tool calls with the arguments
/// of `tool_arguments` or random ones.
fn jsonrpc_line(reg: &ToolRegistry) -> BoxedStrategy<String> {
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
        Just(Value::Null),
        Just(json!(1.5)),
        Just(json!({"a": 1})),
        Just(json!([1])),
    ];
    let method = prop_oneof![
        select(
            &[
                "tools/call",
                "tools/list",
                "ping",
                "initialize",
                "resources/list",
                "prompts/list",
                "completion/complete",
                "logging/setLevel",
                "notifications/cancelled",
                "notifications/initialized",
                "",
            ][..]
        )
        .prop_map(str::to_string),
        text(),
    ];
    // The tools the server lists, from the registry itself.
    let names: Vec<String> = ToolRegistry::new(ToolFamily::ALL)
        .names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let tool = prop_oneof![select(names), text()];
    prop_oneof![
        1 => lossy_bytes(300).prop_map(|s| s.replace(['\n', '\r'], " ")),
        1 => json_value().prop_map(|v| v.to_string()),
        // Deeper than serde_json's recursion limit (128).
        1 => (100usize..3_000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
        2 => (id.clone(), method, json_value())
            .prop_map(|(id, m, p)| json!({"jsonrpc": "2.0", "id": id, "method": m, "params": p}).to_string()),
        2 => (id.clone(), tool, json_value())
            .prop_map(|(id, name, args)| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()),
        4 => (id, tool_call(reg))
            .prop_map(|(id, (name, args))| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()),
    ]
    .boxed()
}

/// The MCP server over an in-memory stream: after the handshake, random
/// lines, then a ping. The server answers only JSON, answers the ping and
/// every request whose id a client can match (or closes the stream), and its
/// task ends without panicking when the client hangs up.
#[test]
fn jsonrpc_stream() {
    use docsnap::serve::{serve_io, DocsServer};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let handle = Arc::new(RwLock::new(FIXTURE.lib.clone()));
    let reg = ToolRegistry::new(ToolFamily::ALL);
    property(
        "jsonrpc_stream",
        32,
        || prop::collection::vec(jsonrpc_line(&reg), 0..8),
        |lines| {
            rt.block_on(async {
                let (ours, theirs) = tokio::io::duplex(1 << 20);
                let (r, w) = tokio::io::split(theirs);
                let server = tokio::spawn(serve_io(DocsServer::new(handle.clone(), ToolFamily::ALL), r, w));
                let (read, mut write) = tokio::io::split(ours);
                let mut answers = BufReader::new(read).lines();
                let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}});
                let mut sent = vec![
                    init.to_string(),
                    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
                ];
                sent.extend(lines);
                sent.push(json!({"jsonrpc": "2.0", "id": "last-ping", "method": "ping"}).to_string());
                for line in &sent {
                    // The server may hang up on garbage; then writes fail, which is fine.
                    let _ = write.write_all(format!("{line}\n").as_bytes()).await;
                }
                let _ = write.flush().await;
                // Every request with an id a client can match (a string or an
                // integer) is answered with it, whatever else is wrong with it.
                let mut unanswered: std::collections::HashSet<String> = sent[2..]
                    .iter()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .filter(|m| m.get("method").is_some())
                    .filter_map(|m| m.get("id").filter(|i| i.is_string() || i.is_i64() || i.is_u64()).map(Value::to_string))
                    .collect();
                let t = Instant::now();
                let mut pinged = false;
                loop {
                    let next = tokio::time::timeout(hang_wait(), answers.next_line()).await;
                    prop_assert!(next.is_ok(), "no answer within {:?} (hang guard)", hang_wait());
                    let Ok(Some(line)) = next.unwrap() else { break };
                    let msg: Result<Value, _> = serde_json::from_str(&line);
                    prop_assert!(msg.is_ok(), "the server wrote a line that is not JSON: {line:?}");
                    let msg = msg.unwrap();
                    unanswered.remove(&msg["id"].to_string());
                    // Tool calls run on blocking threads: their answers may
                    // come after the ping's.
                    pinged |= msg["id"] == json!("last-ping");
                    if pinged && unanswered.is_empty() {
                        break;
                    }
                }
                prop_assert!(unanswered.is_empty(), "requests never answered: {unanswered:?}");
                drop(write);
                drop(answers);
                let done = tokio::time::timeout(hang_wait(), server).await;
                prop_assert!(done.is_ok(), "the server did not stop after the client hung up");
                let joined = done.unwrap();
                prop_assert!(
                    !joined.as_ref().is_err_and(|e| e.is_panic()),
                    "the server task panicked: {joined:?}"
                );
                if let Some(guard) = *HANG_GUARD {
                    prop_assert!(t.elapsed() < guard * 2);
                }
                Ok(())
            })
        },
    );
}

// ---------------------------------------------------------------------------
// Regressions: the bugs these properties found, minimized. All are fixed;
// the tests keep them so. The stack-overflow ones run on the 2 MiB stack a
// build's normalizer threads have (an overflow aborts the whole process:
// the build's `catch_unwind` around each page cannot catch it).
// ---------------------------------------------------------------------------

/// `open` × `depth`, a leaf, `close` × `depth`.
fn nested(open: &str, close: &str, depth: usize) -> String {
    format!("{}leaf text{}", open.repeat(depth), close.repeat(depth))
}

/// Run `f` on a thread with the stack a build's normalizer threads have
/// (`std::thread::spawn`'s default, 2 MiB).
fn on_production_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic");
}

/// Run `f` on a 1 GiB stack, so deep input shows its other bugs first.
fn big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(f)
        .expect("spawn")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

/// Run `f` on a 1 GiB stack; fail if it is still running when the hang
/// guard expires.
fn within_hang_guard(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            f();
            let _ = done.send(());
        })
        .expect("spawn");
    match wait.recv_timeout(hang_wait()) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: still running after {:?} (hang guard)", hang_wait())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

const URL: &str = "https://x.example/docs/page";

/// Was: the HTML converter recursed once per element nesting level (`walk` →
/// `element` → `dispatch` → `children`), so nested `<div>`s overflowed a
/// 2 MiB stack from about 3,700 levels in a release build (a 40 KB page),
/// 1,800 for `<ul><li>`.
#[test]
fn no_stack_overflow_in_html_converter() {
    on_production_stack(|| {
        let body = nested("<div>", "</div>", 20_000);
        let _ = normalize(Family::Mintlify, BodyKind::Html, &body, URL);
    });
}

/// Was: the MDX renderer recursed once per component nesting level
/// (`Renderer::render_nodes` → `render_elem` → `mintlify::render` →
/// `Renderer::block`): nested `<Note>`s overflowed a 2 MiB stack from about
/// 2,100 levels in a release build.
#[test]
fn no_stack_overflow_in_mdx_renderer() {
    on_production_stack(|| {
        let body = format!("# T\n\n{}", nested("<Note>\n", "\n</Note>", 20_000));
        let _ = normalize(Family::Mintlify, BodyKind::Markdown, &body, URL);
    });
}

/// Was: `export const` values were read by a recursive descent
/// (`JsParser::value`) without a depth limit: nested arrays overflowed a
/// 2 MiB stack from about 8,200 levels in a release build.
#[test]
fn no_stack_overflow_in_mdx_export_parser() {
    on_production_stack(|| {
        let body = format!("export const a = {};\n# T\n\nx", nested("[", "]", 20_000));
        let _ = normalize(Family::Openai, BodyKind::Markdown, &body, URL);
    });
}

/// Was: `heading_text` recursed into link text, so a heading of
/// nested links overflowed a 2 MiB stack from about 6,300 levels in a
/// release build; `section::split` reaches it for every heading.
#[test]
fn no_stack_overflow_in_heading_text() {
    on_production_stack(|| {
        let _ = markdown::heading_text(&nested("[", "](u)", 20_000));
    });
}

/// Was: the same heading took time quadratic in its nesting, each level
/// re-scanning the rest of the line for its brackets: 20,000 levels (a
/// 100 KB heading line) took 10 s in a release build.
#[test]
fn nested_links_in_heading_stay_fast() {
    let n = Normalized::new(
        String::new(),
        String::new(),
        format!("## {}\n\ntext\n", nested("[", "](u)", 20_000)),
        Vec::new(),
    );
    within_hang_guard("section::split", move || {
        section::split(URL, "T", &n, SlugStyle::Github, 3200);
    });
}

/// Was: the MDX renderer re-read (trimmed, re-indented) the rendered text at
/// every nesting level, so nested components cost size × depth: 20,000
/// nested `<Tabs><Tab>` (a 680 KB page) took 30 s in a release build; nested
/// inline HTML in MDX (`<a>`, `<em><strong>`, `<h2>`, `<table>`,
/// `<details>`) and `<Note>` the same.
#[test]
fn nested_mdx_components_stay_fast() {
    let body = format!(
        "# T\n\n{}",
        nested("<Tabs><Tab title=\"t\">", "</Tab></Tabs>", 20_000)
    );
    within_hang_guard("normalize(Mintlify, Markdown)", move || {
        let _ = normalize(Family::Mintlify, BodyKind::Markdown, &body, URL);
    });
}

/// Was: nested `<Steps><Step>` (and `<CardGroup><Card>`) cost time cubic in
/// depth, each level re-indenting the steps below it and re-scanning all
/// their lines (`mdx::leading_ws`, `mdx::indent`): 2,000 levels (a 70 KB
/// page) took 9.7 s in a release build and made 6 MB of Markdown.
#[test]
fn nested_steps_stay_fast() {
    let body = format!(
        "# T\n\n{}",
        nested("<Steps><Step title=\"s\">\n", "\n</Step></Steps>", 3_000)
    );
    within_hang_guard("normalize(Mintlify, Markdown)", move || {
        let _ = normalize(Family::Mintlify, BodyKind::Markdown, &body, URL);
    });
}

/// Was: each `<sup>` took the plain text of its whole subtree before
/// converting it, so nested `<sup>`s cost time quadratic in depth: 20,000
/// levels (100 KB) took 9 s in a release build.
#[test]
fn nested_sup_stays_fast() {
    let body = format!("<main>{}</main>", nested("<sup>", "</sup>", 30_000));
    within_hang_guard("normalize(Mintlify, Html)", move || {
        let _ = normalize(Family::Mintlify, BodyKind::Html, &body, URL);
    });
}

/// Was: `section::split` cut an overlong line by re-counting and copying the
/// rest of the line at every cut, so one long line cost length² / limit.
#[test]
fn long_lines_are_cut_in_linear_time() {
    let n = Normalized::new(
        String::new(),
        String::new(),
        "x".repeat(5_000_000),
        Vec::new(),
    );
    within_hang_guard("section::split", move || {
        section::split(URL, "T", &n, SlugStyle::Github, 40);
    });
}

/// Found by the soak (seed 3280387012): 16,000 levels of `<ul><li>`
/// (290 KB) took 11 s of CPU in html5ever's tree builder, quadratic in
/// depth. A page nested past `MAX_NESTING` now fails by name after a
/// linear tokenizer pass.
#[test]
fn a_page_nested_thousands_deep_fails_by_name() {
    let depth = 16_000;
    let body = format!(
        "<main>{}x{}</main>",
        "<ul><li>".repeat(depth),
        "</li></ul>".repeat(depth)
    );
    for family in [Family::Mintlify, Family::Sphinx, Family::Leapview] {
        match normalize(family, BodyKind::Html, &body, URL) {
            Err(e) => assert!(e.to_string().contains("nested 16001 deep"), "{e}"),
            Ok(_) => panic!("{family:?}: a page nested {depth} deep was parsed"),
        }
    }
    // `<main>` and the lists together at the limit: still read.
    let lists = docsnap::normalize::nesting::MAX_NESTING - 1;
    let shallow = format!(
        "<main>{}x{}</main>",
        "<ul><li>".repeat(lists),
        "</li></ul>".repeat(lists)
    );
    assert!(normalize(Family::Mintlify, BodyKind::Html, &shallow, URL).is_ok());
}

/// Was: lists indented every line once per level, so nested lists made
/// Markdown quadratic in their depth: 2,000 levels of `<ul><li>x` (18 KB)
/// became 4 MB; 20,000 levels (180 KB) would have been 400 MB.
#[test]
fn nested_lists_stay_linear() {
    big_stack(|| {
        let body = format!("<main>{}</main>", "<ul><li>x".repeat(2_000));
        let n = normalize(Family::Mintlify, BodyKind::Html, &body, URL).expect("content");
        assert!(
            n.markdown.len() <= linear_bound(body.len()),
            "{} bytes in, {} bytes out",
            body.len(),
            n.markdown.len()
        );
    });
}

/// Was: every row of a table was padded to its widest row, so one wide
/// header row over many short rows made the Markdown quadratic: 2,000 header
/// cells over 2,000 one-cell rows (28 KB) became 8 MB.
#[test]
fn wide_tables_stay_linear() {
    let body = format!(
        "<main><table><tr>{}{}</table></main>",
        "<th>h".repeat(2_000),
        "<tr><td>c".repeat(2_000)
    );
    let n = normalize(Family::Mintlify, BodyKind::Html, &body, URL).expect("content");
    assert!(
        n.markdown.len() <= linear_bound(body.len()),
        "{} bytes in, {} bytes out",
        body.len(),
        n.markdown.len()
    );
}

/// Was: `search_godot_docs` documents "values above 50 are reduced to 50
/// rather than rejected" and its schema sets no maximum, so validation
/// accepted `limit: 1e20` (as u64::MAX), which the tool's `Option<i64>`
/// could not hold: the call failed with a raw serde error instead of
/// answering.
#[test]
fn godot_limit_past_i64_is_reduced() {
    let reg = ToolRegistry::new(ToolFamily::ALL);
    let args = json!({"query": "signals", "limit": 1e20});
    let res = reg
        .call(
            &Library::default(),
            "search_godot_docs",
            args.as_object().cloned(),
        )
        .expect("listed tool");
    let text = res.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(!text.starts_with("invalid arguments: "), "{text}");
}
