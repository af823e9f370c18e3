//! The `docsnap` command line: the binary edge, where errors become messages
//! and exit codes.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use docsnap::build::{self, BuildOptions};
use docsnap::config::Config;
use docsnap::search::types::{ResponseFormat, SearchDocsArgs};
use docsnap::search::Library;
use docsnap::serve::{ToolFamily, ToolRegistry};

#[derive(Parser)]
#[command(
    name = "docsnap",
    version,
    about = "Versioned documentation snapshots and an MCP search server for coding agents"
)]
struct Cli {
    /// sources.yaml to read.
    #[arg(long, global = true, default_value = "sources.yaml")]
    config: PathBuf,
    /// Embedding model for dense retrieval: a sentence-transformers BERT
    /// folder (builds embed pages; servers embed each question, 2–4 ms) or a
    /// static model made by `docsnap distill` (builds embed sections).
    /// Servers must use the model the build used. Default: the
    /// all-MiniLM-L6-v2 folder `scripts/fetch-model.sh` installs
    /// ($DOCSNAP_CACHE or ~/.cache/docsnap, then all-minilm-l6-v2), when it is
    /// there; otherwise search is lexical, and says so once.
    #[arg(long, global = true, env = "DOCSNAP_MODEL")]
    model: Option<PathBuf>,
    /// Without --model, search lexically instead of picking up the default
    /// model (what the tests do, to test each setting on purpose).
    #[arg(long, global = true, env = "DOCSNAP_NO_DEFAULT_MODEL",
          value_parser = clap::builder::BoolishValueParser::new())]
    no_default_model: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Crawl sources and write one artifact per (source, version).
    Build {
        /// Source id from sources.yaml (repeatable; default: every source).
        #[arg(long = "source")]
        sources: Vec<String>,
        /// Directory of artifacts.
        #[arg(long, default_value = "snapshots")]
        out: PathBuf,
        #[command(flatten)]
        fetch: FetchArgs,
        /// Write a new snapshot even when nothing changed (by default an
        /// unchanged version keeps its previous snapshot and says so).
        #[arg(long)]
        force: bool,
    },
    /// Serve the newest artifacts over MCP (stdio or Streamable HTTP).
    Serve {
        /// Speak MCP on stdin/stdout.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8765).
        #[arg(long)]
        http: Option<String>,
        /// Directory of artifacts to load, a publish directory, or a bucket
        /// location `s3://BUCKET/PREFIX` (credentials and endpoint from AWS_*).
        #[arg(long, default_value = "snapshots")]
        artifacts: PathBuf,
        /// Bearer token HTTP clients must send.
        #[arg(long, env = "DOCSNAP_TOKEN")]
        token: Option<String>,
        /// Extra allowed Origin for HTTP requests (repeatable).
        #[arg(long = "allow-origin")]
        allow_origins: Vec<String>,
        /// Tool families to offer, e.g. `agent-docs,godot,leapview`
        /// (default: every family with a loaded artifact).
        #[arg(long)]
        tools: Option<String>,
        /// LeapView version docs_search answers for (default: the newest loaded).
        #[arg(long)]
        leapview_version: Option<String>,
        /// Seconds between looks for newer artifacts.
        #[arg(long, default_value_t = 10)]
        reload_secs: u64,
        /// Keep serving the loaded snapshots; only report newer ones (as a notice).
        #[arg(long)]
        no_reload: bool,
        /// Where a publish directory's snapshots are unpacked (default: a
        /// folder under the system temp dir named after the publish dir).
        #[arg(long)]
        cache: Option<PathBuf>,
        /// Question vectors the transformer keeps, so a question asked
        /// again skips its forward pass (0: none; ~1.5 KB each).
        #[arg(long, default_value_t = docsnap::embed::contextual::DEFAULT_QUERY_CACHE)]
        query_cache: usize,
    },
    /// Show a Godot class from the class reference (or one of its members).
    Class {
        /// Class name, e.g. Node or CharacterBody2D.
        name: String,
        /// Show only this member (method, property, signal, constant, …).
        #[arg(long)]
        member: Option<String>,
        /// Print the tool's JSON result.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "snapshots")]
        artifacts: PathBuf,
    },
    /// Search the newest agent-docs artifacts (Claude Code, Cursor, Codex,
    /// MCP), as search_docs would; `docsnap call` runs the other tools
    /// (search_godot_docs, docs_search, …).
    Search {
        /// The question, in any words.
        query: String,
        /// Only this product's docs: claude-code, cursor, codex or mcp.
        #[arg(long)]
        product: Option<String>,
        /// Passages to return (1–20).
        #[arg(long, default_value_t = 8)]
        limit: u32,
        /// Print the tool's JSON result.
        #[arg(long)]
        json: bool,
        /// Longer passages, as the tool's `response_format: detailed`.
        #[arg(long)]
        detailed: bool,
        /// Where the artifacts are.
        #[arg(long, default_value = "snapshots")]
        artifacts: PathBuf,
    },
    /// Run one of the server's tools in process and print its JSON result:
    /// what an MCP client would get, without one (exit 0 a result, 1 the
    /// tool's error, 2 trouble).
    Call {
        /// The tool, e.g. search_godot_docs: one the loaded artifacts offer
        /// (another name is answered with the list of those).
        tool: String,
        /// Its arguments, a JSON object, e.g. '{"query": "signals", "limit": 3}'.
        #[arg(default_value = "{}")]
        args: String,
        /// Where the artifacts are.
        #[arg(long, default_value = "snapshots")]
        artifacts: PathBuf,
    },
    /// Compare two snapshots: pages added, removed, moved and changed
    /// (exit 0 identical, 1 different, 2 trouble).
    Diff {
        /// Old side: artifact directory, `.tar.zst` archive, or a version
        /// folder (of artifacts, or a published one with `latest`).
        a: PathBuf,
        /// New side, the same kinds.
        b: PathBuf,
        /// text, markdown (a changelog for release notes) or json (stable).
        #[arg(long, default_value = "text")]
        format: docsnap::diff::Format,
    },
    /// What changed in a product's docs since an earlier snapshot under
    /// --artifacts: what the server's `docs_changes` tool answers (exit 0
    /// nothing changed, 1 something did, 2 trouble).
    Changes {
        /// Product id (claude-code, cursor, codex, mcp, godot, leapview).
        #[arg(long)]
        product: String,
        /// A snapshot id (or unique prefix of 6+ characters), a version label
        /// (3.1), or a date (YYYY-MM-DD or RFC 3339).
        #[arg(long)]
        since: String,
        /// Only pages whose path below the version root (or URL) starts with this.
        #[arg(long)]
        path: Option<String>,
        /// Pages listed per list (default 20, at most 1000).
        #[arg(long)]
        limit: Option<u64>,
        /// Artifacts directory holding both snapshots.
        #[arg(long, default_value = "snapshots")]
        artifacts: PathBuf,
        /// text or json (the tool's structured result).
        #[arg(long, default_value = "text")]
        format: docsnap::diff::Format,
    },
    /// Publish an artifact as DIR/<source>/<version>/<snapshot-id>.tar.zst with
    /// its SHA256SUMS and manifest, move `latest`, update DIR/index.json.
    Publish {
        /// Artifact directory (`<out>/<source>/<version>/<snapshot-id>`).
        artifact: PathBuf,
        /// Publish directory.
        #[arg(long)]
        to: PathBuf,
        /// Keep only the N newest snapshots of this (source, version) (never the latest).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        keep: Option<u64>,
    },
    /// Verify an artifact directory, a `.tar.zst` archive or a publish
    /// directory (exit 0 ok, 1 corruption, 2 trouble).
    Verify { path: PathBuf },
    /// Build incrementally, diff each version against its published latest and
    /// publish only what changed (exit 0 nothing changed, 3 published, 1 a
    /// build failed, 2 trouble).
    Rebuild {
        /// Source id from sources.yaml (repeatable; default: every source).
        #[arg(long = "source")]
        sources: Vec<String>,
        /// Publish directory.
        #[arg(long)]
        publish_to: PathBuf,
        /// Directory of artifacts kept between runs (makes builds incremental).
        #[arg(long, default_value = "snapshots")]
        out: PathBuf,
        #[command(flatten)]
        fetch: FetchArgs,
        /// Keep only the N newest published snapshots per (source, version).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        keep: Option<u64>,
        /// Also write this run's Markdown change report here (for CI summaries).
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Distill a sentence-transformers BERT model into static token vectors
    /// (Model2Vec) for dense retrieval; pass the result as --model.
    Distill {
        /// Teacher directory (config.json, model.safetensors, tokenizer.json).
        #[arg(long)]
        teacher: PathBuf,
        /// Static model directory to write (replaced whole).
        #[arg(long)]
        out: PathBuf,
        /// Dimensions kept by PCA.
        #[arg(long, default_value_t = 256)]
        dims: usize,
    },
}

