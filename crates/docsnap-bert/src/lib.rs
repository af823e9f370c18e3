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

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

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
/// Weights are held as i8 (a quarter of the f32 bytes: the forward pass
/// of a short question is bound by reading the weights); the activations
/// they meet as i16, widened once per product.
struct Quantized<T> {
    q: Vec<T>,
    scale: Vec<f32>,
    /// Each row's integers summed (what the unsigned kernel corrects by).
    sum: Vec<i32>,
}

impl<T: Copy + Default + TryFrom<i16>> Quantized<T> {
    /// Symmetric per-row quantization of `rows × k` values to −127..=127.
    fn rows(w: &[f32], rows: usize, k: usize) -> Quantized<T> {
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
            for (o, v) in out.iter_mut().zip(row) {
                // Half away from zero, as f32::round, without its libm call.
                let r = (v * inv).clamp(-127.0, 127.0);
                let v = (r + 0.5f32.copysign(r)) as i16;
                *total += v as i32;
                *o = T::try_from(v).unwrap_or_default();
            }
        }
        Quantized { q, scale, sum }
    }
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
/// configuration says they must have; any mismatch names the tensor.
struct Weights<'a> {
    file: safetensors::SafeTensors<'a>,
    path: &'a Path,
    /// `""` or `"bert."`: checkpoints saved from a task model prefix names.
    prefix: &'static str,
}

