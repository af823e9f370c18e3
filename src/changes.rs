//! "What changed in the docs since I last looked?": one product's snapshot
//! named by the caller compared with the one being served.
//!
//! The comparison itself is [`crate::diff`]'s; this module resolves what the
//! caller means by "since" (a snapshot id, a version label or a date) among the
//! artifacts on disk, and shapes the diff into a bounded answer an agent can
//! read: page lists capped by `limit` with whole counts beside them, and for
//! each changed section its anchor and a short excerpt of the changed lines
//! instead of the full unified diff.
//!
//! Both `docsnap changes` and the server's `docs_changes` tool answer through
//! [`changes`], so the command line and the tool agree by construction.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::artifact::{self, Artifact, ArtifactError};
use crate::diff::{self, ChangeKind, Diff, PageEntry};
use crate::model::Manifest;
use crate::util::{cut, version_key};

/// Pages listed per list when the caller gives no limit.
pub const DEFAULT_LIMIT: usize = 20;
/// Most pages listed per list; larger limits are reduced to it.
pub const MAX_LIMIT: usize = 1000;
/// Changed sections listed per changed page.
pub const MAX_SECTIONS: usize = 12;
/// Characters of a changed section's excerpt.
pub const EXCERPT_CHARS: usize = 280;
/// Shortest snapshot-id prefix accepted for `since`.
pub const MIN_ID_PREFIX: usize = 6;

/// Arguments of `docs_changes` (and of `docsnap changes`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangesArgs {
    /// Product id (`claude-code`, `leapview`, …).
    pub product: String,
    /// A snapshot id (or a unique prefix), a version label or a date.
    pub since: String,
    /// Only pages whose path below the version root (or whose URL) starts with this.
    #[serde(default)]
    pub path: Option<String>,
    /// Pages per list (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Why a "what changed" question cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    /// The arguments name nothing on disk; the text says what is there.
    #[error("{0}")]
    Invalid(String),
    /// An artifact to compare could not be read or failed verification.
    #[error("{0}")]
    Artifact(#[from] ArtifactError),
}

/// One side of the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotRef {
    pub snapshot_id: String,
    pub version: String,
    pub created_at: String,
}

/// A page added or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageRef {
    pub url: String,
    pub title: String,
}

/// A page that moved to another URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MovedRef {
    pub from_url: String,
    pub url: String,
    pub title: String,
}

/// A section added, removed or changed within a changed page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionRef {
    /// Its anchor (empty for the page's lead).
    pub anchor: String,
    /// Heading path below the page title, `A > B`.
    pub heading: String,
    pub change: ChangeKind,
    /// The first changed lines, `+ new` / `- old`, joined and cut short.
    pub excerpt: String,
}

/// A page whose content changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedRef {
    pub url: String,
    pub title: String,
    /// Its changed sections, at most [`MAX_SECTIONS`].
    pub sections: Vec<SectionRef>,
    /// How many sections changed in all.
    pub sections_changed: usize,
}

/// Whole counts of each list (after the path filter, before the limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChangeCounts {
    pub added: usize,
    pub removed: usize,
    pub moved: usize,
    pub changed: usize,
}

/// The answer: what changed from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changes {
    pub product: String,
    pub from: SnapshotRef,
    pub to: SnapshotRef,
    pub counts: ChangeCounts,
    pub added: Vec<PageRef>,
    pub removed: Vec<PageRef>,
    pub moved: Vec<MovedRef>,
    pub changed: Vec<ChangedRef>,
    /// True when a list holds fewer pages than its count (raise `limit` or
    /// narrow `path`).
    pub truncated: bool,
}

impl Changes {
    /// A terminal rendering: the two snapshots, the counts, then each list.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let c = &self.counts;
        let _ = writeln!(
            o,
            "{} {} {} ({}) -> {} {} ({}): {} added, {} removed, {} moved, {} changed",
            self.product,
            self.from.version,
            self.from.snapshot_id,
            self.from.created_at,
            self.to.version,
            self.to.snapshot_id,
            self.to.created_at,
            c.added,
            c.removed,
            c.moved,
            c.changed
        );
        for p in &self.added {
            let _ = writeln!(o, "+ {}  {}", p.url, p.title);
        }
        for p in &self.removed {
            let _ = writeln!(o, "- {}  {}", p.url, p.title);
        }
        for m in &self.moved {
            let _ = writeln!(o, "> {} -> {}", m.from_url, m.url);
        }
        for p in &self.changed {
            let _ = writeln!(
                o,
                "~ {}  {} ({} sections)",
                p.url, p.title, p.sections_changed
            );
            for s in &p.sections {
                let at = if s.anchor.is_empty() {
                    "(lead)"
                } else {
                    s.anchor.as_str()
                };
                let _ = writeln!(o, "    {} #{at}: {}", s.change.label(), s.excerpt);
            }
        }
        if self.truncated {
            let _ = writeln!(
                o,
                "(lists cut at the limit; raise --limit or narrow --path)"
            );
        }
        o
    }
}

