/*
 * align_fallback.c - perun's offset without its sample stamps, the one
 * rule for one ring (energy_model.c) and many (mring.c): the hard bounds
 * the ring gives (align_perun_bounds), the fit searched within them and
 * kept only where the data decide it (align_perun_settle).
 */
#include "align/align.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* in->span_s > 0: the intervals within span_s around the middle of all of
 * them, and the series samples that can meet those at offsets within
 * +-range_s of out->offset_s (the fit's cost grows with both). */
static size_t fit_window(const struct align_fallback_in *in, double offset_s, double range_s,
			 struct attrib_series *ser, struct attrib_interval *iv)
{
	const struct attrib_interval *a = in->iv;
	size_t niv = 0, i0 = 0, i1 = ser->n;
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < in->niv; i++) {
		lo = fmin(lo, a[i].t0_s);
		hi = fmax(hi, a[i].t1_s);
	}
	double mid = (lo + hi) / 2, lo_tl = mid - in->span_s / 2, hi_tl = mid + in->span_s / 2;
	for (size_t i = 0; i < in->niv; i++)
		if (!(a[i].t1_s < lo_tl || a[i].t0_s > hi_tl))
			iv[niv++] = a[i];
	while (i0 < ser->n && ser->t_s[i0] + offset_s < lo_tl - range_s)
		i0++;
	while (i1 > i0 && ser->t_s[i1 - 1] + offset_s > hi_tl + range_s)
		i1--;
	if (i0 > 0)
		i0--; /* the window ending at i0 starts at i0 - 1 */
	ser->t_s += i0;
	ser->value += i0;
	ser->n = i1 - i0;
	return niv;
}

/* The fit within +-range_s of fit->offset_s: 1 fitted, 0 not, -ENOMEM. */
static int fit_within(const struct align_fallback_in *in, double range_s, struct align_perun *fit)
{
	struct attrib_series ser;
	struct attrib_interval *iv;
	size_t niv;
	int rc;
	if (!in->ser || !in->iv || !in->niv)
		return 0;
	if (!(in->span_s > 0))
		return align_perun_fit(in->ser, in->iv, in->niv, in->n_phase, range_s, fit);
	ser = *in->ser;
	if (!(iv = malloc(in->niv * sizeof *iv)))
		return -ENOMEM;
	niv = fit_window(in, fit->offset_s, range_s, &ser, iv);
	rc = niv && ser.n >= 3 ? align_perun_fit(&ser, iv, niv, in->n_phase, range_s, fit) : 0;
	free(iv);
	return rc;
}

int align_perun_fallback(const struct align_fallback_in *in, struct align_perun *out)
{
	double range_s = in->range_s, lo, hi;
	int fitted;
	/* Hard bounds from the ring; the fit searches them and is kept only
	 * where the data decide it. */
	align_perun_bounds(in->procs, in->ph, in->base_ns, in->ts_s, in->nts, &lo, &hi, out->bound_why,
			   sizeof out->bound_why);
	if (isfinite(lo) && isfinite(hi) && lo <= hi) {
		out->offset_s = (lo + hi) / 2;
		range_s = (hi - lo) / 2 + 0.05;
	} else if (!(lo <= hi)) {
		/* contradictory: the ring and this file are not one run */
		out->bound_lo_s = lo;
		out->bound_hi_s = hi;
		return -EDOM;
	}
	struct align_perun fit = *out;
	if ((fitted = fit_within(in, range_s, &fit)) < 0)
		return fitted;
	align_perun_settle(out, lo, hi, fitted, fit.offset_s, fit.uncert_ms, fit.ci95_ms);
	return 0;
}
