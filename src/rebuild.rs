//! `docsnap rebuild`: the scheduler's job. Build every selected (source,
//! version) incrementally, compare each with the snapshot its publish
//! directory serves, and publish only what changed, with the diff report
//! (`<snapshot-id>.diff.md`, `.diff.json`) beside the new archive.
//!
//! The exit status is what a scheduler acts on (see [`RebuildReport::exit_code`]):
//! 0 nothing changed, 3 changes were published, 1 a build failed, 2 trouble.

use std::path::{Path, PathBuf};

use crate::artifact::{self, Artifact};
use crate::build::{self, BuildOptions, VersionReport};
use crate::config::{Config, Source};
use crate::diff::{self, Diff};
use crate::publish::{self, PublishOptions, PublishOutcome};

/// Exit status: nothing changed.
pub const EXIT_UNCHANGED: i32 = 0;
/// Exit status: at least one build failed (others may have been published).
pub const EXIT_BUILD_FAILED: i32 = 1;
/// Exit status: trouble (publish directory, configuration, I/O).
pub const EXIT_TROUBLE: i32 = 2;
/// Exit status: changes were published.
pub const EXIT_PUBLISHED: i32 = 3;

/// Options of a rebuild run.
#[derive(Clone)]
pub struct RebuildOptions {
    /// How to build (the `--out` directory keeps the artifacts between runs,
    /// which is what makes the builds incremental).
    pub build: BuildOptions,
    pub publish_to: PathBuf,
    /// Keep only the N newest published snapshots per (source, version).
    pub keep: Option<usize>,
    /// Sources built at once.
    pub jobs: usize,
}

/// What happened to one (source, version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Same content as the published latest snapshot.
    Unchanged { latest: String },
    /// A new snapshot was published (or `latest` moved back to an earlier
    /// snapshot of the same content); `diff_md` is the report, if written.
    Published {
        snapshot_id: String,
        summary: String,
        diff_md: Option<PathBuf>,
        repointed: bool,
    },
    /// The build wrote no artifact.
    BuildFailed { reason: String },
    /// Built, but comparing or publishing failed.
    Trouble { reason: String },
}

/// One (source, version) of a rebuild.
#[derive(Debug, Clone)]
pub struct VersionResult {
    pub source: String,
    pub version: String,
    pub outcome: Outcome,
    /// The build's report, when it ran to the end.
    pub build: Option<VersionReport>,
    /// The Markdown diff report of a publish (for a run summary).
    pub markdown: Option<String>,
}

/// Everything a rebuild did.
#[derive(Debug, Clone, Default)]
pub struct RebuildReport {
    pub versions: Vec<VersionResult>,
}

impl RebuildReport {
    /// 2 on any trouble, else 1 on any build failure, else 3 when something
    /// was published, else 0.
    pub fn exit_code(&self) -> i32 {
        let any = |f: fn(&Outcome) -> bool| self.versions.iter().any(|v| f(&v.outcome));
        if any(|o| matches!(o, Outcome::Trouble { .. })) {
            EXIT_TROUBLE
        } else if any(|o| matches!(o, Outcome::BuildFailed { .. })) {
            EXIT_BUILD_FAILED
        } else if any(|o| matches!(o, Outcome::Published { .. })) {
            EXIT_PUBLISHED
        } else {
            EXIT_UNCHANGED
        }
    }

    /// One line per (source, version), for stdout.
    pub fn render(&self) -> String {
        let mut o = String::new();
        for v in &self.versions {
            let what = match &v.outcome {
                Outcome::Unchanged { latest } => format!("unchanged (latest {latest})"),
                Outcome::Published {
                    snapshot_id,
                    summary,
                    diff_md,
                    repointed,
                } => {
                    let verb = if *repointed {
                        "latest back to"
                    } else {
                        "published"
                    };
                    let report = diff_md
                        .as_ref()
                        .map(|p| format!("; report {}", p.display()))
                        .unwrap_or_default();
                    format!("{verb} {snapshot_id}: {summary}{report}")
                }
                Outcome::BuildFailed { reason } => format!("BUILD FAILED: {reason}"),
                Outcome::Trouble { reason } => format!("TROUBLE: {reason}"),
            };
            o.push_str(&format!("{} {}: {what}\n", v.source, v.version));
        }
        o
    }

