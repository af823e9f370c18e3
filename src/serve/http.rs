//! Streamable HTTP transport: MCP at `/mcp`, `GET /healthz`, `GET /metrics`.
//!
//! Stateless JSON mode: every POST is answered by a fresh [`DocsServer`] clone
//! with one `application/json` body, so no session state lives between
//! requests and any number of clients share the library. Requests pass two
//! guards first: an `Origin` header that is present must be a loopback origin
//! or listed (else 403, against DNS rebinding from browsers), and `/mcp` needs
//! the bearer token when one is set (else 401). `/healthz` needs no token: it
//! shows only which snapshots are loaded. `/metrics` (Prometheus text) is off
//! the MCP path but under the same token, since per-tool traffic is not for
//! everyone who can reach the port. A body that is not one JSON-RPC
//! message is answered 400 with JSON-RPC's own error (`serve::frames`), not
//! the library's 415.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::{current, DocsServer, Metrics, ToolFamily};
use crate::search::LibraryHandle;

/// How `serve_http` listens and whom it answers.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to bind; default `127.0.0.1:8765` (loopback only).
    pub bind: SocketAddr,
    /// Browser origins accepted besides loopback ones (`http://localhost:*`,
    /// `http://127.0.0.1:*`, `http://[::1]:*`), compared exactly; `*` accepts any.
    pub allowed_origins: Vec<String>,
    /// `Host` header values accepted. Empty: loopback names plus the bind IP,
    /// or any host when bound to all interfaces; `*` accepts any.
    pub allowed_hosts: Vec<String>,
    /// Bearer token `/mcp` requires; `None` for none.
    pub token: Option<String>,
    /// Largest request body accepted, in bytes (413 above it).
    pub max_body_bytes: usize,
    /// Tool families offered.
    pub tools: Vec<ToolFamily>,
    /// Counters shared with the reloader; `None` makes a fresh set.
    pub metrics: Option<Arc<Metrics>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8765),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            token: None,
            max_body_bytes: 1 << 20,
            tools: ToolFamily::ALL.to_vec(),
            metrics: None,
        }
    }
}

/// Bind `opts.bind`, print `listening on http://ADDR/mcp` on stdout, serve
/// until SIGINT/SIGTERM.
pub async fn serve_http(lib: LibraryHandle, opts: HttpOptions) -> anyhow::Result<()> {
    let listener = TcpListener::bind(opts.bind)
        .await
        .with_context(|| format!("cannot bind {}", opts.bind))?;
    let addr = listener.local_addr()?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{addr}/mcp")?;
        out.flush()?;
    }
    tracing::info!(%addr, "serving MCP over Streamable HTTP at /mcp");
    serve_listener(listener, lib, opts, shutdown_signal()).await
}

/// Serve on an already bound listener until `shutdown` completes (tests bind
/// port 0 and pass their own shutdown).
pub async fn serve_listener(
    listener: TcpListener,
    lib: LibraryHandle,
    opts: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = router(lib, &opts);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .context("HTTP server failed")
}

/// The whole HTTP application: `/mcp`, `/healthz`, `/metrics` and the guards.
pub fn router(lib: LibraryHandle, opts: &HttpOptions) -> Router {
    let server = match &opts.metrics {
        Some(m) => DocsServer::with_metrics(lib.clone(), &opts.tools, m.clone()),
        None => DocsServer::new(lib.clone(), &opts.tools),
    };
    let metrics = server.metrics().clone();
    let tools: Vec<String> = server
        .registry()
        .names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(opts.max_body_bytes);
    config = match host_allowlist(opts) {
        Some(hosts) => config.with_allowed_hosts(hosts),
        None => config.disable_allowed_hosts(),
    };
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let guard = Arc::new(Guard {
        origins: opts
            .allowed_origins
            .iter()
            .map(|o| normalize_origin(o))
            .collect(),
        token: opts.token.clone(),
    });
    let scrape = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(Arc::new(Scrape {
            lib: lib.clone(),
            metrics,
        }));
    let health = Router::new()
        .route("/healthz", get(healthz))
        .with_state(Arc::new(Health { lib, tools }));
    let limit = opts.max_body_bytes;
    Router::new()
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(limit, check_message))
        .merge(scrape)
        .layer(middleware::from_fn_with_state(guard.clone(), require_token))
        .merge(health)
        .layer(middleware::from_fn_with_state(guard, check_origin))
}

