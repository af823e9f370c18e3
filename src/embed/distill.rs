//! Distilling a sentence-transformers BERT model into static token vectors.
//!
//! The Model2Vec recipe: run the teacher once on every vocabulary token alone
//! (`[CLS] tok [SEP]`), mean-pool its output as sentence-transformers would,
//! reduce the vectors with PCA (fewer dims, and the dominant shared direction
//! is centred away), then weight each token by its vocabulary rank so that
//! frequent, uninformative tokens count less in an average. The result replaces
//! the transformer at query and build time.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nalgebra::{DMatrix, SymmetricEigen};
use serde::{Deserialize, Serialize};

use super::contextual::BertFolder;
use super::{EmbedError, StaticModelInfo, METHOD, MODEL_JSON, TOKENIZER_JSON, VECTORS_F16};

/// How token vectors are scaled after PCA. A named option (recorded in
/// `model.json`) because the right choice depends on whether the teacher's
/// vocabulary is frequency ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Weighting {
    /// Token at rank `r` (1-based, among distilled tokens in id order) is
    /// scaled by `ln(1 + r)`: Zipf's law makes rank a proxy for frequency,
    /// so rarer tokens weigh more in a sum, like IDF.
    #[default]
    Zipf,
    /// No weighting: every token counts as the teacher saw it.
    None,
}

impl Weighting {
    /// The name written to `model.json`.
    pub fn name(self) -> &'static str {
        match self {
            Weighting::Zipf => "zipf-log1p-rank",
            Weighting::None => "none",
        }
    }

    /// The weight of the token at 1-based `rank`.
    pub fn weight(self, rank: usize) -> f32 {
        match self {
            Weighting::Zipf => (1.0 + rank as f64).ln() as f32,
            Weighting::None => 1.0,
        }
    }
}

/// Knobs of [`distill`]; the defaults are what docsnap ships.
#[derive(Debug, Clone)]
pub struct DistillOptions {
    /// Components kept by PCA (at most the teacher's hidden size).
    pub dims: usize,
    /// Token weighting applied after PCA.
    pub weighting: Weighting,
    /// Sequences per forward pass: larger amortizes per-call overhead, each
    /// sequence is only 3 tokens so memory is never the limit.
    pub batch_size: usize,
    /// Name recorded in `model.json` (default `static-<teacher dir>-<dims>`).
    pub name: Option<String>,
}

impl Default for DistillOptions {
    fn default() -> Self {
        DistillOptions {
            dims: 256,
            weighting: Weighting::Zipf,
            batch_size: 512,
            name: None,
        }
    }
}

