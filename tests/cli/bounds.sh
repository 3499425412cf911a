#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bounds.sh VATTN MODE [FIXTURE]
# Bounded work and memory (issue 51): what the suite reads, generates and computes is held to
# limits, each refusal quick, naming the file or the option to raise; output reaches a pipe as it
# is printed. Host only. Every command runs under `timeout`, and (but under AddressSanitizer,
# which reserves terabytes) in 8 GiB of address space, so a vattn without the bounds fails these
# checks instead of hanging or eating the machine.
#   reads      a ledger, a bench report and a finding.json that are /dev/zero, a FIFO without a
#              writer, a directory, or JSON nested 100000 deep: exit 2 within seconds, naming the
#              file and what it is
#   recipe     replay --recipe and gen of "B=1 H=1024 P=[0] T=[4096]" (60 GiB with its oracle)
#              under --max-memory 8: exit 2 at once naming --max-memory, before anything is
#              generated; gen --cases counts every case it holds
#   oracle     a case over --max-oracle-work (a fixture at 1000; a recipe of 8e9 units at the
#              default) is refused at once naming the option; a 2 s oracle in a pipe prints
#              progress lines (VATTN_PROGRESS_INTERVAL=0.3), plain text, no control characters
#   nothing    (h5py) a case without stored outputs, where no live producer runs: "nothing to
#              compare" before its oracle runs (no oracle progress, not held to the work limit)
#   flush      replay's first lines reach a pipe a second or more before its last one (the
#              oracle runs in between): rows are not held back until the command ends
#   full-disk  vattn gen under `ulimit -f` (4 MiB): exit 2 naming the file and "File too large",
#              no crash, no temporary left, an earlier file of that name intact
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
fixture=${3:-}
if [ -z "${VATTN_ASAN:-}" ]; then ulimit -v 8388608; fi
# quick NAME SECONDS COMMAND...: run with a deadline (exit 124 when it passes).
quick() {
  local name=$1 limit=$2
  shift 2
  run "$name" timeout -k 5 "$limit" "$@"
}
ledger_json='{"schema": "vattn-fuzz-ledger", "version": 2, "entries": []}'

