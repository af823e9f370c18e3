//! Publish directories on object storage: `s3://BUCKET/PREFIX` holds the same
//! layout as a local publish directory (archives, `SHA256SUMS`, manifest
//! copies, `latest` per version, `index.json`).
//!
//! Everything goes through a local mirror of the bucket, so the publish,
//! verify and unpack code that a local directory uses is the code that runs:
//! - **publish**: bring the version's objects and the catalog down
//!   ([`RemoteStore::pull`]), publish into the mirror as into any directory,
//!   then send the difference up ([`RemoteStore::push`]) in the local order —
//!   snapshot files, catalog, `latest` last — so no reader ever finds `latest`
//!   naming a snapshot that is not complete in the bucket.
//! - **racing publishers**: the catalog and `latest` are written with
//!   conditional puts (`If-Match` the ETag seen when pulling, or
//!   `If-None-Match: *` when there was none). A catalog changed meanwhile by
//!   another source's publisher is merged and retried; a `latest` moved
//!   meanwhile means another publisher of the same version won, and this one
//!   reports that it lost (its files are uploaded, nothing points at them).
//! - **serve**: replicas keep a mirror of the `latest` snapshots and poll
//!   `index.json` and each `latest` with conditional GETs (`If-None-Match`),
//!   so an unchanged bucket costs one small request per version per poll.
//!
//! Credentials, region and endpoint come from the standard `AWS_*`
//! environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL` for MinIO, R2, Ceph or a test server;
//! requests are path-style unless `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as Key;
use object_store::{
    GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};

use super::{io_err, write_atomic, PublishError, CATALOG, LATEST};

/// Scheme of object-storage locations.
pub const SCHEME: &str = "s3://";

/// Whether a `--to` / `--artifacts` argument names object storage.
pub fn is_remote(location: &str) -> bool {
    location.starts_with(SCHEME)
}

/// How many times a catalog write is retried after another publisher
/// changed the catalog in between.
const CATALOG_RETRIES: usize = 8;

/// One bucket prefix used as a publish directory.
pub struct RemoteStore {
    url: String,
    store: Arc<dyn ObjectStore>,
    prefix: String,
    rt: tokio::runtime::Runtime,
    /// ETag of each object as last pulled, by path relative to the prefix.
    seen: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

fn store_err(url: &str, what: &str, e: object_store::Error) -> PublishError {
    PublishError::Invalid(format!("{url}: {what}: {e}"))
}

/// What a GET found.
enum Fetched {
    Bytes(Vec<u8>),
    NotModified,
    Absent,
}

/// Which objects a pull brings down.
#[derive(Debug, Clone)]
pub enum Scope {
    /// The catalog and every object of one `<source>/<version>/` (what a
    /// publish of that version reads and may change).
    Version { source: String, version: String },
    /// The catalog, each version's `latest` and the files of the snapshot it
    /// names (what a server loads).
    Latest,
    /// Everything under the prefix (what `verify` checks).
    All,
}

impl RemoteStore {
    /// Open `s3://BUCKET[/PREFIX]` with the `AWS_*` environment.
    pub fn open(url: &str) -> Result<RemoteStore, PublishError> {
        let rest = url.strip_prefix(SCHEME).ok_or_else(|| {
            PublishError::Invalid(format!("{url}: not an s3://BUCKET/PREFIX location"))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(PublishError::Invalid(format!("{url}: no bucket named")));
        }
        crate::util::install_tls();
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_conditional_put(S3ConditionalPut::ETagMatch);
        let endpoint = std::env::var("AWS_ENDPOINT_URL")
            .or_else(|_| std::env::var("AWS_ENDPOINT"))
            .unwrap_or_default();
        if endpoint.starts_with("http://") {
            // A local S3-compatible server (MinIO, a test server) speaks plain HTTP.
            b = b.with_allow_http(true);
        }
        if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        {
            b = b.with_region("us-east-1");
        }
        let store = b
            .build()
            .map_err(|e| store_err(url, "cannot configure the S3 client", e))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PublishError::Invalid(format!("{url}: cannot start I/O runtime: {e}")))?;
        Ok(RemoteStore {
            url: url.trim_end_matches('/').to_string(),
            store: Arc::new(store),
            prefix: prefix.trim_matches('/').to_string(),
            rt,
            seen: Mutex::new(BTreeMap::new()),
        })
    }

