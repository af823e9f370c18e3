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
import argparse, collections, json, sys

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
    seen = collections.Counter()
    files = {name: open(f"{out}/{name}.jsonl", "w")
             for name in ("fold-a", "fold-b", "eval-a", "eval-b")}
    counts = collections.Counter()
    for n, line in enumerate(open(src), 1):
        row = json.loads(line)
        query, url = row["query"], row["url"]
        fold = "ab"[seen[url] % 2]
        seen[url] += 1
        family = next((f for p, f in scopes if url.startswith(p)), None)
        if family is None:
            sys.exit(f"{src}:{n}: {url} is in no source's scope ({a.config})")
        files[f"fold-{fold}"].write(json.dumps({"query": query, "url": url}) + "\n")
        files[f"eval-{fold}"].write(json.dumps({
            "id": f"train-{n:04d}",
            "family": family,
            "tool": SEARCH_TOOL[family],
            "args": {"query": query},
            "expect": [url],
            "answerable": True,
        }) + "\n")
        counts[fold] += 1
    for f in files.values():
        f.close()
    print(f"fold a: {counts['a']} questions, fold b: {counts['b']} ({len(seen)} pages)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
