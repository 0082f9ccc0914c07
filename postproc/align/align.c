/* align.c - perun's sensor times on the ring's clock (see align.h). */
#include "align/align.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* perun's first sample follows execution_dt by "about a second" (sensor
 * setup, the sampler's start): the prior's bound. */
#define EXEC_DT_UNCERT_MS 2000.0

int align_parse_execution_dt(const char *s, const char *tz, int64_t *unix_ns)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0;
	double frac = 0;
	time_t t;

	memset(&tm, 0, sizeof tm);
	if (!s || sscanf(s, "%d-%d-%d%*[T ]%d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
		return -1;
	if (s[n] == '.') {
		double scale = 0.1;
		for (const char *p = s + n + 1; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	if (tz && *tz) {
		int sign = 1, oh = 0, om = 0;
		if (!strcmp(tz, "Z") || !strcmp(tz, "UTC")) {
			oh = om = 0;
		} else if ((tz[0] == '+' || tz[0] == '-') && sscanf(tz + 1, "%d:%d", &oh, &om) >= 1) {
			sign = tz[0] == '-' ? -1 : 1;
		} else {
			return -2;
		}
		t = timegm(&tm) - sign * (oh * 3600 + om * 60);
	} else {
		t = mktime(&tm);
	}
	if (t == (time_t)-1)
		return -1;
	*unix_ns = (int64_t)t * 1000000000 + (int64_t)llround(frac * 1e9);
	return 0;
}

/* One perun run's stamps (one sampler pid, its round_idx-th round)
 * against the file's timesteps: count, and the worst miss beyond perun's
 * float32 rounding (2^-24 relative); another run's stamps, however
 * regular the sampling, differ by far more somewhere. */
static size_t hook_stamps(const struct ring_event *ev, size_t n, uint32_t pid, size_t round_idx, const double *ts_s,
			  size_t nts, uint64_t *first, double *worst_s)
{
	long round = -1;
	size_t count = 0;
	*worst_s = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ring_event *e = &ev[i];
		if (e->pid != pid || e->kind != ANCHOR_KIND_MARK || !(e->flags & ANCHOR_FLAG_VALUE))
			continue;
		if (!strcmp(e->text, "perun.round")) {
			round++;
			continue;
		}
		if (strcmp(e->text, "perun.sample") || round != (long)round_idx)
			continue;
		if (!count)
			*first = e->value;
		if (ts_s && count < nts) {
			double rel = ((double)(e->value - *first)) / 1e9;
			double d = fabs(rel - ts_s[count]) - (1e-5 + 2e-7 * fabs(rel));
			if (d > *worst_s)
				*worst_s = d;
		}
		count++;
	}
	return count;
}

int align_perun_hook(const struct ring_event *ev, size_t n, const struct ring_clock *clk,
		     const struct perun_multirun *run, size_t round_idx, const double *ts_s, size_t nts,
		     uint64_t base_ns, struct align_perun *out)
{
	/* Every perun run in the ring stamps from its own sampler process:
	 * several runs into one ring (back to back, or two trainings) are
	 * told apart by pid, and the file's timesteps pick theirs. */
	uint32_t pids[64];
	size_t npids = 0, ncand = 0, first_count = 0;
	for (size_t i = 0; i < n && npids < 64; i++) {
		const struct ring_event *e = &ev[i];
		size_t k;
		if (e->kind != ANCHOR_KIND_MARK || strcmp(e->text, "perun.sample"))
			continue;
		for (k = 0; k < npids && pids[k] != e->pid; k++)
			;
		if (k == npids)
			pids[npids++] = e->pid;
	}
	int found = 0;
	for (size_t k = 0; k < npids; k++) {
		uint64_t first = 0;
		double worst_s;
		size_t count = hook_stamps(ev, n, pids[k], round_idx, ts_s, nts, &first, &worst_s);
		if (!count)
			continue;
		if (!ncand++)
			first_count = count;
		if (found || (ts_s && (count != nts || worst_s > 0)))
			continue;
		found = 1;
		/* perun >= 1.0 reads perf_counter_ns (CLOCK_MONOTONIC, the
		 * ring's clock); older perun read time_ns (CLOCK_REALTIME). */
		if (run && run->clock == PERUN_CLOCK_REALTIME)
			first = ring_clock_mono_ns(clk, (int64_t)first);
		out->offset_s = ((double)first - (double)base_ns) / 1e9;
		/* Left: float32 rounding of perun's relative timesteps (2^-24). */
		out->uncert_ms = 0.001;
		out->ci95_ms = 0.002;
		out->hook_samples = count;
		out->hook_pid = pids[k];
		snprintf(out->method, sizeof out->method, "perun-hook");
	}
	out->hook_runs = ncand;
	if (found)
		return 1;
	if (!ncand)
		return 0;
	snprintf(out->method, sizeof out->method, "perun-hook-mismatch");
	out->hook_samples = first_count;
	out->hook_runs = ncand;
	return -1;
}

int align_perun_prior(const struct perun_multirun *run, const struct ring_clock *clk, const char *tz,
		      uint64_t base_ns, struct align_perun *out)
{
	int64_t unix_ns;
	if (!run || !clk->n || align_parse_execution_dt(run->execution_dt, tz, &unix_ns))
		return 0;
	/* execution_dt precedes the first sample by about a second: take the
	 * middle of the bound as the estimate. */
	unix_ns += 1000000000;
	out->offset_s = ((double)ring_clock_mono_ns(clk, unix_ns) - (double)base_ns) / 1e9;
	out->prior_offset_s = out->offset_s;
	out->uncert_ms = EXEC_DT_UNCERT_MS;
	out->ci95_ms = EXEC_DT_UNCERT_MS;
	snprintf(out->method, sizeof out->method, "execution_dt%s%s", tz ? " tz " : " local tz",
		 tz ? tz : "");
	return 1;
}

int align_perun_fit(const struct attrib_series *s, const struct attrib_interval *iv_timeline, size_t n_iv,
		    size_t n_phase, double range_s, struct align_perun *out)
{
	struct attrib_interval *iv = malloc((n_iv ? n_iv : 1) * sizeof *iv);
	double delta = 0, sigma = 0;
	int rc;

	if (!iv)
		return -ENOMEM;
	/* Intervals in the prior's sensor time; delta corrects the prior. */
	for (size_t i = 0; i < n_iv; i++) {
		iv[i] = iv_timeline[i];
		iv[i].t0_s -= out->offset_s;
		iv[i].t1_s -= out->offset_s;
	}
	rc = attrib_fit_offset(s, iv, n_iv, n_phase, range_s, &delta, &sigma);
	/* The curvature at the best offset says nothing of other valleys as
	 * deep: a fit 1.9 s off claimed +-7.7 ms (power that follows CPU time
	 * barely changes between phases).  The 95 % interval is the extent of
	 * every offset the residual cannot tell from the best. */
	double best = 0, slo = 0, shi = 0;
	int rc_set = rc >= 0 ? attrib_fit_offset_set(s, iv, n_iv, n_phase, range_s, 3.84, &best, &slo, &shi) : 0;
	if (rc_set < 0)
		slo = shi = NAN;
	free(iv);
	if (rc == -ENOMEM || rc_set == -ENOMEM)
		return -ENOMEM; /* not a reason to keep the prior silently */
	if (rc < 0 || !isfinite(delta) || !isfinite(sigma))
		return 0;
	/* sensor t = phase t + delta  =>  timeline = sensor t + offset - delta */
	out->offset_s -= delta;
	out->uncert_ms = sigma * 1e3;
	double half = 1.96 * sigma;
	if (isfinite(slo) && isfinite(shi))
		half = fmax(half, fmax(fabs(delta - slo), fabs(shi - delta)));
	else
		half = INFINITY;
	out->ci95_ms = half * 1e3;
	{
		size_t l = strlen(out->method);
		snprintf(out->method + l, sizeof out->method - l, "+fit");
	}
	return 1;
}

int align_perun_bounds(const struct ring_procs *procs, const struct phase_set *ph, uint64_t base_ns,
		       const double *ts_s, size_t nts, double *lo, double *hi, char *why, size_t cap)
{
	const struct phase_thread *th;
	const struct ring_proc *pr, *sampler = NULL;
	uint64_t u0 = UINT64_MAX, u1 = 0;
	*lo = -INFINITY;
	*hi = INFINITY;
	why[0] = '\0';
	if (!ph->nthr || !nts || !ts_s)
		return 0;
	th = &ph->thr[ph->primary];
	pr = ring_procs_find(procs, th->pid);
	if (!pr || !strstr(pr->argv, "perun") || !strstr(pr->argv, " monitor "))
		return 0;
	/* The user's script ran between u0 and u1 at least: closed ranges
	 * end inside it, and a mark is an instant inside it (a mark segment
	 * or an unclosed range runs on to the thread's or process's end). */
	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		uint64_t e;
		if (o->pid != th->pid || o->tid != th->tid || phase_set_is_tool(ph, o->phase))
			continue;
		e = o->from_mark || o->unclosed ? o->t0_ns : o->t1_ns;
		if (o->t0_ns < u0)
			u0 = o->t0_ns;
		if (e > u1)
			u1 = e;
	}
	if (u1 && u1 >= u0) {
		*lo = ((double)u1 - (double)base_ns) / 1e9 - ts_s[nts - 1];
		snprintf(why, cap, "last sample after the script's last anchor");
	}
	for (size_t i = 0; i < procs->n; i++) {
		const struct ring_proc *c = &procs->p[i];
		if (c->ppid != pr->pid || !c->forked || !c->start_ns || !c->exit_ns || c->start_ns > u0 || c->exit_ns < u1)
			continue;
		if (!sampler || c->exit_ns > sampler->exit_ns)
			sampler = c;
	}
	if (sampler) {
		double f = ((double)sampler->start_ns - (double)base_ns) / 1e9 - ts_s[0];
		*hi = ((double)sampler->exit_ns - (double)base_ns) / 1e9 - ts_s[nts - 1];
		if (f > *lo) {
			*lo = f;
			snprintf(why, cap, "first sample after the sampler's fork (pid %u)", sampler->pid);
		}
		size_t l = strlen(why);
		snprintf(why + l, cap - l, "%sno sample after the sampler's exit (pid %u)", l ? "; " : "", sampler->pid);
	} else if (pr->exit_ns) {
		*hi = ((double)pr->exit_ns - (double)base_ns) / 1e9 - ts_s[nts - 1];
		size_t l = strlen(why);
		snprintf(why + l, cap - l, "%sno sample after perun's exit (pid %u)", l ? "; " : "", pr->pid);
	}
	return 1;
}

void align_perun_settle(struct align_perun *out, double lo, double hi, int fitted, double fit_offset_s,
			double fit_sigma_ms, double fit_ci95_ms)
{
	double half = (hi - lo) / 2, f95 = fmax(1.96 * fit_sigma_ms, fit_ci95_ms) / 1e3;
	size_t l;
	out->bound_lo_s = lo;
	out->bound_hi_s = hi;
	if (fitted && isfinite(fit_offset_s) && isfinite(f95) && fit_offset_s >= lo && fit_offset_s <= hi &&
	    (!isfinite(half) || f95 < half)) {
		out->offset_s = fit_offset_s;
		out->uncert_ms = fit_sigma_ms;
		/* the fit's interval, cut by the hard bounds */
		out->ci95_ms = f95 * 1e3;
		l = strlen(out->method);
		snprintf(out->method + l, sizeof out->method - l, "+fit");
		return;
	}
	if (isfinite(lo) && isfinite(hi)) {
		if (fitted) {
			l = strlen(out->bound_why);
			snprintf(out->bound_why + l, sizeof out->bound_why - l,
				 "%sfit refused (%s)", l ? "; " : "",
				 !(fit_offset_s >= lo && fit_offset_s <= hi) ? "outside the bounds" : "no narrower than the bounds");
		}
		out->offset_s = (lo + hi) / 2;
		out->uncert_ms = half * 1e3;
		out->ci95_ms = half * 1e3;
		l = strlen(out->method);
		snprintf(out->method + l, sizeof out->method - l, "+bounds");
		return;
	}
	/* One-sided or no bounds: the prior, moved inside what is known. */
	if (out->offset_s < lo)
		out->offset_s = lo;
	if (out->offset_s > hi)
		out->offset_s = hi;
	if (fitted && isfinite(fit_offset_s) && isfinite(f95) && fit_offset_s >= lo && fit_offset_s <= hi) {
		/* no two-sided bound to judge by: the fit within the prior */
		out->offset_s = fit_offset_s;
		out->uncert_ms = fit_sigma_ms;
		out->ci95_ms = f95 * 1e3;
		l = strlen(out->method);
		snprintf(out->method + l, sizeof out->method - l, "+fit");
	}
}
