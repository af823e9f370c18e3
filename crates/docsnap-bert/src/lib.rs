//! A BERT encoder's forward pass in plain Rust, for the shapes docsnap runs:
//! one question of a dozen tokens at query time, pages of up to 256 tokens
//! at build time, on a CPU.
//!
//! Why not candle's: for a 16-token question its matrix products spend more
//! time packing the weight matrices (a copy of every weight, every call) than
//! multiplying, so a question took ~11 ms. Here the weights stay in the
//! layout they are stored in (`[out, in]`, rows contiguous), every product
//! is a set of dot products over contiguous rows computed in register
//! tiles, and each block of weight rows is read once per call while it
//! serves every token. See BENCHMARKS.md for the figures.
//!
//! In [`Precision::F32`] the numbers are those of the reference
//! implementation up to float rounding (docsnap's tests compare with vectors
//! recorded from candle-transformers' `BertModel`): embeddings + position +
//! token type 0, LayerNorm, then per layer self-attention without mask (one
//! sequence at a time), residual and LayerNorm, the GELU feed-forward,
//! residual and LayerNorm. [`Precision::Int8`] is what docsnap runs.

#![warn(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod amx;
mod crew;

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Defines `fn $name` whose body runs compiled for AVX-512 (F, BW, VL)
/// when the CPU has it, else for AVX2 and FMA when it has those, and as
/// written otherwise. For the loops around the kernels (quantizing,
/// rescaling, GELU, LayerNorm, attention): built for the baseline x86-64
/// they vectorize to SSE2's 4 lanes, and they were half of a question's
/// time beside the 8-lane kernels; 16 lanes took a further 8 % off a
/// page's pass. The compiler vectorizes without reassociating or fusing,
/// so each form computes the same bits. Whatever the body calls must be
/// `#[inline(always)]` to be compiled the same way.
macro_rules! vector_versions {
    (
        $(#[$meta:meta])*
        fn $name:ident $(<$($g:tt),*>)? ($($arg:ident: $t:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        fn $name $(<$($g),*>)? ($($arg: $t),*) $(-> $ret)? {
            #[inline(always)]
            fn imp $(<$($g),*>)? ($($arg: $t),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            if simd::avx512() {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
                unsafe fn wide $(<$($g),*>)? ($($arg: $t),*) $(-> $ret)? {
                    imp($($arg),*)
                }
                // SAFETY: the CPU has AVX-512 F, BW and VL (checked with
                // `avx512`, which implies AVX2 and FMA).
                return unsafe { wide($($arg),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if simd::available() {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn fast $(<$($g),*>)? ($($arg: $t),*) $(-> $ret)? {
                    imp($($arg),*)
                }
                // SAFETY: the CPU has AVX2 and FMA (just checked).
                return unsafe { fast($($arg),*) };
            }
            imp($($arg),*)
        }
    };
}

vector_versions! {
    /// A weight matrix in 8 bits ([`Quantized::rows`]). Built for AVX2
    /// where the CPU has it, as the activations are: the baseline build
    /// rounds through a libm call per weight, a twentieth of loading the
    /// model. Rounding is exact either way, so the integers are the same.
    fn quantize_weights(w: &[f32], rows: usize, k: usize) -> Quantized<i8> {
        Quantized::rows(w, rows, k, |v| v as i8)
    }
}

/// What can go wrong reading a BERT folder; each names the file and, for a
/// weight, the tensor.
#[derive(Debug, thiserror::Error)]
pub enum BertError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file's content is not a BERT this crate runs.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file concerned.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// An environment setting of this crate ([`ISA_ENV`]) has a value it
    /// does not know.
    #[error("{name}: {reason}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// What was wrong with its value.
        reason: String,
    },
}

impl BertError {
    fn invalid(path: &Path, reason: impl Into<String>) -> Self {
        BertError::Invalid {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// How the encoder layers' products are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// In f32, as the checkpoint stores them: the reference numbers.
    F32,
    /// Weights quantized per row to int8 at load, each token's activations
    /// per product, integer dot products: a quarter of the weight bytes to
    /// read, which is what bounds a short question's forward pass. For
    /// all-MiniLM-L6-v2 the sentence embeddings keep a cosine of 0.996 or
    /// more with the f32 ones (BENCHMARKS.md).
    Int8,
}

/// The parts of a BERT `config.json` the forward pass reads.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    /// Rows of the word-embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; divides `hidden_size`.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Longest sequence the position table covers.
    pub max_position_embeddings: usize,
    /// Epsilon of every LayerNorm.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// Must be `gelu` (the exact, erf-based one): the only activation run.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Must be `absolute`: the only position scheme run.
    #[serde(default = "default_positions")]
    pub position_embedding_type: String,
}

fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}
fn default_positions() -> String {
    "absolute".into()
}

/// `y = x Wᵀ + b` with `W` stored `[out, in]` as checkpoints store it.
struct Linear {
    /// Empty once quantized (`q`).
    w: Vec<f32>,
    b: Vec<f32>,
    n_out: usize,
    n_in: usize,
    /// The weights quantized per row, when the model runs in 8 bits.
    q: Option<Quantized<i8>>,
}

/// A matrix quantized per row to the int8 range: `w ≈ q · scale[row]`.
/// Weights are held as i8 (a quarter of the f32 bytes to read); the
/// activations they meet as i16 or, for the VNNI kernels, as bytes shifted
/// by 128 ([`Activations`]).
struct Quantized<T> {
    q: Vec<T>,
    scale: Vec<f32>,
    /// Each row's integers summed (what the unsigned kernel corrects by).
    sum: Vec<i32>,
}

impl<T: Copy + Default> Quantized<T> {
    /// Symmetric per-row quantization of `rows × k` values to −127..=127,
    /// each integer stored as `store` makes it (a weight's i8, an
    /// activation's i16, or its unsigned byte for the VNNI kernels).
    #[inline(always)]
    fn rows(w: &[f32], rows: usize, k: usize, store: impl Fn(i16) -> T) -> Quantized<T> {
        let mut q = vec![T::default(); rows * k];
        let mut scale = vec![0f32; rows];
        let mut sum = vec![0i32; rows];
        for (((row, out), s), total) in w
            .chunks_exact(k)
            .zip(q.chunks_exact_mut(k))
            .zip(&mut scale)
            .zip(&mut sum)
        {
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            *s = if max > 0.0 { max / 127.0 } else { 1.0 };
            let inv = 1.0 / *s;
            let mut acc = 0i32;
            for (o, v) in out.iter_mut().zip(row) {
                // Half away from zero, as f32::round, without its libm
                // call; the integer read from the float's bits, as a
                // saturating `as` cast does not vectorize.
                // max/min rather than clamp: a NaN becomes −127 instead
                // of reaching the integer conversion.
                #[allow(clippy::manual_clamp)]
                let r = (v * inv).max(-127.0).min(127.0);
                let v = int_of((r + 0.5f32.copysign(r)).trunc());
                acc += v;
                *o = store(v as i16);
            }
            *total = acc;
        }
        Quantized { q, scale, sum }
    }
}

/// A product's activations in 8 bits, in the form its kernel reads.
enum Activations {
    /// Signed, widened to i16 (the AVX2 and portable kernels).
    Signed(Quantized<i16>),
    /// Shifted by 128 into unsigned bytes (the VNNI kernels).
    Shifted(Quantized<u8>),
}

impl Activations {
    /// Quantizes `rows × k` activations for the kernel this CPU runs for
    /// `n` outputs over `k`-long rows, in one pass.
    fn new(x: &[f32], rows: usize, n: usize, k: usize) -> Activations {
        vector_versions! {
            fn shifted(x: &[f32], rows: usize, k: usize) -> Quantized<u8> {
                Quantized::rows(x, rows, k, |v| (v + 128) as u8)
            }
        }
        vector_versions! {
            fn signed(x: &[f32], rows: usize, k: usize) -> Quantized<i16> {
                Quantized::rows(x, rows, k, |v| v)
            }
        }
        if vnni_runs(n, k) {
            Activations::Shifted(shifted(x, rows, k))
        } else {
            Activations::Signed(signed(x, rows, k))
        }
    }

    fn scale(&self) -> &[f32] {
        match self {
            Activations::Signed(q) => &q.scale,
            Activations::Shifted(q) => &q.scale,
        }
    }
}

/// Whether a product of `n` outputs over `k`-long rows runs on a VNNI
/// kernel here: then its weights are packed ([`pack_lanes`]) and its
/// activations shifted ([`Activations::Shifted`]), both decided by this.
fn vnni_runs(n: usize, k: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    return k.is_multiple_of(4) && n.is_multiple_of(8) && simd::vnni();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Whether a product of `n` outputs over `k`-long rows runs on AMX tiles
/// here ([`amx`]): then its weights are packed 16 columns to a block and
/// its activations shifted as for VNNI.
fn amx_runs(n: usize, k: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    return k.is_multiple_of(64) && n.is_multiple_of(16) && vnni_runs(n, k) && amx::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Whether a product of `n` outputs over `k`-long rows runs on the AVX2
/// kernel over weights packed in pairs ([`pack_lanes`]): where VNNI does
/// not run. Against the kernel over weight rows, no horizontal sum is left
/// at the end of each output and a question's last rows fit a tile (5
/// rows); the same integers, so the same bits.
fn pairs_run(n: usize, k: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    return k.is_multiple_of(2) && n.is_multiple_of(8) && !vnni_runs(n, k) && simd::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// LayerNorm's scale and shift.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// One encoder layer; query, key and value are one product (`qkv`), their
/// outputs side by side in each row.
struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// How a sequence's token states become one vector: what a
/// sentence-transformers model's `1_Pooling/config.json` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooling {
    /// The mean of every token's state (`pooling_mode_mean_tokens`).
    #[default]
    Mean,
    /// The first token's ([CLS]) state (`pooling_mode_cls_token`).
    Cls,
}

/// A loaded BERT encoder.
pub struct Bert {
    /// Its configuration.
    pub config: BertConfig,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Row 0 of the token-type table: docsnap embeds single segments only.
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    eps: f32,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Reads tensors out of one safetensors file, by name, with the shape the
/// configuration says they must have; any mismatch names the tensor. The
/// file is read one tensor at a time, so loading never holds the whole file
/// beside the converted weights (91 MB less at the peak for MiniLM).
struct Weights<'a> {
    meta: safetensors::tensor::Metadata,
    /// Where the data section starts: after the 8-byte length and header.
    data_start: u64,
    file: &'a fs::File,
    path: &'a Path,
    /// `""` or `"bert."`: checkpoints saved from a task model prefix names.
    prefix: &'static str,
}

/// The longest header read (the format's own limit).
const MAX_HEADER: u64 = 100_000_000;

/// Reads `buf.len()` bytes of `file` (at `path`) from `offset`.
fn read_at(file: &fs::File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<(), BertError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(buf))
        .map_err(|source| BertError::Io {
            path: path.to_path_buf(),
            source,
        })
}

impl<'a> Weights<'a> {
    /// Parses the header of `file` and checks that its tensors exactly
    /// fill the rest of it (a truncated file is refused here, before any
    /// tensor is read).
    fn open(path: &'a Path, file: &'a fs::File) -> Result<Weights<'a>, BertError> {
        let bad = |why: String| BertError::invalid(path, format!("not safetensors: {why}"));
        let total = file
            .metadata()
            .map_err(|source| BertError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        if total < 8 {
            return Err(bad(format!(
                "{total} bytes, shorter than the header's length"
            )));
        }
        let mut len = [0u8; 8];
        read_at(file, path, 0, &mut len)?;
        let n = u64::from_le_bytes(len);
        if n > MAX_HEADER || n > total - 8 {
            return Err(bad(format!(
                "a header of {n} bytes in a file of {total} bytes"
            )));
        }
        let mut header = vec![0u8; n as usize];
        read_at(file, path, 8, &mut header)?;
        let meta: safetensors::tensor::Metadata =
            serde_json::from_slice(&header).map_err(|e| bad(format!("header: {e}")))?;
        let data_start = 8 + n;
        let covered = meta
            .tensors()
            .values()
            .map(|t| t.data_offsets.1 as u64)
            .max()
            .unwrap_or(0);
        if covered != total - data_start {
            return Err(bad(format!(
                "its header describes {covered} bytes of tensors, the file holds {} \
                 (truncated or padded)",
                total - data_start
            )));
        }
        let prefix = if meta
            .tensors()
            .keys()
            .any(|n| n.starts_with("bert.embeddings."))
        {
            "bert."
        } else {
            ""
        };
        Ok(Weights {
            meta,
            data_start,
            file,
            path,
            prefix,
        })
    }

    /// The shape of tensor `name`, if the file has it.
    fn shape(&self, name: &str) -> Option<&[usize]> {
        let full = format!("{}{name}", self.prefix);
        self.meta.info(&full).map(|t| t.shape.as_slice())
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, BertError> {
        let full = format!("{}{name}", self.prefix);
        let invalid = |why: String| BertError::invalid(self.path, format!("tensor {full}{why}"));
        let t = self
            .meta
            .info(&full)
            .ok_or_else(|| invalid(": not in the file".into()))?;
        if t.shape != shape {
            return Err(invalid(format!(
                " has shape {:?}, expected {shape:?}",
                t.shape
            )));
        }
        let width = match t.dtype {
            safetensors::Dtype::F32 => 4,
            safetensors::Dtype::F16 | safetensors::Dtype::BF16 => 2,
            other => return Err(invalid(format!(" is {other:?}; F32, F16 or BF16 expected"))),
        };
        let (begin, end) = t.data_offsets;
        let count: usize = shape.iter().product();
        if end < begin || end - begin != count * width {
            return Err(invalid(format!(
                ": {} bytes for {count} values of {:?}",
                end.saturating_sub(begin),
                t.dtype
            )));
        }
        let at = self.data_start + begin as u64;
        if t.dtype == safetensors::Dtype::F32 {
            // Read straight into the floats: no second buffer of the
            // tensor's size to allocate, fault in and convert (the word
            // embeddings alone are 47 MB, and loading is most of a
            // server's start-up).
            let mut v = vec![0f32; count];
            // SAFETY: the bytes of `v`'s `count` floats; every bit pattern
            // is a valid f32.
            let bytes =
                unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), count * 4) };
            read_at(self.file, self.path, at, bytes)?;
            // safetensors stores little-endian.
            if cfg!(target_endian = "big") {
                for x in &mut v {
                    *x = f32::from_bits(u32::from_le(x.to_bits()));
                }
            }
            return Ok(v);
        }
        let mut data = vec![0u8; end - begin];
        read_at(self.file, self.path, at, &mut data)?;
        let v: Vec<f32> = match t.dtype {
            safetensors::Dtype::F16 => data
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            _ => data
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
        };
        Ok(v)
    }

    fn linear(&self, name: &str, n_out: usize, n_in: usize) -> Result<Linear, BertError> {
        Ok(Linear {
            w: self.get(&format!("{name}.weight"), &[n_out, n_in])?,
            b: self.get(&format!("{name}.bias"), &[n_out])?,
            n_out,
            n_in,
            q: None,
        })
    }

    fn norm(&self, name: &str, n: usize) -> Result<Norm, BertError> {
        Ok(Norm {
            gamma: self.get(&format!("{name}.weight"), &[n])?,
            beta: self.get(&format!("{name}.bias"), &[n])?,
        })
    }
}

impl Bert {
    /// Parses `config.json`'s text, refusing what this forward pass does not
    /// run (another activation, relative positions, heads that do not divide
    /// the width) with a message naming `path`.
    pub fn parse_config(path: &Path, text: &str) -> Result<BertConfig, BertError> {
        let c: BertConfig = serde_json::from_str(text)
            .map_err(|e| BertError::invalid(path, format!("not a BERT config: {e}")))?;
        let refuse = |why: String| Err(BertError::invalid(path, why));
        if c.hidden_act != "gelu" {
            return refuse(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                c.hidden_act
            ));
        }
        if c.position_embedding_type != "absolute" {
            return refuse(format!(
                "position_embedding_type {:?} is not supported (only \"absolute\")",
                c.position_embedding_type
            ));
        }
        if c.hidden_size == 0
            || c.num_attention_heads == 0
            || !c.hidden_size.is_multiple_of(c.num_attention_heads)
        {
            return refuse(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                c.hidden_size, c.num_attention_heads
            ));
        }
        Ok(c)
    }

    fn from_weights(
        config: BertConfig,
        w: &Weights<'_>,
        precision: Precision,
    ) -> Result<Bert, BertError> {
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let word = w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = w.get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let type_rows = w
            .shape("embeddings.token_type_embeddings.weight")
            .and_then(|s| s.first().copied())
            .unwrap_or(0);
        let token_type = if type_rows > 0 {
            let mut t = w.get("embeddings.token_type_embeddings.weight", &[type_rows, h])?;
            t.truncate(h);
            t
        } else {
            vec![0.0; h]
        };
        let emb_norm = w.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let q = w.linear(&format!("{p}.attention.self.query"), h, h)?;
            let k = w.linear(&format!("{p}.attention.self.key"), h, h)?;
            let v = w.linear(&format!("{p}.attention.self.value"), h, h)?;
            let qkv = Linear {
                w: [q.w, k.w, v.w].concat(),
                b: [q.b, k.b, v.b].concat(),
                n_out: 3 * h,
                n_in: h,
                q: None,
            };
            let mut layer = Layer {
                qkv,
                attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                up: w.linear(&format!("{p}.intermediate.dense"), i, h)?,
                down: w.linear(&format!("{p}.output.dense"), h, i)?,
                out_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            };
            if precision == Precision::Int8 {
                // Layer by layer, so no two layers' f32 weights are held
                // at once.
                for lin in [
                    &mut layer.qkv,
                    &mut layer.attn_out,
                    &mut layer.up,
                    &mut layer.down,
                ] {
                    let mut q = quantize_weights(&lin.w, lin.n_out, lin.n_in);
                    if amx_runs(lin.n_out, lin.n_in) {
                        q.q = pack_lanes(&q.q, lin.n_out, lin.n_in, 4, 16);
                    } else if vnni_runs(lin.n_out, lin.n_in) {
                        q.q = pack_lanes(&q.q, lin.n_out, lin.n_in, 4, 8);
                    } else if pairs_run(lin.n_out, lin.n_in) {
                        q.q = pack_lanes(&q.q, lin.n_out, lin.n_in, 2, 8);
                    }
                    lin.q = Some(q);
                    // The f32 weights are never read again: 42 MB for MiniLM.
                    lin.w = Vec::new();
                }
            }
            layers.push(layer);
        }
        let eps = config.layer_norm_eps as f32;
        Ok(Bert {
            config,
            word,
            position,
            token_type,
            emb_norm,
            layers,
            eps,
        })
    }

    /// The mean of the last hidden states of each sequence of token ids
    /// (not normalized): [`Bert::pooled`] with [`Pooling::Mean`].
    pub fn mean_pooled(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        self.pooled(seqs, Pooling::Mean)
    }

    /// One vector per sequence of token ids: its last hidden states reduced
    /// by `pooling` (not normalized). Sequences are independent; passing
    /// several lets the matrix products serve all their tokens with one
    /// read of the weights. Panics on an id outside the vocabulary or a
    /// sequence longer than the position table, which callers rule out (the
    /// tokenizer and truncation).
    pub fn pooled(&self, seqs: &[&[u32]], pooling: Pooling) -> Vec<Vec<f32>> {
        let x = self.hidden_states(seqs);
        let h = self.config.hidden_size;
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for s in seqs {
            let rows = &x[start * h..(start + s.len()) * h];
            out.push(match pooling {
                Pooling::Mean => {
                    let mut m = vec![0f32; h];
                    for row in rows.chunks_exact(h) {
                        add_into(&mut m, row);
                    }
                    let n = s.len().max(1) as f32;
                    m.iter_mut().for_each(|v| *v /= n);
                    m
                }
                // An empty sequence has no first token: the zero vector.
                Pooling::Cls => rows.get(..h).map(<[f32]>::to_vec).unwrap_or(vec![0.0; h]),
            });
            start += s.len();
        }
        out
    }

    /// The last hidden states of every token of `seqs`, one `hidden_size`
    /// row per token, the sequences' rows one after another.
    pub fn hidden_states(&self, seqs: &[&[u32]]) -> Vec<f32> {
        // The pass runs on one of rayon's threads. A page's products are
        // split among the threads product by product (the other half goes
        // to the other thread directly instead of parking the caller and
        // waking it again: a fifth of a page's time), so that a core busy
        // with a page of its own never waits for another's. A question's
        // pass (at most `CREW_MAX_ROWS` tokens) instead forms a
        // [`crew::Crew`] with one other thread for its whole duration: its
        // 24 hand-offs through rayon cost about what its attention and
        // LayerNorms do together, and a crew's cost a cache line each
        // (BENCHMARKS.md, session 41).
        let mut out = Vec::new();
        let rows: usize = seqs.iter().map(|s| s.len()).sum();
        if rows > CREW_MAX_ROWS || rayon::current_num_threads() < 2 {
            rayon::scope(|_| out = self.forward(seqs, None));
            return out;
        }
        let crew = crew::Crew::new();
        rayon::scope(|s| {
            s.spawn(|_| crew.help());
            let _over = crew.over_on_drop();
            out = self.forward(seqs, Some(&crew));
        });
        out
    }

    fn forward(&self, seqs: &[&[u32]], crew: Option<&crew::Crew>) -> Vec<f32> {
        let h = self.config.hidden_size;
        let rows: usize = seqs.iter().map(|s| s.len()).sum();
        let mut x = vec![0f32; rows * h];
        let mut r = 0;
        for s in seqs {
            assert!(s.len() <= self.config.max_position_embeddings);
            for (p, &id) in s.iter().enumerate() {
                let id = id as usize;
                assert!(
                    id < self.config.vocab_size,
                    "token id {id} outside the vocabulary"
                );
                let row = &mut x[r * h..(r + 1) * h];
                let (we, pe) = (&self.word[id * h..][..h], &self.position[p * h..][..h]);
                for (((o, a), b), c) in row.iter_mut().zip(we).zip(pe).zip(&self.token_type) {
                    *o = a + b + c;
                }
                r += 1;
            }
        }
        add_norm(&mut x, &[], h, &self.emb_norm, self.eps);
        let mut qkv = vec![0f32; rows * 3 * h];
        let mut ctx = vec![0f32; rows * h];
        let mut tmp = vec![0f32; rows * h];
        let mut up = vec![0f32; rows * self.config.intermediate_size];
        for layer in &self.layers {
            layer.qkv.apply(&x, rows, &mut qkv, false, crew);
            let mut start = 0;
            for s in seqs {
                let n = s.len();
                attention(
                    &qkv[start * 3 * h..(start + n) * 3 * h],
                    n,
                    h,
                    self.config.num_attention_heads,
                    &mut ctx[start * h..(start + n) * h],
                );
                start += n;
            }
            layer.attn_out.apply(&ctx, rows, &mut tmp, false, crew);
            add_norm(&mut x, &tmp, h, &layer.attn_norm, self.eps);
            layer.up.apply(&x, rows, &mut up, true, crew);
            layer.down.apply(&up, rows, &mut tmp, false, crew);
            add_norm(&mut x, &tmp, h, &layer.out_norm, self.eps);
        }
        x
    }
}

#[inline(always)]
fn add_into(a: &mut [f32], b: &[f32]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

vector_versions! {
    /// `x += residual` (when not empty), then LayerNorm of every `h`-wide
    /// row of `x`, in place.
    fn add_norm(x: &mut [f32], residual: &[f32], h: usize, n: &Norm, eps: f32) {
        if !residual.is_empty() {
            add_into(x, residual);
        }
        // Each row's sums run in order (not in eight lanes, which would
        // change the bits of the vectors artifacts hold), so each is a
        // chain of dependent additions; rows go eight at a time, so their
        // chains run side by side.
        let mut blocks = x.chunks_exact_mut(h * NORM_ROWS);
        for block in &mut blocks {
            norm_rows::<NORM_ROWS>(block, h, n, eps);
        }
        for row in blocks.into_remainder().chunks_exact_mut(h) {
            norm_rows::<1>(row, h, n, eps);
        }
    }
}

/// Rows [`add_norm`] normalizes side by side.
const NORM_ROWS: usize = 8;

/// LayerNorm of the `R` rows (each `h` wide) of `x`, in place: each row's
/// mean and variance summed in order from −0.0, as `Iterator::sum` does.
#[inline(always)]
fn norm_rows<const R: usize>(x: &mut [f32], h: usize, n: &Norm, eps: f32) {
    let mut sum = [-0.0f32; R];
    for c in 0..h {
        for (r, s) in sum.iter_mut().enumerate() {
            *s += x[r * h + c];
        }
    }
    let mean = sum.map(|s| s / h as f32);
    let mut sq = [-0.0f32; R];
    for c in 0..h {
        for (r, s) in sq.iter_mut().enumerate() {
            let d = x[r * h + c] - mean[r];
            *s += d * d;
        }
    }
    for ((row, mean), sq) in x.chunks_exact_mut(h).zip(mean).zip(sq) {
        let inv = 1.0 / (sq / h as f32 + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&n.gamma).zip(&n.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// The exact GELU, `x Φ(x)`, with erf from Abramowitz & Stegun 7.1.26
/// (absolute error below 1.5e-7, under f32's resolution of the result).
#[inline(always)]
fn gelu(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    let a = z.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let erf = 1.0 - poly * exp_nonpositive(-a * a);
    0.5 * x * (1.0 + erf.copysign(z))
}

/// `eˣ` for `x ≤ 0` (below −87, e⁻⁸⁷ ≈ 1.6e-38: to GELU, zero), in straight-line arithmetic the
/// compiler vectorizes, where a call to libm's `expf` per element cost a
/// tenth of a question's forward pass: `x = n ln 2 + r` with `|r| ≤ ln2/2`,
/// `eʳ` by its Taylor polynomial to degree 6 (relative error under 3e-7),
/// and `2ⁿ` put into the exponent bits.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    let x = x.max(-87.0);
    // Round to nearest by the shift trick (no libm call).
    let t = x * std::f32::consts::LOG2_E + SHIFT;
    let n = t - SHIFT;
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    p * f32::from_bits(((int_of(t - SHIFT) + 127) as u32) << 23)
}

/// 1.5·2²³: adding it to a float of magnitude below 2²² rounds it to an
/// integer kept in the low bits of the sum's mantissa.
const SHIFT: f32 = 12_582_912.0;

/// The instruction sets the kernels use, from the plainest up; each
/// level is used where the CPU has it and [`isa_cap`] allows it. Every
/// level computes the same bits (the kernels are tested against each
/// other), so the cap changes speed only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// Plain Rust loops (what any CPU runs).
    Portable,
    /// AVX2 and FMA.
    Avx2,
    /// AVX-VNNI or AVX-512 VNNI byte products.
    Vnni,
    /// AVX-512 F, BW and VL for attention and the loops around the kernels.
    Avx512,
    /// AMX tiles for the products (Linux asked for the tile state).
    Amx,
}

/// The environment variable that caps [`Isa`] (`portable`, `avx2`,
/// `vnni`, `avx512` or `amx`, the default): to take a kernel out of
/// play (a sandbox that refuses `arch_prctl`, a comparison of speeds) or
/// to show that a build's vectors do not depend on the machine.
pub const ISA_ENV: &str = "DOCSNAP_BERT_ISA";

impl Isa {
    const NAMES: [(&'static str, Isa); 5] = [
        ("portable", Isa::Portable),
        ("avx2", Isa::Avx2),
        ("vnni", Isa::Vnni),
        ("avx512", Isa::Avx512),
        ("amx", Isa::Amx),
    ];

    /// The cap a value of [`ISA_ENV`] names; an unset variable caps
    /// nothing.
    pub fn parse(value: Option<&str>) -> Result<Isa, BertError> {
        let Some(v) = value else { return Ok(Isa::Amx) };
        Isa::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(v.trim()))
            .map(|&(_, isa)| isa)
            .ok_or_else(|| BertError::Setting {
                name: ISA_ENV,
                reason: format!(
                    "{v:?} is not one of {}",
                    Isa::NAMES.map(|(n, _)| n).join(", ")
                ),
            })
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = Isa::NAMES
            .iter()
            .find(|(_, i)| i == self)
            .map_or("?", |(n, _)| n);
        f.write_str(name)
    }
}

/// The highest [`Isa`] the kernels run at in this process: what this CPU
/// has, [`isa_cap`] allows and (for AMX) Linux granted. For logs and
/// benchmark records, since speed, never the vectors, depends on it.
pub fn kernels() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if amx::available() {
            return Isa::Amx;
        }
        if simd::avx512() {
            return Isa::Avx512;
        }
        if simd::vnni() {
            return Isa::Vnni;
        }
        if simd::available() {
            return Isa::Avx2;
        }
    }
    Isa::Portable
}

/// The cap [`ISA_ENV`] sets now, or why its value is not one.
fn isa_setting() -> Result<Isa, BertError> {
    Isa::parse(std::env::var(ISA_ENV).ok().as_deref())
}

/// The highest [`Isa`] the kernels may use in this process, read once
/// from [`ISA_ENV`]. A value it cannot read caps nothing here; loading a
/// model refuses it first ([`load_folder`]), so no pass runs under a cap
/// the user did not mean.
pub fn isa_cap() -> Isa {
    static CAP: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| isa_setting().unwrap_or(Isa::Amx))
}

