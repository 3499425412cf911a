#!/usr/bin/env bash
# shellcheck disable=SC2317  # the helpers are called through check(), which shellcheck cannot follow
# report_chromium.sh VATTN_EXE REPORT_PY
# The fuzz morning report (vattn/fuzz/report/morning_report.py) as a person would see it: two small
# campaigns on host targets (one with a wrong-answer finding, exit 1; one clean, exit 0, half its
# cases shaped like case files from `vattn gen`, --mix-from), the report of the first with
# --compare the second (a coverage plot for each dimension, the stream's families and the
# caller's plan among them), then headless Chromium renders the page:
#  - its dumped DOM says every <img class="plot"> decoded (data-plots-loaded = data-plots-total > 0,
#    set by the page's own script on load, and that total is the number of plots in the file);
#  - a screenshot is not blank (pixel spread, many colours, content in both halves);
#  - Chromium logged no JavaScript error ("Uncaught") and no missing file (ERR_FILE_NOT_FOUND).
# A copy of the page with one plot broken and a script error must fail the same checks (so they can
# fail at all). Bad input: a directory without summary.json exits 2 naming that file, no traceback.
# Without Chromium or matplotlib: "SKIPPED: ..." and exit 77 (ctest: Skipped).
set -u
if [ $# -ne 2 ]; then
  echo "usage: report_chromium.sh VATTN_EXE REPORT_PY" >&2
  exit 2
fi
vattn=$(readlink -f "$1")
report_py=$(readlink -f "$2")

# The python3 that has matplotlib: the one on PATH, else Debian's.
py=''
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import matplotlib, numpy' 2>/dev/null; then
    py=$(command -v "$candidate")
    break
  fi
done
chromium=$(command -v chromium || true)
missing=''
[ -n "$chromium" ] || missing="chromium"
[ -n "$py" ] || missing="${missing:+$missing, }python3 with matplotlib"
if [ -n "$missing" ]; then
  echo "SKIPPED: $missing not found (optional: scripts/install-deps.sh --with-optional installs chromium)"
  exit 77
fi

tmp=$(mktemp -d /tmp/vattn-report-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
failures=0
rc=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() {  # check WHAT COMMAND...: "ok: WHAT" when COMMAND succeeds, else "FAIL: WHAT" (counted)
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
not() { ! "$@"; }
show() { echo "--- stdout:"; cat "$tmp/$1.out"; echo "--- stderr:"; cat "$tmp/$1.err"; }
run() {  # run NAME COMMAND...: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, exit code in $rc
  local name=$1
  shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
  rc=$?
}
want_rc() {  # want_rc NAME CODE WHAT
  if [ "$rc" -eq "$2" ]; then echo "ok: $3 (exit $rc)"; return 0; fi
  fail "$3: exit $rc, expected $2"
  show "$1"
  return 1
}

# The campaigns: host targets, small budget, fixed seeds; --no-report: the page under test is the
# one REPORT_PY writes below, not the one vattn would make at the end with the copy it finds.
run camp-a "$vattn" fuzz --kernel host:faulty:wrong@H=3 --budget small --cases 60 --seed 3 --case-timeout 2 \
  --max-shrink-runs 20 --no-report --out "$tmp/a"
want_rc camp-a 1 "campaign A (host:faulty:wrong@H=3) finds the wrong answer" || exit 1
mkdir "$tmp/captured"
run gen "$vattn" gen -o "$tmp/captured/steps.h5" --cases 2 --heads 8 --prefix 200 --drafts 16 --tree ddtree
want_rc gen 0 "vattn gen writes the case files campaign B takes its shapes from" || exit 1
run camp-b "$vattn" fuzz --kernel host:bf16-reference --budget small --cases 40 --seed 4 --no-report \
  --mix-from "$tmp/captured" --out "$tmp/b"
want_rc camp-b 0 "campaign B (host:bf16-reference, --mix-from) runs clean" || exit 1

# The report.
html=$tmp/report.html
run report "$py" "$report_py" "$tmp/a" --compare "$tmp/b" --out "$html"
want_rc report 0 "morning_report.py A --compare B" || exit 1
if [ -s "$html" ] && grep -qxF "report: $html" "$tmp/report.out"; then
  echo "ok: the report is written ($(wc -c <"$html") bytes) and named on stdout"
else
  fail "no report at $html, or stdout does not name it"
  show report
  exit 1
fi
for text in "host:faulty:wrong@H=3" "host:bf16-reference" "1 finding" "wrong: vs oracle" "only A" \
            "where the errors sit" "values heads=some rows=whole-requests cols=all" \
            "vattn fuzz --kernel host:faulty:wrong@H=3 --recipe"; do
  check "the page has: $text" grep -qF -- "$text" "$html"
done
for dim in family "plan limits" max_splits SMs; do
  check "the page plots the coverage of $dim" grep -qF -- "alt=\"coverage of $dim\"" "$html"
  check "the page compares the coverage of $dim" grep -qF -- "alt=\"coverage of $dim, A and B\"" "$html"
done

# Bad input: a directory with a journal but no summary.
mkdir "$tmp/nosummary" && cp "$tmp/a/journal.jsonl" "$tmp/nosummary/"
run bad "$py" "$report_py" "$tmp/nosummary"
if want_rc bad 2 "a directory without summary.json is refused"; then
  echo "  stderr: $(head -1 "$tmp/bad.err")"
  check "stderr names the missing summary.json" grep -qF "$tmp/nosummary/summary.json:" "$tmp/bad.err"
  check "no traceback for bad input" not grep -q Traceback "$tmp/bad.err"
fi

# Headless Chromium.
browse() {  # browse NAME FILE CHROMIUM_ARGS...: stdout in $tmp/NAME.out, the browser's log in $tmp/NAME.err
  local name=$1 page=$2
  shift 2
  run "$name" timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
    --no-first-run --allow-file-access-from-files --hide-scrollbars --window-size=1280,4000 \
    --virtual-time-budget=5000 --enable-logging=stderr --v=0 "$@" "file://$page"
}
plots_loaded() {  # plots_loaded NAME PAGE: the dumped DOM says every plot of PAGE decoded
  local body loaded total in_file
  body=$(grep -o '<body[^>]*>' "$tmp/$1.out" | head -1)
  loaded=$(sed -n 's/.*data-plots-loaded="\([0-9]*\)".*/\1/p' <<<"$body")
  total=$(sed -n 's/.*data-plots-total="\([0-9]*\)".*/\1/p' <<<"$body")
  in_file=$(grep -o '<img class="plot"' "$2" | wc -l)
  echo "  $1: ${body:-no <body> in the dump}; $in_file plots in the file"
  [ -n "$loaded" ] && [ "$loaded" = "$total" ] && [ "$total" -gt 0 ] && [ "$total" -eq "$in_file" ]
}
clean_log() {  # clean_log NAME: no script error, no missing file in the browser's log (else shows them)
  ! grep -E "Uncaught|ERR_FILE_NOT_FOUND" "$tmp/$1.err"
}
not_blank() {  # not_blank PNG: pixel spread, many colours, something drawn in both halves
  "$py" - "$1" <<'EOF'
import sys
import matplotlib.image
import numpy as np
rgb = np.round(matplotlib.image.imread(sys.argv[1])[..., :3] * 255).astype(np.int64)
packed = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
colours = len(np.unique(packed))
inked = np.flatnonzero((packed != 0xFFFFFF).any(axis=1))
both_halves = inked.size > 0 and inked[0] < rgb.shape[0] // 2 <= inked[-1]
print(f"  {sys.argv[1]}: {rgb.shape[1]}x{rgb.shape[0]}, pixel std {rgb.std():.1f}, {colours} colours, "
      f"drawn in both halves: {'yes' if both_halves else 'no'}")
sys.exit(0 if rgb.std() > 10 and colours > 64 and both_halves else 1)
EOF
}

browse dom "$html" --dump-dom
check "chromium --dump-dom exits 0 (exit $rc)" [ $rc -eq 0 ]
check "every plot rendered (DOM dump)" plots_loaded dom "$html"
check "no script error or missing file (--dump-dom log)" clean_log dom

browse shot "$html" --screenshot="$tmp/shot.png"
check "chromium --screenshot exits 0 (exit $rc)" [ $rc -eq 0 ]
check "the screenshot is written" [ -s "$tmp/shot.png" ]
check "no script error or missing file (--screenshot log)" clean_log shot
check "the screenshot is not blank" not_blank "$tmp/shot.png"

# The checks can fail: a copy with one plot's data broken and a script error.
broken=$tmp/broken.html
sed '0,/src="data:image\/png;base64,[^"]*"/s//src="data:image\/png;base64,AAAA"/' "$html" |
  sed 's|</body>|<script>noSuchFunction();</script></body>|' >"$broken"
browse broken "$broken" --dump-dom
check "a broken plot is noticed" not plots_loaded broken "$broken"
check "a script error is noticed" grep -q Uncaught "$tmp/broken.err"

if [ $failures -eq 0 ]; then
  echo "ok: the morning report renders in Chromium"
  exit 0
fi
echo "FAIL: $failures check(s) failed"
exit 1
# SPDX-License-Identifier: Apache-2.0
