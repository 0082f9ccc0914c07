/*
 * attrib.h - energy attribution: joules per phase from a power sensor.
 *
 * Pure math on plain arrays.  Everything lives on ONE timeline in seconds:
 * the caller has already mapped the ring's phases and the sensor's
 * timesteps onto it (an unknown constant offset can be fitted with
 * attrib_fit_offset).
 *
 * Phases.  An interval [t0_s, t1_s) belongs to phase `phase` (an index into
 * the caller's name table, 0 <= phase < n_phase).  Intervals of one phase
 * never overlap; intervals of different phases may (nested ranges, other
 * processes): the caller chooses exclusive (self) or inclusive accounting by
 * the intervals it passes.  Time inside the sensor's span that lies outside
 * every interval is the "unattributed" pseudo-phase, always estimated too: it
 * is row n_phase of every result.
 *
 * Sensors (as perun 1.0.0 stores them, see attrib_series.c for the source
 * reading):
 *   ATTRIB_WINDOW_AVG_W  value[i] = energy between t[i-1] and t[i] divided by
 *                        the gap (perun's RAPL power); value[0] is a copy of
 *                        value[1] and is ignored.  Windows are exact.
 *   ATTRIB_COUNTER_J     value[i] = cumulative energy in J at t[i], already
 *                        scaled and unwrapped (perun's RAPL alt_values * mag).
 *   ATTRIB_INSTANT_W     value[i] = power read at t[i] (NVML).  Between reads
 *                        the power is taken as piecewise linear (the same
 *                        trapezoid perun integrates), except between two
 *                        reads with exactly one phase edge between them: there
 *                        it steps at the edge from one read to the next.  For
 *                        the regression a read stands for the mean power over
 *                        the avg_window_s before it (0: a point sample of the
 *                        phase active at t[i]).
 * The covered span is [t[0], t[n-1]]; only phase time inside it counts.
 *
 * Methods, per phase:
 *   integrate  difference of the cumulative energy curve at each interval's
 *              ends.  A window holding one phase edge is split in proportion
 *              to its neighbours' powers rather than uniformly (uniform
 *              costs ~3.5 % on a 6-period phase between strong power steps;
 *              see attrib_series.c).  Interval: edge bounds where the split
 *              was not possible, plus 1.96 sigma of the split errors and of
 *              the sensor noise (estimated from neighbouring windows).
 *   regress    non-negative least squares of each window's mean power on the
 *              window's time share of every phase (plus unattributed):
 *              y_j = sum_k A[j][k] p_k; energy_k = p_k * time_k.  95 %
 *              intervals from a block bootstrap over windows, never narrower
 *              than the analytic +-1.96 se, then widened by the estimate's
 *              sensitivity to a timing error of opts.offset_sigma_s (perun
 *              stamps a round before it reads the sensors).  Columns that
 *              cannot be told apart (phases recurring in lock-step with the
 *              window: variance inflation > vif_max) are flagged
 *              ATTRIB_FLAG_UNIDENTIFIABLE and get the honest interval
 *              [0, total energy].
 * Closure: attrib_regress and attrib_auto put the remainder into the
 * unattributed row (unattributed = total - sum of phases), so the rows add
 * up to total_j exactly; the difference between that remainder and the
 * fitted unattributed energy is reported as closure_j.  attrib_integrate
 * integrates the unattributed time directly; with overlapping phases its
 * rows then add up to more than the total, reported as closure_j.
 *
 * Errors are negative errno: -EINVAL bad input (n < 2, timesteps not
 * strictly increasing, non-finite values, t1 < t0, phase out of range, a
 * decreasing counter), -ENOMEM, -ENODATA no sensor window overlaps any phase
 * interval (files from different runs).
 */
#ifndef ANCHORPOST_ATTRIB_H
#define ANCHORPOST_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

/* One phase occurrence on the common timeline. */
struct attrib_interval {
	double t0_s, t1_s;
	int phase;
};

/* How a sensor's values relate to energy (see the opening comment). */
enum attrib_kind {
	ATTRIB_WINDOW_AVG_W = 1,
	ATTRIB_COUNTER_J,
	ATTRIB_INSTANT_W,
};

