//! Questions asked of the pages: the training questions (written per page in
//! users' words, never the evaluation's) embedded as the server embeds a
//! question, each row tagged with the page it asks about.
//!
//! A page's vector stands for what the page says; a question in users'
//! words ("my character slides down slopes") is often nearer another
//! question asked of the same page than the page itself. At query time the
//! server takes, per page, the cosine of the question to the nearest
//! question asked of that page and mixes it into the page's cosine
//! (`FamilyLevers::asked` in `search::rank`). The rows are moved by the
//! source's query adapter before they are stored, as questions are moved
//! before they meet them, so both sides of the comparison live where the
//! adapter puts questions.
//!
//! Two files in the artifact, both listed with their sha256 in the
//! manifest: [`ASKED_VECTORS`] (the vector store's int8 format, one row per
//! question) and [`ASKED_META`] (JSON: the page of each row, and the
//! sha256 of what made the rows, so that an unchanged set is known before
//! anything is embedded).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::EmbedError;

/// The question vectors' file name inside an artifact.
pub const ASKED_VECTORS: &str = "asked.i8";
/// The rows' pages and provenance, inside an artifact.
pub const ASKED_META: &str = "asked.json";
/// One key a row ([`row_keys`]), a line each, inside an artifact: what lets
/// the next build take over the rows of questions it still asks when the
/// file changed around them.
pub const ASKED_KEYS: &str = "asked_keys.txt";

/// Rows of questions embedded ahead of any build (sources.yaml
/// `asked_rows`), by key ([`row_keys`]): the questions files are data of
/// this repository, their rows under the default model are the same for
/// every build, and embedding them is two fifths of a from-scratch build's
/// work (6,452 of Godot's 7,040 texts). A build takes a row from here
/// where the previous snapshot has none, and embeds the rest; a question
/// added since is embedded, so stale rows cost time, never correctness.
///
/// Two files: the rows in the vector store's int8 format (`*.i8`) and
/// beside it the keys (same name, `.keys`): a first line `sha256 <hex>` of
/// the rows file, then one key per row.
#[derive(Debug)]
pub struct ShippedRows {
    index: HashMap<String, usize>,
    store: super::store::VectorStore,
}

impl ShippedRows {
    /// The keys file beside a rows file.
    pub fn keys_path(rows: &Path) -> PathBuf {
        rows.with_extension("keys")
    }

    /// Reads and checks both files: a rows file whose sha256 is not the
    /// one its keys file records, or whose row count is not the keys', is
    /// an error naming the file.
    pub fn read(rows: &Path) -> Result<ShippedRows, EmbedError> {
        let keys_path = Self::keys_path(rows);
        let bytes = std::fs::read(rows).map_err(|e| EmbedError::io(rows, e))?;
        let keys =
            std::fs::read_to_string(&keys_path).map_err(|e| EmbedError::io(&keys_path, e))?;
        let mut lines = keys.lines();
        let want = lines
            .next()
            .and_then(|l| l.strip_prefix("sha256 "))
            .ok_or_else(|| EmbedError::invalid(&keys_path, "no `sha256 <hex>` first line"))?;
        let got = crate::util::sha256_hex(&bytes);
        if got != want {
            return Err(EmbedError::invalid(
                rows,
                format!("sha256 {got}, its keys file records {want}: damaged or out of step"),
            ));
        }
        let store = super::store::VectorStore::from_vec(rows, bytes)?;
        let index: HashMap<String, usize> =
            lines.enumerate().map(|(i, k)| (k.to_string(), i)).collect();
        if index.len() != store.len() {
            return Err(EmbedError::invalid(
                &keys_path,
                format!("{} distinct keys for {} rows", index.len(), store.len()),
            ));
        }
        Ok(ShippedRows { index, store })
    }

    /// The row of the question `key`, dequantized (it quantizes to the
    /// same int8 components again).
    pub fn row(&self, key: &str) -> Option<Vec<f32>> {
        self.index.get(key).map(|&i| self.store.row(i))
    }

    /// Writes `rows` (key, vector; keys distinct) as the two files at
    /// `path` (see [`ShippedRows`]), keys sorted so that a regenerated
    /// file differs only where questions did.
    pub fn write(
        path: &Path,
        dims: usize,
        rows: &mut [(String, Vec<f32>)],
    ) -> Result<(), EmbedError> {
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let vectors: Vec<Vec<f32>> = rows.iter().map(|(_, v)| v.clone()).collect();
        let bytes = super::store::encode_vectors(path, dims, &vectors)?;
        let mut keys = format!("sha256 {}\n", crate::util::sha256_hex(&bytes));
        for (k, _) in rows.iter() {
            keys.push_str(k);
            keys.push('\n');
        }
        super::store::write_atomic(path, &bytes)?;
        super::store::write_atomic(&Self::keys_path(path), keys.as_bytes())
    }
}