/// An artifact on disk, by its manifest (not yet verified).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

/// Every artifact of `product` under `root`, newest first within a version.
pub fn candidates(root: &Path, product: &str) -> Result<Vec<Candidate>, ChangesError> {
    let mut out = Vec::new();
    for group in artifact::artifacts_by_version(root)? {
        for dir in group {
            // An unreadable manifest is skipped here; it can only matter if
            // it is picked, and then loading it reports why.
            if let Ok(manifest) = artifact::read_manifest(&dir) {
                if manifest.product == product {
                    out.push(Candidate { dir, manifest });
                }
            }
        }
    }
    Ok(out)
}

/// The snapshot a product is answered from when nothing pins it: the newest
/// snapshot of its newest version (`pinned` picks the version instead).
pub fn newest<'a>(cands: &'a [Candidate], pinned: Option<&str>) -> Option<&'a Candidate> {
    cands
        .iter()
        .filter(|c| pinned.is_none_or(|v| c.manifest.version == v))
        .max_by(|a, b| {
            version_key(&a.manifest.version)
                .cmp(&version_key(&b.manifest.version))
                .then_with(|| a.dir.file_name().cmp(&b.dir.file_name()))
        })
}

/// The latest instant `since` allows when it is a date or a time: the end
/// of that day (UTC) for `YYYY-MM-DD`, the instant itself for RFC 3339.
fn date_bound(since: &str) -> Option<time::OffsetDateTime> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(since, &Rfc3339) {
        return Some(t);
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    let d = time::Date::parse(since, &fmt).ok()?;
    Some(d.with_time(time::Time::MAX).assume_utc())
}

fn created(c: &Candidate) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(
        &c.manifest.created_at,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()
}

fn snapshot_name(c: &Candidate) -> String {
    c.dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Resolve `since` among `cands` for a comparison with `to`. In order: an
/// exact snapshot id; a version label (that version's newest snapshot); a
/// date or RFC 3339 time (the newest snapshot of `to`'s version made by
/// then); a unique snapshot-id prefix of at least [`MIN_ID_PREFIX`]
/// characters. A label that is both a version and a date (MCP's
/// `2025-11-25`) is read as the version.
pub fn resolve<'a>(
    cands: &'a [Candidate],
    to: &Candidate,
    since: &str,
) -> Result<&'a Candidate, ChangesError> {
    let since = since.trim();
    if since.is_empty() {
        return Err(ChangesError::Invalid(
            "since: must not be empty (a snapshot id, a version label or a date)".into(),
        ));
    }
    let id_of = |c: &Candidate| {
        if c.manifest.snapshot_id.is_empty() {
            snapshot_name(c)
        } else {
            c.manifest.snapshot_id.clone()
        }
    };
    if let Some(c) = cands
        .iter()
        .find(|c| id_of(c) == since || snapshot_name(c) == since)
    {
        return Ok(c);
    }
    if let Some(c) = newest(cands, Some(since)) {
        return Ok(c);
    }
    if let Some(bound) = date_bound(since) {
        let same_version = || {
            cands
                .iter()
                .filter(|c| c.manifest.version == to.manifest.version)
        };
        return same_version()
            .filter(|c| created(c).is_some_and(|t| t <= bound))
            .max_by_key(|c| created(c))
            .ok_or_else(|| {
                let oldest = same_version()
                    .filter_map(|c| created(c).map(|t| (t, c)))
                    .min_by_key(|(t, _)| *t)
                    .map(|(_, c)| c.manifest.created_at.clone())
                    .unwrap_or_else(|| "none".into());
                ChangesError::Invalid(format!(
                    "since: no snapshot of {} {} was made by {since} (the oldest held is from {oldest})",
                    to.manifest.product, to.manifest.version
                ))
            });
    }
    if since.chars().count() >= MIN_ID_PREFIX {
        let hits: Vec<&Candidate> = cands
            .iter()
            .filter(|c| id_of(c).starts_with(since) || snapshot_name(c).starts_with(since))
            .collect();
        match hits.as_slice() {
            [one] => return Ok(one),
            [] => {}
            many => {
                return Err(ChangesError::Invalid(format!(
                    "since: `{since}` is the start of {} snapshot ids; give more of it",
                    many.len()
                )))
            }
        }
    }
    let mut versions: Vec<&str> = cands.iter().map(|c| c.manifest.version.as_str()).collect();
    versions.sort_by_key(|v| version_key(v));
    versions.dedup();
    let ids: Vec<String> = cands.iter().take(5).map(id_of).collect();
    Err(ChangesError::Invalid(format!(
        "since: `{since}` is not a snapshot id, version or date of {} (versions: {}; snapshots: {}{})",
        to.manifest.product,
        versions.join(", "),
        ids.join(", "),
        if cands.len() > 5 { ", …" } else { "" }
    )))
}