/// glibc grows each thread's malloc heap a few pages at a time, one
/// mprotect(2) under the process-wide mmap lock per step. Loading artifacts
/// on every core grows those heaps by tens of megabytes in small steps, and
/// the steps (and the threads waiting on the lock) were the largest single
/// cost of a server's start-up. Growing by 32 MiB at a time makes them rare;
/// pages never touched cost no memory. Measured in session 19 (15
/// interleaved starts, all seven artifacts): start to first answer −13 %,
/// resident memory after the dev queries 80 → 88 MB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    // SAFETY: mallopt only sets an allocator parameter; it is called first
    // thing in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 32 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

fn main() {
    tune_malloc();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DOCSNAP_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,tantivy=warn,rmcp=warn")
            }),
        )
        .with_target(false)
        .init();
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("docsnap: error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn run(cli: Cli) -> Result<i32> {
    let model = ModelChoice {
        dir: cli.model.clone(),
        no_default: cli.no_default_model,
        query_cache: None,
    };
    match cli.cmd {
        Cmd::Build {
            sources,
            out,
            fetch,
            force,
        } => {
            let cfg = Config::load(&cli.config)?;
            let selected = cfg.select(&sources)?;
            let model = load_model(&model)?;
            let allow_failures = fetch.allow_failures;
            let jobs = fetch.jobs as usize;
            let (bars, progress) = build_progress();
            let opts = BuildOptions {
                model,
                force,
                ..fetch.options(out, progress)?
            };
            run_build(&cfg, selected, opts, allow_failures, jobs, bars)
        }
        Cmd::Serve {
            stdio,
            http,
            artifacts,
            token,
            allow_origins,
            tools,
            leapview_version,
            reload_secs,
            no_reload,
            cache,
            query_cache,
        } => {
            let model = ModelChoice {
                query_cache: Some(query_cache),
                ..model
            };
            // A bucket is mirrored (its latest snapshots) into the cache, and
            // the mirror served as a publish directory.
            let remote = match remote_url(&artifacts) {
                Some(url) => {
                    let r = Arc::new(docsnap::publish::remote::RemoteStore::open(url)?);
                    let cache = cache.clone().unwrap_or_else(|| default_cache(&artifacts));
                    let mirror = cache.join(".store");
                    r.pull(&mirror, &docsnap::publish::remote::Scope::Latest)?;
                    Some((r, mirror))
                }
                None => None,
            };
            let artifacts = match &remote {
                Some((_, mirror)) => mirror.clone(),
                None => artifacts,
            };
            // A publish directory is unpacked (verified) into a cache first.
            let (load_from, publish) = if docsnap::serve::reload::is_publish_dir(&artifacts) {
                let cache = cache.unwrap_or_else(|| default_cache(&artifacts));
                for s in docsnap::serve::reload::materialize(&artifacts, &cache)? {
                    tracing::warn!("skipped {s}");
                }
                (cache, Some(artifacts.clone()))
            } else {
                (artifacts.clone(), None)
            };
            let mut lib = load_library(&load_from, Some(&model))?;
            if let Some(v) = &leapview_version {
                if !lib.sources.iter().any(|s| {
                    s.manifest.tool_set() == docsnap::model::ToolSet::Leapview
                        && &s.manifest.version == v
                }) {
                    bail!(
                        "--leapview-version {v}: no LeapView {v} artifact under `{}`",
                        artifacts.display()
                    );
                }
            }
            lib.leapview_version = leapview_version.clone();
            let families = match &tools {
                Some(t) => ToolFamily::parse_list(t)?,
                None => docsnap::serve::families_for(&lib),
            };
            let metrics = Arc::new(docsnap::serve::Metrics::new(
                ToolRegistry::new(&families).names().iter().copied(),
            ));
            metrics.record_rejected(lib.rejected);
            let handle = Arc::new(RwLock::new(Arc::new(lib)));
            let rt = runtime()?;
            if reload_secs > 0 {
                let _guard = rt.enter();
                docsnap::serve::reload::spawn(
                    handle.clone(),
                    docsnap::serve::reload::ReloadOptions {
                        dir: load_from.clone(),
                        publish,
                        every: std::time::Duration::from_secs(reload_secs),
                        swap: !no_reload,
                        leapview_version,
                        metrics: Some(metrics.clone()),
                        remote: remote.map(|(r, _)| r),
                    },
                );
            }
            if stdio {
                rt.block_on(docsnap::serve::serve_stdio_with(handle, &families))?;
            } else if let Some(addr) = http {
                let opts = docsnap::serve::HttpOptions {
                    bind: addr
                        .parse()
                        .with_context(|| format!("--http `{addr}` is not HOST:PORT"))?,
                    token,
                    allowed_origins: allow_origins,
                    tools: families,
                    metrics: Some(metrics),
                    ..Default::default()
                };
                rt.block_on(docsnap::serve::serve_http(handle, opts))?;
            } else {
                bail!("say how to serve: --stdio or --http 127.0.0.1:PORT");
            }
            Ok(0)
        }
        Cmd::Class {
            name,
            member,
            json,
            artifacts,
        } => {
            let lib = load_library(&artifacts, None)?;
            show_class(&lib, &name, member.as_deref(), json)?;
            Ok(0)
        }
        Cmd::Search {
            query,
            product,
            limit,
            json,
            detailed,
            artifacts,
        } => {
            let lib = load_library(&artifacts, Some(&model))?;
            let args = SearchDocsArgs {
                query,
                limit,
                product,
                response_format: if detailed {
                    ResponseFormat::Detailed
                } else {
                    ResponseFormat::Concise
                },
            };
            let r = lib.search_docs(&args).map_err(anyhow::Error::msg)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else if r.passages.is_empty() {
                println!("no results");
            } else {
                for p in &r.passages {
                    println!("{:>2}. [{:.2}] {}", p.rank, p.score, p.heading);
                    println!("    {}", p.url);
                    let c = p.content.replace('\n', " ");
                    println!("    {}", docsnap::util::cut(&c, 160).0);
                    if !p.other_sections.is_empty() {
                        println!("    also: {}", p.other_sections.join("; "));
                    }
                }
            }
            Ok(0)
        }
        Cmd::Call {
            tool,
            args,
            artifacts,
        } => {
            let args: serde_json::Value = serde_json::from_str(&args)
                .with_context(|| format!("the arguments of {tool} are not JSON: {args}"))?;
            let serde_json::Value::Object(args) = args else {
                bail!("the arguments of {tool} must be a JSON object, not {args}");
            };
            let lib = load_library(&artifacts, Some(&model))?;
            let registry = ToolRegistry::new(&docsnap::serve::families_for(&lib));
            let Some(result) = registry.call(&lib, &tool, Some(args)) else {
                bail!(
                    "no tool `{tool}` for the artifacts in {}; they offer {}",
                    artifacts.display(),
                    registry.names().join(", ")
                );
            };
            if result.is_error == Some(true) {
                for c in &result.content {
                    if let Some(t) = c.as_text() {
                        eprintln!("docsnap: {tool}: {}", t.text);
                    }
                }
                return Ok(1);
            }
            let value = result.structured_content.unwrap_or_default();
            println!("{}", serde_json::to_string_pretty(&value)?);
            Ok(0)
        }
        Cmd::Diff { a, b, format } => {
            let a = docsnap::publish::open_snapshot(&a)?;
            let b = docsnap::publish::open_snapshot(&b)?;
            let d = docsnap::diff::diff_artifacts(&a.artifact, &b.artifact);
            docsnap::diff::write_stdout(&d.render(format))?;
            Ok(if d.is_empty() { 0 } else { 1 })
        }
        Cmd::Changes {
            product,
            since,
            path,
            limit,
            artifacts,
            format,
        } => {
            let args = docsnap::changes::ChangesArgs {
                product,
                since,
                path,
                limit,
            };
            let c = docsnap::changes::changes(&artifacts, &args)?;
            let text = match format {
                docsnap::diff::Format::Json => format!("{}\n", serde_json::to_string_pretty(&c)?),
                _ => c.render_text(),
            };
            docsnap::diff::write_stdout(&text)?;
            Ok(if c.counts == Default::default() { 0 } else { 1 })
        }
        Cmd::Publish { artifact, to, keep } => {
            let opts = docsnap::publish::PublishOptions {
                keep: keep.map(|k| k as usize),
                attachments: Vec::new(),
            };
            let r = match remote_url(&to) {
                Some(url) => docsnap::publish::remote::publish(&artifact, url, &opts)?,
                None => docsnap::publish::publish(&artifact, &to, &opts)?,
            };
            println!("{}", r.describe());
            Ok(0)
        }
        Cmd::Verify { path } => {
            let r = match remote_url(&path) {
                Some(url) => docsnap::publish::remote::verify(url)?,
                None => docsnap::publish::verify_path(&path)?,
            };
            docsnap::diff::write_stdout(&r.render())?;
            Ok(if r.ok() { 0 } else { 1 })
        }
        Cmd::Rebuild {
            sources,
            publish_to,
            out,
            fetch,
            keep,
            report,
        } => {
            let cfg = Config::load(&cli.config)?;
            let selected = cfg.select(&sources)?;
            let jobs = fetch.jobs as usize;
            let opts = docsnap::rebuild::RebuildOptions {
                build: BuildOptions {
                    model: load_model(&model)?,
                    ..fetch.options(out, docsnap::rebuild::log_progress())?
                },
                publish_to,
                keep: keep.map(|k| k as usize),
                jobs,
            };
            let r = docsnap::rebuild::rebuild(&cfg, &selected, &opts);
            docsnap::diff::write_stdout(&r.render())?;
            if let Some(p) = report {
                docsnap::publish::write_atomic(&p, r.markdown().as_bytes())?;
            }
            Ok(r.exit_code())
        }
        Cmd::Distill { teacher, out, dims } => run_distill(&teacher, &out, dims),
    }
}

