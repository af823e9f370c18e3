//! Stage 4: the full-text index of sections (tantivy), and the tokenizer that
//! makes code identifiers findable whole and in parts.
//!
//! One tantivy document per [`Section`]; its `sec` field is the section's
//! position in `sections.jsonl`, so the index stores no text of its own and the
//! JSON lines stay the single source of truth.

use std::path::Path;

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED,
};

use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};
use tantivy::{doc, DocId, Index, Searcher, Term};

use crate::model::{Page, Section};

mod scan;
pub mod unit_terms;
pub use scan::Scan;
pub use unit_terms::{Prior, UnitTerms, UNIT_TERMS_FILE};

/// Name under which the analyzer is registered with tantivy.
pub const TOKENIZER: &str = "docsnap";

/// Index failure, with what was being done.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// Tokens of the last text; the first `used` are current. Kept between
    /// texts so that each token's string is reused, not reallocated: the
    /// tokenizer runs over every word of every section at build time.
    tokens: Vec<Token>,
    used: usize,
    words: Vec<(usize, usize)>,
    forms: WordForms,
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

impl CodeTokenizer {
    /// Append the token `word[a..b]` (lower-cased) at `position`, reusing a
    /// token string left from an earlier text when there is one.
    fn push(&mut self, ws: usize, word: &str, (a, b): (usize, usize), position: usize) {
        let part = &word[a..b];
        if self.used == self.tokens.len() {
            self.tokens.push(Token::default());
        }
        let t = &mut self.tokens[self.used];
        self.used += 1;
        t.offset_from = ws + a;
        t.offset_to = ws + b;
        t.position = position;
        t.position_length = 1;
        t.text.clear();
        if part.is_ascii() {
            t.text.push_str(part);
            t.text.make_ascii_lowercase();
        } else {
            t.text.push_str(&part.to_lowercase());
        }
    }
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.used = 0;
        let mut words = std::mem::take(&mut self.words);
        let mut forms = std::mem::take(&mut self.forms);
        split_words_into(text, &mut words);
        let mut pos = 0usize;
        for &(ws, we) in &words {
            let word = &text[ws..we];
            forms.fill(word);
            let n_atoms = forms.atoms.len().max(1);
            self.push(ws, word, (0, word.len()), pos);
            for &seg in &forms.segments {
                self.push(ws, word, seg, pos);
            }
            if forms.atoms.len() > 1 {
                for (k, &atom) in forms.atoms.iter().enumerate() {
                    self.push(ws, word, atom, pos + k);
                }
            }
            pos += n_atoms;
        }
        self.words = words;
        self.forms = forms;
        CodeTokenStream {
            tokens: &mut self.tokens[..self.used],
            i: 0,
        }
    }
}

/// The forms a word is indexed under besides itself: `segments` are the
/// pieces between `.`, `/`, `:`, `#`, `@` that are themselves compound
/// (`is_action_pressed` in `Input.is_action_pressed`), `atoms` the smallest
/// parts (`input`, `is`, `action`, `pressed`). Byte ranges within the word.
#[derive(Clone, Default)]
struct WordForms {
    segments: Vec<(usize, usize)>,
    atoms: Vec<(usize, usize)>,
}

impl WordForms {
    /// The forms of `word`, in these buffers (reused from word to word).
    fn fill(&mut self, word: &str) {
        split_parts_into(word, &mut self.atoms);
        self.segments.clear();
        // Most words hold no segment separator: nothing more to find.
        if !word.contains(['.', '/', ':', '#', '@']) {
            return;
        }
        let mut parts = Vec::new();
        let mut start = 0usize;
        let mut cut = |end: usize, start: usize, segments: &mut Vec<(usize, usize)>| {
            if end > start && (start > 0 || end < word.len()) {
                split_parts_into(&word[start..end], &mut parts);
                if parts.len() > 1 {
                    segments.push((start, end));
                }
            }
        };
        for (i, c) in word.char_indices() {
            if matches!(c, '.' | '/' | ':' | '#' | '@') {
                cut(i, start, &mut self.segments);
                start = i + c.len_utf8();
            }
        }
        cut(word.len(), start, &mut self.segments);
    }
}

