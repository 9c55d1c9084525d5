#!/usr/bin/env bash
# start-local-slurm.sh - start a real Slurm cluster (munged + slurmctld +
# slurmd) on this one machine, talking over loopback only.
#
# cloudai's own test infrastructure: the Slurm tests (marker `slurm`) run against it.
# tests/conftest.py starts it when the suite runs as root without SLURM_CONF, .ci/run
# starts it before the suite. Tested on Debian 12 (bookworm) with slurm-wlm
# 22.05.8-4+deb12u3 and munge 0.5.15-2+deb12u1, as root, no systemd.
#
# Usage (as root, from the repository root):
#   eval "$(bash tools/start-local-slurm.sh [BASEDIR])"      # exports SLURM_CONF
#   sbatch --wrap 'echo hi'; squeue; scontrol show job N; sacct -c -j N
#   bash tools/stop-local-slurm.sh [BASEDIR]
#
# BASEDIR defaults to $LOCAL_SLURM_DIR, else ${TMPDIR:-/tmp}/local-slurm.
# Everything lives under it: etc/slurm.conf, munge/ (key), run/ (socket, pid
# files), log/ (daemon logs + jobcomp.txt), state/, spool/. Clusters in
# different BASEDIRs are independent (two checkouts' suites each start their
# own: tests/conftest.py gives each test session its own BASEDIR).
#
# stdout carries only shell `export` lines (so eval works); progress and
# errors go to stderr. The same lines are written to BASEDIR/env.sh.
#
# Idempotent: daemons already running from this BASEDIR (checked through
# their pid files and /proc/PID/cmdline) are left alone; missing ones are
# started; a changed slurm.conf is applied with `scontrol reconfigure` (a
# change of node count/CPUs needs stop + start). Job/node state in
# BASEDIR/state survives a stop/start unless LOCAL_SLURM_CLEAN=1 is given
# (only honoured while no daemon of this BASEDIR is running).
#
# Optional environment:
#   LOCAL_SLURM_INSTALL=1       apt-get install the packages if missing
#   LOCAL_SLURM_CLEAN=1         wipe state/, spool/ and logs before starting
#   LOCAL_SLURM_TIMEOUT=60      seconds to wait for the node(s) to be idle
#   LOCAL_SLURM_NODES=1         number of slurmd daemons ("fake nodes"); >1
#                               uses Debian's multiple-slurmd build, one
#                               port per node, nodes named node1..nodeN
#   LOCAL_SLURM_NODENAME=name   single-node name (default: hostname -s);
#                               with NODES>1 it is the prefix (default node)
#   LOCAL_SLURM_CPUS=N          CPUs each node advertises instead of the real
#                               count (adds SlurmdParameters=config_overrides)
#                               so more 1-CPU jobs run at once on 2 cores
#   LOCAL_SLURM_CTLD_PORT=N     LOCAL_SLURM_SLURMD_PORT=M (first slurmd): the
#                               ports; unset, the ones BASEDIR's running daemons
#                               use, else free ones (no fixed default: another
#                               BASEDIR's cluster may hold 6817/6818)
#   LOCAL_SLURM_MIN_JOB_AGE=300 seconds a finished job stays visible to
#                               scontrol show job / squeue -t all
set -euo pipefail

log() { printf '[local-slurm] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root"

BASE=${1:-${LOCAL_SLURM_DIR:-${TMPDIR:-/tmp}/local-slurm}}
case "$BASE" in *[[:space:]]*) die "BASEDIR must not contain whitespace: $BASE";; esac
mkdir -p "$BASE"
BASE=$(cd "$BASE" && pwd -P)
CONF=$BASE/etc/slurm.conf
RUN=$BASE/run
LOGD=$BASE/log
SOCK=$RUN/munge.socket
KEY=$BASE/munge/munge.key
TIMEOUT=${LOCAL_SLURM_TIMEOUT:-60}
NNODES=${LOCAL_SLURM_NODES:-1}
MIN_JOB_AGE=${LOCAL_SLURM_MIN_JOB_AGE:-300}
T0=$(date +%s.%N)
case "$NNODES" in ''|*[!0-9]*|0) die "LOCAL_SLURM_NODES must be a positive integer";; esac