fn run_distill(teacher: &std::path::Path, out: &std::path::Path, dims: usize) -> Result<i32> {
    let opts = docsnap::embed::DistillOptions {
        dims,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let info = docsnap::embed::distill(teacher, out, &opts)?;
    let m = docsnap::embed::StaticModel::load(out)?;
    println!("{}", serde_json::to_string_pretty(&info)?);
    println!("{}", m.identity());
    println!("distilled in {:.1?} into {}", t.elapsed(), out.display());
    Ok(0)
}

fn show_class(lib: &Library, name: &str, member: Option<&str>, json: bool) -> Result<()> {
    use docsnap::search::godot::{ClassArgs, MemberArgs};
    if let Some(m) = member {
        let r = lib
            .get_godot_class_member(&MemberArgs {
                class_name: name.to_string(),
                member_name: m.to_string(),
            })
            .map_err(anyhow::Error::msg)?;
        if json {
            println!("{}", serde_json::to_string_pretty(&r)?);
            return Ok(());
        }
        println!("{}.{}  ({})", r.class_name, r.member_name, r.kind);
        println!("  {}", r.signature);
        if r.defined_in != r.class_name {
            println!("  inherited from {}", r.defined_in);
        }
        for (k, v) in [
            ("default", &r.default),
            ("setter", &r.setter),
            ("getter", &r.getter),
        ] {
            if let Some(v) = v {
                println!("  {k}: {v}");
            }
        }
        for o in &r.overloads {
            println!("  overload: {o}");
        }
        println!("  {}\n", r.uri);
        println!("{}", r.description);
        return Ok(());
    }
    let r = lib
        .get_godot_class(&ClassArgs {
            class_name: name.to_string(),
        })
        .map_err(anyhow::Error::msg)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!("{}  <{}>", r.class_name, r.url);
    if !r.inherits.is_empty() {
        println!("  inherits: {}", r.inherits.join(" < "));
    }
    if !r.inherited_by.is_empty() {
        println!("  inherited by: {}", r.inherited_by.join(", "));
    }
    println!("\n{}\n", r.brief);
    let m = &r.members;
    for (title, list) in [
        ("Properties", &m.properties),
        ("Methods", &m.methods),
        ("Signals", &m.signals),
        ("Constants", &m.constants),
        ("Enumerations", &m.enums),
        ("Theme properties", &m.theme_properties),
        ("Annotations", &m.annotations),
        ("Constructors", &m.constructors),
        ("Operators", &m.operators),
    ] {
        if list.is_empty() {
            continue;
        }
        println!("{title} ({}):", list.len());
        for l in list {
            println!("  {l}");
        }
        println!();
    }
    Ok(())
}

/// `--mirror URL`, checked.
fn parse_mirror(mirror: Option<String>) -> Result<Option<url::Url>> {
    mirror
        .map(|m| url::Url::parse(&m).with_context(|| format!("--mirror `{m}` is not a URL")))
        .transpose()
}

/// The unpack cache of a publish directory: one folder per publish directory.
/// The `s3://…` location a path argument names, if it names one.
fn remote_url(p: &std::path::Path) -> Option<&str> {
    p.to_str()
        .filter(|s| docsnap::publish::remote::is_remote(s))
}

fn default_cache(publish: &std::path::Path) -> PathBuf {
    let canon = publish
        .canonicalize()
        .unwrap_or_else(|_| publish.to_path_buf());
    let tag = docsnap::util::sha256_hex(canon.to_string_lossy().as_bytes());
    std::env::temp_dir().join(format!("docsnap-cache-{}", &tag[..12]))
}

/// Where `scripts/fetch-model.sh` installs the default model.
fn default_model_dir() -> Option<PathBuf> {
    let cache = match std::env::var_os("DOCSNAP_CACHE") {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/docsnap"),
    };
    Some(cache.join("all-minilm-l6-v2"))
}

/// `--model` and `--no-default-model`, as given, and `serve --query-cache`.
struct ModelChoice {
    dir: Option<PathBuf>,
    no_default: bool,
    /// Question vectors to keep (None: the embedder's default).
    query_cache: Option<usize>,
}

/// The folder of the model to embed with and how it was chosen: `--model`,
/// else the default folder when it holds a model, else `None` (lexical
/// search only, said once here).
fn chosen_model_dir(choice: &ModelChoice) -> Option<(PathBuf, &'static str)> {
    match (&choice.dir, default_model_dir()) {
        (Some(dir), _) => Some((dir.clone(), "--model")),
        (None, _) if choice.no_default => {
            tracing::info!("--no-default-model: search is lexical only (no dense retrieval)");
            None
        }
        (None, Some(dir)) if dir.join("model.safetensors").is_file() => {
            Some((dir, "the default model"))
        }
        (None, default) => {
            let at = default
                .map(|d| format!(" at `{}`", d.display()))
                .unwrap_or_default();
            tracing::info!(
                "no embedding model{at} (`scripts/fetch-model.sh --teacher-only` installs it, \
                 or pass --model DIR): search is lexical only"
            );
            None
        }
    }
}

/// The model [`chosen_model_dir`] names, loaded.
fn load_model(choice: &ModelChoice) -> Result<Option<Arc<docsnap::embed::Embedder>>> {
    let Some((dir, how)) = chosen_model_dir(choice) else {
        return Ok(None);
    };
    load_model_from(choice, &dir, how).map(Some)
}

/// The model in `dir` (chosen as `how` says), with `choice`'s query cache.
fn load_model_from(
    choice: &ModelChoice,
    dir: &std::path::Path,
    how: &str,
) -> Result<Arc<docsnap::embed::Embedder>> {
    let mut m = docsnap::embed::Embedder::load(dir)
        .with_context(|| format!("{how} `{}`", dir.display()))?;
    if let Some(n) = choice.query_cache {
        m = m.with_query_cache(n);
    }
    // The forward pass's instruction sets set a build's speed (never its
    // vectors): said, so that timings can be read.
    let kernels = match m {
        docsnap::embed::Embedder::Contextual(_) => format!(", kernels {}", docsnap_bert::kernels()),
        docsnap::embed::Embedder::Static(_) => String::new(),
    };
    tracing::info!("embedding model ({how}): {}{kernels}", m.identity());
    Ok(Arc::new(m))
}

/// The artifacts under `dir`, with the model `model` chooses (none when
/// `model` is `None`). The model loads on its own thread while the
/// artifacts are verified and parsed: start-up waits for the slower of the
/// two, not for both. A model that fails to load is the error reported.
fn load_library(dir: &std::path::Path, model: Option<&ModelChoice>) -> Result<Library> {
    if !dir.is_dir() {
        bail!(
            "no artifacts at `{}`: run `docsnap build` first or pass --artifacts DIR",
            dir.display()
        );
    }
    // Known before anything loads: whether the artifacts' embedding files
    // are wanted (a server without a model does not hold them).
    let chosen = model.and_then(|c| chosen_model_dir(c).map(|d| (c, d)));
    let awaiting = chosen.is_some();
    let (loaded, model) = std::thread::scope(|scope| {
        let model = scope.spawn(|| {
            chosen
                .as_ref()
                .map(|(c, (dir, how))| load_model_from(c, dir, how))
                .transpose()
        });
        let loaded = match awaiting {
            true => Library::load_dir_awaiting_model(dir),
            false => Library::load_dir(dir),
        };
        let model = model
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("loading the embedding model panicked")));
        (loaded, model)
    });
    let model = model?;
    let (mut lib, mut warnings) = loaded?;
    warnings.extend(lib.attach_model(model));
    for w in warnings {
        tracing::warn!("{w}");
    }
    if lib.sources.is_empty() {
        bail!("no complete artifact under `{}`", dir.display());
    }
    for s in &lib.sources {
        tracing::info!(
            "loaded {} {} {} ({} pages, {} sections)",
            s.manifest.source,
            s.manifest.version,
            s.manifest.snapshot_id,
            s.manifest.counts.pages,
            s.manifest.counts.sections
        );
    }
    Ok(lib)
}

