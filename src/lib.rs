//! docsnap: documentation snapshots for coding agents.
//!
//! The pipeline is `crawl → normalize → section → index`; each stage is one
//! module and the records between them (see [`model`]) are the interface.
//! [`serve`] loads the artifacts and answers MCP tool calls.
//! See `ARCHITECTURE.md` for the map and the invariants.

pub mod aliases;
pub mod artifact;
pub mod build;
pub mod changes;
pub mod config;
pub mod crawl;
pub mod diff;
pub mod embed;
pub mod index;
pub mod inlinks;
pub mod markdown;
pub mod model;
pub mod normalize;
pub mod publish;
pub mod rebuild;
pub mod search;
pub mod section;
pub mod serve;
pub mod util;