fn host_allowlist(opts: &HttpOptions) -> Option<Vec<String>> {
    if opts.allowed_hosts.iter().any(|h| h == "*") {
        return None;
    }
    if !opts.allowed_hosts.is_empty() {
        return Some(opts.allowed_hosts.clone());
    }
    let ip = opts.bind.ip();
    if ip.is_unspecified() {
        return None;
    }
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    if !ip.is_loopback() {
        hosts.push(ip.to_string());
    }
    Some(hosts)
}

struct Guard {
    origins: Vec<String>,
    token: Option<String>,
}

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// `http(s)://localhost`, `127.0.0.0/8` or `[::1]`, any port.
fn is_loopback_origin(origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl Guard {
    fn origin_allowed(&self, origin: &str) -> bool {
        let o = normalize_origin(origin);
        is_loopback_origin(&o) || self.origins.iter().any(|a| a == "*" || *a == o)
    }
}

fn error(status: StatusCode, msg: &str) -> Response {
    (status, Json(json!({ "error": msg }))).into_response()
}

async fn check_origin(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| guard.origin_allowed(o));
        if !allowed {
            return error(StatusCode::FORBIDDEN, "origin not allowed");
        }
    }
    next.run(req).await
}

/// Compare without stopping at the first differing byte.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim());
        if !given.is_some_and(|t| same_secret(t.as_bytes(), token.as_bytes())) {
            let mut resp = error(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    next.run(req).await
}

/// A JSON POST to `/mcp` whose body is not one JSON-RPC message gets 400
/// and the error response of [`super::frames::reject`]; a body over the
/// limit 413, as the library would. Everything else goes on unchanged.
async fn check_message(State(limit): State<usize>, req: Request, next: Next) -> Response {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if req.method() != axum::http::Method::POST || !json {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        // The body's length limit is the one failure a client can mend by
        // sending less (its message is http-body-util's, the limit's type is
        // not exported through axum); any other is a body cut off.
        Err(e) if e.to_string().contains("length limit") => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body over {limit} bytes"),
            )
        }
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("request body could not be read: {e}"),
            )
        }
    };
    if let Some(answer) = super::frames::reject(&bytes) {
        tracing::warn!(
            "http: answered a body that is not a JSON-RPC message: {}",
            answer["error"]["message"]
        );
        return (StatusCode::BAD_REQUEST, Json(answer)).into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

struct Health {
    lib: LibraryHandle,
    tools: Vec<String>,
}

async fn healthz(State(h): State<Arc<Health>>) -> Json<Value> {
    let lib = current(&h.lib);
    let snapshots: Vec<Value> = lib
        .sources
        .iter()
        .map(|s| {
            let m = &s.manifest;
            json!({
                "source": m.source,
                "product": m.product,
                "version": m.version,
                "snapshot_id": m.snapshot_id,
                "created_at": m.created_at,
                "pages": m.counts.pages,
                "sections": m.counts.sections,
            })
        })
        .collect();
    Json(json!({
        "status": "ok",
        "server": "docsnap",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": h.tools,
        "snapshots": snapshots,
    }))
}

struct Scrape {
    lib: LibraryHandle,
    metrics: Arc<Metrics>,
}

async fn metrics_text(State(s): State<Arc<Scrape>>) -> Response {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let body = s.metrics.render(&current(&s.lib), now);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let g = Guard {
            origins: vec![normalize_origin("https://App.example.com/")],
            token: None,
        };
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "https://app.example.com",
        ] {
            assert!(g.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "null",
            "https://evil.com",
            "http://localhost.evil.com",
            "file://localhost",
            "https://app.example.com:444",
        ] {
            assert!(!g.origin_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn hosts() {
        let mut o = HttpOptions::default();
        assert_eq!(
            host_allowlist(&o).unwrap(),
            ["localhost", "127.0.0.1", "::1"]
        );
        o.bind = "0.0.0.0:80".parse().unwrap();
        assert_eq!(host_allowlist(&o), None);
        o.bind = "10.0.0.2:80".parse().unwrap();
        assert!(host_allowlist(&o)
            .unwrap()
            .contains(&"10.0.0.2".to_string()));
        o.allowed_hosts = vec!["*".into()];
        assert_eq!(host_allowlist(&o), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
