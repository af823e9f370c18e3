#!/usr/bin/env python3
"""Baseline: plain SQLite FTS5 (bm25, porter) over the same sections docsnap
indexes, scored on the same eval queries with the same page matching as
mcp_eval.py (hit@1, hit@5, MRR@10 per family). For comparison only.

usage: scripts/fts5_baseline.py SNAPSHOTS_DIR QUERIES.jsonl
"""
import glob, json, os, re, sqlite3, sys
from urllib.parse import unquote

def key(u):
    u = u.split('#')[0].split('?')[0]
    u = re.sub(r'^https?://', '', u)
    host, _, path = u.partition('/')
    path = unquote('/' + path)
    for suf in ('index.html', '.html', '.md'):
        if path.endswith(suf):
            path = path[: -len(suf)]
            break
    return host.lower() + path.rstrip('/')

def newest(root):
    out = {}
    for m in glob.glob(os.path.join(root, '*', '*', '*', 'manifest.json')):
        d = os.path.dirname(m)
        sv = os.path.dirname(d)
        if os.path.basename(d).startswith('.'):
            continue
        out[sv] = max(out.get(sv, d), d)
    return list(out.values())

def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('snapshots', help='artifacts directory (as `docsnap build --out` writes it)')
    ap.add_argument('queries', help='questions, one JSON object a line (as mcp_eval.py reads them)')
    a = ap.parse_args()
    root, qfile = a.snapshots, a.queries
    if not newest(root):
        sys.exit(f"fts5_baseline: no artifact (*/*/*/manifest.json) under {root}")
    if not os.path.isfile(qfile):
        sys.exit(f"fts5_baseline: no such questions file: {qfile}")
    db = sqlite3.connect(':memory:')
    db.execute("create virtual table s using fts5(title, heading, body, url unindexed, product unindexed, version unindexed, tokenize='porter unicode61')")
    for d in newest(root):
        man = json.load(open(os.path.join(d, 'manifest.json')))
        titles = {}
        for l in open(os.path.join(d, 'pages.jsonl')):
            p = json.loads(l); titles[p['url']] = p['title']
        rows = []
        for l in open(os.path.join(d, 'sections.jsonl')):
            s = json.loads(l)
            rows.append((titles.get(s['url'], ''), ' '.join(s['heading_path'][1:]), s['text'], s['url'], man['product'], man['version']))
        db.executemany('insert into s values (?,?,?,?,?,?)', rows)
    fam = {}
    for l in open(qfile):
        q = json.loads(l)
        if not q['answerable']:
            continue
        a = q['args']
        prod = a.get('product') or {'godot': 'godot', 'leapview': 'leapview'}.get(q['family'])
        words = re.findall(r'\w+', a['query'])
        if not words:
            continue
        match = ' OR '.join('"%s"' % w for w in words)
        sql = 'select url from s where s match ?'
        args = [match]
        if prod:
            sql += ' and product = ?'; args.append(prod)
        elif q['family'] == 'agent-docs':
            sql += " and product in ('claude-code','cursor','codex','mcp')"
        if q['family'] == 'leapview':
            sql += " and version = '3.2'"
        sql += ' order by bm25(s, 3.0, 2.0, 1.0) limit 200'
        pages = []
        for (u,) in db.execute(sql, args):
            k = key(u)
            if k not in pages:
                pages.append(k)
        want = {key(u) for u in q['expect']}
        rank = next((i + 1 for i, p in enumerate(pages[:10]) if p in want), None)
        f = fam.setdefault(q['family'], [0, 0, 0, 0.0])
        f[0] += 1; f[1] += rank == 1; f[2] += bool(rank and rank <= 5); f[3] += 1 / rank if rank else 0
    print('family        n  hit@1  hit@5  MRR@10   (SQLite FTS5 bm25, porter)')
    tot = [0, 0, 0, 0.0]
    for k, (n, h1, h5, mrr) in sorted(fam.items()):
        print(f'{k:<12}{n:>4}  {h1/n:.3f}  {h5/n:.3f}  {mrr/n:.3f}')
        tot = [tot[0] + n, tot[1] + h1, tot[2] + h5, tot[3] + mrr]
    n = tot[0]
    print(f'{"all":<12}{n:>4}  {tot[1]/n:.3f}  {tot[2]/n:.3f}  {tot[3]/n:.3f}')

main()
