/* align_pyspy_slip.c - which step of a repeating phase pattern the warp
 * locked onto (speedscope, SITE labels, no pulse; align_pyspy.h slip_*).
 *
 * Training repeats the same phases every step, so a warp that starts from
 * a line one step off keeps every labelled sample inside a phase of its
 * name and interpolates the rest a whole step away.  Measured on real
 * py-spy recordings of the placement victim's clock (tests/pyspy/
 * t_pyspy_clock_slow.py; two kept in tests/data/pyspy/slip_step): 2 of
 * 14 runs (one beside the test suite, one of 6 beside stress-ng --cpu 2,
 * none of 6 on an idle machine) held every sample 110-150 ms late while
 * the sites said 100 % inside and the stated uncertainty was +-30 ms.
 * The nominal times had run ahead of the real ones (one profile 3.41 s
 * long for a 3.34 s life): py-spy's timer keeps its schedule and, after
 * a stall, catches up in a burst (src/timer.rs), so the line from the
 * process's start was a step off before the warp began.
 *
 * What the data say: with SITE labels the warp's assignment counts only
 * labels in their phases and breaks ties towards the line, and a labelled
 * sample on a phase's edge can honestly fall either side, so the true
 * step itself missed up to 4 labels (of 231) where the wrong one held
 * all.  So the kept mapping is moved by one pattern period each way and
 * the warp rerun there, held within half a step (one pass, a band of
 * under half the intervals of a step: it cannot slide back).  A
 * candidate whose labels lie within half a period of their phases, all
 * but ALIGN_PYSPY_SLIP_TOL_SQRT sqrt(n) + 1 of them, holds the sites as
 * well: the labels cannot tell the two steps apart, and the distance
 * between them (p95 over the samples) joins the stated uncertainty
 * (align_pyspy_confidence.c) with STEP OPEN in words.  The phases stand:
 * both steps hold the labels.  Measured (tunables.h): 3 of 3 slipped
 * recordings open and covered, 1 of 19 right ones opened needlessly.
 *
 * Tried and dropped: rerunning the warp from a shifted line with its usual
 * band (it slides back to the same assignment: 6 of 6 reruns identical in
 * a slipped recording); a cost from py-spy's timer (src/timer.rs:
 * exponential intervals of mean 1/rate on a fixed schedule, so nominal
 * minus real time is a random walk), which preferred the wrong step in
 * both recordings it was tried on (summed z^2 132 vs 208, 157 vs 190):
 * on a loaded machine py-spy stalls and then catches up in bursts, which
 * no such walk allows. */
#include "align/align_pyspy_internal.h"

#include <string.h>

/* The pattern's period: the median time between consecutive starts of
 * the same phase on th (seconds; NAN with fewer than 3 repeats). */
static double pattern_period_s(const struct phase_thread *th, uint64_t base_ns)
{
	double *d = malloc((th->nseg ? th->nseg : 1) * sizeof *d), last[64], r = NAN;
	size_t m = 0;
	if (!d)
		return NAN;
	for (int q = 0; q < 64; q++)
		last[q] = NAN;
	for (size_t k = 0; k < th->nseg; k++) {
		int q = th->seg[k].phase;
		double t0 = tl(base_ns, th->seg[k].t0_ns);
		if (q < 0 || q >= 64)
			continue;
		if (isfinite(last[q]))
			d[m++] = t0 - last[q];
		last[q] = t0;
	}
	if (m >= 3) {
		qsort(d, m, sizeof *d, cmp_double_asc);
		r = d[m / 2];
	}
	free(d);
	return r;
}

/* Labelled rows of the reference thread within slack of a phase of their
 * set (0: inside one). */
static size_t labels_near(const struct fit_ctx *c, const struct phase_thread *th, double slack)
{
	const struct thr_rows *r = &c->tr[c->ref];
	size_t in = 0;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &c->p->samples[r->idx[j]];
		uint64_t set = pyspy_sites_set(&c->sites, s->stack);
		if (!set || pyspy_sites_soft(&c->sites, s->stack))
			continue;
		double y = align_pyspy_time(c->a, (uint32_t)c->ref, s->t_rel_s);
		in += in_phase_set(th, c->base_ns, set, y - slack, y + slack);
	}
	return in;
}

/* A candidate mapping: the warp's knots and how many labels lie within
 * half a period of their phases under it. */
struct cand {
	double *kx, *ky;
	size_t nk;
	double warp_max_ms;
	size_t near;
};

static void cand_take(struct cand *h, struct align_pyspy *a)
{
	h->kx = a->knot_x;
	h->ky = a->knot_y;
	h->nk = a->nknots;
	h->warp_max_ms = a->warp_max_ms;
	a->knot_x = a->knot_y = NULL;
	a->nknots = 0;
}

static void cand_put(const struct cand *h, struct align_pyspy *a)
{
	a->knot_x = h->kx;
	a->knot_y = h->ky;
	a->nknots = h->nk;
	a->warp_max_ms = h->warp_max_ms;
}

/* The warp rerun from mapping h0 moved by k pattern periods, held within
 * band intervals of there.  0 (h->nk 0 when it found nothing) or -1. */
