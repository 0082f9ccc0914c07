#!/usr/bin/env bash
# bench/pyspy_scale.sh - anchorpost vs Python on a 1 h @ 500 Hz py-spy
# speedscope profile (1.8 M samples, stacks 20-60 deep, ~2,000 frames,
# ~270 MB), side by side in one run:
#   A  anchorpost samples P --by-frame -o frames.csv
#   B  python3 bench/pyspy_py_baseline.py P frames.csv   (json.load + same aggregate)
#   C  python3 bench/pyspy_py_baseline.py P - --load-only (json.load alone)
#   D  anchorpost samples P -o samples.csv --stack-text  (one row per sample, whole stack as text;
#      the compact default is measured by bench/samples_compact.sh)
#   E  pyspy_load() of the whole model + pyspy_write_energy_speedscope()
#      (tests/victims/pyspy_energy_main.c): the memory of the in-memory model
# Each is run REPEAT times (default 2; D and E once), best wall time kept,
# with its user+system CPU time (less sensitive than wall time to other
# load on a shared machine); peak RSS from /usr/bin/time -v.  A and B outputs are compared row by row.  Results go
# to bench/RESULTS-pyspy.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
PY=$("$PY" -c 'import sys; print(sys.executable)')
REPEAT=${REPEAT:-2}
DATA=$ROOT/bench/data
P=$DATA/pyspy_1h_500hz.speedscope.json
AP=$ROOT/build/anchorpost
[ -x /usr/bin/time ] || { echo "pyspy_scale: /usr/bin/time missing (scripts/install-deps.sh installs 'time')"; exit 1; }
make -s -C "$ROOT" build/anchorpost >/dev/null
mkdir -p "$DATA"
[ -s "$P" ] || "$PY" bench/gen_pyspy_profile.py "$P"

# measure NAME CMD...: best wall seconds and max peak RSS (KB) over REPEAT runs
declare -A WALL RSS CPU
measure() {
	local name=$1; shift
	local best="" cpu="" rss=0 w r c
	for _ in $(seq "$REPEAT"); do
		/usr/bin/time -v -o "$DATA/time.$name" "$@" >/dev/null
		w=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$DATA/time.$name")
		c=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/{s+=$2} END{print s}' "$DATA/time.$name")
		r=$(awk -F': ' '/Maximum resident set size/{print $2}' "$DATA/time.$name")
		if [ -z "$best" ] || [ "$(echo "$w < $best" | bc)" = 1 ]; then best=$w; fi
		if [ -z "$cpu" ] || [ "$(echo "$c < $cpu" | bc)" = 1 ]; then cpu=$c; fi
		[ "$r" -gt "$rss" ] && rss=$r
	done
	WALL[$name]=$best; RSS[$name]=$rss; CPU[$name]=$cpu
	printf '%-28s %8.2f s wall %8.2f s cpu %10d KB\n' "$name" "$best" "$cpu" "$rss"
}

size=$(stat -c %s "$P")
load0=$(cut -d' ' -f1-3 /proc/loadavg)
measure anchorpost_by_frame "$AP" samples "$P" --by-frame -o "$DATA/frames.anchorpost.csv"
measure python_load_aggregate "$PY" bench/pyspy_py_baseline.py "$P" "$DATA/frames.python.csv"
measure python_json_load "$PY" bench/pyspy_py_baseline.py "$P" - --load-only
REPEAT=1 measure anchorpost_csv "$AP" samples "$P" -o "$DATA/samples.csv" --stack-text
cc -std=c11 -O2 -D_GNU_SOURCE -I. -Ipostproc -o "$DATA/pyspy_energy_main" tests/victims/pyspy_energy_main.c \
	postproc/input/pyspy_{tables,read,speedscope,chrometrace,raw}.c postproc/output/pyspy_energy.c $(pkg-config --cflags --libs yajl) -lm
REPEAT=1 measure model_energy_write "$DATA/pyspy_energy_main" "$P" "$DATA/energy.json" 7
energy_bytes=$(stat -c %s "$DATA/energy.json")
rm -f "$DATA/energy.json"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
csv_bytes=$(stat -c %s "$DATA/samples.csv")
csv_rows=$(($(wc -l <"$DATA/samples.csv") - 1))
rm -f "$DATA"/samples*.csv

# Same answer?  Compare the two per-frame tables row by row.
"$PY" - "$DATA/frames.anchorpost.csv" "$DATA/frames.python.csv" <<'PYEOF'
import csv, sys
a = {(r["function"], r["file"], r["line"]): r for r in csv.DictReader(open(sys.argv[1]))}
b = {(r["function"], r["file"], r["line"]): r for r in csv.DictReader(open(sys.argv[2]))}
assert a.keys() == b.keys(), "frame sets differ"
for k in a:
    assert a[k]["self_samples"] == b[k]["self_samples"] and a[k]["total_samples"] == b[k]["total_samples"], k
    assert abs(float(a[k]["total_s"]) - float(b[k]["total_s"])) < 1e-6 * max(1, float(b[k]["total_s"])), k
