//! The transformer itself as the embedder: a sentence-transformers BERT
//! folder run by `docsnap-bert` (this workspace's forward pass) on every
//! text, pooled as the folder says (mean or [CLS]) and normalized.
//!
//! A folder is read the way sentence-transformers reads it
//! ([`SentenceConfig`]): its pooling, the prompts it puts before queries
//! and documents (retrieval models such as the BGE and Arctic families
//! expect an instruction before a query), and its sequence length. A module
//! docsnap does not run (a `Dense` projection, say) is refused by name
//! rather than silently skipped: the vectors would not be the model's.
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

/// Tokens of a question the transformer reads (questions asked of pages at
/// build time included, so both sides agree). Every question in the
/// evaluation samples and the questions files is 50 tokens or fewer; a
/// 500-character query of pasted noise reaches ~280, and the pass's cost
/// grows with its length (attention with its square): at 128 such a query
/// costs what a page does at most, not twice that. The query's words all
/// still reach the lexical side.
pub const QUERY_TOKENS: usize = 128;

/// Characters of a page's opening text in its embedded text.
const OPENING_CHARS: usize = 600;

/// Names the recipe that turns a page into text and text into a vector
/// (the forward pass's arithmetic included); with the folder's pooling,
/// length and prompts ([`SentenceConfig::recipe`]) part of the model's
/// identity, so vectors made another way are never mixed with this one's
/// query vectors. Change it with the recipe.
const RECIPE: &str = "page:title+desc+headings+opening600";

/// What a sentence-transformers folder says about turning text into its
/// sentence vector, beyond the BERT itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SentenceConfig {
    /// `1_Pooling/config.json` (mean when the folder has none).
    pub pooling: docsnap_bert::Pooling,
    /// Put before every question (`prompts.query` of
    /// `config_sentence_transformers.json`, else its default prompt).
    pub query_prompt: String,
    /// Put before every page's text (`prompts.document`, `passage` or
    /// `corpus`, else the default prompt).
    pub document_prompt: String,
    /// Tokens read of a text, [CLS] and [SEP] included: the least of
    /// [`CONTEXT_TOKENS`], `sentence_bert_config.json`'s `max_seq_length`
    /// and the position table.
    pub max_tokens: usize,
}

/// Module types of `modules.json` whose work docsnap does: the transformer,
/// the pooling ([`SentenceConfig::pooling`]) and normalization (every vector
/// is normalized).
const MODULES_RUN: &[&str] = &[
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
];

impl SentenceConfig {
    /// Reads the folder's sentence-transformers files (each optional: a
    /// plain BERT folder is mean-pooled without prompts), refusing what
    /// docsnap cannot reproduce with a message naming the file.
    pub fn read(dir: &Path, bert: &docsnap_bert::BertConfig) -> Result<SentenceConfig, EmbedError> {
        let mut pooling_dir = dir.join("1_Pooling");
        let modules = dir.join("modules.json");
        if let Some(v) = read_json(&modules)? {
            let list = v
                .as_array()
                .ok_or_else(|| EmbedError::invalid(&modules, "not a list of modules"))?;
            for m in list {
                let ty = m.get("type").and_then(|t| t.as_str()).unwrap_or("");
                let path = m.get("path").and_then(|t| t.as_str()).unwrap_or("");
                if !MODULES_RUN.contains(&ty) {
                    return Err(EmbedError::invalid(
                        &modules,
                        format!(
                            "module {path:?} is {ty:?}; docsnap runs only the transformer, \
                             pooling and normalization, so this model's vectors cannot be made"
                        ),
                    ));
                }
                if ty.ends_with(".Pooling") && !path.is_empty() {
                    pooling_dir = dir.join(path);
                }
            }
        }
        let pooling_path = pooling_dir.join("config.json");
        let pooling_json = read_json(&pooling_path)?;
        let pooling = read_pooling(&pooling_path, pooling_json.as_ref(), bert.hidden_size)?;
        let st = dir.join("config_sentence_transformers.json");
        let (mut query_prompt, mut document_prompt) = (String::new(), String::new());
        if let Some(v) = read_json(&st)? {
            let bad = |what: String| Err(EmbedError::invalid(&st, what));
            let prompts = match v.get("prompts") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::Object(p)) => Some(p),
                Some(other) => return bad(format!("prompts is {other}, not an object")),
            };
            if let Some((name, p)) = prompts.into_iter().flatten().find(|(_, p)| !p.is_string()) {
                return bad(format!("prompt {name:?} is {p}, not a string"));
            }
            let prompt = |name: &str| {
                prompts
                    .and_then(|p| p.get(name))
                    .and_then(|p| p.as_str())
                    .map(str::to_string)
            };
            let default = match v.get("default_prompt_name") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(n)) => match prompt(n) {
                    Some(p) => Some(p),
                    None => return bad(format!("default_prompt_name {n:?} names no prompt")),
                },
                Some(other) => return bad(format!("default_prompt_name is {other}, not a name")),
            };
            query_prompt = prompt("query").or(default.clone()).unwrap_or_default();
            document_prompt = ["document", "passage", "corpus"]
                .iter()
                .find_map(|n| prompt(n))
                .or(default)
                .unwrap_or_default();
        }
        // A mean that leaves the prompt's tokens out is not the mean docsnap
        // takes; with [CLS] pooling, or no prompt, it makes no difference.
        let include_prompt = pooling_json
            .as_ref()
            .and_then(|v| v.get("include_prompt").and_then(|b| b.as_bool()))
            .unwrap_or(true);
        let prompted = !query_prompt.is_empty() || !document_prompt.is_empty();
        if !include_prompt && prompted && pooling == docsnap_bert::Pooling::Mean {
            return Err(EmbedError::invalid(
                &pooling_path,
                "include_prompt is false: the mean leaves the prompt's tokens out, which docsnap does not do",
            ));
        }
        let sb = dir.join("sentence_bert_config.json");
        let seq = read_json(&sb)?
            .and_then(|v| v.get("max_seq_length").and_then(|m| m.as_u64()))
            .map(|m| m as usize);
        if seq == Some(0) {
            return Err(EmbedError::invalid(&sb, "max_seq_length is 0"));
        }
        let max_tokens = CONTEXT_TOKENS
            .min(seq.unwrap_or(usize::MAX))
            .min(bert.max_position_embeddings);
        Ok(SentenceConfig {
            pooling,
            query_prompt,
            document_prompt,
            max_tokens,
        })
    }

    /// The recipe this configuration embeds pages by (see [`RECIPE`]).
    fn recipe(&self) -> String {
        let pool = match self.pooling {
            docsnap_bert::Pooling::Mean => "mean-pool",
            docsnap_bert::Pooling::Cls => "cls-pool",
        };
        let mut r = format!("{RECIPE};{pool};max{}", self.max_tokens);
        // Prompts only when there are any: no prompt keeps the recipe of
        // the vectors made before prompts were read.
        for (name, p) in [
            ("query", &self.query_prompt),
            ("document", &self.document_prompt),
        ] {
            if !p.is_empty() {
                r.push_str(&format!(";{name}-prompt={p:?}"));
            }
        }
        r
    }
}

