#!/usr/bin/env bash
# A Slurm cluster on this one machine, for `cairn run --on slurm` and its tests: munge, a
# slurmctld, and two slurmd nodes (`cairn1`, `cairn2`, each a slurmd on its own port, both
# on this host) in the default partition `cairn`, `cairn1` alone in partition `solo` and
# `cairn2` alone in partition `own`. `cairn1` uses this machine's Docker Engine; `cairn2` has
# an engine of its own (scripts/node-engine.sh): a Slurm TaskProlog, the way an admin sets a
# per-node environment, gives its jobs `DOCKER_HOST=unix:///run/cairn-node2/docker.sock`.
# No systemd is assumed: the daemons are started directly. Idempotent: a running cluster
# with this configuration is left as it is.
set -euo pipefail

need=()
[ -x /usr/sbin/munged ] || need+=(munge)
[ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
[ -x /usr/sbin/slurmd ] || need+=(slurmd)
command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
if [ ${#need[@]} -gt 0 ]; then
  echo "slurm-setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# munge: a key, its directories, the daemon
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  echo "slurm-setup: starting munged"
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 1 20); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
fi

# node cairn2's own container engine, and the task prolog that points its jobs at it
bash "$(dirname "$0")/node-engine.sh"
mkdir -p /etc/slurm
prolog=$(cat <<'PROLOG'
#!/bin/sh
# written by cairn's scripts/slurm-setup.sh: the per-node environment of a job's tasks
# (Slurm reads `export NAME=value` lines from a TaskProlog's output)
case "$SLURMD_NODENAME" in
  cairn2) echo "export DOCKER_HOST=unix:///run/cairn-node2/docker.sock" ;;
esac
PROLOG
)
if [ "$(cat /etc/slurm/cairn-task-prolog.sh 2>/dev/null)" != "$prolog" ]; then
  printf '%s\n' "$prolog" >/etc/slurm/cairn-task-prolog.sh
fi
chmod 0755 /etc/slurm/cairn-task-prolog.sh

cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
conf=$(cat <<CONF
# written by cairn's scripts/slurm-setup.sh: a test cluster on this one machine
ClusterName=cairn
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/backfill
# schedule a batch job when it is submitted: by default Slurm may put it off up to 3 s
# (batch_sched_delay), and a block of measurements is one short job (cairn bench --slurm)
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
SlurmctldPort=6817
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmdSpoolDir=/var/spool/slurmd/%n
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# a node that stops answering is declared down after 10 s (the fault test kills one)
SlurmdTimeout=10
MessageTimeout=10
MinJobAge=600
KillWait=5
InactiveLimit=0
# per-node job environment (cairn2's own Docker Engine)
TaskProlog=/etc/slurm/cairn-task-prolog.sh
NodeName=cairn1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=17001 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
NodeName=cairn2 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=17002 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=cairn Nodes=cairn1,cairn2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
# one node alone: a single-node cluster for the tests that need no second node
PartitionName=solo Nodes=cairn1 MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
# the node with its own container engine, alone: images must be shipped to it
PartitionName=own Nodes=cairn2 MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
CONF
)
mkdir -p /etc/slurm /var/spool/slurmctld /var/log/slurm /var/spool/slurmd/cairn1 /var/spool/slurmd/cairn2
changed=0
if [ "$(cat /etc/slurm/slurm.conf 2>/dev/null)" != "$conf" ]; then
  printf '%s\n' "$conf" >/etc/slurm/slurm.conf
  changed=1
fi

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if [ $changed = 1 ] && running /run/slurmctld.pid; then
  scontrol reconfigure || true
fi
if ! running /run/slurmctld.pid; then
  echo "slurm-setup: starting slurmctld"
  /usr/sbin/slurmctld
fi
for node in cairn1 cairn2; do
  if ! running /run/slurmd-$node.pid; then
    echo "slurm-setup: starting slurmd $node"
    /usr/sbin/slurmd -N "$node"
  fi
done
# each node takes jobs (a `*` after its state means slurmctld cannot reach its slurmd), and
# nodes left down (e.g. by a killed test) come back; a node that does not within 30 s is
# reported with its slurmd's log
for node in cairn1 cairn2; do
  for i in $(seq 1 60); do
    state=$(sinfo -h -n "$node" -o '%t' 2>/dev/null | head -n 1 || true)
    case "$state" in
      down*|drain*|fail*) scontrol update nodename="$node" state=resume 2>/dev/null || true ;;
      # registered and taking jobs (a `*` would mean slurmctld cannot reach it)
      idle|alloc|mix|comp) break ;;
    esac
    if [ "$i" = 60 ]; then
      # said, not fatal: the Slurm tests heal a node that stays unreachable, and say so
      echo "slurm-setup: warning: node $node does not take jobs after 30 s (state '$state'); its slurmd log ends:" >&2
      tail -n 20 "/var/log/slurm/slurmd-$node.log" >&2 || true
    fi
    sleep 0.5
  done
done
sinfo