/// The integer value of `x`, an integral float of magnitude below 2²²,
/// read from the bits of `x + SHIFT`: plain integer arithmetic that
/// vectorizes, where `x as i32` (which must saturate) does not.
#[inline(always)]
fn int_of(x: f32) -> i32 {
    (x + SHIFT).to_bits() as i32 - SHIFT.to_bits() as i32
}

vector_versions! {
    /// Self-attention of one sequence of `n` tokens: `qkv` holds each token's
    /// query, key and value side by side; the heads' outputs go to `out`.
    ///
    /// Attention was two thirds of a page's forward pass, spent on a
    /// horizontal sum per key, a libm call per weight and sums waiting on
    /// memory. So each head's keys are first copied into blocks of eight
    /// (a query's scores come eight keys at a time from whole vectors,
    /// [`simd::scores`]), its values contiguous, the weights' exp runs four
    /// at a time ([`simd::exp_less`]), the weighted sums stay in registers
    /// ([`weighted_sum`]) and queries go in groups of [`GROUP`]. The
    /// arithmetic is the same, term by term and in the same order, as
    /// [`attention_reference`] (each score is [`dot`]'s eight running sums
    /// added in order, times the scale), so the vectors stay bit-identical
    /// to the ones artifacts already hold (tested; a Godot build's
    /// `vectors.i8` compared byte for byte).
    fn attention(qkv: &[f32], n: usize, h: usize, heads: usize, out: &mut [f32]) {
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        // With AVX-512 keys go sixteen to a block, a score per lane of a
        // 512-bit vector, and eight queries' weighted sums are formed side
        // by side ([`weighted_sums_wide`]); the same operations per score
        // and per sum, so the same bits.
        let wide = wide_attention(d);
        let (lanes, group_max) = if wide { (WIDE_LANES, WIDE_GROUP) } else { (LANES, GROUP) };
        // Keys in blocks of `lanes`, each block `d` rows of `lanes` (the
        // last block padded with zeros, whose scores are dropped): a
        // block's scores read one contiguous run.
        let blocks = n.div_ceil(lanes);
        let width = blocks * lanes;
        let mut kt = vec![0f32; blocks * d * lanes];
        let mut v = vec![0f32; n * d];
        let mut p = vec![0f32; group_max * width];
        for head in 0..heads {
            let off = head * d;
            for j in 0..n {
                let row = &qkv[j * 3 * h..];
                let block = &mut kt[j / lanes * d * lanes..][..d * lanes];
                for (e, &x) in row[h + off..][..d].iter().enumerate() {
                    block[e * lanes + j % lanes] = x;
                }
                v[j * d..][..d].copy_from_slice(&row[2 * h + off..][..d]);
            }
            // Queries a few at a time: each softmax's sum is a chain of
            // dependent additions (in order, for the bits), and the
            // group's chains run side by side.
            for i0 in (0..n).step_by(group_max) {
                let group = group_max.min(n - i0);
                for (g, pg) in p.chunks_exact_mut(width).take(group).enumerate() {
                    let q = &qkv[(i0 + g) * 3 * h + off..][..d];
                    row_scores(q, &kt, scale, pg);
                    let pg = &mut pg[..n];
                    let max = pg.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                    // libm's exp or its steps (on glibc the same values):
                    // the vectors stay bit-identical to the ones artifacts
                    // already hold.
                    exp_less(pg, max);
                }
                let mut sums = [-0.0f32; WIDE_GROUP]; // where `Iterator::sum` starts
                if group == WIDE_GROUP {
                    // A whole group's rows sliced once: eight chains with
                    // no bounds to check between their additions.
                    let rows: [&[f32]; WIDE_GROUP] = std::array::from_fn(|g| &p[g * width..][..n]);
                    for j in 0..n {
                        for (s, row) in sums.iter_mut().zip(&rows) {
                            *s += row[j];
                        }
                    }
                } else {
                    for j in 0..n {
                        for (g, s) in sums.iter_mut().enumerate().take(group) {
                            *s += p[g * width + j];
                        }
                    }
                }
                for (g, pg) in p.chunks_exact_mut(width).take(group).enumerate() {
                    pg[..n].iter_mut().for_each(|pj| *pj /= sums[g]);
                }
                let out = &mut out[i0 * h..];
                if wide {
                    weighted_sums_wide(&p, width, group, &v, d, n, &mut out[off..], h);
                } else {
                    for (g, pg) in p.chunks_exact(width).take(group).enumerate() {
                        weighted_sum(&pg[..n], &v, &mut out[g * h + off..][..d]);
                    }
                }
            }
        }
    }
}

