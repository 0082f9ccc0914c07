/* align_pyspy_pulse.c - method "pulse": offset (and speedscope's scale)
 * from the samples taken inside anchor.sync_pulse() bursts (align_pyspy.h). */
#include "align/align_pyspy_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Groups of bursts: bursts more than ALIGN_PYSPY_PULSE_GROUP_GAP_S apart
 * are separate pulses.
 * Start index of group g in b[0..nb), or nb past the last. */
static size_t group_start(const struct burst *b, size_t nb, size_t g)
{
	size_t i = 0;
	for (size_t k = 0; k < g && i < nb; k++) {
		i++;
		while (i < nb && b[i].t0 - b[i - 1].t1 <= ALIGN_PYSPY_PULSE_GROUP_GAP_S)
			i++;
	}
	return i;
}

static size_t group_count(const struct burst *b, size_t nb)
{
	size_t g = nb ? 1 : 0;
	for (size_t i = 1; i < nb; i++)
		g += b[i].t0 - b[i - 1].t1 > ALIGN_PYSPY_PULSE_GROUP_GAP_S;
	return g;
}

/* Mean burst midpoint of group g. */
static double group_mid(const struct burst *b, size_t nb, size_t g)
{
	size_t i0 = group_start(b, nb, g), i1 = group_start(b, nb, g + 1);
	double m = 0;
	for (size_t i = i0; i < i1; i++)
		m += (b[i].t0 + b[i].t1) / 2;
	return i1 > i0 ? m / (double)(i1 - i0) : NAN;
}

/* Test points only against group g of their bursts. */
static void pin_to_group(struct pt *pts, size_t n, size_t g)
{
	for (size_t i = 0; i < n; i++) {
		size_t lo = group_start(pts[i].b_all, pts[i].nb_all, g);
		size_t hi = group_start(pts[i].b_all, pts[i].nb_all, g + 1);
		pts[i].b = pts[i].b_all + lo;
		pts[i].nb = hi - lo;
	}
}

struct fit {
	double offset_s, half_s, cost_s;
	double max_s; /* largest single miss at the offset */
	double rms_s; /* RMS of the misses over all points */
	int ok;
};

/* ---- the pulse fit ------------------------------------------------- */

double apy_pt_cost(const struct pt *q, double y)
{
	const struct burst *b = q->b;
	size_t lo = 0, hi = q->nb;
	/* last burst with t0 <= y */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (b[mid].t0 <= y)
			lo = mid + 1;
		else
			hi = mid;
	}
	int inside = lo > 0 && y <= b[lo - 1].t1;
	if (q->busy) {
		double d = INFINITY;
		if (inside)
			return 0;
		if (lo > 0)
			d = y - b[lo - 1].t1;
		if (lo < q->nb && b[lo].t0 - y < d)
			d = b[lo].t0 - y;
		/* Cap: one far-off point must not outweigh the rest. */
		return d < 1.0 ? d : 1.0;
	}
	if (!inside)
		return 0;
	{
		double a = y - b[lo - 1].t0, c = b[lo - 1].t1 - y;
		return a < c ? a : c;
	}
}

static double total_cost(const struct pt *pts, size_t n, double scale, double o)
{
	double c = 0;
	for (size_t i = 0; i < n; i++)
		c += apy_pt_cost(&pts[i], pts[i].x * scale + o);
	return c;
}

/* Best offset in [lo, hi]: coarse scan, then the plateau of minimal cost
 * around the best coarse point at fine resolution. */
