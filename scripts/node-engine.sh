#!/usr/bin/env bash
# A second Docker Engine on this machine: the own engine of the test cluster's node `cairn2`
# (scripts/slurm-setup.sh points that node's jobs at it), so `cairn run --on slurm` has to
# ship its images there (`docker save` archive in the spool, loaded by the node's worker).
# It has its own data root, exec root, pid file, socket (/run/cairn-node2/docker.sock) and
# bridge on its own subnets, uses the storage driver the main engine uses, and starts with
# no images. It leaves iptables alone (the main engine owns the host's rules; the node's
# containers need no NAT: cairn reaches them on the host's routes or in their namespace).
# Idempotent: an engine that answers on the socket is left as it is.
set -euo pipefail

sock=/run/cairn-node2/docker.sock
root=/var/lib/cairn-node2
exec_root=/run/cairn-node2/exec
log=/var/log/cairn-node2-dockerd.log

answers() { DOCKER_HOST=unix://$sock docker info >/dev/null 2>&1; }

# The main engine's default bridge, put back if an earlier start of this engine deleted it
# (see below): its name, subnet and MTU from the main engine's own record of the network.
mend_main_bridge() {
  local record name subnet gateway mtu
  record=$(docker network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}|{{(index .IPAM.Config 0).Subnet}}|{{(index .IPAM.Config 0).Gateway}}|{{index .Options "com.docker.network.driver.mtu"}}' 2>/dev/null) || return 0
  IFS='|' read -r name subnet gateway mtu <<<"$record"
  [ -n "$name" ] && ! ip link show "$name" >/dev/null 2>&1 || return 0
  # without a recorded gateway the engine takes the subnet's first address
  [ -n "$gateway" ] || gateway=$(python3 -c "import ipaddress,sys; print(next(ipaddress.ip_network(sys.argv[1]).hosts()))" "$subnet")
  echo "node-engine: the main engine's bridge $name was gone; recreating it ($gateway in $subnet)"
  ip link add name "$name" type bridge
  ip addr add "$gateway/${subnet#*/}" dev "$name"
  [ -n "$mtu" ] && ip link set "$name" mtu "$mtu"
  ip link set "$name" up
}

if answers; then
  mend_main_bridge
  exit 0
fi
command -v dockerd >/dev/null 2>&1 || { echo "node-engine: dockerd is not installed"; exit 1; }
# the storage driver that works here is the one the main engine runs with
driver=$(docker info --format '{{.Driver}}' 2>/dev/null || true)
mkdir -p /run/cairn-node2 "$root" "$exec_root"
# its own (empty) configuration: the main engine's daemon.json names the main data root
echo '{}' >/run/cairn-node2/daemon.json
# a leftover of a killed engine would keep the new one from starting
if [ -f /run/cairn-node2/docker.pid ] && ! kill -0 "$(cat /run/cairn-node2/docker.pid)" 2>/dev/null; then
  rm -f /run/cairn-node2/docker.pid "$sock"
fi
# Its network store from an earlier start goes: dockerd, finding a stale default "bridge"
# network in its store while address pools are set, deletes the interface named docker0 —
# the main engine's bridge, whatever `--bridge` says (seen: a restart of this engine left
# every container of the main engine's default network failing with "could not find bridge
# docker0"). The node engine keeps no network worth keeping: cairn makes a run's own.
rm -f "$root/network/files/local-kv.db"
# its own bridge (never the main engine's docker0, which `--bip` alone would readdress)
if ! ip link show cairn-node2 >/dev/null 2>&1; then
  ip link add name cairn-node2 type bridge
fi
# (read into a variable, not piped into `grep -q`: under pipefail, grep leaving at its first
# match can kill `ip` with SIGPIPE, the pipe fails, and the add below then finds the address
# there — "Address already assigned", seen failing CI about one time in three)
addresses=$(ip -4 -o addr show dev cairn-node2)
[[ $addresses == *" 10.213.0.1/24 "* ]] || ip addr add 10.213.0.1/24 dev cairn-node2
ip link set cairn-node2 up
echo "node-engine: starting a second Docker Engine on $sock (storage driver ${driver:-default})"
args=(
  --data-root "$root"
  --exec-root "$exec_root"
  --pidfile /run/cairn-node2/docker.pid
  -H "unix://$sock"
  --bridge cairn-node2
  --default-address-pool base=10.214.0.0/16,size=24
  --iptables=false
  --ip-masq=false
  --mtu 1400
  --cgroup-parent cairn-node2
  --config-file /run/cairn-node2/daemon.json
)
[ -n "$driver" ] && args+=(--storage-driver "$driver")
# setsid: the engine outlives this script and the session that ran it
setsid dockerd "${args[@]}" >>"$log" 2>&1 </dev/null &
for _ in $(seq 1 60); do answers && break; sleep 1; done
answers || { echo "node-engine: the second engine did not start; the end of $log:"; tail -20 "$log"; exit 1; }
mend_main_bridge
