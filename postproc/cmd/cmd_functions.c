/*
 * cmd_functions.c - `anchorpost functions --ring R --perun P --profile S`:
 * joules per Python function from py-spy samples aligned with the ring
 * (output/functions_csv.h: the columns and the rules).
 */
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "model/results.h"
#include "model/run_model.h"
#include "output/functions_csv.h"
#include "output/op_table.h"
#include "util/diag.h"

static const struct cmd_usage functions_usage = {
	.name = "functions",
	.usage = "--ring RING --perun FILE.hdf5 --profile PYSPY.json [-o functions.csv] [options]",
	.about = "  joules per Python function: function,file,line,self_j,total_j,self_s,samples,top_phase\n"
		 "  (+ self_j_<group>,total_j_<group> with several device groups), sorted by self_j.\n"
		 "  The py-spy profile (chrometrace or speedscope, ideally recorded with --idle and a\n"
		 "  sync pulse: anchor.sync_pulse()) is aligned with the ring; the method and its\n"
		 "  uncertainty go to OUT.alignment.txt (stderr when OUT is stdout); each function's joules\n"
		 "  per phase as [lo_j, hi_j] (unplaced samples in hi_j of every phase they may be in) to\n"
		 "  OUT.phases.csv (functions.csv -> functions.phases.csv).\n"
		 "  With device-side edges (GPU) a phase's GPU joules go to the samples of the host-side\n"
		 "  occurrence that launched it, not to the samples taken while the GPU ran it.\n",
};

int cmd_functions(int argc, char **argv)
{
	struct em_opts o = {0};
	const char *out = NULL, *profile = NULL, *ss_out = NULL, *stacks_out = NULL, *samples_out = NULL;
	const char *ops_out = NULL;
	struct run_opts ro = {0};
	struct run_model rm;
	struct results_opts rso = {0};
	struct run_results res;
	struct em_error e;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &o.ring, "RING", "the ring (anchor_*.ring)"),
		OPT_STRING(0, "perun", &o.perun, "FILE", "perun's HDF5 output"),
		OPT_STRING(0, "profile", &profile, "FILE", "py-spy's profile (chrometrace, speedscope or raw)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (default -: stdout)"),
		OPT_STRING(0, "speedscope-out", &ss_out, "FILE",
			   "the profile with weights in joules (speedscope, unit none)"),
		OPT_STRING(0, "stacks-out", &stacks_out, "FILE",
			   "per distinct stack: stack_text,samples,self_s,energy_j(+groups)"),
		OPT_STRING(0, "samples-out", &samples_out, "FILE",
			   "per sample: pid,tid,t0_s,t1_s,unix_s (of t0_s),idle,energy_j,phase (at the slice's middle),"
			   "leaf_function,leaf_line,t_s,phase_at_t (at the sample's own instant)"),
		OPT_STRING(0, "ops-out", &ops_out, "FILE",
			   "torch.profiler trace: joules per operator through the phases' fitted powers, with "
			   "95 % intervals (op,category,rows,self_s,total_s,self_j,self_lo_j,self_hi_j,total_j,"
			   "total_lo_j,total_hi_j,top_phase)"),
		OPTS_PERUN_SELECT(&o),
		OPTS_ALIGN(&o),
		OPT_NO_HOOK(&o),
		OPT_END(),
	};

	if (options_parse(argc, argv, opts, &functions_usage, 0))
		options_usage_error(&functions_usage, "unexpected argument '%s'", argv[1]);
	if (!o.ring || !o.perun || !profile)
		options_usage_error(&functions_usage, "needs --ring, --perun and --profile");
	if (out && !strcmp(out, "-"))
		out = NULL;
	ro.em = o;
	ro.profile = profile;
	ro.need_power = 1;
	if (run_model_open(&rm, &ro, &e))
		diag_fatal(e.file, "%s", e.msg);
	if (ops_out && !rm.p.meta.torch)
		diag_fatal(profile, "--ops-out needs a torch.profiler trace as --profile (this is py-spy's)");
	/* The phase powers functions.phases.csv (and ops.csv) read, attributed
	 * once (results.h); ops.csv's scope is this file's run's primary
	 * thread when the ring holds several runs. */
	rso.method = ATTRIB_CHOICE_AUTO;
	rso.all_pid = rm.m.align.hook_runs > 1 && rm.m.ph.nthr ? rm.m.ph.thr[rm.m.ph.primary].pid : 0;
	rso.what = RESULTS_FUNCTIONS | (ops_out ? RESULTS_ALL | RESULTS_OPS : 0u);
	if (results_compute(&res, &rm.m, &rm, &rso, &e) ||
	    functions_csv_write(&rm, &res, out, ss_out, stacks_out, samples_out, &e) ||
	    (ops_out && op_table_write(&rm, &res.ops, ops_out, &e)))
		diag_fatal(e.file, "%s", e.msg);
	results_free(&res);
	run_model_close(&rm);
	return 0;
}
