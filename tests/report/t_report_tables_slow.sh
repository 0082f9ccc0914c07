#!/usr/bin/env bash
# t_report_tables_slow.sh - the report's tables on one timeline (issue 13
# points 1, 3, 4): a real run (`anchorpost record`, chrometrace py-spy,
# real perun on the emulated sensor, sync pulses) of tests/victims/functions_victim.py,
# then `anchorpost report`, then tests/lib/report_check.py --profile --functions:
# one py-spy sample and one perun sample agree to the microsecond across
# samples.csv, perun.csv, timeline.csv, trace.json and the alignment
# functions used; every CSV loads in pandas with one dtype per column;
# samples.csv is compact (stack_id + companions) with OS tids from the ring.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
REPS=4

if ! "$PYTHON" -c 'import anchor' 2>/dev/null; then
	echo "skipped: the anchor module is not importable (make)"
	exit 77
fi
if ! "$PYTHON" -c 'import pandas' 2>/dev/null; then
	echo "skipped: pandas is not installed"
	exit 77
fi
"$BUILD/anchorpost" record -o "$T/rec" --format chrometrace --rate 100 --sensor emulated -- \
	"$PYTHON" tests/victims/functions_victim.py $REPS >"$T/record.out"
"$BUILD/anchorpost" report --ring "$T/rec/run.ring" --perun "$T/rec/perun/functions_victim.hdf5" \
	--profile "$T/rec/profile.chrometrace.json" -d "$T/rep" >"$T/report.out"
"$PYTHON" tests/lib/report_check.py "$T/rep" --steps $REPS --phases hot,cool --emulated --profile --functions

# The single commands give the report's numbers (one alignment, computed alike).
"$BUILD/anchorpost" perun "$T/rec/perun/functions_victim.hdf5" --ring "$T/rec/run.ring" -o "$T/perun.csv" >/dev/null
cmp "$T/perun.csv" "$T/rep/perun.csv"
"$BUILD/anchorpost" samples "$T/rec/profile.chrometrace.json" --ring "$T/rec/run.ring" -o "$T/s.csv"
cmp "$T/s.csv" "$T/rep/samples.csv"
echo "ok   perun --ring and samples --ring alone write the report's perun.csv and samples.csv byte for byte"

"$PYTHON" - "$T/rep" <<'PY'
import csv, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/samples.csv")))
threads = list(csv.DictReader(open(f"{d}/samples.threads.csv")))
size = sum(len(",".join(r.values())) + 1 for r in rows)
per = size / len(rows)
assert per <= 120, f"samples.csv: {per:.0f} bytes per sample"
assert "stack" not in rows[0] and "stack_text" not in rows[0], list(rows[0])
# chrometrace names pthread ids; the ring gives the OS tid and a name for the
# threads it maps (the main thread at least)
mapped = [t for t in threads if t["tid"]]
assert mapped and all(int(t["tid"]) < 1 << 22 and t["pthread_id"] and int(t["pthread_id"]) != int(t["tid"]) for t in mapped), threads
assert any(t["thread_name"] for t in mapped), threads
print(f"ok   samples.csv: {len(rows)} rows, {per:.0f} bytes per sample; {len(mapped)} of {len(threads)} threads with OS tid from the ring")
PY
echo "PASS"
