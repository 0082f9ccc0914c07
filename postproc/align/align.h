/*
 * align.h - put perun's sensor times on the ring's clock.
 *
 * The common timeline is seconds of the ring's CLOCK_MONOTONIC since
 * `base_ns` (the ring's first record).  A perun timestep t maps to
 * t + offset_s there.  Methods, best first:
 *
 *   perun-hook      perun ran with anchor's perun hook (ANCHOR_AUTO includes
 *                   "perun"): every sample's own clock reading is in the ring
 *                   as a "perun.sample" mark, so the first sample of the round
 *                   is known exactly (error: perun's float32 rounding only).
 *   execution_dt    perun's only absolute time: local time without zone,
 *                   taken ~1 s before the app starts; with the machine's zone
 *                   (or --tz) it bounds the offset to a couple of seconds.
 *   +fit            refined by fitting the offset that best explains the
 *                   power series with the anchored phases (attrib_fit_offset).
 */
#ifndef ANCHORPOST_ALIGN_H
#define ANCHORPOST_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_clock.h"
#include "anchors/ring_reader.h"
#include "attrib/attrib.h"
#include "input/perun.h"
#include "phase/phase_set.h"

struct align_perun {
	double offset_s;       /* timeline = perun t + offset_s */
	double uncert_ms;      /* 1-sigma (fit) or bound (prior) */
	double ci95_ms;        /* half width of offset_s's 95 % interval */
	double bound_lo_s, bound_hi_s; /* hard bounds on offset_s (+-INFINITY: none) */
	char bound_why[192];   /* where they came from, or why a fit was refused */
	char method[64];
	size_t hook_samples;   /* perun.sample marks used (perun-hook) */
	uint32_t hook_pid;     /* the sampler process whose stamps matched */
	size_t hook_runs;      /* perun runs (sampler pids) with stamps in the ring */
	double prior_offset_s; /* execution_dt estimate, NAN if none */
};

/* Parse perun's execution_dt ("YYYY-MM-DDTHH:MM:SS[.ffffff]") as local time
 * in zone tz ("+HH:MM", "-HH:MM", "Z"; NULL: this machine's zone) into unix
 * ns.  0 on success. */
int align_parse_execution_dt(const char *s, const char *tz, int64_t *unix_ns);

/* Offset from perun.sample marks for round `round_idx` (the round-th
 * "perun.round" mark of one sampler process; every perun run in the ring
 * is tried, its pid goes to out->hook_pid).  ts_s/nts: the file's timesteps, which the stamps
 * must reproduce (count, and each stamp to perun's float32 rounding), else they belong to another
 * perun run.  1 found, 0 none, -1 stamps of another run. */
int align_perun_hook(const struct ring_event *ev, size_t n, const struct ring_clock *clk,
		     const struct perun_multirun *run, size_t round_idx, const double *ts_s, size_t nts,
		     uint64_t base_ns, struct align_perun *out);

/* What the hook said of one sensor's reads in a round (perun_reads.c). */
struct align_reads {
	double p50_s, max_s; /* delay after the stamp: median, largest */
	size_t n_late;       /* reads more than the hook's 0.5 ms off the median, each at its own delay */
	int filled;          /* internal: delay_s holds the median */
};

/* How long after its stamp each of sensor_id's reads happened, s
 * (delay_s[nts]), from the hook's "perun.read*" marks of the sampler
 * pid's round_idx-th round (perun_reads.c); stamp_s[nts] (NULL: not
 * checked) the stamps' times, s: no read may reach the next stamp.
 * 0; -ENODATA: no timed reads (a hook before they were timed, a sensor
 * neither energy nor power); -EINVAL: they do not pair one to one with
 * the round's nts stamps; out says the median, largest and late ones. */
int align_perun_reads(const struct ring_event *ev, size_t n, uint32_t pid, size_t round_idx, const char *sensor_id,
		      const double *stamp_s, size_t nts, double *delay_s, struct align_reads *out);

/* Prior from execution_dt.  1 found, 0 unusable. */
int align_perun_prior(const struct perun_multirun *run, const struct ring_clock *clk, const char *tz,
		      uint64_t base_ns, struct align_perun *out);

/* Refine out->offset_s within +-range_s by fitting the series against the
 * phase intervals (given on the timeline).  1 refined, 0 kept the prior
 * (the data cannot refine it), -ENOMEM. */
int align_perun_fit(const struct attrib_series *s, const struct attrib_interval *iv_timeline, size_t n_iv,
		    size_t n_phase, double range_s, struct align_perun *out);

/* Hard bounds on the offset of a `perun monitor` run whose process
 * (argv naming perun and "monitor") is the primary thread's, from the ring
 * alone:
 *   perun takes a last sample after the script returned, so the last
 *   timestep ts[n-1] is after the end of the last closed range (or the
 *   last mark) of the user's on that thread:  offset >= p1 - ts[n-1];
 *   every sample is taken by the sampler, a forked child of that process,
 *   while it lives: offset + ts[0] >= its fork and offset + ts[n-1] <= its
 *   exit (the child with the latest exit among those alive over the whole
 *   script, else the process's own exit).
 * *lo and *hi are -INFINITY/INFINITY where nothing bounds them.  1 when the
 * process was found, 0 else. */
int align_perun_bounds(const struct ring_procs *procs, const struct phase_set *ph, uint64_t base_ns,
		       const double *ts_s, size_t nts, double *lo, double *hi, char *why, size_t cap);

/* Settle the fallback (no perun stamps): out holds the prior; fit, when
 * fitted != 0, the fitted offset, its 1-sigma and 95 % half width (every
 * offset the residual cannot tell from the best: align_perun_fit).  The
 * fit is kept only when its offset lies within [lo, hi] and that is narrower
 * than the bounds, i.e. when the data decide it; else the middle of the
 * bounds with their half width ("+bounds").  Fills ci95_ms. */
void align_perun_settle(struct align_perun *out, double lo, double hi, int fitted, double fit_offset_s,
			double fit_sigma_ms, double fit_ci95_ms);

/* The fallback without perun's stamps, for one ring or each of many: out
 * holds the prior (align_perun_prior); the ring's hard bounds
 * (align_perun_bounds over procs, ph's primary thread, base_ns and the
 * reference sensor's timesteps ts_s) narrow it, the fit of ser against iv
 * (the primary thread's intervals on the timeline; ser NULL: no fit)
 * searches within them (+-range_s of the prior when nothing bounds it
 * both ways), align_perun_settle decides.  span_s > 0 fits only span_s
 * of intervals around their middle (cost).  0, -EDOM when the bounds
 * contradict each other (out->bound_lo_s > out->bound_hi_s, bound_why
 * says why: not one run), -ENOMEM. */
struct align_fallback_in {
	const struct ring_procs *procs;
	const struct phase_set *ph;
	uint64_t base_ns;
	const double *ts_s;
	size_t nts;
	const struct attrib_series *ser;
	const struct attrib_interval *iv;
	size_t niv, n_phase;
	double range_s, span_s;
};
int align_perun_fallback(const struct align_fallback_in *in, struct align_perun *out);

#endif
