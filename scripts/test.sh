#!/usr/bin/env bash
# Everything the tests need on a fresh machine, then the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tests.sh
cargo test --workspace --locked
