//! Stage 1: find a version's pages and fetch them.
//!
//! Output: a [`CrawlOutput`] — one [`FetchedPage`] per page (public URL, body,
//! whether it is a Markdown alternate or HTML, hints from the index) and one
//! [`UrlOutcome`] per URL tried, which the artifact keeps as `crawl.jsonl`.

pub mod discover;
pub mod fetch;
pub mod journal;
pub mod links;
pub mod robots;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::stream::StreamExt;
use regex::Regex;
use url::Url;

use crate::config::{Discovery, Source, VersionSpec};
use crate::model::UrlOutcome;
use crate::normalize::BodyKind;
use crate::util::canonical_url;
use discover::{Candidate, SitemapKind};
use fetch::{Fetcher, Validators};

/// One fetched page, ready for normalization.
#[derive(Debug, Clone)]
pub struct FetchedPage {
    /// Canonical public URL of the page (the HTML page, not its `.md` alternate).
    pub url: String,
    /// Path relative to the version root.
    pub path: String,
    pub kind: BodyKind,
    pub body: String,
    /// Title and description from the discovery index, used when the page has none.
    pub title_hint: String,
    pub description_hint: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// How deep the page nests its elements, when the crawl's link scan
    /// measured it: normalizing then checks this instead of tokenizing the
    /// page a second time.
    pub nesting: Option<usize>,
}

/// Called with every page as the crawl accepts it, so later stages can start
/// on it while the crawl waits on the network (the crawl's result still lists
/// every page; a sink is only a head start).
pub type PageSink = Arc<dyn Fn(&FetchedPage) + Send + Sync>;

/// Everything the crawl of one version produced.
#[derive(Debug, Default)]
pub struct CrawlOutput {
    pub pages: Vec<FetchedPage>,
    pub outcomes: Vec<UrlOutcome>,
    /// The URLs that failed (`url: why`), one per `stats.failed`: what makes
    /// a build fail. Kept where the failure is decided, so no later reading
    /// of the outcomes can miss one (a page never requested because
    /// robots.txt was unavailable has no attempts, yet failed).
    pub failed: Vec<String>,
    pub warnings: Vec<String>,
    pub stats: CrawlStats,
}

/// Counts for the end-of-build summary.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct CrawlStats {
    pub fetched: u64,
    pub not_modified: u64,
    pub failed: u64,
    pub broken_links: u64,
    pub skipped_scope: u64,
    pub skipped_robots: u64,
    /// URLs taken from the journal of an interrupted build, not fetched again.
    pub resumed: u64,
    pub duplicates: u64,
}

/// Why a crawl could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    #[error("source `{source_id}` version `{version}`: discovery failed: {source}")]
    Discovery {
        source_id: String,
        version: String,
        #[source]
        source: DiscoveryError,
    },
    /// A scope pattern does not compile. Never ignored: a dropped `exclude`
    /// would widen the crawl, a dropped `include` would narrow it.
    #[error("source `{source_id}` version `{version}`: scope pattern `{pattern}` is not a valid regex: {message}")]
    Scope {
        source_id: String,
        version: String,
        pattern: String,
        message: String,
    },
}

/// Why a discovery listing (llms.txt, sitemap, manifest) could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(transparent)]
    Fetch(#[from] fetch::FetchError),
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: not a usable URL: {source}")]
    Url {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("{url}: {source}")]
    Listing {
        url: String,
        #[source]
        source: discover::ListingError,
    },
}

/// URL scope of one version, compiled.
pub struct ScopeCheck {
    prefixes: Vec<String>,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

impl ScopeCheck {
    /// Compile a version's scope; the first pattern that does not compile
    /// is returned with the regex engine's message.
    pub fn new(v: &VersionSpec) -> Result<ScopeCheck, (String, regex::Error)> {
        let compile = |rs: &[String]| -> Result<Vec<Regex>, (String, regex::Error)> {
            rs.iter()
                .map(|r| Regex::new(r).map_err(|e| (r.clone(), e)))
                .collect()
        };
        Ok(ScopeCheck {
            prefixes: v.scope.prefixes.clone(),
            include: compile(&v.scope.include)?,
            exclude: compile(&v.scope.exclude)?,
        })
    }

