//! The crawl journal: what a build has already fetched, kept on disk as it
//! goes, so that a build killed at any moment (even `kill -9`) resumes without
//! fetching a completed page again.
//!
//! Layout: `<out>/<source>/<version>/.journal/` with `entries.jsonl` (one line
//! per finished URL, appended and synced) and `bodies/<sha256 of url>` (the
//! body, written aside and renamed *before* its line is appended). A line
//! therefore never refers to a missing or partial body; a torn last line is
//! ignored. The journal is removed once the artifact is complete.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::util::sha256_hex;

/// How long after its last line a journal is still resumed from.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// One finished URL.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// Public page URL.
    pub url: String,
    /// Public URL actually fetched (e.g. the `.md` alternate).
    pub fetched: String,
    /// Public URL of the final response (after redirects).
    #[serde(default)]
    pub final_url: String,
    pub status: u16,
    pub attempts: u32,
    #[serde(default)]
    pub content_type: String,
    #[serde(default)]
    pub etag: Option<String>,
    #[serde(default)]
    pub last_modified: Option<String>,
    /// sha256 of the body (empty when there is none, e.g. 304/404).
    #[serde(default)]
    pub body_sha256: String,
}

/// An open journal.
pub struct Journal {
    dir: PathBuf,
    entries: HashMap<String, Entry>,
    file: Mutex<std::fs::File>,
}

impl Journal {
    /// Open (or start) the journal in `dir`, reading what an earlier,
    /// interrupted build recorded.
    pub fn open(dir: &Path) -> std::io::Result<Journal> {
        let path = dir.join("entries.jsonl");
        // A journal last written long ago is another day's crawl (a build that
        // failed and was run again on the next schedule): resuming from it
        // would present yesterday's pages as today's. Start afresh.
        let stale = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > MAX_AGE);
        if stale {
            tracing::warn!(
                "{}: older than {} minutes, discarded (pages are fetched again)",
                dir.display(),
                MAX_AGE.as_secs() / 60
            );
            std::fs::remove_dir_all(dir)?;
        }
        std::fs::create_dir_all(dir.join("bodies"))?;
        let mut entries = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(&path) {
            for line in text.lines() {
                // A torn last line (killed mid-write) does not parse: skipped.
                if let Ok(e) = serde_json::from_str::<Entry>(line) {
                    entries.insert(e.url.clone(), e);
                }
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            entries,
            file: Mutex::new(file),
        })
    }

    /// How many URLs an earlier run finished.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn body_path(&self, url: &str) -> PathBuf {
        self.dir.join("bodies").join(sha256_hex(url.as_bytes()))
    }

    /// The recorded outcome of `url` and its body, if an earlier run finished it
    /// and its body is intact.
    pub fn get(&self, url: &str) -> Option<(Entry, Vec<u8>)> {
        let e = self.entries.get(url)?;
        if e.body_sha256.is_empty() {
            return Some((e.clone(), Vec::new()));
        }
        let body = std::fs::read(self.body_path(url)).ok()?;
        (sha256_hex(&body) == e.body_sha256).then(|| (e.clone(), body))
    }

    /// Record a finished URL: body first (aside, synced, renamed), then its line.
    pub fn record(&self, mut e: Entry, body: &[u8]) -> std::io::Result<()> {
        if !body.is_empty() {
            e.body_sha256 = sha256_hex(body);
            let dest = self.body_path(&e.url);
            let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
            {
                let mut f = std::fs::File::create(&tmp)?;
                f.write_all(body)?;
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &dest)?;
        }
        let mut line = serde_json::to_string(&e).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(line.as_bytes())?;
        f.sync_data()
    }

    /// Remove the journal (after the artifact it fed is complete).
    pub fn remove(self) -> std::io::Result<()> {
        drop(self.file);
        std::fs::remove_dir_all(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopen_and_torn_lines() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".journal");
        let j = Journal::open(&dir).unwrap();
        let e = Entry {
            url: "https://a/x".into(),
            fetched: "https://a/x.md".into(),
            final_url: "https://a/x.md".into(),
            status: 200,
            attempts: 1,
            content_type: "text/markdown".into(),
            etag: Some("\"e\"".into()),
            last_modified: None,
            body_sha256: String::new(),
        };
        j.record(e.clone(), b"# X\nbody").unwrap();
        drop(j);
        // A torn line from a killed writer.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("entries.jsonl"))
            .unwrap();
        f.write_all(b"{\"url\":\"https://a/y\",\"fet").unwrap();
        let j = Journal::open(&dir).unwrap();
        assert_eq!(j.len(), 1);
        let (got, body) = j.get("https://a/x").unwrap();
        assert_eq!(got.etag, e.etag);
        assert_eq!(body, b"# X\nbody");
        assert!(j.get("https://a/y").is_none());
        // A body that no longer matches its hash is not trusted.
        std::fs::write(j.body_path("https://a/x"), b"tampered").unwrap();
        assert!(j.get("https://a/x").is_none());
        j.remove().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn a_journal_from_another_day_is_not_resumed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".journal");
        let j = Journal::open(&dir).unwrap();
        let e = Entry {
            url: "https://a/x".into(),
            fetched: "https://a/x".into(),
            final_url: "https://a/x".into(),
            status: 200,
            attempts: 1,
            content_type: "text/html".into(),
            etag: None,
            last_modified: None,
            body_sha256: String::new(),
        };
        j.record(e, b"<p>x</p>").unwrap();
        drop(j);
        assert_eq!(
            Journal::open(&dir).unwrap().len(),
            1,
            "a fresh journal resumes"
        );
        let old = std::time::SystemTime::now() - MAX_AGE - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .append(true)
            .open(dir.join("entries.jsonl"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let j = Journal::open(&dir).unwrap();
        assert_eq!(j.len(), 0, "a stale journal is discarded");
        assert!(j.get("https://a/x").is_none());
    }
}
