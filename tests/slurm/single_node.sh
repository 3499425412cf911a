#!/usr/bin/env bash
# single_node.sh VATTN_EXE SOURCE_DIR
# The Slurm scripts (scripts/slurm/) on a real, if tiny, Slurm cluster: one slurmctld and one slurmd
# on this machine, with their own munged, all of it (keys, sockets, state, spool, logs) inside a
# temporary directory, run as root without systemd. Nothing of the machine's own Slurm or munge set-up
# (/etc/slurm, /etc/munge, /run/munge) is read or touched.
#   1. bring-up: the node is idle in sinfo, and a trivial 2-task array runs both tasks;
#   2. fuzz-submit.sh --nodes 2 --wait on host:bf16-reference (budget small, seed 7, 40 cases): each
#      task's campaign ran its shard's 20 cases, the journals' case indices are disjoint and together
#      exactly 0..39, and the merged summary counts 40 cases in its verdicts; submitted again on the
#      same root, each task resumes its finished campaign (no case twice) and the merge still counts 40;
#   3. the same on host:faulty:wrong@H=3 (seed 3, 40 cases): the merge job exits 1 (findings), and the
#      merged summary holds one finding whose count is the sum of the parts' counts.
# The daemons are stopped at the end, whatever happened, and no process of the test may be left.
# Prints "ok: ..." per check that held and "FAIL: ..." per check that did not; exit 0 when all held,
# 1 when one failed, 77 (skipped, with the reason) without Slurm or munge, or when not run as root.
# VATTN_SLURM_KEEP=1 keeps the temporary directory (its path is printed); VATTN_SLURM_BRINGUP_ONLY=1
# stops after step 1 (to debug the cluster itself).
set -u