    /// Whether a public URL may be requested.
    pub fn allows(&self, url: &str) -> bool {
        self.prefixes.iter().any(|p| url.starts_with(p.as_str()))
            && (self.include.is_empty() || self.include.iter().any(|r| r.is_match(url)))
            && !self.exclude.iter().any(|r| r.is_match(url))
    }
}

/// Progress callback: called once per finished URL with (done, total).
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// Crawl one version of a source.
pub async fn crawl_version(
    source: &Source,
    version: &VersionSpec,
    fetcher: Arc<Fetcher>,
    previous: &BTreeMap<String, Validators>,
    journal: Option<Arc<journal::Journal>>,
    progress: Progress,
    sink: Option<PageSink>,
) -> Result<CrawlOutput, CrawlError> {
    let scope = Arc::new(
        ScopeCheck::new(version).map_err(|(pattern, e)| CrawlError::Scope {
            source_id: source.id.clone(),
            version: version.label.clone(),
            pattern,
            message: e.to_string(),
        })?,
    );
    let mut out = CrawlOutput::default();
    let disc_err = |e: DiscoveryError| CrawlError::Discovery {
        source_id: source.id.clone(),
        version: version.label.clone(),
        source: e,
    };
    let bad_url = |url: &str, e: url::ParseError| DiscoveryError::Url {
        url: url.to_string(),
        source: e,
    };
    let listing = |url: &str, e: discover::ListingError| DiscoveryError::Listing {
        url: url.to_string(),
        source: e,
    };

    // 1. Discovery: every method contributes candidates; the first listing of a
    //    page wins (its title and description hints are kept).
    let mut candidates: Vec<Candidate> = Vec::new();
    for d in &version.discovery {
        match d {
            Discovery::LlmsTxt { url } => {
                let text = fetch_text(&fetcher, url, &scope).await.map_err(disc_err)?;
                let base = Url::parse(url).map_err(|e| disc_err(bad_url(url, e)))?;
                let p = discover::parse_llms_txt(&text, &base);
                out.warnings.extend(p.warnings);
                candidates.extend(p.candidates);
            }
            Discovery::Manifest { url } => {
                let text = fetch_text(&fetcher, url, &scope).await.map_err(disc_err)?;
                let base = Url::parse(url).map_err(|e| disc_err(bad_url(url, e)))?;
                let p = discover::parse_manifest(&text, &base)
                    .map_err(|e| disc_err(listing(url, e)))?;
                out.warnings.extend(p.warnings);
                candidates.extend(p.candidates);
            }
            Discovery::Sitemap { url } => {
                let mut queue = vec![url.clone()];
                let mut seen = HashSet::new();
                while let Some(u) = queue.pop() {
                    if !seen.insert(u.clone()) || seen.len() > 1000 {
                        continue;
                    }
                    let text = fetch_text(&fetcher, &u, &scope).await.map_err(disc_err)?;
                    match discover::parse_sitemap(&text).map_err(|e| disc_err(listing(&u, e)))? {
                        SitemapKind::Index(more) => queue.extend(more),
                        SitemapKind::Pages(urls) => {
                            candidates.extend(urls.into_iter().map(|url| Candidate {
                                url,
                                ..Default::default()
                            }))
                        }
                    }
                }
            }
            // Followed during the fetch below, as pages arrive.
            Discovery::Links { .. } => {}
        }
    }

    // 2. Canonicalize, scope-check and deduplicate.
    let mut seen = HashSet::new();
    let mut body_hashes: HashSet<String> = HashSet::new();
    let mut jobs = Vec::new();
    for c in candidates {
        let (fetch_url, public) = match alternate_pair(&c.url, source.prefer_markdown) {
            Some(p) => p,
            None => {
                out.warnings.push(format!("unusable URL `{}`", c.url));
                continue;
            }
        };
        let public = canonical_url(&public, version.scope.keep_query);
        if !scope.allows(&public) || !scope.allows(&fetch_url) {
            out.stats.skipped_scope += 1;
            out.outcomes.push(UrlOutcome::not_fetched(
                public,
                fetch_url,
                "outside the source's scope".into(),
            ));
            continue;
        }
        if !seen.insert(crate::util::canonical_page_key(&public)) {
            out.stats.duplicates += 1;
            continue;
        }
        jobs.push((fetch_url, public, c));
    }

    // 3. Fetch concurrently (the fetcher enforces the per-host limits). Pages
    //    found by following links join the queue as HTML pages arrive.
    let follow = version.discovery.iter().find_map(|d| match d {
        Discovery::Links { start, max_depth } => Some((start.clone(), *max_depth)),
        _ => None,
    });
    if let Some((start, _)) = &follow {
        let public = canonical_url(start, version.scope.keep_query);
        if seen.insert(crate::util::canonical_page_key(&public)) {
            jobs.push((public.clone(), public, Candidate::default()));
        }
    }
    let robots = robots::RobotsCache::new(fetcher.clone(), user_agent_token());
    let total = Arc::new(std::sync::atomic::AtomicU64::new(jobs.len() as u64));
    let mut done = 0u64;
    let root = version.root.clone();
    let mut in_flight = futures::stream::FuturesUnordered::new();
    let mut queue: std::collections::VecDeque<(String, String, Candidate, u32)> =
        jobs.into_iter().map(|(a, b, c)| (a, b, c, 0)).collect();
    let max_in_flight = 64usize;
    // HTML pages waiting for the Markdown alternate they announce; kept as
    // the fallback should the alternate fail.
    let mut pending_html: std::collections::HashMap<String, FetchedPage> =
        std::collections::HashMap::new();
    let mut tried_alternate: HashSet<String> = HashSet::new();
    loop {
        while in_flight.len() < max_in_flight {
            let Some((fetch_url, public, c, depth)) = queue.pop_front() else {
                break;
            };
            let fetcher = fetcher.clone();
            let scope = scope.clone();
            let held = previous.get(&public);
            let replay_304 = held.is_some();
            let validators = held.cloned().unwrap_or_default();
            let prefer_md = source.prefer_markdown;
            let root = root.clone();
            let robots = robots.clone();
            let journal = journal.clone();
            in_flight.push(async move {
                let path = c
                    .path
                    .clone()
                    .unwrap_or_else(|| relative_path(&root, &public));
                // Finished by an earlier, interrupted run: not fetched again.
                // A 304 stands only against validators this build still
                // holds (it has no body; the previous records supply it).
                let done = journal
                    .as_ref()
                    .and_then(|j| j.get(&public))
                    .filter(|(e, _)| e.status != 304 || replay_304);
                if let Some((e, body)) = done {
                    let f = fetch::Fetched {
                        status: e.status,
                        final_url: e.final_url,
                        body,
                        content_type: e.content_type,
                        etag: e.etag,
                        last_modified: e.last_modified,
                        attempts: 0,
                    };
                    return (e.fetched, public, c, path, depth, Ok(Ok(f)));
                }
                if let Err(why) = robots.allowed(&fetch_url).await {
                    return (fetch_url, public, c, path, depth, Err(why));
                }
                let allow = |u: &str| scope.allows(u);
                let mut r = fetcher.get(&fetch_url, &validators, &allow).await;
                let mut fetched_url = fetch_url.clone();
                // A missing Markdown alternate falls back to the HTML page.
                if prefer_md && fetch_url != public && matches!(&r, Ok(f) if f.status == 404) {
                    r = fetcher.get(&public, &validators, &allow).await;
                    fetched_url = public.clone();
                }
                (fetched_url, public, c, path, depth, Ok(r))
            });
        }
        let Some((fetched_url, public, c, path, depth, r)) = in_flight.next().await else {
            break;
        };
        done += 1;
        progress(done, total.load(std::sync::atomic::Ordering::Relaxed));
        let fallback = pending_html.remove(&public);
        let got_page = matches!(&r, Ok(Ok(f)) if f.status == 200);
        if let (Some(page), false) = (&fallback, got_page) {
            // The announced alternate failed: the HTML page stands.
            if let Some(f) = &sink {
                f(page);
            }
            out.pages.push(page.clone());
        }
        let r = match r {
            Ok(r) => r,
            Err(why) => {
                let failed = matches!(why, robots::Denied::Unavailable(_));
                let why = why.to_string();
                if failed {
                    out.stats.failed += 1;
                    out.failed.push(format!("{public}: {why}"));
                } else {
                    out.stats.skipped_robots += 1;
                }
                out.outcomes
                    .push(UrlOutcome::not_fetched(public, fetched_url, why));
                continue;
            }
        };
        if let (Some(j), Ok(f)) = (&journal, &r) {
            if f.attempts > 0 && matches!(f.status, 200 | 304 | 404 | 410) {
                let e = journal::Entry {
                    url: public.clone(),
                    fetched: fetched_url.clone(),
                    final_url: f.final_url.clone(),
                    status: f.status,
                    attempts: f.attempts,
                    content_type: f.content_type.clone(),
                    etag: f.etag.clone(),
                    last_modified: f.last_modified.clone(),
                    body_sha256: String::new(),
                    body_offset: 0,
                    body_len: 0,
                };
                if let Err(err) = j.record(e, &f.body) {
                    out.warnings
                        .push(format!("crawl journal: cannot record {public}: {err}"));
                }
            }
        }
        if matches!(&r, Ok(f) if f.attempts == 0) {
            out.stats.resumed += 1;
        }
        match r {
            Ok(f) => {
                let mut o = UrlOutcome {
                    url: public.clone(),
                    fetched: fetched_url.clone(),
                    status: f.status,
                    attempts: f.attempts,
                    bytes: f.body.len() as u64,
                    etag: f.etag.clone(),
                    error: None,
                };
                match f.status {
                    200 if !is_page_type(&f.content_type, &fetched_url) => {
                        out.stats.skipped_scope += 1;
                        o.error = Some(format!(
                            "not a page (content type `{}`); skipped",
                            f.content_type
                        ));
                    }
                    200 => {
                        out.stats.fetched += 1;
                        let kind = if is_markdown(&f.content_type, &fetched_url) {
                            BodyKind::Markdown
                        } else {
                            BodyKind::Html
                        };
                        let body = String::from_utf8_lossy(&f.body).into_owned();
                        // Identical bodies under two URLs are one page.
                        let body_hash = crate::util::sha256_hex(body.as_bytes());
                        if !body_hashes.insert(body_hash) {
                            out.stats.duplicates += 1;
                            o.error = Some("same body as another page; kept once".into());
                            out.outcomes.push(o);
                            continue;
                        }
                        // One tokenizer pass reads what the crawl needs of an
                        // HTML page (links, Markdown alternate) and its nesting
                        // depth for normalize. A source that needs neither
                        // leaves the depth to normalize's worker threads,
                        // off this loop.
                        let scan = (kind == BodyKind::Html
                            && (follow.is_some() || source.prefer_markdown))
                            .then(|| links::scan_page(&body, &f.final_url));
                        if let (Some((_, max_depth)), Some(scan)) = (&follow, &scan) {
                            if depth < *max_depth {
                                for link in &scan.links {
                                    let link = canonical_url(link, version.scope.keep_query);
                                    if !scope.allows(&link) {
                                        continue;
                                    }
                                    if seen.insert(crate::util::canonical_page_key(&link)) {
                                        total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                        queue.push_back((
                                            link.clone(),
                                            link,
                                            Candidate::default(),
                                            depth + 1,
                                        ));
                                    }
                                }
                            }
                        }
                        let page = FetchedPage {
                            url: public.clone(),
                            path,
                            kind,
                            body,
                            title_hint: c.title.clone(),
                            description_hint: c.description.clone(),
                            etag: f.etag,
                            last_modified: f.last_modified,
                            nesting: scan.as_ref().map(|s| s.depth),
                        };
                        // An HTML page that announces a Markdown alternate
                        // (`<link rel="alternate" type="text/markdown">`) is
                        // read from the alternate when the source prefers it.
                        if source.prefer_markdown
                            && kind == BodyKind::Html
                            && tried_alternate.insert(public.clone())
                        {
                            if let Some(md) = scan
                                .and_then(|s| s.alternate)
                                .filter(|m| scope.allows(m) && *m != fetched_url)
                            {
                                total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                queue.push_front((md, public, c, depth));
                                pending_html.insert(page.url.clone(), page);
                                out.outcomes.push(o);
                                continue;
                            }
                        }
                        if let Some(f) = &sink {
                            f(&page);
                        }
                        out.pages.push(page);
                    }
                    304 => out.stats.not_modified += 1,
                    404 | 410 => {
                        out.stats.broken_links += 1;
                        o.error = Some(format!("HTTP {} (gone or never existed)", f.status));
                    }
                    s => {
                        out.stats.failed += 1;
                        o.error = Some(format!("HTTP {s}"));
                        out.failed.push(format!("{}: HTTP {s}", o.url));
                    }
                }
                out.outcomes.push(o);
            }
            Err(e) => {
                out.stats.failed += 1;
                out.failed.push(format!("{public}: {}", e.message));
                out.outcomes.push(UrlOutcome {
                    status: e.status,
                    attempts: e.attempts,
                    ..UrlOutcome::not_fetched(public, fetched_url, e.message)
                });
            }
        }
    }
    out.pages.sort_by(|a, b| a.url.cmp(&b.url));
    out.outcomes.sort_by(|a, b| a.url.cmp(&b.url));
    Ok(out)
}

/// The product token docsnap matches in robots.txt groups.
fn user_agent_token() -> String {
    "docsnap".to_string()
}

async fn fetch_text(
    fetcher: &Fetcher,
    url: &str,
    scope: &ScopeCheck,
) -> Result<String, DiscoveryError> {
    // Discovery files (llms.txt, sitemaps) may sit outside the page scope
    // (e.g. /docs/llms.txt for pages under /docs/en/); redirects must stay on host.
    let host = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.to_string()))
        .unwrap_or_default();
    let allow = |u: &str| {
        scope.allows(u)
            || Url::parse(u)
                .ok()
                .and_then(|p| p.host_str().map(|h| h == host))
                .unwrap_or(false)
    };
    let f = fetcher.get(url, &Validators::default(), &allow).await?;
    if f.status != 200 {
        return Err(DiscoveryError::Status {
            url: url.to_string(),
            status: f.status,
        });
    }
    Ok(String::from_utf8_lossy(&f.body).into_owned())
}