static struct fit fit_offset(const struct pt *pts, size_t n, double scale, double lo, double hi, double near)
{
	struct fit f = {.ok = 0};
	double best = INFINITY, bo = lo;
	if (!n || !(hi >= lo))
		return f;
	size_t steps = (size_t)((hi - lo) / COARSE_STEP_S) + 1;
	for (size_t s = 0; s <= steps; s++) {
		double o = lo + (double)s * COARSE_STEP_S;
		double c = total_cost(pts, n, scale, o);
		/* Ties (several zero-cost offsets far apart) go to the one
		 * nearest the prediction. */
		if (c < best - 1e-12 || (fabs(c - best) <= 1e-12 && fabs(o - near) < fabs(bo - near))) {
			best = c;
			bo = o;
		}
	}
	/* Fine scan of +-3 coarse steps. */
	{
		size_t m = (size_t)(6 * COARSE_STEP_S / FINE_STEP_S) + 1;
		double *c = malloc(m * sizeof *c);
		double f0 = bo - 3 * COARSE_STEP_S, cmin = INFINITY;
		size_t imin = 0;
		if (!c)
			return f;
		for (size_t i = 0; i < m; i++) {
			c[i] = total_cost(pts, n, scale, f0 + (double)i * FINE_STEP_S);
			if (c[i] < cmin) {
				cmin = c[i];
				imin = i;
			}
		}
		size_t a = imin, b = imin;
		double tol = cmin + 1e-9;
		while (a > 0 && c[a - 1] <= tol)
			a--;
		while (b + 1 < m && c[b + 1] <= tol)
			b++;
		f.offset_s = f0 + (double)(a + b) / 2 * FINE_STEP_S;
		f.half_s = (double)(b - a) / 2 * FINE_STEP_S + FINE_STEP_S / 2;
		f.cost_s = cmin;
		f.max_s = 0;
		f.rms_s = 0;
		for (size_t i = 0; i < n; i++) {
			double d = apy_pt_cost(&pts[i], pts[i].x * scale + f.offset_s);
			if (d > f.max_s)
				f.max_s = d;
			f.rms_s += d * d;
		}
		f.rms_s = sqrt(f.rms_s / (double)n);
		f.ok = 1;
		free(c);
	}
	return f;
}

int apy_node_busy_flags(const struct pyspy_profile *p, uint8_t **out)
{
	uint8_t *busy = calloc(p->stacks.n ? p->stacks.n : 1, 1);
	if (!busy)
		return -ENOMEM;
	/* A child node is always created after its parent. */
	for (uint32_t i = 1; i < p->stacks.n; i++) {
		const struct pyspy_node *nd = &p->stacks.v[i];
		busy[i] = (nd->parent != UINT32_MAX && busy[nd->parent]) ||
			  !strcmp(p->frames.v[nd->frame].name, PULSE_FRAME);
	}
	*out = busy;
	return 0;
}

/* Constraint points of thread k against its ring thread's bursts. */
static int add_points(const struct pyspy_profile *p, const struct thr_rows *r, const uint8_t *busy,
		      const struct burst *b, size_t nb, struct pt **pts, size_t *npts, size_t *cap,
		      size_t *nbusy)
{
	int chrome = p->meta.format == PYSPY_FMT_CHROMETRACE;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &p->samples[r->idx[j]];
		int is_busy = busy[s->stack];
		int near = is_busy;
		const struct pyspy_sample *nx = j + 1 < r->n ? &p->samples[r->idx[j + 1]] : NULL;
		if (!is_busy) {
			/* A non-busy sample next to a busy one bounds the burst. */
			near = (j > 0 && busy[p->samples[r->idx[j - 1]].stack]) || (nx && busy[nx->stack]);
		}
		if (!near)
			continue;
		if (*npts + 2 > *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct pt *np = realloc(*pts, nc * sizeof *np);
			if (!np)
				return -ENOMEM;
			*pts = np;
			*cap = nc;
		}
		(*pts)[(*npts)++] = (struct pt){.x = s->t_rel_s, .busy = is_busy, .b = b, .nb = nb, .b_all = b, .nb_all = nb};
		*nbusy += (size_t)is_busy;
		/* chrometrace: the end of a busy interval is a sample that was
		 * no longer busy (unless the next interval is busy again). */
		if (chrome && is_busy && !(nx && busy[nx->stack] && nx->t_rel_s <= s->t_rel_s + s->duration_s))
			(*pts)[(*npts)++] = (struct pt){.x = s->t_rel_s + s->duration_s, .busy = 0, .b = b, .nb = nb,
							.b_all = b, .nb_all = nb};
	}
	return 0;
}

static int cmp_pt(const void *x, const void *y)
{
	double a = ((const struct pt *)x)->x, b = ((const struct pt *)y)->x;
	return a < b ? -1 : a > b;
}

/* Knots (cluster mean x, its pulse group's fitted local time) for every
 * cluster of pulse points, cluster c pinned to burst group g0 + c.  Sets
 * a->knot_* when at least two fit; 0, or -ENOMEM. */
/* Which pulse group each cluster of pulse samples is: in order, from
 * group g0 on, the pairing whose steps in time agree best with the
 * clusters' steps in nominal time (py-spy may miss a pulse, a loaded
 * machine may split one; the drift between neighbours is far smaller
 * than the total).  match[c] = group or -1.  0, or -ENOMEM. */