/* One device's series; arrays are borrowed, never freed here. */
struct attrib_series {
	const double *t_s;
	const double *value;
	size_t n;
	enum attrib_kind kind;
	/* ATTRIB_INSTANT_W only: the sensor's own averaging time before each
	 * read, used by the regression; 0 means a point sample. */
	double avg_window_s;
};

enum attrib_method {
	ATTRIB_INTEGRATE = 1,
	ATTRIB_REGRESS,
	ATTRIB_SPLIT, /* attrib_split: window energy split by share x fitted power */
};

/* What --method asks for: one method for every phase, or a rule that
 * chooses.  AUTO = split where the sensor gives window energies (its
 * default), else per phase; PERPHASE = attrib_auto. */
enum attrib_choice {
	ATTRIB_CHOICE_AUTO = 0,
	ATTRIB_CHOICE_PERPHASE,
	ATTRIB_CHOICE_SPLIT,
	ATTRIB_CHOICE_INTEGRATE,
	ATTRIB_CHOICE_REGRESS,
};

/* Flags per result row. */
#define ATTRIB_FLAG_UNIDENTIFIABLE 0x1u /* column not separable: CI [0, total] */
#define ATTRIB_FLAG_NO_TIME 0x2u	/* no time inside the covered span */
#define ATTRIB_FLAG_AT_ZERO 0x4u	/* NNLS held the power at 0 */
#define ATTRIB_FLAG_REMAINDER 0x8u	/* unattributed row = total - phases */

struct attrib_row {
	enum attrib_method method;
	unsigned flags;
	double time_s;	     /* seconds inside the covered span */
	double typical_s;    /* median interval length inside the span */
	double energy_j;
	double ci_low_j, ci_high_j;
	double power_w;	     /* energy_j / time_s (0 without time) */
	double vif;	     /* variance inflation of its column (regress; 0 otherwise) */
};

struct attrib_result {
	size_t n_phase;		/* rows: n_phase phases + 1 unattributed */
	struct attrib_row *row; /* n_phase + 1 entries, owned */
	double span_t0_s, span_t1_s;
	double total_j;		/* sensor energy over the span */
	double closure_j;	/* see "Closure" above */
	double period_s;	/* median sensor period */
	size_t n_windows;	/* regression rows (0 if none ran) */
	double rms_resid_w;	/* regression residual, W rms per window */
	double cond;		/* condition number of the column-scaled Gram */
	unsigned n_boot;	/* bootstrap resamples used */
	size_t block_len;	/* windows per bootstrap block */
};

/* Tuning; a zeroed struct (or NULL) gives the defaults in brackets. */
struct attrib_opts {
	unsigned n_boot;	/* bootstrap resamples [200] */
	uint64_t seed;		/* bootstrap seed [0x616e63686f72, "anchor"] */
	size_t block_len;	/* windows per block [cube root of windows] */
	double min_periods;	/* auto: integrate when typical >= this many periods [5] */
	double vif_max;		/* flag a column above this variance inflation [1e4] */
	/* Timing uncertainty between sensor and phases, s [0.001; < 0: none].
	 * The regression is refitted with the phases shifted by +-this and
	 * each interval widened by the change: a bias no bootstrap can see. */
	double offset_sigma_s;
	/* A sensor's response width, s [0: none]: a sensor that averages its
	 * input over this long biases every phase edge towards its lower side
	 * (attrib_blur.c); attrib_choose widens each row by that bias. */
	double blur_s;
};

/* Integrate the sensor's cumulative energy over every phase's intervals. */
int attrib_integrate(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		     size_t n_phase, struct attrib_result *out);

/* Fit per-phase power over the sensor windows (NNLS + block bootstrap). */
int attrib_regress(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		   size_t n_phase, const struct attrib_opts *o, struct attrib_result *out);

/* Per phase: integrate when its typical interval spans >= min_periods
 * sensor periods, regress otherwise; row.method says which. */
int attrib_auto(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		size_t n_phase, const struct attrib_opts *o, struct attrib_result *out);

/* Split every window's measured energy among its phases in proportion to
 * time share x NNLS-fitted power (attrib_split.c); rows add up to the
 * total exactly.  Instant reads (no window energy): attrib_auto. */
int attrib_split(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		 size_t n_phase, const struct attrib_opts *o, struct attrib_result *out);

