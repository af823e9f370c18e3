//! `docs_search` (seed 003): LeapView's version-matched documentation search,
//! with a path-prefix filter and an opaque continuation cursor signed with HMAC-SHA256 under a
//! per-process (or operator-shared) secret, so it cannot be forged.

use serde::{Deserialize, Serialize};

use super::{Library, LoadedSource, ToolError};
use crate::util::sha256_hex;

/// Default and largest page size.
pub const DEFAULT_LIMIT: usize = 8;
pub const MAX_LIMIT: usize = 25;
/// Characters of an excerpt.
const EXCERPT_CHARS: usize = 320;
/// Pages considered for one query (cursor positions beyond are empty).
const MAX_RESULTS: usize = 200;

/// `docs_search` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocsSearchArgs {
    pub query: String,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One match.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DocsMatch {
    pub id: String,
    pub path: String,
    pub title: String,
    pub summary: String,
    pub excerpt: String,
    pub url: String,
}

/// `docs_search` output.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocsSearchResult {
    pub count: u64,
    pub has_more: bool,
    pub matches: Vec<DocsMatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub query: String,
}

#[derive(Serialize, Deserialize)]
struct CursorState {
    /// Hash of (query, path) the cursor continues.
    q: String,
    /// Offset of the next match.
    o: usize,
    /// Snapshot the offsets refer to.
    s: String,
}

use crate::util::collapse_whitespace;
pub use crate::util::version_key;

impl Library {
    /// The LeapView artifact this server answers from: the configured
    /// version, else the newest loaded.
    pub fn leapview_source(&self) -> Option<usize> {
        self.newest_served(|m| m.tool_set() == crate::model::ToolSet::Leapview)
    }

    /// Answer `docs_search`.
    pub fn docs_search(&self, args: &DocsSearchArgs) -> Result<DocsSearchResult, ToolError> {
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::invalid("query: must not be empty"));
        }
        let limit = match args.limit {
            None => DEFAULT_LIMIT,
            Some(n) if (1..=MAX_LIMIT as u32).contains(&n) => n as usize,
            Some(n) => {
                return Err(ToolError::invalid(format!(
                    "limit: must be between 1 and {MAX_LIMIT}, got {n}"
                )))
            }
        };
        let Some(si) = self.leapview_source() else {
            return Err(ToolError::invalid(match &self.leapview_version {
                Some(v) => format!("no LeapView {v} documentation is loaded"),
                None => "no LeapView documentation is loaded".into(),
            }));
        };
        let src = &self.sources[si];
        let prefix = args
            .path
            .as_deref()
            .map(|p| p.trim().trim_matches('/').to_string())
            .filter(|p| !p.is_empty());
        let key = cursor_key(query, prefix.as_deref());
        let offset = match &args.cursor {
            None => 0,
            Some(c) => decode_cursor(c, &key, &src.manifest.content_sha256)?,
        };
        let keep = |s: &LoadedSource, sec: usize| match &prefix {
            None => true,
            Some(p) => path_has_prefix(&s.pages[s.section_page[sec]].path, p),
        };
        let keep_ref: super::rank::SectionFilter<'_> = &keep;
        let hits = self.rank_pages(
            &[si],
            query,
            prefix.as_ref().map(|_| keep_ref),
            MAX_RESULTS,
            self.rank.leapview,
        )?;
        let total = hits.len().min(MAX_RESULTS);
        let page: Vec<DocsMatch> = hits
            .iter()
            .take(total)
            .enumerate()
            .skip(offset)
            .take(limit)
            .map(|(place, h)| {
                let pg = &src.pages[h.page];
                let sec = &src.sections[h.best().section];
                super::rank::explain("docs_search", place + 1, sec, h);
                DocsMatch {
                    id: format!(
                        "{}/{}/{}",
                        src.manifest.product, src.manifest.version, pg.path
                    ),
                    path: pg.path.clone(),
                    title: pg.title.clone(),
                    summary: pg.description.clone(),
                    excerpt: excerpt(&sec.text, query),
                    url: sec.url_with_anchor(),
                }
            })
            .collect();
        let next = offset + page.len();
        let has_more = next < total;
        Ok(DocsSearchResult {
            count: page.len() as u64,
            has_more,
            next_cursor: has_more.then(|| encode_cursor(&key, next, &src.manifest.content_sha256)),
            matches: page,
            path: prefix,
            query: query.to_string(),
        })
    }
}

/// `cli` matches `cli` and `cli/publish`, not `client`.
fn path_has_prefix(path: &str, prefix: &str) -> bool {
    path == prefix || path.starts_with(&format!("{prefix}/"))
}

fn cursor_key(query: &str, path: Option<&str>) -> String {
    sha256_hex(format!("{query}\u{0}{}", path.unwrap_or("")).as_bytes())[..16].to_string()
}

/// Environment variable holding the key cursors are signed with. Replicas
/// behind one load balancer set the same value so a cursor one issued is
/// honoured by the others; without it each process draws a random key.
pub const CURSOR_SECRET_ENV: &str = "DOCSNAP_CURSOR_SECRET";