/// How `build` and `rebuild` fetch: where, how fast, how patiently.
#[derive(clap::Args, Debug)]
struct FetchArgs {
    /// Send every request for https://HOST/PATH to URL/HOST/PATH instead.
    #[arg(long)]
    mirror: Option<String>,
    /// Requests per second per host for this run (0 = unlimited).
    #[arg(long)]
    rate: Option<u32>,
    /// Requests in flight per host for this run.
    #[arg(long)]
    concurrency: Option<u32>,
    /// Seconds one request may take, body included, before it counts as
    /// failed and is retried (a site that stalls mid-body).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// Further attempts after the first for 429, 5xx, timeouts and truncated bodies.
    #[arg(long)]
    retries: Option<u32>,
    /// Pages that may fail after their retries before the build fails.
    #[arg(long, default_value_t = 0)]
    allow_failures: usize,
    /// Sources built at once (each on its own host; the versions of one
    /// source always go one after another).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    jobs: u64,
}

impl FetchArgs {
    fn options(self, out: PathBuf, progress: build::BuildProgress) -> Result<BuildOptions> {
        Ok(BuildOptions {
            out,
            mirror: parse_mirror(self.mirror)?,
            rate: self.rate,
            concurrency: self.concurrency,
            timeout: self.timeout.map(std::time::Duration::from_secs),
            retries: self.retries,
            allow_failures: self.allow_failures,
            progress,
            model: None,
            force: false,
        })
    }
}

