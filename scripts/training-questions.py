#!/usr/bin/env python3
"""Merge question writers' files into one training set, minus questions
that nearly repeat an evaluation question or one already kept for the
same page.

    scripts/training-questions.py OUT WRITER.jsonl... --not-like EVAL.jsonl...

A writer's file holds `{"query", "url"}` lines. A question whose words
overlap an evaluation question's by half or more (Jaccard of lower-cased
word sets) is dropped: two people asking about one page phrase it alike
now and then, and a training question that repeats an evaluation question
would make the evaluation read better than docsnap is. A question that nearly
repeats one kept before it for the same page (files in the order given)
is dropped too: it teaches nothing new, and when the set is split in
folds (`scripts/training-folds.py`) the repeat on the other side would
make the crosswise measure read better. Written sorted by URL, then
question.

With --digests DIR, a question about the first URL of one of DIR's
digest blocks (`scripts/page-digests.py --leapview`) is asked of every URL
the block lists: each version that has the page.
"""
import argparse, glob, json, os, re


def words(s):
    return set(re.findall(r"[a-z0-9]+", s.lower()))


def alike(w, others):
    """Whether word set `w` overlaps any of `others` by half or more."""
    return any(len(w & o) / max(1, len(w | o)) >= 0.5 for o in others)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("writers", nargs="+")
    ap.add_argument("--not-like", nargs="+", default=[], metavar="EVAL")
    ap.add_argument("--digests", metavar="DIR")
    a = ap.parse_args()
    also = {}
    if a.digests:
        for path in sorted(glob.glob(os.path.join(a.digests, "digest-*.txt"))):
            for block in open(path).read().split("\n\n"):
                urls = [l[5:] for l in block.splitlines() if l.startswith("URL: ")]
                if urls:
                    also[urls[0]] = urls
    held = []
    for f in a.not_like:
        for line in open(f):
            q = json.loads(line).get("args", {}).get("query")
            if q:
                held.append(words(q))
    kept, dropped, repeats = [], 0, 0
    by_page = {}
    for f in a.writers:
        for n, line in enumerate(open(f), 1):
            if not line.strip():
                continue
            t = json.loads(line)
            if not isinstance(t.get("query"), str) or not isinstance(t.get("url"), str):
                raise SystemExit(f"{f}:{n}: a line needs a string `query` and `url`")
            w = words(t["query"])
            if alike(w, held):
                dropped += 1
                continue
            for url in also.get(t["url"], [t["url"]]):
                page = by_page.setdefault(url, [])
                if alike(w, page):
                    repeats += 1
                    continue
                page.append(w)
                kept.append({"query": t["query"].strip(), "url": url})
    kept.sort(key=lambda t: (t["url"], t["query"]))
    with open(a.out, "w") as f:
        for t in kept:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(f"{len(kept)} questions kept, {dropped} too like an evaluation question, "
          f"{repeats} repeating one kept for the same page")


if __name__ == "__main__":
    main()
