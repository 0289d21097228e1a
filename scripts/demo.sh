#!/usr/bin/env bash
# The main job on a fresh machine: build cairn and run a small real study end to end,
# twice — the second run is served from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked
cairn=target/release/cairn
$cairn check plans/compress.kdl
$cairn run plans/compress.kdl
echo "--- second run: everything is cached"
$cairn run plans/compress.kdl
echo "--- summary"
$cairn cat plans/compress.kdl summary
