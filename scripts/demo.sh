#!/usr/bin/env bash
# The main job on a fresh machine: build cairn and run a small real study end to end —
# plans/quickstart.kdl: MariaDB with the system allocator vs jemalloc under sysbench
# oltp_read_only, in Docker containers built from a debootstrap root (a few minutes the
# first time). Then the same run again, served from the cache, the raw trials, and the
# report (results/quickstart/report.md, report.html, data.csv, series.csv, data.json): the
# throughput table with ratios, CIs and verdicts, and the claim's verdict; it ends listing
# the plot files (plot-scaling.svg and .png).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked
cairn=target/release/cairn
$cairn check plans/quickstart.kdl
$cairn run plans/quickstart.kdl
echo "--- second run: everything is cached"
$cairn run plans/quickstart.kdl
echo "--- results"
$cairn results plans/quickstart.kdl
echo "--- report"
$cairn report plans/quickstart.kdl
