//! docsnap's integration tests (all but the fuzz properties of
//! `tests/fuzz.rs`), one module per area, in one test binary: each test
//! binary links the whole library and its dependencies, and linking about
//! twenty of them was a large part of CI's build time.
//!
//! Run one area with `cargo test --test it <module>::`, e.g.
//! `cargo test --test it golden::`.

mod common;

mod crawl_all;
mod crawl_alternate;
mod dense_e2e;
mod diff_publish;
mod e2e_mcp;
mod embed_model;
mod embed_tiny;
mod golden;
mod layering;
mod mcp_sdk;
mod new_site;
mod normalize_html;
mod normalize_markdown;
mod s3;
mod samples;
mod serve_protocol;
mod serve_reload;
mod training_scripts;
mod trust;
