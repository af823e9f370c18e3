//! The dense vectors of an artifact on disk, and exact nearest-neighbour search
//! over them.
//!
//! # Why int8 with one f32 scale per row (and not f16)
//!
//! Every row is L2-normalized before it is written and then quantized
//! symmetrically: `q[i] = round(x[i] / s)` with `s = max|x| / 127`, one `s` per
//! row. For the few hundred dimensions we use that gives a per-component error
//! of at most `s / 2` (about 0.2 % of the row's largest component), which moves
//! a cosine by roughly 1e-3: far below the differences that decide a ranking of
//! static-token embeddings. In exchange the file and its resident copy are half
//! the size of f16 (256 + 4 bytes per row instead of 512), the scan reads half
//! the memory, and the inner loop is a plain `i8 × i8 → i32` dot product that
//! compilers turn into multiply-add SIMD without any `unsafe` or intrinsics —
//! f16 would need a conversion per component on CPUs without native f16.
//!
//! # Layout (little-endian)
//!
//! ```text
//! offset 0   8 bytes  magic  b"DSNPVEC\0"
//! offset 8   u32      version (1)
//! offset 12  u32      dims
//! offset 16  u64      rows
//! offset 24  rows × f32   per-row scale: 1 / |q|, which makes `q` a unit
//!                         vector again (0 for a zero row)
//! then       rows × dims  i8 components, row-major
//! ```
//!
//! A file whose size is not exactly what its header implies is refused, so a
//! truncated copy never serves garbage.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::EmbedError;

/// Identifies a docsnap vector file, so a wrong file is refused up front.
pub const MAGIC: &[u8; 8] = b"DSNPVEC\0";
/// Bumped whenever the layout changes; old readers refuse new files.
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 24;

/// Writes `rows` (each `dims` long) as a vector file at `path`, atomically
/// (written aside, then renamed), so a reader never sees half a file.
///
/// Rows are L2-normalized before quantization: only their direction matters
/// for cosine ranking, and normalizing uses the full int8 range for every row.
/// An all-zero row stays zero (it never matches anything).
pub fn write_vectors(path: &Path, dims: usize, rows: &[Vec<f32>]) -> Result<(), EmbedError> {
    let buf = encode_vectors(path, dims, rows)?;
    write_atomic(path, &buf)
}

/// The bytes of a vector file holding `rows` (see [`write_vectors`]);
/// `path` only names the file in errors.
pub fn encode_vectors(path: &Path, dims: usize, rows: &[Vec<f32>]) -> Result<Vec<u8>, EmbedError> {
    if dims == 0 || dims > u32::MAX as usize {
        return Err(EmbedError::invalid(
            path,
            format!("dims {dims} out of range"),
        ));
    }
    let mut scales = Vec::with_capacity(rows.len() * 4);
    let mut data = Vec::with_capacity(rows.len() * dims);
    for (i, row) in rows.iter().enumerate() {
        if row.len() != dims {
            return Err(EmbedError::invalid(
                path,
                format!("row {i} has {} components, expected {dims}", row.len()),
            ));
        }
        let (scale, q) = quantize(row);
        scales.extend_from_slice(&scale.to_le_bytes());
        data.extend(q.iter().map(|&v| v as u8));
    }
    let mut buf = Vec::with_capacity(HEADER_LEN + scales.len() + data.len());
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&VERSION.to_le_bytes());
    buf.extend_from_slice(&(dims as u32).to_le_bytes());
    buf.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    buf.extend_from_slice(&scales);
    buf.extend_from_slice(&data);
    Ok(buf)
}

