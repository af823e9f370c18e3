//! Counters a team scrapes: `GET /metrics` in the Prometheus text format.
//!
//! Written by hand rather than through a metrics crate because the set is
//! small and fixed (per-tool requests, errors and latency, the loaded
//! snapshots, reloads and rejected artifacts) and the exposition format is a
//! few lines of text; a registry, global recorders and their locking would be
//! more code to read than this file.
//!
//! One [`Metrics`] lives as long as the server process and is shared by every
//! request handler and by the reloader, so counters survive library swaps.
//! Tool names come from the registry: a call naming an unknown tool is
//! counted under `tool="(unknown)"`, so hostile input cannot grow the label set.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::search::Library;

/// Upper bounds (seconds) of the latency histogram's buckets: from the
/// in-process lexical path (well under a millisecond) to a slow HTTP answer.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Label under which calls to tools the registry does not know are counted.
pub const UNKNOWN_TOOL: &str = "(unknown)";

#[derive(Debug, Clone, Default)]
struct ToolStats {
    requests: u64,
    errors: u64,
    /// Non-cumulative counts per bucket of [`LATENCY_BUCKETS`], then one for
    /// everything slower.
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    seconds: f64,
}

/// How a tool call ended, for the error counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result the client can use.
    Ok,
    /// A tool error (`isError: true`) or a protocol error.
    Error,
}

/// Process-wide counters of one server.
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    tools: Mutex<BTreeMap<String, ToolStats>>,
    reloads: AtomicU64,
    reload_failures: AtomicU64,
    rejected_artifacts: AtomicU64,
}