#define MATCH_SKIP 3
#define MATCH_SKIP_COST_S 1.0
static int match_clusters(const double *xc, size_t nc, const struct burst *rb, size_t nrb, size_t g0, double scale,
			  long *match)
{
	size_t ng = group_count(rb, nrb);
	size_t cells = nc * ng > 0 ? nc * ng : 1;
	double *T = malloc((ng ? ng : 1) * sizeof *T), *best = malloc(cells * sizeof *best);
	long *from = malloc(cells * sizeof *from);
	if (!T || !best || !from) {
		free(T);
		free(best);
		free(from);
		return -ENOMEM;
	}
	for (size_t g = 0; g < ng; g++)
		T[g] = group_mid(rb, nrb, g);
	for (size_t c = 0; c < nc; c++)
		match[c] = -1;
	long bi = -1;
	double bv = INFINITY;
	for (size_t c = 0; c < nc; c++)
		for (size_t g = g0; g < ng; g++) {
			double v = MATCH_SKIP_COST_S * (double)c; /* first match */
			long f = -1;
			for (size_t dc = 1; dc <= MATCH_SKIP && dc <= c; dc++)
				for (size_t dg = 1; dg <= MATCH_SKIP && dg + g0 <= g; dg++) {
					double w = best[(c - dc) * ng + g - dg];
					w += fabs((T[g] - T[g - dg]) - scale * (xc[c] - xc[c - dc])) +
					     MATCH_SKIP_COST_S * (double)(dc - 1);
					if (w < v) {
						v = w;
						f = (long)((c - dc) * ng + g - dg);
					}
				}
			best[c * ng + g] = v;
			from[c * ng + g] = f;
			v += MATCH_SKIP_COST_S * (double)(nc - 1 - c);
			if (v < bv) {
				bv = v;
				bi = (long)(c * ng + g);
			}
		}
	for (long i = bi; i >= 0; i = from[i])
		match[(size_t)i / ng] = (long)((size_t)i % ng);
	free(T);
	free(best);
	free(from);
	return 0;
}

static int pulse_knots(struct align_pyspy *a, struct pt *pts, size_t npts, size_t ncl, const struct burst *rb,
		       size_t nrb, size_t g0)
{
	double *kx = malloc(ncl * sizeof *kx), *ky = malloc(ncl * sizeof *ky), *xc = malloc(ncl * sizeof *xc);
	long *match = malloc(ncl * sizeof *match);
	size_t nk = 0, c0 = 0, nc = 0;
	if (!kx || !ky || !xc || !match) {
		free(kx);
		free(ky);
		free(xc);
		free(match);
		return -ENOMEM;
	}
	for (size_t i = 0; i < npts && nc < ncl; nc++) {
		size_t j = i;
		double xm = pts[i].x;
		while (j + 1 < npts && pts[j + 1].x - pts[j].x <= PULSE_GAP_X_S)
			xm += pts[++j].x;
		xc[nc] = xm / (double)(j - i + 1);
		i = j + 1;
	}
	if (match_clusters(xc, nc, rb, nrb, g0, a->scale, match)) {
		free(kx);
		free(ky);
		free(xc);
		free(match);
		return -ENOMEM;
	}
	for (size_t c = 0; c < ncl && c0 < npts; c++) {
		size_t c1 = c0;
		double xm = pts[c0].x;
		while (c1 + 1 < npts && pts[c1 + 1].x - pts[c1].x <= PULSE_GAP_X_S)
			xm += pts[++c1].x;
		xm /= (double)(c1 - c0 + 1);
		if (c < nc && match[c] >= 0) {
			size_t g = (size_t)match[c];
			/* the cluster's own pulse group says when it ran: the
			 * line through the first and last pulse may be off by
			 * more than a pulse's width in between (py-spy falls
			 * behind, then catches up: 1 s measured) */
			double pred = group_mid(rb, nrb, g) - xm;
			pin_to_group(pts + c0, c1 - c0 + 1, g);
			struct fit fc = fit_offset(pts + c0, c1 - c0 + 1, 1.0, pred - ALIGN_PYSPY_PULSE_HALF_S, pred + ALIGN_PYSPY_PULSE_HALF_S, pred);
			for (size_t i = c0; i <= c1; i++) {
				pts[i].b = pts[i].b_all;
				pts[i].nb = pts[i].nb_all;
			}
			double y = xm + fc.offset_s;
			if (fc.ok && (!nk || (xm > kx[nk - 1] && y > ky[nk - 1]))) {
				kx[nk] = xm;
				ky[nk++] = y;
			}
		}
		c0 = c1 + 1;
	}
	free(xc);
	free(match);
	if (nk >= 2) {
		free(a->knot_x);
		free(a->knot_y);
		a->knot_x = kx;
		a->knot_y = ky;
		a->nknots = nk;
		a->pulse_knots = nk;
		strncat(a->method, "+pulses", sizeof a->method - strlen(a->method) - 1);
		double ss = 0;
		for (size_t i = 0; i < npts; i++) {
			double d = apy_pt_cost(&pts[i], align_pyspy_time(a, 0, pts[i].x));
			ss += d * d;
		}
		a->resid_ms = sqrt(ss / (double)npts) * 1e3;
		a->uncert_ms = a->resid_ms;
		return 0;
	}
	free(kx);
	free(ky);
	return 0;
}