/// Progress bars of a build on a terminal: one per version being built,
/// as several sources build at once.
struct Bars {
    multi: indicatif::MultiProgress,
    bars: std::sync::Mutex<std::collections::HashMap<String, indicatif::ProgressBar>>,
}

impl Bars {
    /// One bar per (source, version), named by both.
    fn key(source: &str, version: &str) -> String {
        format!("{source} {version}")
    }

    fn update(&self, source: &str, version: &str, done: u64, total: u64) {
        let mut bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        let b = bars
            .entry(Self::key(source, version))
            .or_insert_with_key(|key| {
                let b = self.multi.add(indicatif::ProgressBar::new(0));
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix:>20} [{bar:30}] {pos}/{len} {elapsed}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                b.set_prefix(key.clone());
                b
            });
        b.set_length(total);
        b.set_position(done);
    }

    fn finish(&self, source: &str, version: &str) {
        let bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = bars.get(&Self::key(source, version)) {
            b.finish_and_clear();
        }
    }
}

/// Progress of a build: bars on a terminal (returned, to be cleared as
/// versions end), log lines otherwise.
fn build_progress() -> (Option<Arc<Bars>>, build::BuildProgress) {
    let bars = std::io::stderr().is_terminal().then(|| {
        Arc::new(Bars {
            multi: indicatif::MultiProgress::new(),
            bars: Default::default(),
        })
    });
    let shown = bars.clone();
    let progress: build::BuildProgress = Arc::new(move |src, ver, done, total| {
        if let Some(b) = &shown {
            b.update(src, ver, done, total);
        } else if done == total || done % 50 == 0 {
            tracing::info!("{src} {ver}: {done}/{total} URLs");
        }
    });
    (bars, progress)
}