# --- packages ---------------------------------------------------------------
need_pkgs=0
for c in munged mungekey munge unmunge slurmctld slurmd sinfo scontrol sbatch; do
  command -v "$c" >/dev/null 2>&1 || need_pkgs=1
done
if [ "$need_pkgs" = 1 ]; then
  if [ "${LOCAL_SLURM_INSTALL:-0}" = 1 ]; then
    log "installing slurmctld slurmd slurm-client munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge >&2
  else
    die "slurm/munge not installed: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge (or set LOCAL_SLURM_INSTALL=1)"
  fi
fi

# --- helpers ----------------------------------------------------------------
# alive PIDFILE NEEDLE: true if the pid in PIDFILE is a live (non-zombie)
# process whose command line contains NEEDLE.
alive() {
  local pf=$1 needle=$2 pid st
  [ -s "$pf" ] || return 1
  pid=$(tr -dc '0-9' <"$pf")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$st" ] && [ "$st" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$needle"
}
wait_pidfile() { # PIDFILE NEEDLE: daemons write their pid file after forking
  local _
  for _ in $(seq 1 50); do alive "$1" "$2" && return 0; sleep 0.1; done
  return 1
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }
tail_logs() {
  local f
  for f in "$LOGD"/munged.log "$LOGD"/slurmctld.log "$LOGD"/slurmd-*.log; do
    [ -f "$f" ] && { log "--- tail $f"; tail -n 15 "$f" >&2; }
  done
  return 0
}

HOST=$(hostname -s 2>/dev/null || true)
[ -n "$HOST" ] || HOST=localhost
if [ "$NNODES" -eq 1 ]; then
  NODES=("${LOCAL_SLURM_NODENAME:-$HOST}")
  NODESPEC=${NODES[0]}
  PORTSPEC=""
else
  prefix=${LOCAL_SLURM_NODENAME:-node}
  NODES=()
  for i in $(seq 1 "$NNODES"); do NODES+=("$prefix$i"); done
  NODESPEC="$prefix[1-$NNODES]"
fi
PF_MUNGE=$RUN/munged.pid
PF_CTLD=$RUN/slurmctld.pid
N_MUNGE="--socket=$SOCK"
N_CTLD="slurmctld -f $CONF"
n_slurmd() { echo "slurmd -f $CONF -N $1"; }

