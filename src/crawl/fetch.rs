//! The HTTP side of the crawl: one client, a rate limiter and a concurrency
//! bound per host, retries with backoff, redirects checked against the scope,
//! and the mirror mapping (`https://HOST/PATH` → `MIRROR/HOST/PATH`), which is
//! applied only at the moment of sending so that everything stored keeps the
//! public URL.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;
use url::Url;

/// How requests are sent.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Base URL of a mirror (`http://127.0.0.1:PORT`), or none for the real sites.
    pub mirror: Option<Url>,
    /// Requests per second per host; 0 = unlimited.
    pub per_second: u32,
    /// Requests in flight per host.
    pub concurrency: u32,
    pub user_agent: String,
    pub timeout: Duration,
    /// Further attempts after the first, for 429, 5xx, timeouts and truncated bodies.
    pub retries: u32,
    /// Largest body accepted, in bytes.
    pub max_body: u64,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            mirror: None,
            per_second: 10,
            concurrency: 4,
            user_agent: format!(
                "docsnap/{} (+https://github.com/docsnap/docsnap)",
                env!("CARGO_PKG_VERSION")
            ),
            timeout: Duration::from_secs(30),
            retries: 4,
            max_body: 20 * 1024 * 1024,
        }
    }
}

/// Validators from a previous snapshot, sent as `If-None-Match` / `If-Modified-Since`.
#[derive(Debug, Clone, Default)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// A response, with the URL it finally came from in public form.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    /// Public URL of the final response (after redirects).
    pub final_url: String,
    pub body: Vec<u8>,
    pub content_type: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub attempts: u32,
}

/// A request that produced no usable response.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{url}: {message} (after {attempts} attempts)")]
pub struct FetchError {
    pub url: String,
    pub message: String,
    pub attempts: u32,
    /// Last HTTP status seen, 0 if none.
    pub status: u16,
}

struct HostGate {
    limiter: Option<DefaultDirectRateLimiter>,
    slots: Semaphore,
}

/// Sends requests politely. Cheap to share behind an `Arc`.
pub struct Fetcher {
    client: reqwest::Client,
    opts: FetchOptions,
    gates: Mutex<HashMap<String, Arc<HostGate>>>,
}

