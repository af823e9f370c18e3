#!/usr/bin/env bash
# The one command that runs every test of docsnap (README: "Run the tests").
# Needs ../shared beside the repository; tests start the mirror themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d ../shared/sites ]; then
    echo "scripts/test.sh: ../shared (site mirrors and tools) must sit beside the repository" >&2
    exit 2
fi
cargo test --locked --all-targets
cargo test --locked --doc
