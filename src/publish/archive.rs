//! The archive format of a published snapshot: one tar stream, compressed
//! with zstd, holding the artifact directory as `<snapshot-id>/…`, and the
//! `SHA256SUMS` file (sha256sum format) beside it.
//!
//! Archives are deterministic: entries sorted, owner 0, fixed modes and the
//! snapshot's creation time as mtime, so the same artifact packs to the same
//! bytes. Unpacking accepts only plain files and directories below the one
//! top-level folder, so a hostile archive cannot write outside its target.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{io_err, PublishError};

/// zstd level of published archives: a good ratio at a fast pace.
pub const ZSTD_LEVEL: i32 = 9;

/// A writer that hashes what passes through it.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Every file and directory under `dir`, relative, sorted (directories before their contents).
fn walk(dir: &Path) -> Result<Vec<(PathBuf, bool)>, PublishError> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        let mut names = Vec::new();
        for e in std::fs::read_dir(&abs).map_err(io_err(&abs))? {
            let e = e.map_err(io_err(&abs))?;
            let ft = e.file_type().map_err(io_err(&e.path()))?;
            let name = e.file_name();
            if name.to_string_lossy().ends_with(".lock") && ft.is_file() {
                // tantivy's lock files are not part of an artifact.
                continue;
            }
            if ft.is_dir() {
                names.push((rel.join(&name), true));
            } else if ft.is_file() {
                names.push((rel.join(&name), false));
            } else {
                return Err(PublishError::Corrupt {
                    path: e.path(),
                    message: "neither a file nor a directory".into(),
                });
            }
        }
        names.sort();
        for (p, is_dir) in names.into_iter().rev() {
            if is_dir {
                stack.push(p.clone());
            }
            out.push((p, is_dir));
        }
    }
    out.sort();
    Ok(out)
}

fn rel_str(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Pack `dir` as `<top>/…` into a tar+zstd stream written to `file`; returns
/// the sha256 (hex) and size of the compressed bytes. The file is synced.
pub fn pack(
    dir: &Path,
    top: &str,
    mtime: u64,
    file: std::fs::File,
    file_path: &Path,
) -> Result<(String, u64), PublishError> {
    let hw = HashingWriter {
        inner: std::io::BufWriter::new(file),
        hasher: Sha256::new(),
        bytes: 0,
    };
    let enc = zstd::Encoder::new(hw, ZSTD_LEVEL).map_err(io_err(file_path))?;
    let mut tar = tar::Builder::new(enc);
    let header_for = |size: u64, dir: bool| {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(if dir { 0o755 } else { 0o644 });
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        h.set_entry_type(if dir {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        h
    };
    let mut h = header_for(0, true);
    tar.append_data(&mut h, format!("{top}/"), std::io::empty())
        .map_err(io_err(file_path))?;
    for (rel, is_dir) in walk(dir)? {
        let name = format!("{top}/{}", rel_str(&rel));
        if is_dir {
            let mut h = header_for(0, true);
            tar.append_data(&mut h, format!("{name}/"), std::io::empty())
                .map_err(io_err(file_path))?;
        } else {
            let src = dir.join(&rel);
            let f = std::fs::File::open(&src).map_err(io_err(&src))?;
            let len = f.metadata().map_err(io_err(&src))?.len();
            let mut h = header_for(len, false);
            tar.append_data(&mut h, &name, f).map_err(io_err(&src))?;
        }
    }
    let enc = tar.into_inner().map_err(io_err(file_path))?;
    let mut hw = enc.finish().map_err(io_err(file_path))?;
    hw.flush().map_err(io_err(file_path))?;
    let HashingWriter {
        inner,
        hasher,
        bytes,
    } = hw;
    let f = inner.into_inner().map_err(|e| PublishError::Io {
        path: file_path.to_path_buf(),
        source: e.into_error(),
    })?;
    f.sync_all().map_err(io_err(file_path))?;
    Ok((hex::encode(hasher.finalize()), bytes))
}

/// Unpack a tar+zstd archive into `dest` (which must exist) and return the
/// one top-level directory it holds. Files are synced when `durable`.
pub fn unpack(archive: &Path, dest: &Path, durable: bool) -> Result<PathBuf, PublishError> {
    let corrupt = |message: String| PublishError::Corrupt {
        path: archive.to_path_buf(),
        message,
    };
    let f = std::fs::File::open(archive).map_err(io_err(archive))?;
    let dec = zstd::Decoder::new(f).map_err(|e| corrupt(format!("not a zstd stream: {e}")))?;
    let mut tar = tar::Archive::new(dec);
    let mut top: Option<String> = None;
    let mut dirs: Vec<PathBuf> = Vec::new();
    let entries = tar
        .entries()
        .map_err(|e| corrupt(format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| corrupt(format!("unreadable entry: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| corrupt(format!("bad entry name: {e}")))?
            .into_owned();
        let mut parts = Vec::new();
        for c in path.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
                Component::CurDir => {}
                _ => {
                    return Err(corrupt(format!(
                        "entry `{}` leaves the archive",
                        path.display()
                    )))
                }
            }
        }
        let Some(first) = parts.first() else {
            continue;
        };
        match &top {
            None => top = Some(first.clone()),
            Some(t) if t != first => {
                return Err(corrupt(format!(
                    "more than one top-level folder (`{t}`, `{first}`)"
                )))
            }
            _ => {}
        }
        if first.starts_with('.') {
            return Err(corrupt(format!("hidden top-level folder `{first}`")));
        }
        let out = parts.iter().fold(dest.to_path_buf(), |p, s| p.join(s));
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&out).map_err(io_err(&out))?;
                dirs.push(out);
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = out.parent() {
                    std::fs::create_dir_all(parent).map_err(io_err(parent))?;
                }
                let mut w = std::fs::File::create(&out).map_err(io_err(&out))?;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = entry.read(&mut buf).map_err(|e| {
                        corrupt(format!("truncated entry `{}`: {e}", path.display()))
                    })?;
                    if n == 0 {
                        break;
                    }
                    w.write_all(&buf[..n]).map_err(io_err(&out))?;
                }
                if durable {
                    w.sync_all().map_err(io_err(&out))?;
                }
            }
            other => {
                return Err(corrupt(format!(
                    "entry `{}` is a {other:?}, not a file or folder",
                    path.display()
                )))
            }
        }
    }
    let top = top.ok_or_else(|| corrupt("empty archive".into()))?;
    if durable {
        dirs.sort();
        for d in dirs.iter().rev() {
            super::sync_dir(d)?;
        }
    }
    Ok(dest.join(top))
}

