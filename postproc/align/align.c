/* align.c - perun's sensor times on the ring's clock (see align.h). */
#include "align.h"

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

int align_perun_hook(const struct ring_event *ev, size_t n, const struct ring_clock *clk,
		     const struct perun_multirun *run, size_t round_idx, const double *ts_s, size_t nts,
		     uint64_t base_ns, struct align_perun *out)
{
	long round = -1;
	uint64_t first = 0;
	size_t count = 0;
	double worst_s = 0;

	for (size_t i = 0; i < n; i++) {
		const struct ring_event *e = &ev[i];
		if (e->kind != ANCHOR_KIND_MARK || !(e->flags & ANCHOR_FLAG_VALUE))
			continue;
		if (!strcmp(e->text, "perun.round")) {
			round++;
			continue;
		}
		if (strcmp(e->text, "perun.sample") || round != (long)round_idx)
			continue;
		if (!count)
			first = e->value;
		/* The stamps must be this file's: same count, same spacing. */
		if (ts_s && count < nts) {
			/* Beyond perun's float32 rounding (2^-24 relative) of the
			 * same stamps: another run's stamps, however regular the
			 * sampling, differ by far more somewhere. */
			double rel = ((double)(e->value - first)) / 1e9;
			double d = fabs(rel - ts_s[count]) - (1e-5 + 2e-7 * fabs(rel));
			if (d > worst_s)
				worst_s = d;
		}
		count++;
	}
	if (!count)
		return 0;
	if (ts_s && (count != nts || worst_s > 0)) {
		snprintf(out->method, sizeof out->method, "perun-hook-mismatch");
		out->hook_samples = count;
		return -1;
	}
	/* perun >= 1.0 reads perf_counter_ns (CLOCK_MONOTONIC, the ring's
	 * clock); older perun read time_ns (CLOCK_REALTIME). */
	if (run && run->clock == PERUN_CLOCK_REALTIME)
		first = ring_clock_mono_ns(clk, (int64_t)first);
	out->offset_s = ((double)first - (double)base_ns) / 1e9;
	/* Left: float32 rounding of perun's relative timesteps (2^-24). */
	out->uncert_ms = 0.001;
	out->hook_samples = count;
	snprintf(out->method, sizeof out->method, "perun-hook");
	return 1;
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
	free(iv);
	if (rc == -ENOMEM)
		return rc; /* not a reason to keep the prior silently */
	if (rc < 0 || !isfinite(delta) || !isfinite(sigma))
		return 0;
	/* sensor t = phase t + delta  =>  timeline = sensor t + offset - delta */
	out->offset_s -= delta;
	out->uncert_ms = sigma * 1e3;
	{
		size_t l = strlen(out->method);
		snprintf(out->method + l, sizeof out->method - l, "+fit");
	}
	return 1;
}