/// (URL to fetch, public page URL) for a listed URL: a `.md` alternate is
/// fetched as listed and stands for the page without `.md`; an HTML URL is
/// fetched as its `.md` alternate when the source prefers Markdown.
fn alternate_pair(listed: &str, prefer_markdown: bool) -> Option<(String, String)> {
    let u = Url::parse(listed).ok()?;
    let mut u = u;
    u.set_fragment(None);
    let path = u.path().to_string();
    if let Some(stem) = path.strip_suffix(".md") {
        let mut public = u.clone();
        public.set_path(stem);
        return Some((u.to_string(), public.to_string()));
    }
    if prefer_markdown
        && !path.ends_with('/')
        && !path.ends_with(".html")
        && !path.ends_with(".txt")
    {
        let mut md = u.clone();
        md.set_path(&format!("{path}.md"));
        return Some((md.to_string(), u.to_string()));
    }
    Some((u.to_string(), u.to_string()))
}

/// HTML, Markdown or plain text: what can be a documentation page.
fn is_page_type(content_type: &str, url: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    ct.is_empty()
        || ct.contains("html")
        || ct.contains("markdown")
        || ct.starts_with("text/plain")
        || url.ends_with(".md")
}

fn is_markdown(content_type: &str, url: &str) -> bool {
    content_type.contains("markdown") || url.ends_with(".md")
}

