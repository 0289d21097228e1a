#!/usr/bin/env bash
# What the demo needs on a fresh machine, and nothing more: a running Docker Engine (the
# study's servers run in containers) and debootstrap (its base image is built from a Debian
# root, as no registry is assumed). Only the Rust toolchain, apt and a Docker Engine are
# assumed. Needs root for apt and for starting the engine; says what it installs or starts.
# The tests need more: scripts/setup-tests.sh.
set -euo pipefail

need=()
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]} (apt)"
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
