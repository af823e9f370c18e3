//! Stage 4: the full-text index of sections (tantivy), and the tokenizer that
//! makes code identifiers findable whole and in parts.
//!
//! One tantivy document per [`Section`]; its `sec` field is the section's
//! position in `sections.jsonl`, so the index stores no text of its own and the
//! JSON lines stay the single source of truth.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy::{doc, Index, IndexReader, TantivyDocument, Term};

use crate::model::{Page, Section};

/// Name under which the analyzer is registered with tantivy.
pub const TOKENIZER: &str = "docsnap";

/// Index failure, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("index {what}: {source}")]
pub struct IndexError {
    what: String,
    #[source]
    source: tantivy::TantivyError,
}

fn ierr(what: &str) -> impl FnOnce(tantivy::TantivyError) -> IndexError + '_ {
    move |source| IndexError {
        what: what.to_string(),
        source,
    }
}

/// Splits text into words and code identifiers. An identifier such as
/// `add_child`, `--add-dir`, `CharacterBody2D` or `tools/list` is emitted whole
/// (lower-cased, without leading punctuation) and, at the same positions, as its
/// parts (`add`, `child`; `character`, `body2d`), so a query for either finds it.
#[derive(Clone, Default)]
pub struct CodeTokenizer {
    tokens: Vec<Token>,
}

/// The token stream of [`CodeTokenizer`].
pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    i: usize,
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.i < self.tokens.len() {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn token(&self) -> &Token {
        &self.tokens[self.i - 1]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.i - 1]
    }
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        let mut pos = 0usize;
        for (ws, we) in split_words(text) {
            let word = &text[ws..we];
            let forms = word_forms(word);
            let n_atoms = forms.atoms.len().max(1);
            let push = |a: usize, b: usize, p: usize, tokens: &mut Vec<Token>| {
                tokens.push(Token {
                    offset_from: ws + a,
                    offset_to: ws + b,
                    position: p,
                    text: word[a..b].to_lowercase(),
                    position_length: 1,
                });
            };
            push(0, word.len(), pos, &mut self.tokens);
            for &(a, b) in &forms.segments {
                push(a, b, pos, &mut self.tokens);
            }
            if forms.atoms.len() > 1 {
                for (k, &(a, b)) in forms.atoms.iter().enumerate() {
                    push(a, b, pos + k, &mut self.tokens);
                }
            }
            pos += n_atoms;
        }
        CodeTokenStream {
            tokens: &mut self.tokens,
            i: 0,
        }
    }
}

/// The forms a word is indexed under besides itself: `segments` are the
/// pieces between `.`, `/`, `:`, `#`, `@` that are themselves compound
/// (`is_action_pressed` in `Input.is_action_pressed`), `atoms` the smallest
/// parts (`input`, `is`, `action`, `pressed`). Byte ranges within the word.
struct WordForms {
    segments: Vec<(usize, usize)>,
    atoms: Vec<(usize, usize)>,
}

fn word_forms(word: &str) -> WordForms {
    let atoms = split_parts(word);
    let mut segments = Vec::new();
    let mut start = 0usize;
    let cut = |end: usize, start: usize, segments: &mut Vec<(usize, usize)>| {
        if end > start && (start > 0 || end < word.len()) {
            let seg = &word[start..end];
            if split_parts(seg).len() > 1 {
                segments.push((start, end));
            }
        }
    };
    for (i, c) in word.char_indices() {
        if matches!(c, '.' | '/' | ':' | '#' | '@') {
            cut(i, start, &mut segments);
            start = i + c.len_utf8();
        }
    }
    cut(word.len(), start, &mut segments);
    WordForms { segments, atoms }
}

fn is_connector(c: char) -> bool {
    matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '#')
}

/// Byte ranges of words: runs of alphanumerics joined by single connectors
/// (`a_b`, `x.y`, `a-b`), without leading or trailing connectors.
fn split_words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let mut i = 0;
    while i < n {
        if !chars[i].1.is_alphanumeric() {
            i += 1;
            continue;
        }
        let start = chars[i].0;
        let mut j = i;
        loop {
            while j < n && chars[j].1.is_alphanumeric() {
                j += 1;
            }
            if j + 1 < n && is_connector(chars[j].1) && chars[j + 1].1.is_alphanumeric() {
                j += 1;
                continue;
            }
            break;
        }
        let end = if j < n { chars[j].0 } else { text.len() };
        out.push((start, end));
        i = j;
    }
    out
}

