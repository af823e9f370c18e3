#!/usr/bin/env python3
"""Page digests that training questions are written from.

    scripts/page-digests.py SNAPSHOTS OUT_DIR [--halves]
    scripts/page-digests.py SNAPSHOTS OUT_DIR --leapview WRITERS
    scripts/page-digests.py SNAPSHOTS OUT_DIR --siblings WRITERS [PER_SOURCE]

One block per page of every agent-docs and Godot artifact under SNAPSHOTS
(URL, title, description, up to 45 headings, the first 450 characters),
dealt into eight files (OUT_DIR/digest-0.txt ...), four of Godot pages and
four of the agent-docs ones, one per question writer. With --halves each
file is also written as its first and second half (digest-0a.txt,
digest-0b.txt, ...): ~72 pages, what one writer finishes in a session.
adapters/README.md says how the questions were written from them.

With --leapview, one block per page path of every LeapView version instead
(the newest version's page, every version's URL listed under it: the
versions share most pages, and a question about a path is asked of each
version that has it), dealt into WRITERS files (digest-leapview-0.txt ...).

With --siblings, pairs of pages instead: in each agent-docs and Godot
artifact, every page and the page nearest to it by the artifact's page
vectors (`vectors.i8`), the pairs nearest each other first (PER_SOURCE of
them a source, 120 by default, Godot twice that), both pages' blocks one
after the other, dealt into WRITERS files (digest-siblings-0.txt ...).
Such neighbours are what the ranking confuses most (a sibling page of the
same product just above the answer), and a question written from one page
alone seldom says what sets it apart from the other. The same page in two
editions (sources.yaml `editions`) is not a pair.
"""
import json, os, re, sys

import snapshot_dirs


def digest(p, heads):
    """One page's block: what a question writer reads of it."""
    md = re.sub(r"\s+", " ", p["markdown"])[:450]
    hs = [h[:60] for h in heads.get(p["url"], [])][:45]
    return (
        f"TITLE: {p['title']}\n"
        f"DESCRIPTION: {(p.get('description') or '')[:300]}\n"
        f"HEADINGS: {' | '.join(hs)}\nOPENING: {md}\n"
    )


def read_artifact(d):
    """(pages, headings by URL) of the artifact directory `d`."""
    heads = {}
    for line in open(d + "sections.jsonl"):
        s = json.loads(line)
        if s.get("part", 0) != 0 or len(s["heading_path"]) < 2:
            continue
        h = heads.setdefault(s["url"], [])
        if s["heading_path"][-1] not in h:
            h.append(s["heading_path"][-1])
    return [json.loads(line) for line in open(d + "pages.jsonl")], heads


def leapview(snaps, out_dir, writers):
    """Digests of LeapView's page paths, newest version's text first."""
    by_path = {}
    for v in reversed(snapshot_dirs.versions(snaps, "leapview")):
        pages, heads = read_artifact(snapshot_dirs.newest_artifact(v))
        for p in pages:
            path = re.sub(r"^https?://[^/]+/[^/]+/", "", p["url"])
            entry = by_path.setdefault(path, {"urls": [], "text": digest(p, heads)})
            entry["urls"].append(p["url"])
    blocks = [
        "".join(f"URL: {u}\n" for u in e["urls"]) + e["text"]
        for _, e in sorted(by_path.items())
    ]
    for i in range(writers):
        with open(os.path.join(out_dir, f"digest-leapview-{i}.txt"), "w") as f:
            f.write("\n".join(blocks[i::writers]))
    print(f"{len(blocks)} LeapView page paths", file=sys.stderr)


def page_vectors(d):
    """Unit-length rows of the artifact's `vectors.i8` (one a page)."""
    import struct
    import numpy as np
    b = open(d + "vectors.i8", "rb").read()
    if b[:8] != b"DSNPVEC\0":
        raise SystemExit(f"{d}vectors.i8: not a docsnap vector file")
    dims, rows = struct.unpack_from("<IQ", b, 12)
    v = np.frombuffer(b, dtype=np.int8, offset=24 + 4 * rows).reshape(rows, dims)
    v = v.astype(np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)


def siblings(snaps, out_dir, writers, per_source):
    """Digests of page pairs that are each other's near neighbours."""
    import numpy as np
    editions = snapshot_dirs.edition_patterns()
    blocks = []
    for src in ["godot", "claude-code", "codex", "cursor", "mcp"]:
        d = snapshot_dirs.newest_artifact(snapshot_dirs.versions(snaps, src)[-1])
        pages, heads = read_artifact(d)
        v = page_vectors(d)
        if len(v) != len(pages):
            raise SystemExit(f"{d}: {len(v)} vectors for {len(pages)} pages (not page vectors)")
        pat = editions.get(src)
        def key(url):
            m = pat.search(url) if pat else None
            return url if not m else url[: m.start(1)] + url[m.end(1):]
        sim = v @ v.T
        np.fill_diagonal(sim, -1)
        pairs = {}
        for i in range(len(pages)):
            for j in np.argsort(-sim[i])[:3]:
                j = int(j)
                if key(pages[i]["url"]) == key(pages[j]["url"]):
                    continue
                pairs[(min(i, j), max(i, j))] = float(sim[i, j])
                break
        want = per_source * (2 if src == "godot" else 1)
        for (i, j), _ in sorted(pairs.items(), key=lambda x: -x[1])[:want]:
            blocks.append(
                "PAIR\n"
                + "".join(f"URL: {pages[k]['url']}\n" + digest(pages[k], heads) for k in (i, j))
            )
        print(f"{src}: {min(want, len(pairs))} of {len(pairs)} pairs", file=sys.stderr)
    for i in range(writers):
        with open(os.path.join(out_dir, f"digest-siblings-{i}.txt"), "w") as f:
            f.write("\n".join(blocks[i::writers]))


def main():
    if "--siblings" in sys.argv[1:]:
        snaps, out_dir, _, writers, *rest = sys.argv[1:]
        os.makedirs(out_dir, exist_ok=True)
        return siblings(snaps, out_dir, int(writers), int(rest[0]) if rest else 120)
    if "--leapview" in sys.argv[1:]:
        snaps, out_dir, _, writers = sys.argv[1:5]
        os.makedirs(out_dir, exist_ok=True)
        return leapview(snaps, out_dir, int(writers))
    args = [a for a in sys.argv[1:] if a != "--halves"]
    halves = "--halves" in sys.argv[1:]
    snaps, out_dir = args[0], args[1]
    os.makedirs(out_dir, exist_ok=True)
    out = {}
    for src in ["godot", "claude-code", "codex", "cursor", "mcp"]:
        d = snapshot_dirs.newest_artifact(snapshot_dirs.versions(snaps, src)[-1])
        pages, heads = read_artifact(d)
        pages = [f"URL: {p['url']}\n" + digest(p, heads) for p in pages]
        out[src] = pages
    godot = out["godot"]
    agent = out["claude-code"] + out["codex"] + out["cursor"] + out["mcp"]
    chunks = [godot[i::4] for i in range(4)] + [agent[i::4] for i in range(4)]
    for i, c in enumerate(chunks):
        parts = [(f"{i}", c)]
        if halves:
            h = (len(c) + 1) // 2
            parts += [(f"{i}a", c[:h]), (f"{i}b", c[h:])]
        for name, pages in parts:
            with open(os.path.join(out_dir, f"digest-{name}.txt"), "w") as f:
                f.write("\n".join(pages))
    print(f"{len(godot)} Godot pages, {len(agent)} agent-docs pages", file=sys.stderr)


if __name__ == "__main__":
    main()
