#!/usr/bin/env bash
# A documented manual run (too long for CI: two MariaDB images, ~40 trials): re-run after a
# release. Runs plans/release.kdl (MariaDB 10.11 on bookworm vs 11.8 on trixie) in full, then
# changes only the newer image (one more package) in a copy of the plan, shows what
# `cairn plan` says will run, runs it while the Docker Engine's events are recorded, and
# counts the containers created per image: the older image is not rebuilt and its dataset
# not reloaded, but its trials are measured again beside the newer one's (a comparison uses
# measurements made together), so the older image's containers are exactly its trials
# measured anew. Ends with `cairn history` over both runs.
#
#   bash scripts/release-rerun.sh [WORKDIR]     (default: a new directory under /tmp)
#
# Needs what scripts/demo.sh sets up (scripts/setup.sh, a release build of cairn).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${1:-$(mktemp -d /tmp/cairn-release.XXXXXX)}
cairn=$repo/target/release/cairn
[ -x "$cairn" ] || cargo build --release --locked
mkdir -p "$work/plans" "$work/images"
cp plans/release.kdl "$work/plans/"
cp images/*.kdl "$work/images/"
results=$work/results
echo "--- first run (both releases) into $results"
"$cairn" --results "$results" run "$work/plans/release.kdl"

echo "--- the newer image changes: one more package in mariadb-trixie"
python3 - "$work/images/mariadb.kdl" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = '"libjemalloc2" "libtcmalloc-minimal4t64"\n}'
new = '"libjemalloc2" "libtcmalloc-minimal4t64" "procps"\n}'
assert old in s, "the trixie image's recipe changed: update this script"
open(p, "w").write(s.replace(old, new))
EOF
"$cairn" --results "$results" plan "$work/plans/release.kdl" | tee "$work/plan.txt"

echo "--- second run, the engine's events recorded"
since=$(date +%s)
# in the background for its PID: its containers carry the label cairn.run=run-<pid>-<ticks>
# (other sessions' containers on this engine are not counted)
"$cairn" --results "$results" run "$work/plans/release.kdl" >"$work/run2.txt" 2>&1 &
pid=$!
wait "$pid"
cat "$work/run2.txt"
until=$(date +%s)
docker events --since "$since" --until "$until" --filter type=container --filter event=create \
    --format '{{index .Actor.Attributes "cairn.run"}} {{.Actor.Attributes.image}}' \
    | awk -v run="run-$pid-" 'index($1, run) == 1 {print $2}' | sort | uniq -c | tee "$work/creates.txt"
echo "(containers this run created, by image)"
older=$(awk '$2 ~ /^cairn\/mariadb-bookworm/ {n += $1} END {print n + 0}' "$work/creates.txt")
anew=$(grep -c "anew    trial/ro/mariadb-10.11" "$work/run2.txt" || true)
if [ "$anew" -eq 0 ] || [ "$older" -ne "$anew" ]; then
    echo "FAILED: $older containers of the older image for $anew of its trials measured anew" >&2
    exit 1
fi
echo "the older image: $older containers, one per trial measured anew beside the newer one's; not rebuilt, its dataset not reloaded"
echo "--- history"
"$cairn" --results "$results" history "$work/plans/release.kdl"