/* Widen r's rows by the edge bias of a sensor answering over blur_s
 * (attrib_blur.c); iv as given to the method, in time order. */
void attrib_widen_blur(const struct attrib_interval *iv, size_t n_iv, double blur_s, struct attrib_result *r);

/* The method --method names (enum attrib_choice): one dispatch for every
 * caller (one ring's phases, each rank's in mring), so they cannot drift. */
int attrib_choose(enum attrib_choice method, const struct attrib_series *s, const struct attrib_interval *iv,
		  size_t n_iv, size_t n_phase, const struct attrib_opts *o, struct attrib_result *out);

/* A cumulative energy counter sampled at ~1 ms (t_s strictly increasing,
 * cum_j non-decreasing, J): exact per-window energies, windows holding
 * phase edges split from their neighbours' power (attrib_counters.c).
 * Intervals must not overlap (an exclusive timeline).  Rows as above;
 * method ATTRIB_INTEGRATE. */
int attrib_counters(const double *t_s, const double *cum_j, size_t n, const struct attrib_interval *iv,
		    size_t n_iv, size_t n_phase, struct attrib_result *out);
/* The cumulative energy curve of a series, the one rule for every user
 * (energy_model.c's slices, attrib's windows): cum_j[i] = joules from t[0]
 * to t[i].  WINDOW_AVG_W: sum of value x gap; COUNTER_J: value[i] -
 * value[0] (-EINVAL if it decreases); INSTANT_W: trapezoids, except that a
 * segment with one phase edge inside (n_edge[i-1] == 1 at edge_t_s[i-1];
 * n_edge NULL: none) holds each read on its side of the edge.  0 or
 * -EINVAL. */
int attrib_series_cum_j(const struct attrib_series *s, const unsigned char *n_edge, const double *edge_t_s,
			double *cum_j);

/* One occurrence's own energy (attrib_occurrence.c). */
struct attrib_occ {
	double energy_j, lo_j, hi_j; /* estimate and its bounds */
	size_t n_inside;             /* sensor windows wholly inside it */
};

/* The energy of [a_s, b_s] from a cumulative curve (t_s strictly
 * increasing, cum_j non-decreasing, n points; window i is (t[i-1], t[i]]):
 * the windows wholly inside are measured; each partial window at an edge
 * gets the interval's own power there (the nearest whole window inside),
 * bounded by the lowest and highest whole window inside and by the partial
 * window's own energy; and each edge may sit timing_s off, costing the
 * power step seen there.  The bounds hold when the interval's power at its
 * edges stays within what its inside shows.  0, -EINVAL (bad input),
 * -ERANGE ([a, b] not inside [t[0], t[n-1]]), -ENODATA (no whole window). */
int attrib_occurrence(const double *t_s, const double *cum_j, size_t n, double a_s, double b_s, double timing_s,
		      struct attrib_occ *out);

/* Release a result filled by any function above; safe on a zeroed one. */
void attrib_result_free(struct attrib_result *r);

/* Fit the offset delta (sensor time = phase time + delta) within
 * [-range_s, range_s] by minimising the NNLS residual: a coarse grid of
 * period/5 steps, then golden-section refinement.  *sigma_s is the 1-sigma
 * uncertainty from the residual's curvature.  The intervals are not
 * changed; shift them by *delta_s before attributing. */
int attrib_fit_offset(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		      size_t n_phase, double range_s, double *delta_s, double *sigma_s);

/* The offsets the data cannot tell apart: a grid over [-range_s, range_s]
 * (half attrib_fit_offset's step); *best_s the lowest residual, and
 * [*set_lo_s, *set_hi_s] the extent of every offset whose residual is
 * within level (3.84: 95 %) per degree of freedom of it. */
int attrib_fit_offset_set(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
			  size_t n_phase, double range_s, double level, double *best_s, double *set_lo_s,
			  double *set_hi_s);

/* A sensor's own lag behind exactly known sample times: the lag (sensor
 * t = phase t + lag, as delta above) whose shifted phases explain the
 * windows best, searched over [-range_s, range_s] in coarse_s steps, then
 * in fine_s steps within one coarse step of the best.  [lo_s, hi_s] is
 * the extent of every lag tried whose residual is within level (3.84:
 * 95 %) per degree of freedom of the best, each widened by its step: as
 * wide as the data leave it (every valley in), so a set that reaches
 * +-range_s means the data do not decide the lag within it. */