impl Fetcher {
    pub fn new(opts: FetchOptions) -> Result<Fetcher, FetchError> {
        crate::util::install_tls();
        let mut builder = reqwest::Client::builder();
        if opts.mirror.is_none() {
            // Real sites only: names that resolve to private, loopback or
            // link-local addresses are refused (no SSRF into the local network).
            builder = builder.dns_resolver(Arc::new(PublicOnlyResolver));
        }
        let client = builder
            .user_agent(opts.user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(opts.timeout)
            .connect_timeout(Duration::from_secs(10))
            .gzip(true)
            .brotli(true)
            .build()
            .map_err(|e| FetchError {
                url: String::new(),
                message: format!("cannot build HTTP client: {e}"),
                attempts: 0,
                status: 0,
            })?;
        Ok(Fetcher {
            client,
            opts,
            gates: Mutex::new(HashMap::new()),
        })
    }

    fn gate(&self, host: &str) -> Arc<HostGate> {
        let mut g = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        g.entry(host.to_string())
            .or_insert_with(|| {
                let limiter = NonZeroU32::new(self.opts.per_second).map(|n| {
                    RateLimiter::direct(Quota::per_second(n).allow_burst(NonZeroU32::MIN))
                });
                Arc::new(HostGate {
                    limiter,
                    slots: Semaphore::new(self.opts.concurrency.max(1) as usize),
                })
            })
            .clone()
    }

    /// Where a public URL is actually sent.
    pub fn wire_url(&self, public: &Url) -> Result<Url, url::ParseError> {
        match &self.opts.mirror {
            None => Ok(public.clone()),
            Some(m) => {
                let host = public.host_str().ok_or(url::ParseError::EmptyHost)?;
                let mut s = m.as_str().trim_end_matches('/').to_string();
                s.push('/');
                s.push_str(host);
                s.push_str(public.path());
                if let Some(q) = public.query() {
                    s.push('?');
                    s.push_str(q);
                }
                Url::parse(&s)
            }
        }
    }

    /// The public URL a wire URL stands for (inverse of [`Fetcher::wire_url`]).
    pub fn public_url(&self, wire: &Url) -> Option<Url> {
        match &self.opts.mirror {
            None => Some(wire.clone()),
            Some(m) => {
                if wire.host_str() != m.host_str()
                    || wire.port_or_known_default() != m.port_or_known_default()
                {
                    return None;
                }
                let path = wire.path().trim_start_matches('/');
                let (host, rest) = path.split_once('/').unwrap_or((path, ""));
                let mut s = format!("https://{host}/{rest}");
                if let Some(q) = wire.query() {
                    s.push('?');
                    s.push_str(q);
                }
                Url::parse(&s).ok()
            }
        }
    }

    /// GET a public URL, following redirects that `in_scope` accepts, retrying
    /// transient failures. 4xx other than 429 are returned, not retried.
    pub async fn get(
        &self,
        public: &str,
        validators: &Validators,
        in_scope: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Fetched, FetchError> {
        let mut current = public.to_string();
        let mut attempts = 0u32;
        for _hop in 0..6 {
            let r = self.get_once(&current, validators, &mut attempts).await?;
            if (300..400).contains(&r.status) && r.status != 304 {
                let Some(loc) = r.location else {
                    return Err(self.err(
                        &current,
                        "redirect without Location",
                        attempts,
                        r.status,
                    ));
                };
                let next = self.resolve_location(&current, &loc).ok_or_else(|| {
                    self.err(
                        &current,
                        &format!("bad redirect Location `{loc}`"),
                        attempts,
                        r.status,
                    )
                })?;
                if !in_scope(&next) {
                    return Err(self.err(
                        &current,
                        &format!("redirect to `{next}` leaves the source's scope"),
                        attempts,
                        r.status,
                    ));
                }
                current = next;
                continue;
            }
            return Ok(Fetched {
                status: r.status,
                final_url: current,
                body: r.body,
                content_type: r.content_type,
                etag: r.etag,
                last_modified: r.last_modified,
                attempts,
            });
        }
        Err(self.err(public, "too many redirects", attempts, 0))
    }

    fn resolve_location(&self, current_public: &str, loc: &str) -> Option<String> {
        let cur = Url::parse(current_public).ok()?;
        let wire = self.wire_url(&cur).ok()?;
        let target = wire.join(loc).ok()?;
        let public = if target.host_str() == wire.host_str()
            && target.port_or_known_default() == wire.port_or_known_default()
        {
            self.public_url(&target)?
        } else if self.opts.mirror.is_some() {
            // An absolute public URL in a mirror's Location stays public.
            target
        } else {
            target
        };
        Some(public.to_string())
    }

    fn err(&self, url: &str, message: &str, attempts: u32, status: u16) -> FetchError {
        FetchError {
            url: url.to_string(),
            message: message.to_string(),
            attempts,
            status,
        }
    }

    async fn get_once(
        &self,
        public: &str,
        validators: &Validators,
        attempts: &mut u32,
    ) -> Result<Raw, FetchError> {
        let url = Url::parse(public).map_err(|e| self.err(public, &e.to_string(), *attempts, 0))?;
        if self.opts.mirror.is_none() && !is_public_host(&url) {
            return Err(self.err(
                public,
                "refused: the host is a private, loopback or link-local address",
                *attempts,
                0,
            ));
        }
        let host = url.host_str().unwrap_or("").to_string();
        let wire = self
            .wire_url(&url)
            .map_err(|e| self.err(public, &e.to_string(), *attempts, 0))?;
        let gate = self.gate(&host);
        let mut last_status = 0u16;
        let mut last_err;
        loop {
            *attempts += 1;
            let outcome = {
                let _slot = gate
                    .slots
                    .acquire()
                    .await
                    .map_err(|e| self.err(public, &format!("closed: {e}"), *attempts, 0))?;
                if let Some(l) = &gate.limiter {
                    l.until_ready().await;
                }
                self.send(&wire, validators).await
            };
            let wait = match outcome {
                Ok(raw) if raw.status == 429 || raw.status >= 500 => {
                    last_status = raw.status;
                    last_err = format!("HTTP {}", raw.status);
                    raw.retry_after
                        .unwrap_or_else(|| backoff(*attempts))
                        .min(Duration::from_secs(60))
                }
                Ok(raw) => return Ok(raw),
                Err(SendError::Fatal(m)) => return Err(self.err(public, &m, *attempts, 0)),
                Err(SendError::Transient(m)) => {
                    last_err = m;
                    backoff(*attempts)
                }
            };
            if *attempts > self.opts.retries {
                return Err(self.err(public, &last_err, *attempts, last_status));
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn send(&self, wire: &Url, v: &Validators) -> Result<Raw, SendError> {
        let mut req = self.client.get(wire.clone());
        if let Some(e) = &v.etag {
            req = req.header(reqwest::header::IF_NONE_MATCH, e);
        }
        if let Some(lm) = &v.last_modified {
            req = req.header(reqwest::header::IF_MODIFIED_SINCE, lm);
        }
        let resp = req.send().await.map_err(|e| {
            if e.is_builder() {
                SendError::Fatal(e.to_string())
            } else {
                SendError::Transient(format!("request failed: {e}"))
            }
        })?;
        let status = resp.status().as_u16();
        let h = resp.headers();
        let get = |k: reqwest::header::HeaderName| {
            h.get(k)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.to_string())
        };
        let location = get(reqwest::header::LOCATION);
        let etag = get(reqwest::header::ETAG);
        let last_modified = get(reqwest::header::LAST_MODIFIED);
        let content_type = get(reqwest::header::CONTENT_TYPE).unwrap_or_default();
        let retry_after = get(reqwest::header::RETRY_AFTER)
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        if let Some(len) = resp.content_length() {
            if len > self.opts.max_body {
                return Err(SendError::Fatal(format!(
                    "body of {len} bytes exceeds the limit of {}",
                    self.opts.max_body
                )));
            }
        }
        let mut body = Vec::new();
        let mut resp = resp;
        loop {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    body.extend_from_slice(&c);
                    if body.len() as u64 > self.opts.max_body {
                        return Err(SendError::Fatal(format!(
                            "body exceeds the limit of {} bytes",
                            self.opts.max_body
                        )));
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(SendError::Transient(format!("truncated body: {e}"))),
            }
        }
        Ok(Raw {
            status,
            body,
            content_type,
            etag,
            last_modified,
            location,
            retry_after,
        })
    }
}

/// Whether an address may be contacted when crawling real sites.
pub fn is_public_ip(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v) => {
            !(v.is_private()
                || v.is_loopback()
                || v.is_link_local()
                || v.is_unspecified()
                || v.is_broadcast()
                || v.is_documentation()
                || v.octets()[0] == 100 && (v.octets()[1] & 0xC0) == 64 // 100.64/10 CGNAT
                || v.octets()[0] == 0)
        }
        std::net::IpAddr::V6(v) => {
            if let Some(m) = v.to_ipv4_mapped() {
                return is_public_ip(std::net::IpAddr::V4(m));
            }
            let seg = v.segments();
            !(v.is_loopback()
                || v.is_unspecified()
                || (seg[0] & 0xfe00) == 0xfc00 // unique local
                || (seg[0] & 0xffc0) == 0xfe80) // link-local
        }
    }
}

fn is_public_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(v)) => is_public_ip(v.into()),
        Some(url::Host::Ipv6(v)) => is_public_ip(v.into()),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d != "localhost" && !d.ends_with(".localhost")
        }
        None => false,
    }
}