/// A JSON file of a model folder, `None` when the folder has none.
fn read_json(path: &Path) -> Result<Option<serde_json::Value>, EmbedError> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = fs::read_to_string(path).map_err(|e| EmbedError::io(path, e))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| EmbedError::invalid(path, format!("not JSON: {e}")))
}

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
    /// Pooling, prompts and length, from the sentence-transformers files.
    pub sentence: SentenceConfig,
}

impl BertFolder {
    /// Loads `dir` (`config.json`, `model.safetensors`, `tokenizer.json`, and
    /// the sentence-transformers files when present: [`SentenceConfig`]),
    /// refusing what docsnap cannot run with a message naming the file.
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
        // The sentence-transformers files are read before the weights: a
        // model docsnap cannot use is refused without loading 90 MB first.
        let config = docsnap_bert::read_config(dir)?;
        let sentence = SentenceConfig::read(dir, &config)?;
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
            sentence,
        })
    }
}

/// The pooling the `1_Pooling/config.json` at `path` names, its contents
/// `v` (mean when there is no such file: a plain BERT folder), refusing a
/// mode docsnap does not run or a width that is not the model's.
fn read_pooling(
    path: &Path,
    v: Option<&serde_json::Value>,
    hidden: usize,
) -> Result<docsnap_bert::Pooling, EmbedError> {
    let Some(v) = v else {
        return Ok(docsnap_bert::Pooling::Mean);
    };
    let on = |key: &str| v.get(key).and_then(|m| m.as_bool()) == Some(true);
    let modes: Vec<&str> = v
        .as_object()
        .map(|o| {
            o.keys()
                .filter(|k| k.starts_with("pooling_mode_") && on(k))
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    let pooling = match modes.as_slice() {
        ["pooling_mode_mean_tokens"] => docsnap_bert::Pooling::Mean,
        ["pooling_mode_cls_token"] => docsnap_bert::Pooling::Cls,
        [] => {
            return Err(EmbedError::invalid(
                path,
                "no pooling mode is true (docsnap runs pooling_mode_mean_tokens or pooling_mode_cls_token)",
            ))
        }
        other => {
            return Err(EmbedError::invalid(
                path,
                format!(
                    "pooling {} is not run by docsnap (it runs pooling_mode_mean_tokens or pooling_mode_cls_token, one of them)",
                    other.join(" + ")
                ),
            ))
        }
    };
    if let Some(d) = v.get("word_embedding_dimension").and_then(|d| d.as_u64()) {
        if d as usize != hidden {
            return Err(EmbedError::invalid(
                path,
                format!(
                    "word_embedding_dimension {d} differs from config.json's hidden_size {hidden}"
                ),
            ));
        }
    }
    Ok(pooling)
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
            format!(
                "{}\n{};{precision:?}",
                bert.tokenizer_sha256,
                bert.sentence.recipe()
            )
            .as_bytes(),
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

    /// A unit vector for `text` (no prompt): the transformer's last hidden
    /// states over its first [`SentenceConfig::max_tokens`] tokens, pooled
    /// and normalized. A text
    /// the tokenizer or the model cannot take gives the zero vector, which
    /// matches nothing (a query is then answered lexically).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_prompted("", text, self.bert.sentence.max_tokens)
    }

    /// What the memory of questions has done so far.
    pub fn query_cache_stats(&self) -> super::QueryCacheStats {
        self.queries.stats()
    }

    /// Keeps at most `capacity` question vectors from now on (0: none).
    pub fn set_query_cache(&mut self, capacity: usize) {
        self.queries = QueryCache::new(capacity);
    }

    /// [`ContextualModel::embed`] for a question, after the model's query
    /// prompt and over its first [`QUERY_TOKENS`] tokens at most; kept for
    /// when it is asked again.
    pub fn embed_query(&self, text: &str) -> std::sync::Arc<[f32]> {
        self.queries.get_or_compute(text, |t| {
            let max = self.bert.sentence.max_tokens.min(QUERY_TOKENS);
            self.embed_prompted(&self.bert.sentence.query_prompt, t, max)
        })
    }

    /// [`ContextualModel::embed`] for a page's text, after the model's
    /// document prompt.
    pub fn embed_document(&self, text: &str) -> Vec<f32> {
        let max = self.bert.sentence.max_tokens;
        self.embed_prompted(&self.bert.sentence.document_prompt, text, max)
    }

    /// `prompt` then `text`, over its first `max` tokens; the zero vector
    /// when the tokenizer or the model cannot take it (see
    /// [`ContextualModel::embed`]).
    fn embed_prompted(&self, prompt: &str, text: &str, max: usize) -> Vec<f32> {
        let v = if prompt.is_empty() {
            self.try_embed(text, max)
        } else {
            self.try_embed(&format!("{prompt}{text}"), max)
        };
        v.unwrap_or_else(|_| vec![0.0; self.dims()])
    }

    fn try_embed(&self, text: &str, max: usize) -> Result<Vec<f32>, String> {
        let enc = self
            .bert
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| e.to_string())?;
        let mut ids = enc.get_ids().to_vec();
        if ids.len() > max && max > 1 {
            // Keep the closing [SEP]: the model was trained on framed input.
            let sep = *ids.last().expect("non-empty");
            ids.truncate(max - 1);
            ids.push(sep);
        }
        let mut v = self
            .bert
            .bert
            .pooled(&[&ids], self.bert.sentence.pooling)
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
                    let v = self.embed_document(t);
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
        fs::write(&pooling, r#"{"pooling_mode_max_tokens":true}"#).unwrap();
        let e = load();
        assert!(
            e.contains("1_Pooling") && e.contains("pooling_mode_max_tokens is not run"),
            "{e}"
        );
        fs::write(
            &pooling,
            r#"{"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":true}"#,
        )
        .unwrap();
        let e = load();
        assert!(e.contains("one of them"), "{e}");
        fs::write(&pooling, r#"{"pooling_mode_mean_tokens":false}"#).unwrap();
        assert!(load().contains("no pooling mode is true"));
        fs::write(
            &pooling,
            r#"{"pooling_mode_mean_tokens":true,"word_embedding_dimension":16}"#,
        )
        .unwrap();
        let e = load();
        assert!(e.contains("word_embedding_dimension 16"), "{e}");
        // With the pooling right, the weights are what is refused.
        fs::write(&pooling, r#"{"pooling_mode_cls_token":true}"#).unwrap();
        let e = load();
        assert!(e.contains("model.safetensors"), "{e}");
    }

    /// The vectors artifacts hold were made under the recipe string the
    /// default model had before folders' pooling and prompts were read: a
    /// mean-pooled folder without prompts, read to 256 tokens, must keep
    /// it, or every later build would embed every page again.
    #[test]
    fn a_plain_mean_pooled_folder_keeps_the_recipe_of_earlier_vectors() {
        let plain = SentenceConfig {
            max_tokens: CONTEXT_TOKENS,
            ..SentenceConfig::default()
        };
        assert_eq!(
            plain.recipe(),
            "page:title+desc+headings+opening600;mean-pool;max256"
        );
        let cls = SentenceConfig {
            pooling: docsnap_bert::Pooling::Cls,
            ..plain.clone()
        };
        let prompted = SentenceConfig {
            query_prompt: "query: ".into(),
            ..plain.clone()
        };
        let short = SentenceConfig {
            max_tokens: 128,
            ..plain.clone()
        };
        let recipes = [&plain, &cls, &prompted, &short].map(SentenceConfig::recipe);
        for (i, a) in recipes.iter().enumerate() {
            for b in &recipes[i + 1..] {
                assert_ne!(a, b, "two configurations share a recipe");
            }
        }
    }
}