skip() { echo "SKIPPED: $*"; exit 77; }
[ $# -eq 2 ] || { echo "usage: single_node.sh VATTN_EXE SOURCE_DIR" >&2; exit 2; }
for c in slurmctld slurmd munged sbatch sinfo squeue scontrol scancel; do
  command -v "$c" >/dev/null 2>&1 || skip "Slurm is not installed (optional: scripts/install-deps.sh --with-optional installs slurm-wlm, munge): no $c"
done
[ "$(id -u)" -eq 0 ] || skip "the single-node Slurm cluster needs root (slurmd runs jobs as their user; this is uid $(id -u))"
command -v python3 >/dev/null 2>&1 || skip "python3 is needed for the JSON checks"

vattn=$(readlink -f "$1")
src=$(cd "$2" && pwd)
[ -x "$vattn" ] || { echo "FAIL: $1 is not an executable"; exit 1; }
submit=$src/scripts/slurm/fuzz-submit.sh
sbatch_script=$src/scripts/slurm/fuzz-array.sbatch
for f in "$submit" "$sbatch_script"; do [ -f "$f" ] || { echo "FAIL: $f is missing"; exit 1; }; done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
start_s=$SECONDS

# Under /tmp, not $TMPDIR: munged wants every directory above its socket searchable by all (so the
# top is 0755), and a socket's path must stay short (108 bytes).
tmp=$(mktemp -d /tmp/vattn-slurm.XXXXXX)
chmod 0755 "$tmp"
mkdir -p "$tmp"/{etc,run,log,state,spool,munge,work}
chmod 0700 "$tmp/munge"
# The daemons and the jobs inherit this marker (slurmstepd does not, but holds slurmd's log open),
# so what is left at the end can be told from anything else running on the machine.
export VATTN_SLURM_TEST_MARK=$tmp
export SLURM_CONF=$tmp/etc/slurm.conf
unset SLURM_JOB_ID SLURM_JOBID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID  # when the test itself runs in a job
# The sbatch script's parameters come from the environment: none from the caller's.
unset VATTN KERNEL HOURS CASES SEED BUDGET CAMPAIGN_ROOT FUZZ_ARGS TASKS

# holds_file /proc/PID: PID has a file under $tmp open.
holds_file() {
  local fd
  for fd in "$1"/fd/*; do
    case $(readlink "$fd" 2>/dev/null) in "$tmp"/*) return 0 ;; esac
  done
  return 1
}
# marked_pids: the live processes carrying this run's marker, naming its directory in their command
# line, or holding a file in it open.
marked_pids() {
  local p state
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    [ "${p#/proc/}" = "$BASHPID" ] && continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "VATTN_SLURM_TEST_MARK=$tmp" ||
       tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF "$tmp/" || holds_file "$p"; then
      state=$(sed 's/^.*) //' "$p/stat" 2>/dev/null | cut -d' ' -f1)
      [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] && echo "${p#/proc/}"
    fi
  done
  return 0
}
# stop_pid PID NAME: SIGTERM, up to 15 s, then SIGKILL.
stop_pid() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || return 0
    # A child of this shell stays a zombie until reaped.
    [ "$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" = Z ] && { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  echo "note: $2 (pid $pid) ignored SIGTERM for 15 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}
show_logs() {
  local f
  for f in "$tmp"/log/*; do
    [ -f "$f" ] || continue
    echo "--- $f (last 40 lines)"
    tail -n 40 "$f"
  done
}
ctld_pid="" slurmd_pid="" munged_pid=""
cleanup() {
  local left p
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    scancel --full --quiet --user=root >/dev/null 2>&1
    for _ in $(seq 50); do  # jobs end (slurmstepd exits) before slurmd goes
      squeue --noheader --format=%i 2>/dev/null | grep -q . || break
      sleep 0.2
    done
  fi
  stop_pid "$slurmd_pid" slurmd
  stop_pid "$ctld_pid" slurmctld
  stop_pid "$munged_pid" munged
  left=$(marked_pids)
  if [ -n "$left" ]; then
    echo "FAIL: processes of this test still alive after the daemons stopped (now killed):"
    failures=$((failures + 1))
    for p in $left; do echo "    $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline")"; done
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    sleep 0.5
    left=$(marked_pids)
    [ -z "$left" ] || echo "FAIL: still alive after SIGKILL: $left"
  else
    echo "ok: no process of the test is left (daemons and munged stopped)"
  fi
  if [ "${VATTN_SLURM_KEEP:-0}" = 1 ]; then
    echo "kept: $tmp"
  else
    rm -rf "$tmp"
  fi
  echo "time: $((SECONDS - start_s)) s"
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks held"
  exit 0
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; failures=$((failures + 1)); exit 1' INT TERM
bail() { fail "$*"; show_logs; exit 1; }

echo "Slurm: $(slurmctld -V 2>&1), munge: $(munged -V 2>&1 | head -n 1)"

# --- munge: a key of our own, a daemon of our own
key=$tmp/munge/munge.key
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$key" >/dev/null 2>&1 || bail "mungekey --create failed"
else
  dd if=/dev/urandom of="$key" bs=1 count=1024 status=none || bail "cannot write a munge key"
fi
chmod 0400 "$key"
sock=$tmp/run/munge.sock
munged --foreground --socket="$sock" --key-file="$key" --pid-file="$tmp/run/munged.pid" \
       --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/munged.seed" \
       </dev/null >"$tmp/log/munged.out" 2>&1 &
munged_pid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || bail "munged did not create its socket $sock"
if command -v munge >/dev/null 2>&1; then
  munge --socket="$sock" --string=ping 2>/dev/null | unmunge --socket="$sock" >/dev/null 2>&1 ||
    bail "munge/unmunge through $sock failed"
fi
ok "munged runs (pid $munged_pid, socket $sock)"

# --- slurm.conf: the controller and the node on 127.0.0.1, whether or not the host name resolves
host=$(hostname -s)
hw=$(slurmd -C 2>/dev/null | head -n 1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
{ [ -n "$cpus" ] && [ -n "$mem" ]; } || bail "cannot read CPUs and RealMemory from slurmd -C: $hw"
# The node line as slurmd -C describes the hardware (sockets, cores, threads must match it),
# with a little less memory than it reports so the node is never drained for "Low RealMemory".
node_line="${hw/NodeName=* CPUs=/NodeName=$host CPUs=}"
node_line="${node_line/RealMemory=$mem/RealMemory=$((mem * 9 / 10))}"
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
: >"$tmp/etc/plugstack.conf"  # not /etc/slurm/plugstack.conf
cat >"$SLURM_CONF" <<EOF
# A single-node cluster for tests/slurm/single_node.sh; everything under $tmp.
ClusterName=vattntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$tmp/etc/plugstack.conf
TmpFS=$tmp/work
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2,sched_min_interval=100000
MinJobAge=600
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

# --- the daemons, in the foreground (-D) as children of this shell
cd "$tmp/work" || bail "cd $tmp/work"
slurmctld -D -c -f "$SLURM_CONF" </dev/null >"$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
for _ in $(seq 100); do
  scontrol ping 2>/dev/null | grep -q 'is UP' && break
  kill -0 "$ctld_pid" 2>/dev/null || break
  sleep 0.2
done
scontrol ping 2>/dev/null | grep -q 'is UP' || bail "slurmctld did not come up ($(scontrol ping 2>&1 | head -n 1))"
slurmd -D -f "$SLURM_CONF" </dev/null >"$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!
state=""
for _ in $(seq 120); do
  state=$(sinfo --noheader --nodes="$host" --format=%T 2>/dev/null | head -n 1)
  [ "$state" = idle ] && break
  kill -0 "$slurmd_pid" 2>/dev/null || break
  sleep 0.5
done
[ "$state" = idle ] || bail "the node $host is not idle after 60 s (sinfo: '${state:-nothing}')"
ok "slurmctld (pid $ctld_pid) and slurmd (pid $slurmd_pid) run; node $host is idle ($cpus CPUs)"

# --- a trivial array: the cluster runs array tasks at all
# (polled here: sbatch --wait polls at growing intervals, seconds lost to a test that waits on it)
# shellcheck disable=SC2016  # expanded by the job
out=$(sbatch --parsable --array=0-1 --output="$tmp/work/trivial-%a.out" \
      --wrap 'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT on $(hostname -s)"' 2>&1)
rc=$?
job=${out%%;*}
if [ "$rc" -eq 0 ]; then
  for _ in $(seq 300); do
    squeue --noheader --jobs="$job" --format=%i 2>/dev/null | grep -q . || break
    sleep 0.1
  done
fi
if [ "$rc" -eq 0 ] && grep -qx "task 0 of 2 on $host" trivial-0.out 2>/dev/null &&
   grep -qx "task 1 of 2 on $host" trivial-1.out 2>/dev/null; then
  ok "a trivial 2-task array (job $job) ran both tasks"
else
  echo "sbatch: exit $rc: $out"
  squeue --states=all 2>&1
  cat trivial-*.out 2>/dev/null
  bail "the trivial 2-task array did not run"
fi

[ "${VATTN_SLURM_BRINGUP_ONLY:-0}" = 1 ] && exit 0

# --- the real thing
# check.py MODE ARGS: the JSON checks; prints ok:/FAIL: lines, exits 1 when one failed.
cat >"$tmp/check.py" <<'EOF'
import json, os, sys

bad = 0


def check(cond, what, seen=None):
    global bad
    print(("ok: " if cond else "FAIL: ") + what + ("" if cond or seen is None else f"\n    saw: {seen}"))
    bad += not cond


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{path} is readable JSON", e)
        return {}


def journal_indices(d):
    idx = []
    with open(os.path.join(d, "journal.jsonl"), encoding="utf-8") as f:
        for line in f:
            j = json.loads(line)
            if j.get("t") == "case":
                idx.append(j.get("i"))
    return idx


mode, root, cases, tasks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
parts = [os.path.join(root, f"task-{t}") for t in range(tasks)]
sums = [load(os.path.join(p, "summary.json")) for p in parts]
merged = load(os.path.join(root, "merged", "summary.json"))
seen = []
for t, (p, s) in enumerate(zip(parts, sums)):
    share = len(range(t, cases, tasks))
    check(s.get("campaign_cases") == share, f"task-{t}: campaign_cases is its shard's share ({share})", s.get("campaign_cases"))
    try:
        idx = journal_indices(p)
    except (OSError, ValueError) as e:
        check(False, f"task-{t}: journal.jsonl is readable", e)
        idx = []
    check(sorted(idx) == list(range(t, cases, tasks)), f"task-{t}: its journal's case indices are exactly i % {tasks} == {t}",
          sorted(idx)[:20])
    seen.append(set(idx))
for a in range(tasks):
    for b in range(a + 1, tasks):
        check(not (seen[a] & seen[b]), f"task-{a} and task-{b} ran disjoint case indices", sorted(seen[a] & seen[b])[:20])
check(set().union(*seen) == set(range(cases)), f"the tasks' case indices together are exactly 0..{cases - 1}",
      sorted(set(range(cases)) ^ set().union(*seen))[:20])
check(merged.get("schema") == "vattn-fuzz-summary" and merged.get("version") == 1,
      "merged/summary.json is a vattn-fuzz-summary, version 1", (merged.get("schema"), merged.get("version")))
total = sum(s.get("campaign_cases", 0) for s in sums)
check(merged.get("campaign_cases") == total == cases,
      f"merged campaign_cases equals the tasks' sum and the campaign's size ({cases})", (merged.get("campaign_cases"), total))
verdicts = merged.get("verdicts") or {}
check(sum(verdicts.values()) == cases, f"the merged verdicts add up to {cases}", verdicts)
check(sorted(os.path.normpath(x) for x in merged.get("merged_from", [])) == sorted(parts),
      "merged_from names the task directories", merged.get("merged_from"))
check(len(merged.get("parts", [])) == tasks, f"merged parts lists {tasks} parts", merged.get("parts"))
mf = merged.get("findings", [])
if mode == "clean":
    check(mf == [], "no findings", mf)
    check(verdicts == {"pass": cases}, f"every verdict is pass", verdicts)
else:
    per_sig = {}
    for s in sums:
        for f in s.get("findings", []):
            per_sig[f.get("signature")] = per_sig.get(f.get("signature"), 0) + f.get("count", 0)
    check(len(per_sig) == 1, "the parts found one signature between them", per_sig)
    check(len(mf) == 1, "the merged summary holds one finding", [(f.get("signature"), f.get("count")) for f in mf])
    if len(mf) == 1 and len(per_sig) == 1:
        sig, count = next(iter(per_sig.items()))
        check(mf[0].get("signature") == sig and mf[0].get("count") == count,
              f"its count is the sum of the parts' counts ({count}, signature '{sig}')", (mf[0].get("signature"), mf[0].get("count")))
        check(verdicts.get(mf[0].get("class"), 0) == count, "the merged verdicts count the finding's cases", verdicts)
sys.exit(1 if bad else 0)
EOF

# campaign NAME WANT_RC KERNEL SEED: a 2-task array of 40 cases through fuzz-submit.sh --wait.
# --oversubscribe undoes the script's --exclusive, so that both tasks run at once on this one node.
campaign() {
  local name=$1 want=$2 kernel=$3 seed=$4 root=$tmp/$1 rc t0=$SECONDS
  echo "--- $name: fuzz-submit.sh --nodes 2 --kernel $kernel --budget small --seed $seed --cases 40 --wait"
  bash "$submit" --nodes 2 --kernel "$kernel" --budget small --seed "$seed" --cases 40 --root "$root" \
       --vattn "$vattn" --wait -- --time=10 --oversubscribe >"$tmp/$name.out" 2>&1
  rc=$?
  echo "    ($((SECONDS - t0)) s)"
  sed 's/^/    /' "$tmp/$name.out"
  if [ "$rc" -eq "$want" ]; then
    ok "$name: fuzz-submit.sh --wait exits $want"
  else
    fail "$name: fuzz-submit.sh --wait exits $rc, expected $want"
    for f in "$root"/logs/*; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
  fi
  grep -qF "$root/merged/summary.json" "$tmp/$name.out" || fail "$name: fuzz-submit.sh does not say where the merged summary is"
  python3 "$tmp/check.py" "$([ "$want" -eq 0 ] && echo clean || echo findings)" "$root" 40 2 >"$tmp/$name.check" 2>&1
  rc=$?
  sed "s/^\(ok\|FAIL\): /\1: $name: /" "$tmp/$name.check"
  [ "$rc" -eq 0 ] || failures=$((failures + 1))
}
campaign reference 0 host:bf16-reference 7

# The same submission again on the same root: each task finds its finished campaign and resumes it
# (runs no case), and the merge still counts each case once.
echo "--- resubmit: the reference campaign again, same --root"
bash "$submit" --nodes 2 --kernel host:bf16-reference --budget small --seed 7 --cases 40 --root "$tmp/reference" \
     --vattn "$vattn" --wait -- --time=10 --oversubscribe >"$tmp/resubmit.out" 2>&1
rc=$?
sed 's/^/    /' "$tmp/resubmit.out"
if [ "$rc" -eq 0 ]; then ok "resubmit: fuzz-submit.sh --wait exits 0"; else fail "resubmit: fuzz-submit.sh --wait exits $rc, expected 0"; fi
if grep -q "resuming it" "$tmp/reference/logs/task-0.out" && grep -q "resuming it" "$tmp/reference/logs/task-1.out"; then
  ok "resubmit: both tasks resumed their campaigns"
else
  fail "resubmit: the task logs do not both say they resumed"
  cat "$tmp/reference/logs/"*.out
fi
python3 - "$tmp/reference" <<'PY' || failures=$((failures + 1))
import json, os, sys
root, bad = sys.argv[1], 0
for t in range(2):
    lines = [json.loads(l) for l in open(os.path.join(root, f"task-{t}", "journal.jsonl"), encoding="utf-8")]
    cases = sorted(l["i"] for l in lines if l.get("t") == "case")
    runs = sum(l.get("t") == "run" for l in lines)
    good = cases == list(range(t, 40, 2)) and runs == 2
    print(("ok: " if good else "FAIL: ") + f"resubmit: task-{t}: 2 runs, still each of its 20 case indices once" +
          ("" if good else f"\n    saw: {runs} runs, cases {cases}"))
    bad += not good
m = json.load(open(os.path.join(root, "merged", "summary.json"), encoding="utf-8"))
good = m.get("campaign_cases") == 40 and sum(m.get("verdicts", {}).values()) == 40
print(("ok: " if good else "FAIL: ") + "resubmit: the merged summary still counts 40 cases" + ("" if good else f"\n    saw: {m.get('campaign_cases')}"))
sys.exit(1 if bad or not good else 0)
PY

campaign faulty 1 host:faulty:wrong@H=3 3
# SPDX-License-Identifier: Apache-2.0
