//! The transformer itself as the embedder: a sentence-transformers BERT
//! folder run by candle on every text, mean-pooled and normalized.
//!
//! Far costlier than the static vectors (milliseconds per text instead of
//! microseconds), so it embeds one vector per *page* rather than per section,
//! from the part of a page that says what it is about (title, description,
//! headings, opening text). Measured in BENCHMARKS.md: it is the setting that
//! helps questions in the user's own words, at about 10 ms per query.

use std::fs;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::Tokenizer;

use super::{load_tokenizer, EmbedError, ModelIdentity, TOKENIZER_JSON};

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
    /// The network.
    pub model: BertModel,
    /// Its config.json.
    pub config: Config,
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
    pub fn load(dir: &Path) -> Result<BertFolder, EmbedError> {
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
        let config_text =
            fs::read_to_string(&config_path).map_err(|e| EmbedError::io(&config_path, e))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| EmbedError::invalid(&config_path, format!("not a BERT config: {e}")))?;
        check_pooling(dir, config.hidden_size)?;
        let tokenizer = load_tokenizer(&tok_path)?;
        let tok_bytes = fs::read(&tok_path).map_err(|e| EmbedError::io(&tok_path, e))?;
        let weights = fs::read(&weights_path).map_err(|e| EmbedError::io(&weights_path, e))?;
        let weights_sha256 = crate::util::sha256_hex(&weights);
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(
            |source| EmbedError::Model {
                what: format!("reading {}", weights_path.display()),
                source,
            },
        )?;
        let model = BertModel::load(vb, &config).map_err(|source| EmbedError::Model {
            what: format!("loading BERT weights from {}", weights_path.display()),
            source,
        })?;
        Ok(BertFolder {
            model,
            config,
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
    /// Loads a sentence-transformers BERT folder (see [`BertFolder::load`]).
    pub fn load(dir: &Path) -> Result<ContextualModel, EmbedError> {
        let bert = BertFolder::load(dir)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bert".into());
        let recipe_sha256 =
            crate::util::sha256_hex(format!("{}\n{RECIPE}", bert.tokenizer_sha256).as_bytes());
        Ok(ContextualModel {
            bert,
            name,
            recipe_sha256,
        })
    }

    /// Components per vector (the model's hidden size).
    pub fn dims(&self) -> usize {
        self.bert.config.hidden_size
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

    fn try_embed(&self, text: &str) -> Result<Vec<f32>, String> {
        let enc = self
            .bert
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| e.to_string())?;
        let mut ids = enc.get_ids().to_vec();
        if ids.len() > CONTEXT_TOKENS {
            // Keep the closing [SEP]: the model was trained on framed input.
            let sep = *ids.last().expect("non-empty");
            ids.truncate(CONTEXT_TOKENS - 1);
            ids.push(sep);
        }
        let n = ids.len();
        let run = || -> candle_core::Result<Vec<f32>> {
            let input = Tensor::from_vec(ids, (1, n), &Device::Cpu)?;
            let types = input.zeros_like()?;
            let hidden = self.bert.model.forward(&input, &types, None)?;
            hidden.mean(1)?.flatten_all()?.to_vec1::<f32>()
        };
        let mut v = run().map_err(|e| e.to_string())?;
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
        let mut embedded = 0usize;
        let started = std::time::Instant::now();
        let rows = texts
            .iter()
            .zip(&keys)
            .enumerate()
            .map(|(i, (t, k))| match reuse.get(k) {
                Some(v) if v.len() == self.dims() => v.clone(),
                _ => {
                    embedded += 1;
                    if embedded.is_multiple_of(100) {
                        tracing::info!(
                            "embed: {}/{} pages ({:.0?})",
                            i + 1,
                            pages.len(),
                            started.elapsed()
                        );
                    }
                    self.embed(t)
                }
            })
            .collect();
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
