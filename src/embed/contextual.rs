//! The transformer itself as the embedder: a sentence-transformers BERT
//! folder run by `docsnap-bert` (this workspace's forward pass) on every
//! text, mean-pooled and normalized.
//!
//! Far costlier than the static vectors (milliseconds per text instead of
//! microseconds), so it embeds one vector per *page* rather than per section,
//! from the part of a page that says what it is about (title, description,
//! headings, opening text). Measured in BENCHMARKS.md: it is the setting that
//! helps questions in the user's own words, at a few milliseconds per query.

use std::fs;
use std::path::Path;

use docsnap_bert::Bert;
pub use docsnap_bert::Precision;
use tokenizers::Tokenizer;

use super::{load_tokenizer, EmbedError, ModelIdentity, QueryCache, TOKENIZER_JSON};

/// Question vectors a model keeps unless told otherwise (`serve
/// --query-cache`): 4,096 of 384 f32 are ~6 MB, beside the model's ~60 MB.
pub const DEFAULT_QUERY_CACHE: usize = 4096;

/// Tokens of a text the transformer reads, [CLS] and [SEP] included.
/// Attention is quadratic in it; past the opening of a page the rest adds
/// cost more than meaning (BENCHMARKS.md, session 24).
pub const CONTEXT_TOKENS: usize = 256;

/// Characters of a page's opening text in its embedded text.
const OPENING_CHARS: usize = 600;

/// Names the recipe that turns a page into text and text into a vector;
/// part of the model's identity, so vectors made another way are never
/// mixed with this one's query vectors. Change it with the recipe.
const RECIPE: &str = "page:title+desc+headings+opening600;mean-pool;max256";

/// A sentence-transformers BERT model, loaded: tokenizer, weights and the
/// sha256 of the weights for its identity.
pub struct BertFolder {
    /// The network (its config.json in `bert.config`).
    pub bert: Bert,
    /// The tokenizer, padding and truncation off.
    pub tokenizer: Tokenizer,
    /// sha256 of `model.safetensors`.
    pub weights_sha256: String,
    /// sha256 of `tokenizer.json`.
    pub tokenizer_sha256: String,
}

impl BertFolder {
    /// Loads `dir` (`config.json`, `model.safetensors`, `tokenizer.json`, and
    /// `1_Pooling/config.json` when present), refusing anything that is not a
    /// mean-pooled BERT with a message naming the file.
    pub fn load(dir: &Path, precision: Precision) -> Result<BertFolder, EmbedError> {
        let config_path = dir.join("config.json");
        let weights_path = dir.join("model.safetensors");
        let tok_path = dir.join(TOKENIZER_JSON);
        for p in [&config_path, &weights_path, &tok_path] {
            if !p.is_file() {
                return Err(EmbedError::invalid(
                    p,
                    "missing (expected a sentence-transformers BERT directory)",
                ));
            }
        }
        // The pooling is checked before the weights are read: a model
        // docsnap cannot use is refused without loading 90 MB first.
        let config = docsnap_bert::read_config(dir)?;
        check_pooling(dir, config.hidden_size)?;
        // The weights' hash (their identity) is taken on a second thread
        // while they load: of start-up's longest step it is a third. Hashed
        // as a stream, so the file is never held whole.
        let (bert, weights_sha256) = std::thread::scope(|scope| {
            let hash =
                scope.spawn(|| fs::File::open(&weights_path).and_then(crate::util::sha256_reader));
            let bert = docsnap_bert::load_folder(dir, config, precision);
            let hash = hash
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("hashing the weights panicked")));
            (bert, hash)
        });
        let bert = bert?;
        let weights_sha256 = weights_sha256.map_err(|e| EmbedError::io(&weights_path, e))?;
        let tokenizer = load_tokenizer(&tok_path)?;
        // Every id the tokenizer can produce must have a row of weights.
        let vocab = bert.config.vocab_size;
        if tokenizer.get_vocab_size(true) > vocab {
            return Err(EmbedError::invalid(
                &tok_path,
                format!(
                    "{} tokens but config.json's vocab_size is {vocab}",
                    tokenizer.get_vocab_size(true)
                ),
            ));
        }
        let tok_bytes = fs::read(&tok_path).map_err(|e| EmbedError::io(&tok_path, e))?;
        Ok(BertFolder {
            bert,
            tokenizer,
            weights_sha256,
            tokenizer_sha256: crate::util::sha256_hex(&tok_bytes),
        })
    }
}

