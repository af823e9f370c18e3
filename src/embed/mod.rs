//! Dense retrieval with static token vectors (the Model2Vec method).
//!
//! A sentence-transformers BERT model is distilled once ([`distill`]) into one
//! vector per vocabulary token. Embedding a text is then tokenization plus a
//! sum of rows and a normalization — microseconds, no transformer at query or
//! build time, and nothing but a tokenizer and a 15 MB table to ship.
//!
//! The pieces: [`distill::distill`] makes a model directory, [`StaticModel`]
//! loads it and embeds text, [`store`] keeps an artifact's passage vectors and
//! searches them.

#![warn(missing_docs)]

pub mod adapter;
pub mod asked;
pub mod contextual;
pub mod distill;
pub mod query_cache;
pub mod store;

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;

pub use contextual::ContextualModel;
pub use distill::{distill, DistillOptions, Weighting};
pub use query_cache::{QueryCache, QueryCacheStats};
pub use store::{write_vectors, VectorStore};

/// The `method` recorded in `model.json`; a directory made any other way is
/// refused rather than silently misread.
pub const METHOD: &str = "model2vec-static";

/// File names inside a static model directory, shared by writer and reader.
pub const MODEL_JSON: &str = "model.json";
/// See [`MODEL_JSON`].
pub const VECTORS_F16: &str = "vectors.f16";
/// See [`MODEL_JSON`].
pub const TOKENIZER_JSON: &str = "tokenizer.json";

/// Tokens of a text that count by default. Static vectors have no context
/// window, but beyond a few hundred tokens an average stops moving, and the
/// cap bounds the cost of embedding a very long passage.
pub const DEFAULT_MAX_TOKENS: usize = 512;

/// What can go wrong making or reading embedding files. Every variant names
/// the file (or the step) so a message alone says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file exists but its content is not what was expected.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file concerned.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The teacher model could not be read (its own message names the file).
    #[error(transparent)]
    Bert(#[from] docsnap_bert::BertError),
}

/// An artifact's vector file that does not read is a damaged artifact:
/// the same path, the reason alone (its text would name the path twice).
impl From<EmbedError> for crate::artifact::ArtifactError {
    fn from(e: EmbedError) -> Self {
        use crate::artifact::ArtifactError;
        match e {
            EmbedError::Io { path, source } => ArtifactError::Io { path, source },
            EmbedError::Invalid { path, reason } => ArtifactError::Corrupt {
                path,
                message: reason,
            },
            EmbedError::Bert(e) => ArtifactError::Corrupt {
                path: PathBuf::new(),
                message: e.to_string(),
            },
        }
    }
}

impl EmbedError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        EmbedError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn invalid(path: &Path, reason: impl Into<String>) -> Self {
        EmbedError::Invalid {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// The content of `model.json`: enough to tell which teacher and which exact
/// vectors produced an artifact's embeddings, so a server can refuse to mix
/// query vectors from one model with passage vectors from another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticModelInfo {
    /// Human-readable name, e.g. `static-all-minilm-l6-v2-256`.
    pub name: String,
    /// Always [`METHOD`].
    pub method: String,
    /// sha256 of the teacher's `model.safetensors`.
    pub teacher_sha256: String,
    /// Components per vector.
    pub dims: usize,
    /// Rows of `vectors.f16` (= the tokenizer's vocabulary size).
    pub vocab_size: usize,
    /// How token vectors were weighted (see [`Weighting::name`]).
    pub weighting: String,
    /// sha256 of `vectors.f16`.
    pub vectors_sha256: String,
    /// docsnap version that distilled it.
    pub tool_version: String,
}

/// What identifies a static model for compatibility checks: two models with
/// equal identities embed every text identically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The model's name (informative; the hashes decide).
    pub name: String,
    /// sha256 of the teacher's weights.
    pub teacher_sha256: String,
    /// sha256 of the token vectors.
    pub vectors_sha256: String,
    /// Components per vector.
    pub dims: usize,
}