any_running=0
alive "$PF_MUNGE" "$N_MUNGE" && any_running=1
alive "$PF_CTLD" "$N_CTLD" && any_running=1
for pf in "$RUN"/slurmd-*.pid; do
  [ -e "$pf" ] || continue
  n=$(basename "$pf" .pid); n=${n#slurmd-}
  alive "$pf" "$(n_slurmd "$n")" && any_running=1
done

# --- ports --------------------------------------------------------------------
# Given, else those of this BASEDIR's running cluster (idempotent restarts), else free ones: a port nothing
# listens on, for slurmctld and the NNODES consecutive slurmd ports.
conf_port() { [ -f "$CONF" ] && sed -n "s/^$1=//p" "$CONF" | head -n 1; }
CTLD_PORT=${LOCAL_SLURM_CTLD_PORT:-}
SLURMD_PORT=${LOCAL_SLURM_SLURMD_PORT:-}
if [ "$any_running" = 1 ]; then
  CTLD_PORT=${CTLD_PORT:-$(conf_port SlurmctldPort)}
  SLURMD_PORT=${SLURMD_PORT:-$(conf_port SlurmdPort)}
fi
ports_free() { # FIRST COUNT
  local p
  for p in $(seq "$1" $(($1 + $2 - 1))); do port_busy "$p" && return 1; done
  return 0
}
pick_port() { # COUNT: the first of COUNT free consecutive ports in 20000-59999
  local p _
  for _ in $(seq 1 100); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    ports_free "$p" "$1" && { echo "$p"; return 0; }
  done
  return 1
}
[ -n "$CTLD_PORT" ] || CTLD_PORT=$(pick_port 1) || die "no free port for slurmctld"
overlaps() { [ "$SLURMD_PORT" -le "$CTLD_PORT" ] && [ "$CTLD_PORT" -lt $((SLURMD_PORT + NNODES)) ]; }
while [ -z "$SLURMD_PORT" ] || overlaps; do
  [ -z "${LOCAL_SLURM_SLURMD_PORT:-}" ] || die "the slurmd ports from $SLURMD_PORT include slurmctld's $CTLD_PORT"
  SLURMD_PORT=$(pick_port "$NNODES") || die "no $NNODES free ports for slurmd"
done
[ "$NNODES" -eq 1 ] || PORTSPEC="Port=[$SLURMD_PORT-$((SLURMD_PORT + NNODES - 1))]"

if [ "${LOCAL_SLURM_CLEAN:-0}" = 1 ]; then
  if [ "$any_running" = 1 ]; then
    log "LOCAL_SLURM_CLEAN=1 ignored: daemons from $BASE are running (stop them first)"
  else
    log "cleaning state, spool and logs under $BASE"
    rm -rf "$BASE/state" "$BASE/spool" "$LOGD"
  fi
fi

# --- directories ------------------------------------------------------------
# munged insists: socket dir executable by all, key dir private, log/seed
# dirs not writable by group/other.
mkdir -p "$BASE/etc" "$BASE/munge" "$RUN" "$LOGD" "$BASE/state" "$BASE/spool"
chmod 0755 "$BASE" "$BASE/etc" "$RUN" "$LOGD" "$BASE/spool"
chmod 0700 "$BASE/munge" "$BASE/state"

# --- node description from slurmd -C ----------------------------------------
HW=$(slurmd -C 2>/dev/null | head -n 1)
hw() { printf '%s\n' "$HW" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
CPUS=$(hw CPUs); BOARDS=$(hw Boards); SPB=$(hw SocketsPerBoard)
CPS=$(hw CoresPerSocket); TPC=$(hw ThreadsPerCore); MEM=$(hw RealMemory)
[ -n "$CPUS" ] && [ -n "$MEM" ] || die "could not parse 'slurmd -C': $HW"
MEM=$((MEM / NNODES))          # fake nodes share the real memory
EXTRA=""
if [ -n "${LOCAL_SLURM_CPUS:-}" ] && [ "${LOCAL_SLURM_CPUS}" != "$CPUS" ]; then
  NODELINE="CPUs=$LOCAL_SLURM_CPUS RealMemory=$MEM"
  EXTRA="SlurmdParameters=config_overrides"
else
  NODELINE="CPUs=$CPUS Boards=$BOARDS SocketsPerBoard=$SPB CoresPerSocket=$CPS ThreadsPerCore=$TPC RealMemory=$MEM"
fi
# Bind slurmd/srun listeners to loopback only when the host name resolves
# there (NoInAddrAny binds to that address); slurmctld 22.05 always listens
# on 0.0.0.0 but is only ever addressed as localhost.
COMM=""
case "$(getent ahostsv4 "$HOST" 2>/dev/null | awk 'NR==1{print $1}')" in
  127.*) COMM="CommunicationParameters=NoInAddrAny" ;;
esac

# --- slurm.conf -------------------------------------------------------------
cat >"$CONF.new" <<EOF
# Generated by start-local-slurm.sh - one machine, loopback only.
ClusterName=localci
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
$COMM
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$PF_CTLD
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
DependencyParameters=kill_invalid_depend
EnforcePartLimits=ALL
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGD/jobcomp.txt
MinJobAge=$MIN_JOB_AGE
$EXTRA
NodeName=$NODESPEC NodeAddr=127.0.0.1 NodeHostname=$HOST $PORTSPEC $NODELINE State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
conf_changed=0
if ! cmp -s "$CONF.new" "$CONF"; then
  mv -f "$CONF.new" "$CONF"; conf_changed=1
else
  rm -f "$CONF.new"
fi
chmod 0644 "$CONF"
export SLURM_CONF=$CONF

# --- munge ------------------------------------------------------------------
if [ ! -s "$KEY" ]; then
  if command -v mungekey >/dev/null 2>&1; then
    mungekey -c -k "$KEY" >&2
  else
    dd if=/dev/urandom of="$KEY" bs=1 count=1024 status=none
  fi
fi
chmod 0400 "$KEY"

if alive "$PF_MUNGE" "$N_MUNGE"; then
  log "munged already running (pid $(cat "$PF_MUNGE"))"
else
  rm -f "$SOCK" "$SOCK.lock" "$PF_MUNGE"
  munged --socket="$SOCK" --key-file="$KEY" --pid-file="$PF_MUNGE" \
    --log-file="$LOGD/munged.log" --seed-file="$BASE/munge/munged.seed" \
    || { tail_logs; die "munged failed to start"; }
  wait_pidfile "$PF_MUNGE" "$N_MUNGE" || { tail_logs; die "munged did not stay up"; }
  log "munged started (pid $(cat "$PF_MUNGE"))"
fi
munge -S "$SOCK" -n </dev/null | unmunge -S "$SOCK" >/dev/null \
  || { tail_logs; die "munge self-test failed"; }

# --- slurmctld --------------------------------------------------------------
if alive "$PF_CTLD" "$N_CTLD"; then
  log "slurmctld already running (pid $(cat "$PF_CTLD"))"
  if [ "$conf_changed" = 1 ]; then
    log "slurm.conf changed: scontrol reconfigure"
    scontrol reconfigure >&2 || true
  fi
else
  port_busy "$CTLD_PORT" && die "port $CTLD_PORT in use by another process (set LOCAL_SLURM_CTLD_PORT)"
  rm -f "$PF_CTLD"
  $N_CTLD || { tail_logs; die "slurmctld failed to start"; }
  wait_pidfile "$PF_CTLD" "$N_CTLD" || { tail_logs; die "slurmctld did not stay up"; }
  for _ in $(seq 1 $((TIMEOUT * 5))); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && break
    sleep 0.2
  done
  scontrol ping 2>/dev/null | grep -q 'is UP' || { tail_logs; die "slurmctld not answering"; }
  log "slurmctld started (pid $(cat "$PF_CTLD")) after $(elapsed)s"
fi

# --- slurmd(s) --------------------------------------------------------------
i=0
for node in "${NODES[@]}"; do
  pf=$RUN/slurmd-$node.pid
  cmd=$(n_slurmd "$node")
  port=$((SLURMD_PORT + i)); i=$((i + 1))
  if alive "$pf" "$cmd"; then
    log "slurmd $node already running (pid $(cat "$pf"))"
    continue
  fi
  port_busy "$port" && die "port $port in use by another process (set LOCAL_SLURM_SLURMD_PORT)"
  mkdir -p "$BASE/spool/$node"
  rm -f "$pf"
  $cmd || { tail_logs; die "slurmd $node failed to start"; }
  wait_pidfile "$pf" "$cmd" || { tail_logs; die "slurmd $node did not stay up"; }
  log "slurmd $node started (pid $(cat "$pf"), port $port)"
done

# --- wait until every node is idle ------------------------------------------
resumed=0
deadline=$(( $(date +%s) + TIMEOUT ))
while :; do
  states=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)
  ready=$(printf '%s\n' "$states" | awk '$2 ~ /^(idle|mixed|allocated|completing)$/' | wc -l)
  [ "$ready" -ge "$NNODES" ] && break
  if [ "$resumed" = 0 ] && printf '%s\n' "$states" | grep -qE ' (drain|down|fail)'; then
    # e.g. left DOWN/DRAIN in the saved state by an earlier run
    scontrol update NodeName="$NODESPEC" State=RESUME >/dev/null 2>&1 || true
    resumed=1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    tail_logs
    die "nodes not idle after ${TIMEOUT}s: $(printf '%s' "$states" | tr '\n' ',')"
  fi
  sleep 0.2
done
log "$NNODES node(s) ($NODESPEC) idle after $(elapsed)s; logs in $LOGD"

cat >"$BASE/env.sh" <<EOF
export SLURM_CONF=$CONF
EOF
cat "$BASE/env.sh"
