//! The crawl journal: what a build has already fetched, kept on disk as it
//! goes, so that a build killed at any moment (even `kill -9`) resumes without
//! fetching a completed page again.
//!
//! Layout: `<out>/<source>/<version>/.journal/` with `entries.jsonl` (one line
//! per finished URL) and `bodies.bin` (the bodies, appended one after another;
//! a line names its body's offset, length and sha256). A body is appended
//! *before* its line, so after `kill -9` a line never refers to a body that
//! was not written; a torn last line is ignored.
//!
//! Nothing is fsynced: a killed process loses nothing the kernel already
//! holds, and what a power cut could lose (the tail of either file) is caught
//! on resume — a line that does not parse is skipped, a body whose sha256
//! does not match is fetched again. A sync per page cost more than the rest
//! of the journal together (one file created and synced per page). The
//! journal is removed once the artifact is complete.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::util::sha256_hex;

/// The file the bodies are appended to.
const BODIES: &str = "bodies.bin";

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
    /// Where the body starts in `bodies.bin`.
    #[serde(default)]
    pub body_offset: u64,
    /// The body's length in bytes.
    #[serde(default)]
    pub body_len: u64,
}

/// An open journal.
pub struct Journal {
    dir: PathBuf,
    entries: HashMap<String, Entry>,
    files: Mutex<Files>,
}

/// The journal's two append-only files, written together under one lock.
struct Files {
    entries: std::fs::File,
    bodies: std::fs::File,
    /// Length of `bodies.bin`: where the next body starts.
    bodies_len: u64,
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
        std::fs::create_dir_all(dir)?;
        let mut entries = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(&path) {
            for line in text.lines() {
                // A torn last line (killed mid-write) does not parse: skipped.
                if let Ok(e) = serde_json::from_str::<Entry>(line) {
                    entries.insert(e.url.clone(), e);
                }
            }
        }
        let append = |p: &Path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
        };
        let entries_file = append(&path)?;
        let bodies = append(&dir.join(BODIES))?;
        let bodies_len = bodies.metadata()?.len();
        Ok(Journal {
            dir: dir.to_path_buf(),
            entries,
            files: Mutex::new(Files {
                entries: entries_file,
                bodies,
                bodies_len,
            }),
        })
    }

    /// How many URLs an earlier run finished.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The recorded outcome of `url` and its body, if an earlier run finished it
    /// and its body is intact.
    pub fn get(&self, url: &str) -> Option<(Entry, Vec<u8>)> {
        use std::io::{Read, Seek};
        let e = self.entries.get(url)?;
        if e.body_sha256.is_empty() {
            return Some((e.clone(), Vec::new()));
        }
        let mut f = std::fs::File::open(self.dir.join(BODIES)).ok()?;
        f.seek(std::io::SeekFrom::Start(e.body_offset)).ok()?;
        let mut body = vec![0u8; usize::try_from(e.body_len).ok()?];
        f.read_exact(&mut body).ok()?;
        (sha256_hex(&body) == e.body_sha256).then(|| (e.clone(), body))
    }

    /// Record a finished URL: its body first, then its line.
    pub fn record(&self, mut e: Entry, body: &[u8]) -> std::io::Result<()> {
        let mut f = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if !body.is_empty() {
            e.body_sha256 = sha256_hex(body);
            e.body_offset = f.bodies_len;
            e.body_len = body.len() as u64;
            f.bodies.write_all(body)?;
            f.bodies_len += body.len() as u64;
        }
        let mut line = serde_json::to_string(&e).map_err(std::io::Error::other)?;
        line.push('\n');
        f.entries.write_all(line.as_bytes())
    }

    /// Remove the journal (after the artifact it fed is complete).
    pub fn remove(self) -> std::io::Result<()> {
        drop(self.files);
        std::fs::remove_dir_all(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str) -> Entry {
        Entry {
            url: url.into(),
            fetched: url.into(),
            final_url: url.into(),
            status: 200,
            attempts: 1,
            content_type: "text/html".into(),
            etag: None,
            last_modified: None,
            body_sha256: String::new(),
            body_offset: 0,
            body_len: 0,
        }
    }

    #[test]
    fn survives_reopen_and_torn_lines() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".journal");
        let j = Journal::open(&dir).unwrap();
        let e = Entry {
            fetched: "https://a/x.md".into(),
            final_url: "https://a/x.md".into(),
            content_type: "text/markdown".into(),
            etag: Some("\"e\"".into()),
            ..entry("https://a/x")
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
        std::fs::write(dir.join(BODIES), b"tampered").unwrap();
        assert!(j.get("https://a/x").is_none());
        j.remove().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn bodies_are_found_at_their_offsets_and_a_lost_tail_is_fetched_again() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".journal");
        let j = Journal::open(&dir).unwrap();
        j.record(entry("https://a/1"), b"first body").unwrap();
        j.record(entry("https://a/304"), b"").unwrap();
        j.record(entry("https://a/2"), b"the second, longer body")
            .unwrap();
        drop(j);
        // Reopened, appends continue after what is there.
        let j = Journal::open(&dir).unwrap();
        j.record(entry("https://a/3"), b"third").unwrap();
        drop(j);
        let j = Journal::open(&dir).unwrap();
        assert_eq!(j.get("https://a/1").unwrap().1, b"first body");
        assert_eq!(j.get("https://a/304").unwrap().1, b"");
        assert_eq!(j.get("https://a/2").unwrap().1, b"the second, longer body");
        assert_eq!(j.get("https://a/3").unwrap().1, b"third");
        // A power cut lost the tail of the bodies: those pages are fetched again.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(BODIES))
            .unwrap();
        f.set_len(20).unwrap();
        assert_eq!(j.get("https://a/1").unwrap().1, b"first body");
        assert!(j.get("https://a/2").is_none());
        assert!(j.get("https://a/3").is_none());
    }

    #[test]
    fn a_journal_from_another_day_is_not_resumed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".journal");
        let j = Journal::open(&dir).unwrap();
        j.record(entry("https://a/x"), b"<p>x</p>").unwrap();
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