/* Pulse bursts per ring thread and the constraints their samples give. */
int apy_fit_pulse_points(struct fit_ctx *c)
{
	/* Pulse bursts per ring thread. */
	{
		int pulse = phase_set_find(c->ph, PULSE_RANGE);
		for (uint32_t k = 0; k < c->p->nthreads && pulse >= 0; k++) {
			if (!c->a->thr[k].ring_tid || (!c->chrome && (long)k != c->ref))
				continue;
			c->b_off[k] = c->nb;
			for (size_t i = 0; i < c->ph->nocc; i++) {
				const struct phase_occ *o = &c->ph->occ[i];
				if (o->phase == pulse && o->pid == c->rt[k].pid && o->tid == c->rt[k].tid)
					c->bursts[c->nb++] = (struct burst){tl(c->base_ns, o->t0_ns), tl(c->base_ns, o->t1_ns)};
			}
			c->b_n[k] = c->nb - c->b_off[k];
		}
	}
	for (uint32_t k = 0; k < c->p->nthreads; k++)
		if (c->b_n[k] && add_points(c->p, &c->tr[k], c->busy, c->bursts + c->b_off[k], c->b_n[k], &c->pts, &c->npts, &c->ptcap, &c->nbusy)) {
			apy_seterr(c->e, "out of memory");
			return -1;
		}
	return 0;
}

/* speedscope, two pulse clusters or more: offset and scale from the
 * first and last, and the drift between them. */
static void pulse_line(struct fit_ctx *c, struct fit *f, double *spread, size_t *g0, int *have_g0)
{
	size_t e0 = 0, s1 = c->npts - 1;
	while (e0 + 1 < c->npts && c->pts[e0 + 1].x - c->pts[e0].x <= PULSE_GAP_X_S)
		e0++;
	while (s1 > 0 && c->pts[s1].x - c->pts[s1 - 1].x <= PULSE_GAP_X_S)
		s1--;
	/* The mapping keeps order, but py-spy may have missed the
	 * first pulses (ANCHOR_SYNC_PULSE pulses at process start,
	 * before py-spy attached): try every pair of burst groups
	 * (i for the first cluster, j for the last) whose line is
	 * plausible, and keep the one the points fit best. */
	const struct burst *rb = c->bursts + c->b_off[c->ref];
	size_t nrb = c->b_n[c->ref], ng = group_count(rb, nrb), gi = 0, gj = ng ? ng - 1 : 0;
	double xm0 = 0, xm1 = 0, bestc = INFINITY;
	for (size_t i = 0; i <= e0; i++)
		xm0 += c->pts[i].x;
	for (size_t i = s1; i < c->npts; i++)
		xm1 += c->pts[i].x;
	xm0 /= (double)(e0 + 1);
	xm1 /= (double)(c->npts - s1);
	for (size_t i = 0; i + 1 < ng && xm1 > xm0; i++)
		for (size_t j = i + 1; j < ng; j++) {
			double ti = group_mid(rb, nrb, i), tj = group_mid(rb, nrb, j);
			double sc = (tj - ti) / (xm1 - xm0), o = ti - sc * xm0;
			if (!(sc >= 1.0 / (1 + MAX_SCALE_DEV) && sc <= 1 + 2 * MAX_SCALE_DEV) ||
			    o < c->lo - 1.0 || o > c->hi + 1.0)
				continue;
			double cost = total_cost(c->pts, c->npts, sc, o);
			if (cost < bestc - 1e-9) {
				bestc = cost;
				gi = i;
				gj = j;
			}
		}
	double gti = ng ? group_mid(rb, nrb, gi) : c->a->prior_offset_s + xm0;
	double gtj = ng ? group_mid(rb, nrb, gj) : c->a->prior_offset_s + xm1;
	*g0 = gi;
	*have_g0 = ng > 0;
	/* Real time between the first and last pulse against the
	 * nominal time of the samples between them: the line
	 * spreads the difference evenly, but py-spy lost (or
	 * crowded) samples somewhere unknown, so a sample between
	 * them may be off by all of it (measured: 50 s misses
	 * under a line that the two pulses fitted to +-5 ms). */
	if (ng)
		c->drift_s = fabs((gtj - gti) - (xm1 - xm0));
	pin_to_group(c->pts, e0 + 1, gi);
	pin_to_group(c->pts + s1, c->npts - s1, gj);
	struct fit f0 = fit_offset(c->pts, e0 + 1, 1.0, gti - xm0 - ALIGN_PYSPY_PULSE_HALF_S,
				     gti - xm0 + ALIGN_PYSPY_PULSE_HALF_S, gti - xm0);
	struct fit f1 = fit_offset(c->pts + s1, c->npts - s1, 1.0, gtj - xm1 - ALIGN_PYSPY_PULSE_HALF_S,
				     gtj - xm1 + ALIGN_PYSPY_PULSE_HALF_S, gtj - xm1);
	for (size_t i = 0; i < c->npts; i++) {
		c->pts[i].b = c->pts[i].b_all;
		c->pts[i].nb = c->pts[i].nb_all;
	}
	if (f0.ok && f1.ok) {
		if (xm1 > xm0)
			c->a->scale = 1.0 + (f1.offset_s - f0.offset_s) / (xm1 - xm0);
		double pred = f0.offset_s - (c->a->scale - 1.0) * xm0;
		*f = fit_offset(c->pts, c->npts, c->a->scale, pred - ALIGN_PYSPY_REFIT_HALF_S, pred + ALIGN_PYSPY_REFIT_HALF_S, pred);
		*spread = f0.half_s > f1.half_s ? f0.half_s : f1.half_s;
	} else {
		*f = f0;
	}
}