    /// The location as given, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn key(&self, rel: &str) -> Key {
        if self.prefix.is_empty() {
            Key::from(rel)
        } else {
            Key::from(format!("{}/{rel}", self.prefix))
        }
    }

    fn rel<'a>(&self, key: &'a str) -> &'a str {
        if self.prefix.is_empty() {
            key
        } else {
            key.strip_prefix(&self.prefix)
                .map(|k| k.trim_start_matches('/'))
                .unwrap_or(key)
        }
    }

    fn err(&self, rel: &str, e: object_store::Error) -> PublishError {
        store_err(&self.url, rel, e)
    }

    /// Every object under the prefix (relative path, size).
    fn list(&self, under: Option<&str>) -> Result<Vec<(String, u64)>, PublishError> {
        let key = under
            .map(|u| self.key(u))
            .or_else(|| (!self.prefix.is_empty()).then(|| Key::from(self.prefix.as_str())));
        let metas: Vec<object_store::ObjectMeta> = self
            .rt
            .block_on(self.store.list(key.as_ref()).try_collect())
            .map_err(|e| self.err("listing", e))?;
        Ok(metas
            .into_iter()
            .map(|m| (self.rel(m.location.as_ref()).to_string(), m.size))
            .collect())
    }

    /// GET one object with `opts`, remembering its ETag (or forgetting it
    /// when the object is gone).
    fn fetch(&self, rel: &str, opts: GetOptions) -> Result<Fetched, PublishError> {
        let r = self.rt.block_on(async {
            let g = self.store.get_opts(&self.key(rel), opts).await?;
            let etag = g.meta.e_tag.clone();
            let bytes = g.bytes().await?;
            Ok::<_, object_store::Error>((bytes, etag))
        });
        match r {
            Ok((bytes, etag)) => {
                self.remember(rel, etag);
                Ok(Fetched::Bytes(bytes.to_vec()))
            }
            Err(object_store::Error::NotModified { .. }) => Ok(Fetched::NotModified),
            Err(object_store::Error::NotFound { .. }) => {
                self.forget(rel);
                Ok(Fetched::Absent)
            }
            Err(e) => Err(self.err(rel, e)),
        }
    }

    /// Fetch one object; `None` when absent.
    fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, PublishError> {
        match self.fetch(rel, GetOptions::default())? {
            Fetched::Bytes(b) => Ok(Some(b)),
            Fetched::NotModified | Fetched::Absent => Ok(None),
        }
    }

    /// Fetch one object only if it changed since it was last seen: `Ok(None)`
    /// when unchanged, `Ok(Some(None))` when absent.
    fn get_if_changed(&self, rel: &str) -> Result<Option<Option<Vec<u8>>>, PublishError> {
        let opts = GetOptions {
            if_none_match: self.etag(rel),
            ..Default::default()
        };
        Ok(match self.fetch(rel, opts)? {
            Fetched::Bytes(b) => Some(Some(b)),
            Fetched::Absent => Some(None),
            Fetched::NotModified => None,
        })
    }

    fn etag(&self, rel: &str) -> Option<String> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(rel)
            .cloned()
    }

    fn remember(&self, rel: &str, etag: Option<String>) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match etag {
            Some(t) => seen.insert(rel.to_string(), t),
            None => seen.remove(rel),
        };
    }

    fn forget(&self, rel: &str) {
        self.remember(rel, None);
    }

    fn put(&self, rel: &str, bytes: Vec<u8>, mode: PutMode) -> Result<(), object_store::Error> {
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        let r = self.rt.block_on(self.store.put_opts(
            &self.key(rel),
            PutPayload::from(bytes),
            opts,
        ))?;
        self.remember(rel, r.e_tag);
        Ok(())
    }

    /// Write `rel` only if it is still what was last pulled (or still absent).
    fn put_conditional(&self, rel: &str, bytes: Vec<u8>) -> Result<(), object_store::Error> {
        let mode = match self.etag(rel) {
            Some(e_tag) => PutMode::Update(UpdateVersion {
                e_tag: Some(e_tag),
                version: None,
            }),
            None => PutMode::Create,
        };
        self.put(rel, bytes, mode)
    }

    /// Bring the objects of `scope` down into `mirror` (a local publish
    /// directory). Files are written atomically, `latest` files last, so the
    /// mirror is a consistent publish directory whenever it is read.
    /// Returns whether anything changed.
    pub fn pull(&self, mirror: &Path, scope: &Scope) -> Result<bool, PublishError> {
        std::fs::create_dir_all(mirror).map_err(io_err(mirror))?;
        let mut changed = false;
        let mut write = |rel: &str, bytes: &[u8]| -> Result<(), PublishError> {
            let p = safe_join(mirror, rel)?;
            if std::fs::read(&p).ok().as_deref() != Some(bytes) {
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
                }
                write_atomic(&p, bytes)?;
                changed = true;
            }
            Ok(())
        };
        match scope {
            Scope::All => {
                let mut objects = self.list(None)?;
                // Pointers last: a reader of the mirror meanwhile sees the
                // previous `latest` with all of its files.
                objects.sort_by_key(|(rel, _)| rel.ends_with(LATEST) || rel == CATALOG);
                for (rel, _) in objects {
                    if let Some(bytes) = self.get(&rel)? {
                        write(&rel, &bytes)?;
                    }
                }
            }
            Scope::Version { source, version } => {
                let dir = format!("{source}/{version}");
                let mut objects = self.list(Some(&dir))?;
                objects.sort_by_key(|(rel, _)| rel.ends_with(LATEST));
                if !objects.iter().any(|(r, _)| r.ends_with(LATEST)) {
                    self.forget(&format!("{dir}/{LATEST}"));
                }
                for (rel, size) in objects {
                    let p = safe_join(mirror, &rel)?;
                    // Snapshot files never change under one name; re-fetch
                    // only what is missing or of another size.
                    let immutable = !rel.ends_with(LATEST);
                    let same_size = std::fs::metadata(&p).is_ok_and(|m| m.len() == size);
                    if immutable && same_size {
                        continue;
                    }
                    if let Some(bytes) = self.get(&rel)? {
                        write(&rel, &bytes)?;
                    }
                }
                match self.get(CATALOG)? {
                    Some(bytes) => write(CATALOG, &bytes)?,
                    None => {
                        let p = mirror.join(CATALOG);
                        let _ = std::fs::remove_file(p);
                    }
                }
            }
            Scope::Latest => {
                let catalog = self.get_if_changed(CATALOG)?;
                if let Some(Some(bytes)) = &catalog {
                    write(CATALOG, bytes)?;
                }
                let cat = super::read_catalog(mirror)?;
                let mut versions: Vec<(String, String)> = cat
                    .snapshots
                    .iter()
                    .map(|e| (e.source.clone(), e.version.clone()))
                    .collect();
                versions.dedup();
                for (source, version) in versions {
                    let rel = format!("{source}/{version}/{LATEST}");
                    let Some(Some(bytes)) = self.get_if_changed(&rel)? else {
                        continue;
                    };
                    let id = String::from_utf8_lossy(&bytes).trim().to_string();
                    // The snapshot's files first, then its pointer.
                    for (name, _) in self.list(Some(&format!("{source}/{version}")))? {
                        let file = name.rsplit('/').next().unwrap_or_default();
                        if file.starts_with(&format!("{id}.")) {
                            let p = safe_join(mirror, &name)?;
                            if !p.is_file() {
                                if let Some(b) = self.get(&name)? {
                                    write(&name, &b)?;
                                }
                            }
                        }
                    }
                    write(&rel, &bytes)?;
                }
            }
        }
        Ok(changed)
    }

    /// Send a local publish into the mirror up: the files of
    /// `<source>/<version>/` that differ from `before` (their hashes after the
    /// pull), then the catalog (merged and retried if another publisher
    /// changed it), then `latest` (conditional: if another publisher moved it
    /// first, this one lost), then removals of what the local publish pruned.
    pub fn push(
        &self,
        mirror: &Path,
        source: &str,
        version: &str,
        base: &Pulled,
    ) -> Result<(), PublishError> {
        let before = &base.files;
        let dir = format!("{source}/{version}");
        let after = hashes(mirror, &dir)?;
        let latest_rel = format!("{dir}/{LATEST}");
        for (rel, sha) in &after {
            if *rel == latest_rel || before.get(rel) == Some(sha) {
                continue;
            }
            let path = mirror.join(rel);
            let bytes = std::fs::read(&path).map_err(io_err(&path))?;
            self.put(rel, bytes, PutMode::Overwrite)
                .map_err(|e| self.err(rel, e))?;
        }
        self.push_catalog(mirror, source, version, &base.catalog)?;
        if after.get(&latest_rel) != before.get(&latest_rel) {
            let path = mirror.join(&latest_rel);
            let bytes = std::fs::read(&path).map_err(io_err(&path))?;
            match self.put_conditional(&latest_rel, bytes) {
                Ok(()) => {}
                Err(object_store::Error::Precondition { .. })
                | Err(object_store::Error::AlreadyExists { .. }) => {
                    let now = self.remote_text(&latest_rel)?.unwrap_or_default();
                    return Err(PublishError::Invalid(format!(
                        "{}/{latest_rel}: another publisher moved it to {now} first; this publish lost (its files are uploaded, nothing points at them)",
                        self.url
                    )));
                }
                Err(e) => return Err(self.err(&latest_rel, e)),
            }
        }
        for rel in before.keys() {
            if !after.contains_key(rel) {
                self.rt
                    .block_on(self.store.delete(&self.key(rel)))
                    .map_err(|e| self.err(rel, e))?;
            }
        }
        Ok(())
    }

    fn remote_text(&self, rel: &str) -> Result<Option<String>, PublishError> {
        Ok(self
            .get(rel)?
            .map(|b| String::from_utf8_lossy(&b).trim().to_string()))
    }

    /// Write the catalog: the bucket's catalog as it is now, with the entries
    /// of (source, version) this publish added since `pulled` added and those
    /// it removed (pruned, replaced) removed — so entries another publisher
    /// wrote meanwhile stay.
    fn push_catalog(
        &self,
        mirror: &Path,
        source: &str,
        version: &str,
        pulled: &super::Catalog,
    ) -> Result<(), PublishError> {
        let mine = super::read_catalog(mirror)?;
        let was: Vec<&super::CatalogEntry> = pulled.of(source, version).collect();
        let now: Vec<&super::CatalogEntry> = mine.of(source, version).collect();
        let added: Vec<super::CatalogEntry> = now
            .iter()
            .filter(|e| !was.contains(e))
            .map(|e| (*e).clone())
            .collect();
        let removed: Vec<&str> = was
            .iter()
            .filter(|e| !now.iter().any(|n| n.snapshot_id == e.snapshot_id))
            .map(|e| e.snapshot_id.as_str())
            .collect();
        for _ in 0..CATALOG_RETRIES {
            let mut cat = match self.get(CATALOG)? {
                Some(bytes) => {
                    serde_json::from_slice(&bytes).map_err(|e| PublishError::Corrupt {
                        path: PathBuf::from(format!("{}/{CATALOG}", self.url)),
                        message: format!("not a valid catalog: {e}"),
                    })?
                }
                None => super::Catalog {
                    schema_version: super::CATALOG_VERSION,
                    snapshots: Vec::new(),
                },
            };
            let ours = |e: &super::CatalogEntry, id: &str| {
                e.source == source && e.version == version && e.snapshot_id == id
            };
            cat.snapshots.retain(|e| {
                !removed.iter().any(|id| ours(e, id))
                    && !added.iter().any(|a| ours(e, &a.snapshot_id))
            });
            cat.snapshots.extend(added.iter().cloned());
            cat.sort();
            let bytes = super::catalog_bytes(&cat)?;
            match self.put_conditional(CATALOG, bytes.clone()) {
                Ok(()) => {
                    write_atomic(&mirror.join(CATALOG), &bytes)?;
                    return Ok(());
                }
                Err(object_store::Error::Precondition { .. })
                | Err(object_store::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(self.err(CATALOG, e)),
            }
        }
        Err(PublishError::Invalid(format!(
            "{}/{CATALOG}: changed by other publishers {CATALOG_RETRIES} times in a row; try again",
            self.url
        )))
    }
}