/// Parts of a word: split at connectors and at lower→upper case changes
/// (`PreToolUse` → `Pre`, `Tool`, `Use`; `HTTPRequest` → `HTTP`, `Request`).
fn split_parts(word: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let cs: Vec<(usize, char)> = word.char_indices().collect();
    let mut start: Option<usize> = None;
    for (k, &(b, c)) in cs.iter().enumerate() {
        if is_connector(c) {
            if let Some(s) = start.take() {
                out.push((s, b));
            }
            continue;
        }
        if let Some(s) = start {
            let prev = cs[k - 1].1;
            let next = cs.get(k + 1).map(|x| x.1);
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.map(|n| n.is_lowercase()).unwrap_or(false));
            if boundary {
                out.push((s, b));
                start = Some(b);
            }
        } else {
            start = Some(b);
        }
    }
    if let Some(s) = start {
        out.push((s, word.len()));
    }
    out
}

/// The analyzer used for indexing and for queries: code-aware words, lower
/// case, very long tokens dropped, English stemming.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Analyze text into index terms.
pub fn terms(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut ts = a.token_stream(text);
    let mut out = Vec::new();
    while ts.advance() {
        out.push(ts.token().text.clone());
    }
    out
}

/// The fields of a section document.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub sec: Field,
    pub title: Field,
    pub heading: Field,
    pub desc: Field,
    pub body: Field,
}

impl Fields {
    /// Searchable fields with their weights.
    pub fn weighted(&self) -> [(Field, f32); 4] {
        [
            (self.title, 2.5),
            (self.heading, 2.0),
            (self.desc, 1.0),
            (self.body, 1.0),
        ]
    }
}

/// The section schema.
pub fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let sec = b.add_u64_field("sec", FAST | STORED);
    let title = b.add_text_field("title", text.clone());
    let heading = b.add_text_field("heading", text.clone());
    let desc = b.add_text_field("desc", text.clone());
    let body = b.add_text_field("body", text);
    (
        b.build(),
        Fields {
            sec,
            title,
            heading,
            desc,
            body,
        },
    )
}

/// Build the index of `sections` into `dir` (which must exist and be empty).
/// `page_of[i]` is the page of section `i`.
pub fn build(
    dir: &Path,
    pages: &[Page],
    sections: &[Section],
    page_of: &[usize],
) -> Result<(), IndexError> {
    let (schema, _) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(ierr("create"))?;
    fill(&index, pages, sections, page_of)
}

/// Build the index in memory (for tests and for records loaded without one).
pub fn build_in_ram(
    pages: &[Page],
    sections: &[Section],
    page_of: &[usize],
) -> Result<SectionIndex, IndexError> {
    let (schema, fields) = schema();
    let index = Index::create_in_ram(schema);
    fill(&index, pages, sections, page_of)?;
    let reader = index.reader().map_err(ierr("open reader"))?;
    Ok(SectionIndex { reader, fields })
}

fn fill(
    index: &Index,
    pages: &[Page],
    sections: &[Section],
    page_of: &[usize],
) -> Result<(), IndexError> {
    let (_, f) = schema();
    index.tokenizers().register(TOKENIZER, analyzer());
    let mut w = index
        .writer_with_num_threads(1, 100_000_000)
        .map_err(ierr("open writer"))?;
    for (i, s) in sections.iter().enumerate() {
        let p = &pages[page_of[i]];
        let heading = s
            .heading_path
            .iter()
            .skip(1)
            .cloned()
            .collect::<Vec<_>>()
            .join(" \n ");
        w.add_document(doc!(
            f.sec => i as u64,
            f.title => p.title.as_str(),
            f.heading => heading,
            f.desc => p.description.as_str(),
            f.body => s.text.as_str(),
        ))
        .map_err(ierr("add document"))?;
    }
    w.commit().map_err(ierr("commit"))?;
    w.wait_merging_threads().map_err(ierr("merge"))?;
    Ok(())
}

/// An opened section index.
pub struct SectionIndex {
    reader: IndexReader,
    fields: Fields,
}

/// One query word as index terms: `terms[0]` is the whole word, the rest its
/// compound segments and atoms; `atoms` are the smallest parts alone.
#[derive(Debug, Clone, PartialEq)]
pub struct TermGroup {
    pub word: String,
    pub terms: Vec<String>,
    pub atoms: Vec<String>,
}

fn group_of(word: &str) -> Option<TermGroup> {
    let terms = terms(word);
    if terms.is_empty() {
        return None;
    }
    let forms = word_forms(word);
    let atoms = if forms.atoms.len() > 1 {
        forms
            .atoms
            .iter()
            .flat_map(|&(a, b)| self::terms(&word[a..b]))
            .collect()
    } else {
        Vec::new()
    };
    let mut dedup: Vec<String> = Vec::new();
    for t in terms {
        if !dedup.contains(&t) {
            dedup.push(t);
        }
    }
    Some(TermGroup {
        word: word.to_string(),
        terms: dedup,
        atoms,
    })
}