/// DNS resolution that drops non-public addresses.
struct PublicOnlyResolver;

impl reqwest::dns::Resolve for PublicOnlyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| is_public_ip(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!("{host} resolves to no public address; refused").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

struct Raw {
    status: u16,
    body: Vec<u8>,
    content_type: String,
    etag: Option<String>,
    last_modified: Option<String>,
    location: Option<String>,
    retry_after: Option<Duration>,
}

enum SendError {
    Transient(String),
    Fatal(String),
}

/// Exponential backoff with jitter: 250 ms · 2^(n-1), ±50 %, at most 20 s.
fn backoff(attempt: u32) -> Duration {
    let base = 250u64.saturating_mul(1 << attempt.saturating_sub(1).min(7));
    let base = base.min(20_000);
    let jitter = jitter_fraction();
    Duration::from_millis((base as f64 * (0.5 + jitter)) as u64)
}

fn jitter_fraction() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let mut x = STATE.load(Ordering::Relaxed)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(0);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    (x % 10_000) as f64 / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetcher(mirror: Option<&str>) -> Fetcher {
        Fetcher::new(FetchOptions {
            mirror: mirror.map(|m| Url::parse(m).unwrap()),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn mirror_mapping_round_trips() {
        let f = fetcher(Some("http://127.0.0.1:8080"));
        let p = Url::parse("https://modelcontextprotocol.io/docs/a.md?x=1").unwrap();
        let w = f.wire_url(&p).unwrap();
        assert_eq!(
            w.as_str(),
            "http://127.0.0.1:8080/modelcontextprotocol.io/docs/a.md?x=1"
        );
        assert_eq!(f.public_url(&w).unwrap(), p);
    }

    #[test]
    fn mirror_redirect_location_maps_back_to_public() {
        let f = fetcher(Some("http://127.0.0.1:8080"));
        let r = f
            .resolve_location(
                "https://code.claude.com/docs",
                "/code.claude.com/docs/en/overview",
            )
            .unwrap();
        assert_eq!(r, "https://code.claude.com/docs/en/overview");
    }

    #[test]
    fn private_addresses_are_refused() {
        for ip in [
            "10.0.0.1",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.1.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public_ip(ip.parse().unwrap()), "{ip}");
        }
        assert!(is_public_ip("8.8.8.8".parse().unwrap()));
        assert!(!is_public_host(
            &Url::parse("http://localhost:8080/").unwrap()
        ));
        assert!(!is_public_host(&Url::parse("http://[::1]/").unwrap()));
        assert!(is_public_host(
            &Url::parse("https://docs.godotengine.org/").unwrap()
        ));
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        assert!(backoff(1) <= Duration::from_millis(375));
        assert!(backoff(30) <= Duration::from_secs(30));
    }
}