fn run_build(
    cfg: &Config,
    selected: Vec<&docsnap::config::Source>,
    opts: BuildOptions,
    allow_failures: usize,
    jobs: usize,
    bars: Option<Arc<Bars>>,
) -> Result<i32> {
    let mut total_failures = 0usize;
    let mut trouble = false;
    let mut reports = Vec::new();
    let on_done = |run: &build::VersionRun| {
        if let Some(b) = &bars {
            b.finish(&run.source, &run.version);
        }
        match &run.result {
            Ok(rep) => {
                let t = &rep.timings;
                tracing::info!(
                    "{} {} timings: crawl {} ms, normalize+section {} ms, embed {} ms ({} texts), {} of them during the crawl, index+write {} ms",
                    rep.source,
                    rep.version,
                    t.crawl_ms,
                    t.normalize_ms,
                    t.embed_ms,
                    t.embedded,
                    t.embedded_early,
                    t.write_ms
                );
                for w in &rep.warnings {
                    tracing::warn!("{} {}: {w}", rep.source, rep.version);
                }
                for f in &rep.failures {
                    tracing::error!("{} {}: failed: {f}", rep.source, rep.version);
                }
                for b in &rep.broken {
                    tracing::warn!("{} {}: broken link: {b}", rep.source, rep.version);
                }
            }
            Err(e) => tracing::error!("{} {}: {e}", run.source, run.version),
        }
    };
    for run in build::build_sources(cfg, &selected, &opts, jobs, &on_done) {
        match run.result {
            Ok(rep) => {
                total_failures += rep.failures.len();
                reports.push(rep);
            }
            Err(_) => trouble = true,
        }
    }
    eprintln!("\nsummary:");
    eprintln!(
        "  {:<12} {:<8} {:>6} {:>8} {:>8} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7}  artifact",
        "source",
        "version",
        "pages",
        "sections",
        "fetched",
        "304",
        "failed",
        "broken",
        "scope",
        "robots",
        "resumed"
    );
    for r in &reports {
        eprintln!(
            "  {:<12} {:<8} {:>6} {:>8} {:>8} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7}  {}",
            r.source,
            r.version,
            r.pages,
            r.sections,
            r.stats.fetched,
            r.stats.not_modified,
            r.stats.failed,
            r.stats.broken_links,
            r.stats.skipped_scope,
            r.stats.skipped_robots,
            r.stats.resumed,
            match (&r.artifact, r.unchanged) {
                (Some(p), true) => format!("unchanged: {}", p.display()),
                (Some(p), false) => p.display().to_string(),
                (None, _) => "(none written)".into(),
            }
        );
    }
    if trouble {
        return Ok(2);
    }
    if total_failures > allow_failures {
        eprintln!(
            "docsnap: {total_failures} page(s) failed after retries (allowed: {allow_failures}); see the errors above"
        );
        return Ok(1);
    }
    Ok(0)
}
