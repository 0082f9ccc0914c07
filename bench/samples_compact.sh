#!/usr/bin/env bash
# bench/samples_compact.sh - the compact samples.csv (issue 13 point 3) on
# the benchmark py-spy profile (bench/gen_pyspy_profile.py: 1 h at 500 Hz,
# 1.8 M samples; SECONDS=360 for a tenth of it), side by side in one run:
#   C  python3 bench/pyspy_py_baseline.py P - --load-only   (json.load alone)
#   S  anchorpost samples P -o samples.csv   (+ .stacks/.frames/.threads.csv)
#   T  anchorpost samples P -o samples.csv --stack-text   (the old full text)
# Each is run REPEAT times (default 2; T once), best wall time and least
# CPU time kept, peak RSS from /usr/bin/time -v.  Prints a Markdown table:
# bytes per sample and the ratio C/S (target: <= 120 B, >= 5x).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
REPEAT=${REPEAT:-2}
SECONDS_=${SECONDS:-3600}
DATA=$ROOT/bench/data
P=$DATA/pyspy_${SECONDS_%.*}s_500hz.speedscope.json
AP=$ROOT/build/anchorpost
[ -x /usr/bin/time ] || { echo "samples_compact: /usr/bin/time missing"; exit 1; }
make -s -C "$ROOT" build/anchorpost >/dev/null
mkdir -p "$DATA"
[ -s "$P" ] || "$PY" bench/gen_pyspy_profile.py "$P" --seconds "$SECONDS_"

declare -A WALL RSS CPU
measure() {
	local name=$1 n=$2; shift 2
	local best="" cpu="" rss=0 w r c
	for _ in $(seq "$n"); do
		/usr/bin/time -v -o "$DATA/time.$name" "$@" >/dev/null
		w=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$DATA/time.$name")
		c=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/{s+=$2} END{print s}' "$DATA/time.$name")
		r=$(awk -F': ' '/Maximum resident set size/{print $2}' "$DATA/time.$name")
		if [ -z "$best" ] || [ "$(echo "$w < $best" | bc)" = 1 ]; then best=$w; fi
		if [ -z "$cpu" ] || [ "$(echo "$c < $cpu" | bc)" = 1 ]; then cpu=$c; fi
		[ "$r" -gt "$rss" ] && rss=$r
	done
	WALL[$name]=$best; RSS[$name]=$rss; CPU[$name]=$cpu
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
measure json_load "$REPEAT" "$PY" bench/pyspy_py_baseline.py "$P" - --load-only
measure compact "$REPEAT" "$AP" samples "$P" -o "$DATA/samples.csv"
rows=$(($(wc -l <"$DATA/samples.csv") - 1))
b_main=$(stat -c %s "$DATA/samples.csv")
b_comp=$(cat "$DATA"/samples.{stacks,frames,threads}.csv | wc -c)
rm -f "$DATA"/samples*.csv
measure stack_text 1 "$AP" samples "$P" -o "$DATA/samples.csv" --stack-text
b_text=$(stat -c %s "$DATA/samples.csv")
rm -f "$DATA"/samples*.csv
load1=$(cut -d' ' -f1-3 /proc/loadavg)

r2() { echo "scale=2; $1 / $2" | bc | sed 's/^\./0./'; }
mb() { echo "scale=1; $1 / 1024" | bc | sed 's/^\./0./'; }
cat <<MD
Command: \`SECONDS=$SECONDS_ REPEAT=$REPEAT bash bench/samples_compact.sh\`, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores,
load average before/after $load0 / $load1; input $(basename "$P") ($(($(stat -c %s "$P") / 1000000)) MB, $rows samples).

| run | wall s | CPU s | peak RSS MB | output | bytes per sample |
|---|---:|---:|---:|---:|---:|
| C Python \`json.load\` alone | ${WALL[json_load]} | ${CPU[json_load]} | $(mb "${RSS[json_load]}") | - | - |
| S \`anchorpost samples P -o samples.csv\` | ${WALL[compact]} | ${CPU[compact]} | $(mb "${RSS[compact]}") | $((b_main / 1000000)) MB + $((b_comp / 1000)) kB companions | $(r2 "$b_main" "$rows") (+$(r2 "$b_comp" "$rows")) |
| T the same with \`--stack-text\` | ${WALL[stack_text]} | ${CPU[stack_text]} | $(mb "${RSS[stack_text]}") | $((b_text / 1000000)) MB | $(r2 "$b_text" "$rows") |

Ratios C/S: wall **$(r2 "${WALL[json_load]}" "${WALL[compact]}")x**, CPU $(r2 "${CPU[json_load]}" "${CPU[compact]}")x (target >= 5x); T/S bytes $(r2 "$b_text" "$b_main")x.
MD