/// `mirror/rel`, refusing relative paths that would leave the mirror.
fn safe_join(mirror: &Path, rel: &str) -> Result<PathBuf, PublishError> {
    let ok = !rel.is_empty()
        && rel
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.starts_with('.'));
    if !ok {
        return Err(PublishError::Invalid(format!(
            "object `{rel}` cannot name a file of a publish directory"
        )));
    }
    Ok(mirror.join(rel))
}

/// What a publisher pulled, to tell afterwards what its local publish changed.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// sha256 of each file of the version folder.
    pub files: BTreeMap<String, String>,
    /// The catalog.
    pub catalog: super::Catalog,
}

impl Pulled {
    /// Record the mirror's state of `<source>/<version>/` and its catalog.
    pub fn of(mirror: &Path, source: &str, version: &str) -> Result<Pulled, PublishError> {
        Ok(Pulled {
            files: hashes(mirror, &format!("{source}/{version}"))?,
            catalog: super::read_catalog(mirror)?,
        })
    }
}

/// sha256 of each visible file under `mirror/dir`, by path relative to `mirror`.
pub fn hashes(mirror: &Path, dir: &str) -> Result<BTreeMap<String, String>, PublishError> {
    local_files(mirror, dir)?
        .into_iter()
        .map(|(rel, p)| Ok((rel, super::sha256_file(&p)?)))
        .collect()
}

