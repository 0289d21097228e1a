#!/usr/bin/env bash
# The main job on a fresh machine: build cairn and run a small real study end to end —
# plans/quickstart.kdl: MariaDB with the system allocator vs jemalloc under sysbench
# oltp_read_only, in Docker containers built from a debootstrap root. First the published
# results (the repository's results/, read only), then the study measured on this machine:
# packed as a bundle and reproduced here into a scratch directory (images built, the dataset
# loaded, every trial measured; about 10 minutes on 2 cores), ending with this machine's
# table and verdicts beside the published ones, cell by cell and claim by claim. A second run
# of the reproduced study is served from its cache. No file of the repository changes.
#
#   bash scripts/demo.sh [WORKDIR]     (default: a new directory under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
cat <<'ANNOUNCE'
cairn demo: a small real study, end to end (plans/quickstart.kdl).
  needs:    root (apt, the Docker Engine), a running or installed Docker Engine, the Rust
            toolchain, a reachable Debian mirror (the base image is debootstrapped from the
            host's apt mirror, or $CAIRN_DEBIAN_MIRROR), and a few GB of disk for images and cache
  installs: debootstrap (apt), if missing; starts the Docker Engine if it is stopped
            (scripts/setup.sh); builds cairn (cargo build --release)
  runs:     MariaDB servers in Docker containers, removed after their trials; the images it
            builds stay in the engine; the study is measured into WORKDIR (default: a new
            directory under /tmp)
  takes:    the one-time release build, then the study measured here: the base image, the
            dataset and 16 to 48 trials of about 20 s each (warmup, run, server start),
            roughly 5 to 15 minutes on a 2-core machine
ANNOUNCE
bash scripts/setup.sh
cargo build --release --locked
cairn=$PWD/target/release/cairn
work=${1:-$(mktemp -d /tmp/cairn-demo.XXXXXX)}
mkdir -p "$work"
$cairn check plans/quickstart.kdl
echo "--- the published results (results/quickstart)"
$cairn results plans/quickstart.kdl
echo "--- the study packed as a bundle, then measured on this machine into $work/here"
$cairn bundle plans/quickstart.kdl -o "$work/quickstart.tar.zst"
rm -rf "$work/here"
$cairn reproduce "$work/quickstart.tar.zst" --into "$work/here"
echo "--- the same run again: everything is served from the cache"
plan=$(find "$work/here/published" -name quickstart.kdl -path '*plans*' -print -quit)
$cairn --results "$work/here/reproduced" run "$plan"
echo "--- this machine's report: $work/here/reproduced/quickstart/ (report.md, report.html, plots, data)"
echo "--- published beside measured here: $work/here/comparison.md"
