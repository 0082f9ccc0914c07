/*
 * align_pyspy_internal.h - what the py-spy alignment's files share (not
 * API; align_pyspy.h is).  One method per file, as attrib/ holds its
 * methods:
 *   align_pyspy_pulse.c      "pulse", "+scale", "+pulses"
 *   align_pyspy_structure.c  "site-labels", "+snap" (SITE records)
 *   align_pyspy_frames.c     "phase-frames"
 *   align_pyspy_warp.c       speedscope's "+warp"
 *   align_pyspy_choose.c     which of them fits the offset
 *   align_pyspy_threads.c    profile threads onto ring threads
 *   align_pyspy.c            the steps of a fit, the public calls
 */
#ifndef ANCHORPOST_ALIGN_PYSPY_INTERNAL_H
#define ANCHORPOST_ALIGN_PYSPY_INTERNAL_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "align/align_pyspy.h"
#include "align/pyspy_sites.h"
#include "util/tunables.h"

#define PULSE_RANGE PYSPY_PULSE_RANGE
#define PULSE_FRAME PYSPY_PULSE_FRAME
/* Tunables (tunables.h) under their short local names. */
#define LIFETIME_SLACK_S ALIGN_PYSPY_LIFETIME_SLACK_S
#define STAMP_LAG_S ALIGN_PYSPY_STAMP_LAG_S
#define COARSE_STEP_S ALIGN_PYSPY_COARSE_STEP_S
#define MAX_DRIFT ALIGN_PYSPY_MAX_DRIFT
#define PULSE_GAP_X_S ALIGN_PYSPY_PULSE_GAP_X_S
#define MAX_SCALE_DEV ALIGN_PYSPY_MAX_SCALE_DEV
#define FINE_STEP_S ALIGN_PYSPY_FINE_STEP_S

struct burst {
	double t0, t1;
};

/* A constraint: at timeline x*scale + o the thread was (busy) or was not
 * (!busy) inside a pulse burst. */
struct pt {
	double x;
	int busy;
	const struct burst *b; /* the bursts it is tested against */
	size_t nb;
	const struct burst *b_all; /* all bursts of the point's ring thread */
	size_t nb_all;
};

/* A profile thread's ring thread. */
struct ring_thr {
	uint32_t pid, tid;
	double start_s, end_s; /* timeline: first record, process end */
};

/* One profile thread's samples. */
struct thr_rows {
	size_t *idx; /* sample indices, by time */
	size_t n;
};

/* What the steps of align_pyspy_fit share.  Each step returns 0, or -1
 * with the reason in *e. */
struct fit_ctx {
	const struct ringload *rl;
	const struct phase_set *ph;
	uint64_t base_ns;
	const struct pyspy_profile *p;
	struct align_pyspy *a;
	struct em_error *e;
	struct ring_thr *rt;      /* per profile thread: its ring thread */
	struct thr_rows *tr;      /* per profile thread: its rows by time */
	struct burst *bursts;     /* pulse bursts: thread k's from b_off[k], b_n[k] of them */
	size_t *b_off, *b_n, nb;
	uint8_t *busy;            /* per stack node: holds the pulse's busy frame */
	struct pt *pts;           /* pulse constraints */
	size_t npts, ptcap, nbusy;
	double lo, hi;            /* bounds on the reference thread's offset */
	double drift_s;           /* speedscope: see align_pyspy.h drift_ms */
	double warp_corr95_s;     /* speedscope: the warp's p95 move off the pulses' mapping */
	int chrome;
	long ref;                 /* the reference thread (most samples) */
	struct pyspy_sites sites; /* SITE labels of the stacks */
};

static inline double tl(uint64_t base_ns, uint64_t ts_ns)
{
	return ((double)ts_ns - (double)base_ns) / 1e9;
}

/* Phase of timeline time y on a thread's exclusive timeline, -1 none. */
static inline int phase_at(const struct phase_thread *th, uint64_t base_ns, double y)
{
	double yn = y * 1e9 + (double)base_ns;
	return yn < 0 ? -1 : phase_set_phase_at(th, (uint64_t)yn);
}

/* Does [t0, t1] meet a segment of phase q on th (a point when t0 == t1)? */
static inline int in_phase(const struct phase_thread *th, uint64_t base_ns, int q, double t0, double t1)
{
	size_t l = 0, h = th->nseg;
	while (l < h) { /* first segment ending after t0 */
		size_t mid = (l + h) / 2;
		if (tl(base_ns, th->seg[mid].t1_ns) <= t0)
			l = mid + 1;
		else
			h = mid;
	}
	for (size_t k = l; k < th->nseg && tl(base_ns, th->seg[k].t0_ns) <= t1; k++)
		if (th->seg[k].phase == q)
			return 1;
	return 0;
}

