#!/usr/bin/env bash
# A documented manual run (too long for CI: two MariaDB images, ~40 trials): re-run after a
# release. Runs plans/release.kdl (MariaDB 10.11 on bookworm vs 11.8 on trixie) in full, then
# changes only the newer image (one more package) in a copy of the plan, shows what
# `cairn plan` says will run, runs it while the Docker Engine's events are recorded, and
# counts the containers created per image: none may come from the older image. Ends with
# `cairn history` over both runs.
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
if grep -q "cairn/mariadb-bookworm" "$work/creates.txt"; then
    echo "FAILED: a container of the older image was created on the second run" >&2
    exit 1
fi
echo "no container of the older image was created on the second run"
echo "--- history"
"$cairn" --results "$results" history "$work/plans/release.kdl"