/// Does a page pass the path filter? `prefix` is compared with the page's
/// path below the version root (leading `/` ignored) and with its URL.
fn in_scope(prefix: Option<&str>, e: &PageEntry) -> bool {
    let Some(p) = prefix else { return true };
    let p = p.trim();
    if p.is_empty() {
        return true;
    }
    if p.contains("://") {
        return e.url.starts_with(p);
    }
    e.path
        .trim_start_matches('/')
        .starts_with(p.trim_start_matches('/'))
}

/// The first changed lines of a unified diff, `+ …` / `- …`, cut to
/// `max` characters (empty for 0).
pub fn excerpt(unified: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let mut parts: Vec<String> = Vec::new();
    for line in unified.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        let (sign, rest) = match line.split_at_checked(1) {
            Some(("+", r)) => ('+', r),
            Some(("-", r)) => ('-', r),
            _ => continue,
        };
        let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
        if rest.is_empty() {
            continue;
        }
        parts.push(format!("{sign} {rest}"));
        if parts.iter().map(|p| p.len()).sum::<usize>() > max {
            break;
        }
    }
    let (text, was_cut) = cut(&parts.join(" ⏎ "), max);
    if !was_cut {
        return text;
    }
    // A cut right after a line break leaves a dangling marker.
    let mut t = text.as_str();
    for tail in [" ⏎ +", " ⏎ -", " ⏎"] {
        t = t.strip_suffix(tail).unwrap_or(t);
    }
    format!("{t} …")
}

fn snapshot_ref(info: &diff::SnapshotInfo) -> SnapshotRef {
    SnapshotRef {
        snapshot_id: info.snapshot_id.clone(),
        version: info.version.clone(),
        created_at: info.created_at.clone(),
    }
}

/// How much of each changed page an answer carries.
#[derive(Debug, Clone, Copy)]
struct Detail {
    excerpt_chars: usize,
    sections: usize,
}

/// Detail levels tried in turn until an answer fits its byte budget: the
/// page lists are what was asked, so excerpts shorten and section lists
/// shrink before any page is left out.
const DETAIL: [Detail; 5] = [
    Detail {
        excerpt_chars: EXCERPT_CHARS,
        sections: MAX_SECTIONS,
    },
    Detail {
        excerpt_chars: 100,
        sections: MAX_SECTIONS,
    },
    Detail {
        excerpt_chars: 0,
        sections: MAX_SECTIONS,
    },
    Detail {
        excerpt_chars: 0,
        sections: 3,
    },
    Detail {
        excerpt_chars: 0,
        sections: 0,
    },
];