fn word_forms(word: &str) -> WordForms {
    let mut forms = WordForms::default();
    forms.fill(word);
    forms
}

pub(crate) fn is_connector(c: char) -> bool {
    matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '#')
}

/// Byte ranges of words: runs of alphanumerics joined by single connectors
/// (`a_b`, `x.y`, `a-b`), without leading or trailing connectors.
fn split_words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    split_words_into(text, &mut out);
    out
}

/// [`split_words`] into `out` (cleared first).
fn split_words_into(text: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut it = text.char_indices().peekable();
    while let Some((start, c)) = it.next() {
        if !c.is_alphanumeric() {
            continue;
        }
        let mut end = start + c.len_utf8();
        loop {
            while let Some(&(b, c)) = it.peek() {
                if !c.is_alphanumeric() {
                    break;
                }
                end = b + c.len_utf8();
                it.next();
            }
            // A connector joins only when a word character follows it.
            let joins = match it.peek() {
                Some(&(_, c)) if is_connector(c) => {
                    let mut ahead = it.clone();
                    ahead.next();
                    ahead.next().is_some_and(|(_, n)| n.is_alphanumeric())
                }
                _ => false,
            };
            if !joins {
                break;
            }
            it.next();
        }
        out.push((start, end));
    }
}

/// Parts of a word, into `out` (cleared first): split at connectors and at
/// lower→upper case changes (`PreToolUse` → `Pre`, `Tool`, `Use`;
/// `HTTPRequest` → `HTTP`, `Request`).
fn split_parts_into(word: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    // The common case, a plain lower-case word or number, is one part.
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        out.push((0, word.len()));
        return;
    }
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut it = word.char_indices().peekable();
    while let Some((b, c)) = it.next() {
        let next = it.peek().map(|x| x.1);
        if is_connector(c) {
            if let Some(s) = start.take() {
                out.push((s, b));
            }
        } else if let (Some(s), Some(p)) = (start, prev) {
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next.is_some_and(|n| n.is_lowercase()));
            if boundary {
                out.push((s, b));
                start = Some(b);
            }
        } else {
            start = Some(b);
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        out.push((s, word.len()));
    }
}

/// The analyzer used for indexing and for queries: code-aware words, lower
/// case, very long tokens dropped, English stemming.
pub fn analyzer() -> TextAnalyzer {
    analyzer_remembering(STEM_MEMO_MAX)
}

/// [`analyzer`] whose stemmer remembers at most `words` words.
fn analyzer_remembering(words: usize) -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(MemoStemmer { max: words })
        .build()
}

/// Most words a [`MemoStemmer`] remembers before it starts afresh (bounds
/// its memory on hostile input).
const STEM_MEMO_MAX: usize = 100_000;
/// The same for the analyzer each server thread keeps for queries: the
/// server runs tools on blocking threads, as many as the load calls for,
/// and each keeps its own memo, so it stays small (a few hundred KB).
const QUERY_STEM_MEMO_MAX: usize = 4_096;

/// English (Snowball) stemming that remembers the words it has stemmed.
/// Documentation repeats a vocabulary of a few tens of thousands of words
/// millions of times, and stemming each occurrence anew was a tenth of a
/// build's CPU. Same stems as tantivy's `Stemmer` (same algorithm).
#[derive(Clone, Copy, Debug)]
pub struct MemoStemmer {
    /// Most words remembered before the memo starts afresh.
    max: usize,
}

impl TokenFilter for MemoStemmer {
    type Tokenizer<T: Tokenizer> = MemoStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> MemoStemmerFilter<T> {
        MemoStemmerFilter {
            inner,
            memo: Default::default(),
            max: self.max,
        }
    }
}

/// The tokenizer [`MemoStemmer`] wraps around another; each clone (tantivy
/// clones one per indexing thread) keeps its own memo, so nothing is locked.
#[derive(Clone)]
pub struct MemoStemmerFilter<T> {
    inner: T,
    memo: rustc_hash::FxHashMap<String, String>,
    max: usize,
}