impl std::fmt::Display for ModelIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} dims, vectors {}, teacher {})",
            self.name,
            self.dims,
            short(&self.vectors_sha256),
            short(&self.teacher_sha256)
        )
    }
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// A loaded static model: tokenizer plus one f32 vector per token id.
///
/// Vectors are widened from f16 once at load so the per-query loop is a plain
/// f32 add of a few dozen rows.
pub struct StaticModel {
    info: StaticModelInfo,
    tokenizer: Tokenizer,
    /// vocab_size × dims, row = token id.
    vectors: Vec<f32>,
    max_tokens: usize,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("info", &self.info)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl StaticModel {
    /// Loads a directory made by [`distill()`], checking the vectors' size and
    /// sha256 against `model.json`, so a corrupt or mismatched copy is an
    /// error here rather than silently wrong rankings later.
    pub fn load(dir: &Path) -> Result<StaticModel, EmbedError> {
        let json_path = dir.join(MODEL_JSON);
        let text = fs::read_to_string(&json_path).map_err(|e| EmbedError::io(&json_path, e))?;
        let info: StaticModelInfo = serde_json::from_str(&text).map_err(|e| {
            EmbedError::invalid(&json_path, format!("not a static model card: {e}"))
        })?;
        if info.method != METHOD {
            return Err(EmbedError::invalid(
                &json_path,
                format!("method `{}`, expected `{METHOD}`", info.method),
            ));
        }
        if info.dims == 0 || info.vocab_size == 0 {
            return Err(EmbedError::invalid(
                &json_path,
                "dims and vocab_size must be > 0",
            ));
        }

        let vec_path = dir.join(VECTORS_F16);
        let bytes = fs::read(&vec_path).map_err(|e| EmbedError::io(&vec_path, e))?;
        let expected = info.vocab_size * info.dims * 2;
        if bytes.len() != expected {
            return Err(EmbedError::invalid(
                &vec_path,
                format!(
                    "{} bytes, but model.json says {} tokens × {} dims × 2 = {expected}",
                    bytes.len(),
                    info.vocab_size,
                    info.dims
                ),
            ));
        }
        let sha = crate::util::sha256_hex(&bytes);
        if sha != info.vectors_sha256 {
            return Err(EmbedError::invalid(
                &vec_path,
                format!(
                    "sha256 {sha} differs from model.json's vectors_sha256 {}",
                    info.vectors_sha256
                ),
            ));
        }
        let vectors: Vec<f32> = bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();

        let tok_path = dir.join(TOKENIZER_JSON);
        let tokenizer = load_tokenizer(&tok_path)?;
        let tv = tokenizer.get_vocab_size(true);
        if tv > info.vocab_size {
            return Err(EmbedError::invalid(
                &tok_path,
                format!(
                    "tokenizer has {tv} tokens but the vectors only {}",
                    info.vocab_size
                ),
            ));
        }
        Ok(StaticModel {
            info,
            tokenizer,
            vectors,
            max_tokens: DEFAULT_MAX_TOKENS,
        })
    }

    /// Caps the tokens of a text that count (default [`DEFAULT_MAX_TOKENS`]);
    /// part of how an artifact's vectors were made, so record it with them.
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = max_tokens.max(1);
        self
    }

    /// The token cap in force.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Who this model is, for recording next to vectors it produced.
    pub fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            name: self.info.name.clone(),
            teacher_sha256: self.info.teacher_sha256.clone(),
            vectors_sha256: self.info.vectors_sha256.clone(),
            dims: self.info.dims,
        }
    }

    /// The whole `model.json`.
    pub fn info(&self) -> &StaticModelInfo {
        &self.info
    }

    /// Components per vector.
    pub fn dims(&self) -> usize {
        self.info.dims
    }

    /// A unit vector for `text`: the normalized sum of its tokens' vectors
    /// (the sum has the mean's direction and saves a division). A text with
    /// no known token — empty, or only skipped special tokens — gives the zero
    /// vector, which matches nothing.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let dims = self.info.dims;
        let mut out = vec![0f32; dims];
        let Ok(enc) = self.tokenizer.encode_fast(text, false) else {
            return out;
        };
        for &id in enc.get_ids().iter().take(self.max_tokens) {
            let id = id as usize;
            if id >= self.info.vocab_size {
                continue;
            }
            let row = &self.vectors[id * dims..(id + 1) * dims];
            for (o, v) in out.iter_mut().zip(row) {
                *o += v;
            }
        }
        let norm = out.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            let inv = 1.0 / norm;
            out.iter_mut().for_each(|v| *v *= inv);
        } else {
            out.iter_mut().for_each(|v| *v = 0.0);
        }
        out
    }

    /// [`StaticModel::embed`] for many texts, spread over the machine's
    /// cores (an artifact has thousands of passages; order is kept).
    pub fn embed_many(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(texts.len().div_ceil(64))
            .max(1);
        if threads == 1 {
            return texts.iter().map(|t| self.embed(t)).collect();
        }
        let chunk = texts.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = texts
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().map(|t| self.embed(t)).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("embedding thread panicked"))
                .collect()
        })
    }
}