/// Normalizes `row` and quantizes it to int8, with the factor that makes
/// the int8 row a unit vector again. That factor is a function of the int8
/// components alone, so a row read back ([`VectorStore::row`]) and written
/// again is the same bytes: a build that takes rows over from an earlier
/// file writes what embedding them would have.
fn quantize(row: &[f32]) -> (f32, Vec<i8>) {
    let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
    let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
    if norm == 0.0 || max == 0.0 || !norm.is_finite() {
        return (0.0, vec![0; row.len()]);
    }
    // As rows have always been quantized: the same components as before.
    let scale = max / norm / 127.0;
    let inv = 1.0 / (scale * norm);
    let q: Vec<i8> = row
        .iter()
        .map(|v| (v * inv).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (unit_factor(&q), q)
}

/// `1 / |q|` (0 for the zero row): `q` times it is a unit vector.
fn unit_factor(q: &[i8]) -> f32 {
    let n2: i64 = q.iter().map(|&v| (v as i64) * (v as i64)).sum();
    if n2 == 0 {
        0.0
    } else {
        (1.0 / (n2 as f64).sqrt()) as f32
    }
}

/// Writes `bytes` to a sibling temp file, syncs it and renames it over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EmbedError> {
    let tmp = aside(path);
    let res = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        EmbedError::io(path, e)
    })
}

fn aside(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(
        ".{}.tmp-{}",
        name.unwrap_or_default(),
        std::process::id()
    ))
}

/// An artifact's vectors, resident, ready for exact top-k search.
///
/// Kept quantized in memory too: a scan over 15,000 × 256 rows then touches
/// under 4 MB, which is what makes brute force fast enough to need no index.
#[derive(Debug, Clone)]
pub struct VectorStore {
    dims: usize,
    rows: usize,
    /// Row-major int8 components.
    data: Vec<i8>,
    /// Per row: 1 / |int8 row|. The stored scale cancels out of a cosine, so
    /// `dot(i8 row, i8 query) × factor × query factor` is the cosine of the
    /// dequantized vectors (0 for a zero row).
    factor: Vec<f32>,
}

impl VectorStore {
    /// Reads and checks a file written by [`write_vectors`]; any mismatch
    /// between header and size is an error naming the file.
    pub fn load(path: &Path) -> Result<VectorStore, EmbedError> {
        let bytes = fs::read(path).map_err(|e| EmbedError::io(path, e))?;
        Self::from_vec(path, bytes)
    }

