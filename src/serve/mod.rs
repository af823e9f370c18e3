//! MCP query server (stdio and Streamable HTTP).
