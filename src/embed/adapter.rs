//! A query adapter: a square matrix that turns a question's vector into one
//! nearer the vectors of the pages that answer it.
//!
//! A general sentence model puts "the agent keeps asking before every edit"
//! far from the page on permission modes: users' words are not the docs'.
//! An adapter learned from questions put in users' words (never the
//! evaluation's) moves questions, not pages, so the artifact's vectors and
//! their reuse across snapshots stay as they are, and a source without an
//! adapter is ranked exactly as before. `scripts/train-query-adapter.py`
//! learns one; a source names it in sources.yaml (`query_adapter`), the
//! build copies it into the artifact (its sha256 in the manifest's `files`)
//! and the server applies it to every question it compares with that
//! artifact's vectors.
//!
//! The file is safetensors: one `weight` tensor, F32, `[dims, dims]`, and the
//! `vectors_sha256` of the embedding it was learned for in its metadata; an
//! adapter meets only vectors of that very embedding.

use std::path::Path;

use super::EmbedError;

/// The adapter's file name inside an artifact.
pub const ADAPTER_FILE: &str = "query_adapter.safetensors";

/// The metadata key naming the embedding an adapter was learned for.
const VECTORS_KEY: &str = "vectors_sha256";

/// A learned linear map of question vectors (see the module docs).
#[derive(Debug, Clone)]
pub struct QueryAdapter {
    dims: usize,
    /// Row-major `dims × dims`: output component `i` is row `i` · question.
    weight: Vec<f32>,
    vectors_sha256: String,
}

impl QueryAdapter {
    /// An adapter of `weight` (row-major, `dims × dims`) for the embedding
    /// whose vectors hash to `vectors_sha256`.
    pub fn new(dims: usize, weight: Vec<f32>, vectors_sha256: &str) -> QueryAdapter {
        assert_eq!(weight.len(), dims * dims, "an adapter is dims × dims");
        QueryAdapter {
            dims,
            weight,
            vectors_sha256: vectors_sha256.to_string(),
        }
    }

    /// Read an adapter file; `path` is only used in messages.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<QueryAdapter, EmbedError> {
        let bad = |reason: String| EmbedError::invalid(path, reason);
        let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let vectors_sha256 = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(VECTORS_KEY))
            .cloned()
            .ok_or_else(|| bad(format!("its metadata names no `{VECTORS_KEY}`")))?;
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let t = st
            .tensor("weight")
            .map_err(|_| bad("it has no `weight` tensor".into()))?;
        let shape = t.shape();
        if t.dtype() != safetensors::Dtype::F32 || shape.len() != 2 || shape[0] != shape[1] {
            return Err(bad(format!(
                "`weight` must be a square F32 matrix; it is {:?} {shape:?}",
                t.dtype()
            )));
        }
        let weight: Vec<f32> = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if weight.iter().any(|x| !x.is_finite()) {
            return Err(bad(
                "`weight` holds a value that is not a finite number".into()
            ));
        }
        Ok(QueryAdapter::new(shape[0], weight, &vectors_sha256))
    }

    /// Read an adapter file from disk.
    pub fn load(path: &Path) -> Result<QueryAdapter, EmbedError> {
        let bytes = std::fs::read(path).map_err(|e| EmbedError::io(path, e))?;
        QueryAdapter::from_bytes(path, &bytes)
    }

    /// The file's bytes (what [`QueryAdapter::from_bytes`] reads).
    pub fn to_bytes(&self) -> Vec<u8> {
        let data: Vec<u8> = self.weight.iter().flat_map(|x| x.to_le_bytes()).collect();
        let view = safetensors::tensor::TensorView::new(
            safetensors::Dtype::F32,
            vec![self.dims, self.dims],
            &data,
        )
        .expect("a dims × dims F32 buffer matches its shape");
        let meta = [(VECTORS_KEY.to_string(), self.vectors_sha256.clone())].into();
        safetensors::serialize([("weight", view)], Some(meta))
            .expect("one well-formed tensor serializes")
    }

    /// Components of the vectors it maps.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The `vectors_sha256` of the embedding it was learned for.
    pub fn vectors_sha256(&self) -> &str {
        &self.vectors_sha256
    }

    /// The question's vector mapped and normalized again (cosines stay
    /// cosines). The rows' products run in eight lanes: 15 µs for 384
    /// dimensions, 108 µs as one running sum. A question vector of other dimensions, or one the map
    /// sends to zero, is returned unchanged.
    pub fn apply(&self, q: &[f32]) -> Vec<f32> {
        if q.len() != self.dims {
            return q.to_vec();
        }
        let mut out: Vec<f32> = self
            .weight
            .chunks_exact(self.dims)
            .map(|row| docsnap_bert::dot(row, q))
            .collect();
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return q.to_vec();
        }
        out.iter_mut().for_each(|x| *x /= norm);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_leaves_a_unit_vector_as_it_is_and_a_file_reads_back() {
        let mut w = vec![0f32; 9];
        for i in 0..3 {
            w[i * 3 + i] = 1.0;
        }
        let a = QueryAdapter::new(3, w, "abc");
        let q = [0.6, 0.0, 0.8];
        assert_eq!(a.apply(&q), q.to_vec());
        let back = QueryAdapter::from_bytes(Path::new("a"), &a.to_bytes()).unwrap();
        assert_eq!(back.vectors_sha256(), "abc");
        assert_eq!(back.weight, a.weight);
    }

    #[test]
    fn a_map_moves_the_question_and_keeps_it_a_unit_vector() {
        // Swap the first two components and double the third.
        let w = vec![0., 1., 0., 1., 0., 0., 0., 0., 2.];
        let a = QueryAdapter::new(3, w, "x");
        let out = a.apply(&[0.6, 0.0, 0.8]);
        let n = (0.0f32 + 0.36 + 2.56).sqrt();
        assert_eq!(out, vec![0.0, 0.6 / n, 1.6 / n]);
    }

    #[test]
    fn files_docsnap_cannot_use_are_refused_naming_what_is_wrong() {
        let p = Path::new("adapters/x.safetensors");
        let e = QueryAdapter::from_bytes(p, b"not safetensors").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("adapters/x.safetensors: not a safetensors"));
        // No metadata.
        let data = vec![0u8; 16];
        let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 2], &data)
            .unwrap();
        let bytes = safetensors::serialize([("weight", v)], None).unwrap();
        let e = QueryAdapter::from_bytes(p, &bytes).unwrap_err();
        assert!(e.to_string().contains("names no `vectors_sha256`"), "{e}");
        // Not square.
        let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1, 4], &data)
            .unwrap();
        let meta = [(VECTORS_KEY.to_string(), "x".to_string())].into();
        let bytes = safetensors::serialize([("weight", v)], Some(meta)).unwrap();
        let e = QueryAdapter::from_bytes(p, &bytes).unwrap_err();
        assert!(e.to_string().contains("square F32"), "{e}");
        // A NaN.
        let nan: Vec<u8> = [f32::NAN, 0., 0., 1.]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 2], &nan)
            .unwrap();
        let meta = [(VECTORS_KEY.to_string(), "x".to_string())].into();
        let bytes = safetensors::serialize([("weight", v)], Some(meta)).unwrap();
        let e = QueryAdapter::from_bytes(p, &bytes).unwrap_err();
        assert!(e.to_string().contains("not a finite number"), "{e}");
    }
}
