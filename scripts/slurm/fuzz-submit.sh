#!/usr/bin/env bash
# usage: fuzz-submit.sh --nodes N --kernel K (--hours H | --cases C) [options] [-- sbatch args...]
#
# Submits one `vattn fuzz` campaign over N nodes of a Slurm cluster: a job array of N tasks
# (fuzz-array.sbatch, one node each, task I runs shard I/N of the case stream into ROOT/task-I),
# then a merge job that starts when the whole array has ended, whatever its outcome
# (--dependency=afterany), and runs `vattn fuzz-merge --out ROOT/merged ROOT/task-*`.
# Prints both job ids and where the merged summary will be.
#
# options:
#   --nodes N        array tasks, one node each (sbatch --array=0-(N-1))
#   --kernel K       what to fuzz: split-v1, a revision LIB.so, host:NAME
#   --hours H        stop each task after H hours (fractions are fine)
#   --cases C        the campaign's size: case indices 0..C-1, split over the tasks
#                    (at least one of --hours and --cases; with both, whichever comes first)
#   --root DIR       the campaign root, on a file system every node shares
#                    (default: ./fuzz-<array job id>); with --root the Slurm logs go to
#                    DIR/logs/, without it to ./vattn-fuzz-<job>_<task>.out
#   --vattn PATH     the vattn binary, at a path every node sees (default: vattn on PATH)
#   --budget B       small|medium|large (default: vattn's, large)
#   --seed S         the campaign seed (default: the array's job id)
#   --wait           wait for the merge job; exit with its status
#   --help           show this help and exit
#   -- ARGS...       passed to both sbatch calls (partition, account, --gres=gpu:8, --time=...)
# FUZZ_ARGS in the environment is passed on to every `vattn fuzz` (e.g. FUZZ_ARGS="--gpus 0,1").
#
# exit codes: 0 submitted (with --wait: the merge found nothing), 1 with --wait: findings,
# 2 bad arguments, sbatch failed, or with --wait: a task or the merge failed.
#
# example:
#   scripts/slurm/fuzz-submit.sh --nodes 8 --kernel split-v1 --hours 8 --root /scratch/fuzz/night1 \
#       --vattn /scratch/vattn/build/vattn -- --partition=gpu --gres=gpu:8 --time=08:30:00
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=$here/fuzz-array.sbatch

usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "fuzz-submit: $*" >&2; echo "fuzz-submit: see fuzz-submit.sh --help" >&2; exit 2; }

nodes="" kernel="" hours="" cases="" root="" vattn="" budget="" seed="" wait=0
extra=()
need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "option '$1' needs a value"; fi; }
while [ $# -gt 0 ]; do
  case $1 in
    --help|-h) usage; exit 0 ;;
    --nodes) need "$@"; nodes=$2; shift 2 ;;
    --kernel) need "$@"; kernel=$2; shift 2 ;;
    --hours) need "$@"; hours=$2; shift 2 ;;
    --cases) need "$@"; cases=$2; shift 2 ;;
    --root) need "$@"; root=$2; shift 2 ;;
    --vattn) need "$@"; vattn=$2; shift 2 ;;
    --budget) need "$@"; budget=$2; shift 2 ;;
    --seed) need "$@"; seed=$2; shift 2 ;;
    --nodes=*|--kernel=*|--hours=*|--cases=*|--root=*|--vattn=*|--budget=*|--seed=*)
      opt=${1%%=*}
      set -- "$opt" "${1#*=}" "${@:2}"
      ;;
    --wait) wait=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown argument '$1' (sbatch options go after --)" ;;
  esac
done