/// What [`ASKED_META`] holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskedMeta {
    /// sha256 over the embedding's vectors identity, the adapter's bytes
    /// and every kept question's text, in order: equal inputs, equal rows
    /// (whatever pages they ask about now: a page added elsewhere in the
    /// source moves the indices, not the vectors).
    pub inputs_sha256: String,
    /// The page (index into the artifact's pages) of each row.
    pub pages: Vec<u32>,
    /// The text of each row, as embedded: the server ranks pages by the
    /// words of their questions too (`search::asked_words`). Empty in
    /// artifacts written before session 45.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<String>,
}

/// One line of a questions file (`{"query", "url"}`, JSON Lines).
#[derive(Debug, Deserialize)]
struct Line {
    query: String,
    url: String,
}

/// The questions of the files `paths` (read in order) that ask about one
/// of `pages` (matched by `key_of_url`, a page URL's canonical key, against
/// `page_keys`), as `(text as embedded, page)`, in file order. `prepare`
/// turns a question into what the server embeds (the Godot tool strips its
/// framing). A line that is not `{"query", "url"}` is an error naming the
/// file and line.
pub fn select(
    paths: &[PathBuf],
    page_keys: &HashMap<String, usize>,
    key_of_url: impl Fn(&str) -> String,
    prepare: impl Fn(&str) -> String,
) -> Result<Vec<(String, u32)>, EmbedError> {
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| EmbedError::io(path, e))?;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let l: Line = serde_json::from_str(line).map_err(|e| {
                EmbedError::invalid(
                    path,
                    format!("line {}: want {{\"query\", \"url\"}}: {e}", n + 1),
                )
            })?;
            if let Some(&page) = page_keys.get(&key_of_url(&l.url)) {
                let q = prepare(&l.query);
                if !q.trim().is_empty() {
                    out.push((q, page as u32));
                }
            }
        }
    }
    Ok(out)
}

/// What makes a row besides its text: the embedding's vectors identity and
/// the adapter (its bytes' sha256, or `unadapted`), NUL-separated. Hashed
/// with the texts by [`meta`] and [`row_keys`], which must agree on it.
fn made_by(vectors_sha256: &str, adapter: Option<&[u8]>) -> String {
    let adapter = adapter.map_or_else(|| "unadapted".to_string(), crate::util::sha256_hex);
    format!("{vectors_sha256}\0{adapter}")
}

/// The key of each question's row: a sha256 of what makes the row — the
/// embedding's vectors identity, the adapter's bytes and the text — so a
/// row is taken over only where all three are the same.
pub fn row_keys(
    vectors_sha256: &str,
    adapter: Option<&[u8]>,
    questions: &[(String, u32)],
) -> Vec<String> {
    use sha2::{Digest, Sha256};
    let made_by = made_by(vectors_sha256, adapter);
    questions
        .iter()
        .map(|(q, _)| {
            let mut h = Sha256::new();
            h.update(made_by.as_bytes());
            h.update([0]);
            h.update(q.as_bytes());
            hex::encode(h.finalize())
        })
        .collect()
}

/// The [`AskedMeta`] of `questions` for an embedding (`vectors_sha256`)
/// and an adapter's bytes (`None`: unadapted).
pub fn meta(
    vectors_sha256: &str,
    adapter: Option<&[u8]>,
    questions: &[(String, u32)],
) -> AskedMeta {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(made_by(vectors_sha256, adapter).as_bytes());
    for (q, _) in questions {
        h.update([0]);
        h.update(q.as_bytes());
    }
    AskedMeta {
        inputs_sha256: hex::encode(h.finalize()),
        pages: questions.iter().map(|(_, p)| *p).collect(),
        texts: questions.iter().map(|(q, _)| q.clone()).collect(),
    }
}

/// Checks an artifact's [`ASKED_VECTORS`] (`path`) against its questions,
/// once [`check_meta`] has passed them: one row of `dims` per question.
/// The server checks the two apart: it reads the meta when the artifact
/// opens (for the questions' words) and the rows when a model attaches.
pub fn check_rows(
    path: &Path,
    questions: usize,
    vectors: &super::store::VectorStore,
    dims: usize,
) -> Result<(), EmbedError> {
    if vectors.len() != questions || vectors.dims() != dims {
        return Err(EmbedError::invalid(
            path,
            format!(
                "{} rows of {} dims for {questions} questions of {dims} dims",
                vectors.len(),
                vectors.dims(),
            ),
        ));
    }
    Ok(())
}

