#!/usr/bin/env bash
# bench/gpu_sensor_ident.sh [SEEDS]: the stand-in identification accuracy
# (BENCHMARKS.md section 17).  Runs scripts/gpu-check.sh --stand-in for
# each published sensor configuration (arXiv 2312.02741: A100/H100
# 100/25 ms, Turing 100/100, Pascal/Volta 20/10, GH200 100/20) with a
# random window delay and board gain per seed, and prints one row per run:
# configured period/window/delay, recovered value and 95 % interval of
# each, whether every interval holds the truth, the 1:2:4 ratios and the
# 1x kernel's joules against the stub's truth.  Emulated sensor.
set -u
cd "$(dirname "$0")/.."
SEEDS=${1:-3}
T=$(mktemp -d)
make -s gpu-check || exit 1
printf '%-8s %4s | %-28s | %-28s | %-28s | %-5s | %-15s | %s\n' config seed "period ms (cfg: got [ci])" \
	"window ms (cfg: got [ci])" "delay ms (cfg: got [ci])" "cover" "1:2:4" "k1x J err %"
for cfg in 100/25 100/100 20/10 100/20; do
	P=${cfg%/*} W=${cfg#*/}
	for s in $(seq 1 "$SEEDS"); do
		o=$T/$P-$W-$s
		ANCHOR_EMUL_NVML_SENSOR="period_ms=$P,window_ms=$W,delay_ms=R,gain=R,counter_ms=100,avg_ms=1000,seed=$((s * 7919 + P + W))" \
			bash scripts/gpu-check.sh --stand-in --no-perun -o "$o" >/dev/null 2>&1
		awk -F, -v cfg=$cfg -v seed=$s -v spec="$(grep '^stub_spec=' "$o/gpucheck.txt" | cut -d= -f2-)" '
		BEGIN { n = split(spec, sp, " "); for (i = 1; i <= n; i++) { split(sp[i], q, "="); C[q[1]] = q[2] } }
		$1 == "gpu0" { V[$2 "|" $3] = $4; L[$2 "|" $3] = $5; H[$2 "|" $3] = $6 }
		function cell(k, truth) { if (L[k "|"] > truth + 1e-9 || H[k "|"] < truth - 1e-9) miss++
			return sprintf("%6.2f: %6.2f [%6.2f,%6.2f]", truth, V[k "|"], L[k "|"], H[k "|"]) }
		END { miss = 0
			c1 = cell("instant_update_period_ms", C["period_ms"]); c2 = cell("instant_window_ms", C["window_ms"])
			c3 = cell("instant_window_delay_ms", C["delay_ms"])
			e1 = V["device_j|k1x"]; truth = 300 * 0.4 * 3 * C["gain"]
			c4 = cell("power_window_ms", C["avg_ms"])
			printf "%-8s %4d | %s | %s | %s | %-5s | 1:%.3f:%.3f | %+.2f | 1 s avg %s\n", cfg, seed, c1, c2, c3, miss ? "MISS" : "yes",
				V["device_j|k2x"] / e1, V["device_j|k4x"] / e1, 100 * (e1 - truth) / truth, c4 }' "$o/sensors.csv"
	done
done
rm -rf "$T"
