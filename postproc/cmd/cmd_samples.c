/*
 * cmd_samples.c - `anchorpost samples PROFILE`: py-spy output to CSV
 * (output/samples_csv.h); with --ring the profile and the ring are loaded
 * and aligned first, as the run model aligns them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "align/align_pyspy.h"
#include "align/align_torch.h"
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "model/sample_energy.h"
#include "model/sample_times.h"
#include "output/samples_csv.h"
#include "phase/phase_set.h"
#include "util/diag.h"

static const struct cmd_usage samples_usage = {
	.name = "samples",
	.usage = "[--profile] PROFILE [-o OUT.csv] [--format F] [--ring RING] [--rate HZ] [--stack-text] [--by-frame]",
	.about = "  py-spy output (format detected from the content) to CSV, one row per sample\n"
		 "  (speedscope), per interval of an unchanged stack (chrometrace) or per sample\n"
		 "  of each collapsed stack (raw: no time, t_rel_s and duration_s are empty):\n"
		 "    thread,pid,tid,thread_name,sample_index,t_rel_s,duration_s[,t_s,unix_s,at_s,placed,place_ms],depth,stack_id\n"
		 "  Stacks are ids into companion tables written beside OUT (OUT minus .csv, plus):\n"
		 "    .stacks.csv   stack_id,depth,frame_id   (depth 0 = root; one row per frame)\n"
		 "    .frames.csv   frame_id,function,file,line\n"
		 "    .threads.csv  thread,profile,pid,tid,pthread_id,thread_name,samples\n"
		 "  --stack-text (implied with -o -) adds the whole stack as text, root;...;leaf.\n"
		 "  tid is the OS thread id (chrometrace names pthread ids only: the tid comes\n"
		 "  from the ring with --ring, else it is empty).  Units: docs/report.md.\n",
};

static const struct opt_choice format_choices[] = {
	{"auto", PYSPY_FMT_AUTO, "from the content"},
	{"speedscope", PYSPY_FMT_SPEEDSCOPE, NULL},
	{"chrometrace", PYSPY_FMT_CHROMETRACE, NULL},
	{"raw", PYSPY_FMT_RAW, NULL},
	{NULL, 0, NULL},
};

static void summary(const char *in, const struct pyspy_profile *p)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < p->nthreads; t++)
		n += p->threads[t].nsamples;
	fprintf(stderr,
		"anchorpost: %s: format=%s exporter=%s threads=%u samples=%llu frames=%u stacks=%u unit=%s "
		"rate_hz=%g empty_samples=%llu idle=%s (%s)\n",
		in, pyspy_format_name(p->meta.format), p->meta.exporter[0] ? p->meta.exporter : "-", p->nthreads,
		(unsigned long long)n, p->frames.n, p->stacks.n ? p->stacks.n - 1 : 0, p->meta.unit, p->meta.rate_hz,
		(unsigned long long)p->meta.empty_samples, pyspy_idle_name(p->meta.idle), p->meta.idle_reason);
}

/* `samples --ring`: load the profile and the ring, align them as the run
 * model does (run_model.c), then samples_csv_write_ring.  Nothing is written
 * before the profile and the ring are read and aligned. */
