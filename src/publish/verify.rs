//! `docsnap verify`: check an artifact directory, an archive, a published
//! version folder or a whole publish directory, and say what was checked.
//!
//! Findings are of two kinds: problems (damaged or missing content, exit 1)
//! and notes (leftovers of an interrupted publish that nothing refers to,
//! harmless). Errors that stop the check itself are returned as `Err` (exit 2).

use std::collections::BTreeMap;
use std::path::{Component, Path};

use super::{
    archive, check_sums, is_safe_name, read_catalog, read_latest, split_archive_path,
    unpack_verified, version_dirs, PublishError, TempDir, CATALOG,
};
use crate::artifact;
use crate::model::Manifest;

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// One line per thing that passed.
    pub checked: Vec<String>,
    /// One line per corruption, naming the file.
    pub problems: Vec<String>,
    /// Harmless findings (leftover temporaries, unlisted archives).
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// No problems found.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report for a terminal: `ok`, `CORRUPT` and `note` lines and a total.
    pub fn render(&self) -> String {
        let mut o = String::new();
        for l in &self.checked {
            o.push_str(l);
            o.push('\n');
        }
        for l in &self.notes {
            o.push_str(&format!("note {l}\n"));
        }
        for l in &self.problems {
            o.push_str(&format!("CORRUPT {l}\n"));
        }
        o.push_str(&format!(
            "verify: {} checked, {} corrupt, {} notes\n",
            self.checked.len(),
            self.problems.len(),
            self.notes.len()
        ));
        o
    }

    /// Run a check: success lines go to `checked`, corruption to `problems`,
    /// anything else is trouble for the caller.
    fn run<T>(
        &mut self,
        f: impl FnOnce() -> Result<(T, String), PublishError>,
    ) -> Result<Option<T>, PublishError> {
        match f() {
            Ok((v, line)) => {
                self.checked.push(line);
                Ok(Some(v))
            }
            Err(e) if e.is_corruption() => {
                self.problems.push(e.to_string());
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// Verify whatever `path` is: an artifact directory (checksums of its
/// manifest), a `<snapshot-id>.tar.zst` archive (its `SHA256SUMS`, then the
/// artifact inside), a published version folder, or a publish directory
/// (every entry of `index.json` and every `latest`).
pub fn verify_path(path: &Path) -> Result<VerifyReport, PublishError> {
    let mut r = VerifyReport::default();
    if path.is_file() {
        r.run(|| verify_archive(path))?;
    } else if path.join("manifest.json").is_file() {
        r.run(|| {
            // Opened as a server opens it: every file against its sum,
            // then whether the files fit one another.
            let m = crate::search::check_servable(path)?;
            let line = format!(
                "ok artifact {} ({} {} {}, {} files match manifest.json and load as a server loads them)",
                path.display(),
                m.source,
                m.version,
                m.snapshot_id,
                m.files.len()
            );
            Ok(((), line))
        })?;
    } else if path.join(CATALOG).is_file() || has_published_archives(path)? {
        verify_publish_dir(path, &mut r)?;
    } else if path.join(super::LATEST).is_file() {
        verify_version_dir(path, None, &mut r)?;
    } else if path.is_dir() {
        return Err(PublishError::Invalid(format!(
            "{}: not an artifact directory (manifest.json), publish directory ({CATALOG}) or version folder (latest)",
            path.display()
        )));
    } else {
        return Err(PublishError::Invalid(format!(
            "{}: no such file or directory",
            path.display()
        )));
    }
    Ok(r)
}

/// Sums, unpack, artifact checks and the manifest copy of one archive.
fn verify_archive(path: &Path) -> Result<(Manifest, String), PublishError> {
    let (vdir, id) = split_archive_path(path)?;
    check_sums(path)?;
    let tmp = TempDir::new("verify")?;
    let (dir, m) = unpack_verified(path, tmp.path(), false)?;
    check_servable_inside(path, &dir)?;
    let copy = vdir.join(format!("{id}.manifest.json"));
    if copy.is_file() {
        let a = std::fs::read(&copy).map_err(super::io_err(&copy))?;
        let b = std::fs::read(dir.join("manifest.json")).map_err(super::io_err(&dir))?;
        if a != b {
            return Err(PublishError::Corrupt {
                path: copy,
                message: "differs from the manifest.json inside the archive".into(),
            });
        }
    }
    let line = format!(
        "ok archive {} (sha256 matches {id}.SHA256SUMS; {} {} {}: {} pages, {} files match its manifest and load as a server loads them)",
        path.display(),
        m.source,
        m.version,
        m.snapshot_id,
        m.counts.pages,
        m.files.len()
    );
    Ok((m, line))
}

/// [`crate::search::check_servable`] on the artifact unpacked from
/// `archive` into `dir`, a temporary folder: a finding names the archive
/// and the file inside it, not the folder that is about to go.
fn check_servable_inside(archive: &Path, dir: &Path) -> Result<(), PublishError> {
    match crate::search::check_servable(dir) {
        Ok(_) => Ok(()),
        Err(artifact::ArtifactError::Corrupt { path, message }) => Err(PublishError::Corrupt {
            path: archive.to_path_buf(),
            message: format!(
                "{} inside does not load: {message}",
                path.strip_prefix(dir).unwrap_or(&path).display()
            ),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Whether `dir` holds `SOURCE/VERSION/<id>.tar.zst` archives: a publish
/// directory even when its catalog is gone.
fn has_published_archives(dir: &Path) -> Result<bool, PublishError> {
    for (_, _, vdir) in version_dirs(dir)? {
        let rd = std::fs::read_dir(&vdir).map_err(super::io_err(&vdir))?;
        if rd
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".tar.zst"))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn verify_publish_dir(dir: &Path, r: &mut VerifyReport) -> Result<(), PublishError> {
    let cat_path = dir.join(CATALOG);
    if !cat_path.is_file() {
        // Publishing writes the catalog before it moves any `latest`, so
        // archives without a catalog mean it was lost.
        r.problems.push(format!(
            "{}: missing, but the directory holds published archives",
            cat_path.display()
        ));
    }
    let cat = match read_catalog(dir) {
        Ok(c) => {
            r.checked.push(format!(
                "ok catalog {} ({} snapshots)",
                cat_path.display(),
                c.snapshots.len()
            ));
            Some(c)
        }
        Err(e) if e.is_corruption() => {
            r.problems.push(e.to_string());
            None
        }
        Err(e) => return Err(e),
    };
    // (source, version) → snapshot id → whether its archive passed.
    let mut listed: BTreeMap<(String, String), BTreeMap<String, bool>> = BTreeMap::new();
    for e in cat.iter().flat_map(|c| c.snapshots.iter()) {
        let rel_ok = !e.archive.is_empty()
            && Path::new(&e.archive)
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
        let expected = format!("{}/{}/{}.tar.zst", e.source, e.version, e.snapshot_id);
        if !rel_ok || e.archive != expected {
            r.problems.push(format!(
                "{}: entry {} {} {} names archive `{}`, expected `{expected}`",
                cat_path.display(),
                e.source,
                e.version,
                e.snapshot_id,
                e.archive
            ));
            continue;
        }
        let path = dir.join(&e.archive);
        let passed = r.run(|| {
            let got = archive::sha256_file(&path).map_err(|err| match err {
                PublishError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    PublishError::Corrupt {
                        path: path.clone(),
                        message: format!("listed in {} but missing", cat_path.display()),
                    }
                }
                other => other,
            })?;
            if got != e.sha256 {
                return Err(PublishError::Corrupt {
                    path: path.clone(),
                    message: format!(
                        "sha256 {got} does not match {}'s {}",
                        cat_path.display(),
                        e.sha256
                    ),
                });
            }
            let (m, line) = verify_archive(&path)?;
            if m.content_sha256 != e.content_sha256
                || m.source != e.source
                || m.version != e.version
            {
                return Err(PublishError::Corrupt {
                    path: path.clone(),
                    message: format!(
                        "its manifest does not match the entry in {}",
                        cat_path.display()
                    ),
                });
            }
            Ok(((), line))
        })?;
        listed
            .entry((e.source.clone(), e.version.clone()))
            .or_default()
            .insert(e.snapshot_id.clone(), passed.is_some());
    }
    for (source, version, vdir) in version_dirs(dir)? {
        let ids = listed.get(&(source.clone(), version.clone()));
        verify_version_dir(&vdir, Some((ids, cat.is_some())), r)?;
    }
    for ((source, version), ids) in &listed {
        if !dir.join(source).join(version).join(super::LATEST).is_file() {
            // Only the first publish of a version can stop between catalog
            // and `latest`; with two snapshots listed, one publish finished
            // and wrote a `latest` that is now gone.
            let msg = format!("{source} {version}: published snapshots but no `latest`");
            if ids.len() > 1 {
                r.problems
                    .push(format!("{msg} ({} listed: it was removed)", ids.len()));
            } else {
                r.notes
                    .push(format!("{msg} yet (an interrupted first publish?)"));
            }
        }
    }
    note_temporaries(dir, r);
    Ok(())
}

/// The `latest` pointer of one version folder, and (without a catalog) every
/// archive in it. `catalog`: the ids the catalog lists for this folder.
fn verify_version_dir(
    vdir: &Path,
    catalog: Option<(Option<&BTreeMap<String, bool>>, bool)>,
    r: &mut VerifyReport,
) -> Result<(), PublishError> {
    let latest_path = vdir.join(super::LATEST);
    let latest = match read_latest(vdir) {
        Ok(l) => l,
        Err(e) if e.is_corruption() => {
            r.problems.push(e.to_string());
            None
        }
        Err(e) => return Err(e),
    };
    let mut archives: Vec<String> = Vec::new();
    for e in std::fs::read_dir(vdir).map_err(super::io_err(vdir))? {
        let e = e.map_err(super::io_err(vdir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".tar.zst") {
            if is_safe_name(id) {
                archives.push(id.to_string());
            }
        }
    }
    archives.sort();
    match catalog {
        Some((ids, catalog_readable)) => {
            if let Some(id) = &latest {
                match ids.and_then(|s| s.get(id)) {
                    Some(true) => r.checked.push(format!(
                        "ok {} -> {id} (listed and verified above)",
                        latest_path.display()
                    )),
                    Some(false) => r.problems.push(format!(
                        "{}: names {id}, whose archive failed the checks above",
                        latest_path.display()
                    )),
                    None => {
                        if catalog_readable {
                            r.problems.push(format!(
                                "{}: names {id}, which {CATALOG} does not list",
                                latest_path.display()
                            ));
                        }
                        let archive = vdir.join(format!("{id}.tar.zst"));
                        if archive.is_file() {
                            r.run(|| verify_archive(&archive).map(|(_, l)| ((), l)))?;
                        } else {
                            r.problems.push(format!(
                                "{}: names {id}, but {} is missing",
                                latest_path.display(),
                                archive.display()
                            ));
                        }
                    }
                }
            }
            for id in &archives {
                if !ids.is_some_and(|s| s.contains_key(id))
                    && latest.as_deref() != Some(id.as_str())
                {
                    r.notes.push(format!(
                        "{}: not in {CATALOG} (left by an interrupted publish; not served)",
                        vdir.join(format!("{id}.tar.zst")).display()
                    ));
                }
            }
        }
        None => {
            for id in &archives {
                let archive = vdir.join(format!("{id}.tar.zst"));
                r.run(|| verify_archive(&archive).map(|(_, l)| ((), l)))?;
            }
            if let Some(id) = &latest {
                if archives.contains(id) {
                    r.checked
                        .push(format!("ok {} -> {id}", latest_path.display()));
                } else {
                    r.problems.push(format!(
                        "{}: names {id}, but {id}.tar.zst is missing",
                        latest_path.display()
                    ));
                }
            }
        }
    }
    note_temporaries(vdir, r);
    Ok(())
}

fn note_temporaries(dir: &Path, r: &mut VerifyReport) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.contains(".tmp-"))
        .collect();
    names.sort();
    for n in names {
        r.notes.push(format!(
            "{}: temporary left by an interrupted publish (ignored; the next publish removes it)",
            dir.join(n).display()
        ));
    }
}
