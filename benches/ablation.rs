//! Search quality with each ranking lever turned off in turn: the table in
//! BENCHMARKS.md that the defaults of [`RankConfig`] are argued from.
//!
//! Runs every query of `DOCSNAP_QUERIES` (default
//! `../shared/eval/dev-queries.jsonl`; several files, comma-separated, pool
//! into one sample) in process through the same tool calls
//! the server answers, over the artifacts in `DOCSNAP_ARTIFACTS` (default
//! `snapshots`), with the model of `DOCSNAP_MODEL` when set. Scoring follows
//! `mcp_eval.py`: page-level, hit@5 and MRR@10 per family and for the hard
//! (`hd-*`) questions, unanswerable `search_docs` questions under 0.5,
//! questions answered first whose first score says so (0.5 or more), and
//! result lists whose scores rise somewhere. `mcp_eval.py` stays the
//! reference; this exists to compare settings in one run.

use std::sync::Arc;
use std::time::Instant;

use docsnap::search::rank::{FamilyLevers, RankConfig};
use docsnap::search::Library;
use docsnap::serve::tools::{ToolFamily, ToolRegistry};
use docsnap::util::canonical_page_key;
use serde_json::Value;

struct Query {
    id: String,
    family: String,
    tool: String,
    args: serde_json::Map<String, Value>,
    expect: Vec<String>,
    answerable: bool,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    n: f64,
    hit5: f64,
    rr: f64,
}