/// Checks an artifact's [`ASKED_META`] (`path`) alone: every page one of
/// its `pages`, and a text for every question when it keeps texts.
pub fn check_meta(path: &Path, meta: &AskedMeta, pages: usize) -> Result<(), EmbedError> {
    if !meta.texts.is_empty() && meta.texts.len() != meta.pages.len() {
        return Err(EmbedError::invalid(
            path,
            format!(
                "{} texts for {} questions",
                meta.texts.len(),
                meta.pages.len()
            ),
        ));
    }
    if let Some(p) = meta.pages.iter().find(|&&p| p as usize >= pages) {
        return Err(EmbedError::invalid(
            path,
            format!("a question asks about page {p}, the artifact has {pages}"),
        ));
    }
    Ok(())
}

/// For each page (`pages` of them), the cosine of `query` to the questions
/// asked of it: (1 − `second`) × the nearest's + `second` × the
/// second-nearest's (the nearest's again where the page has one question);
/// `None` for a page nobody asked about.
pub fn nearest_per_page(
    vectors: &super::store::VectorStore,
    rows_page: &[u32],
    query: &[f32],
    pages: usize,
    second: f32,
) -> Vec<Option<f32>> {
    let mut best: Vec<Option<(f32, Option<f32>)>> = vec![None; pages];
    for (cos, row) in vectors.cosines(query) {
        if let Some(slot) = rows_page.get(row).and_then(|&p| best.get_mut(p as usize)) {
            *slot = Some(match *slot {
                None => (cos, None),
                Some((a, _)) if cos > a => (cos, Some(a)),
                Some((a, b)) => (a, Some(b.map_or(cos, |b| b.max(cos)))),
            });
        }
    }
    best.into_iter()
        .map(|s| s.map(|(a, b)| (1.0 - second) * a + second * b.unwrap_or(a)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows written ahead read back by key; a keys file out of step with
    /// its rows is refused by name.
    #[test]
    fn rows_embedded_ahead_read_back_by_key_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.i8");
        let mut rows = vec![
            ("b".to_string(), vec![0.0, 1.0, 0.0]),
            ("a".to_string(), vec![0.6, 0.0, 0.8]),
        ];
        ShippedRows::write(&path, 3, &mut rows).unwrap();
        let read = ShippedRows::read(&path).unwrap();
        assert_eq!(read.row("a").unwrap().len(), 3);
        assert!(read.row("a").unwrap()[2] > 0.79 && read.row("b").unwrap()[1] > 0.99);
        assert!(read.row("c").is_none());
        let keys = ShippedRows::keys_path(&path);
        let text = std::fs::read_to_string(&keys).unwrap();
        std::fs::write(&keys, format!("{text}c\n")).unwrap();
        let e = ShippedRows::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("rows.keys") && e.contains("3 distinct keys for 2 rows"),
            "{e}"
        );
        std::fs::write(&keys, text.replacen("sha256 ", "sha256 0", 1)).unwrap();
        let e = ShippedRows::read(&path).unwrap_err().to_string();
        assert!(e.contains("rows.i8") && e.contains("out of step"), "{e}");
    }

    /// What the server checks of an artifact's asked files, meta and rows
    /// together: as many rows as questions, every page one of `pages`,
    /// rows of `dims`.
    fn check(
        path: &Path,
        meta: &AskedMeta,
        vectors: &super::super::store::VectorStore,
        pages: usize,
        dims: usize,
    ) -> Result<(), EmbedError> {
        check_rows(path, meta.pages.len(), vectors, dims)?;
        check_meta(path, meta, pages)
    }

    #[test]
    fn questions_are_kept_for_the_sources_pages_only() {
        let dir = tempfile::tempdir().unwrap();
        // Two files, read in the order listed.
        let path = dir.path().join("q.jsonl");
        let more = dir.path().join("more.jsonl");
        std::fs::write(
            &path,
            concat!(
                "{\"query\": \"how do I jump\", \"url\": \"https://d.example/a#x\"}\n",
                "\n",
                "{\"query\": \"elsewhere\", \"url\": \"https://other.example/b\"}\n",
                "{\"query\": \"  \", \"url\": \"https://d.example/a\"}\n",
            ),
        )
        .unwrap();
        std::fs::write(
            &more,
            "{\"query\": \"in godot, slopes\", \"url\": \"https://d.example/c\"}\n",
        )
        .unwrap();
        let keys: HashMap<String, usize> = [
            ("d.example/a".to_string(), 0),
            ("d.example/c".to_string(), 2),
        ]
        .into();
        let key = |u: &str| {
            u.trim_start_matches("https://")
                .split('#')
                .next()
                .unwrap()
                .to_string()
        };
        let strip = |q: &str| q.trim_start_matches("in godot, ").to_string();
        let got = select(&[path.clone(), more.clone()], &keys, key, strip).unwrap();
        assert_eq!(
            got,
            vec![("how do I jump".to_string(), 0), ("slopes".to_string(), 2)]
        );
        let swapped = select(&[more, path], &keys, key, strip).unwrap();
        assert_eq!(swapped[0].0, "slopes");
        // The meta changes with any input, and only then.
        let m = meta("v", Some(b"w"), &got);
        assert_eq!(m.pages, vec![0, 2]);
        assert_eq!(m.texts, vec!["how do I jump", "slopes"]);
        assert_eq!(m, meta("v", Some(b"w"), &got));
        assert_ne!(m.inputs_sha256, meta("v", None, &got).inputs_sha256);
        assert_ne!(m.inputs_sha256, meta("u", Some(b"w"), &got).inputs_sha256);
        assert_ne!(
            m.inputs_sha256,
            meta("v", Some(b"w"), &got[..1]).inputs_sha256
        );
        // Other pages, the same rows.
        let moved: Vec<(String, u32)> = got.iter().map(|(q, p)| (q.clone(), p + 1)).collect();
        let m2 = meta("v", Some(b"w"), &moved);
        assert_eq!(m2.inputs_sha256, m.inputs_sha256);
        assert_ne!(m2, m);
    }

    #[test]
    fn a_line_that_is_not_a_question_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.jsonl");
        let path = dir.path().join("q.jsonl");
        std::fs::write(&good, "{\"query\": \"a\", \"url\": \"u\"}\n").unwrap();
        std::fs::write(&path, "{\"query\": \"a\", \"url\": \"u\"}\n{\"q\": 1}\n").unwrap();
        let err = select(
            &[good, path],
            &HashMap::new(),
            str::to_string,
            str::to_string,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("q.jsonl") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn each_page_takes_its_nearest_question() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("asked.i8");
        let rows = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.6, 0.8, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        let bytes = super::super::store::encode_vectors(&path, 3, &rows).unwrap();
        let v = super::super::store::VectorStore::from_bytes(&path, &bytes).unwrap();
        let m = AskedMeta {
            inputs_sha256: String::new(),
            pages: vec![1, 1, 0],
            texts: Vec::new(),
        };
        check(&path, &m, &v, 3, 3).unwrap();
        let near = nearest_per_page(&v, &m.pages, &[0.0, 1.0, 0.0], 3, 0.0);
        assert!(near[0].unwrap().abs() < 0.02, "{near:?}");
        assert!((near[1].unwrap() - 0.8).abs() < 0.02, "{near:?}");
        assert_eq!(near[2], None);
        // Half the second-nearest: page 1's two questions (0.8 and 0.0)
        // meet at 0.4; page 0 has one question, which stands for both.
        let mixed = nearest_per_page(&v, &m.pages, &[0.0, 1.0, 0.0], 3, 0.5);
        assert!((mixed[1].unwrap() - 0.4).abs() < 0.02, "{mixed:?}");
        assert_eq!(mixed[0], near[0]);
        // Above, page 1's nearest row came after its other; here it comes
        // first: 0.5 × 1.0 + 0.5 × 0.6.
        let x = nearest_per_page(&v, &m.pages, &[1.0, 0.0, 0.0], 3, 0.5);
        assert!((x[1].unwrap() - 0.8).abs() < 0.02, "{x:?}");
        // A page beyond the artifact's, or rows of another size, are refused.
        let bad = AskedMeta {
            pages: vec![1, 1, 3],
            ..m.clone()
        };
        assert!(check(&path, &bad, &v, 3, 3)
            .unwrap_err()
            .to_string()
            .contains("page 3"));
        assert!(check(&path, &m, &v, 3, 4).is_err());
        // Texts, when there are any, one a row.
        let texts = |n: usize| AskedMeta {
            texts: vec!["q".to_string(); n],
            ..m.clone()
        };
        check(&path, &texts(3), &v, 3, 3).unwrap();
        assert!(check(&path, &texts(2), &v, 3, 3)
            .unwrap_err()
            .to_string()
            .contains("2 texts for 3 questions"));
    }
}
