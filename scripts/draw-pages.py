#!/usr/bin/env python3
"""Draw pages at random for a blind sample's question writers.

    scripts/draw-pages.py SNAPSHOTS OUT_DIR --seed N --prefix b7 \
        [--godot 60] [--agent 60] [--leapview 8] [--writers 4] \
        [--exclude SAMPLE.jsonl ...]

A blind sample is a measure only if nobody chose its pages: writers who
pick pages pick the ones that answer questions well. This draws them from
the newest artifact of each source under SNAPSHOTS (Godot, the agent-docs
products pooled, LeapView's newest version), leaving out every page an
`--exclude` sample expects and, where sources.yaml gives a source
`editions`, every edition but the newest (the older edition of a page is
the same page). Each drawn page gets an id (PREFIX + g/a/l + number, `hard-`
before it for the users'-words half, alternating) and, for agent-docs,
whether the question passes `product` (alternating again, so that half of
them leave the product to the ranking). The list is dealt into WRITERS
files OUT_DIR/pages-N.jsonl, one `{"id", "family", "tool", "url",
"product", "style", "product_arg"}` a line.
"""
import argparse, json, os, random

import snapshot_dirs

TOOLS = {"godot": "search_godot_docs", "agent-docs": "search_docs", "leapview": "docs_search"}
AGENT = ["claude-code", "codex", "cursor", "mcp"]


def newest(snaps, source):
    """Pages of the newest artifact of `source` (its newest version)."""
    d = snapshot_dirs.newest_artifact(snapshot_dirs.versions(snaps, source)[-1])
    return [json.loads(line)["url"] for line in open(d + "pages.jsonl")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshots")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--godot", type=int, default=60)
    ap.add_argument("--agent", type=int, default=60)
    ap.add_argument("--leapview", type=int, default=8)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--exclude", nargs="*", default=[])
    a = ap.parse_args()
    taken = set()
    for f in a.exclude:
        for line in open(f):
            if line.strip():
                taken.update(u.split("#")[0] for u in json.loads(line).get("expect", []))
    editions = snapshot_dirs.edition_patterns()

    def pages(source):
        urls = newest(a.snapshots, source)
        pat = editions.get(source)
        if pat:
            found = [m.group(1) for m in map(pat.search, urls) if m]
            last = max(found) if found else None
            urls = [u for u in urls if not (m := pat.search(u)) or m.group(1) == last]
        return sorted(u for u in urls if u not in taken)

    rng = random.Random(a.seed)
    drawn = []
    for family, sources, n in [
        ("godot", ["godot"], a.godot),
        ("agent-docs", AGENT, a.agent),
        ("leapview", ["leapview"], a.leapview),
    ]:
        pool = [(s, u) for s in sources for u in pages(s)]
        if n > len(pool):
            raise SystemExit(f"{family}: {n} pages asked for, {len(pool)} left to draw")
        for k, (source, url) in enumerate(rng.sample(pool, n), 1):
            hard = k % 2 == 0
            drawn.append({
                "id": f"{'hard-' if hard else ''}{a.prefix}{family[0]}{k:03d}",
                "family": family,
                "tool": TOOLS[family],
                "url": url,
                "product": source,
                "style": "users' words" if hard else "docs' words",
                "product_arg": family == "agent-docs" and (k // 2) % 2 == 0,
            })
    os.makedirs(a.out, exist_ok=True)
    rng.shuffle(drawn)
    for w in range(a.writers):
        with open(os.path.join(a.out, f"pages-{w}.jsonl"), "w") as f:
            for d in drawn[w::a.writers]:
                f.write(json.dumps(d) + "\n")
    print(f"{len(drawn)} pages drawn into {a.writers} files")


if __name__ == "__main__":
    main()
