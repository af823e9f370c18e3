//! Small helpers shared by several stages.

use sha2::{Digest, Sha256};

/// Hex sha256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hex sha256 of everything `r` yields, read through one small buffer: a
/// large file is hashed without holding it in memory (allocating and
/// zeroing tens of megabytes cost more at start-up than the hashing).
pub fn sha256_reader(mut r: impl std::io::Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(hex::encode(h.finalize())),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A key under which every spelling of a page URL is the same: no fragment, no
/// query, no `.md`/`.html`/`index.html` suffix, no trailing slash, percent-decoded
/// path, lower-case host, `http` = `https`.
pub fn canonical_page_key(url: &str) -> String {
    let url = url.split('#').next().unwrap_or("");
    let url = url.split('?').next().unwrap_or("");
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut path = percent_decode(path);
    for suffix in ["index.html", ".html", ".md"] {
        if let Some(p) = path.strip_suffix(suffix) {
            path = p.to_string();
            break;
        }
    }
    while path.ends_with('/') {
        path.pop();
    }
    format!("{}{}", host.to_ascii_lowercase(), path)
}

/// The canonical spelling of a public page URL: no fragment, default port
/// dropped, host lower-cased, `index.html` dropped (keeping the directory's
/// `/`), query dropped unless `keep_query`, and percent-escapes of characters
/// that need none decoded (`class_%40globalscope.html` → `class_@globalscope.html`).
pub fn canonical_url(url: &str, keep_query: bool) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return url.to_string();
    };
    u.set_fragment(None);
    if !keep_query {
        u.set_query(None);
    }
    let mut path = decode_safe(u.path());
    if let Some(p) = path.strip_suffix("index.html") {
        if p.ends_with('/') {
            path = p.to_string();
        }
    }
    u.set_path(&path);
    u.to_string()
}

/// Decode escapes of characters allowed unescaped in a path segment.
fn decode_safe(path: &str) -> String {
    let b = path.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                let c = v as char;
                if c.is_ascii_alphanumeric() || "-._~@!$&'()*+,;=:".contains(c) {
                    out.push(c);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// Decode `%XX` escapes; invalid escapes and non-UTF-8 results are kept as they were.
pub fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|d| d.into_owned())
        .unwrap_or_else(|_| s.to_string())
}

/// Order version labels numerically where they are numbers (`3.10` > `3.9`,
/// `2025-11-25` > `2025-06-18`).
pub fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '-'])
        .map(|p| (p.parse::<u64>().unwrap_or(0), p.to_string()))
        .collect()
}

/// The words of `s`: runs of letters and digits, as written.
pub fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The [`words`] of `s`, lower-cased: how a query names a product or an
/// area.
pub fn lower_words(s: &str) -> Vec<String> {
    words(s).map(str::to_lowercase).collect()
}

/// The first `max` characters of `s` (never inside a UTF-8 character),
/// preferring to end at a word boundary; and whether anything was cut.
pub fn cut(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        return (s.to_string(), false);
    }
    let end = s.char_indices().nth(max).map(|(i, _)| i).unwrap_or(s.len());
    let mut head = &s[..end];
    if let Some(sp) = head.rfind(char::is_whitespace) {
        if sp > end * 2 / 3 {
            head = &head[..sp];
        }
    }
    (head.trim_end().to_string(), true)
}

/// Text on one line: every run of whitespace becomes one space, ends trimmed.
pub fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "cf", "approx", "Dr", "Mr", "Mrs", "No", "Fig",
];

/// First sentence of `text`, cut to at most `max` characters (on a word boundary, with `…`).
pub fn first_sentence(text: &str, max: usize) -> String {
    let text = collapse_whitespace(text);
    let mut end = text.len();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let mut after = i + c.len_utf8();
        while let Some(q) = text[after..].chars().next() {
            if !matches!(q, '”' | '’' | '"' | '\'' | ')' | ']' | '»') {
                break;
            }
            after += q.len_utf8();
        }
        if after < bytes.len() && bytes[after] != b' ' {
            continue;
        }
        if c == '.' {
            let word_start = text[..i].rfind(' ').map_or(0, |p| p + 1);
            let word = &text[word_start..i];
            if ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a)) {
                continue;
            }
            if word.len() == 1 && word.chars().all(|c| c.is_ascii_alphabetic()) {
                continue;
            }
            // "3.5" style numbers never reach here (no space after); "v. 2" is rare.
        }
        end = after;
        break;
    }
    cut_marked(&text[..end], max)
}

/// [`cut`] to at most `max` characters, ending with `…` when cut (the mark
/// counts), trailing punctuation of the cut-off clause dropped.
pub fn cut_marked(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let (head, _) = cut(s, max.saturating_sub(1));
    let mut out = head.trim_end_matches([' ', ',', ';', ':']).to_string();
    out.push('…');
    out
}

/// Make rustls's ring provider the process's TLS crypto (reqwest is built
/// without a provider of its own, so that aws-lc's C build stays out of
/// the tree). Every HTTP client calls this first; later calls find it done.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_chars_and_words() {
        let (c, t) = cut("héllo wörld and more", 12);
        assert!(t);
        assert_eq!(c, "héllo wörld");
        let (c, t) = cut("short", 300);
        assert!(!t);
        assert_eq!(c, "short");
    }

    #[test]
    fn canonical_keys_agree_across_spellings() {
        let k = canonical_page_key(
            "https://docs.godotengine.org/en/stable/classes/class_%40globalscope.html#x",
        );
        assert_eq!(
            k,
            canonical_page_key("http://Docs.GodotEngine.org/en/stable/classes/class_@globalscope")
        );
        assert_eq!(
            canonical_page_key("https://docs.godotengine.org/en/stable/"),
            canonical_page_key("https://docs.godotengine.org/en/stable/index.html")
        );
        assert_eq!(
            canonical_page_key("https://code.claude.com/docs/en/hooks.md"),
            "code.claude.com/docs/en/hooks"
        );
        assert_ne!(
            canonical_page_key("https://a.b/x"),
            canonical_page_key("https://a.b/y")
        );
    }

    #[test]
    fn canonical_urls() {
        assert_eq!(
            canonical_url(
                "https://Docs.GodotEngine.org:443/en/stable/classes/class_%40globalscope.html#x",
                false
            ),
            "https://docs.godotengine.org/en/stable/classes/class_@globalscope.html"
        );
        assert_eq!(
            canonical_url(
                "https://docs.godotengine.org/en/stable/index.html?a=1",
                false
            ),
            "https://docs.godotengine.org/en/stable/"
        );
        assert_eq!(
            canonical_url("https://a.b/x?q=1", true),
            "https://a.b/x?q=1"
        );
        assert_eq!(
            canonical_url("https://a.b/a%2Fb", false),
            "https://a.b/a%2Fb"
        );
    }

    #[test]
    fn percent_decode_keeps_bad_escapes() {
        assert_eq!(percent_decode("a%40b"), "a@b");
        assert_eq!(percent_decode("a%4"), "a%4");
        assert_eq!(percent_decode("a%zzb"), "a%zzb");
        assert_eq!(percent_decode("%"), "%");
    }
}