/* Does [t0, t1] meet a segment of a phase in set (bit q: phase q)? */
static inline int in_phase_set(const struct phase_thread *th, uint64_t base_ns, uint64_t set, double t0, double t1)
{
	size_t l = 0, h = th->nseg;
	while (l < h) {
		size_t mid = (l + h) / 2;
		if (tl(base_ns, th->seg[mid].t1_ns) <= t0)
			l = mid + 1;
		else
			h = mid;
	}
	for (size_t k = l; k < th->nseg && tl(base_ns, th->seg[k].t0_ns) <= t1; k++)
		if (th->seg[k].phase >= 0 && th->seg[k].phase < 64 && (set >> th->seg[k].phase & 1))
			return 1;
	return 0;
}

/* Room in *fr for a stack d frames deep.  -ENOMEM. */
static inline int frames_room(uint32_t **fr, uint32_t *cap, uint32_t d)
{
	if (d > *cap) {
		uint32_t *nfr = realloc(*fr, d * sizeof *nfr);
		if (!nfr)
			return -ENOMEM;
		*fr = nfr;
		*cap = d;
	}
	return 0;
}

static inline int cmp_double_asc(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* align_pyspy_threads.c */
/* Fill *e (file NULL: the caller names the profile). */
void apy_seterr(struct em_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int apy_map_threads(const struct ringload *rl, uint64_t base_ns, const struct pyspy_profile *p,
		    struct align_pyspy *a, struct ring_thr *rt);
int apy_rows_by_thread(const struct pyspy_profile *p, struct thr_rows *tr);

/* align_pyspy.c: the reference thread's phase timeline (index into
 * ph->thr), or -1; how much longer a speedscope thread's process lived
 * than its profile's nominal length. */
long apy_ref_timeline(const struct fit_ctx *c);
double apy_shortfall_s(const struct pyspy_profile *p, const struct thr_rows *r, const struct ring_thr *rt,
		       double scale);

/* align_pyspy_pulse.c: a constraint's miss at timeline time y; per stack
 * node whether it holds the pulse's busy frame; the constraints; the
 * fit. */
double apy_pt_cost(const struct pt *q, double y);
int apy_node_busy_flags(const struct pyspy_profile *p, uint8_t **out);
int apy_fit_pulse_points(struct fit_ctx *c);
int apy_fit_pulses(struct fit_ctx *c);

/* align_pyspy_frames.c: the offset in [lo, hi] that makes the most
 * in-phase samples hold their phase's typical frame.  0, -ENODATA,
 * -ENOMEM. */
int apy_phase_frames_fit(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
			 uint64_t base_ns, size_t nphase, double scale, double lo, double hi, double *best_o,
			 double *best_score, double *half_s);

/* align_pyspy_structure.c: chrometrace's offset from SITE labels (0,
 * -ENODATA, -ENOMEM); labelled samples snapped into their phase; how
 * many labelled samples the final mapping puts in their phase. */
int apy_site_offset_fit(struct fit_ctx *c, const struct phase_thread *th, double *o, double *half);
int apy_fit_chrome_snap(struct fit_ctx *c);
void apy_label_check(struct align_pyspy *a, const struct pyspy_profile *p, const struct phase_set *ph,
		     uint64_t base_ns, const struct pyspy_sites *sites);

/* align_pyspy_warp.c: speedscope's local corrections on phase timeline th. */
int apy_fit_local_warp(struct fit_ctx *c, long th);
/* ... and one pass from the mapping as it stands moved by y_shift_s, in
 * a band of band_fix intervals around it (0: the usual band), no pulses. */
int apy_warp_rerun(struct fit_ctx *c, long th, double y_shift_s, size_t band_fix);

/* align_pyspy_slip.c: which step of the repeating phase pattern the
 * warp locked onto (align_pyspy.h slip_*).  0 or -1 (out of memory). */
int apy_fit_slip(struct fit_ctx *c, long th);

/* The methods for the reference thread's offset: 0 fitted, 1 the data do
 * not allow it, -1 err set (out of memory). */
int apy_fit_site_labels(struct fit_ctx *c);  /* align_pyspy_structure.c */
int apy_fit_phase_frames(struct fit_ctx *c); /* align_pyspy_frames.c */
void apy_fit_proc_start(struct fit_ctx *c);  /* align_pyspy.c */

/* align_pyspy_confidence.c: per-sample unplaced flags, the verdict and
 * the measured uncertainty (after the mapping is final). */
int apy_confidence(struct fit_ctx *c);

/* align_pyspy_choose.c: the offset by the best method the data allow. */
int apy_fit_choose(struct fit_ctx *c);

#endif
