/*
 * sensor_model.c - GPU power-reading response table (see sensor_model.h).
 */
#include "attrib/sensor_model.h"

#include <math.h>
#include <string.h>
#include <strings.h>

double sensor_model_window_override_s = -1;
double sensor_model_coverage_override = -1;
double sensor_model_gpu_gain = -1;

double sensor_model_gpu_joules(double e, double *lo, double *hi)
{
	double g = sensor_model_gpu_gain > 0 ? sensor_model_gpu_gain : 1, f = e / g * SENSOR_GAIN_FLOOR;
	double l = isnan(*lo) ? e : *lo, h = isnan(*hi) ? e : *hi;
	e /= g;
	l /= g;
	h /= g;
	if (sensor_model_gpu_gain > 0) {
		*lo = l;
		*hi = h;
		return e;
	}
	*lo = fmax(0, e - sqrt((e - l) * (e - l) + f * f)); /* joules are not negative */
	*hi = e + sqrt((h - e) * (h - e) + f * f);
	return e;
}

#define SRC_NVML "NVML docs, nvmlDeviceGetPowerUsage"
#define SRC_NVML_PART "NVML docs (window) + arXiv 2312.02741 (25 % coverage)"

/* First match wins: more specific names first.  Names as NVML reports
 * them ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB"). */
static const struct {
	const char *substr;
	double window_s, coverage;
	const char *source;
} table[] = {
	/* Hopper: newer than Ampere, so the 1 s average; 25 % sampled. */
	{"H100", 1.0, 0.25, SRC_NVML_PART},
	{"GH200", 1.0, 0.25, SRC_NVML_PART}, /* before H200, which it contains */
	{"H200", 1.0, 0.25, SRC_NVML_PART},
	/* GA100: instantaneous per NVML, but only 25 % of the time sampled. */
	{"A100", 0.0, 0.25, SRC_NVML_PART},
	{"A30", 0.0, 1.0, SRC_NVML " (GA100: instantaneous)"},
	/* Turing workstation cards ("Quadro RTX 4000"), before "RTX 40" and
	 * "RTX 50" below catch them: older than Ampere, instantaneous. */
	{"Quadro RTX", 0.0, 1.0, SRC_NVML},
	/* Other Ampere and newer (GA10x, Ada, Blackwell): 1 s average;
	 * coverage not measured, taken as full. */
	{"A10", 1.0, 1.0, SRC_NVML},
	{"A40", 1.0, 1.0, SRC_NVML},
	{"A16", 1.0, 1.0, SRC_NVML},
	{"A2", 1.0, 1.0, SRC_NVML},
	{"L40", 1.0, 1.0, SRC_NVML},
	{"L4", 1.0, 1.0, SRC_NVML},
	{"B200", 1.0, 1.0, SRC_NVML},
	{"B100", 1.0, 1.0, SRC_NVML},
	{"RTX 30", 1.0, 1.0, SRC_NVML},
	{"RTX 40", 1.0, 1.0, SRC_NVML},
	{"RTX 50", 1.0, 1.0, SRC_NVML},
	{"RTX A", 1.0, 1.0, SRC_NVML},
	/* Older than Ampere: instantaneous. */
	{"V100", 0.0, 1.0, SRC_NVML},
	{"T4", 0.0, 1.0, SRC_NVML},
	{"P100", 0.0, 1.0, SRC_NVML},
	{"RTX 20", 0.0, 1.0, SRC_NVML},
	{"GTX", 0.0, 1.0, SRC_NVML},
};

void sensor_model_lookup(const char *name, struct sensor_response *out)
{
	out->window_s = 0;
	out->coverage = 1;
	out->model = "default";
	out->source = "unknown GPU: a point reading (override with --gpu-window/--gpu-coverage)";
	for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++) {
		if (strstr(name, table[i].substr)) {
			out->window_s = table[i].window_s;
			out->coverage = table[i].coverage;
			out->model = table[i].substr;
			out->source = table[i].source;
			break;
		}
	}
	if (sensor_model_window_override_s >= 0) {
		out->window_s = sensor_model_window_override_s;
		out->source = "--gpu-window";
	}
	if (sensor_model_coverage_override > 0)
		out->coverage = sensor_model_coverage_override;
}

void sensor_model_identified(double period_s, double window_s, double delay_s, struct sensor_response *out)
{
	out->window_s = period_s + 2 * delay_s + window_s;
	out->coverage = out->window_s > 0 ? window_s / out->window_s : 1;
	out->model = "identified";
	out->source = "identified from this run's readings (anchorpost sensors)";
	if (sensor_model_window_override_s >= 0) {
		out->window_s = sensor_model_window_override_s;
		out->source = "--gpu-window";
	}
	if (sensor_model_coverage_override > 0)
		out->coverage = sensor_model_coverage_override;
}