/// Refuses a model whose sentence-transformers pooling is not mean pooling:
/// docsnap mean-pools, and vectors pooled otherwise would not be the
/// model's sentence embedding.
pub(crate) fn check_pooling(bert_dir: &Path, hidden: usize) -> Result<(), EmbedError> {
    let path = bert_dir.join("1_Pooling").join("config.json");
    if !path.is_file() {
        return Ok(()); // Plain BERT directory: mean pooling is our choice.
    }
    let text = fs::read_to_string(&path).map_err(|e| EmbedError::io(&path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| EmbedError::invalid(&path, format!("not JSON: {e}")))?;
    if v.get("pooling_mode_mean_tokens").and_then(|m| m.as_bool()) != Some(true) {
        return Err(EmbedError::invalid(
            &path,
            "the model does not use mean pooling (pooling_mode_mean_tokens is not true)",
        ));
    }
    if let Some(d) = v.get("word_embedding_dimension").and_then(|d| d.as_u64()) {
        if d as usize != hidden {
            return Err(EmbedError::invalid(
                &path,
                format!(
                    "word_embedding_dimension {d} differs from config.json's hidden_size {hidden}"
                ),
            ));
        }
    }
    Ok(())
}

/// A transformer that embeds whole texts in context (see the module doc).
pub struct ContextualModel {
    bert: BertFolder,
    name: String,
    /// sha256 of the tokenizer and [`RECIPE`]: with the weights' sha256,
    /// what decides every vector this model makes.
    recipe_sha256: String,
    /// Vectors of recent questions.
    queries: QueryCache,
}

impl std::fmt::Debug for ContextualModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextualModel")
            .field("name", &self.name)
            .field("weights_sha256", &self.bert.weights_sha256)
            .finish_non_exhaustive()
    }
}

impl ContextualModel {
    /// Loads a sentence-transformers BERT folder (see [`BertFolder::load`])
    /// to run in 8 bits: as good as f32 on every family of the dev set and
    /// a quarter of the weights to read per question (BENCHMARKS.md).
    pub fn load(dir: &Path) -> Result<ContextualModel, EmbedError> {
        Self::load_with(dir, Precision::Int8)
    }

    /// [`ContextualModel::load`] in the given precision, which is part of
    /// the model's identity (vectors of one precision are never queried
    /// with the other's).
    pub fn load_with(dir: &Path, precision: Precision) -> Result<ContextualModel, EmbedError> {
        let bert = BertFolder::load(dir, precision)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bert".into());
        let recipe_sha256 = crate::util::sha256_hex(
            format!("{}\n{RECIPE};{precision:?}", bert.tokenizer_sha256).as_bytes(),
        );
        Ok(ContextualModel {
            bert,
            name,
            recipe_sha256,
            queries: QueryCache::new(DEFAULT_QUERY_CACHE),
        })
    }

    /// Components per vector (the model's hidden size).
    pub fn dims(&self) -> usize {
        self.bert.bert.config.hidden_size
    }

    /// Who this model is, for recording next to vectors it produced.
    pub fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            name: self.name.clone(),
            teacher_sha256: self.bert.weights_sha256.clone(),
            vectors_sha256: self.recipe_sha256.clone(),
            dims: self.dims(),
        }
    }

    /// A unit vector for `text`: the transformer's last hidden states over
    /// the first [`CONTEXT_TOKENS`] tokens, averaged and normalized. A text
    /// the tokenizer or the model cannot take gives the zero vector, which
    /// matches nothing (a query is then answered lexically).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.try_embed(text)
            .unwrap_or_else(|_| vec![0.0; self.dims()])
    }

    /// What the memory of questions has done so far.
    pub fn query_cache_stats(&self) -> super::QueryCacheStats {
        self.queries.stats()
    }

    /// Keeps at most `capacity` question vectors from now on (0: none).
    pub fn set_query_cache(&mut self, capacity: usize) {
        self.queries = QueryCache::new(capacity);
    }

    /// [`ContextualModel::embed`] for a question, kept for when it is
    /// asked again.
    pub fn embed_query(&self, text: &str) -> std::sync::Arc<[f32]> {
        self.queries.get_or_compute(text, |t| self.embed(t))
    }

    fn try_embed(&self, text: &str) -> Result<Vec<f32>, String> {
        let enc = self
            .bert
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| e.to_string())?;
        let mut ids = enc.get_ids().to_vec();
        let max = CONTEXT_TOKENS.min(self.bert.bert.config.max_position_embeddings);
        if ids.len() > max && max > 1 {
            // Keep the closing [SEP]: the model was trained on framed input.
            let sep = *ids.last().expect("non-empty");
            ids.truncate(max - 1);
            ids.push(sep);
        }
        let mut v = self
            .bert
            .bert
            .mean_pooled(&[&ids])
            .pop()
            .ok_or("no output")?;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return Err("zero or non-finite embedding".into());
        }
        v.iter_mut().for_each(|x| *x /= norm);
        Ok(v)
    }

    /// Embeds every page of an artifact (row = page number), reusing the
    /// vector of any page whose text `reuse` already holds: a rebuild where
    /// few pages changed runs the transformer on those few only.
    pub fn embed_pages(
        &self,
        pages: &[crate::model::Page],
        sections: &[crate::model::Section],
        reuse: &std::collections::HashMap<String, Vec<f32>>,
    ) -> (Vec<Vec<f32>>, Vec<String>, usize) {
        let texts = page_texts(pages, sections);
        let keys: Vec<String> = texts
            .iter()
            .map(|t| crate::util::sha256_hex(t.as_bytes()))
            .collect();
        let embedded = std::sync::atomic::AtomicUsize::new(0);
        let started = std::time::Instant::now();
        // Pages on all cores (each page's products also share out their
        // columns; rayon keeps the two levels on one pool of threads).
        use rayon::prelude::*;
        let rows: Vec<Vec<f32>> = texts
            .par_iter()
            .zip(&keys)
            .map(|(t, k)| match reuse.get(k) {
                Some(v) if v.len() == self.dims() => v.clone(),
                _ => {
                    let v = self.embed(t);
                    let done = embedded.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if done.is_multiple_of(100) {
                        tracing::info!("embed: {done} pages ({:.0?})", started.elapsed());
                    }
                    v
                }
            })
            .collect();
        let embedded = embedded.into_inner();
        (rows, keys, embedded)
    }
}