/* Sync pulses were sampled: fit to them. */
int apy_fit_pulses(struct fit_ctx *c)
{
	struct fit f;
	double spread = 0;
	size_t pulse_g0 = 0;
	int have_g0 = 0;
	qsort(c->pts, c->npts, sizeof *c->pts, cmp_pt);
	/* Clusters: points more than PULSE_GAP_X_S apart in profile time
	 * are separate pulses (a pulse is 100 ms; speedscope time can
	 * squeeze 2.4 s between pulses below 1 s: measured). */
	size_t ncl = 1;
	for (size_t i = 1; i < c->npts; i++)
		ncl += c->pts[i].x - c->pts[i - 1].x > PULSE_GAP_X_S;
	c->a->pulse_samples = c->nbusy;
	c->a->pulse_groups = ncl;
	if (!c->chrome && ncl >= 2) {
		pulse_line(c, &f, &spread, &pulse_g0, &have_g0);
	} else {
		/* chrometrace stamps a sample when py-spy's main thread
		 * takes it off the sampler's queue (chrometrace.rs:
		 * Instant elapsed in increment()), never before the stack
		 * was read and tens of ms later on a loaded machine: the
		 * last sample bounds the offset from above only with that
		 * lag allowed (the pulses decide within it). */
		f = fit_offset(c->pts, c->npts, 1.0, c->lo, c->hi + (c->chrome ? STAMP_LAG_S : 0), c->a->prior_offset_s);
	}
	if (!f.ok) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	c->a->offset_s = f.offset_s;
	/* py-spy stamps a sample when it processes it, a jittery moment
	 * after reading the stack: the misses' RMS measures that jitter
	 * (the worst is reported beside it). */
	c->a->uncert_ms = sqrt(f.half_s * f.half_s + spread * spread + f.rms_s * f.rms_s) * 1e3;
	c->a->resid_ms = f.cost_s / (double)c->npts * 1e3;
	c->a->resid_max_ms = f.max_s * 1e3;
	snprintf(c->a->method, sizeof c->a->method, "pulse%s", !c->chrome && c->a->scale != 1.0 ? "+scale" : "");
	/* speedscope with more than two pulses (ANCHOR_SYNC_PULSE adds
	 * them at process start and exit): a knot at every pulse, the
	 * clusters taken in order from the first one's group. */
	if (!c->chrome && have_g0 && ncl >= 3 && pulse_knots(c->a, c->pts, c->npts, ncl, c->bursts + c->b_off[c->ref], c->b_n[c->ref], pulse_g0)) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	/* knots at every pulse: the drift that matters is the one
	 * between neighbouring pulses */
	if (c->a->pulse_knots >= 2) {
		c->drift_s = 0;
		for (size_t i = 1; i < c->a->nknots; i++) {
			double d = fabs((c->a->knot_y[i] - c->a->knot_y[i - 1]) - (c->a->knot_x[i] - c->a->knot_x[i - 1]));
			if (d > c->drift_s)
				c->drift_s = d;
		}
	}
	return 0;
}
