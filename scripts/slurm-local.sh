#!/usr/bin/env bash
# A real single-node Slurm on this machine, for the scale-out tests (tests/python/test_scaleout_slurm.py):
# Debian's slurm-wlm and munge, slurmctld + slurmd on localhost, everything (configuration, munge key
# and socket, state, logs, pid files) in one folder, on free ports, so that two instances never meet.
#
#   scripts/slurm-local.sh install      # apt-get install slurm-wlm munge when missing (root)
#   scripts/slurm-local.sh start DIR    # prints SLURM_CONF=DIR/slurm.conf once the node is idle
#   scripts/slurm-local.sh stop DIR     # stops the daemons started there
#
# Exit codes: 0 done; 3 slurm-wlm/munge are missing and cannot be installed here (not root, or apt
# failed: the tests skip with this script's message); anything else is a failure. The configuration
# avoids systemd and cgroups (proctrack/linuxproc, task/none); jobs run as the caller (root).
set -euo pipefail
cmd=${1:?usage: slurm-local.sh install | start DIR | stop DIR}

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "slurm-local: slurm-wlm and munge are not installed and this is not root: cannot apt-get install them" >&2
        exit 3
    fi
    echo "slurm-local: installing slurm-wlm and munge (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    local apt=(apt-get -o DPkg::Lock::Timeout=300 install -y -q slurm-wlm munge)
    if ! "${apt[@]}" >/dev/null 2>&1; then
        apt-get update -q >/dev/null 2>&1 || true
        "${apt[@]}" >/dev/null 2>&1 || {
            echo "slurm-local: apt-get install slurm-wlm munge failed" >&2
            exit 3
        }
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

alive() {
    local p
    for p; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}

stop() {
    local dir name pids=() pid
    dir=$(cd "$1" 2>/dev/null && pwd) || return 0
    for name in slurmd slurmctld munged; do
        [ -f "$dir/$name.pid" ] && pids+=("$(cat "$dir/$name.pid")")
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    kill "${pids[@]}" 2>/dev/null || true   # all at once: each takes about 2 s to stop
    for _ in $(seq 1 40); do
        alive "${pids[@]}" || break
        sleep 0.1
    done
    kill -9 "${pids[@]}" 2>/dev/null || true
    rm -f "$dir"/{slurmd,slurmctld,munged}.pid
    # Job steps (slurmstepd) outlive slurmd by design, and the jobs under them (batch script, srun,
    # the task) outlive their slurmstepd: srun waits for a controller that is gone, for ever. Every
    # process of this instance carries its SLURM_CONF from the start (jobs get the submitter's
    # environment); the ones of this script and its callers are spared.
    local keep=" " env
    pid=$$
    while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
        keep+="$pid "
        pid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ' || true)
    done
    for env in $(grep -lzxF "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null || true); do
        pid=${env#/proc/}
        pid=${pid%/environ}
        [[ $keep == *" $pid "* ]] || kill -9 "$pid" 2>/dev/null || true
    done
}

start() {
    local dir host ctld_port slurmd_port
    dir=$(mkdir -p "$1" && cd "$1" && pwd)
    host=$(hostname -s)
    mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
    chmod 700 "$dir/munge"
    [ -f "$dir/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge/munge.key"; chmod 400 "$dir/munge/munge.key"; }
    ctld_port=$(free_port)
    slurmd_port=$(free_port)
    cat > "$dir/slurm.conf" <<EOF
ClusterName=kproftest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ReturnToService=2
KillWait=2
MinJobAge=30
NodeName=$host CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$dir/slurm.conf"
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --log-file="$dir/log/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munge/munged.seed"
    slurmctld -c   # -c: no state from an earlier start in DIR
    slurmd -c
    for _ in $(seq 1 200); do
        if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
            echo "SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.1
    done
    echo "slurm-local: the node did not become idle within 20 s; sinfo says: $(sinfo 2>&1 | tr '\n' ' ')" >&2
    tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
    stop "$dir"
    exit 1
}

case "$cmd" in
    install) install ;;
    start) install; start "${2:?start DIR}" ;;
    stop) stop "${2:?stop DIR}" ;;
    *) echo "usage: slurm-local.sh install | start DIR | stop DIR" >&2; exit 2 ;;
esac
