#!/usr/bin/env python3
"""Split the training questions in two folds, for weights chosen on questions
the adapters never saw.

    scripts/training-folds.py adapters/training-questions.jsonl OUTDIR [--config sources.yaml]

Writes OUTDIR/fold-a.jsonl and fold-b.jsonl (training format, `{"query",
"url"}`: a page's first question goes to a, its second to b, and so on) and
OUTDIR/eval-a.jsonl and eval-b.jsonl (the same questions as `mcp_eval.py` /
`benches/ablation.rs` queries, the question's page expected).

Why: the dev set's agent-docs questions are nearly all found by their words,
so it cannot tell how much weight the cosine of an adapted question deserves.
The training questions are in users' words and ten times as many, but the
adapters learned them by heart. Learn adapters from fold a, rank fold b's
questions with them (and the other way round), and every question is
measured by adapters that never saw it, each page still having one question
in training, as in use. BENCHMARKS.md ("The cosine weighed by questions the
adapters never saw", session 36) has the commands and what was chosen.
"""
import argparse, collections, json, os, sys

import yaml

# The search tool of each tool family (../shared/seeds): what a question of
# that family is asked through.
SEARCH_TOOL = {"agent-docs": "search_docs", "godot": "search_godot_docs",
               "leapview": "docs_search"}


def families(config):
    """(URL prefix, tool family) for every version scope in sources.yaml."""
    out = []
    for src in yaml.safe_load(open(config))["sources"]:
        for version in src["versions"]:
            for prefix in version.get("scope", {}).get("prefixes", [version["root"]]):
                out.append((prefix, src["tools"]))
    return sorted(out, key=lambda p: -len(p[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions")
    ap.add_argument("outdir")
    ap.add_argument("--config", default="sources.yaml")
    a = ap.parse_args()
    src, out = a.questions, a.outdir
    scopes = families(a.config)
    # Every question is placed before anything is written: a URL outside
    # the sources stops the run with no fold files half made.
    rows = {name: [] for name in ("fold-a", "fold-b", "eval-a", "eval-b")}
    seen = collections.Counter()
    for n, line in enumerate(open(src), 1):
        row = json.loads(line)
        query, url = row["query"], row["url"]
        family = next((f for p, f in scopes if url.startswith(p)), None)
        if family is None:
            sys.exit(f"{src}:{n}: {url} is in no source's scope ({a.config})")
        fold = "ab"[seen[url] % 2]
        seen[url] += 1
        rows[f"fold-{fold}"].append({"query": query, "url": url})
        rows[f"eval-{fold}"].append({
            "id": f"train-{n:04d}",
            "family": family,
            "tool": SEARCH_TOOL[family],
            "args": {"query": query},
            "expect": [url],
            "answerable": True,
        })
    os.makedirs(out, exist_ok=True)
    for name, items in rows.items():
        with open(os.path.join(out, f"{name}.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in items)
    print(f"fold a: {len(rows['fold-a'])} questions, fold b: {len(rows['fold-b'])} "
          f"({len(seen)} pages)", file=sys.stderr)


if __name__ == "__main__":
    main()