fn main() {
    let dir = std::env::var("DOCSNAP_ARTIFACTS").unwrap_or_else(|_| "snapshots".into());
    let queries = std::env::var("DOCSNAP_QUERIES")
        .unwrap_or_else(|_| "../shared/eval/dev-queries.jsonl".into());
    if !std::path::Path::new(&dir).is_dir() {
        // `cargo test --all-targets` runs benches once too; with nothing
        // built there is nothing to measure.
        eprintln!("no artifacts at {dir}: run `docsnap build` first (or set DOCSNAP_ARTIFACTS); nothing measured");
        return;
    }
    let model = std::env::var("DOCSNAP_MODEL")
        .ok()
        .filter(|m| !m.is_empty())
        .map(|m| {
            Arc::new(
                docsnap::embed::Embedder::load(std::path::Path::new(&m))
                    .unwrap_or_else(|e| panic!("DOCSNAP_MODEL {m}: {e}"))
                    // Every row asks the same questions: without this the
                    // rows after the first would time a lookup, not a query.
                    .with_query_cache(0),
            )
        });
    let (mut lib, warnings) = Library::load_dir_with(std::path::Path::new(&dir), model.clone())
        .unwrap_or_else(|e| panic!("loading {dir}: {e}"));
    for w in warnings {
        eprintln!("warning: {w}");
    }
    // Several files, comma-separated, are one pooled sample (the set levers
    // are chosen on: ARCHITECTURE.md, `benches/`); a question id twice is
    // refused, so no question counts double.
    let text: String = queries
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}")) + "\n")
        .collect();
    let qs: Vec<Query> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("query line is JSON");
            Query {
                id: v["id"].as_str().unwrap_or_default().into(),
                family: v["family"].as_str().unwrap_or_default().into(),
                tool: v["tool"].as_str().unwrap_or_default().into(),
                args: v["args"].as_object().cloned().unwrap_or_default(),
                expect: v["expect"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|u| u.as_str())
                            .map(canonical_page_key)
                            .collect()
                    })
                    .unwrap_or_default(),
                answerable: v["answerable"].as_bool().unwrap_or(true),
            }
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    if let Some(q) = qs.iter().find(|q| !ids.insert(q.id.as_str())) {
        panic!("{queries}: question id {} appears twice", q.id);
    }
    let reg = ToolRegistry::new(ToolFamily::ALL);
    let shipped = RankConfig::default();
    let lexical = RankConfig {
        agent_docs: FamilyLevers {
            dense: 0.0,
            cosine: 0.0,
            ..shipped.agent_docs
        },
        godot: FamilyLevers {
            dense: 0.0,
            cosine: 0.0,
            ..shipped.godot
        },
        leapview: FamilyLevers {
            dense: 0.0,
            cosine: 0.0,
            ..shipped.leapview
        },
        ..shipped.clone()
    };
    let mut variants: Vec<(&str, RankConfig)> = vec![
        ("shipped defaults", shipped.clone()),
        ("lexical only (no dense)", lexical.clone()),
        (
            "lexical, no pseudo-relevance feedback",
            RankConfig {
                agent_docs: FamilyLevers {
                    feedback: 0.0,
                    ..lexical.agent_docs
                },
                godot: FamilyLevers {
                    feedback: 0.0,
                    ..lexical.godot
                },
                leapview: FamilyLevers {
                    feedback: 0.0,
                    ..lexical.leapview
                },
                ..lexical.clone()
            },
        ),
        (
            "lexical, no typo tolerance",
            RankConfig {
                typos: false,
                ..lexical.clone()
            },
        ),
        (
            "old names the docs declare not mapped to the new (no aliases)",
            RankConfig {
                aliases: false,
                ..shipped.clone()
            },
        ),
        (
            "questions not moved by the sources' query adapters",
            RankConfig {
                query_adapters: false,
                ..shipped.clone()
            },
        ),
        (
            "lexical, split sections not units",
            RankConfig {
                units: false,
                ..lexical.clone()
            },
        ),
        (
            "lexical, no page union",
            RankConfig {
                page_union: 0.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, coverage power 1",
            RankConfig {
                coverage_power: 1.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, no link prior",
            RankConfig {
                inlink_weight: 0.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, scores not read from the questions asked (before session 46)",
            RankConfig {
                asked_scores: 0.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, scores not capped",
            RankConfig {
                monotone_scores: false,
                ..lexical.clone()
            },
        ),
        (
            "lexical, named product not boosted",
            RankConfig {
                named_product_boost_lexical: 1.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, areas not lowered (session 42)",
            RankConfig {
                other_area: 1.0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, class pages before their own tutorials (session 43)",
            RankConfig {
                tutorials_first: 0,
                ..lexical.clone()
            },
        ),
        (
            "lexical, pages not ranked by the words of their questions (before session 45)",
            RankConfig {
                agent_docs: FamilyLevers {
                    asked_words_lexical: 0.0,
                    ..lexical.agent_docs
                },
                godot: FamilyLevers {
                    asked_words_lexical: 0.0,
                    ..lexical.godot
                },
                leapview: FamilyLevers {
                    asked_words_lexical: 0.0,
                    ..lexical.leapview
                },
                ..lexical.clone()
            },
        ),
        (
            "lexical, named product ×1.5 (session 11)",
            RankConfig {
                named_product_boost_lexical: 1.5,
                ..lexical.clone()
            },
        ),
        (
            "lexical, agent-docs fields weighted as the others' (title 2.5, description 1)",
            RankConfig {
                agent_docs: FamilyLevers {
                    fields: docsnap::index::FieldWeights::default(),
                    ..lexical.agent_docs
                },
                ..lexical.clone()
            },
        ),
        (
            "lexical, named product ×6",
            RankConfig {
                named_product_boost_lexical: 6.0,
                ..lexical.clone()
            },
        ),
    ];
    // Extra settings to try: DOCSNAP_ABLATION="name:key=value,key=value;…",
    // each applied over the lexical defaults (keys as in RankConfig).
    let extra = std::env::var("DOCSNAP_ABLATION").unwrap_or_default();
    let mut extra_names: Vec<String> = Vec::new();
    let mut extra_cfgs: Vec<RankConfig> = Vec::new();
    for spec in extra.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, kvs) = spec.split_once(':').unwrap_or((spec, ""));
        let mut c = lexical.clone();
        for kv in kvs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("{kv}: want key=value"));
            set(&mut c, k.trim(), v.trim());
        }
        extra_names.push(name.trim().to_string());
        extra_cfgs.push(c);
    }
    if !extra_names.is_empty() {
        variants.truncate(2);
    }
    for (n, c) in extra_names.iter().zip(extra_cfgs) {
        variants.push((n.as_str(), c));
    }
    // Per-query ranks of every setting, for comparing settings query by query.
    let mut ranks_out = std::env::var("DOCSNAP_ABLATION_RANKS")
        .ok()
        .map(|p| std::fs::File::create(&p).unwrap_or_else(|e| panic!("{p}: {e}")));
    if model.is_some() {
        let fixed = |l: FamilyLevers| FamilyLevers {
            cosine_adaptive: 0.0,
            ..l
        };
        variants.push((
            "cosine weight fixed (not adaptive)",
            RankConfig {
                agent_docs: fixed(shipped.agent_docs),
                godot: fixed(shipped.godot),
                leapview: fixed(shipped.leapview),
                ..shipped.clone()
            },
        ));
        variants.push((
            "class pages before their own tutorials (before session 43)",
            RankConfig {
                tutorials_first: 0,
                ..shipped.clone()
            },
        ));
        let unasked = |l: FamilyLevers| FamilyLevers { asked: 0.0, ..l };
        variants.push((
            "pages compared without the questions asked of them (before session 39)",
            RankConfig {
                agent_docs: unasked(shipped.agent_docs),
                godot: unasked(shipped.godot),
                leapview: unasked(shipped.leapview),
                ..shipped.clone()
            },
        ));
        variants.push((
            "a page's question cosine from its nearest question alone (before session 40)",
            RankConfig {
                godot: FamilyLevers {
                    asked_second: 0.0,
                    ..shipped.godot
                },
                ..shipped.clone()
            },
        ));
        let unworded = |l: FamilyLevers| FamilyLevers {
            asked_words: 0.0,
            ..l
        };
        variants.push((
            "pages not ranked by the words of their questions (before session 45)",
            RankConfig {
                agent_docs: unworded(shipped.agent_docs),
                godot: unworded(shipped.godot),
                leapview: unworded(shipped.leapview),
                ..shipped.clone()
            },
        ));
        variants.push((
            "questions' words relative to the best page's alone (before session 54)",
            RankConfig {
                agent_docs: FamilyLevers {
                    asked_words_covered: 0.0,
                    ..shipped.agent_docs
                },
                godot: FamilyLevers {
                    asked_words: 6.0,
                    asked_words_covered: 0.0,
                    ..shipped.godot
                },
                ..shipped.clone()
            },
        ));
        let unnamed = |l: FamilyLevers| FamilyLevers {
            cosine_named: 0.0,
            ..l
        };
        variants.push((
            "cosine weight kept for a named query (before session 39)",
            RankConfig {
                agent_docs: unnamed(shipped.agent_docs),
                godot: unnamed(shipped.godot),
                leapview: unnamed(shipped.leapview),
                ..shipped.clone()
            },
        ));
        variants.push((
            "candidates not deepened for a poorly covered query",
            RankConfig {
                deep_candidates: 0,
                ..shipped.clone()
            },
        ));
        variants.push((
            "static-model dense weight fixed (not adaptive)",
            RankConfig {
                dense_adaptive: 0.0,
                ..shipped.clone()
            },
        ));
        variants.push((
            "Godot description weighed as the body (1, before session 29)",
            RankConfig {
                godot: FamilyLevers {
                    fields: docsnap::index::FieldWeights::default(),
                    ..shipped.godot
                },
                ..shipped.clone()
            },
        ));
        variants.push((
            "Godot code apart but weighed as its prose (1)",
            RankConfig {
                godot: FamilyLevers {
                    fields: docsnap::index::FieldWeights {
                        code: 1.0,
                        ..shipped.godot.fields
                    },
                    ..shipped.godot
                },
                ..shipped.clone()
            },
        ));
        variants.push((
            "scores not read from the questions asked (before session 46)",
            RankConfig {
                asked_scores: 0.0,
                ..shipped.clone()
            },
        ));
        variants.push((
            "dense only",
            RankConfig {
                agent_docs: FamilyLevers {
                    dense: 1.0,
                    // Page vectors: the lexical rank, at most 1, is noise beside this.
                    cosine: 1e6,
                    ..shipped.agent_docs
                },
                godot: FamilyLevers {
                    dense: 1.0,
                    // Page vectors: the lexical rank, at most 1, is noise beside this.
                    cosine: 1e6,
                    ..shipped.godot
                },
                leapview: FamilyLevers {
                    dense: 1.0,
                    // Page vectors: the lexical rank, at most 1, is noise beside this.
                    cosine: 1e6,
                    ..shipped.leapview
                },
                dense_adaptive: 0.0,
                ..shipped.clone()
            },
        ));
    }
    println!("| setting | agent-docs | godot | leapview | agent-docs hard | godot hard | leapview hard | unanswerable < 0.5 | right first ≥ 0.5 | unordered | mean ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, cfg) in variants {
        lib.rank = cfg;
        let mut fam: std::collections::BTreeMap<String, Tally> = Default::default();
        let (mut un_n, mut un_low, mut unordered) = (0, 0, 0);
        // Scored lists whose first hit is an expected page, and those whose
        // first score says so (0.5 or more).
        let (mut first_n, mut first_high) = (0, 0);
        let t0 = Instant::now();
        for q in &qs {
            let r = reg
                .call(&lib, &q.tool, Some(q.args.clone()))
                .expect("known tool");
            let v = r.structured_content.clone().unwrap_or(Value::Null);
            let list = ["passages", "hits", "matches"]
                .iter()
                .find_map(|k| v[*k].as_array().cloned())
                .unwrap_or_default();
            let scores: Vec<f64> = list.iter().filter_map(|x| x["score"].as_f64()).collect();
            if scores.windows(2).any(|w| w[1] > w[0]) {
                unordered += 1;
            }
            if !q.answerable {
                un_n += 1;
                if scores.first().map(|&s| s < 0.5).unwrap_or(true) {
                    un_low += 1;
                }
                continue;
            }
            let mut pages: Vec<String> = Vec::new();
            for x in &list {
                let u = x["url"].as_str().or(x["uri"].as_str()).unwrap_or_default();
                let k = canonical_page_key(u);
                if !pages.contains(&k) {
                    pages.push(k);
                }
            }
            let rank = pages.iter().take(10).position(|p| q.expect.contains(p));
            if let (Some(0), Some(&s)) = (rank, scores.first()) {
                first_n += 1;
                if s >= 0.5 {
                    first_high += 1;
                }
            }
            if let Some(f) = ranks_out.as_mut() {
                use std::io::Write;
                let r = rank.map(|r| r as i64 + 1).unwrap_or(-1);
                writeln!(f, "{name}\t{}\t{}\t{r}", q.id, q.family).expect("write ranks");
            }
            let mut add = |key: String| {
                let t = fam.entry(key).or_default();
                t.n += 1.0;
                if let Some(r) = rank {
                    t.rr += 1.0 / (r as f64 + 1.0);
                    if r < 5 {
                        t.hit5 += 1.0;
                    }
                }
            };
            add(q.family.clone());
            // mcp_eval.py's rule: hard questions are ids hd-* or hard-*.
            if q.id.starts_with("hd-") || q.id.starts_with("hard-") {
                add(format!("{} hard", q.family));
            }
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3 / qs.len() as f64;
        let cell = |k: &str| {
            fam.get(k)
                .map(|t| format!("{:.3} / {:.3}", t.hit5 / t.n, t.rr / t.n))
                .unwrap_or_else(|| "–".into())
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {un_low}/{un_n} | {first_high}/{first_n} | {unordered} | {ms:.2} |",
            cell("agent-docs"),
            cell("godot"),
            cell("leapview"),
            cell("agent-docs hard"),
            cell("godot hard"),
            cell("leapview hard"),
        );
    }
}

/// Set one [`RankConfig`] field by name (for `DOCSNAP_ABLATION`).
fn set(c: &mut RankConfig, key: &str, value: &str) {
    let f = || -> f64 {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{key}={value}: not a number"))
    };
    let b = || -> bool {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{key}={value}: not true/false"))
    };
    // A family's lever is named `<lever>_<family>` (`cosine_godot`).
    let family = [("_agent_docs", 0), ("_godot", 1), ("_leapview", 2)]
        .into_iter()
        .find_map(|(suffix, i)| key.strip_suffix(suffix).map(|lever| (lever, i)));
    if let Some((lever, i)) = family {
        let l = match i {
            0 => &mut c.agent_docs,
            1 => &mut c.godot,
            _ => &mut c.leapview,
        };
        match lever {
            "dense" => l.dense = f(),
            "cosine" => l.cosine = f(),
            "cosine_adaptive" => l.cosine_adaptive = f(),
            "cosine_named" => l.cosine_named = f(),
            "cosine_lead" => l.cosine_lead = f(),
            "asked" => l.asked = f(),
            "asked_second" => l.asked_second = f(),
            "asked_words" => l.asked_words = f(),
            "asked_words_adaptive" => l.asked_words_adaptive = f(),
            "asked_words_lexical" => l.asked_words_lexical = f(),
            "asked_words_covered" => l.asked_words_covered = f(),
            "feedback" => l.feedback = f(),
            "title" => l.fields.title = f() as f32,
            "heading" => l.fields.heading = f() as f32,
            "desc" => l.fields.desc = f() as f32,
            "code" => l.fields.code = f() as f32,
            _ => panic!("{key}: not a lever of a family"),
        }
        return;
    }
    match key {
        "typos" => c.typos = b(),
        "aliases" => c.aliases = b(),
        "query_adapters" => c.query_adapters = b(),
        "units" => c.units = b(),
        "page_union" => c.page_union = f(),
        "coverage_power" => c.coverage_power = f(),
        "inlink_weight" => c.inlink_weight = f(),
        "monotone_scores" => c.monotone_scores = b(),
        "cosine_scores" => c.cosine_scores = b(),
        "asked_scores" => c.asked_scores = f(),
        "named_members" => c.named_members = b(),
        "namesakes_by_links" => c.namesakes_by_links = b(),
        "deprecated_factor" => c.deprecated_factor = f(),
        "tutorials_first" => c.tutorials_first = f() as usize,
        "tutorials_within" => c.tutorials_within = f(),
        "named_product_boost" => c.named_product_boost = f(),
        "named_product_boost_lexical" => c.named_product_boost_lexical = f(),
        "other_area" => c.other_area = f(),
        "other_variant" => c.other_variant = f(),
        "quoted_phrase" => c.quoted_phrase = f(),
        "dense_adaptive" => c.dense_adaptive = f(),
        "dense_k" => c.dense_k = f(),
        "parts_credit" => c.parts_credit = f(),
        "feedback_pages" => c.feedback_pages = f() as usize,
        "feedback_terms" => c.feedback_terms = f() as usize,
        "feedback_adaptive" => c.feedback_adaptive = f(),
        "deep_candidates" => c.deep_candidates = f() as usize,
        "deep_below" => c.deep_below = f(),
        _ => panic!("{key}: not a RankConfig lever"),
    }
}
