#!/usr/bin/env bash
# What the tests need on a fresh machine: the demo's set-up (scripts/setup.sh: Docker,
# debootstrap), then Debian packages some tests use, and a Slurm cluster on this machine
# for `cairn run --on slurm` and its tests (scripts/slurm-setup.sh: munge, slurmctld, two
# slurmd nodes, a second Docker Engine for node cairn2). Idempotent.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/setup.sh"

need=()
# a plan's own steps (plans/compress.kdl's summary), the node engine's address arithmetic
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v gzip >/dev/null 2>&1 || need+=(gzip)
command -v bc >/dev/null 2>&1 || need+=(bc)
# the process executor's server (host mariadbd, no service is installed or started)
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server-core)
command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client-core)
# the reference client of `just bench` (cairn-workload's vs_sysbench)
[ -x /usr/bin/sysbench ] || need+=(sysbench)
# a server's emulated `link` (tests/e2e/mysql.rs): tc inside the server's network namespace
command -v tc >/dev/null 2>&1 || [ -x /usr/sbin/tc ] || need+=(iproute2)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# on-CPU profiles of a server (cairn-exec's profiler test): perf's sampling of a process
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
# the e2e report test opens report.html in headless Chromium and checks the plots render
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-tests: installing ${need[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

bash "$here/slurm-setup.sh"