impl<T: Tokenizer> Tokenizer for MemoStemmerFilter<T> {
    type TokenStream<'a> = MemoStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        MemoStemmerStream {
            tail: self.inner.token_stream(text),
            memo: &mut self.memo,
            max: self.max,
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
        }
    }
}

/// Token stream of [`MemoStemmerFilter`].
pub struct MemoStemmerStream<'a, S> {
    tail: S,
    memo: &'a mut rustc_hash::FxHashMap<String, String>,
    max: usize,
    stemmer: rust_stemmers::Stemmer,
}

impl<S: TokenStream> TokenStream for MemoStemmerStream<'_, S> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        match self.memo.get(&token.text) {
            Some(stem) => {
                token.text.clear();
                token.text.push_str(stem);
            }
            None => {
                let stem = self.stemmer.stem(&token.text).into_owned();
                if self.memo.len() >= self.max {
                    self.memo.clear();
                }
                let word = std::mem::replace(&mut token.text, stem.clone());
                self.memo.insert(word, stem);
            }
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

thread_local! {
    /// One analyzer per thread, kept: its stemmer's memo then serves every
    /// query the thread answers instead of starting cold each time (bounded
    /// by [`QUERY_STEM_MEMO_MAX`]).
    static ANALYZER: std::cell::RefCell<TextAnalyzer> =
        std::cell::RefCell::new(analyzer_remembering(QUERY_STEM_MEMO_MAX));
}

/// Analyze text into index terms.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_string()));
    out
}

/// Call `f` with each index term of `text` in order, allocating nothing per
/// term. `f` must not analyze text itself (the thread's analyzer is busy).
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    ANALYZER.with(|a| {
        let mut a = a.borrow_mut();
        let mut ts = a.token_stream(text);
        while ts.advance() {
            f(&ts.token().text);
        }
    })
}

/// The fields of a section document.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub sec: Field,
    pub title: Field,
    pub heading: Field,
    pub desc: Field,
    /// The section's text (without its fenced code when that is apart).
    pub body: Field,
    /// The section's fenced code, for sources that index it apart
    /// ([`IndexOptions::code_apart`]); elsewhere, and in indexes written
    /// before artifact revision 4, code is in the body.
    pub code: Option<Field>,
}

/// BM25 boosts of the searchable fields, against the body's 1. Chosen per
/// tool family (the ranking's `FamilyLevers`): agent-docs pages carry
/// one-line descriptions their authors wrote in their readers' words;
/// Godot's repeat each page's first sentence, LeapView's are rare; Godot's
/// tutorials are full of sample scripts whose identifiers are everyday
/// words (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    pub title: f32,
    pub heading: f32,
    pub desc: f32,
    /// Fenced code (the body holds the prose).
    pub code: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        FieldWeights {
            title: 2.5,
            heading: 2.0,
            desc: 1.0,
            code: 1.0,
        }
    }
}

impl Fields {
    /// The searchable fields, in the order the per-field tables of a
    /// loaded index and a scan keep them (the code last, when the index
    /// has it). An iterator: the lookups that only walk the fields
    /// (vocabulary, document frequency, a scan's presence-only terms)
    /// allocate nothing per query term.
    pub fn searchable(&self) -> impl Iterator<Item = Field> {
        [self.title, self.heading, self.desc, self.body]
            .into_iter()
            .chain(self.code)
    }

    /// Searchable fields with the given weights, in [`Fields::searchable`]
    /// order.
    pub fn weighted_by(&self, w: &FieldWeights) -> Vec<(Field, f32)> {
        self.searchable()
            .zip([w.title, w.heading, w.desc, 1.0, w.code])
            .collect()
    }

