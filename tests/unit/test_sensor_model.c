/*
 * test_sensor_model.c - attrib/sensor_model.c: the response of a GPU's
 * power reading, looked up by the name NVML reports (names as perun stores
 * them).  The rule under test (NVML's documentation of
 * nvmlDeviceGetPowerUsage): Ampere except GA100 and newer average over
 * 1 s, GA100 and older are instantaneous; A100/H100-class sample 25 % of
 * the time (arXiv 2312.02741).  Substring matching must not let a shorter
 * name catch a longer one (A10 in A100, H200 in GH200, RTX 40 in the
 * Turing "Quadro RTX 4000"); overrides and unknown names.
 * Exits non-zero when a check fails.
 */
#include <stdio.h>
#include <string.h>

#include "attrib/sensor_model.h"

#include "unit_check.h"

static void expect(const char *name, double window_s, double coverage, const char *model)
{
	struct sensor_response r;
	sensor_model_lookup(name, &r);
	CHECK(r.window_s == window_s && r.coverage == coverage && !strcmp(r.model, model),
	      "%s: window %g s, coverage %g, model %s; want %g s, %g, %s", name ? name : "(null)", r.window_s,
	      r.coverage, r.model, window_s, coverage, model);
	CHECK(r.source && r.source[0], "%s: no source", name ? name : "(null)");
}

static void test_table(void)
{
	/* Hopper: 1 s mean, 25 % sampled. */
	expect("NVIDIA H100 80GB HBM3", 1.0, 0.25, "H100");
	expect("NVIDIA H200", 1.0, 0.25, "H200");
	expect("NVIDIA GH200 480GB", 1.0, 0.25, "GH200");
	/* GA100: instantaneous, 25 % sampled; not caught by "A10". */
	expect("NVIDIA A100-SXM4-40GB", 0.0, 0.25, "A100");
	expect("NVIDIA A100 80GB PCIe", 0.0, 0.25, "A100");
	expect("NVIDIA A30", 0.0, 1.0, "A30");
	/* Other Ampere and newer: 1 s mean. */
	expect("NVIDIA A10", 1.0, 1.0, "A10");
	expect("NVIDIA A10G", 1.0, 1.0, "A10");
	expect("NVIDIA L40S", 1.0, 1.0, "L40");
	expect("NVIDIA L4", 1.0, 1.0, "L4");
	expect("NVIDIA B200", 1.0, 1.0, "B200");
	expect("NVIDIA GeForce RTX 3090", 1.0, 1.0, "RTX 30");
	expect("NVIDIA GeForce RTX 4090", 1.0, 1.0, "RTX 40");
	expect("NVIDIA RTX 4000 Ada Generation", 1.0, 1.0, "RTX 40");
	/* Older than Ampere: instantaneous. */
	expect("Tesla V100-SXM2-16GB", 0.0, 1.0, "V100");
	expect("Tesla T4", 0.0, 1.0, "T4");
	expect("Tesla P100-PCIE-16GB", 0.0, 1.0, "P100");
	expect("NVIDIA GeForce RTX 2080 Ti", 0.0, 1.0, "RTX 20");
	expect("NVIDIA GeForce GTX 1080", 0.0, 1.0, "GTX");
	/* Turing workstation cards: "RTX 4000"/"RTX 5000" are not Ada or
	 * Blackwell. */
	expect("Quadro RTX 4000", 0.0, 1.0, "Quadro RTX");
	expect("Quadro RTX 5000", 0.0, 1.0, "Quadro RTX");
	/* Unknown or missing: a point reading, fully covered. */
	expect("Some Future GPU", 0.0, 1.0, "default");
	expect("", 0.0, 1.0, "default");
	expect(NULL, 0.0, 1.0, "default");
}

static void test_overrides(void)
{
	struct sensor_response r;
	/* --gpu-window 0 is a real choice (point readings), not "unset". */
	sensor_model_window_override_s = 0;
	sensor_model_lookup("NVIDIA H100 80GB HBM3", &r);
	CHECK(r.window_s == 0 && r.coverage == 0.25 && !strcmp(r.source, "--gpu-window"),
	      "--gpu-window 0: window %g, coverage %g, source %s", r.window_s, r.coverage, r.source);
	sensor_model_window_override_s = 2.5;
	sensor_model_coverage_override = 0.5;
	sensor_model_lookup(NULL, &r);
	CHECK(r.window_s == 2.5 && r.coverage == 0.5, "overrides on an unknown GPU: %g s, %g", r.window_s, r.coverage);
	/* -1 (the default) means the table again. */
	sensor_model_window_override_s = -1;
	sensor_model_coverage_override = -1;
	expect("NVIDIA H100 80GB HBM3", 1.0, 0.25, "H100");
	/* A coverage of 0 would divide by nothing: ignored. */
	sensor_model_coverage_override = 0;
	expect("NVIDIA A100-SXM4-40GB", 0.0, 0.25, "A100");
	sensor_model_coverage_override = -1;
}

int main(void)
{
	test_table();
	test_overrides();
	if (failures) {
		printf("test_sensor_model: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_sensor_model: all checks passed\n");
	return 0;
}
