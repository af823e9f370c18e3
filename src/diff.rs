//! What changed between two artifacts: pages added, removed, moved and
//! changed, and inside changed pages the sections added, removed and changed,
//! each with a unified diff of its Markdown.
//!
//! The comparison is meant for two snapshots of one documentation set: two
//! dates of one (source, version), or two versions of one source. Pages are
//! matched by their path relative to the version root, and before any text is
//! compared the old side's version root (`https://host/v3.1/…`, `/v3.1/…`) is
//! rewritten to the new side's, so a link that differs only by its version
//! segment is not a change. A page that disappeared from one path and appeared
//! under another with the same (or nearly the same) text is a move.
//!
//! [`diff_artifacts`] is a pure function; the renderers turn its [`Diff`] into
//! text for a terminal, Markdown for a release note, or the stable JSON.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use regex::Regex;
use serde::Serialize;

use crate::artifact::Artifact;
use crate::model::{Page, Section};

/// Lines of one page's diff shown in the Markdown report before it is cut
/// (the JSON report always has every line).
pub const MARKDOWN_DIFF_LINES: usize = 60;

/// Smallest line similarity (0–1) for a removed and an added page to count as
/// one page moved, when their texts are not identical.
pub const MOVE_SIMILARITY: f32 = 0.9;

/// Write a report to stdout; a reader that went away (`| head`) is not an error.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Output format of `docsnap diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// For a terminal.
    #[default]
    Text,
    /// A changelog for release notes.
    Markdown,
    /// The stable machine interface ([`Diff::to_json`]).
    Json,
}

/// A `--format` that is not one of text, markdown or json.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (text, markdown or json)")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, UnknownFormat> {
        match s {
            "text" => Ok(Format::Text),
            "markdown" | "md" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

/// Identity of one side of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotInfo {
    pub source: String,
    pub product: String,
    pub version: String,
    pub snapshot_id: String,
    pub created_at: String,
    /// The version root derived from the pages (`https://host/v3.2/`), if any.
    pub root: Option<String>,
}

/// A page named in a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageEntry {
    pub url: String,
    pub path: String,
    pub title: String,
    pub description: String,
}

/// A page that left one path and appeared under another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MovedPage {
    pub from: PageEntry,
    pub to: PageEntry,
    /// Line similarity of the two texts (1.0 = identical after normalization).
    pub similarity: f32,
}

/// What happened to one section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

impl ChangeKind {
    /// The word shown for it (`added`, `removed`, `changed`).
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        }
    }
}

/// One section added, removed or changed inside a changed page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionChange {
    /// The section's anchor (the new side's; the old side's when removed);
    /// empty for the page's lead (title, description and text before the first heading).
    pub anchor: String,
    /// The heading path below the page title, as `A > B` (empty for the lead).
    pub heading: String,
    pub change: ChangeKind,
    /// Unified diff of the section's Markdown (old side rebased on the new root).
    pub diff: String,
}

/// A page present on both sides (same path, or moved) whose content differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedPage {
    /// URL on the new side.
    pub url: String,
    /// URL on the old side.
    pub from_url: String,
    pub path: String,
    pub title: String,
    pub sections: Vec<SectionChange>,
}

/// The difference between two artifacts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub from: SnapshotInfo,
    pub to: SnapshotInfo,
    pub added: Vec<PageEntry>,
    pub removed: Vec<PageEntry>,
    pub moved: Vec<MovedPage>,
    pub changed: Vec<ChangedPage>,
}

