#!/bin/bash
# A one-node Slurm cluster on this machine, without systemd, for the sweep tests and for trying
# `lengen sweep --executor slurm` locally. Needs root and Debian's slurmctld, slurmd,
# slurm-client and munge (scripts/setup.sh installs them).
#
#   scripts/slurm-cluster.sh start DIR   # config, state and logs under DIR; prints the env line
#   scripts/slurm-cluster.sh stop DIR    # stops only the daemons it started (by PID)
#   scripts/slurm-cluster.sh env DIR     # export SLURM_CONF=DIR/slurm.conf
#
# Clients need SLURM_CONF exported (the config is not at the default path). There is no
# accounting database: poll squeue rather than sacct.
set -Eeuo pipefail

cmd=${1:-}
dir=${2:-/tmp/lengen-slurm}
conf="$dir/slurm.conf"
node=$(hostname -s)
socket=/run/munge/munge.socket.2
export SLURM_CONF="$conf"

die() { echo "slurm-cluster: $*" >&2; exit 1; }
alive() { [[ -s $dir/$1.pid ]] && kill -0 "$(<"$dir/$1.pid")" 2>/dev/null; }
munge_ok() { [[ -S $socket ]] && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (munged and slurmd need it)"
  for b in munged munge slurmctld slurmd sbatch squeue sinfo scontrol setpriv; do
    command -v "$b" >/dev/null || [[ -x /usr/sbin/$b ]] || die "missing $b: install slurmctld slurmd slurm-client munge"
  done
  mkdir -p "$dir"/{state,spool,log}
  local hw mem cpus
  hw=$(slurmd -C | head -n1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
  cat >"$conf" <<EOF
ClusterName=lengen
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=${LENGEN_SLURM_PORT:-6817}
SlurmdPort=$(( ${LENGEN_SLURM_PORT:-6817} + 1 ))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.daemon.pid
SlurmdPidFile=$dir/slurmd.daemon.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  if ! munge_ok; then
    if [[ ! -s /etc/munge/munge.key ]]; then
      mkdir -p /etc/munge
      mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
    chown -R munge:munge /etc/munge && chmod 0700 /etc/munge && chmod 0600 /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    rm -f "$socket" "$socket.lock"
    setsid setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F \
      >>"$dir/log/munged.out" 2>&1 </dev/null &
    echo $! >"$dir/munged.pid"
    for _ in $(seq 50); do munge_ok && break; sleep 0.1; done
    munge_ok || die "munged did not come up (see $dir/log/munged.out)"
  fi
  alive slurmctld || { setsid /usr/sbin/slurmctld -D -c -i -f "$conf" >>"$dir/log/slurmctld.out" 2>&1 </dev/null &
                       echo $! >"$dir/slurmctld.pid"; }
  alive slurmd || { setsid /usr/sbin/slurmd -D -f "$conf" -N "$node" >>"$dir/log/slurmd.out" 2>&1 </dev/null &
                    echo $! >"$dir/slurmd.pid"; }
  local state=""
  for _ in $(seq 300); do
    if scontrol ping 2>/dev/null | grep -q 'is UP'; then
      state=$(sinfo -h -N -n "$node" -o '%T' 2>/dev/null | head -n1 || true)
      case $state in
        idle|mixed|allocated) echo "export SLURM_CONF=$conf"; return 0 ;;
        drain*|down*) scontrol update NodeName="$node" State=RESUME 2>/dev/null || true ;;
      esac
    fi
    sleep 0.2
  done
  tail -n 20 "$dir"/log/*.log >&2 || true
  die "cluster not ready after 60 s (node state '$state')"
}

stop() {
  if alive slurmctld; then
    local jobs
    jobs=$(squeue -h -o %F 2>/dev/null | sort -u | tr '\n' ' ' || true)
    [[ -z ${jobs// /} ]] || scancel $jobs 2>/dev/null || true
  fi
  for d in slurmd slurmctld munged; do
    if alive "$d"; then
      local pid
      pid=$(<"$dir/$d.pid")
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/$d.pid"
  done
}

case $cmd in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