/// `o = Σⱼ p[j] · v[j]` over the rows of `v` (each `o.len()` wide), each
/// coordinate summed from zero in the order of `j`, as the reference does
/// in place. The sums are held in registers, 32 coordinates at a time:
/// summed in memory, each key waited for the store of the one before.
#[inline(always)]
fn weighted_sum(p: &[f32], v: &[f32], o: &mut [f32]) {
    let d = o.len();
    let mut c = 0;
    while c + 4 * LANES <= d {
        block_sum::<{ 4 * LANES }>(p, v, d, c, &mut o[c..c + 4 * LANES]);
        c += 4 * LANES;
    }
    while c + LANES <= d {
        block_sum::<LANES>(p, v, d, c, &mut o[c..c + LANES]);
        c += LANES;
    }
    while c < d {
        block_sum::<1>(p, v, d, c, &mut o[c..c + 1]);
        c += 1;
    }
}

/// Coordinates `c..c + W` of [`weighted_sum`].
#[inline(always)]
fn block_sum<const W: usize>(p: &[f32], v: &[f32], d: usize, c: usize, o: &mut [f32]) {
    let mut acc = [0f32; W];
    for (w, vj) in p.iter().zip(v.chunks_exact(d)) {
        let vj = &vj[c..c + W];
        acc.iter_mut().zip(vj).for_each(|(a, b)| *a += w * b);
    }
    o.copy_from_slice(&acc);
}

/// Whether [`attention`] runs its AVX-512 form for heads `d` wide: the
/// wide weighted sums take 32 coordinates a pass.
#[inline(always)]
fn wide_attention(d: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    return d.is_multiple_of(32) && simd::avx512();
    #[cfg(not(target_arch = "x86_64"))]
    return {
        let _ = d;
        false
    };
}