impl Diff {
    /// True when the two sides have the same content (after normalization).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.moved.is_empty()
            && self.changed.is_empty()
    }

    /// The diff in `format`, ending with a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.render_text(),
            Format::Markdown => self.render_markdown(),
            Format::Json => {
                let mut s = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
                s.push('\n');
                s
            }
        }
    }

    /// `N added, N removed, N moved, N changed`.
    pub fn summary(&self) -> String {
        format!(
            "{} added, {} removed, {} moved, {} changed",
            self.added.len(),
            self.removed.len(),
            self.moved.len(),
            self.changed.len()
        )
    }

    /// The stable JSON interface: `{from, to, added: [url], removed: [url],
    /// moved: [{from, to}], changed: [{url, sections: [{anchor, change, diff}]}]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let from = if self.from.snapshot_id.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::from(self.from.snapshot_id.as_str())
        };
        serde_json::json!({
            "from": from,
            "to": self.to.snapshot_id,
            "added": self.added.iter().map(|p| p.url.as_str()).collect::<Vec<_>>(),
            "removed": self.removed.iter().map(|p| p.url.as_str()).collect::<Vec<_>>(),
            "moved": self
                .moved
                .iter()
                .map(|m| serde_json::json!({"from": m.from.url, "to": m.to.url}))
                .collect::<Vec<_>>(),
            "changed": self
                .changed
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "url": c.url,
                        "sections": c
                            .sections
                            .iter()
                            .map(|s| serde_json::json!({
                                "anchor": s.anchor,
                                "change": s.change.label(),
                                "diff": s.diff,
                            }))
                            .collect::<Vec<_>>(),
                    })
                })
                .collect::<Vec<_>>(),
        })
    }

    /// Plain text for a terminal: the lists, then each changed section's diff.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} {} {} -> {} {} {}",
            self.from.source,
            self.from.version,
            self.from.snapshot_id,
            self.to.source,
            self.to.version,
            self.to.snapshot_id
        );
        if self.is_empty() {
            let _ = writeln!(o, "no differences");
            return o;
        }
        let _ = writeln!(o, "{}", self.summary());
        if !self.added.is_empty() {
            let _ = writeln!(o, "\nadded:");
            for p in &self.added {
                let _ = writeln!(o, "  + {}  {}", p.path_or_url(), p.url);
            }
        }
        if !self.removed.is_empty() {
            let _ = writeln!(o, "\nremoved:");
            for p in &self.removed {
                let _ = writeln!(o, "  - {}  {}", p.path_or_url(), p.url);
            }
        }
        if !self.moved.is_empty() {
            let _ = writeln!(o, "\nmoved:");
            for m in &self.moved {
                let _ = writeln!(
                    o,
                    "  > {} -> {}  {} -> {}",
                    m.from.path_or_url(),
                    m.to.path_or_url(),
                    m.from.url,
                    m.to.url
                );
            }
        }
        if !self.changed.is_empty() {
            let _ = writeln!(o, "\nchanged:");
            for c in &self.changed {
                let _ = writeln!(o, "  ~ {}  {}", display_path(&c.path, &c.url), c.url);
                for s in &c.sections {
                    let what = if s.heading.is_empty() {
                        "(lead)".to_string()
                    } else {
                        s.heading.clone()
                    };
                    let anchor = if s.anchor.is_empty() {
                        String::new()
                    } else {
                        format!("#{}  ", s.anchor)
                    };
                    let _ = writeln!(o, "      {:<8} {anchor}{what}", s.change.label());
                }
            }
            for c in &self.changed {
                for s in &c.sections {
                    let _ = writeln!(o);
                    o.push_str(&s.diff);
                    if !s.diff.ends_with('\n') {
                        o.push('\n');
                    }
                }
            }
        }
        o
    }

    /// A changelog a maintainer can paste into a release note: headings
    /// Added / Removed / Moved / Changed, page titles linked to their URLs, and
    /// per changed page its sections and one ```diff block.
    pub fn render_markdown(&self) -> String {
        let mut o = String::new();
        let product = if self.to.product.is_empty() {
            &self.to.source
        } else {
            &self.to.product
        };
        let title = if self.from.snapshot_id.is_empty() {
            format!("# {product} {}: first snapshot", self.to.version)
        } else if self.from.version != self.to.version {
            format!(
                "# {product} {}: changes since {}",
                self.to.version, self.from.version
            )
        } else {
            format!(
                "# {product} {}: changes since {}",
                self.to.version,
                date_of(&self.from.created_at)
            )
        };
        let _ = writeln!(o, "{title}\n");
        if self.from.snapshot_id.is_empty() {
            let _ = writeln!(
                o,
                "Snapshot `{}` ({} {}).\n",
                self.to.snapshot_id, self.to.source, self.to.version
            );
        } else {
            let _ = writeln!(
                o,
                "Compared snapshot `{}` ({} {}) with `{}` ({} {}).\n",
                self.from.snapshot_id,
                self.from.source,
                self.from.version,
                self.to.snapshot_id,
                self.to.source,
                self.to.version
            );
        }
        if self.is_empty() {
            let _ = writeln!(o, "No changes.");
            return o;
        }
        let _ = writeln!(o, "**{}.**\n", self.summary());
        if !self.added.is_empty() {
            let _ = writeln!(o, "## Added\n");
            for p in &self.added {
                let desc = if p.description.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", one_line(&p.description))
                };
                let _ = writeln!(o, "- {}{desc}", md_link(&p.title_or_path(), &p.url));
            }
            o.push('\n');
        }
        if !self.removed.is_empty() {
            let _ = writeln!(o, "## Removed\n");
            for p in &self.removed {
                let _ = writeln!(
                    o,
                    "- {} (`{}`)",
                    md_link(&p.title_or_path(), &p.url),
                    p.path_or_url()
                );
            }
            o.push('\n');
        }
        if !self.moved.is_empty() {
            let _ = writeln!(o, "## Moved\n");
            for m in &self.moved {
                let edited = if m.similarity < 1.0 {
                    " (and edited, see Changed)"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "- {}: moved from `{}` to `{}`{edited}",
                    md_link(&m.to.title_or_path(), &m.to.url),
                    m.from.path_or_url(),
                    m.to.path_or_url()
                );
            }
            o.push('\n');
        }
        if !self.changed.is_empty() {
            let _ = writeln!(o, "## Changed\n");
            for c in &self.changed {
                let name = if c.title.is_empty() {
                    &c.path
                } else {
                    &c.title
                };
                let _ = writeln!(o, "### {}\n", md_link(name, &c.url));
                for s in &c.sections {
                    let label = match s.change {
                        ChangeKind::Added => "Added",
                        ChangeKind::Removed => "Removed",
                        ChangeKind::Changed => "Changed",
                    };
                    let heading = if s.heading.is_empty() {
                        "introduction".to_string()
                    } else {
                        s.heading.clone()
                    };
                    let target = if s.change == ChangeKind::Removed {
                        md_escape(&heading)
                    } else if s.anchor.is_empty() {
                        md_link(&heading, &c.url)
                    } else {
                        md_link(&heading, &format!("{}#{}", c.url, s.anchor))
                    };
                    let _ = writeln!(o, "- {label}: {target}");
                }
                let mut body = String::new();
                for s in &c.sections {
                    body.push_str(&s.diff);
                    if !body.ends_with('\n') {
                        body.push('\n');
                    }
                }
                let lines: Vec<&str> = body.lines().collect();
                let shown = lines.len().min(MARKDOWN_DIFF_LINES);
                let text = lines[..shown].join("\n");
                let fence = "`".repeat(longest_backtick_run(&text).max(2) + 1);
                let _ = writeln!(o, "\n{fence}diff\n{text}\n{fence}");
                if lines.len() > shown {
                    let _ = writeln!(
                        o,
                        "\n({} more diff lines; see the JSON report)",
                        lines.len() - shown
                    );
                }
                o.push('\n');
            }
        }
        o
    }
}