/// sha256 (hex) of a file's bytes, streamed.
pub fn sha256_file(path: &Path) -> Result<String, PublishError> {
    std::fs::File::open(path)
        .and_then(crate::util::sha256_reader)
        .map_err(io_err(path))
}

/// `SHA256SUMS` text: `<hex>  <name>` lines, as sha256sum writes them.
pub fn sums_text(entries: &[(String, String)]) -> String {
    entries
        .iter()
        .map(|(name, hash)| format!("{hash}  {name}\n"))
        .collect()
}

/// Parse `SHA256SUMS` text into (name, hex) pairs; `None` on a malformed line.
pub fn parse_sums(text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let (hash, rest) = line.split_once(' ')?;
        let name = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('*'))?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || name.is_empty() {
            return None;
        }
        out.push((name.to_string(), hash.to_ascii_lowercase()));
    }
    Some(out)
}

/// A temporary directory removed when dropped; kept beside `parent` so a
/// rename out of it stays on one file system.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A fresh hidden directory under `parent` (created if missing).
    pub fn new_in(parent: &Path, tag: &str) -> Result<TempDir, PublishError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = parent.join(format!(
            ".{tag}.tmp-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).map_err(io_err(&path))?;
        Ok(TempDir { path })
    }

    /// A fresh directory under the system's temporary directory.
    pub fn new(tag: &str) -> Result<TempDir, PublishError> {
        Self::new_in(&std::env::temp_dir(), &format!("docsnap-{tag}"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_round_trip_and_reject_garbage() {
        let h = "a".repeat(64);
        let t = sums_text(&[("x.tar.zst".into(), h.clone())]);
        assert_eq!(t, format!("{h}  x.tar.zst\n"));
        assert_eq!(parse_sums(&t), Some(vec![("x.tar.zst".into(), h.clone())]));
        assert_eq!(parse_sums(&format!("{h} *x")), Some(vec![("x".into(), h)]));
        assert_eq!(parse_sums("nothex  x"), None);
    }

    #[test]
    fn pack_is_deterministic_and_unpacks() {
        let t = TempDir::new("test-pack").unwrap();
        let src = t.path().join("src");
        std::fs::create_dir_all(src.join("index")).unwrap();
        std::fs::write(src.join("a.txt"), b"hello").unwrap();
        std::fs::write(src.join("index/b.bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(src.join("index/.tantivy-writer.lock"), b"").unwrap();
        let pack_to = |name: &str| {
            let p = t.path().join(name);
            let f = std::fs::File::create(&p).unwrap();
            (pack(&src, "snap", 1_700_000_000, f, &p).unwrap(), p)
        };
        let ((h1, n1), p1) = pack_to("one.tar.zst");
        let ((h2, _), _) = pack_to("two.tar.zst");
        assert_eq!(h1, h2);
        assert_eq!(sha256_file(&p1).unwrap(), h1);
        assert_eq!(std::fs::metadata(&p1).unwrap().len(), n1);
        let out = t.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let top = unpack(&p1, &out, true).unwrap();
        assert_eq!(top, out.join("snap"));
        assert_eq!(std::fs::read(top.join("a.txt")).unwrap(), b"hello");
        assert_eq!(std::fs::read(top.join("index/b.bin")).unwrap(), [0u8, 1, 2]);
        assert!(!top.join("index/.tantivy-writer.lock").exists());
    }

    #[test]
    fn unpack_rejects_garbage() {
        let t = TempDir::new("test-garbage").unwrap();
        let p = t.path().join("bad.tar.zst");
        std::fs::write(&p, b"definitely not zstd").unwrap();
        assert!(matches!(
            unpack(&p, t.path(), false),
            Err(PublishError::Corrupt { .. })
        ));
    }
}
