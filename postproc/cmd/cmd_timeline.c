/*
 * cmd_timeline.c - `anchorpost timeline --ring R --perun P [--profile S]`:
 * fixed time bins on the ring's timeline, one row per bin, process with
 * phases and perun device group (output/timeline_csv.h: the columns).
 */
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "model/run_model.h"
#include "output/timeline_csv.h"
#include "util/diag.h"
#include "util/tunables.h"

static const struct cmd_usage timeline_usage = {
	.name = "timeline",
	.usage = "--ring RING --perun FILE.hdf5 [--profile PYSPY.json] [--bin S] [-o timeline.csv] [options]",
	.about = "  fixed bins, long: t_s,unix_s,pid,phase,group,power_w[,top_frame],flags, one row per bin,\n"
		 "  process with phases and device group (flags: sensor-glitch where the bin's power holds a\n"
		 "  repaired impossible reading; units: docs/report.md)\n",
};

int cmd_timeline(int argc, char **argv)
{
	struct em_opts o = {0};
	const char *out = NULL, *profile = NULL;
	double bin_s;
	struct run_opts ro = {0};
	struct run_model rm;
	struct em_error e;
	const struct option opts[] = {
		OPT_STRING(0, "ring", &o.ring, "RING", "the ring (anchor_*.ring)"),
		OPT_STRING(0, "perun", &o.perun, "FILE", "perun's HDF5 output"),
		OPT_STRING(0, "profile", &profile, "FILE", "py-spy's profile: adds the top_frame column"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (default -: stdout; the alignment note to stderr)"),
		OPT_DOUBLE(0, "bin", &bin_s, "S", 1e-4, 3600, ANCHOR_TIMELINE_BIN_S, "bin width, s"),
		OPTS_PERUN_SELECT(&o),
		OPTS_ALIGN(&o),
		OPT_NO_HOOK(&o),
		OPT_END(),
	};

	if (options_parse(argc, argv, opts, &timeline_usage, 0))
		options_usage_error(&timeline_usage, "unexpected argument '%s'", argv[1]);
	if (!o.ring || !o.perun)
		options_usage_error(&timeline_usage, "needs --ring and --perun");
	if (out && !strcmp(out, "-"))
		out = NULL;
	ro.em = o;
	ro.profile = profile;
	if (run_model_open(&rm, &ro, &e))
		diag_fatal(e.file, "%s", e.msg);
	if (timeline_csv_write(&rm, out, bin_s, &e))
		diag_fatal(e.file, "%s", e.msg);
	run_model_close(&rm);
	return 0;
}