/// [`weighted_sum`] for the first `group` rows of `p` (each `width` long,
/// `n` used) into `out` at rows `g · stride`: [`simd::weighted_sums`],
/// which only [`wide_attention`] lets run.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn weighted_sums_wide(
    p: &[f32],
    width: usize,
    group: usize,
    v: &[f32],
    d: usize,
    n: usize,
    out: &mut [f32],
    stride: usize,
) {
    assert!(group <= WIDE_GROUP && p.len() >= WIDE_GROUP * width && width >= n);
    assert!(v.len() >= n * d && d.is_multiple_of(32));
    assert!(out.len() >= (group - 1) * stride + d);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `wide_attention` checked AVX-512; shapes asserted above.
    unsafe {
        simd::weighted_sums(
            p.as_ptr(),
            width,
            group,
            v.as_ptr(),
            d,
            n,
            out.as_mut_ptr(),
            stride,
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("wide attention without AVX-512: {}", out.len());
}

/// A query's scores against every block of keys `kt` (blocks of
/// [`WIDE_LANES`] where [`wide_attention`] holds, of [`LANES`] elsewhere)
/// into `out`, one per key and padding.
#[inline(always)]
fn row_scores(q: &[f32], kt: &[f32], scale: f32, out: &mut [f32]) {
    let d = q.len();
    #[cfg(target_arch = "x86_64")]
    if wide_attention(d) {
        // SAFETY: AVX-512 checked; `scores_wide` asserts the shapes.
        unsafe { simd::scores_wide(q, kt, scale, out) };
        return;
    }
    for (kb, pb) in kt.chunks_exact(d * LANES).zip(out.chunks_exact_mut(LANES)) {
        block_scores(q, kb, scale, pb);
    }
}

/// [`scores`]: [`simd::scores`] where AVX2 runs (the same values).
#[inline(always)]
fn block_scores(q: &[f32], kb: &[f32], scale: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd::available() {
        // SAFETY: AVX2 and FMA checked; `simd::scores` asserts the shapes.
        unsafe { simd::scores(q, kb, scale, out) };
        return;
    }
    scores(q, kb, scale, out);
}

/// `p[j] = e^(p[j] − max)`: [`simd::exp_less`] on Linux with glibc, whose
/// `expf` it reproduces bit for bit (tested there), libm's `f32::exp`
/// elsewhere, so that no platform's vectors change (their artifacts' vectors
/// are reused by later builds).
#[inline(always)]
fn exp_less(p: &mut [f32], max: f32) {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    if simd::avx512() {
        // SAFETY: the CPU has AVX-512F, AVX2 and FMA (just checked).
        unsafe { simd::exp_less_wide(p, max) };
        return;
    }
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    if simd::available() {
        // SAFETY: the CPU has AVX2 and FMA (just checked).
        unsafe { simd::exp_less(p, max) };
        return;
    }
    p.iter_mut().for_each(|pj| *pj = (*pj - max).exp());
}

/// Queries whose softmax sums [`attention`] runs side by side.
const GROUP: usize = 4;

/// Queries whose softmax sums and weighted sums [`attention`]'s AVX-512
/// form runs side by side: 8 × 2 vectors of sums, 16 of AVX-512's 32
/// registers.
const WIDE_GROUP: usize = 8;

/// Keys scored at once by [`simd::scores_wide`]: one 512-bit vector.
const WIDE_LANES: usize = 16;

/// Lanes of [`dot`]'s running sums, and keys scored at once by [`scores`].
const LANES: usize = 8;

/// The scores of a block of eight keys (`kb`: row `e` holds coordinate `e`
/// of each) for the query `q`, each computed exactly as
/// `dot(q, k) * scale`: running sum `l` adds the products of coordinates
/// `l`, `l + 8`, … in order, the eight sums are added in order, then the
/// remainder's products.
#[inline(always)]
fn scores(q: &[f32], kb: &[f32], scale: f32, out: &mut [f32]) {
    let d = q.len();
    let full = d / LANES * LANES;
    let mut acc = [[0f32; LANES]; LANES];
    for c in (0..full).step_by(LANES) {
        for (l, a) in acc.iter_mut().enumerate() {
            let e = c + l;
            let (qe, k) = (q[e], &kb[e * LANES..][..LANES]);
            a.iter_mut().zip(k).for_each(|(a, k)| *a += qe * k);
        }
    }
    // Both sums start where `Iterator::sum` does, at −0.0.
    let mut sum = [-0.0f32; LANES];
    for a in &acc {
        sum.iter_mut().zip(a).for_each(|(s, a)| *s += a);
    }
    let mut tail = [-0.0f32; LANES];
    for (e, &qe) in q.iter().enumerate().skip(full) {
        let k = &kb[e * LANES..][..LANES];
        tail.iter_mut().zip(k).for_each(|(t, k)| *t += qe * k);
    }
    for ((o, s), t) in out.iter_mut().zip(sum).zip(tail) {
        *o = (s + t) * scale;
    }
}

/// Self-attention as first written, one dot product per key: what
/// [`attention`] must reproduce bit for bit.
#[cfg(test)]
fn attention_reference(qkv: &[f32], n: usize, h: usize, heads: usize, out: &mut [f32]) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let mut p = vec![0f32; n];
    for head in 0..heads {
        let off = head * d;
        for i in 0..n {
            let q = &qkv[i * 3 * h + off..][..d];
            let mut max = f32::NEG_INFINITY;
            for (j, pj) in p.iter_mut().enumerate() {
                let k = &qkv[j * 3 * h + h + off..][..d];
                *pj = dot(q, k) * scale;
                max = max.max(*pj);
            }
            p.iter_mut().for_each(|pj| *pj = (*pj - max).exp());
            let sum: f32 = p.iter().sum();
            let o = &mut out[i * h + off..][..d];
            o.fill(0.0);
            for (j, pj) in p.iter().enumerate() {
                let v = &qkv[j * 3 * h + 2 * h + off..][..d];
                let w = pj / sum;
                o.iter_mut().zip(v).for_each(|(a, b)| *a += w * b);
            }
        }
    }
}

/// Each `q.len()`-wide row of `rows` dotted with `q` into `out` (one
/// integer per row, exact: i8 products summed in i32, which cannot overflow
/// below about two million dimensions). For docsnap's int8 vector stores,
/// whose scans are a question's other large product: built for the
/// baseline x86-64 the compiler widens bytes without `pmovsx` and this ran
/// at a third of its AVX2 speed.
pub fn dots_i8(rows: &[i8], q: &[i8], out: &mut [i32]) {
    vector_versions! {
        fn run(rows: &[i8], q: &[i8], out: &mut [i32]) {
            for (row, o) in rows.chunks_exact(q.len().max(1)).zip(out) {
                *o = dot_i8(row, q);
            }
        }
    }
    run(rows, q, out)
}

/// One dot product of [`dots_i8`], in sixteen lanes so that the compiler
/// uses the multiply-add of pairs (`pmaddwd`).
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut acc = [0i32; LANES];
    let (ac, ar) = a.split_at(a.len() - a.len() % LANES);
    let (bc, br) = b.split_at(ac.len());
    for (x, y) in ac.chunks_exact(LANES).zip(bc.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += x[l] as i32 * y[l] as i32;
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        sum += *x as i32 * *y as i32;
    }
    sum
}

/// A dot product in eight running sums, which the compiler keeps in one
/// vector register (a single running sum would forbid reordering). Public
/// for docsnap's other small products (query adapters).
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

impl Linear {
    /// `y[rows × n_out] = x[rows × n_in] Wᵀ + b`, then GELU if asked (on
    /// the threads that computed each column, while it is in cache).
    fn apply(&self, x: &[f32], rows: usize, y: &mut [f32], gelu: bool, crew: Option<&crew::Crew>) {
        debug_assert_eq!(x.len(), rows * self.n_in);
        debug_assert_eq!(y.len(), rows * self.n_out);
        let mut epilogue = Epilogue {
            scales: None,
            bias: &self.b,
            gelu,
        };
        match &self.q {
            None => matmul_into(x, rows, &self.w, self.n_out, self.n_in, y, &epilogue, crew),
            Some(q) => {
                let xq = Activations::new(&x[..rows * self.n_in], rows, self.n_out, self.n_in);
                epilogue.scales = Some((xq.scale(), &q.scale));
                qmatmul_into(&xq, rows, q, self.n_out, self.n_in, y, &epilogue, crew)
            }
        }
    }
}

/// Rearranges `n × k` row-major weights for the packed kernels: each
/// group holds `per` consecutive values of the shared dimension for
/// `block` consecutive output rows (`per` 4, `block` 8: a 32-byte vector
/// for VNNI's `dpbusd`; `block` 16: a 64-byte row of an AMX tile; `per` 2,
/// `block` 8: 16 bytes, widened to a 32-byte vector of i16 pairs for
/// AVX2's `madd`), groups ordered by block of rows, then by position in
/// `k`. `n` must be a multiple of `block` and `k` of `per`.
fn pack_lanes(q: &[i8], n: usize, k: usize, per: usize, block: usize) -> Vec<i8> {
    let groups = k / per;
    let mut out = vec![0i8; n * k];
    for (j, row) in q.chunks_exact(k).enumerate().take(n) {
        for (g, vals) in row.chunks_exact(per).enumerate() {
            let at = ((j / block * groups + g) * block + j % block) * per;
            out[at..at + per].copy_from_slice(vals);
        }
    }
    out
}

/// The 8-bit product: each row of `x` quantized like the weights, integer
/// dot products (exact, so every kernel gives the same result), rescaled.
#[allow(clippy::too_many_arguments)]
fn qmatmul_into(
    xq: &Activations,
    m: usize,
    w: &Quantized<i8>,
    n: usize,
    k: usize,
    y: &mut [f32],
    epilogue: &Epilogue,
    crew: Option<&crew::Crew>,
) {
    let x_len = match xq {
        Activations::Signed(q) => q.q.len(),
        Activations::Shifted(q) => q.q.len(),
    };
    assert!(x_len >= m * k && w.q.len() >= n * k);
    let run = |cols: std::ops::Range<usize>, y: *mut f32| {
        // SAFETY: shapes checked above; `y` is written in `cols` only.
        unsafe {
            qmatmul_cols(xq, m, w, n, k, y, cols.clone());
            epilogue.apply(y, m, n, &cols);
        }
    };
    by_column_blocks(m, n, k, y, crew, run);
}

/// Columns `cols` of the 8-bit product into `y`, unscaled.
///
/// # Safety
/// As [`matmul_cols`].
unsafe fn qmatmul_cols(
    x: &Activations,
    m: usize,
    w: &Quantized<i8>,
    n: usize,
    k: usize,
    y: *mut f32,
    cols: std::ops::Range<usize>,
) {
    let x = match x {
        Activations::Shifted(xu) => {
            // The VNNI instruction multiplies unsigned by signed bytes: the
            // shift's share (128 × the row sum of the weights) comes off
            // after.
            #[cfg(target_arch = "x86_64")]
            // SAFETY: Activations::new shifts only where VNNI runs for this
            // n and k, as Bert::load packed these weights; the rest is this
            // function's contract.
            unsafe {
                if amx_runs(n, k) {
                    amx::cols(xu.q.as_ptr(), m, w.q.as_ptr(), &w.sum, n, k, y, cols);
                } else {
                    let (_, kernel) = simd::vnni_kernels()[0];
                    kernel(xu.q.as_ptr(), m, w.q.as_ptr(), &w.sum, n, k, y, cols);
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            unreachable!("shifted activations without VNNI: {}", xu.q.len());
            return;
        }
        Activations::Signed(x) => x,
    };
    #[cfg(target_arch = "x86_64")]
    {
        if pairs_run(n, k) {
            // SAFETY: AVX2 checked by pairs_run, as Bert::load packed these
            // weights; the rest is this function's contract.
            unsafe { simd::pair_cols(x.q.as_ptr(), m, w.q.as_ptr(), &w.sum, n, k, y, cols) };
            return;
        }
        if k.is_multiple_of(16) && simd::available() {
            // SAFETY: AVX2 checked; the rest is this function's contract.
            unsafe { simd::qmatmul_cols(x.q.as_ptr(), m, w.q.as_ptr(), n, k, y, cols) };
            return;
        }
    }
    for i in 0..m {
        let xi = &x.q[i * k..][..k];
        for j in cols.clone() {
            let wj = &w.q[j * k..][..k];
            let d: i32 = xi.iter().zip(wj).map(|(&a, &b)| a as i32 * b as i32).sum();
            // SAFETY: i < m, j < n. Unscaled, as the vector kernel leaves it.
            unsafe { *y.add(i * n + j) = d as f32 };
        }
    }
}

/// What is applied to each output element once its dot product is summed.
struct Epilogue<'a> {
    /// Scales of an 8-bit product (per row of x, per column), applied first.
    scales: Option<(&'a [f32], &'a [f32])>,
    /// Added per column.
    bias: &'a [f32],
    /// Then GELU, when set.
    gelu: bool,
}

impl Epilogue<'_> {
    /// Applies to columns `cols` of the m×n matrix at `y`.
    ///
    /// # Safety
    /// `y` points at m×n values that no one else touches in `cols`.
    unsafe fn apply(&self, y: *mut f32, m: usize, n: usize, cols: &std::ops::Range<usize>) {
        vector_versions! {
            /// One row's columns: `row[c] · r · scales[c] + bias[c]`,
            /// then GELU if asked.
            fn finish(row: &mut [f32], r: Option<(f32, &[f32])>, bias: &[f32], gelu_too: bool) {
                if let Some((r, cs)) = r {
                    row.iter_mut().zip(cs).for_each(|(v, c)| *v *= r * c);
                }
                if !bias.is_empty() {
                    add_into(row, bias);
                }
                if gelu_too {
                    row.iter_mut().for_each(|v| *v = gelu(*v));
                }
            }
        }
        let bias = self.bias.get(cols.clone()).unwrap_or(&[]);
        for i in 0..m {
            // SAFETY: row i < m of y, columns within n; see the contract.
            let row = unsafe { std::slice::from_raw_parts_mut(y.add(i * n), n) };
            let scales = self.scales.map(|(rs, cs)| (rs[i], &cs[cols.clone()]));
            finish(&mut row[cols.clone()], scales, bias, self.gelu);
        }
    }
}

/// `x[m × k] · w[n × k]ᵀ` as a new row-major `m × n` matrix: the product
/// the forward pass is made of, for callers with other matrices (docsnap's
/// PCA).
pub fn matmul_t(x: &[f32], m: usize, w: &[f32], n: usize, k: usize) -> Vec<f32> {
    let mut y = vec![0f32; m * n];
    let none = Epilogue {
        scales: None,
        bias: &[],
        gelu: false,
    };
    matmul_into(x, m, w, n, k, &mut y, &none, None);
    y
}

/// Multiply-adds below which a product runs on the calling thread: handing
/// work to another core costs a few microseconds. Set so that every product
/// of a question, even of a single token (384 × 384), is split: against
/// 2²⁰ (a question of seven tokens and up) `search_docs` p50 went 4.69 →
/// 4.30 and 4.00 → 3.78 ms in alternating runs (session 37, no VNNI).
const PARALLEL_MIN_MACS: usize = 1 << 16;

/// Tokens up to which a pass forms a crew (see [`Bert::hidden_states`]):
/// a question, not a page.
const CREW_MAX_ROWS: usize = 64;

/// Chunks a crew's product is cut into (see [`by_column_blocks`]).
const CREW_CHUNKS: usize = 4;

/// `y[m × n] = x[m × k] · w[n × k]ᵀ`, on the widest kernel the CPU runs,
/// the weight rows shared out among rayon's threads (each thread reads its
/// own part of the weights once and writes its own columns of `y`).
#[allow(clippy::too_many_arguments)]
fn matmul_into(
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    y: &mut [f32],
    epilogue: &Epilogue,
    crew: Option<&crew::Crew>,
) {
    assert!(x.len() >= m * k && w.len() >= n * k && y.len() >= m * n);
    let run = |cols: std::ops::Range<usize>, y: *mut f32| {
        // SAFETY: lengths checked above; `y` is written in `cols` only.
        unsafe {
            matmul_cols(x, m, w, n, k, y, cols.clone());
            epilogue.apply(y, m, n, &cols);
        }
    };
    by_column_blocks(m, n, k, y, crew, run);
}

