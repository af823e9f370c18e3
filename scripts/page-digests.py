#!/usr/bin/env python3
"""Page digests that training questions are written from.

    scripts/page-digests.py SNAPSHOTS OUT_DIR [--halves]
    scripts/page-digests.py SNAPSHOTS OUT_DIR --leapview WRITERS

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
"""
import glob, json, os, re, sys


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
    versions = sorted(glob.glob(f"{snaps}/leapview/*/"), key=lambda v: [
        int(x) if x.isdigit() else x for x in re.split(r"[.]", v.rstrip("/").split("/")[-1])
    ])
    for v in reversed(versions):
        pages, heads = read_artifact(sorted(glob.glob(v + "*/"))[-1])
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


def main():
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
        d = sorted(glob.glob(f"{snaps}/{src}/*/*/"))[-1]
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
