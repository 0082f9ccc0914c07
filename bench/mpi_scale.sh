#!/usr/bin/env bash
# bench/mpi_scale.sh - anchorpost on a 64-rank job: 64 synthetic rings of
# ~200 k events each (tools/ringgen: one rank per host, 64 hosts with
# unrelated monotonic clocks) plus a 64-host perun file (perun 1.0 layout,
# tools/ringgen/perun_synth.py, emulated RAPL package + dram per host),
# processed in ONE `anchorpost phases --by-rank --stragglers` run.
# Reports wall time, CPU time and peak RSS (GNU time); targets < 10 s and
# < 500 MB on 2 cores.  Results go to bench/RESULTS-mpi.md by hand.
#
#   bash bench/mpi_scale.sh [RANKS [STEPS]]     (defaults 64 16667)
# env: KEEP=1 keeps the data in $BENCH_DIR (default /tmp/anchor-mpi-scale).
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${1:-64}
STEPS=${2:-16667} # 12 records a step + SYNCs: ~200 k records a ring
DIR=${BENCH_DIR:-/tmp/anchor-mpi-scale}
B=${BUILD:-build}
rm -rf "$DIR"
mkdir -p "$DIR/rings" "$DIR/power" "$DIR/perun"
[ -x "$B/tools/ringgen" ] && [ -x "$B/anchorpost" ] || { echo "build first (make)"; exit 1; }

t0=$(date +%s.%N)
traces=()
for ((r = 0; r < RANKS; r++)); do
	h=$(printf 'node%03d' "$r")
	"$B/tools/ringgen" "$DIR/rings/run-$h-$r.ring" --rank "$r" --nranks "$RANKS" --steps "$STEPS" \
		--slow-rank 17 --slow-ms 2 --host "$h" --mono-base-ns $(((r * 7919 + 1000) * 1000000000)) \
		--seed 42 --power-out "$DIR/power/$h.csv" &
	traces+=("$h=$DIR/power/$h.csv")
	if (((r + 1) % 2 == 0)); then wait; fi
done
wait
python3 tools/ringgen/perun_synth.py "$DIR/perun/train.hdf5" "${traces[@]}"
t1=$(date +%s.%N)
echo "generated $RANKS rings ($(du -sh "$DIR/rings" | cut -f1)) + perun file ($(du -sh "$DIR/perun/train.hdf5" | cut -f1)) in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
"$B/anchorpost" info "$DIR/rings/run-node000-0.ring" | grep -E '^records'

# Drop nothing from the page cache on purpose: a login node post-processing
# a finished job reads files it just copied.  One warm-up read of the files:
cat "$DIR"/rings/*.ring "$DIR/perun/train.hdf5" >/dev/null

for threads in 1 2; do
	echo "== anchorpost phases --by-rank --stragglers, $threads thread(s)"
	/usr/bin/time -f "wall %e s  user %U s  sys %S s  peak RSS %M KB" \
		"$B/anchorpost" phases --rings "$DIR/rings" --perun "$DIR/perun/train.hdf5" --by-rank \
		--threads "$threads" -o "$DIR/phases.csv" --stragglers "$DIR/stragglers.csv" >"$DIR/out-$threads.txt" 2>"$DIR/time-$threads.txt" ||
		{ cat "$DIR/time-$threads.txt"; exit 1; }
	tail -n 1 "$DIR/time-$threads.txt"
done
echo "rows: $(wc -l <"$DIR/phases.csv") phases, $(wc -l <"$DIR/stragglers.csv") stragglers"
grep -E '^r17@' "$DIR/out-2.txt" | tail -n 1 | sed 's/^/straggler line: /'
[ -n "${KEEP:-}" ] || rm -rf "$DIR"