struct attrib_lag {
	double best_s, lo_s, hi_s;
	size_t n_tried;   /* lags tried (residual fits) */
	size_t n_windows; /* sensor windows the residual was taken over */
};
int attrib_fit_lag(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
		   double range_s, double coarse_s, double fine_s, double level, struct attrib_lag *out);

/* Cheaper offset fit: maximise the correlation between the window power and
 * the predicted activity sum_k weight[k] * share_k (weight NULL: 1 for every
 * phase, 0 for unattributed) on a grid of step_s, refined by a parabola
 * through the peak.  *resolution_s is step_s / 2 (a resolution, not a
 * statistical error). */
int attrib_fit_offset_corr(const struct attrib_series *s, const struct attrib_interval *iv,
			   size_t n_iv, size_t n_phase, const double *weight, double range_s,
			   double step_s, double *delta_s, double *resolution_s);

/*
 * Impossible readings (attrib_glitch.c).  Real RAPL and NVML reset and
 * glitch: a counter that steps back once (a reset, or a read racing an
 * update) is taken by perun 1.0 for a full wrap (262,143 J on many Intel
 * parts: a 0.1 s window of 2.6 MW).  A window is impossible when its power
 * is above ceiling_w (the caller's per-device bound), negative or not a
 * number.  A run of consecutive impossible windows is repaired:
 *   exact      when the readings on either side of the run still give a
 *              possible energy over the run (one bad read between good
 *              ones: a spike and its step back), that energy spread over
 *              the run's windows in proportion to their length;
 *   estimated  otherwise (the counter's base changed: a reset), each window
 *              at the time-weighted mean power of up to
 *              ATTRIB_GLITCH_NEIGHBOURS possible windows on each side.
 */
#define ATTRIB_GLITCH_NEIGHBOURS 3 /* windows each side: enough to smooth one noisy window, few enough to stay local */

struct attrib_glitch {
	size_t nbad;      /* windows (t[i-1], t[i]] that held an impossible reading */
	size_t nruns;     /* runs of consecutive such windows */
	size_t nexact;    /* of the runs, those repaired exactly */
	double raw_j;     /* energy the readings claimed over the bad windows (a
			   * step back taken as a wrap, as perun takes it) */
	double used_j;    /* energy used for them instead */
	double first_t_s; /* end of the first bad window, series time */
	double max_w;     /* the largest power a bad window claimed (inf: not a number) */
};

/* A cumulative counter c_j (J, as read: it may wrap at range_j, <= 0 when
 * the range is unknown) at strictly increasing t_s: out_c gets a counter
 * that never decreases, each window's energy as read (a wrap added back)
 * or repaired as above; bad[i] = 1 for the repaired windows (t[i-1], t[i]]
 * (bad[0] = 0).  out_c may not alias c_j.  0 or -EINVAL. */
int attrib_glitch_counter(const double *t_s, const double *c_j, size_t n, double range_j, double ceiling_w,
			  double *out_c, unsigned char *bad, struct attrib_glitch *g);

/* A power series p_w (W): window means over (t[i-1], t[i]] (kind
 * ATTRIB_WINDOW_AVG_W; p[0] a copy of p[1]) or reads at t[i] (any other
 * kind).  out_w gets the series with every impossible value replaced as
 * above (a read: by the mean of the nearest possible reads around it);
 * bad[i] = 1 for each window whose energy a replaced value touched (a
 * read touches the windows on both sides).  0 or -EINVAL. */
int attrib_glitch_power(const double *t_s, const double *p_w, size_t n, enum attrib_kind kind,
			double ceiling_w, double *out_w, unsigned char *bad, struct attrib_glitch *g);

/* Lawson-Hanson NNLS on the normal equations: minimise |A x - y|^2 with
 * x >= 0 given G = A'A (k x k, row-major) and g = A'y.  Returns the number
 * of iterations, or -EINVAL / -ERANGE (no convergence). */
int attrib_nnls(const double *gram, const double *g, size_t k, double *x);

#endif
