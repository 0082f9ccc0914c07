#!/usr/bin/env bash
# t_report_once_slow.sh - `report` over one run model: a real recording
# (anchorpost record: real perun over the emulated RAPL, real py-spy,
# tests/victims/functions_victim.py), then
#  1. strace -f: report opens the ring, the profile and the perun file once
#     each, and `anchorpost perun` alone the perun file once (the guard's
#     child parses the bytes the parent read, perun_guard.c); before the run
#     model report opened them 4, 5 and 10 times, before the memory image
#     the perun file 4 times (twice in the child, twice in the parent);
#  2. report's files equal the single commands' (functions, timeline,
#     perun --ring, samples --ring, phases) byte for byte;
#  3. all or nothing: a report that fails half-way (ulimit -f) leaves no
#     directory and no temp files, and an existing OUTDIR unchanged;
#  4. `anchorpost` alone in the run directory prints the table and writes
#     phases.csv (= `phases`), `anchorpost report DIR` writes DIR/report,
#     and with two rings both name the candidates and exit 2.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
AP=$BUILD/anchorpost

if ! "$PYTHON" -c 'import anchor' 2>/dev/null; then
	echo "skipped: the anchor module is not importable (make)"
	exit 77
fi
if ! command -v strace >/dev/null; then
	echo "skipped: strace missing (scripts/install-deps.sh)"
	exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }

"$AP" record -o "$T/rec" --rate 100 --sensor emulated -- "$PYTHON" tests/victims/functions_victim.py 3 >"$T/record.out"
R=$T/rec
RING=$R/run.ring
P=$(ls "$R"/perun/*.hdf5)
S=$R/profile.chrometrace.json
[ -f "$S" ] || fail "no chrometrace profile in $R"

# 1. Each input opened once (strace -f: the guard's child too).
opens() { grep -v ' = -1 ' "$1" | grep -c "\"$2\"" || true; }
strace -f -qq -e trace=open,openat -o "$T/report.strace" \
	"$AP" report --ring "$RING" --perun "$P" --profile "$S" -d "$T/rep" >"$T/report.out"
strace -f -qq -e trace=open,openat -o "$T/perun.strace" "$AP" perun "$P" -o "$T/perun-alone.csv" >/dev/null
n_ring=$(opens "$T/report.strace" "$RING")
n_prof=$(opens "$T/report.strace" "$S")
n_perun=$(opens "$T/report.strace" "$P")
n_perun1=$(opens "$T/perun.strace" "$P")
echo "report opened: ring $n_ring, profile $n_prof, perun $n_perun (perun alone: $n_perun1)"
[ "$n_ring" = 1 ] || fail "report opened the ring $n_ring times"
[ "$n_prof" = 1 ] || fail "report opened the profile $n_prof times"
[ "$n_perun" = 1 ] || fail "report opened the perun file $n_perun times"
[ "$n_perun1" = 1 ] || fail "anchorpost perun opened the perun file $n_perun1 times"

# 2. The same files as the single commands (run from the same directory:
# frames in "<string>" are read from the script perun ran, a relative path).
"$AP" phases --ring "$RING" --perun "$P" -o "$T/one-phases.csv" >/dev/null
"$AP" functions --ring "$RING" --perun "$P" --profile "$S" -o "$T/one-functions.csv" \
	--speedscope-out "$T/one-energy.speedscope.json" 2>/dev/null
"$AP" timeline --ring "$RING" --perun "$P" --profile "$S" -o "$T/one-timeline.csv" 2>/dev/null
"$AP" samples "$S" --ring "$RING" -o "$T/one-samples.csv"
for f in phases.csv functions.csv timeline.csv samples.csv energy.speedscope.json; do
	cmp -s "$T/one-$f" "$T/rep/$f" || fail "report's $f differs from the single command's"
done
# report's perun.csv is `perun --ring` (t_s,unix_s on the run's timeline).
"$AP" perun "$P" --ring "$RING" -o "$T/one-perun.csv" >/dev/null
cmp -s "$T/one-perun.csv" "$T/rep/perun.csv" || fail "report's perun.csv differs from 'anchorpost perun --ring'"
echo "ok: report's files equal the single commands'"

# 3. All or nothing.
if (ulimit -f 100; trap '' XFSZ; "$AP" report --ring "$RING" --perun "$P" --profile "$S" -d "$T/aon/new/rep") \
	>/dev/null 2>"$T/aon.err"; then
	fail "report under ulimit -f 100 succeeded"
fi
[ "$(wc -l <"$T/aon.err")" = 1 ] || fail "failed report: not one line: $(cat "$T/aon.err")"
# The line names the file under OUTDIR, the path the user gave, not the
# build directory beside it that is gone by then.
grep -qF "$T/aon/new/rep/" "$T/aon.err" || fail "failed report does not name its output path: $(cat "$T/aon.err")"
! grep -q '\.tmp\.' "$T/aon.err" || fail "failed report names a temp path: $(cat "$T/aon.err")"
[ ! -e "$T/aon" ] || fail "a failed report left $(find "$T/aon")"
cp -r "$T/rep" "$T/old" && cp -r "$T/rep" "$T/keep"
if (ulimit -f 100; trap '' XFSZ; "$AP" report --ring "$RING" --perun "$P" --profile "$S" -d "$T/old") \
	>/dev/null 2>/dev/null; then
	fail "report under ulimit -f 100 succeeded"
fi
diff -r "$T/old" "$T/keep" >/dev/null || fail "a failed report changed the existing OUTDIR"
ls -d "$T"/old.tmp.* 2>/dev/null && fail "a failed report left its temp directory"
echo "ok: a failed report leaves nothing behind and an existing OUTDIR as it was"

# 4. anchorpost alone, report DIR, several candidates.
(cd "$R" && "$AP" >"$T/here.out") || fail "anchorpost alone in the run directory failed"
grep -q "^hot " "$T/here.out" || fail "anchorpost alone: no per-phase table: $(cat "$T/here.out")"
cmp -s "$R/phases.csv" "$T/one-phases.csv" || fail "anchorpost alone: phases.csv differs from 'phases'"
"$AP" report "$R" >"$T/rdir.out" || fail "report DIR failed"
cmp -s "$R/report/functions.csv" "$T/rep/functions.csv" || fail "report DIR: functions.csv differs"
rm "$R/phases.csv"
cp "$RING" "$R/second.ring"
set +e
(cd "$R" && "$AP") >/dev/null 2>"$T/two.err"
rc=$?
"$AP" report "$R" >/dev/null 2>"$T/two2.err"
rc2=$?
set -e
[ $rc = 2 ] && [ $rc2 = 2 ] || fail "two rings: exit $rc / $rc2, want 2"
grep -q "second.ring" "$T/two.err" && grep -q "run.ring" "$T/two.err" || fail "two rings not named: $(cat "$T/two.err")"
[ "$(wc -l <"$T/two2.err")" = 1 ] || fail "two rings: not one line"
echo "ok: anchorpost alone and report DIR find the run; two rings are named, exit 2"