/// Calls `run` on column ranges that cover `0..n`, one per rayon thread when
/// the product is large enough to pay for the hand-off.
fn by_column_blocks(
    m: usize,
    n: usize,
    k: usize,
    y: &mut [f32],
    crew: Option<&crew::Crew>,
    run: impl Fn(std::ops::Range<usize>, *mut f32) + Sync,
) {
    assert!(y.len() >= m * n);
    let threads = rayon::current_num_threads().min(n / 48).max(1);
    if threads == 1 || m * n * k < PARALLEL_MIN_MACS {
        run(0..n, y.as_mut_ptr());
        return;
    }
    let out = SendPtr(y.as_mut_ptr());
    if let Some(crew) = crew {
        // More chunks than threads, so that a helper that joins late
        // leaves the caller less to wait for; whole tiles in each.
        let chunks = (n / 24).clamp(1, CREW_CHUNKS);
        let per = n.div_ceil(chunks).next_multiple_of(48);
        let out = &out;
        crew.share(chunks, &|t| {
            run((t * per).min(n)..((t + 1) * per).min(n), out.0)
        });
        return;
    }
    // Whole tiles per thread: 3 columns for the row-layout kernels, blocks
    // of 8 for the packed ones, 16 for AMX's.
    let per = n.div_ceil(threads).next_multiple_of(48);
    use rayon::prelude::*;
    (0..threads).into_par_iter().for_each(|t| {
        let cols = (t * per).min(n)..((t + 1) * per).min(n);
        let out = &out;
        // The column ranges are disjoint: no two threads write the same
        // element of y.
        run(cols, out.0);
    });
}

/// A pointer handed to worker threads that write disjoint parts of it.
struct SendPtr(*mut f32);
// SAFETY: see matmul_t: every thread writes its own columns only.
unsafe impl Sync for SendPtr {}

