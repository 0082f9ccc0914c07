#!/usr/bin/env bash
# bench/results_stage.sh - `anchorpost report` before and after the results
# stage (issue 27: attribute once, writers only format): time, CPU and
# peak memory, side by side in one run, and whether the outputs are
# byte-identical.
#
#   RUN=DIR    a recording (run.ring, perun/*.hdf5, profile.*.json); default:
#              record tests/victims/functions_victim.py REPS (default 60,
#              ~30 s) at py-spy --rate RATE (default 500) with the emulated
#              sensor
#   OLD=BIN    an anchorpost built before the results stage (e.g. from
#              commit 1ee8a12); without it only the current build is timed
#   N          rounds (default 3), OLD and NEW interleaved in each, so the
#              machine's load falls on both alike; best of N is quoted
#
# Both write into the same output path in turn (some files name it), then
# the two directories are compared file by file (cmp).
set -eu
REPS=${REPS:-60}
VICTIM_RUN_TAG=results-stage
. "$(dirname "$0")/lib/victim_run.sh"

# one report: "WALL CPU MAXRSS_KB" into $W/t.NAME.K, outputs kept in $W/out.NAME
one() {
	local name=$1 bin=$2 k=$3
	rm -rf "$W/rep"
	/usr/bin/time -f "%e %U %S %M" -o "$W/time" "$bin" report --ring "$RING" --perun "$P" --profile "$S" \
		-d "$W/rep" >"$W/stdout.$name" 2>"$W/stderr.$name"
	read -r w u s m <"$W/time"
	echo "$w $(echo "$u + $s" | bc) $m" >"$W/t.$name.$k"
	rm -rf "$W/out.$name"; mv "$W/rep" "$W/out.$name"
}
best() { # name: best wall, best cpu, lowest peak RSS over the rounds
	sort -n -k1,1 "$W"/t."$1".* | head -1 | awk '{printf "%s ", $1}'
	sort -n -k2,2 "$W"/t."$1".* | head -1 | awk '{printf "%s ", $2}'
	sort -n -k3,3 "$W"/t."$1".* | head -1 | awk '{printf "%s\n", $3}'
}
for k in $(seq "$N"); do
	[ -n "${OLD:-}" ] && one old "$OLD" "$k"
	one new "$AP" "$k"
done
read -r nw nc nm <<<"$(best new)"
printf '%-22s %8s %8s %12s\n' "" "wall_s" "cpu_s" "peak_rss_MB"
if [ -n "${OLD:-}" ]; then
	read -r ow oc om <<<"$(best old)"
	printf '%-22s %8s %8s %12.1f\n' "report before (OLD)" "$ow" "$oc" "$(echo "$om / 1024" | bc -l)"
fi
printf '%-22s %8s %8s %12.1f\n' "report now" "$nw" "$nc" "$(echo "$nm / 1024" | bc -l)"
if [ -n "${OLD:-}" ]; then
	printf 'now / before: wall %.3f, cpu %.3f, peak memory %.3f\n' "$(echo "$nw / $ow" | bc -l)" \
		"$(echo "$nc / $oc" | bc -l)" "$(echo "$nm / $om" | bc -l)"
	if diff -r "$W/out.old" "$W/out.new" >/dev/null && cmp -s "$W/stdout.old" "$W/stdout.new" &&
		cmp -s "$W/stderr.old" "$W/stderr.new"; then
		echo "outputs: byte-identical ($(find "$W/out.new" -type f | wc -l) files, stdout, stderr)"
	else
		echo "outputs: DIFFER"; diff -rq "$W/out.old" "$W/out.new" | head; exit 1
	fi
fi
uptime