static int samples_ring(const char *in, int fmt, double rate, const char *ring, const char *out, int stack_text,
			int verbose)
{
	struct pyspy_profile p;
	struct em_error err;
	struct ringload rl;
	struct phase_set ph;
	struct align_pyspy al;
	struct sample_times st;
	struct em_error e;
	char script[1024];
	uint64_t base_ns;

	pyspy_profile_init(&p);
	p.rate_override_hz = rate;
	if (pyspy_load(in, (enum pyspy_format)fmt, &p, &err))
		diag_fatal(in, "%s", err.msg);
	if (!p.meta.times_known)
		diag_fatal(in, "%s profile has no sample times, so --ring cannot place it (%s)",
			   pyspy_format_name(p.meta.format),
			   p.meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
	ringload_open(&rl, ring);
	if (!rl.rf.nev)
		diag_fatal(ring, "the ring holds no records");
	if (!rl.clock.n)
		diag_fatal(ring, "no clock SYNC record: cannot map to UTC");
	memset(&ph, 0, sizeof ph);
	memset(&al, 0, sizeof al);
	if (phase_set_build(rl.rf.ev, rl.rf.nev, &rl.procs, &ph))
		diag_fatal(NULL, "out of memory");
	base_ns = rl.rf.ev[0].ts_ns;
	if (align_profile_fit(&rl, &ph, base_ns, &p, &al, &e))
		diag_fatal(in, "%s", e.msg);
	/* perun monitor's "<string>" frames named as functions and report
	 * name them (sample_energy.h) */
	sample_energy_name_script(&rl, &p, script, sizeof script);
	if (sample_times_build(&st, &p, &rl, &al, base_ns))
		diag_fatal(NULL, "out of memory");
	if (samples_csv_write_ring(&p, in, &st, ring, out, stack_text, &e))
		diag_fatal(e.file, "%s", e.msg);
	sample_times_free(&st);
	if (verbose)
		summary(in, &p);
	align_pyspy_free(&al);
	phase_set_free(&ph);
	ringload_close(&rl);
	pyspy_profile_free(&p);
	return 0;
}

/* `samples PROFILE`: the profile read once, its rows written as they
 * stream in (samples_csv.h); memory is the profile's tables, not its
 * samples. */
static int samples_stream(const char *in, enum pyspy_format fmt, struct pyspy_profile *p, const char *out,
			  int stack_text, struct em_error *e)
{
	struct samples_stream *ss;
	struct em_error rerr = {0};
	int rc;
	if ((rc = samples_csv_stream_open(&ss, in, out, stack_text, e)))
		return rc;
	rc = pyspy_read(in, fmt, p, samples_csv_stream_sample, ss, &rerr);
	return samples_csv_stream_close(ss, p, rc, &rerr);
}

/* `samples --by-frame`: the same stream, aggregated per stack. */
static int samples_by_frame(const char *in, enum pyspy_format fmt, struct pyspy_profile *p, const char *out,
			    struct em_error *e)
{
	struct frames_stream *fs;
	struct em_error rerr = {0};
	int rc;
	if ((rc = samples_csv_frames_open(&fs, e)))
		return rc;
	rc = pyspy_read(in, fmt, p, samples_csv_frames_sample, fs, &rerr);
	return samples_csv_frames_close(fs, p, in, out, rc, &rerr, e);
}

int cmd_samples(int argc, char **argv)
{
	const char *in = NULL, *out = "-", *ring = NULL;
	int fmt = PYSPY_FMT_AUTO, by_frame = 0, verbose = 0, stack_text = 0;
	double rate = 0;
	struct pyspy_profile p;
	struct em_error e;

	const struct option opts[] = {
		OPT_STRING(0, "profile", &in, "FILE", "py-spy's profile (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (-: stdout, with --stack-text and no companions) [-]"),
		OPT_CHOICE(0, "format", &fmt, "F", format_choices, "the profile's format [auto]"),
		OPT_STRING(0, "ring", &ring, "RING",
			   "add t_s,unix_s: each sample's slice on the run's timeline, aligned as functions, "
			   "timeline and trace.json align it (sync pulses, ...); the method goes to "
			   "OUT.alignment.txt (stderr when writing to stdout)"),
		OPT_DOUBLE(0, "rate", &rate, "HZ", 1e-6, 1e6, 0,
			   "time speedscope samples as i/HZ (py-spy < 0.3.9 files whose weights are not seconds)"),
		OPT_BOOL(0, "stack-text", &stack_text, "add stack_text: the whole stack, root;...;leaf, frames "
						       "'func (file:line)' (large: kilobytes per row)"),
		OPT_BOOL(0, "by-frame", &by_frame, "per frame instead: function,file,line,self_samples,"
						   "total_samples,self_s,total_s (a frame counts once per sample for total)"),
		OPT_BOOL('v', "verbose", &verbose, "a summary of the profile on stderr"),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &samples_usage, 0);

	in = options_input(&samples_usage, npos, argv, in, "--profile");
	if (by_frame && ring)
		options_usage_error(&samples_usage, "--ring has no meaning with --by-frame");

	if (ring)
		return samples_ring(in, fmt, rate, ring, out, stack_text, verbose);
	pyspy_profile_init(&p);
	p.rate_override_hz = rate;
	if (by_frame ? samples_by_frame(in, (enum pyspy_format)fmt, &p, out, &e)
		     : samples_stream(in, (enum pyspy_format)fmt, &p, out, stack_text, &e))
		diag_fatal(e.file, "%s", e.msg);
	if (verbose)
		summary(in, &p);
	if (by_frame) {
		pyspy_profile_free(&p);
		return 0;
	}
	if (p.meta.format == PYSPY_FMT_RAW)
		diag_warn(in, "raw format has no time: t_rel_s and duration_s are empty, one row per sample");
	else if (!p.meta.times_known)
		diag_warn(in, "unit '%s' is not a time: t_rel_s and duration_s are empty (--rate HZ sets them)",
			  p.meta.unit);
	pyspy_profile_free(&p);
	return 0;
}