    /// [`VectorStore::load`] of bytes already read; `path` only names them in errors.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<VectorStore, EmbedError> {
        Self::from_vec(path, bytes.to_vec())
    }

    /// [`VectorStore::from_bytes`] taking the bytes: the rows stay where
    /// they were read, so a server holds an artifact's vectors once, not
    /// twice, while it loads.
    pub fn from_vec(path: &Path, mut bytes: Vec<u8>) -> Result<VectorStore, EmbedError> {
        if bytes.len() < HEADER_LEN {
            return Err(EmbedError::invalid(
                path,
                format!("{} bytes is shorter than the header", bytes.len()),
            ));
        }
        if &bytes[0..8] != MAGIC {
            return Err(EmbedError::invalid(
                path,
                "not a docsnap vector file (bad magic)",
            ));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        if version != VERSION {
            return Err(EmbedError::invalid(
                path,
                format!("vector file version {version}, this build reads {VERSION}"),
            ));
        }
        let dims = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let rows = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        let expected = (rows as u128) * (4 + dims as u128) + HEADER_LEN as u128;
        if dims == 0 || expected != bytes.len() as u128 {
            return Err(EmbedError::invalid(
                path,
                format!(
                    "size {} bytes does not match the header ({rows} rows × {dims} dims = {expected} bytes)",
                    bytes.len()
                ),
            ));
        }
        let rows = rows as usize;
        let scales_end = HEADER_LEN + rows * 4;
        let scales: Vec<u8> = bytes.drain(..scales_end).skip(HEADER_LEN).collect();
        // Same size and alignment: collected in place, no second buffer.
        let data: Vec<i8> = bytes.into_iter().map(|b| b as i8).collect();
        let factor = scales
            .chunks_exact(4)
            .zip(data.chunks_exact(dims))
            .map(|(s, row)| {
                // Recomputed from the components (files written before the
                // scale was defined as this factor hold another scale).
                match f32::from_le_bytes(s.try_into().unwrap()) {
                    0.0 => 0.0,
                    _ => unit_factor(row),
                }
            })
            .collect();
        Ok(VectorStore {
            dims,
            rows,
            data,
            factor,
        })
    }

    /// Components per row.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of rows (one per passage of the artifact).
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when the store holds no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Row `i` as dequantized unit vector (for tests and diagnostics, not the
    /// hot path).
    pub fn row(&self, i: usize) -> Vec<f32> {
        let f = self.factor[i];
        self.data[i * self.dims..(i + 1) * self.dims]
            .iter()
            .map(|&v| v as f32 * f)
            .collect()
    }

    /// The `k` rows most cosine-similar to `query` among those `filter`
    /// accepts, best first, as `(cosine, row)`.
    ///
    /// Exact brute force: the query is quantized like the rows, each row costs
    /// one int8 dot product. A zero or wrong-length query matches nothing.
    pub fn top_k(
        &self,
        query: &[f32],
        k: usize,
        filter: impl Fn(usize) -> bool,
    ) -> Vec<(f32, usize)> {
        if k == 0 {
            return Vec::new();
        }
        let mut scored = self.cosines_where(query, filter);
        let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, by_score);
            scored.truncate(k);
        }
        scored.sort_unstable_by(by_score);
        scored
    }

    /// The cosine of `query` to every row, as `(cosine, row)` in row order
    /// (nothing for a zero or wrong-length query).
    pub fn cosines(&self, query: &[f32]) -> Vec<(f32, usize)> {
        self.cosines_where(query, |_| true)
    }

    /// [`VectorStore::cosines`] of the rows `filter` accepts.
    fn cosines_where(&self, query: &[f32], filter: impl Fn(usize) -> bool) -> Vec<(f32, usize)> {
        if query.len() != self.dims || self.rows == 0 {
            return Vec::new();
        }
        // The factor that makes the int8 query a unit vector (0: a zero
        // query, which matches nothing).
        let (qfactor, q) = quantize(query);
        if qfactor == 0.0 {
            return Vec::new();
        }
        let mut dots = vec![0i32; self.rows];
        docsnap_bert::dots_i8(&self.data, &q, &mut dots);
        let mut scored: Vec<(f32, usize)> = Vec::with_capacity(self.rows.min(4096));
        for (i, dot) in dots.into_iter().enumerate() {
            if filter(i) {
                scored.push((dot as f32 * self.factor[i] * qfactor, i));
            }
        }
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random numbers (no rand dependency).
    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
    }

    /// Rows read back and written again are the same bytes (a build that
    /// takes rows over from an earlier file writes what embedding gave),
    /// zero rows included.
    #[test]
    fn rows_read_back_write_the_same_bytes() {
        let mut rows = random_rows(200, 384, 7);
        rows.push(vec![0.0; 384]);
        let first = encode_vectors(Path::new("v"), 384, &rows).unwrap();
        let store = VectorStore::from_bytes(Path::new("v"), &first).unwrap();
        let back: Vec<Vec<f32>> = (0..store.len()).map(|i| store.row(i)).collect();
        let again = encode_vectors(Path::new("v"), 384, &back).unwrap();
        assert!(first == again, "the bytes changed on the way back");
    }

    fn random_rows(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        (0..n)
            .map(|_| (0..dims).map(|_| lcg(&mut s)).collect())
            .collect()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let d: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
        if na == 0.0 || nb == 0.0 {
            0.0
        } else {
            d / (na * nb)
        }
    }

    #[test]
    fn round_trip_keeps_directions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let mut rows = random_rows(50, 64, 7);
        rows.push(vec![0.0; 64]);
        write_vectors(&path, 64, &rows).unwrap();
        let store = VectorStore::load(&path).unwrap();
        assert_eq!(store.len(), 51);
        assert_eq!(store.dims(), 64);
        for (i, r) in rows.iter().enumerate().take(50) {
            let back = store.row(i);
            let n: f32 = back.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-4, "row {i} norm {n}");
            assert!(cosine(r, &back) > 0.999, "row {i}");
        }
        assert!(store.row(50).iter().all(|&x| x == 0.0));
        // No temp file left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn size_mismatch_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.bin");
        write_vectors(&path, 8, &random_rows(4, 8, 1)).unwrap();
        let mut bytes = fs::read(&path).unwrap();
        bytes.pop();
        fs::write(&path, &bytes).unwrap();
        let err = VectorStore::load(&path).unwrap_err().to_string();
        assert!(err.contains("short.bin"), "{err}");
        assert!(err.contains("does not match"), "{err}");

        fs::write(&path, b"not a vector file at all....").unwrap();
        let err = VectorStore::load(&path).unwrap_err().to_string();
        assert!(err.contains("bad magic"), "{err}");
    }

    #[test]
    fn wrong_row_length_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let err = write_vectors(&path, 4, &[vec![1.0; 4], vec![1.0; 3]]).unwrap_err();
        assert!(err.to_string().contains("row 1"), "{err}");
        assert!(!path.exists());
    }

    #[test]
    fn top_k_matches_naive_ranking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let dims = 48;
        let rows = random_rows(500, dims, 42);
        write_vectors(&path, dims, &rows).unwrap();
        let store = VectorStore::load(&path).unwrap();
        let mut s = 99;
        for _ in 0..20 {
            let q: Vec<f32> = (0..dims).map(|_| lcg(&mut s)).collect();
            let filter = |i: usize| !i.is_multiple_of(3);
            let got = store.top_k(&q, 10, filter);
            // Naive: exact f32 cosine against the original rows.
            let mut naive: Vec<(f32, usize)> = rows
                .iter()
                .enumerate()
                .filter(|(i, _)| filter(*i))
                .map(|(i, r)| (cosine(&q, r), i))
                .collect();
            naive.sort_by(|a, b| b.0.total_cmp(&a.0));
            assert_eq!(got.len(), 10);
            for w in got.windows(2) {
                assert!(w[0].0 >= w[1].0);
            }
            for (g, n) in got.iter().zip(&naive) {
                assert!(filter(g.1));
                // Quantization moves cosines by ~1e-2 at most; ranks may swap
                // only between near-ties.
                assert!((g.0 - n.0).abs() < 0.02, "{g:?} vs {n:?}");
                let exact = cosine(&q, &rows[g.1]);
                assert!((g.0 - exact).abs() < 0.02);
            }
            // The best row is found unless the runner-up is a near tie.
            if naive[0].0 - naive[1].0 > 0.02 {
                assert_eq!(got[0].1, naive[0].1);
            }
        }
        assert!(store.top_k(&vec![0.0; dims], 5, |_| true).is_empty());
        assert!(store.top_k(&[1.0; 3], 5, |_| true).is_empty());
        assert_eq!(store.top_k(&rows[0], 1000, |_| true).len(), 500);
    }

    #[test]
    fn dot_handles_tails() {
        let a: Vec<i8> = (0..74).map(|i| (i as i8) - 18).collect();
        let b: Vec<i8> = (0..37).map(|i| 127 - (i as i8) * 3).collect();
        let naive =
            |row: &[i8]| -> i32 { row.iter().zip(&b).map(|(x, y)| *x as i32 * *y as i32).sum() };
        let mut out = [0i32; 2];
        docsnap_bert::dots_i8(&a, &b, &mut out);
        assert_eq!(out, [naive(&a[..37]), naive(&a[37..])]);
    }

    /// Timing over the size the brief targets (15,000 × 256); run with
    /// `cargo test --release -- --ignored --nocapture bench_top_k`.
    #[test]
    #[ignore]
    fn bench_top_k() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let rows = random_rows(15_000, 256, 3);
        write_vectors(&path, 256, &rows).unwrap();
        let store = VectorStore::load(&path).unwrap();
        let q = rows[17].clone();
        let n = 200;
        let t = std::time::Instant::now();
        let mut best = 0;
        for _ in 0..n {
            best += store.top_k(&q, 10, |_| true)[0].1;
        }
        let per = t.elapsed() / n;
        assert_eq!(best, 17 * n as usize);
        println!("top_k over 15000x256: {per:?} per query");
    }
}
