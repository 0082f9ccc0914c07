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

#include "attrib.h"
#include "perun.h"
#include "ring_clock.h"
#include "ring_reader.h"

struct align_perun {
	double offset_s;       /* timeline = perun t + offset_s */
	double uncert_ms;      /* 1-sigma (fit) or bound (prior) */
	char method[64];
	size_t hook_samples;   /* perun.sample marks used (perun-hook) */
	double prior_offset_s; /* execution_dt estimate, NAN if none */
};

/* Parse perun's execution_dt ("YYYY-MM-DDTHH:MM:SS[.ffffff]") as local time
 * in zone tz ("+HH:MM", "-HH:MM", "Z"; NULL: this machine's zone) into unix
 * ns.  0 on success. */
int align_parse_execution_dt(const char *s, const char *tz, int64_t *unix_ns);

/* Offset from perun.sample marks for round `round_idx` (the round-th
 * "perun.round" mark).  ts_s/nts: the file's timesteps, which the stamps
 * must reproduce (count, and each stamp to perun's float32 rounding), else they belong to another
 * perun run.  1 found, 0 none, -1 stamps of another run. */
int align_perun_hook(const struct ring_event *ev, size_t n, const struct ring_clock *clk,
		     const struct perun_multirun *run, size_t round_idx, const double *ts_s, size_t nts,
		     uint64_t base_ns, struct align_perun *out);

/* Prior from execution_dt.  1 found, 0 unusable. */
int align_perun_prior(const struct perun_multirun *run, const struct ring_clock *clk, const char *tz,
		      uint64_t base_ns, struct align_perun *out);

/* Refine out->offset_s within +-range_s by fitting the series against the
 * phase intervals (given on the timeline).  1 refined, 0 kept the prior
 * (the data cannot refine it), -ENOMEM. */
int align_perun_fit(const struct attrib_series *s, const struct attrib_interval *iv_timeline, size_t n_iv,
		    size_t n_phase, double range_s, struct align_perun *out);

#endif