/// Path of a page under its version root (`cli/publish`), without `.html`.
pub fn relative_path(root: &str, url: &str) -> String {
    let rest = url.strip_prefix(root).unwrap_or_else(|| {
        url.split_once("://")
            .and_then(|(_, r)| r.split_once('/'))
            .map(|(_, p)| p)
            .unwrap_or("")
    });
    let rest = rest.trim_start_matches('/');
    let rest = rest.strip_suffix("index.html").unwrap_or(rest);
    let rest = rest.strip_suffix(".html").unwrap_or(rest);
    rest.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_pattern_that_does_not_compile_is_an_error() {
        let v = |exclude: &str| VersionSpec {
            label: "v".into(),
            root: "https://d.example/".into(),
            discovery: Vec::new(),
            scope: crate::config::Scope {
                prefixes: vec!["https://d.example/".into()],
                include: Vec::new(),
                exclude: vec![exclude.into()],
                keep_query: false,
            },
        };
        let (pattern, _) = ScopeCheck::new(&v("/private/(")).err().expect("refused");
        assert_eq!(pattern, "/private/(");
        let ok = ScopeCheck::new(&v("/private/")).expect("compiles");
        assert!(!ok.allows("https://d.example/private/x"));
        assert!(ok.allows("https://d.example/public/x"));
    }

    #[test]
    fn md_alternates_stand_for_their_page() {
        assert_eq!(
            alternate_pair("https://cursor.com/docs.md", true).unwrap(),
            (
                "https://cursor.com/docs.md".into(),
                "https://cursor.com/docs".into()
            )
        );
        assert_eq!(
            alternate_pair("https://code.claude.com/docs/en/hooks", true)
                .unwrap()
                .0,
            "https://code.claude.com/docs/en/hooks.md"
        );
        let g = "https://docs.godotengine.org/en/stable/index.html";
        assert_eq!(alternate_pair(g, false).unwrap(), (g.into(), g.into()));
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(
                "https://d.example/v3.2/",
                "https://d.example/v3.2/cli/publish"
            ),
            "cli/publish"
        );
        assert_eq!(
            relative_path(
                "https://docs.godotengine.org/en/stable/",
                "https://docs.godotengine.org/en/stable/classes/class_node.html"
            ),
            "classes/class_node"
        );
    }
}
