#!/usr/bin/env bash
# gpu-check.sh - the device check in one command (docs/gpu-check.md).
#
#   bash scripts/gpu-check.sh [-o DIR]            on a machine with an NVIDIA GPU and its driver
#   bash scripts/gpu-check.sh --stand-in [-o DIR] anywhere: the NVML stub and a stand-in device
#   --no-perun: skip the second pass under perun
#
# Needs only the built bundle (make gpu-check: build/gpu-check, < 1 MiB),
# bash and awk; no pip, no network.  Runs the workload (tools/gpu_check/
# gpucheck.c) under libanchor's NVML sampler at 1 kHz (ANCHOR_SENSORS=nvml),
# then anchor-sensors (anchorpost's `sensors` command) on its ring, and,
# if perun is importable, the same workload under perun with `anchorpost
# phases` (on the stand-in perun reads the stub pynvml, which reads the C stub).  Writes DIR (default ./gpu-check-<UTC time>)
# with the ring, every output, and summary.txt, which it also prints.
# --stand-in: the stub's sensor is ANCHOR_EMUL_NVML_SENSOR or, by
# default, the H100 figures with a random window delay and board gain
# (tools/emulated_power/nvml_stub/libnvml_stub.c); the run then fails
# unless the summary recovers the configured period and window within
# 2 ms and the 1:2:4 ratios within 3 %.
# Exit: 0 done (stand-in: and recovered), 1 a step failed or not recovered, 2 usage.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${GPU_CHECK_BUNDLE:-$ROOT/build/gpu-check}
STANDIN=0
NOPERUN=0
OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	--stand-in) STANDIN=1 ;;
	--no-perun) NOPERUN=1 ;;
	-o) OUT=${2:?-o needs a directory}; shift ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-./gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
say() { echo "gpu-check: $*" >&2; }

if [ ! -x "$B/gpucheck" ] || [ ! -x "$B/anchor-sensors" ]; then
	say "no bundle at $B: building it (make gpu-check)"
	make -s -C "$ROOT" gpu-check >"$OUT/build.log" 2>&1 || { say "make gpu-check failed: $OUT/build.log"; exit 1; }
fi

# The run: 1 kHz NVML sampler into a ring big enough for all of it (a
# tick is one 64-byte slot, three with 8 GPUs; the run is about 45 s),
# small enough to bring back.
export ANCHOR_SENSORS=nvml ANCHOR_SENSOR_HZ=1000 ANCHOR_RING_SIZE=16M
if [ $STANDIN = 1 ]; then
	ANCHOR_DISABLE=1 "$B/gpucheck" --make-phase-file "$OUT/phase.mmap" || { say "cannot create $OUT/phase.mmap"; exit 1; }
	export ANCHOR_NVML_LIB=$B/libnvml_stub.so ANCHOR_EMUL_PHASE_FILE=$OUT/phase.mmap ANCHOR_EMUL_GPU_W=0,60,300
	export ANCHOR_EMUL_NVML_SENSOR=${ANCHOR_EMUL_NVML_SENSOR-period_ms=100,window_ms=25,delay_ms=R,gain=R,counter_ms=100,avg_ms=1000,seed=$RANDOM}
	unset ANCHOR_EMUL_NVML_ROOT
	RUN=("$B/gpucheck" --stand-in "$OUT/phase.mmap")
else
	RUN=("$B/gpucheck" --kernels "$B")
fi
say "workload ($([ $STANDIN = 1 ] && echo stand-in || echo cuda)), about 45 s"
ANCHOR_FILE=$OUT/run.ring timeout 240 "${RUN[@]}" >"$OUT/gpucheck.txt" 2>"$OUT/gpucheck.err" ||
	{ say "the workload failed: $(tail -n 3 "$OUT/gpucheck.err")"; exit 1; }
# Marks in a ring of their own (400k of them; not kept: only their cost is).
ANCHOR_SENSORS=0 ANCHOR_RING_SIZE=32M ANCHOR_FILE=$OUT/markcost.ring timeout 60 "$B/gpucheck" --mark-cost \
	>>"$OUT/gpucheck.txt" 2>>"$OUT/gpucheck.err" || say "the mark cost run failed (see gpucheck.err)"
rm -f "$OUT/markcost.ring"
"$B/anchor-sensors" "$OUT/run.ring" -o "$OUT/sensors.csv" >"$OUT/sensors.txt" 2>"$OUT/sensors.err" ||
	{ say "anchor-sensors failed: $(cat "$OUT/sensors.err")"; exit 1; }