static int cand_run(struct fit_ctx *c, long th, const struct cand *h0, double step_s, int k, size_t band,
		    struct cand *h)
{
	struct align_pyspy *a = c->a;
	a->knot_x = malloc(h0->nk * sizeof *a->knot_x);
	a->knot_y = malloc(h0->nk * sizeof *a->knot_y);
	if (!a->knot_x || !a->knot_y) {
		free(a->knot_x);
		free(a->knot_y);
		a->knot_x = a->knot_y = NULL;
		return -1;
	}
	memcpy(a->knot_x, h0->kx, h0->nk * sizeof *a->knot_x);
	memcpy(a->knot_y, h0->ky, h0->nk * sizeof *a->knot_y);
	a->nknots = h0->nk;
	if (apy_warp_rerun(c, th, k * step_s, band))
		return -1;
	if (a->nknots < 2) {
		free(a->knot_x);
		free(a->knot_y);
		a->knot_x = a->knot_y = NULL;
		a->nknots = 0;
		*h = (struct cand){0};
		return 0;
	}
	h->near = labels_near(c, &c->ph->thr[th], a->sample_period_s / 2);
	cand_take(h, a);
	return 0;
}

/* Intervals (segments and the gaps between them) in one pattern period
 * on th: a band of under half that cannot reach the next step. */
static size_t half_step_band(const struct phase_thread *th, uint64_t base_ns, double step_s)
{
	double span = tl(base_ns, th->seg[th->nseg - 1].t1_ns) - tl(base_ns, th->seg[0].t0_ns);
	double per_step = span > 0 ? 2.0 * (double)th->nseg * step_s / span : 0;
	size_t b = per_step > 4 ? (size_t)(per_step / 2) - 1 : 1;
	return b ? b : 1;
}

/* p95 over the reference thread's samples of how far mapping g puts them
 * from mapping h, seconds. */
static double cand_distance_s(struct fit_ctx *c, const struct cand *h, const struct cand *g)
{
	const struct thr_rows *r = &c->tr[c->ref];
	double *d = malloc((r->n ? r->n : 1) * sizeof *d), res = NAN;
	if (!d || !r->n) {
		free(d);
		return NAN;
	}
	for (size_t j = 0; j < r->n; j++) {
		double x = c->p->samples[r->idx[j]].t_rel_s, yh, yg;
		cand_put(h, c->a);
		yh = align_pyspy_time(c->a, (uint32_t)c->ref, x);
		cand_put(g, c->a);
		yg = align_pyspy_time(c->a, (uint32_t)c->ref, x);
		d[j] = fabs(yh - yg);
	}
	c->a->knot_x = c->a->knot_y = NULL;
	c->a->nknots = 0;
	qsort(d, r->n, sizeof *d, cmp_double_asc);
	res = d[(size_t)(0.95 * (double)(r->n - 1))];
	free(d);
	return res;
}

int apy_fit_slip(struct fit_ctx *c, long th)
{
	struct align_pyspy *a = c->a;
	const struct phase_thread *pt = &c->ph->thr[th];
	double per = a->sample_period_s, step = pattern_period_s(pt, c->base_ns);
	struct cand h0, g;
	size_t nlab = 0;
	if (c->chrome || c->nbusy || !c->sites.nsites || a->nknots < 2 || !(per > 0) || !(step > 2 * per) ||
	    c->tr[c->ref].n < 2)
		return 0;
	for (size_t j = 0; j < c->tr[c->ref].n; j++) {
		const struct pyspy_sample *s = &c->p->samples[c->tr[c->ref].idx[j]];
		nlab += pyspy_sites_set(&c->sites, s->stack) && !pyspy_sites_soft(&c->sites, s->stack);
	}
	if (nlab < ALIGN_PYSPY_MIN_LABELS)
		return 0;
	a->slip_step_ms = step * 1e3;
	/* the first warp is the mapping kept; each candidate is compared
	 * with it */
	h0 = (struct cand){0};
	cand_take(&h0, a);
	double tol = 1 + ALIGN_PYSPY_SLIP_TOL_SQRT * sqrt((double)nlab);
	size_t band = half_step_band(pt, c->base_ns, step);
	int rc = 0;
	for (int sgn = -1; sgn <= 1 && !rc; sgn += 2)
		for (int k = 1; k <= ALIGN_PYSPY_SLIP_MAX_STEPS; k++) {
			if (cand_run(c, th, &h0, step, sgn * k, band, &g)) {
				rc = -1;
				break;
			}
			a->slip_tried++;
			/* the step holds the labels as well: all but tol of
			 * them within half a period of their phases */
			double d = g.nk && (double)(nlab - g.near) <= tol ? cand_distance_s(c, &g, &h0) : NAN;
			free(g.kx);
			free(g.ky);
			if (!(d > per))
				break; /* a step further cannot fit better */
			if (d * 1e3 > a->slip_open_ms)
				a->slip_open_ms = d * 1e3;
		}
	if (rc) { /* what a failed rerun left */
		free(a->knot_x);
		free(a->knot_y);
	}
	cand_put(&h0, a);
	if (rc)
		apy_seterr(c->e, "out of memory");
	return rc;
}