print("per-frame tables agree: %d frames" % len(a))
PYEOF
[ "$csv_rows" -eq 1800000 ] || { echo "samples.csv has $csv_rows rows, want 1800000"; exit 1; }

ratio() { echo "scale=1; $1 / $2" | bc | sed 's/^\./0./'; }
r_agg=$(ratio "${WALL[python_load_aggregate]}" "${WALL[anchorpost_by_frame]}")
r_load=$(ratio "${WALL[python_json_load]}" "${WALL[anchorpost_by_frame]}")
r_csv=$(ratio "${WALL[python_load_aggregate]}" "${WALL[anchorpost_csv]}")
c_agg=$(ratio "${CPU[python_load_aggregate]}" "${CPU[anchorpost_by_frame]}")
c_load=$(ratio "${CPU[python_json_load]}" "${CPU[anchorpost_by_frame]}")
c_csv=$(ratio "${CPU[python_load_aggregate]}" "${CPU[anchorpost_csv]}")
mb() { echo "scale=1; $1 / 1024" | bc; }
cat >"$ROOT/bench/RESULTS-pyspy.md" <<MD
# py-spy reader at scale (bench/pyspy_scale.sh)

Command: \`bash bench/pyspy_scale.sh\` (REPEAT=$REPEAT, best wall time of the repeats, peak RSS from
\`/usr/bin/time -v\`), run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),
load average before/after: $load0 / $load1 (other work shared the machine; all four ran in the same window).

Input: \`bench/gen_pyspy_profile.py\` (seed 1): 1 h at 500 Hz, 1,800,000 samples, stacks 20-60 deep,
2,009 frames, 16,200 distinct stacks, $(echo "scale=0; $size / 1000000" | bc) MB of py-spy 0.4-layout speedscope JSON.

| run | wall s | CPU s (user+sys) | peak RSS MB |
|---|---:|---:|---:|
| A \`anchorpost samples P --by-frame\` | ${WALL[anchorpost_by_frame]} | ${CPU[anchorpost_by_frame]} | $(mb "${RSS[anchorpost_by_frame]}") |
| B Python \`json.load\` + same per-frame aggregate | ${WALL[python_load_aggregate]} | ${CPU[python_load_aggregate]} | $(mb "${RSS[python_load_aggregate]}") |
| C Python \`json.load\` alone | ${WALL[python_json_load]} | ${CPU[python_json_load]} | $(mb "${RSS[python_json_load]}") |
| D \`anchorpost samples P -o samples.csv --stack-text\` ($csv_rows rows, $(echo "scale=0; $csv_bytes / 1000000" | bc) MB of CSV) | ${WALL[anchorpost_csv]} | ${CPU[anchorpost_csv]} | $(mb "${RSS[anchorpost_csv]}") |
| E whole model in memory (\`pyspy_load\`) + energy speedscope written ($(echo "scale=0; $energy_bytes / 1000000" | bc) MB) | ${WALL[model_energy_write]} | ${CPU[model_energy_write]} | $(mb "${RSS[model_energy_write]}") |

Ratios, wall (CPU): B/A = **${r_agg}x** (${c_agg}x), target >= 5x; C/A = ${r_load}x (${c_load}x), i.e. the
aggregate is faster than \`json.load\` alone; B/D = ${r_csv}x (${c_csv}x) for the full CSV, which writes every
stack of every sample (its wall time is mostly writing the file).
Peak RSS of anchorpost: A $(mb "${RSS[anchorpost_by_frame]}") MB, D $(mb "${RSS[anchorpost_csv]}") MB, the full model E $(mb "${RSS[model_energy_write]}") MB (target < 200 MB).
A and B produce the same per-frame table (checked row by row in the run).

Notes: on a shared machine wall times are inflated, Python's most (its wall time ran 3-6x its CPU
time here), so the CPU-time ratios are the conservative figures.  anchorpost scans the \`samples\`
arrays with a byte loop and the rest of the document with yajl (postproc/input/pyspy_speedscope.c); A keeps
per-stack counters only, D buffers 24 B per sample until the frame table (written last by py-spy)
arrives, E is \`pyspy_load()\` holding all 1.8 M samples plus \`pyspy_write_energy_speedscope()\`.
MD
echo "wrote bench/RESULTS-pyspy.md"
cat "$ROOT/bench/RESULTS-pyspy.md"