/// The text each page is embedded from: its title, description, the
/// headings of its sections (their own words for what the page covers) and
/// the opening of its text.
pub fn page_texts(pages: &[crate::model::Page], sections: &[crate::model::Section]) -> Vec<String> {
    let page_of = crate::artifact::page_of(pages, sections);
    let mut texts: Vec<String> = pages
        .iter()
        .map(|p| {
            let mut t = p.title.clone();
            if !p.description.is_empty() {
                t.push('\n');
                t.push_str(&p.description);
            }
            t
        })
        .collect();
    let mut headings: Vec<Vec<&str>> = vec![Vec::new(); pages.len()];
    let mut opening: Vec<String> = vec![String::new(); pages.len()];
    for (s, &p) in sections.iter().zip(&page_of) {
        if let Some(h) = s.heading_path.last() {
            if s.heading_path.len() > 1 && s.part == 0 && !headings[p].contains(&h.as_str()) {
                headings[p].push(h);
            }
        }
        let o = &mut opening[p];
        if o.len() < OPENING_CHARS {
            let body = crate::model::strip_heading_line(&s.text);
            let room = OPENING_CHARS - o.len();
            let cut = body
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .take_while(|&e| e <= room)
                .last()
                .unwrap_or(0);
            if !o.is_empty() {
                o.push(' ');
            }
            o.push_str(&body[..cut]);
        }
    }
    for ((t, h), o) in texts.iter_mut().zip(headings).zip(opening) {
        if !h.is_empty() {
            t.push('\n');
            t.push_str(&h.join("; "));
        }
        if !o.is_empty() {
            t.push('\n');
            t.push_str(&o);
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder whose pooling docsnap cannot use is refused, naming the
    /// pooling file, before its weights are read: here they are not even
    /// safetensors, and the error is still about the pooling.
    #[test]
    fn pooling_is_refused_before_the_weights_load() {
        let dir = tempfile::tempdir().unwrap();
        let config = r#"{"vocab_size":10,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":4}"#;
        fs::write(dir.path().join("config.json"), config).unwrap();
        fs::write(dir.path().join("model.safetensors"), b"not safetensors").unwrap();
        fs::write(dir.path().join(TOKENIZER_JSON), b"{}").unwrap();
        fs::create_dir(dir.path().join("1_Pooling")).unwrap();
        let pooling = dir.path().join("1_Pooling").join("config.json");
        let load = || match BertFolder::load(dir.path(), Precision::Int8) {
            Ok(_) => panic!("a folder with unusable pooling or weights loaded"),
            Err(e) => e.to_string(),
        };
        fs::write(&pooling, r#"{"pooling_mode_cls_token":true}"#).unwrap();
        let e = load();
        assert!(e.contains("1_Pooling") && e.contains("mean pooling"), "{e}");
        fs::write(
            &pooling,
            r#"{"pooling_mode_mean_tokens":true,"word_embedding_dimension":16}"#,
        )
        .unwrap();
        let e = load();
        assert!(e.contains("word_embedding_dimension 16"), "{e}");
        // With the pooling right, the weights are what is refused.
        fs::write(&pooling, r#"{"pooling_mode_mean_tokens":true}"#).unwrap();
        let e = load();
        assert!(e.contains("model.safetensors"), "{e}");
    }
}
