#!/bin/sh
# One measurement: compress $1 at level $CAIRN_PARAM_LEVEL, print JSON with the timing.
set -eu
in="$1"
start=$(date +%s%N)
gzip "-$CAIRN_PARAM_LEVEL" -c "$in" > out.gz
end=$(date +%s%N)
printf '{"level": %s, "pass": %s, "ns": %s, "in_bytes": %s, "out_bytes": %s}\n' \
  "$CAIRN_PARAM_LEVEL" "$CAIRN_PASS" "$((end - start))" "$(wc -c < "$in")" "$(wc -c < out.gz)"