/// Visible files under `mirror/dir`, by path relative to `mirror`.
fn local_files(mirror: &Path, dir: &str) -> Result<BTreeMap<String, PathBuf>, PublishError> {
    let mut out = BTreeMap::new();
    let d = mirror.join(dir);
    let rd = match std::fs::read_dir(&d) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(PublishError::Io { path: d, source: e }),
    };
    for e in rd {
        let e = e.map_err(io_err(&d))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && e.file_type().is_ok_and(|t| t.is_file()) {
            out.insert(format!("{dir}/{name}"), e.path());
        }
    }
    Ok(out)
}

/// Where a publisher keeps its mirror of `url` between runs, so that each
/// publish downloads only what is new in the bucket.
pub fn mirror_dir(url: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let tag = crate::util::sha256_hex(url.trim_end_matches('/').as_bytes());
    base.join("docsnap").join("s3").join(&tag[..16])
}

/// Publish `artifact_dir` to the bucket location `url`.
pub fn publish(
    artifact_dir: &Path,
    url: &str,
    opts: &super::PublishOptions,
) -> Result<super::PublishReport, PublishError> {
    let remote = RemoteStore::open(url)?;
    let m = crate::artifact::verify(artifact_dir)?;
    let mirror = mirror_dir(url);
    let scope = Scope::Version {
        source: m.source.clone(),
        version: m.version.clone(),
    };
    remote.pull(&mirror, &scope)?;
    let base = Pulled::of(&mirror, &m.source, &m.version)?;
    let report = super::publish(artifact_dir, &mirror, opts)?;
    remote.push(&mirror, &m.source, &m.version, &base)?;
    Ok(report)
}

/// Verify every object under the bucket location `url` (downloaded whole
/// into a temporary directory, so nothing cached can hide a damaged object).
pub fn verify(url: &str) -> Result<super::VerifyReport, PublishError> {
    let remote = RemoteStore::open(url)?;
    let tmp = super::TempDir::new("verify-s3")?;
    remote.pull(tmp.path(), &Scope::All)?;
    super::verify_path(tmp.path())
}
