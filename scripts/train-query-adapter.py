#!/usr/bin/env python3
"""Learn a query adapter (see src/embed/adapter.rs) for some sources.

    scripts/train-query-adapter.py --artifacts DIR --model DIR \
        --questions adapters/training-questions.jsonl \
        --sources claude-code,codex,cursor,mcp --out adapters/.../agent-docs.safetensors

The adapter is a dims x dims matrix W, started at the identity, that moves a
question's vector q to W q. It is fitted so that the training questions'
answer pages come first among all the sources' pages by cosine (softmax
cross-entropy over every page, Adam), with an L2 pull back to the identity
(--lam) so that questions unlike the training ones are moved little.

The training questions must never be the evaluation's: they are written per
page in users' words (adapters/README.md says how). Needs numpy; runs the
`adapter_data` example to read the artifacts' page vectors and embed the
questions exactly as docsnap does.
"""
import argparse, json, os, struct, subprocess, sys, tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--sources", required=True, help="comma-separated source ids")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lam", type=float, default=0.005,
                    help="pull to the identity (0.005: chosen on dev and crosswise, adapters/README.md)")
    ap.add_argument("--scale", type=float, default=20.0, help="softmax temperature")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.01)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(
            ["cargo", "run", "--quiet", "--release", "--example", "adapter_data", "--",
             a.artifacts, a.model, a.questions, a.sources, tmp],
            check=True, cwd=root)
        meta = json.load(open(os.path.join(tmp, "meta.json")))
        d = meta["dims"]
        P = np.fromfile(os.path.join(tmp, "pages.f32"), dtype="<f4").reshape(-1, d).astype(np.float64)
        X = np.fromfile(os.path.join(tmp, "questions.f32"), dtype="<f4").reshape(-1, d).astype(np.float64)
    y = np.array(meta["answers"])
    if len(y) == 0:
        sys.exit(f"{a.questions}: no question names a page of {a.sources}")
    W = train(X, y, P, a.lam, a.scale, a.iters, a.lr)
    before, after = rank_of(X, y, P, None), rank_of(X, y, P, W)
    print(f"{len(y)} questions on {len(P)} pages; training-set MRR@10 "
          f"{mrr(before):.3f} -> {mrr(after):.3f} (fitted, not a measure)", file=sys.stderr)
    write(a.out, W.astype("<f4"), meta["vectors_sha256"])


def train(X, y, P, lam, scale, iters, lr):
    n, d = X.shape
    W = np.eye(d)
    onehot = np.zeros((n, len(P)))
    onehot[np.arange(n), y] = 1
    m1 = np.zeros_like(W)
    m2 = np.zeros_like(W)
    b1, b2 = 0.9, 0.999
    for t in range(1, iters + 1):
        Z = X @ W.T
        norm = np.linalg.norm(Z, axis=1, keepdims=True)
        Zn = Z / norm
        S = scale * (Zn @ P.T)
        S -= S.max(1, keepdims=True)
        E = np.exp(S)
        Pr = E / E.sum(1, keepdims=True)
        G = scale * (Pr - onehot) @ P  # d loss / d Zn
        Gz = (G - (G * Zn).sum(1, keepdims=True) * Zn) / norm
        gW = Gz.T @ X / n + lam * (W - np.eye(d))
        m1 = b1 * m1 + (1 - b1) * gW
        m2 = b2 * m2 + (1 - b2) * gW * gW
        W -= lr * (m1 / (1 - b1 ** t)) / (np.sqrt(m2 / (1 - b2 ** t)) + 1e-8)
    return W


def rank_of(X, y, P, W):
    Z = X if W is None else X @ W.T
    S = (Z / np.linalg.norm(Z, axis=1, keepdims=True)) @ P.T
    best = S[np.arange(len(y)), y]
    return (S > best[:, None]).sum(1) + 1


def mrr(ranks):
    return float(np.where(ranks <= 10, 1.0 / ranks, 0.0).mean())


def write(path, W, vectors_sha256):
    """safetensors: header length (u64 LE), JSON header, raw data."""
    data = W.tobytes()
    header = {
        "__metadata__": {"vectors_sha256": vectors_sha256},
        "weight": {"dtype": "F32", "shape": list(W.shape), "data_offsets": [0, len(data)]},
    }
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