case $mode in
  reads)
    mkfifo "$tmp/fifo.json" || exit 2
    mkdir "$tmp/dir.json"
    { printf '{"schema": "vattn-fuzz-ledger", "version": 2, "entries": [{"signature": "s", "reason": "r", "added": '
      head -c 100000 /dev/zero | tr '\0' '['
      head -c 100000 /dev/zero | tr '\0' ']'
      printf '}]}\n'; } >"$tmp/deep.json"
    for bad in /dev/zero "$tmp/fifo.json" "$tmp/dir.json" "$tmp/deep.json"; do
      case $bad in
        /dev/zero | *fifo.json) what="is not a regular file (a device, a pipe or a socket)" ;;
        *dir.json) what="is a directory, not a file" ;;
        *) what="nested deeper than 64 levels" ;;
      esac
      n=$(basename "$bad" .json)
      quick "ledger-$n" 30 "$vattn" fuzz --kernel host:bf16-reference "${small[@]}" --cases 2 --ledger "$bad" \
        --out "$tmp/never-$n"
      want_rc "ledger-$n" 2 && has "ledger-$n" err "$bad: field 'ledger': " && has "ledger-$n" err "$what"
      [ -e "$tmp/never-$n" ] && fail "ledger-$n: a campaign folder was made"
      quick "bench-$n" 30 "$vattn" bench-compare "$bad"
      want_rc "bench-$n" 2 && has "bench-$n" err "$bad: " && has "bench-$n" err "$what"
    done
    # A finding whose finding.json is a FIFO (vattn promote reads it first).
    mkdir -p "$tmp/finding" "$tmp/corpus"
    mkfifo "$tmp/finding/finding.json"
    quick promote 30 "$vattn" promote "$tmp/finding" --corpus "$tmp/corpus"
    want_rc promote 2 && has promote err "$tmp/finding/finding.json: field 'finding.json': is not a regular file"
    # The good ledger still loads (a link to it too).
    echo "$ledger_json" >"$tmp/good.json" && ln -s good.json "$tmp/link.json"
    fuzz good --kernel host:bf16-reference "${small[@]}" --cases 2 --ledger "$tmp/link.json" --out "$tmp/good"
    want_rc good 0
    ;;
  recipe)
    huge="B=1 H=1024 P=[0] T=[4096]"
    quick replay 20 "$vattn" replay --recipe "$huge" --max-memory 8
    want_rc replay 2 && has replay err "--recipe needs 60.6" && has replay err "more than the limit of 8.00 GiB (--max-memory)"
    quick gen 20 "$vattn" gen -o "$tmp/huge.h5" --recipe "$huge" --max-memory 8
    want_rc gen 2 && has gen err "(--max-memory)"
    [ -e "$tmp/huge.h5" ] && fail "gen wrote $tmp/huge.h5"
    # gen holds every case it writes, and the file's image: 40 cases of 50 MiB do not fit in 2 GiB.
    quick gen-many 20 "$vattn" gen -o "$tmp/many.h5" --heads 128 --prefix 16384 --drafts 64 --cases 40 --max-memory 2
    want_rc gen-many 2 && has gen-many err "the requested shape, 40 cases, needs " && has gen-many err "(--max-memory)"
    quick gen-small 60 "$vattn" gen -o "$tmp/small.h5" --heads 1 --prefix 64 --drafts 4 --max-memory 2
    want_rc gen-small 0
    # The limit still holds for case files, and is checked like any option.
    quick file 20 "$vattn" replay "$tmp/small.h5" --max-memory 0.000001
    want_rc file 2 && has file err "to be read and checked, more than the limit of" && has file err "(--max-memory)"
    quick bad-value 20 "$vattn" gen -o "$tmp/x.h5" --max-memory 0
    want_rc bad-value 2 && has bad-value err "--max-memory must be a number of GiB > 0"
    ;;
  oracle)
    quick fixture 60 "$vattn" replay "$fixture" --max-oracle-work 1000
    want_rc fixture 2 && has fixture err "$fixture: case '" &&
      has fixture err "units of CPU-oracle work (query rows x keys x heads), more than the limit of 1000 (--max-oracle-work)"
    lacks fixture out "PASS"
    bomb="B=1 H=128 P=[1000000] T=[64]"  # 8.2e9 units: about 40 minutes of one core
    quick bomb 20 "$vattn" replay --recipe "$bomb"
    want_rc bomb 2 && has bomb err "8192524288 units of CPU-oracle work" && has bomb err "limit of 4000000000 (--max-oracle-work)"
    quick gen-bomb 20 "$vattn" gen -o "$tmp/bomb.h5" --recipe "$bomb"
    want_rc gen-bomb 2 && has gen-bomb err "(--max-oracle-work)"
    quick bad-value 20 "$vattn" replay --recipe "P=[1] T=[1]" --max-oracle-work 1.5
    want_rc bad-value 2 && has bad-value err "--max-oracle-work must be a whole number >= 1"
    # Raised, the same case runs.
    quick raised 60 "$vattn" replay "$fixture" --max-oracle-work 1e9
    want_rc raised 0
    # A long oracle in a pipe says how far it got, as plain lines.
    VATTN_PROGRESS_INTERVAL=0.3 quick progress 120 "$vattn" replay --recipe "B=1 H=8 P=[16384] T=[64]"
    want_rc progress 0 && has progress err "vattn replay: --recipe: oracle " && has progress err "%"
    if grep -q $'\r\|\x1b' "$tmp/progress.err"; then fail "progress: control characters in a pipe"; fi
    VATTN_PROGRESS_INTERVAL=0.3 quick gen-progress 120 "$vattn" gen -o "$tmp/p.h5" --heads 8 --prefix 16384 --drafts 64
    want_rc gen-progress 0 && has gen-progress err "vattn gen: case 1/1 case0000_seed1: oracle "
    VATTN_PROGRESS_INTERVAL=0 quick bad-interval 20 "$vattn" replay --recipe "P=[1] T=[1]"
    want_rc bad-interval 2 && has bad-interval err "VATTN_PROGRESS_INTERVAL='0': expected a number of seconds > 0"
    ;;
  nothing)
    # A case with an oracle of a few seconds, its stored output removed.
    quick gen 120 "$vattn" gen -o "$tmp/bare.h5" --heads 8 --prefix 16384 --drafts 64
    want_rc gen 0
    python3 -c "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); del f['cases/case0000_seed1/outputs']" \
      "$tmp/bare.h5" || exit 2
    VATTN_PROGRESS_INTERVAL=0.2 quick bare 60 "$vattn" replay "$tmp/bare.h5"
    want_rc bare 2 && has bare err "case 'case0000_seed1': nothing to compare (no stored outputs, no live producer runs here)"
    lacks bare err "oracle"
    # Decided before the oracle: the work limit is never reached.
    quick bare-limit 60 "$vattn" replay "$tmp/bare.h5" --max-oracle-work 1000
    want_rc bare-limit 2 && has bare-limit err "nothing to compare" && lacks bare-limit err "--max-oracle-work"
    quick no-producer 60 "$vattn" replay "$fixture" --producer no-such --max-oracle-work 1000
    want_rc no-producer 2 && has no-producer err "no producer 'no-such'" && lacks no-producer err "--max-oracle-work"
    ;;
  flush)
    # Each line stamped as the pipe delivers it.
    "$vattn" replay --recipe "B=1 H=8 P=[32768] T=[64]" 2>"$tmp/flush.err" </dev/null |
      while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$tmp/stamped"
    cat "$tmp/stamped"
    first=$(head -n 1 "$tmp/stamped" | cut -d' ' -f1)
    last=$(tail -n 1 "$tmp/stamped" | cut -d' ' -f1)
    grep -q "replay: 1 passed, 0 failed" "$tmp/stamped" || fail "flush: the replay did not pass: $(cat "$tmp/flush.err")"
    if awk -v a="$first" -v b="$last" 'BEGIN { exit !(b - a >= 1.0) }'; then
      echo "ok: the first line came $(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.1f", b - a }') s before the last"
    else
      fail "flush: every line came at the end (first $first, last $last): output held back in a pipe"
    fi
    ;;
  full-disk)
    "$vattn" gen -o "$tmp/cases.h5" --heads 1 --prefix 64 --drafts 2 >/dev/null || exit 2
    cp "$tmp/cases.h5" "$tmp/before.h5"
    (
      ulimit -f 4096
      "$vattn" gen -o "$tmp/cases.h5" --heads 4 --prefix 100000 --drafts 16 >"$tmp/full.out" 2>"$tmp/full.err"
    )
    rc=$?
    echo "ran: vattn gen under ulimit -f 4096 -> exit $rc"
    want_rc full 2 && has full err "$tmp/cases.h5" && has full err "File too large"
    cmp -s "$tmp/cases.h5" "$tmp/before.h5" || fail "full-disk: the earlier cases.h5 changed"
    leftovers=$(find "$tmp" -maxdepth 1 -name 'cases.h5?*')
    [ -z "$leftovers" ] || fail "full-disk: left behind: $leftovers"
    ;;
  *)
    echo "bounds.sh: unknown mode $mode"
    exit 2
    ;;
esac
finish