/// This process's cursor key: from [`CURSOR_SECRET_ENV`] when set, random
/// otherwise. Secret, so nobody else can make a cursor this server accepts.
fn cursor_secret() -> &'static [u8; 32] {
    static SECRET: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| match std::env::var(CURSOR_SECRET_ENV) {
        Ok(v) if !v.is_empty() => {
            use sha2::Digest;
            sha2::Sha256::digest(v.as_bytes()).into()
        }
        _ => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key)
                .expect("the operating system's random number generator is unavailable");
            key
        }
    })
}

/// Bytes of the HMAC a cursor carries (128 bits).
const TAG_LEN: usize = 16;

/// HMAC-SHA256 over the cursor payload bound to the snapshot it pages
/// through, under the process's secret key.
fn mac(payload: &str, snapshot: &str) -> hmac::Hmac<sha2::Sha256> {
    use hmac::{KeyInit, Mac};
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(cursor_secret())
        .expect("HMAC takes a key of any length");
    m.update(snapshot.as_bytes());
    m.update(b"\0");
    m.update(payload.as_bytes());
    m
}

fn tag(payload: &str, snapshot: &str) -> String {
    use hmac::Mac;
    hex::encode(&mac(payload, snapshot).finalize().into_bytes()[..TAG_LEN])
}

fn encode_cursor(key: &str, offset: usize, snapshot: &str) -> String {
    let st = CursorState {
        q: key.to_string(),
        o: offset,
        s: snapshot[..12.min(snapshot.len())].to_string(),
    };
    let payload = hex::encode(serde_json::to_vec(&st).unwrap_or_default());
    format!("{payload}.{}", tag(&payload, snapshot))
}

fn decode_cursor(c: &str, key: &str, snapshot: &str) -> Result<usize, ToolError> {
    let bad = || {
        ToolError::invalid(
            "cursor: not a cursor this server issued (altered or truncated); repeat the search without cursor",
        )
    };
    let (payload, given) = c.split_once('.').ok_or_else(bad)?;
    // Constant-time comparison: the tag must not leak through timing.
    let ok = hex::decode(given).is_ok_and(|t| {
        use hmac::Mac;
        t.len() == TAG_LEN && mac(payload, snapshot).verify_truncated_left(&t).is_ok()
    });
    if !ok {
        // Either altered, or issued for another snapshot.
        return Err(bad());
    }
    let bytes = hex::decode(payload).map_err(|_| bad())?;
    let st: CursorState = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if st.q != key {
        return Err(ToolError::invalid(
            "cursor: it continues a different query or path; pass the same query and path as the call that returned it, or omit cursor",
        ));
    }
    Ok(st.o)
}

/// A window of the section text around the first query word found.
fn excerpt(text: &str, query: &str) -> String {
    let flat = collapse_whitespace(super::strip_heading_line(text));
    let lower = flat.to_lowercase();
    let start = query
        .split_whitespace()
        .filter(|w| w.len() > 3)
        .filter_map(|w| lower.find(&w.to_lowercase()))
        .min()
        .unwrap_or(0);
    // Start a little before the match, at a character boundary.
    let mut s = start.saturating_sub(80);
    while s > 0 && !flat.is_char_boundary(s) {
        s -= 1;
    }
    let tail = &flat[s..];
    let (cut, truncated) = crate::util::cut(tail, EXCERPT_CHARS);
    let mut out = String::new();
    if s > 0 {
        out.push('…');
    }
    out.push_str(&cut);
    if truncated {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip_and_tamper() {
        let k = cursor_key("publish", Some("cli"));
        let c = encode_cursor(&k, 8, "abcdef0123456789");
        assert_eq!(decode_cursor(&c, &k, "abcdef0123456789").unwrap(), 8);
        let other = cursor_key("publish", None);
        assert!(decode_cursor(&c, &other, "abcdef0123456789")
            .unwrap_err()
            .to_string()
            .contains("different query"));
        let mut t = c.clone();
        t.replace_range(0..1, if &c[0..1] == "7" { "6" } else { "7" });
        assert!(decode_cursor(&t, &k, "abcdef0123456789")
            .unwrap_err()
            .to_string()
            .contains("altered"));
        assert!(decode_cursor("garbage", &k, "abcdef0123456789").is_err());
        // Forged the way the old scheme allowed (a hash keyed by the public
        // content hash): refused, the key is secret now.
        let payload = c.split_once('.').unwrap().0.to_string();
        let forged = format!(
            "{payload}.{}",
            &crate::util::sha256_hex(
                format!("docsnap-cursor\u{0}abcdef0123456789\u{0}{payload}").as_bytes()
            )[..32]
        );
        assert!(decode_cursor(&forged, &k, "abcdef0123456789").is_err());
        assert!(decode_cursor(&c, &k, "another-snapshot").is_err());
    }

    #[test]
    fn path_prefix_is_by_segment() {
        assert!(path_has_prefix("cli/publish", "cli"));
        assert!(path_has_prefix("cli", "cli"));
        assert!(!path_has_prefix("client", "cli"));
        assert!(path_has_prefix("guides/build/x", "guides/build"));
    }

    #[test]
    fn versions_order_numerically() {
        assert!(version_key("3.10") > version_key("3.9"));
        assert!(version_key("3.2") > version_key("3.1"));
    }
}
