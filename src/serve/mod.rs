//! MCP query server (stdio and Streamable HTTP).
//!
//! [`DocsServer`] implements `rmcp::ServerHandler` by hand so `tools/list`
//! shows the seed schemas field for field (no derive-generated schemas). Each
//! call takes the library the [`LibraryHandle`] holds at that moment, so a
//! reload swaps it under running sessions without a restart.
//!
//! Errors: an unknown tool is a JSON-RPC error (`-32602`, the request cannot be
//! routed). Arguments that break the input schema, and calls the library
//! cannot answer, are tool results with `isError: true` and a message naming
//! the field: MCP clients show those to the model, which can correct the call,
//! while protocol errors usually reach it only as an opaque failure.

pub mod frames;
pub mod http;
pub mod metrics;
pub mod reload;
pub mod tools;
pub mod validate;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};

pub use http::{serve_http, serve_listener, HttpOptions};
pub use metrics::Metrics;
pub use tools::{ToolFamily, ToolRegistry, ToolSpec};

use crate::search::{Library, LibraryHandle};

/// The library currently loaded; a poisoned lock still holds a whole `Arc`.
pub fn current(lib: &LibraryHandle) -> Arc<Library> {
    match lib.read() {
        Ok(g) => Arc::clone(&g),
        Err(poisoned) => Arc::clone(&poisoned.into_inner()),
    }
}

/// The families that have something to answer from: a family is offered when
/// at least one artifact of its products is loaded.
pub fn families_for(lib: &Library) -> Vec<ToolFamily> {
    use crate::model::ToolSet;
    let has = |t: ToolSet| lib.sources.iter().any(|s| s.manifest.tool_set() == t);
    let mut out = Vec::new();
    for (set, family) in [
        (ToolSet::AgentDocs, ToolFamily::AgentDocs),
        (ToolSet::Godot, ToolFamily::Godot),
        (ToolSet::Leapview, ToolFamily::Leapview),
    ] {
        if has(set) {
            out.push(family);
        }
    }
    if out.is_empty() {
        out.push(ToolFamily::AgentDocs);
    }
    out.push(ToolFamily::Changes);
    out
}

/// One MCP server over a library handle; cheap to clone (one per HTTP request).
#[derive(Clone)]
pub struct DocsServer {
    lib: LibraryHandle,
    tools: Arc<ToolRegistry>,
    info: Arc<ServerConfig>,
    metrics: Arc<Metrics>,
}

impl DocsServer {
    /// A server offering the tools of `families`, with counters of its own.
    pub fn new(lib: LibraryHandle, families: &[ToolFamily]) -> Self {
        let tools = Arc::new(ToolRegistry::new(families));
        let metrics = Arc::new(Metrics::new(tools.names().iter().copied()));
        Self::with_registry(lib, tools, metrics)
    }

    /// A server offering the tools of `families` that counts its calls in
    /// `metrics` (shared with `/metrics` and the reloader).
    pub fn with_metrics(
        lib: LibraryHandle,
        families: &[ToolFamily],
        metrics: Arc<Metrics>,
    ) -> Self {
        Self::with_registry(lib, Arc::new(ToolRegistry::new(families)), metrics)
    }

    fn with_registry(lib: LibraryHandle, tools: Arc<ToolRegistry>, metrics: Arc<Metrics>) -> Self {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("docsnap", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "Versioned documentation snapshots. Tools: {}.",
            tools.names().join(", ")
        ));
        DocsServer {
            lib,
            tools,
            info: Arc::new(info),
            metrics,
        }
    }

    /// The tools this server offers.
    pub fn registry(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The counters this server's calls go to.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }
}

impl ServerHandler for DocsServer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.tools().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let lib = current(&self.lib);
        let tools = Arc::clone(&self.tools);
        let args = request.arguments;
        let started = std::time::Instant::now();
        let called = name.clone();
        // Searching is CPU work: keep it off the threads that drive the transport.
        let result = tokio::task::spawn_blocking(move || tools.call(&lib, &called, args)).await;
        let outcome = match &result {
            Ok(Some(r)) if r.is_error != Some(true) => metrics::Outcome::Ok,
            _ => metrics::Outcome::Error,
        };
        self.metrics.record_call(&name, started.elapsed(), outcome);
        let result = result
            .map_err(|e| ErrorData::internal_error(format!("tool call failed: {e}"), None))?
            .ok_or(());
        result.map(CallToolResponse::from).map_err(|()| {
            ErrorData::invalid_params(
                format!(
                    "unknown tool '{name}' (available: {})",
                    self.tools.names().join(", ")
                ),
                None,
            )
        })
    }
}

/// Serve MCP over any byte stream pair until the peer closes it (what stdio
/// and in-process tests share).
pub async fn serve_io<R, W>(server: DocsServer, reader: R, writer: W) -> anyhow::Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // Lines that are not JSON-RPC messages are answered before rmcp, which
    // would skip them in silence (`frames`).
    let (reader, writer, written) = frames::gate(reader, writer);
    let running = server.serve((reader, writer)).await?;
    running.waiting().await?;
    // Every answer on its way out before the stream is let go.
    let _ = written.await;
    Ok(())
}

/// Serve every available tool family over stdin/stdout. stdout carries only
/// JSON-RPC; logs go wherever `tracing` is set up (stderr in the binary).
pub async fn serve_stdio(lib: LibraryHandle) -> anyhow::Result<()> {
    serve_stdio_with(lib, ToolFamily::ALL).await
}

/// [`serve_stdio`] with a chosen set of tool families.
pub async fn serve_stdio_with(lib: LibraryHandle, families: &[ToolFamily]) -> anyhow::Result<()> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    serve_io(DocsServer::new(lib, families), reader, writer).await
}
