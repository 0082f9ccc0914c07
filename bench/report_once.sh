#!/usr/bin/env bash
# bench/report_once.sh - `anchorpost report` against one read of its
# largest input (DESIGN.md: report <= 1.3x the time of reading its inputs
# once; issue 11).
#
# Records tests/victims/functions_victim.py for REPS repetitions (default 120,
# ~60 s) at py-spy --rate RATE (default 500) under real perun (emulated
# RAPL) and real py-spy, unless RUN=DIR names an existing recording.  Then,
# best of N (default 3) wall-clock runs each:
#   read     `anchorpost samples PROFILE --by-frame -o /dev/null`: one
#            streaming parse of the profile (the largest input)
#   report   `anchorpost report --ring --perun --profile -d OUT`
#   old      the same report with $OLD (an anchorpost built before the run
#            model, e.g. from commit 05c870f), when OLD is set
# and prints wall and CPU (user + sys) seconds, best of N each, and the
# ratios to the read.
set -eu
REPS=${REPS:-120}
VICTIM_RUN_TAG=report-once
. "$(dirname "$0")/lib/victim_run.sh"

# best of N runs of "$@": "WALL CPU" seconds (CPU = user + sys: on a
# loaded machine the wall clock mostly measures the wait for a core)
best() {
	local bw= bc=
	for _ in $(seq "$N"); do
		rm -rf "$W/out"
		/usr/bin/time -f "%e %U %S" -o "$W/time" "$@" >/dev/null 2>&1
		read -r w u s <"$W/time"
		c=$(echo "$u + $s" | bc)
		if [ -z "$bw" ] || [ "$(echo "$w < $bw" | bc)" = 1 ]; then bw=$w; fi
		if [ -z "$bc" ] || [ "$(echo "$c < $bc" | bc)" = 1 ]; then bc=$c; fi
	done
	echo "$bw $bc"
}
ratio() { echo "scale=2; $1 / $2" | bc; }
read -r read_w read_c <<<"$(best "$AP" samples "$S" --by-frame -o /dev/null)"
read -r rep_w rep_c <<<"$(best "$AP" report --ring "$RING" --perun "$P" --profile "$S" -d "$W/out")"
printf '%-26s %8s %8s %10s %10s\n' "" "wall_s" "cpu_s" "wall/read" "cpu/read"
printf '%-26s %8s %8s\n' "read the profile once" "$read_w" "$read_c"
printf '%-26s %8s %8s %10s %10s\n' "report" "$rep_w" "$rep_c" "$(ratio "$rep_w" "$read_w")" "$(ratio "$rep_c" "$read_c")"
if [ -n "${OLD:-}" ]; then
	read -r old_w old_c <<<"$(best "$OLD" report --ring "$RING" --perun "$P" --profile "$S" -d "$W/out")"
	printf '%-26s %8s %8s %10s %10s\n' "report before (OLD)" "$old_w" "$old_c" "$(ratio "$old_w" "$read_w")" "$(ratio "$old_c" "$read_c")"
fi
uptime