impl PageEntry {
    fn from_page(p: &Page) -> Self {
        PageEntry {
            url: p.url.clone(),
            path: p.path.clone(),
            title: p.title.clone(),
            description: p.description.clone(),
        }
    }

    fn path_or_url(&self) -> &str {
        display_path(&self.path, &self.url)
    }

    fn title_or_path(&self) -> String {
        if self.title.trim().is_empty() {
            self.path_or_url().to_string()
        } else {
            self.title.clone()
        }
    }
}

fn display_path<'a>(path: &'a str, url: &'a str) -> &'a str {
    if path.is_empty() {
        url
    } else {
        path
    }
}

fn date_of(iso: &str) -> &str {
    iso.get(..10).unwrap_or(iso)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in one_line(s).chars() {
        if matches!(c, '[' | ']' | '`' | '*' | '_' | '<' | '>') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

fn md_link(text: &str, url: &str) -> String {
    let url = url
        .replace(' ', "%20")
        .replace('(', "%28")
        .replace(')', "%29");
    format!("[{}]({url})", md_escape(text))
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == '`' {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// The version root of an artifact's pages: the most common `url` minus
/// `path` (`https://docs.leapview.example/v3.1/`).
pub fn version_root(pages: &[Page]) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in pages {
        let root = if p.path.is_empty() {
            Some(p.url.as_str())
        } else {
            p.url.strip_suffix(p.path.as_str())
        };
        if let Some(r) = root {
            if r.starts_with("http") {
                *counts.entry(r).or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .max_by_key(|(r, n)| (*n, std::cmp::Reverse(*r)))
        .map(|(r, _)| {
            if r.ends_with('/') {
                r.to_string()
            } else {
                format!("{r}/")
            }
        })
}

/// Rewrites the old side's version root into the new side's, in absolute
/// URLs and in root-relative links, so version-only link changes vanish.
struct Rebase {
    re: Option<Regex>,
    abs_to: String,
    rel_to: String,
}

impl Rebase {
    fn new(from_root: Option<&str>, to_root: Option<&str>) -> Rebase {
        let none = Rebase {
            re: None,
            abs_to: String::new(),
            rel_to: String::new(),
        };
        let (Some(a), Some(b)) = (from_root, to_root) else {
            return none;
        };
        let a = a.trim_end_matches('/');
        let b = b.trim_end_matches('/');
        if a == b {
            return none;
        }
        let path_of = |r: &str| {
            url::Url::parse(r)
                .ok()
                .map(|u| u.path().trim_end_matches('/').to_string())
                .unwrap_or_default()
        };
        let (a_rel, b_rel) = (path_of(a), path_of(b));
        // A link ends at the root or continues with `/`; what may follow a
        // bare root in Markdown or HTML.
        const END: &str = r#"(/|[)\]\s"'#?>]|$)"#;
        // Named groups: abs + e1 for absolute URLs, pre + rel + e2 for
        // root-relative links (only where a link can start).
        let mut pat = format!(r"(?m)(?P<abs>{})(?P<e1>{END})", regex::escape(a));
        if !a_rel.is_empty() && a_rel != b_rel {
            pat.push_str(&format!(
                r#"|(?P<pre>^|[\s(\[<"'=])(?P<rel>{})(?P<e2>{END})"#,
                regex::escape(&a_rel)
            ));
        }
        match Regex::new(&pat) {
            Ok(re) => Rebase {
                re: Some(re),
                abs_to: b.to_string(),
                rel_to: b_rel,
            },
            Err(_) => none,
        }
    }

    fn apply(&self, s: &str) -> String {
        let Some(re) = &self.re else {
            return s.to_string();
        };
        re.replace_all(s, |c: &regex::Captures| {
            if c.name("abs").is_some() {
                let end = c.name("e1").map(|m| m.as_str()).unwrap_or("");
                format!("{}{end}", self.abs_to)
            } else {
                let pre = c.name("pre").map(|m| m.as_str()).unwrap_or("");
                let end = c.name("e2").map(|m| m.as_str()).unwrap_or("");
                format!("{pre}{}{end}", self.rel_to)
            }
        })
        .into_owned()
    }
}

/// A unit of comparison inside a page: the lead (title, description and the
/// text before the first heading) or one section with its parts joined.
#[derive(Debug, Clone)]
struct Unit {
    anchor: String,
    /// Heading path below the page title.
    path: Vec<String>,
    text: String,
}

fn units_of(page: &Page, sections: &[&Section], rebase: &Rebase) -> Vec<Unit> {
    let mut head = format!("# {}\n", rebase.apply(&page.title));
    if !page.description.is_empty() {
        head.push_str(&format!("\n> {}\n", rebase.apply(&page.description)));
    }
    let mut out = vec![Unit {
        anchor: String::new(),
        path: Vec::new(),
        text: head,
    }];
    let mut in_lead = true;
    for s in sections {
        let is_lead = in_lead && s.anchor.is_empty() && s.heading_path.len() <= 1;
        let text = rebase.apply(&s.text);
        if is_lead {
            out[0].text.push('\n');
            out[0].text.push_str(&text);
            out[0].text.push('\n');
            continue;
        }
        in_lead = false;
        let path: Vec<String> = s.heading_path.iter().skip(1).cloned().collect();
        if s.part > 1 {
            if let Some(last) = out.last_mut() {
                if last.anchor == s.anchor && last.path == path {
                    last.text.push_str("\n\n");
                    last.text.push_str(&text);
                    continue;
                }
            }
        }
        out.push(Unit {
            anchor: s.anchor.clone(),
            path,
            text,
        });
    }
    for u in &mut out {
        if !u.text.ends_with('\n') {
            u.text.push('\n');
        }
    }
    out
}

fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    let d = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, new);
    d.unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

fn label(side: &str, path: &str, anchor: &str) -> String {
    let p = if path.is_empty() { "(root)" } else { path };
    if anchor.is_empty() {
        format!("{side}/{p}")
    } else {
        format!("{side}/{p}#{anchor}")
    }
}

/// The section changes between two versions of one page.
fn section_changes(
    old: &[Unit],
    new: &[Unit],
    old_path: &str,
    new_path: &str,
) -> Vec<SectionChange> {
    let mut a_of_b: Vec<Option<usize>> = vec![None; new.len()];
    let mut used_a = vec![false; old.len()];
    // Match by (anchor, heading path), then by anchor, then by heading path;
    // duplicates pair up in order.
    type KeyFn = fn(&Unit) -> Option<String>;
    let passes: [KeyFn; 3] = [
        |u| Some(format!("{}\u{0}{}", u.anchor, u.path.join("\u{1}"))),
        |u| (!u.anchor.is_empty()).then(|| u.anchor.clone()),
        |u| (!u.path.is_empty()).then(|| u.path.join("\u{1}")),
    ];
    for key in passes {
        let mut queue: HashMap<String, VecDeque<usize>> = HashMap::new();
        for (i, u) in old.iter().enumerate() {
            if !used_a[i] {
                if let Some(k) = key(u) {
                    queue.entry(k).or_default().push_back(i);
                }
            }
        }
        for (j, u) in new.iter().enumerate() {
            if a_of_b[j].is_some() {
                continue;
            }
            if let Some(i) = key(u)
                .and_then(|k| queue.get_mut(&k))
                .and_then(|q| q.pop_front())
            {
                a_of_b[j] = Some(i);
                used_a[i] = true;
            }
        }
    }
    let mut b_of_a: Vec<Option<usize>> = vec![None; old.len()];
    for (j, m) in a_of_b.iter().enumerate() {
        if let Some(i) = m {
            b_of_a[*i] = Some(j);
        }
    }
    // (position in the new page's order, tie-break, change)
    let mut out: Vec<((i64, u8, usize), SectionChange)> = Vec::new();
    for (j, u) in new.iter().enumerate() {
        let heading = u.path.join(" > ");
        match a_of_b[j] {
            Some(i) if old[i].text == u.text => {}
            Some(i) => out.push((
                (j as i64, 0, 0),
                SectionChange {
                    anchor: u.anchor.clone(),
                    heading,
                    change: ChangeKind::Changed,
                    diff: unified(
                        &old[i].text,
                        &u.text,
                        &label("a", old_path, &old[i].anchor),
                        &label("b", new_path, &u.anchor),
                    ),
                },
            )),
            None => out.push((
                (j as i64, 0, 0),
                SectionChange {
                    anchor: u.anchor.clone(),
                    heading,
                    change: ChangeKind::Added,
                    diff: unified("", &u.text, "/dev/null", &label("b", new_path, &u.anchor)),
                },
            )),
        }
    }
    let mut last_b: i64 = -1;
    for (i, u) in old.iter().enumerate() {
        match b_of_a[i] {
            Some(j) => last_b = j as i64,
            None => out.push((
                (last_b, 1, i),
                SectionChange {
                    anchor: u.anchor.clone(),
                    heading: u.path.join(" > "),
                    change: ChangeKind::Removed,
                    diff: unified(&u.text, "", &label("a", old_path, &u.anchor), "/dev/null"),
                },
            )),
        }
    }
    out.sort_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, c)| c).collect()
}

/// One side of the comparison, indexed.
struct Side<'a> {
    pages: Vec<&'a Page>,
    sections: HashMap<&'a str, Vec<&'a Section>>,
    by_key: BTreeMap<String, usize>,
}

impl<'a> Side<'a> {
    fn new(a: &'a Artifact) -> Side<'a> {
        let mut sections: HashMap<&str, Vec<&Section>> = HashMap::new();
        for s in &a.sections {
            sections.entry(s.url.as_str()).or_default().push(s);
        }
        let mut by_key = BTreeMap::new();
        let mut pages = Vec::new();
        for p in &a.pages {
            // Pages are matched by path; a duplicate path falls back to its URL.
            let key = if by_key.contains_key(&p.path) {
                format!("\u{0}{}", p.url)
            } else {
                p.path.clone()
            };
            if by_key.contains_key(&key) {
                continue;
            }
            by_key.insert(key, pages.len());
            pages.push(p);
        }
        Side {
            pages,
            sections,
            by_key,
        }
    }

    fn secs(&self, p: &Page) -> &[&'a Section] {
        self.sections
            .get(p.url.as_str())
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }
}

fn info(a: &Artifact) -> SnapshotInfo {
    SnapshotInfo {
        source: a.manifest.source.clone(),
        product: a.manifest.product.clone(),
        version: a.manifest.version.clone(),
        snapshot_id: a.manifest.snapshot_id.clone(),
        created_at: a.manifest.created_at.clone(),
        root: version_root(&a.pages),
    }
}

/// Non-empty trimmed lines, for the quick similarity filter of move detection.
fn line_set(s: &str) -> HashSet<&str> {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

/// Compare two artifacts (`a` the old side, `b` the new one).
pub fn diff_artifacts(a: &Artifact, b: &Artifact) -> Diff {
    let from = info(a);
    let to = info(b);
    let rebase = Rebase::new(from.root.as_deref(), to.root.as_deref());
    let sa = Side::new(a);
    let sb = Side::new(b);

    // Normalized content of an old page, in the new side's URL space.
    let norm_a = |p: &Page| {
        (
            rebase.apply(&p.title),
            rebase.apply(&p.description),
            rebase.apply(&p.markdown),
        )
    };
    let same = |pa: &Page, pb: &Page| {
        let (t, d, m) = norm_a(pa);
        t == pb.title && d == pb.description && m == pb.markdown
    };

    let mut changed: Vec<ChangedPage> = Vec::new();
    let mut only_a: Vec<&Page> = Vec::new();
    let mut only_b: Vec<&Page> = Vec::new();
    for (key, &ia) in &sa.by_key {
        let pa = sa.pages[ia];
        match sb.by_key.get(key) {
            Some(&ib) => {
                let pb = sb.pages[ib];
                if !same(pa, pb) {
                    changed.push(changed_page(pa, pb, &sa, &sb, &rebase));
                }
            }
            None => only_a.push(pa),
        }
    }
    for (key, &ib) in &sb.by_key {
        if !sa.by_key.contains_key(key) {
            only_b.push(sb.pages[ib]);
        }
    }

    // Moves: identical normalized Markdown first, then near-identical text.
    let a_md: Vec<String> = only_a.iter().map(|p| rebase.apply(&p.markdown)).collect();
    let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
    {
        let b_sets: Vec<HashSet<&str>> = only_b.iter().map(|p| line_set(&p.markdown)).collect();
        for (i, pa) in only_a.iter().enumerate() {
            let ma = &a_md[i];
            let set_a = line_set(ma);
            for (j, pb) in only_b.iter().enumerate() {
                let mb = &pb.markdown;
                if ma == mb {
                    // Identical text: a move if there is any text, or the same title.
                    if !ma.trim().is_empty() || norm_a(pa).0 == pb.title {
                        pairs.push((1.0, i, j));
                    }
                    continue;
                }
                let (la, lb) = (ma.len().max(1) as f32, mb.len().max(1) as f32);
                if ma.trim().len() < 200 || mb.trim().len() < 200 || la.min(lb) / la.max(lb) < 0.8 {
                    continue;
                }
                let set_b = &b_sets[j];
                let inter = set_a.intersection(set_b).count() as f32;
                let uni = (set_a.len() + set_b.len()) as f32 - inter;
                if uni == 0.0 || inter / uni < 0.5 {
                    continue;
                }
                let r = similar::TextDiff::configure()
                    .timeout(std::time::Duration::from_secs(1))
                    .diff_lines(ma.as_str(), mb.as_str())
                    .ratio();
                if r >= MOVE_SIMILARITY {
                    pairs.push((r.min(0.9999), i, j));
                }
            }
        }
    }
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut taken_a = vec![false; only_a.len()];
    let mut taken_b = vec![false; only_b.len()];
    let mut moved = Vec::new();
    for (score, i, j) in pairs {
        if taken_a[i] || taken_b[j] {
            continue;
        }
        taken_a[i] = true;
        taken_b[j] = true;
        let (pa, pb) = (only_a[i], only_b[j]);
        let identical = same(pa, pb);
        moved.push(MovedPage {
            from: PageEntry::from_page(pa),
            to: PageEntry::from_page(pb),
            similarity: if identical { 1.0 } else { score.min(0.9999) },
        });
        if !identical {
            changed.push(changed_page(pa, pb, &sa, &sb, &rebase));
        }
    }
    let mut removed: Vec<PageEntry> = only_a
        .iter()
        .enumerate()
        .filter(|(i, _)| !taken_a[*i])
        .map(|(_, p)| PageEntry::from_page(p))
        .collect();
    let mut added: Vec<PageEntry> = only_b
        .iter()
        .enumerate()
        .filter(|(j, _)| !taken_b[*j])
        .map(|(_, p)| PageEntry::from_page(p))
        .collect();
    removed.sort_by(|x, y| (&x.path, &x.url).cmp(&(&y.path, &y.url)));
    added.sort_by(|x, y| (&x.path, &x.url).cmp(&(&y.path, &y.url)));
    moved.sort_by(|x, y| (&x.to.path, &x.to.url).cmp(&(&y.to.path, &y.to.url)));
    changed.sort_by(|x, y| (&x.path, &x.url).cmp(&(&y.path, &y.url)));
    Diff {
        from,
        to,
        added,
        removed,
        moved,
        changed,
    }
}

fn changed_page(pa: &Page, pb: &Page, sa: &Side, sb: &Side, rebase: &Rebase) -> ChangedPage {
    let ua = units_of(pa, sa.secs(pa), rebase);
    let ub = units_of(pb, sb.secs(pb), &Rebase::new(None, None));
    let mut sections = section_changes(&ua, &ub, &pa.path, &pb.path);
    if sections.is_empty() {
        // The content differs outside every section (e.g. only whitespace
        // between them): show the whole page.
        let old = format!("{}\n", rebase.apply(&pa.markdown));
        let new = format!("{}\n", pb.markdown);
        sections.push(SectionChange {
            anchor: String::new(),
            heading: String::new(),
            change: ChangeKind::Changed,
            diff: unified(
                &old,
                &new,
                &label("a", &pa.path, ""),
                &label("b", &pb.path, ""),
            ),
        });
    }
    ChangedPage {
        url: pb.url.clone(),
        from_url: pa.url.clone(),
        path: pb.path.clone(),
        title: pb.title.clone(),
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Counts, Manifest};

    fn page(root: &str, path: &str, title: &str, md: &str) -> Page {
        Page {
            url: format!("{root}{path}"),
            title: title.into(),
            description: String::new(),
            markdown: md.into(),
            sha256: crate::model::page_hash(title, "", md),
            path: path.into(),
            etag: None,
            last_modified: None,
        }
    }

    /// Sections the way `section::split` cuts them, enough for these tests.
    fn sections_of(p: &Page) -> Vec<Section> {
        let mut out: Vec<Section> = Vec::new();
        let mut cur: Option<Section> = None;
        let mut lead = String::new();
        for line in p.markdown.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                if let Some(s) = cur.take() {
                    out.push(s);
                }
                cur = Some(Section {
                    url: p.url.clone(),
                    anchor: h.to_lowercase().replace(' ', "-"),
                    heading_path: vec![p.title.clone(), h.to_string()],
                    level: 2,
                    text: line.to_string(),
                    ordinal: 0,
                    part: 0,
                });
            } else if let Some(s) = cur.as_mut() {
                s.text.push('\n');
                s.text.push_str(line);
            } else {
                lead.push_str(line);
                lead.push('\n');
            }
        }
        out.extend(cur);
        let mut all = Vec::new();
        if !lead.trim().is_empty() {
            all.push(Section {
                url: p.url.clone(),
                anchor: String::new(),
                heading_path: vec![p.title.clone()],
                level: 1,
                text: lead.trim().to_string(),
                ordinal: 0,
                part: 0,
            });
        }
        all.extend(out);
        for (i, s) in all.iter_mut().enumerate() {
            s.ordinal = i as u32;
            s.text = s.text.trim_end().to_string();
        }
        all
    }

    fn artifact(version: &str, snap: &str, pages: Vec<Page>) -> Artifact {
        let sections: Vec<Section> = pages.iter().flat_map(sections_of).collect();
        Artifact {
            dir: std::path::PathBuf::from(snap),
            manifest: Manifest {
                counts: Counts {
                    pages: pages.len() as u64,
                    sections: sections.len() as u64,
                },
                content_sha256: crate::artifact::content_sha256(&pages),
                ..crate::model::testing::manifest("leapview", version, snap, "2026-11-29T00:00:00Z")
            },
            pages,
            sections,
        }
    }

    const R1: &str = "https://docs.example/v3.1/";
    const R2: &str = "https://docs.example/v3.2/";

    const LONG: &str = "Intro text that is long enough to count as a real page for move detection.\n\n\
        ## Limits\n\nEach workspace may send 600 requests a minute; bursts of 100 are allowed.\n\
        Requests over the limit answer 429 with a Retry-After header that says when to retry.\n\n\
        ## Headers\n\nEvery answer carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.\n\
        Clients should read them rather than guess, and back off exponentially on 429.\n";

    #[test]
    fn version_only_link_changes_are_not_changes() {
        let a = artifact(
            "3.1",
            "A",
            vec![page(
                R1,
                "cli/build",
                "Build",
                "See [publish](https://docs.example/v3.1/cli/publish) and [home](/v3.1/) or [x](/v3.1/cli/lint#flags).",
            )],
        );
        let b = artifact(
            "3.2",
            "B",
            vec![page(
                R2,
                "cli/build",
                "Build",
                "See [publish](https://docs.example/v3.2/cli/publish) and [home](/v3.2/) or [x](/v3.2/cli/lint#flags).",
            )],
        );
        let d = diff_artifacts(&a, &b);
        assert!(d.is_empty(), "{d:#?}");
        assert_eq!(d.from.root.as_deref(), Some(R1));
        assert_eq!(d.to.root.as_deref(), Some(R2));
    }

    #[test]
    fn rebase_leaves_other_hosts_and_prose_alone() {
        let r = Rebase::new(Some(R1), Some(R2));
        assert_eq!(
            r.apply("[a](https://other.example/v3.1/x) v3.1 /v3.1x (/v3.1/y) \"/v3.1\""),
            "[a](https://other.example/v3.1/x) v3.1 /v3.1x (/v3.2/y) \"/v3.2\""
        );
        assert_eq!(
            r.apply("https://docs.example/v3.1)"),
            "https://docs.example/v3.2)"
        );
        assert_eq!(
            r.apply("https://docs.example/v3.10/x"),
            "https://docs.example/v3.10/x"
        );
    }

    #[test]
    fn added_removed_changed_and_sections() {
        let a = artifact(
            "3.1",
            "A",
            vec![
                page(R1, "cli/deploy", "Deploy", "Deprecated: use publish."),
                page(
                    R1,
                    "cli/publish",
                    "Publish",
                    "Upload dashboards.\n\n## Flags\n\n--dry-run\n\n## Old\n\ngone soon",
                ),
                page(R1, "same", "Same", "Unchanged [link](/v3.1/same)."),
            ],
        );
        let b = artifact(
            "3.2",
            "B",
            vec![
                page(R2, "cli/env", "Env", "Manage environments."),
                page(
                    R2,
                    "cli/publish",
                    "Publish",
                    "Upload dashboards.\n\n## Flags\n\n--dry-run\n--force\n\n## New\n\nfresh",
                ),
                page(R2, "same", "Same", "Unchanged [link](/v3.2/same)."),
            ],
        );
        let d = diff_artifacts(&a, &b);
        assert_eq!(
            d.added.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(),
            ["cli/env"]
        );
        assert_eq!(
            d.removed
                .iter()
                .map(|p| p.path.as_str())
                .collect::<Vec<_>>(),
            ["cli/deploy"]
        );
        assert!(d.moved.is_empty());
        assert_eq!(d.changed.len(), 1);
        let c = &d.changed[0];
        assert_eq!(c.url, format!("{R2}cli/publish"));
        let got: Vec<(&str, ChangeKind)> = c
            .sections
            .iter()
            .map(|s| (s.anchor.as_str(), s.change))
            .collect();
        assert_eq!(
            got,
            [
                ("flags", ChangeKind::Changed),
                ("old", ChangeKind::Removed),
                ("new", ChangeKind::Added)
            ]
        );
        assert!(
            c.sections[0].diff.contains("+--force"),
            "{}",
            c.sections[0].diff
        );
        assert!(c.sections[0]
            .diff
            .starts_with("--- a/cli/publish#flags\n+++ b/cli/publish#flags\n"));

        let j = d.to_json();
        assert_eq!(j["from"], "A");
        assert_eq!(j["to"], "B");
        assert_eq!(j["added"], serde_json::json!([format!("{R2}cli/env")]));
        assert_eq!(j["removed"], serde_json::json!([format!("{R1}cli/deploy")]));
        assert_eq!(j["moved"], serde_json::json!([]));
        assert_eq!(j["changed"][0]["sections"][1]["change"], "removed");
        let keys: Vec<&String> = j
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["from", "to", "added", "removed", "moved", "changed"]);

        let md = d.render_markdown();
        assert!(
            md.contains("## Added\n\n- [Env](https://docs.example/v3.2/cli/env)"),
            "{md}"
        );
        assert!(md.contains("## Removed\n"));
        assert!(md.contains("### [Publish](https://docs.example/v3.2/cli/publish)"));
        assert!(md.contains("- Changed: [Flags](https://docs.example/v3.2/cli/publish#flags)"));
        assert!(md.contains("```diff\n"));
        assert!(!md.contains("## Moved"));
        let text = d.render_text();
        assert!(text.contains("1 added, 1 removed, 0 moved, 1 changed"));
    }

    #[test]
    fn moved_pages_are_detected_by_content() {
        let a = artifact(
            "3.1",
            "A",
            vec![
                page(R1, "api/rate-limiting", "Rate limiting", LONG),
                page(
                    R1,
                    "api/old-edited",
                    "Old",
                    &LONG.replace("Intro", "Preface"),
                ),
            ],
        );
        let edited = LONG.replace("Intro", "Preface").replace("600", "900");
        let b = artifact(
            "3.2",
            "B",
            vec![
                page(R2, "api/rate-limits", "Rate limits", LONG),
                page(R2, "api/new-edited", "Old", &edited),
            ],
        );
        let d = diff_artifacts(&a, &b);
        assert!(d.added.is_empty() && d.removed.is_empty(), "{d:#?}");
        let moves: Vec<(&str, &str)> = d
            .moved
            .iter()
            .map(|m| (m.from.path.as_str(), m.to.path.as_str()))
            .collect();
        assert_eq!(
            moves,
            [
                ("api/old-edited", "api/new-edited"),
                ("api/rate-limiting", "api/rate-limits")
            ]
        );
        // The title changed on the first move; the second was edited: both
        // are also changed pages, with their diffs.
        assert_eq!(d.changed.len(), 2);
        assert!(d.changed.iter().any(|c| c.url.ends_with("api/new-edited")
            && c.sections
                .iter()
                .any(|s| s.anchor == "limits" && s.diff.contains("+Each workspace may send 900"))));
        let j = d.to_json();
        assert_eq!(
            j["moved"][1],
            serde_json::json!({"from": format!("{R1}api/rate-limiting"), "to": format!("{R2}api/rate-limits")})
        );
    }

    #[test]
    fn json_golden() {
        let a = artifact(
            "3.1",
            "A",
            vec![
                page(R1, "gone", "Gone", "Old page."),
                page(R1, "p", "P", "Lead [l](/v3.1/p).\n\n## One\n\nfirst"),
            ],
        );
        let b = artifact(
            "3.2",
            "B",
            vec![
                page(R2, "new", "New", "New page."),
                page(
                    R2,
                    "p",
                    "P",
                    "Lead [l](/v3.2/p).\n\n## One\n\nfirst, edited",
                ),
            ],
        );
        let got = diff_artifacts(&a, &b).render(Format::Json);
        let want = r#"{
  "from": "A",
  "to": "B",
  "added": [
    "https://docs.example/v3.2/new"
  ],
  "removed": [
    "https://docs.example/v3.1/gone"
  ],
  "moved": [],
  "changed": [
    {
      "url": "https://docs.example/v3.2/p",
      "sections": [
        {
          "anchor": "one",
          "change": "changed",
          "diff": "--- a/p#one\n+++ b/p#one\n@@ -1,3 +1,3 @@\n ## One\n \n-first\n+first, edited\n"
        }
      ]
    }
  ]
}
"#;
        assert_eq!(got, want);
    }

    #[test]
    fn empty_pages_are_not_moves_of_each_other() {
        let a = artifact("3.1", "A", vec![page(R1, "x", "X", "")]);
        let b = artifact("3.2", "B", vec![page(R2, "y", "Y", "")]);
        let d = diff_artifacts(&a, &b);
        assert!(d.moved.is_empty());
        assert_eq!((d.added.len(), d.removed.len()), (1, 1));
    }

    #[test]
    fn title_changes_show_in_the_lead() {
        let a = artifact("current", "A", vec![page(R2, "p", "Old title", "Body.")]);
        let b = artifact("current", "B", vec![page(R2, "p", "New title", "Body.")]);
        let d = diff_artifacts(&a, &b);
        assert_eq!(d.changed.len(), 1);
        let s = &d.changed[0].sections;
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].anchor, "");
        assert!(
            s[0].diff.contains("-# Old title\n+# New title\n"),
            "{}",
            s[0].diff
        );
        assert!(d
            .render_markdown()
            .starts_with("# leapview current: changes since 2026-11-29\n"));
    }

    #[test]
    fn markdown_fences_outgrow_backticks_in_the_diff() {
        let a = artifact(
            "current",
            "A",
            vec![page(R2, "p", "P", "```bash\nold\n```")],
        );
        let b = artifact(
            "current",
            "B",
            vec![page(R2, "p", "P", "```bash\nnew\n```")],
        );
        let md = diff_artifacts(&a, &b).render_markdown();
        assert!(md.contains("````diff\n"), "{md}");
    }

    #[test]
    fn identical_artifacts_have_an_empty_diff() {
        let a = artifact("3.2", "A", vec![page(R2, "p", "P", LONG)]);
        let b = artifact("3.2", "B", vec![page(R2, "p", "P", LONG)]);
        let d = diff_artifacts(&a, &b);
        assert!(d.is_empty());
        assert!(d.render_text().contains("no differences"));
        assert!(d.render_markdown().contains("No changes."));
    }
}
