/*
 * cmd_perun.c - `anchorpost perun FILE.hdf5 [-o perun.csv] [--run ID] [--regions]`:
 * perun's HDF5 as tidy long CSV (output/perun_csv.h: the columns).
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/perun.h"
#include "model/energy_model.h"
#include "output/perun_csv.h"
#include "util/diag.h"

static const struct cmd_usage perun_usage = {
	.name = "perun",
	.usage = "[--perun] FILE.hdf5 [-o perun.csv] [--run ID] [--regions] [--ring RING [options]]",
	.about = "  perun's HDF5 as long CSV: multirun,round,host,device_group,sensor,metric,unit,t_rel_s,\n"
		 "  [t_s,unix_s,]value,flags (--ring: t_s on the run's timeline, unix_s in UTC; flags:\n"
		 "  sensor-glitch where a reading was impossible; units: docs/report.md)\n"
		 "  (value scaled by perun's mag), then each power sensor's energy as perun computed it\n"
		 "  (table; with -o also written to <out>.energy.csv).\n",
};

int cmd_perun(int argc, char **argv)
{
	const char *in = NULL, *out = "-", *run = NULL;
	int regions = 0, rc;
	struct perun_file own, *pfp = &own;
	struct em_opts eo = {0};
	struct energy_model em;
	const struct energy_model *aligned = NULL;
	struct em_error e;

	const struct option opts[] = {
		OPT_STRING(0, "perun", &in, "FILE", "perun's HDF5 output (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (-: stdout, the energy table then on stderr) [-]"),
		OPT_STRING(0, "run", &run, "ID", "only this multirun (default: all)"),
		OPT_BOOL(0, "regions", &regions, "region calls instead: multirun,round,region,rank,start_s,stop_s"),
		OPT_STRING(0, "ring", &eo.ring, "RING",
			   "add t_s,unix_s: perun's samples on the run's timeline, aligned as phases, timeline and "
			   "trace.json align them (the selected multirun, round and host only)"),
		OPT_LONG(0, "round", &eo.round, "N", 0, 1e6, 0, "with --ring: the perun round to align"),
		OPT_STRING(0, "host", &eo.host, "NAME", "with --ring: the perun host to align (default: the ring's)"),
		OPT_STRING(0, "tz", &eo.tz, "+HH:MM", "with --ring: zone of perun's execution_dt"),
		OPTS_ALIGN(&eo),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &perun_usage, 0);

	in = options_input(&perun_usage, npos, argv, in, "--perun");
	if (eo.ring && regions)
		options_usage_error(&perun_usage, "--ring has no meaning with --regions");
	if (eo.ring) {
		/* The model's own copy of the file, so that its run, round and
		 * host pointers name the rows to place. */
		eo.perun = in;
		eo.run = run;
		if (energy_model_open(&em, &eo, &e))
			diag_fatal(e.file, "%s", e.msg);
		aligned = &em;
		pfp = &em.pf;
	} else {
		rc = perun_load_guarded(in, &own, &e);
		if (rc < 0)
			diag_fatal(in, "%s", e.msg);
	}
	const struct perun_file pf = *pfp;

	const struct perun_multirun *only = NULL;
	if (run && !(only = perun_find_run(&pf, run))) {
		char have[512] = "";
		size_t len = 0;
		for (size_t i = 0; i < pf.nruns && len < sizeof have; i++) {
			int k = snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "", pf.runs[i].id);
			if (k > 0)
				len += (size_t)k;
		}
		diag_fatal(in, "no multirun '%s' (the file has: %s)", run, pf.nruns ? have : "none");
	}

	if (perun_csv_write(&pf, in, out, only, regions, !strcmp(out, "-") ? stderr : stdout, aligned, &e))
		diag_fatal(e.file, "%s", e.msg);
	if (aligned)
		energy_model_close(&em);
	else
		perun_free(&own);
	return 0;
}