impl Metrics {
    /// Counters for the tools named (each starts at zero, so a scrape lists
    /// every tool before it is first called).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a str>) -> Metrics {
        let mut map: BTreeMap<String, ToolStats> = tools
            .into_iter()
            .map(|t| (t.to_string(), ToolStats::default()))
            .collect();
        map.insert(UNKNOWN_TOOL.to_string(), ToolStats::default());
        Metrics {
            started: Instant::now(),
            tools: Mutex::new(map),
            reloads: AtomicU64::new(0),
            reload_failures: AtomicU64::new(0),
            rejected_artifacts: AtomicU64::new(0),
        }
    }

    /// Count one call of `tool` that took `elapsed`.
    pub fn record_call(&self, tool: &str, elapsed: Duration, outcome: Outcome) {
        let mut map = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        let key = if map.contains_key(tool) {
            tool
        } else {
            UNKNOWN_TOOL
        };
        let Some(s) = map.get_mut(key) else { return };
        let secs = elapsed.as_secs_f64();
        s.requests += 1;
        if outcome == Outcome::Error {
            s.errors += 1;
        }
        s.seconds += secs;
        let b = LATENCY_BUCKETS
            .iter()
            .position(|&le| secs <= le)
            .unwrap_or(LATENCY_BUCKETS.len());
        s.buckets[b] += 1;
    }

    /// Count a new library swapped in by the reloader.
    pub fn record_reload(&self) {
        self.reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a reload attempt that kept the loaded library (nothing complete
    /// to load, an unreadable directory, a publish directory that failed).
    pub fn record_reload_failure(&self) {
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Count artifacts refused at load (checksum, manifest or archive failed
    /// verification, or unreadable).
    pub fn record_rejected(&self, n: usize) {
        self.rejected_artifacts
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition (format 0.0.4) of every counter, and of
    /// what `lib` has loaded, as of `now_unix` (seconds since the epoch).
    pub fn render(&self, lib: &Library, now_unix: i64) -> String {
        let mut out = String::new();
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone();
        header(
            &mut out,
            "docsnap_tool_requests_total",
            "counter",
            "Tool calls answered, by tool.",
        );
        for (t, s) in &tools {
            let _ = writeln!(
                out,
                "docsnap_tool_requests_total{{tool=\"{}\"}} {}",
                label(t),
                s.requests
            );
        }
        header(
            &mut out,
            "docsnap_tool_errors_total",
            "counter",
            "Tool calls answered with an error (invalid arguments, unknown tool, internal failure), by tool.",
        );
        for (t, s) in &tools {
            let _ = writeln!(
                out,
                "docsnap_tool_errors_total{{tool=\"{}\"}} {}",
                label(t),
                s.errors
            );
        }
        header(
            &mut out,
            "docsnap_tool_latency_seconds",
            "histogram",
            "Time to answer a tool call in the server (arguments checked, searched, serialized), by tool.",
        );
        for (t, s) in &tools {
            let t = label(t);
            let mut cumulative = 0;
            for (i, le) in LATENCY_BUCKETS.iter().enumerate() {
                cumulative += s.buckets[i];
                let _ = writeln!(
                    out,
                    "docsnap_tool_latency_seconds_bucket{{tool=\"{t}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "docsnap_tool_latency_seconds_bucket{{tool=\"{t}\",le=\"+Inf\"}} {}",
                s.requests
            );
            let _ = writeln!(
                out,
                "docsnap_tool_latency_seconds_sum{{tool=\"{t}\"}} {}",
                s.seconds
            );
            let _ = writeln!(
                out,
                "docsnap_tool_latency_seconds_count{{tool=\"{t}\"}} {}",
                s.requests
            );
        }
        header(
            &mut out,
            "docsnap_snapshot_age_seconds",
            "gauge",
            "Age of each loaded snapshot (now minus its manifest's created_at), by source and version; the snapshot id is a label.",
        );
        let mut pages = String::new();
        for s in &lib.sources {
            let m = &s.manifest;
            let labels = format!(
                "source=\"{}\",version=\"{}\",snapshot_id=\"{}\"",
                label(&m.source),
                label(&m.version),
                label(&m.snapshot_id)
            );
            let age = unix_time(&m.created_at)
                .map(|t| (now_unix - t).max(0).to_string())
                .unwrap_or_else(|| "NaN".into());
            let _ = writeln!(out, "docsnap_snapshot_age_seconds{{{labels}}} {age}");
            let _ = writeln!(
                pages,
                "docsnap_snapshot_pages{{{labels}}} {}",
                m.counts.pages
            );
        }
        header(
            &mut out,
            "docsnap_snapshot_pages",
            "gauge",
            "Pages in each loaded snapshot.",
        );
        out.push_str(&pages);
        let counters = [
            (
                "docsnap_reloads_total",
                "New libraries swapped in by the reloader since start.",
                self.reloads.load(Ordering::Relaxed),
            ),
            (
                "docsnap_reload_failures_total",
                "Reload attempts that kept the loaded library because the new one could not be loaded.",
                self.reload_failures.load(Ordering::Relaxed),
            ),
            (
                "docsnap_rejected_artifacts_total",
                "Artifacts refused at load or reload because they failed verification or could not be read.",
                self.rejected_artifacts.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, v) in counters {
            header(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {v}");
        }
        if let Some(st) = lib.model.as_ref().and_then(|m| m.query_cache_stats()) {
            let series = [
                (
                    "docsnap_query_cache_hits_total",
                    "counter",
                    "Questions whose vector came from the model's memory of recent questions.",
                    st.hits,
                ),
                (
                    "docsnap_query_cache_misses_total",
                    "counter",
                    "Questions the model embedded (not in its memory).",
                    st.misses,
                ),
                (
                    "docsnap_query_cache_entries",
                    "gauge",
                    "Question vectors kept now (serve --query-cache bounds them).",
                    st.kept as u64,
                ),
            ];
            for (name, kind, help, v) in series {
                header(&mut out, name, kind, help);
                let _ = writeln!(out, "{name} {v}");
            }
        }
        header(
            &mut out,
            "docsnap_uptime_seconds",
            "gauge",
            "Seconds since the server started.",
        );
        let _ = writeln!(
            out,
            "docsnap_uptime_seconds {:.3}",
            self.started.elapsed().as_secs_f64()
        );
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value escaped as the text format requires.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Seconds since the epoch of an RFC 3339 time; `None` when it is not one.
fn unix_time(rfc3339: &str) -> Option<i64> {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
    }

    #[test]
    fn counts_calls_errors_and_buckets() {
        let m = Metrics::new(["search_docs", "read_section"]);
        m.record_call("search_docs", Duration::from_micros(300), Outcome::Ok);
        m.record_call("search_docs", Duration::from_millis(30), Outcome::Error);
        m.record_call("no_such\"tool", Duration::from_millis(1), Outcome::Error);
        m.record_reload();
        m.record_rejected(2);
        let text = m.render(&Library::default(), 0);
        assert!(text.ends_with('\n'));
        assert_eq!(
            line(&text, "docsnap_tool_requests_total{tool=\"search_docs\"}"),
            "docsnap_tool_requests_total{tool=\"search_docs\"} 2"
        );
        assert_eq!(
            line(&text, "docsnap_tool_errors_total{tool=\"search_docs\"}"),
            "docsnap_tool_errors_total{tool=\"search_docs\"} 1"
        );
        assert_eq!(
            line(&text, "docsnap_tool_requests_total{tool=\"read_section\"}"),
            "docsnap_tool_requests_total{tool=\"read_section\"} 0"
        );
        // The unknown name is not a label; it lands under "(unknown)".
        assert!(!text.contains("no_such"));
        assert_eq!(
            line(&text, "docsnap_tool_errors_total{tool=\"(unknown)\"}"),
            "docsnap_tool_errors_total{tool=\"(unknown)\"} 1"
        );
        // Buckets are cumulative: 0.3 ms falls in le=0.0005, 30 ms in le=0.05.
        assert_eq!(
            line(
                &text,
                "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.0005\"}"
            ),
            "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.0005\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.025\"}"
            ),
            "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.025\"} 1"
        );
        assert_eq!(
            line(
                &text,
                "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.05\"}"
            ),
            "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"0.05\"} 2"
        );
        assert_eq!(
            line(
                &text,
                "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"+Inf\"}"
            ),
            "docsnap_tool_latency_seconds_bucket{tool=\"search_docs\",le=\"+Inf\"} 2"
        );
        assert_eq!(
            line(&text, "docsnap_reloads_total "),
            "docsnap_reloads_total 1"
        );
        assert_eq!(
            line(&text, "docsnap_rejected_artifacts_total "),
            "docsnap_rejected_artifacts_total 2"
        );
        // Every sample line belongs to a declared metric.
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(
                declared.iter().any(|d| name == *d
                    || name
                        .strip_prefix(d)
                        .is_some_and(|s| ["_bucket", "_sum", "_count"].contains(&s))),
                "{l}"
            );
        }
    }

    #[test]
    fn label_values_are_escaped_and_times_parsed() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(unix_time("1970-01-01T00:01:40Z"), Some(100));
        assert_eq!(unix_time("yesterday"), None);
    }
}