    /// Whether a word's occurrences in `field` count in its document
    /// frequency (the IDF of coverage and feedback): the section's text,
    /// prose or code, not the page's title or description it repeats. A
    /// section with the word in both counts twice; that is rare, and
    /// reading the postings to count it once would cost every query.
    pub fn counts_in_doc_freq(&self, field: Field) -> bool {
        field == self.body || Some(field) == self.code
    }

    /// The fields of an index's own schema, found by name: an index an older
    /// docsnap wrote has no code field, and loads without one.
    fn of(schema: &Schema) -> Result<Fields, IndexError> {
        let field = |name: &str| {
            schema.get_field(name).map_err(|e| IndexError {
                what: format!("open: the index has no `{name}` field"),
                source: e,
            })
        };
        Ok(Fields {
            sec: field("sec")?,
            title: field("title")?,
            heading: field("heading")?,
            desc: field("desc")?,
            body: field("body")?,
            code: schema.get_field("code").ok(),
        })
    }
}

/// How a source's sections are indexed (its `sources.yaml` entry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexOptions {
    /// Fenced code in a field of its own, weighed apart from the prose
    /// ([`FieldWeights::code`]); otherwise code is body text like the rest.
    pub code_apart: bool,
}

/// The section schema.
pub fn schema(opts: IndexOptions) -> (Schema, Fields) {
    let mut b = Schema::builder();
    // Frequencies, no positions: ranking is BM25 plus coverage and no query
    // is a phrase, so positions would only make the index bigger to write,
    // merge, hash at load and read (indexes written with them load the same).
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let sec = b.add_u64_field("sec", FAST | STORED);
    let title = b.add_text_field("title", text.clone());
    let heading = b.add_text_field("heading", text.clone());
    let desc = b.add_text_field("desc", text.clone());
    let body = b.add_text_field("body", text.clone());
    let code = opts.code_apart.then(|| b.add_text_field("code", text));
    (
        b.build(),
        Fields {
            sec,
            title,
            heading,
            desc,
            body,
            code,
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
    opts: IndexOptions,
) -> Result<(), IndexError> {
    let (schema, _) = schema(opts);
    let index = Index::create_in_dir(dir, schema).map_err(ierr("create"))?;
    fill(&index, pages, sections, page_of, 0..sections.len())
}

/// Build the index in memory (for tests and for records loaded without one).
pub fn build_in_ram(
    pages: &[Page],
    sections: &[Section],
    page_of: &[usize],
    opts: IndexOptions,
) -> Result<SectionIndex, IndexError> {
    let (schema, _) = schema(opts);
    let index = Index::create_in_ram(schema);
    fill(&index, pages, sections, page_of, 0..sections.len())?;
    SectionIndex::from_index(index)
}

/// Writes one document per section, in the order `order` gives (every
/// build passes the sections' own order; which document ids they get is
/// still up to the indexing threads, and nothing may depend on it).
pub(crate) fn fill(
    index: &Index,
    pages: &[Page],
    sections: &[Section],
    page_of: &[usize],
    order: impl Iterator<Item = usize>,
) -> Result<(), IndexError> {
    let f = Fields::of(&index.schema())?;
    index.tokenizers().register(TOKENIZER, analyzer());
    let mut w = index
        .writer_with_num_threads(2, 100_000_000)
        .map_err(ierr("open writer"))?;
    for i in order {
        let s = &sections[i];
        let p = &pages[page_of[i]];
        let heading = s
            .heading_path
            .iter()
            .skip(1)
            .cloned()
            .collect::<Vec<_>>()
            .join(" \n ");
        let mut d = doc!(
            f.sec => i as u64,
            f.title => p.title.as_str(),
            f.heading => heading,
            f.desc => p.description.as_str(),
        );
        match f.code {
            Some(code_field) => {
                let (prose, code) = crate::markdown::split_code(&s.text);
                d.add_text(f.body, prose);
                d.add_text(code_field, code);
            }
            None => d.add_text(f.body, &s.text),
        }
        w.add_document(d).map_err(ierr("add document"))?;
    }
    w.commit().map_err(ierr("commit"))?;
    // Two indexing threads leave two segments; one segment answers queries
    // faster (every postings and frequency lookup is done once, not per
    // segment), and queries run far more often than builds.
    let segments = index
        .searchable_segment_ids()
        .map_err(ierr("list segments"))?;
    if segments.len() > 1 {
        w.merge(&segments).wait().map_err(ierr("merge"))?;
    }
    w.wait_merging_threads().map_err(ierr("merge"))?;
    Ok(())
}

/// An opened section index, with where each section's document lives mapped
/// once at load, and (on first need) the vocabulary typo tolerance corrects
/// against.
pub struct SectionIndex {
    searcher: Searcher,
    fields: Fields,
    /// Per segment: document id → section number.
    doc_to_sec: Vec<Vec<u32>>,
    /// Section number → (segment ordinal, document id).
    sec_to_doc: Vec<(u32, DocId)>,
    /// Built on the first query word the docs do not have, not at load:
    /// start-up pays nothing for typo tolerance.
    vocab: std::sync::OnceLock<Result<Vocabulary, IndexError>>,
    /// What a query reads of each segment, opened once.
    segments: Vec<scan::SegmentFields>,
    /// BM25 length normalisation per searchable field.
    norms: scan::NormTables,
    /// Documents in all segments (BM25's N).
    total_docs: u64,
}

/// One query word as index terms: `terms[0]` is the whole word, the rest its
/// compound segments and atoms; `atoms` are the smallest parts alone.
#[derive(Debug, Clone, PartialEq)]
pub struct TermGroup {
    pub word: String,
    pub terms: Vec<String>,
    pub atoms: Vec<String>,
    /// Set when the word is absent from the docs and `terms` holds its
    /// nearest spelling instead (typo tolerance): it then counts for less.
    pub corrected: bool,
    /// How much the group counts, in BM25 and in coverage: 1 for a word of
    /// the query, less for a word the ranking added.
    pub weight: f32,
    /// Set for a word the ranking added (pseudo-relevance feedback), not
    /// one of the query's: it ranks, but how much of the query a page
    /// covers is not measured by it.
    pub added: bool,
    /// Whole-word terms of the names the docs give this word now, when it
    /// is an old name they declare (see `aliases.rs`): a section holding
    /// one of them holds the word, for BM25 and coverage alike.
    pub also: Vec<String>,
}

fn group_of(word: &str) -> Option<TermGroup> {
    let mut terms = terms(word);
    if terms.is_empty() {
        return None;
    }
    let forms = word_forms(word);
    // A decimal number (`0.1`, `4.3`, `127.0.0.1`) is one word. Its digits
    // apart are in every default value, size and version the docs print,
    // and a question that quotes numbers would be matched by any of them.
    let decimal = word.contains('.') && word.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if decimal {
        terms.truncate(1);
    }
    let atoms = if forms.atoms.len() > 1 && !decimal {
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
        corrected: false,
        weight: 1.0,
        added: false,
        also: Vec::new(),
    })
}

/// Split a query into term groups, one per word, dropping stop words.
pub fn query_groups(query: &str) -> Vec<TermGroup> {
    let mut out: Vec<TermGroup> = Vec::new();
    for (a, b) in split_words(query) {
        let word = &query[a..b];
        if is_stopword(&word.to_lowercase()) {
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

/// Words that carry no topic: question framing and function words. Dropped
/// from queries before matching so that "how do I …" finds the topic. They
/// live with the analyzer because they are part of how a query is read.
pub fn is_stopword(w: &str) -> bool {
    const STOP: &[&str] = &[
        "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
        "could", "do", "does", "doing", "for", "from", "get", "had", "has", "have", "how", "i",
        "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "should", "so",
        "than", "that", "the", "their", "them", "then", "there", "these", "this", "those", "to",
        "was", "we", "were", "what", "when", "where", "which", "while", "who", "why", "will",
        "with", "would", "you", "your", "there", "without", "whats", "dont", "doesn", "isn", "t",
        "s", "vs", "via", "just", "also", "some", "way", "make", "want", "need", "possible",
        "anyone", "tell", "explain",
    ];
    // A set, not a scan of the list: feedback asks for every word of the
    // pages it reads.
    static SET: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::LazyLock::new(|| STOP.iter().copied().collect());
    SET.contains(w)
}

/// The index's words (body, title and headings) that typo tolerance may
/// correct a query word to: alphabetic, at least [`MIN_TYPO_LEN`] long and
/// seen in at least two sections, so one page's own misspelling is never a
/// target. Grouped by length in characters so a lookup only compares words
/// whose length could be within the allowed distance.
#[derive(Default)]
struct Vocabulary {
    /// (word, document frequency, [`letter_mask`]) by length in characters.
    by_len: Vec<Vec<(Box<str>, u32, u32)>>,
}

/// Which letters a word holds, one bit per letter (other characters share
/// bits by code point). One edit changes at most two bits (a substitution
/// drops one letter and brings another), so two words whose masks differ in
/// more than 2 × the allowed edits cannot be that near: a test of a few
/// instructions that spares most of the edit-distance computations.
fn letter_mask(word: &str) -> u32 {
    word.chars().fold(0u32, |m, c| m | 1 << (c as u32 % 32))
}

/// Unknown words of one query that typo tolerance looks up, in query order:
/// each is a pass over the vocabulary (about a millisecond for Godot's), and
/// no question of the samples has more than a few; a query of pasted noise
/// (80 unknown words) would otherwise pay for all of them in every index.
pub const MAX_CORRECTED: usize = 8;

/// Shortest (stemmed) query word typo tolerance corrects: shorter words have
/// too many one-edit neighbours for a correction to be a good guess.
pub const MIN_TYPO_LEN: usize = 5;
/// Length from which two edits are allowed rather than one.
const TWO_EDITS_LEN: usize = 8;

impl Vocabulary {
    fn build(searcher: &Searcher, fields: &Fields) -> Result<Vocabulary, IndexError> {
        // Document frequency per field, summed over segments; a word's
        // frequency is its largest over the fields.
        let mut per_field: std::collections::HashMap<String, [u32; 3]> =
            std::collections::HashMap::new();
        for seg in searcher.segment_readers() {
            // Code counts as body: a word is known wherever a reader sees it.
            let fields = [fields.body, fields.title, fields.heading]
                .into_iter()
                .enumerate()
                .chain(fields.code.map(|c| (0, c)));
            for (fi, field) in fields {
                let inv = seg.inverted_index(field).map_err(ierr("vocabulary read"))?;
                let mut stream = inv.terms().stream().map_err(|e| IndexError {
                    what: "vocabulary read".into(),
                    source: e.into(),
                })?;
                while stream.advance() {
                    let Ok(word) = std::str::from_utf8(stream.key()) else {
                        continue;
                    };
                    if word.len() < MIN_TYPO_LEN - 1 || !word.chars().all(|c| c.is_alphabetic()) {
                        continue;
                    }
                    let n = stream.value().doc_freq;
                    per_field.entry(word.to_string()).or_insert([0; 3])[fi] += n;
                }
            }
        }
        let df = per_field
            .into_iter()
            .map(|(w, n)| (w, n.into_iter().max().unwrap_or(0)));
        let mut by_len: Vec<Vec<(Box<str>, u32, u32)>> = Vec::new();
        for (w, n) in df {
            if n < 2 {
                continue;
            }
            let len = w.chars().count();
            if by_len.len() <= len {
                by_len.resize_with(len + 1, Vec::new);
            }
            let mask = letter_mask(&w);
            by_len[len].push((w.into_boxed_str(), n, mask));
        }
        for v in &mut by_len {
            v.sort();
        }
        Ok(Vocabulary { by_len })
    }

    /// The nearest known word to `word` within the allowed edits (one, or two
    /// for long words); among equally near words the most frequent.
    fn nearest(&self, word: &str) -> Option<&str> {
        let len = word.chars().count();
        if len < MIN_TYPO_LEN || !word.chars().all(|c| c.is_alphabetic()) {
            return None;
        }
        let max = if len >= TWO_EDITS_LEN { 2 } else { 1 };
        let mask = letter_mask(word);
        let mut best: Option<(usize, u32, &str)> = None;
        for l in len.saturating_sub(max)..=len + max {
            let Some(words) = self.by_len.get(l) else {
                continue;
            };
            for (w, n, m) in words {
                if (mask ^ m).count_ones() as usize > 2 * max {
                    continue;
                }
                let d = strsim::osa_distance(word, w);
                if d == 0 || d > max {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some((bd, bn, _)) => d < bd || (d == bd && *n > bn),
                };
                if better {
                    best = Some((d, *n, w));
                }
            }
        }
        best.map(|(_, _, w)| w)
    }
}

impl SectionIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Path) -> Result<SectionIndex, IndexError> {
        let index = Index::open_in_dir(dir).map_err(ierr("open"))?;
        Self::from_index(index)
    }

    fn from_index(index: Index) -> Result<SectionIndex, IndexError> {
        index.tokenizers().register(TOKENIZER, analyzer());
        let fields = Fields::of(&index.schema())?;
        let reader = index.reader().map_err(ierr("open reader"))?;
        let searcher = reader.searcher();
        let mut doc_to_sec = Vec::new();
        let mut sec_to_doc: Vec<(u32, DocId)> = Vec::new();
        let mut segments = Vec::new();
        let mut base = 0u32;
        let mut tokens = vec![0u64; fields.searchable().count()];
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let col = seg
                .fast_fields()
                .u64("sec")
                .map_err(ierr("read section numbers"))?;
            let mut map = Vec::with_capacity(seg.max_doc() as usize);
            for doc in 0..seg.max_doc() {
                let sec = col.first(doc).unwrap_or(u64::MAX) as usize;
                map.push(sec.min(u32::MAX as usize) as u32);
                if sec != u64::MAX as usize && sec < u32::MAX as usize {
                    if sec_to_doc.len() <= sec {
                        sec_to_doc.resize(sec + 1, (u32::MAX, 0));
                    }
                    sec_to_doc[sec] = (ord as u32, doc);
                }
            }
            doc_to_sec.push(map);
            // What a query reads of the segment, opened once here.
            let mut inverted = Vec::new();
            let mut fieldnorms = Vec::new();
            for (i, f) in fields.searchable().enumerate() {
                let inv = seg.inverted_index(f).map_err(ierr("open"))?;
                tokens[i] += inv.total_num_tokens();
                inverted.push(inv);
                fieldnorms.push(seg.get_fieldnorms_reader(f).map_err(ierr("open"))?);
            }
            segments.push(scan::SegmentFields {
                base,
                inverted,
                fieldnorms,
                alive: seg.alive_bitset().cloned(),
            });
            base += seg.max_doc();
        }
        Ok(SectionIndex {
            searcher,
            fields,
            doc_to_sec,
            sec_to_doc,
            vocab: std::sync::OnceLock::new(),
            norms: scan::norm_tables(base as u64, &tokens),
            segments,
            total_docs: base as u64,
        })
    }

    /// Number of section documents.
    pub fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// In how many sections' text (body, and code where it is apart) `term`
    /// (an analyzed term) occurs.
    pub fn text_doc_freq(&self, term: &str) -> Result<u64, IndexError> {
        let mut df = 0;
        for (fi, f) in self.fields.searchable().enumerate() {
            if self.fields.counts_in_doc_freq(f) {
                let infos = self.term_infos(fi, &Term::from_field_text(f, term))?;
                df += infos
                    .iter()
                    .flatten()
                    .map(|t| t.doc_freq as u64)
                    .sum::<u64>();
            }
        }
        Ok(df)
    }

    /// Whether `term` occurs anywhere a query can match (every searchable field).
    fn known(&self, term: &str) -> Result<bool, IndexError> {
        for (fi, f) in self.fields.searchable().enumerate() {
            let infos = self.term_infos(fi, &Term::from_field_text(f, term))?;
            if infos.iter().any(Option::is_some) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The groups as this index can match them: a single-word group whose
    /// word occurs nowhere in the docs is replaced by its nearest spelling
    /// that does (typo tolerance), marked `corrected`.
    pub fn correct(&self, groups: &[TermGroup]) -> Result<Vec<TermGroup>, IndexError> {
        let mut tried = 0;
        groups
            .iter()
            .map(|g| {
                if g.added
                    || !g.also.is_empty()
                    || g.terms.len() != 1
                    || !g.atoms.is_empty()
                    || tried >= MAX_CORRECTED
                    || self.known(&g.terms[0])?
                {
                    return Ok(g.clone());
                }
                tried += 1;
                let vocab = self
                    .vocab
                    .get_or_init(|| Vocabulary::build(&self.searcher, &self.fields))
                    .as_ref()
                    .map_err(Clone::clone)?;
                Ok(match vocab.nearest(&g.terms[0]) {
                    Some(w) => TermGroup {
                        terms: vec![w.to_string()],
                        atoms: Vec::new(),
                        corrected: true,
                        ..g.clone()
                    },
                    None => g.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_changes_at_most_two_letter_bits() {
        // Substitution, insertion, deletion, transposition, repeated letters,
        // and a letter outside a–z: the filter never drops a true neighbour.
        let pairs = [
            ("parallax", "paralax"),
            ("background", "backround"),
            ("shader", "shadow"),
            ("signal", "sigsnal"),
            ("viewport", "veiwport"),
            ("größe", "grösse"),
        ];
        for (a, b) in pairs {
            let d = strsim::osa_distance(a, b);
            let bits = (letter_mask(a) ^ letter_mask(b)).count_ones() as usize;
            assert!(bits <= 2 * d, "{a} / {b}: {bits} bits for {d} edits");
        }
        // Far words are told apart without computing a distance.
        assert!((letter_mask("parallax") ^ letter_mask("timer")).count_ones() > 2);
    }

    #[test]
    fn the_memo_stems_as_tantivys_stemmer_does() {
        use tantivy::tokenizer::{Language, Stemmer};
        let text = "Running runners ran; the nodes' Node.add_child() adds children, \
                    running again and again: generously, generalization, signals signalled";
        let mut plain = TextAnalyzer::builder(CodeTokenizer::default())
            .filter(RemoveLongFilter::limit(64))
            .filter(LowerCaser)
            .filter(Stemmer::new(Language::English))
            .build();
        let mut want = Vec::new();
        let mut ts = plain.token_stream(text);
        while ts.advance() {
            want.push(ts.token().text.clone());
        }
        // Twice through one analyzer: the second pass reads from the memo.
        // A memo far smaller than the text's words starts afresh many
        // times: the stems stay the same.
        for mut memo in [analyzer(), analyzer_remembering(3)] {
            for _ in 0..2 {
                let mut got = Vec::new();
                let mut ts = memo.token_stream(text);
                while ts.advance() {
                    got.push(ts.token().text.clone());
                }
                assert_eq!(got, want);
            }
        }
        assert!(want.contains(&"run".to_string()), "{want:?}");
    }

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

    /// A decimal number is searched whole; a dotted name still in parts.
    #[test]
    fn decimal_numbers_are_one_word() {
        let g = query_groups("1.5 + 2.25 in 127.0.0.1 for Node2D.position");
        let forms: Vec<(Vec<&str>, usize)> = g
            .iter()
            .map(|g| (g.terms.iter().map(String::as_str).collect(), g.atoms.len()))
            .collect();
        assert_eq!(forms[0], (vec!["1.5"], 0));
        assert_eq!(forms[1], (vec!["2.25"], 0));
        assert_eq!(forms[2], (vec!["127.0.0.1"], 0));
        let (terms, atoms) = &forms[3];
        assert!(terms.contains(&"node2d") && *atoms == 2, "{forms:?}");
        // The index holds the number whole, so the whole form finds it.
        assert!(super::terms("default 1.5 seconds").contains(&"1.5".to_string()));
    }
}