[ -n "$nodes" ] || die "--nodes N is required"
[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes: '$nodes' is not a positive integer"
[ -n "$kernel" ] || die "--kernel K is required"
[ -n "$hours" ] || [ -n "$cases" ] || die "--hours H or --cases C is required"
if [ -n "$hours" ]; then
  { [[ $hours =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && [[ $hours =~ [1-9] ]]; } || die "--hours: '$hours' is not a positive number"
fi
if [ -n "$cases" ]; then
  [[ $cases =~ ^[1-9][0-9]*$ ]] || die "--cases: '$cases' is not a positive integer"
  [ "$cases" -ge "$nodes" ] || echo "fuzz-submit: note: $cases cases over $nodes tasks: some tasks get none" >&2
fi
if [ -n "$budget" ]; then
  case $budget in small|medium|large) ;; *) die "--budget: '$budget' is not small, medium or large" ;; esac
fi
if [ -n "$seed" ]; then
  [[ $seed =~ ^[0-9]+$ ]] || die "--seed: '$seed' is not a non-negative integer"
fi
if [ -n "$vattn" ]; then
  if [[ $vattn == */* ]]; then
    { [ -f "$vattn" ] && [ -x "$vattn" ]; } || die "--vattn: '$vattn' is not an executable file"
    vattn=$(cd "$(dirname "$vattn")" && pwd)/$(basename "$vattn")
  else
    command -v "$vattn" >/dev/null 2>&1 || die "--vattn: '$vattn' is not on PATH"
  fi
fi
command -v sbatch >/dev/null 2>&1 || die "sbatch is not on PATH (is this a Slurm submit host?)"
[ -f "$script" ] || die "$script is missing"

logs=()
if [ -n "$root" ]; then
  mkdir -p "$root/logs" || die "--root: cannot create $root/logs"
  root=$(cd "$root" && pwd)
  for d in "$root"/task-*; do
    [ -e "$d" ] && { echo "fuzz-submit: note: $root already holds task directories: those tasks resume their campaigns" >&2; break; }
  done
  logs=(--output="$root/logs/task-%a.out")
fi

# The sbatch script's parameters travel in the environment (--export=ALL), never as
# --export=VAR=value (a value with a comma would be cut there).
params=(-u VATTN -u KERNEL -u HOURS -u CASES -u SEED -u BUDGET -u CAMPAIGN_ROOT -u TASKS)
[ -z "$vattn" ] || params+=("VATTN=$vattn")
params+=("KERNEL=$kernel")
[ -z "$hours" ] || params+=("HOURS=$hours")
[ -z "$cases" ] || params+=("CASES=$cases")
[ -z "$seed" ] || params+=("SEED=$seed")
[ -z "$budget" ] || params+=("BUDGET=$budget")
[ -z "$root" ] || params+=("CAMPAIGN_ROOT=$root")

out=$(env "${params[@]}" sbatch --parsable --export=ALL --array="0-$((nodes - 1))" "${logs[@]}" \
      "${extra[@]}" "$script" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || { echo "fuzz-submit: sbatch (the array) failed (exit $rc): $out" >&2; exit 2; }
array_id=${out##*$'\n'}   # the last line: "JOBID" or "JOBID;CLUSTER"
array_id=${array_id%%;*}
[[ $array_id =~ ^[0-9]+$ ]] || { echo "fuzz-submit: sbatch did not print a job id: $out" >&2; exit 2; }
[ -n "$root" ] || root=$PWD/fuzz-$array_id
echo "array job: $array_id ($nodes tasks: shard I/$nodes of seed ${seed:-$array_id} into $root/task-I)"

# The merge: the same script with the argument 'merge', on one node, sharing it (--oversubscribe
# undoes the script's --exclusive).
if [ ${#logs[@]} -gt 0 ]; then mlogs=(--output="$root/logs/merge.out"); else mlogs=(--output="vattn-fuzz-merge-%j.out"); fi
menv=(env "${params[@]}" "CAMPAIGN_ROOT=$root" "TASKS=$nodes")
margs=(--parsable --export=ALL --job-name=vattn-fuzz-merge --dependency="afterany:$array_id"
       --kill-on-invalid-dep=no "${mlogs[@]}" "${extra[@]}" --nodes=1 --ntasks=1 --oversubscribe "$script" merge)
by_hand="$(printf '%q' "${vattn:-vattn}") fuzz-merge --out $root/merged $root/task-*"
if [ "$wait" -eq 0 ]; then
  out=$("${menv[@]}" sbatch "${margs[@]}" 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || { echo "fuzz-submit: sbatch (the merge) failed (exit $rc): $out" >&2
                       echo "fuzz-submit: merge by hand when the array has ended: $by_hand" >&2; exit 2; }
  merge_id=${out##*$'\n'}
  echo "merge job: ${merge_id%%;*} (after the array ends)"
  echo "merged summary: $root/merged/summary.json"
  exit 0
fi

# --wait: sbatch --wait prints the job id when it is submitted (sbatch flushes it at once, even
# into a file) and exits with the job's exit status. Not under stdbuf: its LD_PRELOAD would be
# exported into the job (--export=ALL) and preloaded into vattn there (an ASan build refuses that).
idfile=$(mktemp "${TMPDIR:-/tmp}/fuzz-submit.XXXXXX")
trap 'rm -f "$idfile"' EXIT
"${menv[@]}" sbatch --wait "${margs[@]}" >"$idfile" 2>&1 &
pid=$!
merge_id=""
while kill -0 "$pid" 2>/dev/null; do
  merge_id=$(grep -m1 -Eo '^[0-9]+' "$idfile")
  [ -n "$merge_id" ] && break
  sleep 0.2
done
[ -n "$merge_id" ] || merge_id=$(grep -m1 -Eo '^[0-9]+' "$idfile")
if [ -n "$merge_id" ]; then
  echo "merge job: $merge_id (after the array ends)"
  echo "merged summary: $root/merged/summary.json"
  echo "waiting for job $merge_id"
fi
wait "$pid"
rc=$?
if [ -z "$merge_id" ]; then
  echo "fuzz-submit: sbatch (the merge) failed (exit $rc): $(cat "$idfile")" >&2
  echo "fuzz-submit: merge by hand when the array has ended: $by_hand" >&2
  exit 2
fi
case $rc in
  0) echo "fuzz-submit: merge job $merge_id: nothing found ($root/merged/summary.json)" ;;
  1) echo "fuzz-submit: merge job $merge_id: findings ($root/merged/summary.json)" ;;
  *) echo "fuzz-submit: merge job $merge_id exited $rc: see its log; merge by hand: $by_hand" >&2; rc=2 ;;
esac
exit "$rc"
# SPDX-License-Identifier: Apache-2.0
