/*
 * cmd_sensors.c - `anchorpost sensors RING [-o FILE.csv]`: what the run's
 * own data say about each GPU's sensors (output/sensors_csv.h).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/ringload.h"
#include "model/gpu_sensors.h"
#include "output/sensors_csv.h"
#include "phase/phase_set.h"
#include "util/diag.h"

static const struct cmd_usage sensors_usage = {
	.name = "sensors",
	.usage = "[--ring] RING [-o FILE.csv] [--gpu-gain G]",
	.about = "  each GPU's power sensor (update period, averaging window) and energy counter as the\n"
		 "  run's data show them (ANCHOR_SENSORS=nvml), and GPU joules per phase, host and device side\n",
};

int cmd_sensors(int argc, char **argv)
{
	const char *ring = NULL, *out = NULL;
	struct ringload rl;
	struct phase_set ph;
	struct gpu_sensors gs;
	struct em_error e;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &ring, "RING", "the ring (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (default: none; the summary goes to stdout)"),
		OPT_GPU_GAIN,
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &sensors_usage, 0);

	ring = options_input(&sensors_usage, npos, argv, ring, "--ring");
	ringload_open(&rl, ring);
	memset(&ph, 0, sizeof ph);
	if (phase_set_build(rl.rf.ev, rl.rf.nev, &rl.procs, &ph) || gpu_sensors_build(rl.rf.ev, rl.rf.nev, &ph, &gs))
		diag_fatal(NULL, "out of memory");
	if (!gs.n)
		diag_fatal(ring, "no GPU energy counter in the ring (record with ANCHOR_SENSORS=nvml)");
	/* the CSV on stdout: no summary there */
	if (sensors_csv_write(&gs, &ph, out, out && !strcmp(out, "-") ? NULL : stdout, &e))
		diag_fatal(e.file, "%s", e.msg);
	gpu_sensors_free(&gs);
	phase_set_free(&ph);
	ringload_close(&rl);
	return 0;
}