    /// The Markdown reports of everything published in this run, one after
    /// the other (for a CI job summary); a line saying nothing changed otherwise.
    pub fn markdown(&self) -> String {
        let parts: Vec<&str> = self
            .versions
            .iter()
            .filter_map(|v| v.markdown.as_deref())
            .collect();
        let mut o = if parts.is_empty() {
            "# docsnap rebuild\n\nNo documentation changes were published.\n".to_string()
        } else {
            parts.join("\n---\n\n")
        };
        let failed: Vec<String> = self
            .versions
            .iter()
            .filter_map(|v| match &v.outcome {
                Outcome::BuildFailed { reason } | Outcome::Trouble { reason } => {
                    Some(format!("- {} {}: {reason}", v.source, v.version))
                }
                _ => None,
            })
            .collect();
        if !failed.is_empty() {
            o.push_str("\n## Not rebuilt\n\n");
            o.push_str(&failed.join("\n"));
            o.push('\n');
        }
        o
    }
}

/// A build progress callback that logs every 50 URLs (schedulers have no terminal).
pub fn log_progress() -> build::BuildProgress {
    std::sync::Arc::new(|src, ver, done, total| {
        if done == total || done.is_multiple_of(50) {
            tracing::info!("{src} {ver}: {done}/{total} URLs");
        }
    })
}

/// Build, compare and publish every version of every source in `sources`.
/// The builds run side by side (see [`build::build_sources`]); comparing
/// and publishing then go one version at a time, in the order given, so
/// two versions never race on the publish directory.
pub fn rebuild(cfg: &Config, sources: &[&Source], opts: &RebuildOptions) -> RebuildReport {
    let runs = build::build_sources(cfg, sources, &opts.build, opts.jobs, &|_| {});
    let mut report = RebuildReport::default();
    for run in runs {
        let result = match run.result {
            Err(e) => VersionResult {
                source: run.source,
                version: run.version,
                outcome: Outcome::BuildFailed {
                    reason: e.to_string(),
                },
                build: None,
                markdown: None,
            },
            Ok(rep) => after_build(rep, opts),
        };
        report.versions.push(result);
    }
    report
}

fn after_build(rep: VersionReport, opts: &RebuildOptions) -> VersionResult {
    let mut res = VersionResult {
        source: rep.source.clone(),
        version: rep.version.clone(),
        outcome: Outcome::Trouble {
            reason: String::new(),
        },
        build: None,
        markdown: None,
    };
    let failed = rep.failures.len() > opts.build.allow_failures;
    match (&rep.artifact, failed) {
        (Some(dir), false) => match compare_and_publish(dir, opts) {
            Ok((outcome, md)) => {
                res.outcome = outcome;
                res.markdown = md;
                prune_out(dir);
            }
            Err(e) => {
                res.outcome = Outcome::Trouble {
                    reason: e.to_string(),
                }
            }
        },
        _ => {
            let reason = if rep.failures.is_empty() {
                format!("no artifact written ({} pages)", rep.pages)
            } else {
                format!(
                    "{} page(s) failed after retries: {}",
                    rep.failures.len(),
                    rep.failures
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            };
            res.outcome = Outcome::BuildFailed { reason };
        }
    }
    res.build = Some(rep);
    res
}

/// Artifacts kept per (source, version) in the `--out` directory: the new one
/// (the next build's validators) and the one before it.
pub const OUT_KEEP: usize = 2;

/// Every rebuild writes a new artifact under `--out`, changed or not; drop the
/// older ones so a scheduled job does not fill the disk. Best effort.
fn prune_out(new: &Path) {
    let Some(parent) = new.parent() else {
        return;
    };
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    let mut snaps: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.join("manifest.json").is_file()
                && p.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
        })
        .collect();
    snaps.sort();
    let n = snaps.len().saturating_sub(OUT_KEEP);
    for old in snaps.into_iter().take(n) {
        if old != new {
            if let Err(e) = crate::artifact::remove_artifact(&old) {
                tracing::warn!("cannot remove old artifact {}: {e}", old.display());
            }
        }
    }
}

/// An artifact with no pages, standing for "nothing published yet".
fn empty_like(a: &Artifact) -> Artifact {
    let mut manifest = a.manifest.clone();
    manifest.snapshot_id = String::new();
    manifest.created_at = String::new();
    manifest.counts = Default::default();
    manifest.files = Default::default();
    manifest.content_sha256 = artifact::content_sha256(&[]);
    Artifact {
        dir: PathBuf::new(),
        manifest,
        pages: Vec::new(),
        sections: Vec::new(),
    }
}