/// Shape a diff into the bounded answer: at most `limit` pages per list and,
/// with a `budget`, at most that many bytes of JSON (excerpts, then section
/// lists, then the page lists shrink until it fits; `truncated` says when
/// pages were left out).
pub fn report(
    d: &Diff,
    product: &str,
    path: Option<&str>,
    limit: usize,
    budget: Option<usize>,
) -> Changes {
    let mut limit = limit.clamp(1, MAX_LIMIT);
    let Some(budget) = budget else {
        return report_with(d, product, path, limit, DETAIL[0]);
    };
    let size = |c: &Changes| serde_json::to_vec(c).map(|v| v.len()).unwrap_or(usize::MAX);
    let mut last = None;
    for detail in DETAIL {
        let c = report_with(d, product, path, limit, detail);
        if size(&c) <= budget {
            return c;
        }
        last = Some(c);
    }
    while limit > 1 {
        limit /= 2;
        let c = report_with(d, product, path, limit, DETAIL[DETAIL.len() - 1]);
        if size(&c) <= budget {
            return c;
        }
        last = Some(c);
    }
    last.unwrap_or_else(|| report_with(d, product, path, 1, DETAIL[DETAIL.len() - 1]))
}

fn report_with(
    d: &Diff,
    product: &str,
    path: Option<&str>,
    limit: usize,
    detail: Detail,
) -> Changes {
    let page = |e: &PageEntry| PageRef {
        url: e.url.clone(),
        title: e.title.clone(),
    };
    let added: Vec<&PageEntry> = d.added.iter().filter(|e| in_scope(path, e)).collect();
    let removed: Vec<&PageEntry> = d.removed.iter().filter(|e| in_scope(path, e)).collect();
    let moved: Vec<&diff::MovedPage> = d
        .moved
        .iter()
        .filter(|m| in_scope(path, &m.from) || in_scope(path, &m.to))
        .collect();
    let changed: Vec<&diff::ChangedPage> = d
        .changed
        .iter()
        .filter(|c| {
            in_scope(
                path,
                &PageEntry {
                    url: c.url.clone(),
                    path: c.path.clone(),
                    title: String::new(),
                    description: String::new(),
                },
            )
        })
        .collect();
    let counts = ChangeCounts {
        added: added.len(),
        removed: removed.len(),
        moved: moved.len(),
        changed: changed.len(),
    };
    let truncated = [counts.added, counts.removed, counts.moved, counts.changed]
        .iter()
        .any(|&n| n > limit);
    Changes {
        product: product.to_string(),
        from: snapshot_ref(&d.from),
        to: snapshot_ref(&d.to),
        counts,
        added: added.into_iter().take(limit).map(page).collect(),
        removed: removed.into_iter().take(limit).map(page).collect(),
        moved: moved
            .into_iter()
            .take(limit)
            .map(|m| MovedRef {
                from_url: m.from.url.clone(),
                url: m.to.url.clone(),
                title: m.to.title.clone(),
            })
            .collect(),
        changed: changed
            .into_iter()
            .take(limit)
            .map(|c| ChangedRef {
                url: c.url.clone(),
                title: c.title.clone(),
                sections_changed: c.sections.len(),
                sections: c
                    .sections
                    .iter()
                    .take(detail.sections)
                    .map(|s| SectionRef {
                        anchor: s.anchor.clone(),
                        heading: s.heading.clone(),
                        change: s.change,
                        excerpt: excerpt(&s.diff, detail.excerpt_chars),
                    })
                    .collect(),
            })
            .collect(),
        truncated,
    }
}

/// The artifacts a comparison needs: `from` resolved from `since`, `to` the
/// given snapshot directory or the product's newest.
pub struct Sides {
    pub from: Candidate,
    pub to: Candidate,
}

/// Resolve both sides for `args` among the artifacts under `root`; `to`
/// names the snapshot being served, if the caller has one (else the
/// product's newest on disk, or of `pinned_version`).
pub fn sides(
    root: &Path,
    args: &ChangesArgs,
    to: Option<&Path>,
    pinned_version: Option<&str>,
) -> Result<Sides, ChangesError> {
    let product = args.product.trim();
    let cands = candidates(root, product)?;
    if cands.is_empty() {
        return Err(ChangesError::Invalid(format!(
            "product: no snapshots of `{product}` under {}",
            root.display()
        )));
    }
    let to = match to {
        Some(dir) => cands
            .iter()
            .find(|c| c.dir == dir)
            .cloned()
            .ok_or_else(|| {
                ChangesError::Invalid(format!("{}: not an artifact of {product}", dir.display()))
            })?,
        None => newest(&cands, pinned_version).cloned().ok_or_else(|| {
            ChangesError::Invalid(format!(
                "no {product} {} snapshot under {}",
                pinned_version.unwrap_or(""),
                root.display()
            ))
        })?,
    };
    let from = resolve(&cands, &to, &args.since)?.clone();
    Ok(Sides { from, to })
}