/// Split a query into term groups, one per word, dropping stop words.
pub fn query_groups(query: &str) -> Vec<TermGroup> {
    let mut out: Vec<TermGroup> = Vec::new();
    for (a, b) in split_words(query) {
        let word = &query[a..b];
        if crate::search::is_stopword(&word.to_lowercase()) {
            continue;
        }
        match group_of(word) {
            Some(g) if !out.iter().any(|o| o.terms == g.terms) => out.push(g),
            _ => {}
        }
    }
    out
}

/// Like [`query_groups`] but keeping stop words (for all-stop-word queries).
pub fn query_groups_all(query: &str) -> Vec<TermGroup> {
    let mut out: Vec<TermGroup> = Vec::new();
    for (a, b) in split_words(query) {
        match group_of(&query[a..b]) {
            Some(g) if !out.iter().any(|o| o.terms == g.terms) => out.push(g),
            _ => {}
        }
    }
    out
}

impl SectionIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Path) -> Result<SectionIndex, IndexError> {
        let index = Index::open_in_dir(dir).map_err(ierr("open"))?;
        index.tokenizers().register(TOKENIZER, analyzer());
        let (_, fields) = schema();
        let reader = index.reader().map_err(ierr("open reader"))?;
        Ok(SectionIndex { reader, fields })
    }

    /// Number of section documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// In how many sections' bodies `term` occurs.
    pub fn doc_freq(&self, term: &str) -> u64 {
        self.reader
            .searcher()
            .doc_freq(&Term::from_field_text(self.fields.body, term))
            .unwrap_or(0)
    }

    /// Top sections for the query groups: (BM25 score, section number).
    /// Each group's whole form weighs more than its parts.
    pub fn search(&self, groups: &[TermGroup], limit: usize) -> Vec<(f32, usize)> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for g in groups {
            for (k, t) in g.terms.iter().enumerate() {
                let w = if g.terms.len() > 1 && k == 0 {
                    1.5
                } else {
                    1.0
                };
                for (field, fw) in self.fields.weighted() {
                    let q = TermQuery::new(
                        Term::from_field_text(field, t),
                        IndexRecordOption::WithFreqs,
                    );
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new(q), fw * w)),
                    ));
                }
            }
        }
        if clauses.is_empty() {
            return Vec::new();
        }
        let q = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let Ok(top) = searcher.search(&q, &TopDocs::with_limit(limit)) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            if let Ok(d) = searcher.doc::<TantivyDocument>(addr) {
                if let Some(sec) = d.get_first(self.fields.sec).and_then(|v| v.as_u64()) {
                    out.push((score, sec as usize));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        split_words(s).into_iter().map(|(a, b)| &s[a..b]).collect()
    }

    #[test]
    fn words_keep_identifiers_together() {
        assert_eq!(
            words("Use --add-dir, add_child() and tools/list. Done."),
            ["Use", "add-dir", "add_child", "and", "tools/list", "Done"]
        );
        assert_eq!(words("@GlobalScope.print"), ["GlobalScope.print"]);
    }

    #[test]
    fn identifiers_are_findable_whole_and_in_parts() {
        let t = terms("CharacterBody2D");
        assert!(t.contains(&"characterbody2d".to_string()), "{t:?}");
        assert!(
            t.contains(&"charact".to_string()) || t.contains(&"character".to_string()),
            "{t:?}"
        );
        assert!(t.contains(&"body2d".to_string()), "{t:?}");
        let t = terms("add_child");
        assert!(
            t.contains(&"add_child".to_string()) && t.contains(&"child".to_string()),
            "{t:?}"
        );
        let t = terms("--add-dir");
        assert!(
            t.contains(&"add-dir".to_string()) && t.contains(&"dir".to_string()),
            "{t:?}"
        );
        let t = terms("HTTPRequest");
        assert!(
            t.contains(&"httprequest".to_string()) && t.contains(&"http".to_string()),
            "{t:?}"
        );
        let t = terms("Input.is_action_pressed");
        for want in [
            "input.is_action_press",
            "input",
            "is_action_press",
            "action",
            "press",
        ] {
            assert!(t.contains(&want.to_string()), "{want} not in {t:?}");
        }
        let g = query_groups("Input.is_action_pressed");
        assert_eq!(g[0].terms[0], "input.is_action_press");
        assert_eq!(g[0].atoms, ["input", "is", "action", "press"]);
    }

    #[test]
    fn stop_words_leave_queries() {
        let g = query_groups("how do I use the add_child method");
        let w: Vec<_> = g.iter().map(|g| g.word.as_str()).collect();
        assert_eq!(w, ["use", "add_child", "method"]);
    }
}