/// Columns `cols` of `y = x wᵀ` (y has `n` columns).
///
/// # Safety
/// `x`, `w` hold m×k and n×k values and `y` points at m×n writable values
/// that no one else writes in `cols` meanwhile.
unsafe fn matmul_cols(
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    y: *mut f32,
    cols: std::ops::Range<usize>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if k.is_multiple_of(8) && simd::available() {
            // SAFETY: the CPU has AVX2 and FMA (checked above); the rest is
            // this function's contract.
            unsafe { simd::matmul_cols(x.as_ptr(), m, w.as_ptr(), n, k, y, cols) };
            return;
        }
    }
    for i in 0..m {
        let xi = &x[i * k..][..k];
        for j in cols.clone() {
            // SAFETY: i < m and j < n, within y's m×n values.
            unsafe { *y.add(i * n + j) = dot(xi, &w[j * k..][..k]) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    //! The x86 kernels. Each keeps a tile of sums in registers while it
    //! walks the shared dimension, and a block of weights serves every
    //! token before the next is read. `tile_kernel!` makes the two over
    //! weights in rows (f32 FMA, 4 tokens × 3 rows, and AVX2 `madd`, 3 × 3;
    //! a horizontal sum per output); `packed_kernel!` the three over packed
    //! weights, one output per lane (AVX2 `madd` over pairs, 5 tokens × 16
    //! columns; AVX-VNNI and AVX-512 VNNI `dpbusd`, 6 × 16).

    use std::arch::x86_64::*;
    use std::ops::Range;
    use std::sync::OnceLock;

    /// Walks columns `cols` × rows `0..m` of the output in tiles of `$r`
    /// rows × `$c` columns, calling `$tile::<R, C>(pre…, i, j, post…)` for
    /// each: each block of `$c` weight rows (output columns) against all of
    /// x's rows, the last rows in tiles of 2 and 1 (a short question's
    /// tokens are rarely a multiple of `$r`), the last columns one by one.
    /// A macro rather than a function taking closures, so every tile call
    /// is made inside the caller's target features and inlined there.
    macro_rules! walk_tiles {
        ($m:expr, $cols:expr, $tile:ident <$r:literal, $c:literal>, ($($pre:expr),*), ($($post:expr),*)) => {{
            let (m, cols) = ($m, $cols);
            let mut j = cols.start;
            while j < cols.end {
                let c = (cols.end - j).min($c);
                let mut i = 0;
                while i < m {
                    let r = (m - i).min($r);
                    if c == $c {
                        if r == $r {
                            $tile::<$r, $c>($($pre,)* i, j, $($post),*)
                        } else {
                            let mut ii = i;
                            while ii + 2 <= i + r {
                                $tile::<2, $c>($($pre,)* ii, j, $($post),*);
                                ii += 2;
                            }
                            if ii < i + r {
                                $tile::<1, $c>($($pre,)* ii, j, $($post),*)
                            }
                        }
                    } else {
                        for ii in i..i + r {
                            for jj in j..j + c {
                                $tile::<1, 1>($($pre,)* ii, jj, $($post),*)
                            }
                        }
                    }
                    i += r;
                }
                j += c;
            }
        }};
    }

    /// Defines a kernel: `$entry` computes columns `cols` of `y = x wᵀ`
    /// (y has `n` columns, `k` a multiple of `$step`) by calling `$tile`
    /// on every tile. Each tile walks `k` in steps of `$step`: `load` reads
    /// one vector of a weight row (`w:`) or of a token (`x:`) at pointer
    /// `$p`, `madd` folds one product into an accumulator, and `store`
    /// turns a finished accumulator (of output column `$col`) into y's f32.
    macro_rules! tile_kernel {
        (
            $(#[$meta:meta])*
            fn $entry:ident / $tile:ident [$feat:literal] <$r:literal, $c:literal>
            (x: $xt:ty, w: $wt:ty $(, $extra:ident: $et:ty)*)
            step $step:literal, zero $zero:expr;
            load |$p:ident| w: $lw:expr, x: $lx:expr;
            madd |$a:ident, $xv:ident, $wv:ident| $madd:expr;
            store |$s:ident, $col:ident| $store:expr;
        ) => {
            $(#[$meta])*
            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = $feat)]
            pub unsafe fn $entry(
                xp: *const $xt,
                m: usize,
                wp: *const $wt,
                $($extra: $et,)*
                n: usize,
                k: usize,
                yp: *mut f32,
                cols: Range<usize>,
            ) {
                debug_assert!(k.is_multiple_of($step) && cols.end <= n);
                walk_tiles!(m, cols, $tile<$r, $c>, (xp, wp $(, $extra)*), (k, yp, n));
            }

            /// Rows `i..i+R` of x against rows `j..j+C` of w, into y.
            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn $tile<const R: usize, const C: usize>(
                xp: *const $xt,
                wp: *const $wt,
                $($extra: $et,)*
                i: usize,
                j: usize,
                k: usize,
                yp: *mut f32,
                n: usize,
            ) {
                let mut acc = [[$zero; C]; R];
                let (xb, wb) = (xp.add(i * k), wp.add(j * k));
                let mut c = 0;
                while c < k {
                    let mut wv = [$zero; C];
                    for (jj, v) in wv.iter_mut().enumerate() {
                        let $p = wb.add(jj * k + c);
                        *v = $lw;
                    }
                    for (r, row) in acc.iter_mut().enumerate() {
                        let $p = xb.add(r * k + c);
                        let $xv = $lx;
                        for ($a, $wv) in row.iter_mut().zip(&wv) {
                            *$a = $madd;
                        }
                    }
                    c += $step;
                }
                for (r, row) in acc.iter().enumerate() {
                    for (jj, $s) in row.iter().enumerate() {
                        let $col = j + jj;
                        *yp.add((i + r) * n + $col) = $store;
                    }
                }
            }
        };
    }

    /// Whether this CPU runs the f32 and AVX2 integer kernels (checked once).
    pub fn available() -> bool {
        static YES: OnceLock<bool> = OnceLock::new();
        *YES.get_or_init(|| {
            super::isa_cap() >= super::Isa::Avx2
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
        })
    }

    tile_kernel! {
        /// See [`super::matmul_cols`]; `k` must be a multiple of 8.
        fn matmul_cols / tile ["avx2,fma"] <4, 3> (x: f32, w: f32)
        step 8, zero _mm256_setzero_ps();
        load |p| w: _mm256_loadu_ps(p), x: _mm256_loadu_ps(p);
        madd |a, xv, wv| _mm256_fmadd_ps(xv, *wv, *a);
        store |s, col| hsum(*s);
    }

    tile_kernel! {
        /// The integer kernel: i16 values in the int8 range, products summed
        /// in i32 (exact: 127² × k stays far below 2³¹ for any BERT width),
        /// stored to `y` as f32 for the caller to rescale. `k` must be a
        /// multiple of 16.
        fn qmatmul_cols / qtile ["avx2"] <3, 3> (x: i16, w: i8)
        step 16, zero _mm256_setzero_si256();
        load |p| w: _mm256_cvtepi8_epi16(_mm_loadu_si128(p as *const __m128i)),
            x: _mm256_loadu_si256(p as *const __m256i);
        madd |a, xv, wv| _mm256_add_epi32(*a, _mm256_madd_epi16(xv, *wv));
        store |s, col| hsum_i32(*s) as f32;
    }

    /// Defines a kernel over weights packed by [`super::pack_lanes`]:
    /// `$per` consecutive values of `k` for each of 8 output columns per
    /// group, each token's matching `$per` values (4 bytes) broadcast
    /// against them, and every product summed into its column's own i32
    /// lane, so no horizontal sum is ever needed (with the rows' layout
    /// those were a third of a short product's work). `load` reads a
    /// group's weights at `$p`, `madd` folds one group into a sum, `exact`
    /// turns a finished sum (with `$ws` pointing at its 8 columns' weight
    /// sums) into the integer the row kernels compute, so the same f32.
    /// Columns come in blocks of 8 (`cols` and `n` multiples of 8), `k` a
    /// multiple of `$per`; tiles are up to `$rows` tokens × 2 blocks.
    ///
    /// The VNNI ones: activations as unsigned bytes (shifted by 128),
    /// weights as signed bytes, `dpbusd` summing four products per lane;
    /// the shift's share (128 × `wsum[j]`) comes off in i32. AVX-VNNI
    /// (Intel since Alder Lake, AMD since Zen 5) and AVX-512 VNNI on
    /// 256-bit vectors (Intel since Ice Lake, AMD Zen 4) are the same
    /// instruction in two encodings.
    macro_rules! packed_kernel {
        (
            $(#[$meta:meta])*
            fn $entry:ident / $tile:ident [$feat:literal] (x: $xt:ty, $per:literal per lane), rows $rows:literal;
            load |$p:ident| $load:expr;
            madd |$a:ident, $xv:ident, $wv:ident| $madd:expr;
            exact |$sum:ident, $ws:ident| $exact:expr;
        ) => {
            $(#[$meta])*
            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = $feat)]
            pub unsafe fn $entry(
                xp: *const $xt,
                m: usize,
                wp: *const i8,
                wsum: &[i32],
                n: usize,
                k: usize,
                yp: *mut f32,
                cols: Range<usize>,
            ) {
                debug_assert!(k.is_multiple_of($per) && n.is_multiple_of(8));
                debug_assert!(cols.start.is_multiple_of(8) && cols.end <= n);
                let (mut b, end) = (cols.start / 8, cols.end.div_ceil(8));
                while b < end {
                    let blocks = (end - b).min(2);
                    let mut i = 0;
                    while i < m {
                        // The last rows of a question (a dozen to thirty
                        // tokens) in one tile of their own height, not one
                        // pass over the weights per row.
                        let r = (m - i).min($rows);
                        match (r, blocks) {
                            (6, 2) => $tile::<6, 2>(xp, wp, wsum, i, b, k, yp, n),
                            (5, 2) => $tile::<5, 2>(xp, wp, wsum, i, b, k, yp, n),
                            (4, 2) => $tile::<4, 2>(xp, wp, wsum, i, b, k, yp, n),
                            (3, 2) => $tile::<3, 2>(xp, wp, wsum, i, b, k, yp, n),
                            (2, 2) => $tile::<2, 2>(xp, wp, wsum, i, b, k, yp, n),
                            (_, 2) => $tile::<1, 2>(xp, wp, wsum, i, b, k, yp, n),
                            _ => {
                                for ii in i..i + r {
                                    $tile::<1, 1>(xp, wp, wsum, ii, b, k, yp, n);
                                }
                            }
                        }
                        i += r;
                    }
                    b += blocks;
                }
            }

            /// Rows `i..i+R` of x against column blocks `b..b+B`, into y.
            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn $tile<const R: usize, const B: usize>(
                xp: *const $xt,
                wp: *const i8,
                wsum: &[i32],
                i: usize,
                b: usize,
                k: usize,
                yp: *mut f32,
                n: usize,
            ) {
                let groups = k / $per;
                let mut acc = [[_mm256_setzero_si256(); B]; R];
                for g in 0..groups {
                    let mut wv = [_mm256_setzero_si256(); B];
                    for (c, v) in wv.iter_mut().enumerate() {
                        let $p = wp.add(((b + c) * groups + g) * 8 * $per);
                        *v = $load;
                    }
                    for (r, row) in acc.iter_mut().enumerate() {
                        // A token's `$per` values of this group: 4 bytes.
                        let at = xp.add((i + r) * k + g * $per) as *const i32;
                        let $xv = _mm256_set1_epi32(at.read_unaligned());
                        for ($a, $wv) in row.iter_mut().zip(&wv) {
                            *$a = $madd;
                        }
                    }
                }
                for (r, row) in acc.iter().enumerate() {
                    for (c, $sum) in row.iter().enumerate() {
                        let col = (b + c) * 8;
                        let $ws = wsum.as_ptr().add(col);
                        _mm256_storeu_ps(yp.add((i + r) * n + col), _mm256_cvtepi32_ps($exact));
                    }
                }
            }
        };
    }

    packed_kernel! {
        /// The AVX2 kernel over weights packed in pairs
        /// ([`super::pack_lanes`] with 2): each 16 bytes of weights,
        /// widened to i16, hold two consecutive values of `k` for 8 output
        /// columns; `madd` against a token's two matching values
        /// (broadcast) sums both products into the column's own i32 lane.
        /// 5 rows × 2 blocks: 10 sums, 2 weight vectors, the token's pair
        /// and a product fit the 16 registers. `wsum` is not read; `y` gets
        /// the integer sums, as from [`qmatmul_cols`].
        fn pair_cols / ptile ["avx2"] (x: i16, 2 per lane), rows 5;
        load |p| _mm256_cvtepi8_epi16(_mm_loadu_si128(p as *const __m128i));
        madd |a, xv, wv| _mm256_add_epi32(*a, _mm256_madd_epi16(xv, *wv));
        exact |sum, _ws| *sum;
    }

    packed_kernel! {
        fn vnni_avx_cols / vtile ["avx2,avxvnni"] (x: u8, 4 per lane), rows 6;
        load |p| _mm256_loadu_si256(p as *const __m256i);
        madd |a, xv, wv| _mm256_dpbusd_avx_epi32(*a, xv, *wv);
        exact |sum, ws| _mm256_sub_epi32(*sum, _mm256_slli_epi32(_mm256_loadu_si256(ws as *const __m256i), 7));
    }
    packed_kernel! {
        fn vnni_512_cols / vtile512 ["avx2,avx512vnni,avx512vl"] (x: u8, 4 per lane), rows 6;
        load |p| _mm256_loadu_si256(p as *const __m256i);
        madd |a, xv, wv| _mm256_dpbusd_epi32(*a, xv, *wv);
        exact |sum, ws| _mm256_sub_epi32(*sum, _mm256_slli_epi32(_mm256_loadu_si256(ws as *const __m256i), 7));
    }

    /// A VNNI kernel: `(x, m, packed w, wsum, n, k, y, cols)`, as made by
    /// `packed_kernel!`.
    pub type VnniKernel =
        unsafe fn(*const u8, usize, *const i8, &[i32], usize, usize, *mut f32, Range<usize>);

    /// Every VNNI kernel this CPU runs, by name (checked once): the first
    /// is the one products use, the others are tested against it.
    pub fn vnni_kernels() -> &'static [(&'static str, VnniKernel)] {
        static KERNELS: OnceLock<Vec<(&'static str, VnniKernel)>> = OnceLock::new();
        KERNELS.get_or_init(|| {
            let mut k: Vec<(&'static str, VnniKernel)> = Vec::new();
            if super::isa_cap() < super::Isa::Vnni {
                return k;
            }
            if available() && is_x86_feature_detected!("avxvnni") {
                k.push(("avxvnni", vnni_avx_cols));
            }
            if available()
                && is_x86_feature_detected!("avx512vnni")
                && is_x86_feature_detected!("avx512vl")
            {
                k.push(("avx512vnni", vnni_512_cols));
            }
            k
        })
    }

    /// Whether this CPU runs a VNNI kernel.
    pub fn vnni() -> bool {
        !vnni_kernels().is_empty()
    }

    /// `2^(i/32)`, the nearest double, less `i << 47` (what the exponent
    /// adds back): the table of [`exp_less`]'s scheme, which is the one
    /// glibc's `expf` runs (from Arm's optimized-routines). Tested against
    /// `2^(i/32)` computed here.
    pub const EXP_TABLE: [u64; 32] = [
        0x3ff0000000000000,
        0x3fefd9b0d3158574,
        0x3fefb5586cf9890f,
        0x3fef9301d0125b51,
        0x3fef72b83c7d517b,
        0x3fef54873168b9aa,
        0x3fef387a6e756238,
        0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715,
        0x3feef1a7373aa9cb,
        0x3feedea64c123422,
        0x3feece086061892d,
        0x3feebfdad5362a27,
        0x3feeb42b569d4f82,
        0x3feeab07dd485429,
        0x3feea47eb03a5585,
        0x3feea09e667f3bcd,
        0x3fee9f75e8ec5f74,
        0x3feea11473eb0187,
        0x3feea589994cce13,
        0x3feeace5422aa0db,
        0x3feeb737b0cdc5e5,
        0x3feec49182a3f090,
        0x3feed503b23e255d,
        0x3feee89f995ad3ad,
        0x3feeff76f2fb5e47,
        0x3fef199bdd85529c,
        0x3fef3720dcef9069,
        0x3fef5818dcfba487,
        0x3fef7c97337b9b5f,
        0x3fefa4afa2a490da,
        0x3fefd0765b6e4540,
    ];
    /// `32 / ln 2`, rounded to a double.
    const EXP_INV_LN2_N: f64 = f64::from_bits(0x40471547652b82fe);
    /// Adding it rounds a double of magnitude below 2⁵¹ to an integer held
    /// in its low mantissa bits.
    const EXP_SHIFT: f64 = f64::from_bits(0x4338000000000000);
    /// The polynomial for `2^(r/32)`, `|r| ≤ 1/2`: `C0 r³ + C1 r² + C2 r + 1`.
    const EXP_C: [f64; 3] = [
        f64::from_bits(0x3ebc6af84b912394),
        f64::from_bits(0x3f2ebfce50fac4f3),
        f64::from_bits(0x3f962e42ff0c52d6),
    ];

    /// [`super::scores`] in AVX2: the eight running sums in eight
    /// registers, each a lane per key (the same products and sums in the
    /// same order; the compiler's own vectorization of it spilled them).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn scores(q: &[f32], kb: &[f32], scale: f32, out: &mut [f32]) {
        let d = q.len();
        let full = d / 8 * 8;
        assert!(kb.len() >= d * 8 && out.len() >= 8);
        let (qp, kp) = (q.as_ptr(), kb.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 8];
        for c in (0..full).step_by(8) {
            for (l, a) in acc.iter_mut().enumerate() {
                let e = c + l;
                let k = _mm256_loadu_ps(kp.add(e * 8));
                *a = _mm256_add_ps(*a, _mm256_mul_ps(_mm256_set1_ps(*qp.add(e)), k));
            }
        }
        // Both sums start where `Iterator::sum` does, at −0.0.
        let mut sum = _mm256_set1_ps(-0.0);
        for a in acc {
            sum = _mm256_add_ps(sum, a);
        }
        let mut tail = _mm256_set1_ps(-0.0);
        for e in full..d {
            let k = _mm256_loadu_ps(kp.add(e * 8));
            tail = _mm256_add_ps(tail, _mm256_mul_ps(_mm256_set1_ps(*qp.add(e)), k));
        }
        let r = _mm256_mul_ps(_mm256_add_ps(sum, tail), _mm256_set1_ps(scale));
        _mm256_storeu_ps(out.as_mut_ptr(), r);
    }

    /// Whether this CPU runs the AVX-512 attention (checked once).
    pub fn avx512() -> bool {
        static YES: OnceLock<bool> = OnceLock::new();
        *YES.get_or_init(|| {
            super::isa_cap() >= super::Isa::Avx512
                && available()
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
        })
    }

    /// [`scores`] for blocks of sixteen keys (`kt`: each block `d` rows,
    /// row `e` coordinate `e` of its keys), one key per lane of a 512-bit
    /// vector: per lane the same products and sums in the same order. All
    /// of a query's blocks in one call, so that one block's closing sums
    /// overlap the next one's products.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn scores_wide(q: &[f32], kt: &[f32], scale: f32, out: &mut [f32]) {
        let d = q.len();
        let blocks = kt.len() / (d * 16).max(1);
        assert!(out.len() >= blocks * 16);
        let mut b = 0;
        while b + 2 <= blocks {
            scores_blocks_wide::<2>(
                q,
                kt.as_ptr().add(b * d * 16),
                scale,
                out.as_mut_ptr().add(b * 16),
            );
            b += 2;
        }
        if b < blocks {
            scores_blocks_wide::<1>(
                q,
                kt.as_ptr().add(b * d * 16),
                scale,
                out.as_mut_ptr().add(b * 16),
            );
        }
    }

    /// `B` consecutive blocks of [`scores_wide`] side by side (two: one
    /// block's closing chain of additions no longer stalls the next).
    ///
    /// # Safety
    /// AVX-512F; `kp` holds `B` blocks of `q.len() × 16`, `op` `B × 16`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn scores_blocks_wide<const B: usize>(
        q: &[f32],
        kp: *const f32,
        scale: f32,
        op: *mut f32,
    ) {
        let d = q.len();
        let full = d / 8 * 8;
        let qp = q.as_ptr();
        let mut acc = [[_mm512_setzero_ps(); 8]; B];
        for c in (0..full).step_by(8) {
            for l in 0..8 {
                let e = c + l;
                let qe = _mm512_set1_ps(*qp.add(e));
                for (blk, a) in acc.iter_mut().enumerate() {
                    let k = _mm512_loadu_ps(kp.add(blk * d * 16 + e * 16));
                    a[l] = _mm512_add_ps(a[l], _mm512_mul_ps(qe, k));
                }
            }
        }
        for (blk, a) in acc.iter().enumerate() {
            // Both sums start where `Iterator::sum` does, at −0.0.
            let mut sum = _mm512_set1_ps(-0.0);
            for &v in a {
                sum = _mm512_add_ps(sum, v);
            }
            let mut tail = _mm512_set1_ps(-0.0);
            for e in full..d {
                let k = _mm512_loadu_ps(kp.add(blk * d * 16 + e * 16));
                tail = _mm512_add_ps(tail, _mm512_mul_ps(_mm512_set1_ps(*qp.add(e)), k));
            }
            let r = _mm512_mul_ps(_mm512_add_ps(sum, tail), _mm512_set1_ps(scale));
            _mm512_storeu_ps(op.add(blk * 16), r);
        }
    }

    /// `super::weighted_sum` for `group` (at most 8) rows of weights at
    /// once: row `g` of `p` (rows `width` apart, `n` weights each) against
    /// the `n` rows of `v` (`d` wide, a multiple of 32) into `out + g ·
    /// stride`. Each coordinate is summed from zero over the keys in
    /// order, a product then an addition, as there; the eight queries'
    /// sums are independent chains, so an addition no longer waits on the
    /// one before it. Rows of `p` past `group` are read (the buffer holds
    /// 8) and their sums dropped.
    ///
    /// # Safety
    /// AVX-512F; `p` holds 8 rows of `width ≥ n`, `v` `n × d` values,
    /// `out` `(group − 1) · stride + d`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn weighted_sums(
        p: *const f32,
        width: usize,
        group: usize,
        v: *const f32,
        d: usize,
        n: usize,
        out: *mut f32,
        stride: usize,
    ) {
        for c in (0..d).step_by(32) {
            let mut acc = [[_mm512_setzero_ps(); 2]; 8];
            for j in 0..n {
                let row = v.add(j * d + c);
                let (v0, v1) = (_mm512_loadu_ps(row), _mm512_loadu_ps(row.add(16)));
                for (g, a) in acc.iter_mut().enumerate() {
                    let w = _mm512_set1_ps(*p.add(g * width + j));
                    a[0] = _mm512_add_ps(a[0], _mm512_mul_ps(w, v0));
                    a[1] = _mm512_add_ps(a[1], _mm512_mul_ps(w, v1));
                }
            }
            for (g, a) in acc.iter().enumerate().take(group) {
                let o = out.add(g * stride + c);
                _mm512_storeu_ps(o, a[0]);
                _mm512_storeu_ps(o.add(16), a[1]);
            }
        }
    }

    /// [`exp_less`] eight at a time in 512-bit doubles: the same steps on
    /// each value, so the same bits (tested against it and `f32::exp`),
    /// with [`EXP_TABLE`] held in four registers and read by permutes
    /// instead of a gather, which was half of what remained of attention.
    #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub unsafe fn exp_less_wide(p: &mut [f32], max: f32) {
        let inv = _mm512_set1_pd(EXP_INV_LN2_N);
        let shift = _mm512_set1_pd(EXP_SHIFT);
        let (c0, c1, c2) = (
            _mm512_set1_pd(EXP_C[0]),
            _mm512_set1_pd(EXP_C[1]),
            _mm512_set1_pd(EXP_C[2]),
        );
        let one = _mm512_set1_pd(1.0);
        let table = EXP_TABLE.as_ptr() as *const __m512i;
        let (t0, t1, t2, t3) = (
            _mm512_loadu_si512(table),
            _mm512_loadu_si512(table.add(1)),
            _mm512_loadu_si512(table.add(2)),
            _mm512_loadu_si512(table.add(3)),
        );
        let m = _mm256_set1_ps(max);
        let mut chunks = p.chunks_exact_mut(8);
        for c in &mut chunks {
            let x = _mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), m);
            // glibc's special cases, as in `exp_less`.
            let top = _mm256_and_si256(
                _mm256_srli_epi32(_mm256_castps_si256(x), 20),
                _mm256_set1_epi32(0x7ff),
            );
            if _mm256_movemask_epi8(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42a))) != 0 {
                // Four at a time as `exp_less` takes them apart.
                exp_less(c, max);
                continue;
            }
            let xd = _mm512_cvtps_pd(x);
            let kd = _mm512_fmadd_pd(inv, xd, shift);
            let ki = _mm512_castpd_si512(kd);
            let kd = _mm512_sub_pd(kd, shift);
            let r = _mm512_fmsub_pd(inv, xd, kd);
            // Entry `ki mod 32`: the low four bits pick within a half of
            // the table, bit 4 the half.
            let low = _mm512_permutex2var_epi64(t0, ki, t1);
            let high = _mm512_permutex2var_epi64(t2, ki, t3);
            let upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
            let t = _mm512_mask_blend_epi64(upper, low, high);
            let s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64::<47>(ki)));
            let z = _mm512_fmadd_pd(c0, r, c1);
            let r2 = _mm512_mul_pd(r, r);
            let y = _mm512_fmadd_pd(c2, r, one);
            let y = _mm512_mul_pd(_mm512_fmadd_pd(z, r2, y), s);
            _mm256_storeu_ps(c.as_mut_ptr(), _mm512_cvtpd_ps(y));
        }
        exp_less(chunks.into_remainder(), max);
    }

    /// `p[j] = e^(p[j] − max)` for every `j`, four at a time in doubles:
    /// `x = k/32 · ln 2 + r`, `2^(k/32)` from [`EXP_TABLE`] and the
    /// exponent bits, `2^(r/32)` by a cubic, rounded once to f32. These are
    /// glibc's `expf` steps, fused multiply-adds where its FMA build has
    /// them, so on glibc (what builds artifacts here) each value is
    /// bit-identical to `f32::exp` (tested); a group of four holding a value
    /// outside (−88, 88) or NaN goes to `f32::exp` as it is, as glibc
    /// takes those apart. A libm call per value was a quarter of a page's
    /// attention.
    #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn exp_less(p: &mut [f32], max: f32) {
        let inv = _mm256_set1_pd(EXP_INV_LN2_N);
        let shift = _mm256_set1_pd(EXP_SHIFT);
        let (c0, c1, c2) = (
            _mm256_set1_pd(EXP_C[0]),
            _mm256_set1_pd(EXP_C[1]),
            _mm256_set1_pd(EXP_C[2]),
        );
        let one = _mm256_set1_pd(1.0);
        let m = _mm_set1_ps(max);
        let mut chunks = p.chunks_exact_mut(4);
        for c in &mut chunks {
            let x = _mm_sub_ps(_mm_loadu_ps(c.as_ptr()), m);
            // glibc's special cases start where the top 12 bits (sign
            // dropped) reach those of 88.0 (0x42b).
            let top = _mm_and_si128(
                _mm_srli_epi32(_mm_castps_si128(x), 20),
                _mm_set1_epi32(0x7ff),
            );
            if _mm_movemask_epi8(_mm_cmpgt_epi32(top, _mm_set1_epi32(0x42a))) != 0 {
                let mut xs = [0f32; 4];
                _mm_storeu_ps(xs.as_mut_ptr(), x);
                for (o, x) in c.iter_mut().zip(xs) {
                    *o = x.exp();
                }
                continue;
            }
            let xd = _mm256_cvtps_pd(x);
            let kd = _mm256_fmadd_pd(inv, xd, shift);
            let ki = _mm256_castpd_si256(kd);
            let kd = _mm256_sub_pd(kd, shift);
            let r = _mm256_fmsub_pd(inv, xd, kd);
            let idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
            let t = _mm256_i64gather_epi64::<8>(EXP_TABLE.as_ptr() as *const i64, idx);
            let s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64::<47>(ki)));
            let z = _mm256_fmadd_pd(c0, r, c1);
            let r2 = _mm256_mul_pd(r, r);
            let y = _mm256_fmadd_pd(c2, r, one);
            let y = _mm256_mul_pd(_mm256_fmadd_pd(z, r2, y), s);
            _mm_storeu_ps(c.as_mut_ptr(), _mm256_cvtpd_ps(y));
        }
        for v in chunks.into_remainder() {
            *v = (*v - max).exp();
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn hsum_i32(a: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        let s = _mm_hadd_epi32(s, s);
        _mm_cvtsi128_si32(_mm_hadd_epi32(s, s))
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_hadd_ps(s, s);
        _mm_cvtss_f32(_mm_hadd_ps(s, s))
    }
}