/// Compare the new artifact with the published latest and publish it when
/// its content differs. Returns the outcome and the Markdown report. A bucket
/// (`s3://…`) is handled through its local mirror: pull the version, publish
/// into the mirror, push what changed.
fn compare_and_publish(
    dir: &Path,
    opts: &RebuildOptions,
) -> Result<(Outcome, Option<String>), publish::PublishError> {
    let Some(url) = opts
        .publish_to
        .to_str()
        .filter(|s| publish::remote::is_remote(s))
    else {
        return compare_and_publish_in(dir, &opts.publish_to, opts.keep);
    };
    let m = artifact::read_manifest(dir)?;
    let remote = publish::remote::RemoteStore::open(url)?;
    let mirror = publish::remote::mirror_dir(url);
    remote.pull(
        &mirror,
        &publish::remote::Scope::Version {
            source: m.source.clone(),
            version: m.version.clone(),
        },
    )?;
    let base = publish::remote::Pulled::of(&mirror, &m.source, &m.version)?;
    let r = compare_and_publish_in(dir, &mirror, opts.keep)?;
    remote.push(&mirror, &m.source, &m.version, &base)?;
    Ok(r)
}

/// [`compare_and_publish`] for a publish directory on disk.
fn compare_and_publish_in(
    dir: &Path,
    publish_to: &Path,
    keep: Option<usize>,
) -> Result<(Outcome, Option<String>), publish::PublishError> {
    let new = artifact::load(dir)?;
    let m = &new.manifest;
    let vdir = publish_to.join(&m.source).join(&m.version);
    let latest = publish::read_latest(&vdir)?;
    // A latest snapshot that fails its checks is not served; publishing the
    // new build replaces it, and the run still reports trouble.
    let mut damaged: Option<String> = None;
    let prev = match &latest {
        Some(id) => match publish::open_snapshot(&vdir.join(format!("{id}.tar.zst"))) {
            Ok(p) => Some(p),
            Err(e) if e.is_corruption() => {
                tracing::error!(
                    "{} {}: published latest {id} is damaged: {e}",
                    m.source,
                    m.version
                );
                damaged = Some(format!("published latest {id} was damaged ({e})"));
                None
            }
            Err(e) => return Err(e),
        },
        None => None,
    };
    if let (Some(p), Some(id)) = (&prev, &latest) {
        if p.artifact.manifest.content_sha256 == m.content_sha256 {
            if keep.is_some() {
                // Nothing new to publish, but --keep still prunes.
                let pub_opts = PublishOptions {
                    keep,
                    attachments: Vec::new(),
                };
                publish::publish(dir, publish_to, &pub_opts)?;
            }
            return Ok((Outcome::Unchanged { latest: id.clone() }, None));
        }
    }
    let d: Diff = match &prev {
        Some(p) => diff::diff_artifacts(&p.artifact, &new),
        None => diff::diff_artifacts(&empty_like(&new), &new),
    };
    let md = d.render_markdown();
    let mut json = serde_json::to_vec_pretty(&d.to_json()).unwrap_or_default();
    json.push(b'\n');
    let pub_opts = PublishOptions {
        keep,
        attachments: vec![
            ("diff.md".to_string(), md.clone().into_bytes()),
            ("diff.json".to_string(), json),
        ],
    };
    let r = publish::publish(dir, publish_to, &pub_opts)?;
    let outcome = match r.outcome {
        PublishOutcome::Published(e) => Outcome::Published {
            diff_md: Some(vdir.join(format!("{}.diff.md", e.snapshot_id))),
            snapshot_id: e.snapshot_id,
            summary: d.summary(),
            repointed: false,
        },
        PublishOutcome::Repointed(id) => Outcome::Published {
            snapshot_id: id,
            summary: d.summary(),
            diff_md: None,
            repointed: true,
        },
        PublishOutcome::AlreadyLatest(id) => Outcome::Unchanged { latest: id },
    };
    if let Some(why) = damaged {
        let now = match &outcome {
            Outcome::Published { snapshot_id, .. }
            | Outcome::Unchanged {
                latest: snapshot_id,
            } => snapshot_id.clone(),
            _ => String::new(),
        };
        return Ok((
            Outcome::Trouble {
                reason: format!("{why}; latest is now {now}"),
            },
            Some(md),
        ));
    }
    if matches!(outcome, Outcome::Unchanged { .. }) {
        return Ok((outcome, None));
    }
    Ok((outcome, Some(md)))
}