/// Distills the sentence-transformers BERT model in `bert_dir` into a static
/// model directory `out_dir` (`tokenizer.json`, `vectors.f16`, `model.json`).
///
/// `out_dir` is assembled in a sibling temp directory and renamed into place,
/// so it is either the old complete model or the new complete one.
pub fn distill(
    bert_dir: &Path,
    out_dir: &Path,
    opts: &DistillOptions,
) -> Result<StaticModelInfo, EmbedError> {
    let BertFolder {
        bert,
        tokenizer,
        weights_sha256: teacher_sha256,
        sentence,
        ..
    } = BertFolder::load(bert_dir, docsnap_bert::Precision::F32)?;
    let config = &bert.config;
    let config_path = bert_dir.join("config.json");
    // Model2Vec's token vectors are the teacher's mean-pooled outputs of
    // each token alone; a teacher pooled otherwise was not trained for that.
    if sentence.pooling != docsnap_bert::Pooling::Mean {
        return Err(EmbedError::invalid(
            bert_dir,
            "distillation needs a mean-pooled teacher; this folder's 1_Pooling names another pooling",
        ));
    }
    let tok_path = bert_dir.join(TOKENIZER_JSON);
    if opts.dims == 0 || opts.dims > config.hidden_size {
        return Err(EmbedError::invalid(
            &config_path,
            format!(
                "cannot reduce hidden_size {} to {} dims",
                config.hidden_size, opts.dims
            ),
        ));
    }

    let vocab_size = config.vocab_size;
    // The special tokens framing one sequence, as the tokenizer itself adds
    // them (no hard-coded ids).
    let frame = tokenizer
        .encode_fast("", true)
        .map_err(|e| EmbedError::invalid(&tok_path, format!("cannot encode: {e}")))?;
    let (cls, sep) = match frame.get_ids() {
        [cls, sep] => (*cls, *sep),
        other => {
            return Err(EmbedError::invalid(
                &tok_path,
                format!("expected [CLS] [SEP] around an empty text, got ids {other:?}"),
            ))
        }
    };
    let special = tokenizer.get_added_tokens_decoder();
    let kept: Vec<u32> = (0..vocab_size as u32)
        .filter(|id| match tokenizer.id_to_token(*id) {
            None => false,
            Some(t) => {
                let is_special = special.get(id).is_some_and(|a| a.special);
                let is_unused = t.starts_with("[unused") && t.ends_with(']');
                !is_special && !is_unused
            }
        })
        .collect();
    if kept.is_empty() {
        return Err(EmbedError::invalid(
            &tok_path,
            "no ordinary tokens in the vocabulary",
        ));
    }

    let started = Instant::now();
    let hidden = config.hidden_size;
    let mut pooled: Vec<f32> = Vec::with_capacity(kept.len() * hidden);
    let batches = kept.len().div_ceil(opts.batch_size.max(1));
    for (b, chunk) in kept.chunks(opts.batch_size.max(1)).enumerate() {
        let out = forward_pooled(&bert, chunk, cls, sep);
        if out.len() != chunk.len() * hidden {
            return Err(EmbedError::invalid(
                &config_path,
                format!(
                    "model output has {} values for {} tokens, expected hidden_size {hidden} each",
                    out.len(),
                    chunk.len()
                ),
            ));
        }
        pooled.extend_from_slice(&out);
        if (b + 1).is_multiple_of(10) || b + 1 == batches {
            tracing::info!(
                "distill: {}/{} tokens ({:.0?})",
                (b * opts.batch_size + chunk.len()).min(kept.len()),
                kept.len(),
                started.elapsed()
            );
        }
    }

    let pca = Pca::fit(&pooled, hidden, opts.dims);
    tracing::info!(
        "distill: PCA to {} dims keeps {:.1}% of the variance",
        opts.dims,
        100.0 * pca.variances.iter().sum::<f64>() / pca.total_variance.max(f64::MIN_POSITIVE)
    );
    let reduced = pca.transform(&pooled);

    let dims = opts.dims;
    let mut table = vec![half::f16::ZERO; vocab_size * dims];
    for (rank0, (&id, row)) in kept.iter().zip(reduced.chunks_exact(dims)).enumerate() {
        let w = opts.weighting.weight(rank0 + 1);
        let dst = &mut table[id as usize * dims..(id as usize + 1) * dims];
        for (d, v) in dst.iter_mut().zip(row) {
            *d = half::f16::from_f32(v * w);
        }
    }
    let mut bytes = Vec::with_capacity(table.len() * 2);
    for v in &table {
        bytes.extend_from_slice(&v.to_le_bytes());
    }

    let name = opts.name.clone().unwrap_or_else(|| {
        let teacher = bert_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bert".into());
        format!("static-{teacher}-{dims}")
    });
    let info = StaticModelInfo {
        name,
        method: METHOD.to_string(),
        teacher_sha256,
        dims,
        vocab_size,
        weighting: opts.weighting.name().to_string(),
        vectors_sha256: crate::util::sha256_hex(&bytes),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let card = serde_json::to_string_pretty(&info).expect("model card serializes") + "\n";
    let tokenizer_bytes = fs::read(&tok_path).map_err(|e| EmbedError::io(&tok_path, e))?;
    write_dir_atomic(
        out_dir,
        &[
            (TOKENIZER_JSON, &tokenizer_bytes),
            (VECTORS_F16, &bytes),
            (MODEL_JSON, card.as_bytes()),
        ],
    )?;
    Ok(info)
}

/// One forward pass over `[CLS] tok [SEP]` for each token of `ids`; returns the
/// mean of the last hidden states, row-major `ids.len() × hidden`.
fn forward_pooled(bert: &docsnap_bert::Bert, ids: &[u32], cls: u32, sep: u32) -> Vec<f32> {
    let framed: Vec<[u32; 3]> = ids.iter().map(|&t| [cls, t, sep]).collect();
    let seqs: Vec<&[u32]> = framed.iter().map(|f| &f[..]).collect();
    bert.mean_pooled(&seqs).concat()
}

/// Principal component analysis by eigen-decomposition of the covariance
/// matrix: exact, and for a few hundred features a 384×384 eigenproblem is
/// instant, so no iterative or randomized method is needed.
#[derive(Debug, Clone)]
pub(crate) struct Pca {
    /// Feature means (subtracted before projecting).
    pub mean: Vec<f64>,
    /// `k` unit components, row-major `k × d`, by decreasing variance.
    pub components: Vec<f64>,
    /// Their variances.
    pub variances: Vec<f64>,
    /// Variance of the data over all components (what `variances` is a share of).
    pub total_variance: f64,
    pub d: usize,
    pub k: usize,
}

impl Pca {
    /// Fits `k` components to row-major `data` with `d` features per row.
    ///
    /// The big product (the covariance, n×d by d×n) runs in docsnap-bert's
    /// kernel, compiled optimized even in test builds; only the small
    /// `d × d` eigenproblem is nalgebra's.
    pub fn fit(data: &[f32], d: usize, k: usize) -> Pca {
        let n = data.len() / d;
        let mut mean = vec![0f64; d];
        for row in data[..n * d].chunks_exact(d) {
            mean.iter_mut().zip(row).for_each(|(m, &v)| *m += v as f64);
        }
        mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
        // Centered and transposed (d × n), so the covariance is a product of
        // rows with rows; rows padded with zeros to the kernel's width of 8.
        let np = n.next_multiple_of(8);
        let mut xt = vec![0f32; d * np];
        for (i, row) in data[..n * d].chunks_exact(d).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                xt[j * np + i] = (v as f64 - mean[j]) as f32;
            }
        }
        let gram = docsnap_bert::matmul_t(&xt, d, &xt, d, np);
        let scale = 1.0 / n.saturating_sub(1).max(1) as f64;
        let cov: Vec<f64> = gram.iter().map(|&v| v as f64 * scale).collect();
        let cov = DMatrix::<f64>::from_row_slice(d, d, &cov);
        let eig = SymmetricEigen::new(cov);
        let mut order: Vec<usize> = (0..d).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        let mut components = Vec::with_capacity(k * d);
        let mut variances = Vec::with_capacity(k);
        for &c in order.iter().take(k) {
            let col = eig.eigenvectors.column(c);
            // Eigenvectors have no sign; fix one (largest entry positive) so
            // the same teacher always yields the same vectors.
            let pivot = col
                .iter()
                .copied()
                .fold(0f64, |p, v| if v.abs() > p.abs() { v } else { p });
            let sign = if pivot < 0.0 { -1.0 } else { 1.0 };
            components.extend(col.iter().map(|v| v * sign));
            variances.push(eig.eigenvalues[c]);
        }
        let total_variance = eig.eigenvalues.iter().sum();
        Pca {
            mean,
            components,
            variances,
            total_variance,
            d,
            k,
        }
    }

    /// Projects row-major `data` onto the components: `(x - mean) · C^T`.
    pub fn transform(&self, data: &[f32]) -> Vec<f32> {
        let n = data.len() / self.d;
        let xc: Vec<f32> = data[..n * self.d]
            .chunks_exact(self.d)
            .flat_map(|row| {
                row.iter()
                    .zip(&self.mean)
                    .map(|(&v, m)| (v as f64 - m) as f32)
            })
            .collect();
        let c: Vec<f32> = self.components.iter().map(|&v| v as f32).collect();
        docsnap_bert::matmul_t(&xc, n, &c, self.k, self.d)
    }
}