/// Reads and checks a BERT folder's `config.json`: what its caller may
/// want to check before the weights are read.
pub fn read_config(dir: &Path) -> Result<BertConfig, BertError> {
    let path = dir.join("config.json");
    let text = fs::read_to_string(&path).map_err(|source| BertError::Io {
        path: path.clone(),
        source,
    })?;
    Bert::parse_config(&path, &text)
}

/// Reads a BERT folder's `model.safetensors`, one tensor at a time, into a
/// [`Bert`] of `config` (from [`read_config`]).
pub fn load_folder(
    dir: &Path,
    config: BertConfig,
    precision: Precision,
) -> Result<Bert, BertError> {
    isa_setting()?;
    let weights_path = dir.join("model.safetensors");
    let file = fs::File::open(&weights_path).map_err(|source| BertError::Io {
        path: weights_path.clone(),
        source,
    })?;
    let w = Weights::open(&weights_path, &file)?;
    Bert::from_weights(config, &w, precision)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The weights quantized on the AVX2 path are the integers, scales and
    /// sums of the baseline one, halves (ties), zeros and a NaN included:
    /// the vectors of an artifact do not depend on which path loaded the
    /// model.
    #[test]
    fn weights_quantize_alike_on_every_path() {
        let (rows, k) = (7, 37);
        let mut w: Vec<f32> = (0..rows * k)
            .map(|v| ((v * 61 % 255) as f32 - 127.0) / 3.0)
            .collect();
        // Exact halves after scaling (max 127 → scale 1), a zero row, a NaN.
        w[..k]
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as f32 - 18.5);
        w[k - 1] = 127.0;
        w[2 * k..3 * k].iter_mut().for_each(|x| *x = 0.0);
        w[3 * k + 5] = f32::NAN;
        let fast = quantize_weights(&w, rows, k);
        let plain = Quantized::rows(&w, rows, k, |v| v as i8);
        assert_eq!(fast.q, plain.q);
        assert_eq!(fast.sum, plain.sum);
        let bits = |q: &Quantized<i8>| q.scale.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&plain));
        // The halves rounded away from zero, as f32::round does.
        assert!(plain.q[..k - 1]
            .iter()
            .enumerate()
            .all(|(i, &q)| f32::from(q) == (i as f32 - 18.5).round()));
    }

    /// The cap reads each level by name (any case), caps nothing unset,
    /// and refuses what it does not know with the variable named.
    #[test]
    fn the_instruction_set_cap_reads_its_names() {
        assert_eq!(Isa::parse(None).unwrap(), Isa::Amx);
        assert_eq!(Isa::parse(Some("AVX2")).unwrap(), Isa::Avx2);
        assert_eq!(Isa::parse(Some(" portable ")).unwrap(), Isa::Portable);
        assert!(Isa::Portable < Isa::Avx2 && Isa::Vnni < Isa::Avx512 && Isa::Avx512 < Isa::Amx);
        assert_eq!(Isa::Avx512.to_string(), "avx512");
        assert!(kernels() <= isa_cap());
        let e = Isa::parse(Some("avx1024")).unwrap_err().to_string();
        assert!(
            e.contains(ISA_ENV) && e.contains("avx1024") && e.contains("portable"),
            "{e}"
        );
    }

    /// Every 8-bit kernel this CPU runs gives exactly the integer sums of
    /// the definition: the vectors of an artifact do not depend on the
    /// machine that built it.
    #[test]
    fn int8_kernels_agree_exactly() {
        // Shapes with remainders for every tile walk: the packed kernels'
        // (6 rows × 2 blocks of 8) and the row kernels' (4 × 3).
        for (m, n, k) in [
            (5, 7, 64),
            (4, 3, 32),
            (9, 4, 48),
            (2, 5, 16),
            (13, 40, 36),
            (7, 8, 4),
            // VNNI shapes whose last rows make tiles of 5, 4, 3 and 2.
            (11, 16, 8),
            (10, 24, 12),
            (9, 16, 4),
            (8, 16, 8),
            (4, 8, 4),
            // AMX shapes (k a multiple of 64): two tiles of tokens, one,
            // a short last one; pairs of column blocks and a single one.
            (37, 32, 128),
            (20, 32, 128),
            (16, 16, 64),
            (33, 48, 192),
            (3, 16, 64),
            (50, 64, 384),
        ] {
            let x: Vec<f32> = (0..m * k)
                .map(|v| ((v * 37 % 101) as f32 - 50.0) / 7.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|v| ((v * 53 % 97) as f32 - 48.0) / 9.0)
                .collect();
            let xq = Quantized::<i16>::rows(&x, m, k, |v| v);
            let wq = Quantized::<i8>::rows(&w, n, k, |v| v as i8);
            let want: Vec<f32> = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    (0..k)
                        .map(|c| xq.q[i * k + c] as i32 * wq.q[j * k + c] as i32)
                        .sum::<i32>() as f32
                })
                .collect();
            let shifted = Quantized::<u8>::rows(&x, m, k, |v| (v + 128) as u8);
            let signed = Activations::Signed(Quantized::rows(&x, m, k, |v| v));
            // The weights in the layout Bert::load gives them here.
            let loaded = Quantized {
                q: if pairs_run(n, k) {
                    pack_lanes(&wq.q, n, k, 2, 8)
                } else {
                    wq.q.clone()
                },
                scale: wq.scale.clone(),
                sum: wq.sum.clone(),
            };
            let mut y = vec![0f32; m * n];
            // SAFETY: shapes as allocated above.
            unsafe { qmatmul_cols(&signed, m, &loaded, n, k, y.as_mut_ptr(), 0..n) };
            assert_eq!(y, want, "({m},{n},{k}) signed");
            // A packed kernel, on the whole matrix and on a range of column
            // blocks: `run(y, cols)` fills those columns of y.
            let packed_agrees_from =
                |name: &str, block: usize, run: &dyn Fn(*mut f32, std::ops::Range<usize>)| {
                    for cols in [0..n, block.min(n)..n] {
                        let mut y = vec![0f32; m * n];
                        run(y.as_mut_ptr(), cols.clone());
                        for (e, (got, want)) in y.iter().zip(&want).enumerate() {
                            let want = if cols.contains(&(e % n)) { *want } else { 0.0 };
                            assert_eq!(*got, want, "({m},{n},{k}) {name} {cols:?} at {e}");
                        }
                    }
                };
            let packed_agrees = |name: &str, run: &dyn Fn(*mut f32, std::ops::Range<usize>)| {
                packed_agrees_from(name, 8, run)
            };
            // The AVX2 kernels over rows and over pairs, whichever the
            // dispatch picks.
            #[cfg(target_arch = "x86_64")]
            if simd::available() {
                let Activations::Signed(xs) = &signed else {
                    unreachable!()
                };
                if k % 16 == 0 {
                    let mut y = vec![0f32; m * n];
                    let (x, w) = (xs.q.as_ptr(), wq.q.as_ptr());
                    // SAFETY: AVX2 detected; shapes as allocated above.
                    unsafe { simd::qmatmul_cols(x, m, w, n, k, y.as_mut_ptr(), 0..n) };
                    assert_eq!(y, want, "({m},{n},{k}) rows");
                }
                if n % 8 == 0 && k % 2 == 0 {
                    let packed = pack_lanes(&wq.q, n, k, 2, 8);
                    let (x, w) = (xs.q.as_ptr(), packed.as_ptr());
                    // SAFETY: AVX2 detected; shapes as allocated above.
                    packed_agrees("pairs", &|y, cols| unsafe {
                        simd::pair_cols(x, m, w, &wq.sum, n, k, y, cols)
                    });
                }
            }
            // Each VNNI encoding this CPU has, whichever the dispatch picks.
            #[cfg(target_arch = "x86_64")]
            if n % 8 == 0 {
                let packed = pack_lanes(&wq.q, n, k, 4, 8);
                let (x, w) = (shifted.q.as_ptr(), packed.as_ptr());
                for &(name, kernel) in simd::vnni_kernels() {
                    // SAFETY: the kernel's features were detected; shapes
                    // as allocated above.
                    packed_agrees(name, &|y, cols| unsafe {
                        kernel(x, m, w, &wq.sum, n, k, y, cols)
                    });
                }
            }
            // AMX tiles, over weights in blocks of 16 columns.
            #[cfg(target_arch = "x86_64")]
            if amx_runs(n, k) {
                let packed = pack_lanes(&wq.q, n, k, 4, 16);
                let (x, w) = (shifted.q.as_ptr(), packed.as_ptr());
                // SAFETY: amx_runs checked the CPU, the grant and the
                // shape; shapes as allocated above.
                packed_agrees_from("amx", 16, &|y, cols| unsafe {
                    amx::cols(x, m, w, &wq.sum, n, k, y, cols)
                });
            }
            // And the quantization is what it says: within half a step.
            for (row, i) in x.chunks_exact(k).zip(0..) {
                for (v, q) in row.iter().zip(&xq.q[i * k..(i + 1) * k]) {
                    assert!((v - *q as f32 * xq.scale[i]).abs() <= 0.5001 * xq.scale[i]);
                }
            }
        }
    }

    /// A weights file is read tensor by tensor from its header's offsets;
    /// one that is cut short (an interrupted download) or whose tensor is
    /// not what the header says is refused with the file and the tensor
    /// named, before any forward pass.
    #[test]
    fn weights_are_read_by_their_header_and_damage_is_refused() {
        let values: Vec<u8> = [1.5f32, -2.0, 0.25, 4.0, 8.0, -0.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 3], &values)
                .unwrap();
        let bytes = safetensors::serialize([("t.weight", view)], None).unwrap();
        let dir = std::env::temp_dir().join(format!("docsnap-bert-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("model.safetensors");
        // `bytes` written as the weights file; what opening it says.
        let open = |bytes: &[u8]| {
            fs::write(&path, bytes).unwrap();
            let file = fs::File::open(&path).unwrap();
            Weights::open(&path, &file).err().map(|e| e.to_string())
        };
        assert_eq!(open(&bytes), None);
        let file = fs::File::open(&path).unwrap();
        let w = Weights::open(&path, &file).unwrap();
        assert_eq!(w.shape("t.weight"), Some(&[2usize, 3][..]));
        assert_eq!(
            w.get("t.weight", &[2, 3]).unwrap(),
            [1.5, -2.0, 0.25, 4.0, 8.0, -0.5]
        );
        let e = w.get("t.weight", &[3, 2]).unwrap_err().to_string();
        assert!(
            e.contains("tensor t.weight has shape [2, 3], expected [3, 2]"),
            "{e}"
        );
        let e = w.get("u.weight", &[1]).unwrap_err().to_string();
        assert!(e.contains("tensor u.weight: not in the file"), "{e}");
        drop(w);
        let e = open(&bytes[..bytes.len() - 4]).unwrap();
        assert!(
            e.contains("model.safetensors") && e.contains("truncated"),
            "{e}"
        );
        let e = open(&bytes[..5]).unwrap();
        assert!(e.contains("shorter than the header"), "{e}");
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        let e = open(&huge).unwrap();
        assert!(e.contains("a header of"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn matmul_matches_the_definition_on_ragged_shapes() {
        // Shapes that leave remainders in both tile directions.
        for (m, n, k) in [(1, 1, 8), (5, 7, 16), (9, 4, 24), (3, 3, 5)] {
            let x: Vec<f32> = (0..m * k)
                .map(|v| ((v * 7 % 13) as f32 - 6.0) / 5.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|v| ((v * 5 % 11) as f32 - 5.0) / 3.0)
                .collect();
            let y = matmul_t(&x, m, &w, n, k);
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|c| x[i * k + c] * w[j * k + c]).sum();
                    assert!(
                        (y[i * n + j] - want).abs() < 1e-4 * (1.0 + want.abs()),
                        "({m},{n},{k}) y[{i},{j}] = {} want {want}",
                        y[i * n + j]
                    );
                }
            }
        }
    }

    #[test]
    fn a_product_split_between_threads_is_the_one_thread_product() {
        // A question's products (a few rows) are split between threads as
        // a page's are; the split must not change a single bit.
        let (n, k) = (384, 384);
        let mut next = values(7);
        let w: Vec<f32> = (0..n * k).map(|_| next()).collect();
        for m in [1, 3, 12] {
            let x: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let on = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    assert_eq!(rayon::current_num_threads(), threads);
                    matmul_t(&x, m, &w, n, k)
                })
            };
            let (one, two) = (on(1), on(2));
            assert!(
                one.iter()
                    .zip(&two)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "m = {m}"
            );
            let want: f32 = (0..k).map(|c| x[c] * w[(n - 1) * k + c]).sum();
            assert!((two[n - 1] - want).abs() < 1e-3 * (1.0 + want.abs()));
        }
    }

    /// Repeatable values in [−10, 10) with three decimals (xorshift).
    fn values(mut seed: u32) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 20_000) as f32 / 1000.0 - 10.0
        }
    }

    #[test]
    fn attention_is_bit_identical_to_one_dot_product_per_key() {
        // Head widths with and without a remainder past the eight lanes,
        // lengths with and without one past the blocks of eight keys.
        let mut next = values(0x9e37_79b9);
        for (n, h, heads) in [
            (1, 64, 2),
            (7, 64, 2),
            (8, 384, 12),
            (19, 384, 12),
            (33, 36, 3),
            // Heads 64 wide (two passes of the wide weighted sums), a
            // page's length, and groups of eight with a remainder.
            (40, 128, 2),
            (17, 768, 12),
            (203, 384, 12),
        ] {
            let qkv: Vec<f32> = (0..n * 3 * h).map(|_| next()).collect();
            let mut got = vec![0f32; n * h];
            let mut want = vec![0f32; n * h];
            attention(&qkv, n, h, heads, &mut got);
            attention_reference(&qkv, n, h, heads, &mut want);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "({n},{h},{heads}) [{i}]: {g} vs {w}"
                );
            }
        }
        // The portable scores (what a CPU without AVX2 runs) and the
        // vector ones, against one dot product per key.
        for d in [32, 36, 5] {
            let q: Vec<f32> = (0..d).map(|_| next()).collect();
            let keys: Vec<Vec<f32>> = (0..LANES)
                .map(|_| (0..d).map(|_| next()).collect())
                .collect();
            let mut kb = vec![0f32; d * LANES];
            for (j, k) in keys.iter().enumerate() {
                for (e, &x) in k.iter().enumerate() {
                    kb[e * LANES + j] = x;
                }
            }
            let want: Vec<u32> = keys.iter().map(|k| (dot(&q, k) * 0.25).to_bits()).collect();
            let mut got = [0f32; LANES];
            scores(&q, &kb, 0.25, &mut got);
            assert_eq!(got.map(f32::to_bits).to_vec(), want, "portable, d {d}");
            #[cfg(target_arch = "x86_64")]
            if simd::available() {
                // SAFETY: AVX2 and FMA checked.
                unsafe { simd::scores(&q, &kb, 0.25, &mut got) };
                assert_eq!(got.map(f32::to_bits).to_vec(), want, "AVX2, d {d}");
            }
            // Sixteen keys a block: these eight twice over, each lane as
            // its key's dot product.
            #[cfg(target_arch = "x86_64")]
            if simd::avx512() {
                let mut wide = vec![0f32; d * WIDE_LANES];
                for (j, k) in keys.iter().chain(&keys).enumerate() {
                    for (e, &x) in k.iter().enumerate() {
                        wide[e * WIDE_LANES + j] = x;
                    }
                }
                let mut got = [0f32; WIDE_LANES];
                // SAFETY: AVX-512F checked.
                unsafe { simd::scores_wide(&q, &wide, 0.25, &mut got) };
                let twice: Vec<u32> = want.iter().chain(&want).copied().collect();
                assert_eq!(got.map(f32::to_bits).to_vec(), twice, "AVX-512, d {d}");
            }
        }
    }

    #[test]
    fn layer_norm_is_bit_identical_to_one_row_at_a_time() {
        let mut next = values(0x2545_f491);
        for (rows, h) in [(1, 384), (8, 384), (19, 384), (11, 37)] {
            let norm = Norm {
                gamma: (0..h).map(|_| next()).collect(),
                beta: (0..h).map(|_| next()).collect(),
            };
            let x: Vec<f32> = (0..rows * h).map(|_| next()).collect();
            let residual: Vec<f32> = (0..rows * h).map(|_| next()).collect();
            let mut got = x.clone();
            add_norm(&mut got, &residual, h, &norm, 1e-12);
            let mut want = x;
            add_into(&mut want, &residual);
            for row in want.chunks_exact_mut(h) {
                let mean = row.iter().sum::<f32>() / h as f32;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
                let inv = 1.0 / (var + 1e-12).sqrt();
                for ((v, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
                    *v = (*v - mean) * inv * g + b;
                }
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{rows} rows of {h}");
        }
    }

    /// The table is `2^(i/32)` (to within the last bit a libm `powf` may
    /// miss by), less what the exponent adds back.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn exp_table_holds_the_powers_of_two() {
        for (i, &t) in simd::EXP_TABLE.iter().enumerate() {
            let v = f64::from_bits(t + ((i as u64) << 47));
            let want = 2f64.powf(i as f64 / 32.0);
            assert!(
                (v.to_bits() as i64 - want.to_bits() as i64).abs() <= 1,
                "[{i}] {v} {want}"
            );
        }
    }

    /// On glibc, whose `expf` the vector exp follows step by step, every
    /// value is bit-identical to `f32::exp`: over the whole range softmax
    /// feeds it (−∞..0, NaN), with the special cases on both sides.
    #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
    #[test]
    fn vector_exp_is_libm_exp_bit_for_bit() {
        if !simd::available() {
            return;
        }
        let mut xs: Vec<f32> = (0..2_000_000u32)
            .map(|i| -f32::from_bits(i.wrapping_mul(1103) % 0x42e0_0000))
            .collect();
        xs.extend([
            0.0, -0.0, -87.9, -88.0, -88.1, -103.0, -103.5, -104.0, -150.0,
        ]);
        xs.extend([f32::NEG_INFINITY, f32::NAN, -1e-40, -1e30]);
        // The AVX2 form, and the AVX-512 one where the CPU has it.
        type Exp = unsafe fn(&mut [f32], f32);
        let mut forms: Vec<(&str, Exp)> = vec![("AVX2", simd::exp_less)];
        if simd::avx512() {
            forms.push(("AVX-512", simd::exp_less_wide));
        }
        for (name, exp) in forms {
            for max in [0.0f32, 0.75, -3.0] {
                let mut got: Vec<f32> = xs.iter().map(|x| x + max).collect();
                // SAFETY: the form's features were checked above.
                unsafe { exp(&mut got, max) };
                for (x, g) in xs.iter().zip(&got) {
                    let want = ((x + max) - max).exp();
                    assert_eq!(
                        g.to_bits(),
                        want.to_bits(),
                        "{name} exp({x}): {g} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn exp_matches_the_standard_library() {
        let mut x = 0.0f32;
        while x > -87.0 {
            let (got, want) = (exp_nonpositive(x), x.exp());
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "exp({x}) = {got}, want {want}"
            );
            x -= 0.0371;
        }
        assert_eq!(exp_nonpositive(-1000.0), exp_nonpositive(-87.0));
        assert!(exp_nonpositive(-1000.0) < 1e-37);
    }

    #[test]
    fn gelu_matches_known_values() {
        // Φ(x)·x at a few points (erf from a table).
        for (x, want) in [
            (0.0f32, 0.0f32),
            (1.0, 0.841_344_7),
            (-1.0, -0.158_655_3),
            (3.0, 2.995_950_6),
        ] {
            assert!(
                (gelu(x) - want).abs() < 1e-6,
                "gelu({x}) = {} want {want}",
                gelu(x)
            );
        }
    }

    #[test]
    fn config_refuses_what_is_not_run() {
        let p = Path::new("config.json");
        let base = r#"{"vocab_size":10,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"max_position_embeddings":4"#;
        assert!(Bert::parse_config(p, &format!("{base}}}")).is_ok());
        let e = Bert::parse_config(p, &format!("{base},\"hidden_act\":\"relu\"}}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hidden_act") && e.contains("relu"), "{e}");
        let e = Bert::parse_config(
            p,
            &format!("{base},\"position_embedding_type\":\"relative_key\"}}"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("relative_key"), "{e}");
        let e = Bert::parse_config(p, r#"{"hidden_size":8}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("config.json") && e.contains("not a BERT config"),
            "{e}"
        );
    }
}