/// Load (verifying) both sides and compare them.
pub fn compare(s: &Sides) -> Result<Diff, ChangesError> {
    let a: Artifact = artifact::load(&s.from.dir)?;
    let b: Artifact = artifact::load(&s.to.dir)?;
    Ok(diff::diff_artifacts(&a, &b))
}

/// Answer `args` from the artifacts under `root` (what `docsnap changes`
/// runs; the server goes through [`sides`] and [`compare`] to cache diffs).
pub fn changes(root: &Path, args: &ChangesArgs) -> Result<Changes, ChangesError> {
    let s = sides(root, args, None, None)?;
    let d = compare(&s)?;
    Ok(report(
        &d,
        args.product.trim(),
        args.path.as_deref(),
        limit_of(args.limit),
        None,
    ))
}

/// The page limit a request asks for, defaulted and capped.
pub fn limit_of(limit: Option<u64>) -> usize {
    limit
        .map(|n| n.clamp(1, MAX_LIMIT as u64) as usize)
        .unwrap_or(DEFAULT_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, version: &str, created_at: &str) -> Candidate {
        Candidate {
            dir: PathBuf::from(format!("/a/leapview/{version}/{id}")),
            manifest: crate::model::testing::manifest("leapview", version, id, created_at),
        }
    }

    fn set() -> Vec<Candidate> {
        vec![
            cand(
                "20260601T000000Z-aaaa11112222",
                "3.1",
                "2026-06-01T00:00:00Z",
            ),
            cand(
                "20260701T000000Z-bbbb11112222",
                "3.2",
                "2026-07-01T00:00:00Z",
            ),
            cand(
                "20260801T120000Z-cccc11112222",
                "3.2",
                "2026-08-01T12:00:00Z",
            ),
            cand(
                "20260901T000000Z-dddd33334444",
                "3.10",
                "2026-09-01T00:00:00Z",
            ),
        ]
    }

    #[test]
    fn since_resolves_ids_versions_dates_and_prefixes() {
        let c = set();
        let to = newest(&c, None).unwrap();
        assert_eq!(to.manifest.version, "3.10", "3.10 is newer than 3.2");
        let pinned = newest(&c, Some("3.2")).unwrap();
        assert_eq!(pinned.manifest.snapshot_id, "20260801T120000Z-cccc11112222");
        let id =
            |s: &str, to: &Candidate| resolve(&c, to, s).map(|c| c.manifest.snapshot_id.clone());
        assert_eq!(
            id("20260701T000000Z-bbbb11112222", to).unwrap(),
            "20260701T000000Z-bbbb11112222"
        );
        assert_eq!(id("3.1", to).unwrap(), "20260601T000000Z-aaaa11112222");
        assert_eq!(
            id("3.2", to).unwrap(),
            "20260801T120000Z-cccc11112222",
            "a version's newest"
        );
        // Dates are read within the served version: the newest made by the end of that day.
        assert_eq!(
            id("2026-08-01", pinned).unwrap(),
            "20260801T120000Z-cccc11112222"
        );
        assert_eq!(
            id("2026-07-31", pinned).unwrap(),
            "20260701T000000Z-bbbb11112222"
        );
        assert_eq!(
            id("2026-08-01T11:00:00Z", pinned).unwrap(),
            "20260701T000000Z-bbbb11112222"
        );
        let e = id("2026-06-15", pinned).unwrap_err().to_string();
        assert!(
            e.contains("no snapshot of leapview 3.2 was made by 2026-06-15")
                && e.contains("2026-07-01"),
            "{e}"
        );
        assert_eq!(
            id("20260601T0", to).unwrap(),
            "20260601T000000Z-aaaa11112222"
        );
        assert_eq!(
            id("202607", to).unwrap(),
            "20260701T000000Z-bbbb11112222",
            "a unique 6-character prefix"
        );
        let e = id("20270101x", to).unwrap_err().to_string();
        assert!(e.contains("not a snapshot id, version or date"), "{e}");
        let e = id("2026", to).unwrap_err().to_string();
        assert!(e.contains("versions: 3.1, 3.2, 3.10"), "{e}");
        let e = id("20260", to).unwrap_err().to_string();
        assert!(
            e.contains("not a snapshot id"),
            "{e}: a prefix under 6 characters is not tried"
        );
        let e = id("2026071", to).unwrap_err().to_string();
        assert!(e.contains("not a snapshot id"), "{e}");
        let e = id("  ", to).unwrap_err().to_string();
        assert!(e.contains("must not be empty"), "{e}");
    }

    #[test]
    fn ambiguous_prefixes_are_refused() {
        let mut c = set();
        c.push(cand(
            "20260601T000000Z-aaaa99999999",
            "3.1",
            "2026-06-01T00:00:00Z",
        ));
        let to = c[2].clone();
        let e = resolve(&c, &to, "20260601T000000Z-aaaa")
            .unwrap_err()
            .to_string();
        assert!(e.contains("start of 2 snapshot ids"), "{e}");
    }

    #[test]
    fn excerpts_keep_the_changed_lines_only() {
        let d = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n keep\n-old   text\n+new text\n \n+\n";
        assert_eq!(excerpt(d, EXCERPT_CHARS), "- old text ⏎ + new text");
        assert_eq!(excerpt(d, 0), "");
        let long = format!("+{}\n", "word ".repeat(200));
        let e = excerpt(&long, EXCERPT_CHARS);
        assert!(
            e.chars().count() <= EXCERPT_CHARS + 2 && e.starts_with("+ word") && e.ends_with(" …"),
            "{e}"
        );
    }

    #[test]
    fn reports_filter_by_path_cap_lists_and_keep_counts() {
        let entry = |p: &str| PageEntry {
            url: format!("https://docs.leapview.example/v3.2/{p}"),
            path: p.to_string(),
            title: p.to_string(),
            description: String::new(),
        };
        let info = diff::SnapshotInfo {
            source: "leapview".into(),
            product: "leapview".into(),
            version: "3.2".into(),
            snapshot_id: "s2".into(),
            created_at: "2026-07-01T00:00:00Z".into(),
            root: None,
        };
        let d = Diff {
            from: info.clone(),
            to: info,
            added: vec![entry("guides/a"), entry("guides/b"), entry("api/c")],
            removed: vec![entry("api/old")],
            moved: vec![],
            changed: vec![diff::ChangedPage {
                url: entry("guides/x").url,
                from_url: entry("guides/x").url,
                path: "guides/x".into(),
                title: "X".into(),
                sections: vec![diff::SectionChange {
                    anchor: "setup".into(),
                    heading: "Setup".into(),
                    change: ChangeKind::Changed,
                    diff: "-a\n+b\n".into(),
                }],
            }],
        };
        let r = report(&d, "leapview", Some("/guides"), 1, None);
        assert_eq!(
            r.counts,
            ChangeCounts {
                added: 2,
                removed: 0,
                moved: 0,
                changed: 1
            }
        );
        assert_eq!(r.added.len(), 1);
        assert!(r.truncated);
        assert_eq!(r.changed[0].sections[0].excerpt, "- a ⏎ + b");
        let r = report(
            &d,
            "leapview",
            Some("https://docs.leapview.example/v3.2/api"),
            20,
            None,
        );
        assert_eq!(
            r.counts,
            ChangeCounts {
                added: 1,
                removed: 1,
                moved: 0,
                changed: 0
            }
        );
        assert!(!r.truncated);
        let r = report(&d, "leapview", None, 0, None);
        assert_eq!(r.added.len(), 1, "a limit of 0 is raised to 1");

        // A byte budget drops excerpts before pages, then pages.
        let full = report(&d, "leapview", None, 20, None);
        let size = |c: &Changes| serde_json::to_vec(c).unwrap().len();
        let r = report(&d, "leapview", None, 20, Some(size(&full) - 1));
        assert_eq!(r.added, full.added);
        assert_eq!(r.changed[0].sections[0].excerpt, "");
        assert!(!r.truncated);
        // The smallest answer (one page per list, no sections) is what an
        // impossible budget gets; a budget of exactly its size is met by
        // cutting the lists.
        let tiny = report(&d, "leapview", None, 20, Some(0));
        assert!(tiny.truncated && tiny.added.len() == 1 && tiny.changed[0].sections.is_empty());
        let r = report(&d, "leapview", None, 20, Some(size(&tiny)));
        assert!(size(&r) <= size(&tiny) && r.truncated, "{r:?}");
        assert!(r.added.len() < full.added.len());
        assert_eq!(r.counts, full.counts, "counts stay whole");
    }
}