/// Writes `files` into a fresh sibling of `dir` and swaps it into place.
fn write_dir_atomic(dir: &Path, files: &[(&str, &[u8])]) -> Result<(), EmbedError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| EmbedError::io(&parent, e))?;
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| EmbedError::invalid(dir, "output directory has no name"))?;
    let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
    let old = parent.join(format!(".{base}.old-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp).map_err(|e| EmbedError::io(&tmp, e))?;
    for (name, bytes) in files {
        let p = tmp.join(name);
        let res = fs::File::create(&p).and_then(|mut f| {
            use std::io::Write;
            f.write_all(bytes)?;
            f.sync_all()
        });
        if let Err(e) = res {
            let _ = fs::remove_dir_all(&tmp);
            return Err(EmbedError::io(&p, e));
        }
    }
    let had_old = dir.exists();
    if had_old {
        fs::rename(dir, &old).map_err(|e| EmbedError::io(dir, e))?;
    }
    if let Err(e) = fs::rename(&tmp, dir) {
        if had_old {
            let _ = fs::rename(&old, dir);
        }
        let _ = fs::remove_dir_all(&tmp);
        return Err(EmbedError::io(dir, e));
    }
    if had_old {
        let _ = fs::remove_dir_all(&old);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pca_recovers_the_dominant_direction() {
        // Points spread along (3, 4, 0)/5 with small noise in the other axes,
        // offset by a mean that PCA must remove.
        let dir = [0.6f64, 0.8, 0.0];
        let mut data = Vec::new();
        let mut s = 1u64;
        let mut noise = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((s >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 0.1
        };
        for i in 0..200 {
            let t = (i as f64 - 100.0) / 10.0;
            data.push((10.0 + t * dir[0] + noise()) as f32);
            data.push((-5.0 + t * dir[1] + noise()) as f32);
            data.push((2.0 + t * dir[2] + noise()) as f32);
        }
        let pca = Pca::fit(&data, 3, 2);
        let c0 = &pca.components[0..3];
        let align: f64 = c0.iter().zip(&dir).map(|(a, b)| a * b).sum();
        assert!(align > 0.999, "first component {c0:?}");
        assert!(pca.variances[0] > 100.0 * pca.variances[1]);
        assert!((pca.mean[0] - 10.0).abs() < 0.05 && (pca.mean[1] + 5.0).abs() < 0.05);
        let t = pca.transform(&data);
        assert_eq!(t.len(), 400);
        // Projections are centred, and the first one is the position along the line.
        let m: f32 = t.chunks(2).map(|r| r[0]).sum::<f32>() / 200.0;
        assert!(m.abs() < 1e-3);
        assert!((t[0] - (-10.0)).abs() < 0.2, "{}", t[0]);
    }

    #[test]
    fn pca_components_are_orthonormal() {
        let mut s = 5u64;
        let data: Vec<f32> = (0..400)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                (s >> 40) as f32 / (1u64 << 24) as f32
            })
            .collect();
        let pca = Pca::fit(&data, 8, 4);
        for a in 0..4 {
            for b in 0..4 {
                let d: f64 = (0..8)
                    .map(|j| pca.components[a * 8 + j] * pca.components[b * 8 + j])
                    .sum();
                let want = if a == b { 1.0 } else { 0.0 };
                assert!((d - want).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn zipf_weights_grow_like_log_rank() {
        let w = Weighting::Zipf;
        assert!((w.weight(1) - 2f32.ln()).abs() < 1e-6);
        assert!((w.weight(999) - 1000f32.ln()).abs() < 1e-4);
        assert!(w.weight(10) < w.weight(11));
        assert_eq!(Weighting::None.weight(12345), 1.0);
        assert_eq!(Weighting::Zipf.name(), "zipf-log1p-rank");
        assert_eq!(DistillOptions::default().weighting, Weighting::Zipf);
    }

    #[test]
    fn missing_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = distill(
            dir.path(),
            &dir.path().join("out"),
            &DistillOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.json") && err.contains("missing"),
            "{err}"
        );
        assert!(!dir.path().join("out").exists());
    }

    #[test]
    fn bad_config_is_named() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("config.json"), "{\"hidden_size\": 3}").unwrap();
        fs::write(dir.path().join("model.safetensors"), b"").unwrap();
        fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
        let err = distill(
            dir.path(),
            &dir.path().join("out"),
            &DistillOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.json") && err.contains("not a BERT config"),
            "{err}"
        );
    }

    #[test]
    fn atomic_dir_replaces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("m");
        write_dir_atomic(&out, &[("a", b"1"), ("b", b"2")]).unwrap();
        write_dir_atomic(&out, &[("a", b"3")]).unwrap();
        assert_eq!(fs::read(out.join("a")).unwrap(), b"3");
        assert!(!out.join("b").exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