/// Loads a tokenizer with padding and truncation switched off: the file from
/// sentence-transformers pads every input to 128 ids and cuts there, which is
/// right for the transformer and wrong (slow, lossy) for summing vectors.
pub(crate) fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    if !path.is_file() {
        return Err(EmbedError::invalid(path, "missing tokenizer file"));
    }
    let mut tok = Tokenizer::from_file(path)
        .map_err(|e| EmbedError::invalid(path, format!("cannot read tokenizer: {e}")))?;
    tok.with_padding(None);
    tok.with_truncation(None)
        .map_err(|e| EmbedError::invalid(path, format!("cannot disable truncation: {e}")))?;
    Ok(tok)
}

/// File name of an artifact's section vectors.
pub const VECTORS_FILE: &str = "vectors.i8";

/// The text a section is embedded from: page title, the headings down to it,
/// then its text. Headings carry much of what a section is about, and a
/// member section's own text often never names its class.
pub fn section_text(page: &crate::model::Page, s: &crate::model::Section) -> String {
    let mut t = String::with_capacity(page.title.len() + s.text.len() + 64);
    t.push_str(&page.title);
    for h in s.heading_path.iter().skip(1) {
        t.push_str(" \n ");
        t.push_str(h);
    }
    t.push_str(" \n ");
    t.push_str(&s.text);
    t
}

/// File name of the keys of an artifact's page vectors: per row, the sha256
/// of the text it embeds, so the next build reuses rows whose text is unchanged.
pub const VECTOR_KEYS_FILE: &str = "vector_keys.txt";