# perun, if it and its dependencies are importable: the same workload
# again under `perun monitor` (perun preloaded with libanchor, so its
# processes share the ring), then `anchorpost phases` on its HDF5 file,
# which models perun's GPU readings with the response identified in that
# run's ring.  On the stand-in perun reads the stub pynvml, which reads the
# C stub: one emulated board for perun and the sampler.
PERUN_LINE="perun: not importable here (skipped)"
if [ $NOPERUN = 1 ]; then
	PERUN_LINE="perun: skipped (--no-perun)"
elif python3 -c 'import perun' 2>/dev/null; then
	mkdir -p "$OUT/perun"
	PRUN=("$B/gpucheck" --kernels "$B")
	PPATH=${PYTHONPATH:-}
	if [ $STANDIN = 1 ]; then
		ANCHOR_DISABLE=1 "$B/gpucheck" --make-phase-file "$OUT/perun-phase.mmap" || exit 1
		PRUN=("$B/gpucheck" --stand-in "$OUT/perun-phase.mmap")
		PPATH=$ROOT/tools/emulated_power/nvml_stub${PPATH:+:$PPATH}
	fi
	say "the workload again under perun"
	# A Python launcher, not `monitor -b` (perun 1.0 wrote no file for a
	# binary here), that never calls sys.exit (perun 1.0 then writes
	# nothing either, docs/perun-emulation.md); the status goes to a file.
	printf '%s\n' 'import os, subprocess' \
		'rc = subprocess.call(os.environ["GPUCHECK_CMD"].split("\x1f"))' \
		'open(os.environ["GPUCHECK_RC"], "w").write(str(rc))' >"$OUT/gpucheck_launch.py"
	if GPUCHECK_CMD=$(IFS=$'\x1f'; echo "${PRUN[*]}") GPUCHECK_RC=$OUT/perun_workload.rc PYTHONPATH=$PPATH \
		ANCHOR_EMUL_PHASE_FILE=$OUT/perun-phase.mmap LD_PRELOAD=$B/libanchor.so.0 ANCHOR_FILE=$OUT/perun.ring \
		timeout 300 python3 -m perun monitor --data_out "$OUT/perun" --sampling_period 0.1 "$OUT/gpucheck_launch.py" \
		>"$OUT/perun.log" 2>&1 && [ "$(cat "$OUT/perun_workload.rc" 2>/dev/null)" = 0 ] &&
		ls "$OUT"/perun/*.hdf5 >/dev/null 2>&1; then
		H5=$(ls "$OUT"/perun/*.hdf5 | head -n 1)
		PERUN_LINE="perun: $H5"
		if [ -x "$ROOT/build/anchorpost" ] && "$ROOT/build/anchorpost" phases --ring "$OUT/perun.ring" --perun "$H5" \
			-o "$OUT/perun_phases.csv" >"$OUT/perun_phases.txt" 2>&1; then
			PERUN_LINE="$PERUN_LINE; $(grep -o 'gpu0: NVML power reading [^;(]*' "$OUT/perun_phases.txt" | head -n 1)"
		else
			PERUN_LINE="$PERUN_LINE; anchorpost phases did not run (perun_phases.txt)"
		fi
	else
		PERUN_LINE="perun: monitor failed or wrote no HDF5 file (perun.log)"
	fi
fi
[ -f "$OUT/perun_phases.csv" ] || : >"$OUT/perun_phases.csv"

# The summary: sensors.csv (gpu,quantity,phase,value,lo,hi,unit,note) and
# gpucheck.txt (key=value).
awk -F, -v standin=$STANDIN -v perun="$PERUN_LINE" -v out="$OUT" '
function kv(k) { return (k in K) ? K[k] : "absent" }
FILENAME ~ /gpucheck.txt$/ { i = index($0, "="); if (i) K[substr($0, 1, i - 1)] = substr($0, i + 1); next }
FNR == 1 { next }
FILENAME ~ /perun_phases.csv$/ { if ($1 != "counters" && $4 == "gpu" && ($3 ~ /^k[124]x$/ || $3 ~ /^sq/)) {
	ph = $3 ~ /^sq/ ? "sq" : $3; PJ[ph] += $11; PL[ph] += $14; PH[ph] += $15; PN++; if ($18 ~ /unidentifiable/) PU++ } next }
$1 == "gpu0" { V[$2 "|" $3] = $4; L[$2 "|" $3] = $5; H[$2 "|" $3] = $6; N[$2 "|" $3] = $8 }
END {
	split(kv("stub_spec"), sp, " "); for (j in sp) { split(sp[j], q, "="); C[q[1]] = q[2] }
	bad = 0
	printf "gpu-check summary (%s)\n", out
	printf "device        %s%s\n", kv("device"), standin ? " [emulated sensor, not a measurement]" : ""
	if (standin) printf "configured    instant power: period %s ms, window %s ms, delay %s ms; power reading: %s ms average; gain %s, counter %s ms\n", C["period_ms"], C["window_ms"], C["delay_ms"], C["avg_ms"], C["gain"], C["counter_ms"]
	for (r = 0; r < 2; r++) {
		pre = r ? "power" : "instant"; lab = r ? "reading" : "instant"
		if (!((pre "_update_period_ms|") in V)) { printf "(c) %-9s not in the ring (the driver does not answer it)\n", lab; continue }
		printf "(c) %-9s update period %.3f ms [%.3f, %.3f]; window %.2f ms [%.2f, %.2f], ending %.2f ms [%.2f, %.2f] before each update; r2 %.4f (%s)\n", lab, V[pre "_update_period_ms|"], L[pre "_update_period_ms|"], H[pre "_update_period_ms|"], V[pre "_window_ms|"], L[pre "_window_ms|"], H[pre "_window_ms|"], V[pre "_window_delay_ms|"], L[pre "_window_delay_ms|"], H[pre "_window_delay_ms|"], V[pre "_fit_r2|"], N[pre "_update_period_ms|"]
	}
	p = V["instant_update_period_ms|"]; w = V["instant_window_ms|"]
	printf "(c) counter   updates every %.3f ms [%.3f, %.3f]\n", V["counter_update_ms|"], L["counter_update_ms|"], H["counter_update_ms|"]
	printf "(d) counter   %.3f J vs integrated readings %.3f J (%+.2f %%), integrated instant power %.3f J (%+.2f %%)\n", V["counter_j|"], V["integrated_power_j|"], V["power_vs_counter_pct|"], V["integrated_instant_j|"], V["instant_vs_counter_pct|"]
	hs = 0; ds = 0; hj = 0; dj = 0
	for (k in V) if (k ~ /^host_s\|sq/) { ph = substr(k, 8); hs += V[k]; ds += V["device_s|" ph]; hj += V["host_j|" ph]; dj += V["device_j|" ph] }
	printf "(a) square    host-side %.3f s and %.2f J, device-side %.3f s and %.2f J over the sq* phases\n", hs, hj, ds, dj
	for (m = 1; m <= 4; m *= 2) printf "(a) k%dx       host %.4f s %.2f J, device %.4f s %.2f J [%.2f, %.2f]\n", m, V["host_s|k" m "x"], V["host_j|k" m "x"], V["device_s|k" m "x"], V["device_j|k" m "x"], L["device_j|k" m "x"], H["device_j|k" m "x"]
	e1 = V["device_j|k1x"]
	r2 = e1 > 0 ? V["device_j|k2x"] / e1 : 0; r4 = e1 > 0 ? V["device_j|k4x"] / e1 : 0
	printf "(b) ratios    1 : %.3f : %.3f (device-side; expect 1 : 2 : 4)\n", r2, r4
	printf "(e) cost      anchor_mark %s ns (clock_gettime %s ns); NVML power read %s us, energy read %s us; sampler thread %s %% of a CPU (%s s)\n", kv("anchor_mark_ns"), kv("clock_gettime_ns"), kv("nvml_power_call_us"), kv("nvml_energy_call_us"), kv("sampler_cpu_pct"), kv("sampler_cpu_s")
	printf "%s\n", perun
	if (PN) { q2 = (PJ["k1x"] > 0) ? PJ["k2x"] / PJ["k1x"] : 0; q4 = (PJ["k1x"] > 0) ? PJ["k4x"] / PJ["k1x"] : 0
		printf "perun GPU J   k1x %.2f [%.2f, %.2f], k2x %.2f, k4x %.2f (1 : %.3f : %.3f); sq* %.2f [%.2f, %.2f]; from perun'"'"'s power readings, an estimate: %d of %d rows unidentifiable\n", PJ["k1x"], PL["k1x"], PH["k1x"], PJ["k2x"], PJ["k4x"], q2, q4, PJ["sq"], PL["sq"], PH["sq"], PU, PN }
	if (standin) {
		ok = (p - C["period_ms"] <= 2 && C["period_ms"] - p <= 2 && w - C["window_ms"] <= 2 && C["window_ms"] - w <= 2 && N["instant_window_ms|"] ~ /^decided/)
		okr = (r2 > 2 * 0.97 && r2 < 2 * 1.03 && r4 > 4 * 0.97 && r4 < 4 * 1.03)
		printf "stand-in      instant period/window %s (within 2 ms of the configured), 1:2:4 %s (within 3 %%)\n", ok ? "RECOVERED" : "NOT RECOVERED", okr ? "RECOVERED" : "NOT RECOVERED"
		bad = !(ok && okr)
	}
	exit bad
}' "$OUT/gpucheck.txt" "$OUT/sensors.csv" "$OUT/perun_phases.csv" >"$OUT/summary.txt"
rc=$?
cat "$OUT/summary.txt"
exit $rc
