#!/usr/bin/env bash
# Set up a fresh machine for cairn: Debian packages the tests and studies use, and a
# running Docker Engine. Only the Rust toolchain, apt and a Docker Engine are assumed.
set -euo pipefail

need=()
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
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
# the e2e report test opens report.html in headless Chromium and checks the plots render
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The Docker Engine: start it if it is installed but not running.
if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  echo "setup: starting the Docker daemon"
  if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then
    :
  elif command -v service >/dev/null 2>&1 && service docker start >/dev/null 2>&1; then
    :
  else
    (dockerd >/var/log/cairn-dockerd.log 2>&1 &)
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "setup: the Docker daemon did not start (see /var/log/cairn-dockerd.log)"; exit 1; }
fi

# Slurm for `cairn run --on slurm` and its tests: munge, slurmctld and two slurmd nodes on
# this machine (scripts/slurm-setup.sh; idempotent)
bash "$(dirname "$0")/slurm-setup.sh"