impl Weights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, BertError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .file
            .tensor(&full)
            .map_err(|e| BertError::invalid(self.path, format!("tensor {full}: {e}")))?;
        if t.shape() != shape {
            return Err(BertError::invalid(
                self.path,
                format!(
                    "tensor {full} has shape {:?}, expected {shape:?}",
                    t.shape()
                ),
            ));
        }
        let data = t.data();
        let v: Vec<f32> = match t.dtype() {
            safetensors::Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            safetensors::Dtype::F16 => data
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            safetensors::Dtype::BF16 => data
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            other => {
                return Err(BertError::invalid(
                    self.path,
                    format!("tensor {full} is {other:?}; F32, F16 or BF16 expected"),
                ))
            }
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

    /// Loads the weights of `config` from the safetensors bytes of
    /// `weights_path`.
    pub fn load(
        config: BertConfig,
        weights_path: &Path,
        bytes: &[u8],
        precision: Precision,
    ) -> Result<Bert, BertError> {
        let file = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| BertError::invalid(weights_path, format!("not safetensors: {e}")))?;
        let prefix = if file
            .names()
            .iter()
            .any(|n| n.starts_with("bert.embeddings."))
        {
            "bert."
        } else {
            ""
        };
        let w = Weights {
            file,
            path: weights_path,
            prefix,
        };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let word = w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = w.get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let types = w
            .file
            .tensor(&format!("{prefix}embeddings.token_type_embeddings.weight"));
        let type_rows = types.as_ref().map(|t| t.shape()[0]).unwrap_or(0);
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
            layers.push(Layer {
                qkv,
                attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                up: w.linear(&format!("{p}.intermediate.dense"), i, h)?,
                down: w.linear(&format!("{p}.output.dense"), h, i)?,
                out_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        if precision == Precision::Int8 {
            for l in &mut layers {
                for lin in [&mut l.qkv, &mut l.attn_out, &mut l.up, &mut l.down] {
                    lin.q = Some(Quantized::<i8>::rows(&lin.w, lin.n_out, lin.n_in));
                    // The f32 weights are never read again: 42 MB for MiniLM.
                    lin.w = Vec::new();
                }
            }
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
    /// (not normalized). Sequences are independent; passing several lets
    /// the matrix products serve all their tokens with one read of the
    /// weights. Panics on an id outside the vocabulary or a sequence longer
    /// than the position table, which callers rule out (the tokenizer and
    /// truncation).
    pub fn mean_pooled(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        // A question runs on the caller's thread alone: waking another
        // core for each of the ~24 products of a pass cost about what it
        // saved, and a server answers other questions on the other core.
        // Longer inputs run on one of rayon's threads, so the products'
        // halves go to the other thread directly instead of each product
        // parking the caller and waking it again (a fifth of the time,
        // measured).
        let rows: usize = seqs.iter().map(|s| s.len()).sum();
        if rows < PARALLEL_MIN_ROWS {
            return self.forward(seqs);
        }
        let mut out = Vec::new();
        rayon::scope(|_| out = self.forward(seqs));
        out
    }

    fn forward(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
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
        layer_norm(&mut x, h, &self.emb_norm, self.eps);
        let mut qkv = vec![0f32; rows * 3 * h];
        let mut ctx = vec![0f32; rows * h];
        let mut tmp = vec![0f32; rows * h];
        let mut up = vec![0f32; rows * self.config.intermediate_size];
        for layer in &self.layers {
            layer.qkv.apply(&x, rows, &mut qkv, false);
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
            layer.attn_out.apply(&ctx, rows, &mut tmp, false);
            add_into(&mut x, &tmp);
            layer_norm(&mut x, h, &layer.attn_norm, self.eps);
            layer.up.apply(&x, rows, &mut up, true);
            layer.down.apply(&up, rows, &mut tmp, false);
            add_into(&mut x, &tmp);
            layer_norm(&mut x, h, &layer.out_norm, self.eps);
        }
        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for s in seqs {
            let mut m = vec![0f32; h];
            for row in x[start * h..(start + s.len()) * h].chunks_exact(h) {
                add_into(&mut m, row);
            }
            let n = s.len().max(1) as f32;
            m.iter_mut().for_each(|v| *v /= n);
            out.push(m);
            start += s.len();
        }
        out
    }
}

fn add_into(a: &mut [f32], b: &[f32]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

/// LayerNorm of every `h`-wide row of `x`, in place.
fn layer_norm(x: &mut [f32], h: usize, n: &Norm, eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&n.gamma).zip(&n.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// The exact GELU, `x Φ(x)`, with erf from Abramowitz & Stegun 7.1.26
/// (absolute error below 1.5e-7, under f32's resolution of the result).
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
#[inline]
fn exp_nonpositive(x: f32) -> f32 {
    let x = x.max(-87.0);
    // Round to nearest by the 1.5·2²³ trick (no libm call).
    const SHIFT: f32 = 12_582_912.0;
    let n = (x * std::f32::consts::LOG2_E + SHIFT) - SHIFT;
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// Self-attention of one sequence of `n` tokens: `qkv` holds each token's
/// query, key and value side by side; the heads' outputs go to `out`.
fn attention(qkv: &[f32], n: usize, h: usize, heads: usize, out: &mut [f32]) {
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
            let mut sum = 0.0;
            for pj in p.iter_mut() {
                *pj = (*pj - max).exp();
                sum += *pj;
            }
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

/// A dot product in eight running sums, which the compiler keeps in one
/// vector register (a single running sum would forbid reordering).
fn dot(a: &[f32], b: &[f32]) -> f32 {
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
    fn apply(&self, x: &[f32], rows: usize, y: &mut [f32], gelu: bool) {
        debug_assert_eq!(x.len(), rows * self.n_in);
        debug_assert_eq!(y.len(), rows * self.n_out);
        let mut epilogue = Epilogue {
            scales: None,
            bias: &self.b,
            gelu,
        };
        match &self.q {
            None => matmul_into(x, rows, &self.w, self.n_out, self.n_in, y, &epilogue),
            Some(q) => {
                let xq = Quantized::<i16>::rows(&x[..rows * self.n_in], rows, self.n_in);
                epilogue.scales = Some((&xq.scale, &q.scale));
                qmatmul_into(&xq, rows, q, self.n_out, self.n_in, y, &epilogue)
            }
        }
    }
}

/// The 8-bit product: each row of `x` quantized like the weights, integer
/// dot products (exact, so every kernel gives the same result), rescaled.
fn qmatmul_into(
    xq: &Quantized<i16>,
    m: usize,
    w: &Quantized<i8>,
    n: usize,
    k: usize,
    y: &mut [f32],
    epilogue: &Epilogue,
) {
    assert!(xq.q.len() >= m * k && w.q.len() >= n * k);
    // The VNNI instruction multiplies unsigned by signed bytes: activations
    // shifted by 128 there, and the shift's share (128 × the row sum of the
    // weights) taken off after.
    #[cfg(target_arch = "x86_64")]
    let shifted: Option<Vec<u8>> = (k.is_multiple_of(32) && simd::vnni())
        .then(|| xq.q[..m * k].iter().map(|&v| (v + 128) as u8).collect());
    #[cfg(not(target_arch = "x86_64"))]
    let shifted: Option<Vec<u8>> = None;
    let run = |cols: std::ops::Range<usize>, y: *mut f32| {
        // SAFETY: shapes checked above; `y` is written in `cols` only.
        unsafe {
            qmatmul_cols(xq, shifted.as_deref(), m, w, n, k, y, cols.clone());
            epilogue.apply(y, m, n, &cols);
        }
    };
    by_column_blocks(m, n, k, y, run);
}

/// Columns `cols` of the 8-bit product into `y`.
///
/// # Safety
/// As [`matmul_cols`].
#[allow(clippy::too_many_arguments)]
unsafe fn qmatmul_cols(
    x: &Quantized<i16>,
    shifted: Option<&[u8]>,
    m: usize,
    w: &Quantized<i8>,
    n: usize,
    k: usize,
    y: *mut f32,
    cols: std::ops::Range<usize>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(xu) = shifted {
            // SAFETY: qmatmul_into made `shifted` only where VNNI runs and
            // k is a multiple of 32; the rest is this function's contract.
            unsafe {
                simd::qmatmul_cols_vnni(xu.as_ptr(), m, w.q.as_ptr(), &w.sum, n, k, y, cols);
            }
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
        for i in 0..m {
            // SAFETY: row i < m of y, columns within n; see the contract.
            let row = unsafe { std::slice::from_raw_parts_mut(y.add(i * n), n) };
            let row = &mut row[cols.clone()];
            if let Some((rs, cs)) = self.scales {
                let r = rs[i];
                row.iter_mut()
                    .zip(&cs[cols.clone()])
                    .for_each(|(v, c)| *v *= r * c);
            }
            if let Some(b) = self.bias.get(cols.clone()) {
                add_into(row, b);
            }
            if self.gelu {
                row.iter_mut().for_each(|v| *v = gelu(*v));
            }
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
    matmul_into(x, m, w, n, k, &mut y, &none);
    y
}

/// Multiply-adds below which a product runs on the calling thread: handing
/// work to another core costs a few microseconds.
const PARALLEL_MIN_MACS: usize = 1 << 20;

/// Tokens below which a pass runs on the calling thread (see
/// [`Bert::mean_pooled`]): a question's dozen, not a page's 256.
const PARALLEL_MIN_ROWS: usize = 64;

/// `y[m × n] = x[m × k] · w[n × k]ᵀ`, on the widest kernel the CPU runs,
/// the weight rows shared out among rayon's threads (each thread reads its
/// own part of the weights once and writes its own columns of `y`).
fn matmul_into(
    x: &[f32],
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    y: &mut [f32],
    epilogue: &Epilogue,
) {
    assert!(x.len() >= m * k && w.len() >= n * k && y.len() >= m * n);
    let run = |cols: std::ops::Range<usize>, y: *mut f32| {
        // SAFETY: lengths checked above; `y` is written in `cols` only.
        unsafe {
            matmul_cols(x, m, w, n, k, y, cols.clone());
            epilogue.apply(y, m, n, &cols);
        }
    };
    by_column_blocks(m, n, k, y, run);
}

/// Calls `run` on column ranges that cover `0..n`, one per rayon thread when
/// the product is large enough to pay for the hand-off.
fn by_column_blocks(
    m: usize,
    n: usize,
    k: usize,
    y: &mut [f32],
    run: impl Fn(std::ops::Range<usize>, *mut f32) + Sync,
) {
    assert!(y.len() >= m * n);
    let threads = rayon::current_num_threads().min(n / 48).max(1);
    if threads == 1 || m < PARALLEL_MIN_ROWS || m * n * k < PARALLEL_MIN_MACS {
        run(0..n, y.as_mut_ptr());
        return;
    }
    let out = SendPtr(y.as_mut_ptr());
    let per = n.div_ceil(threads).next_multiple_of(3);
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
    //! The AVX2 + FMA kernel: a tile of 4 tokens × 3 weight rows keeps its
    //! twelve sums in registers while it walks the shared dimension, and a
    //! block of weight rows serves every token before the next is read.

    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// Walks columns `cols` × rows `0..m` of the output in tiles of 4 rows ×
    /// 3 columns, narrower at the edges, calling
    /// `$tile::<R, C>(pre…, i, j, post…)` for each. A macro rather than a
    /// function taking closures, so every tile call is made inside the
    /// caller's target features and inlined there.
    macro_rules! walk_tiles {
        ($m:expr, $cols:expr, $tile:ident, ($($pre:expr),*), ($($post:expr),*)) => {{
            let (m, cols) = ($m, $cols);
            let mut j = cols.start;
            while j < cols.end {
                let c = (cols.end - j).min(3);
                let mut i = 0;
                while i < m {
                    let r = (m - i).min(4);
                    if r == 4 && c == 3 {
                        $tile::<4, 3>($($pre,)* i, j, $($post),*)
                    } else if c == 3 {
                        for ii in i..i + r {
                            $tile::<1, 3>($($pre,)* ii, j, $($post),*)
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

    /// Whether this CPU runs the kernel (checked once).
    pub fn available() -> bool {
        static YES: OnceLock<bool> = OnceLock::new();
        *YES.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }

    /// See [`super::matmul_cols`]; `k` must be a multiple of 8.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn matmul_cols(
        xp: *const f32,
        m: usize,
        wp: *const f32,
        n: usize,
        k: usize,
        yp: *mut f32,
        cols: std::ops::Range<usize>,
    ) {
        debug_assert!(k.is_multiple_of(8) && cols.end <= n);
        walk_tiles!(m, cols, tile, (xp, wp), (k, yp, n));
    }

    /// Whether this CPU has AVX-VNNI (checked once).
    pub fn vnni() -> bool {
        static YES: OnceLock<bool> = OnceLock::new();
        *YES.get_or_init(|| available() && is_x86_feature_detected!("avxvnni"))
    }

    /// The VNNI kernel: activations as unsigned bytes (shifted by 128),
    /// weights as signed bytes, four products summed per i32 lane in one
    /// instruction, the shift's share (128 × `wsum[j]`) taken off in i32:
    /// the same integer as the other kernels', so the same f32. `k` must be
    /// a multiple of 32.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2,avxvnni")]
    pub unsafe fn qmatmul_cols_vnni(
        xp: *const u8,
        m: usize,
        wp: *const i8,
        wsum: &[i32],
        n: usize,
        k: usize,
        yp: *mut f32,
        cols: std::ops::Range<usize>,
    ) {
        walk_tiles!(m, cols, vtile, (xp, wp, wsum), (k, yp, n));
    }

    #[target_feature(enable = "avx2,avxvnni")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn vtile<const R: usize, const C: usize>(
        xp: *const u8,
        wp: *const i8,
        wsum: &[i32],
        i: usize,
        j: usize,
        k: usize,
        yp: *mut f32,
        n: usize,
    ) {
        let mut acc = [[_mm256_setzero_si256(); C]; R];
        let (xb, wb) = (xp.add(i * k), wp.add(j * k));
        let mut c = 0;
        while c < k {
            let mut wv = [_mm256_setzero_si256(); C];
            for (jj, v) in wv.iter_mut().enumerate() {
                *v = _mm256_loadu_si256(wb.add(jj * k + c) as *const __m256i);
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xv = _mm256_loadu_si256(xb.add(r * k + c) as *const __m256i);
                for (a, v) in row.iter_mut().zip(&wv) {
                    *a = _mm256_dpbusd_avx_epi32(*a, xv, *v);
                }
            }
            c += 32;
        }
        for (r, row) in acc.iter().enumerate() {
            for (jj, a) in row.iter().enumerate() {
                let exact = hsum_i32(*a) - 128 * wsum[j + jj];
                *yp.add((i + r) * n + j + jj) = exact as f32;
            }
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn hsum_i32(a: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        let s = _mm_hadd_epi32(s, s);
        _mm_cvtsi128_si32(_mm_hadd_epi32(s, s))
    }

    /// The integer kernel: i16 values in the int8 range, products summed
    /// in i32 (exact: 127² × k stays far below 2³¹ for any BERT width),
    /// stored to `y` as f32 for the caller to rescale. `k` must be a
    /// multiple of 16.
    #[target_feature(enable = "avx2")]
    pub unsafe fn qmatmul_cols(
        xp: *const i16,
        m: usize,
        wp: *const i8,
        n: usize,
        k: usize,
        yp: *mut f32,
        cols: std::ops::Range<usize>,
    ) {
        walk_tiles!(m, cols, qtile, (xp, wp), (k, yp, n));
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn qtile<const R: usize, const C: usize>(
        xp: *const i16,
        wp: *const i8,
        i: usize,
        j: usize,
        k: usize,
        yp: *mut f32,
        n: usize,
    ) {
        let mut acc = [[_mm256_setzero_si256(); C]; R];
        let (xb, wb) = (xp.add(i * k), wp.add(j * k));
        let mut c = 0;
        while c < k {
            let mut wv = [_mm256_setzero_si256(); C];
            for (jj, v) in wv.iter_mut().enumerate() {
                *v = _mm256_cvtepi8_epi16(_mm_loadu_si128(wb.add(jj * k + c) as *const __m128i));
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xv = _mm256_loadu_si256(xb.add(r * k + c) as *const __m256i);
                for (a, v) in row.iter_mut().zip(&wv) {
                    *a = _mm256_add_epi32(*a, _mm256_madd_epi16(xv, *v));
                }
            }
            c += 16;
        }
        for (r, row) in acc.iter().enumerate() {
            for (jj, a) in row.iter().enumerate() {
                *yp.add((i + r) * n + j + jj) = hsum_i32(*a) as f32;
            }
        }
    }

    /// Rows `i..i+R` of x against rows `j..j+C` of w, into y.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tile<const R: usize, const C: usize>(
        xp: *const f32,
        wp: *const f32,
        i: usize,
        j: usize,
        k: usize,
        yp: *mut f32,
        n: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let (xb, wb) = (xp.add(i * k), wp.add(j * k));
        let mut c = 0;
        while c < k {
            let mut wv = [_mm256_setzero_ps(); C];
            for (jj, v) in wv.iter_mut().enumerate() {
                *v = _mm256_loadu_ps(wb.add(jj * k + c));
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xv = _mm256_loadu_ps(xb.add(r * k + c));
                for (a, v) in row.iter_mut().zip(&wv) {
                    *a = _mm256_fmadd_ps(xv, *v, *a);
                }
            }
            c += 8;
        }
        for (r, row) in acc.iter().enumerate() {
            for (jj, a) in row.iter().enumerate() {
                *yp.add((i + r) * n + j + jj) = hsum(*a);
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_hadd_ps(s, s);
        _mm_cvtss_f32(_mm_hadd_ps(s, s))
    }
}

/// Reads a BERT folder's `config.json` and `model.safetensors` into a
/// [`Bert`]; the weights' bytes are returned too, for callers that
/// fingerprint them.
pub fn load_folder(dir: &Path, precision: Precision) -> Result<(Bert, Vec<u8>), BertError> {
    let config_path = dir.join("config.json");
    let weights_path = dir.join("model.safetensors");
    let read_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BertError::Io { path, source }
    };
    let text = fs::read_to_string(&config_path).map_err(read_err(&config_path))?;
    let config = Bert::parse_config(&config_path, &text)?;
    let bytes = fs::read(&weights_path).map_err(read_err(&weights_path))?;
    let bert = Bert::load(config, &weights_path, &bytes, precision)?;
    Ok((bert, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 8-bit kernel this CPU runs gives exactly the integer sums of
    /// the definition: the vectors of an artifact do not depend on the
    /// machine that built it.
    #[test]
    fn int8_kernels_agree_exactly() {
        for (m, n, k) in [(5, 7, 64), (4, 3, 32), (9, 4, 48), (2, 5, 16)] {
            let x: Vec<f32> = (0..m * k)
                .map(|v| ((v * 37 % 101) as f32 - 50.0) / 7.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|v| ((v * 53 % 97) as f32 - 48.0) / 9.0)
                .collect();
            let xq = Quantized::<i16>::rows(&x, m, k);
            let wq = Quantized::<i8>::rows(&w, n, k);
            let want: Vec<f32> = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    (0..k)
                        .map(|c| xq.q[i * k + c] as i32 * wq.q[j * k + c] as i32)
                        .sum::<i32>() as f32
                })
                .collect();
            let shifted: Vec<u8> = xq.q.iter().map(|&v| (v + 128) as u8).collect();
            let mut paths: Vec<Option<&[u8]>> = vec![None];
            #[cfg(target_arch = "x86_64")]
            if k % 32 == 0 && simd::vnni() {
                paths.push(Some(&shifted));
            }
            for path in paths {
                let mut y = vec![0f32; m * n];
                // SAFETY: shapes as allocated above.
                unsafe { qmatmul_cols(&xq, path, m, &wq, n, k, y.as_mut_ptr(), 0..n) };
                assert_eq!(y, want, "({m},{n},{k}) vnni={}", path.is_some());
            }
            // And the quantization is what it says: within half a step.
            for (row, i) in x.chunks_exact(k).zip(0..) {
                for (v, q) in row.iter().zip(&xq.q[i * k..(i + 1) * k]) {
                    assert!((v - *q as f32 * xq.scale[i]).abs() <= 0.5001 * xq.scale[i]);
                }
            }
        }
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