/// A file of an artifact: its name and bytes.
pub type ArtifactFile = (&'static str, Vec<u8>);

/// The model a build embeds with and a server embeds queries with: static
/// token vectors (one vector per section, microseconds each) or the
/// transformer itself (one vector per page, milliseconds each).
#[derive(Debug)]
pub enum Embedder {
    /// A directory made by [`distill()`] (both boxed: each holds a
    /// tokenizer of a few kilobytes, and an embedder is made once per process).
    Static(Box<StaticModel>),
    /// A sentence-transformers BERT folder.
    Contextual(Box<ContextualModel>),
}

impl Embedder {
    /// Loads `dir`: a static model when it holds `model.json`, else a
    /// sentence-transformers BERT folder.
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        if dir.join(MODEL_JSON).is_file() {
            Ok(Embedder::Static(Box::new(StaticModel::load(dir)?)))
        } else if dir.join("config.json").is_file() {
            Ok(Embedder::Contextual(Box::new(ContextualModel::load(dir)?)))
        } else {
            Err(EmbedError::invalid(
                dir,
                "neither a static model (model.json) nor a sentence-transformers BERT folder (config.json)",
            ))
        }
    }

    /// A unit vector for `text` (the zero vector when nothing in it is known).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        match self {
            Embedder::Static(m) => m.embed(text),
            Embedder::Contextual(m) => m.embed(text),
        }
    }

    /// A question's unit vector, from the transformer's memory of recent
    /// questions when it was asked before (see [`QueryCache`]); the static
    /// model computes it, which costs less than the lookup.
    pub fn embed_query(&self, text: &str) -> std::sync::Arc<[f32]> {
        match self {
            Embedder::Static(m) => m.embed(text).into(),
            Embedder::Contextual(m) => m.embed_query(text),
        }
    }

    /// What the transformer's memory of questions has done (`None` for the
    /// static model, which keeps none).
    pub fn query_cache_stats(&self) -> Option<QueryCacheStats> {
        match self {
            Embedder::Static(_) => None,
            Embedder::Contextual(m) => Some(m.query_cache_stats()),
        }
    }

    /// This embedder keeping at most `capacity` question vectors (0: none;
    /// the transformer keeps 4,096 unless told).
    pub fn with_query_cache(self, capacity: usize) -> Embedder {
        match self {
            Embedder::Contextual(mut m) => {
                m.set_query_cache(capacity);
                Embedder::Contextual(m)
            }
            other => other,
        }
    }

    /// Who this model is, for recording next to vectors it produced.
    pub fn identity(&self) -> ModelIdentity {
        match self {
            Embedder::Static(m) => m.identity(),
            Embedder::Contextual(m) => m.identity(),
        }
    }

    /// What a row of this model's vector file stands for.
    pub fn unit(&self) -> crate::model::VectorUnit {
        match self {
            Embedder::Static(_) => crate::model::VectorUnit::Section,
            Embedder::Contextual(_) => crate::model::VectorUnit::Page,
        }
    }

    /// The manifest record of vectors made by this model.
    pub fn info(&self) -> crate::model::EmbeddingInfo {
        let id = self.identity();
        crate::model::EmbeddingInfo {
            model: id.name,
            teacher_sha256: id.teacher_sha256,
            vectors_sha256: id.vectors_sha256,
            dims: id.dims as u32,
            file: VECTORS_FILE.to_string(),
            unit: self.unit(),
        }
    }

    /// The files an artifact's vectors are written as: [`VECTORS_FILE`],
    /// and for page vectors their [`VECTOR_KEYS_FILE`]. `previous` is the
    /// previous snapshot of the same version when this model made its
    /// vectors: rows of unchanged texts are taken from it, not embedded again.
    /// `early` holds page rows this build embedded already (while the crawl
    /// ran, see `build`), by key. Returns the files and how many texts were
    /// embedded, those included (a page whose final text differs from its
    /// early one is embedded twice, and counted twice).
    pub fn embed_artifact(
        &self,
        pages: &[crate::model::Page],
        sections: &[crate::model::Section],
        previous: Option<(&Path, &crate::model::Manifest)>,
        early: std::collections::HashMap<String, Vec<f32>>,
    ) -> Result<(Vec<ArtifactFile>, usize), EmbedError> {
        let vectors = Path::new(VECTORS_FILE);
        match self {
            Embedder::Static(m) => {
                let page_of = crate::artifact::page_of(pages, sections);
                let texts: Vec<String> = sections
                    .iter()
                    .zip(&page_of)
                    .map(|(s, &p)| section_text(&pages[p], s))
                    .collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let rows = m.embed_many(&refs);
                let bytes = store::encode_vectors(vectors, m.dims(), &rows)?;
                Ok((vec![(VECTORS_FILE, bytes)], rows.len()))
            }
            Embedder::Contextual(m) => {
                let mut reuse = previous
                    .map(|p| previous_rows(p, VECTORS_FILE, VECTOR_KEYS_FILE))
                    .unwrap_or_default();
                // Early rows are texts the previous snapshot lacked (the
                // build skips those it has): each was a pass of the model.
                let early_passes = early.len();
                reuse.extend(early);
                let (rows, keys, embedded) = m.embed_pages(pages, sections, &reuse);
                let embedded = embedded + early_passes;
                let bytes = store::encode_vectors(vectors, m.dims(), &rows)?;
                let keys = keys.join("\n").into_bytes();
                Ok((
                    vec![(VECTORS_FILE, bytes), (VECTOR_KEYS_FILE, keys)],
                    embedded,
                ))
            }
        }
    }
}

/// The rows of a previous snapshot's vector file `vectors` by their keys,
/// one a line in the file `keys` (for page vectors the sha256 of their
/// text; for questions asked, `asked::row_keys`). Anything unreadable, or
/// keys and rows that disagree in number, gives no rows: everything is
/// embedded again, which costs time but never correctness.
pub(crate) fn previous_rows(
    (dir, manifest): (&Path, &crate::model::Manifest),
    vectors: &str,
    keys: &str,
) -> std::collections::HashMap<String, Vec<f32>> {
    let read = |name: &str| crate::artifact::read_verified(dir, manifest, name).ok();
    let (Some(v), Some(k)) = (read(vectors), read(keys)) else {
        return Default::default();
    };
    let Ok(store) = store::VectorStore::from_bytes(&dir.join(vectors), &v) else {
        return Default::default();
    };
    let keys = String::from_utf8_lossy(&k);
    let keys: Vec<&str> = keys.split('\n').collect();
    if keys.len() != store.len() {
        return Default::default();
    }
    keys.into_iter()
        .enumerate()
        .map(|(i, key)| (key.to_string(), store.row(i)))
        .collect()
}
