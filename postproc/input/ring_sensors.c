/*
 * ring_sensors.c - ms energy counters from a ring (see ring_sensors.h).
 */
#include "input/ring_sensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "c<i>=group|name|j_per_count|max" items of a SENSOR_DESC text. */
static int parse_desc(const struct ring_event *e, struct ring_counters *rc, size_t n)
{
	const char *p = e->text, *end = e->text + e->text_len;
	rc->c = calloc(n, sizeof *rc->c);
	if (!rc->c)
		return -ENOMEM;
	rc->n = n;
	while (p < end) {
		size_t len = strnlen(p, (size_t)(end - p));
		char item[200], *f[4], *save = NULL;
		unsigned idx;
		int k = 0;
		if (!strcmp(p, "emulated=1"))
			rc->emulated = 1;
		if (len < sizeof item && p[0] == 'c' && sscanf(p, "c%u=", &idx) == 1 && idx < n) {
			memcpy(item, p, len);
			item[len] = '\0';
			for (char *t = strtok_r(strchr(item, '=') + 1, "|", &save); t && k < 4;
			     t = strtok_r(NULL, "|", &save))
				f[k++] = t;
			if (k == 4) {
				struct ring_counter *c = &rc->c[idx];
				snprintf(c->group, sizeof c->group, "%s", f[0]);
				snprintf(c->name, sizeof c->name, "%s", f[1]);
				c->j_per_count = strtod(f[2], NULL);
				c->max = strtoull(f[3], NULL, 10);
				c->gauge = !strcmp(c->group, "gpu_power");
			}
		}
		p += len + 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!rc->c[i].group[0] || !(rc->c[i].j_per_count > 0))
			return -EINVAL;
	return 0;
}

/* Which process sampled most: several may sample (one per rank, or a
 * child that inherited the sampler), one set of counters is kept.  Sets
 * *pid, *samplers and *count (its SENSOR records); 0 samplers: none. */
static int busiest_sampler(const struct ring_event *ev, size_t nev, uint32_t *pid, size_t *samplers,
			   size_t *count)
{
	uint32_t *pids = NULL;
	size_t *cnt = NULL, npid = 0, best = 0;
	int rc = 0;

	for (size_t i = 0; i < nev; i++) {
		size_t k;
		if (ev[i].kind != ANCHOR_KIND_SENSOR)
			continue;
		for (k = 0; k < npid && pids[k] != ev[i].pid; k++)
			;
		if (k == npid) {
			uint32_t *np = realloc(pids, (npid + 1) * sizeof *pids);
			size_t *nc = realloc(cnt, (npid + 1) * sizeof *cnt);
			if (np)
				pids = np;
			if (nc)
				cnt = nc;
			if (!np || !nc) {
				rc = -ENOMEM;
				goto out;
			}
			pids[npid] = ev[i].pid;
			cnt[npid++] = 0;
		}
		cnt[k]++;
	}
	for (size_t k = 1; k < npid; k++)
		if (cnt[k] > cnt[best])
			best = k;
	*samplers = npid;
	if (npid) {
		*pid = pids[best];
		*count = cnt[best];
	}
out:
	free(pids);
	free(cnt);
	return rc;
}

/* Counter increment from prev to v: a step back below max is a wrap, any
 * other step back a reset (counted, taken as no energy). */
static uint64_t counter_delta(struct ring_counter *c, uint64_t prev, uint64_t v)
{
	if (v >= prev)
		return v - prev;
	if (c->max && prev <= c->max) {
		c->wraps++;
		return c->max - prev + 1 + v;
	}
	c->resets++;
	return 0;
}

/* The sampler's SENSOR records into cumulative joules per counter (room
 * for count ticks allocated by the caller); gaps[i] is the time between
 * tick i and i+1. */
static void accumulate(const struct ring_event *ev, size_t nev, struct ring_counters *rc, uint64_t *prev,
		       uint64_t *gaps)
{
	uint64_t last_ts = 0;

	for (size_t i = 0; i < nev; i++) {
		uint64_t v[ANCHOR_SENSOR_MAX];
		if (ev[i].kind != ANCHOR_KIND_SENSOR || ev[i].pid != rc->pid)
			continue;
		if (ring_event_sensor(&ev[i], v, ANCHOR_SENSOR_MAX) != rc->n)
			continue;
		if (rc->ticks && ev[i].ts_ns <= last_ts)
			continue; /* strictly increasing time for the integrals */
		if (rc->ticks)
			gaps[rc->ticks - 1] = ev[i].ts_ns - last_ts;
		for (size_t k = 0; k < rc->n; k++) {
			struct ring_counter *c = &rc->c[k];
			double e = 0;
			if (c->gauge) {
				c->value_w[c->n] = (double)v[k] * c->j_per_count;
				if (c->n)
					e = c->cum_j[c->n - 1] + c->value_w[c->n - 1] *
									 (double)(ev[i].ts_ns - c->ts_ns[c->n - 1]) / 1e9;
			} else if (c->n)
				e = c->cum_j[c->n - 1] + (double)counter_delta(c, prev[k], v[k]) * c->j_per_count;
			c->ts_ns[c->n] = ev[i].ts_ns;
			c->cum_j[c->n] = e;
			c->n++;
			prev[k] = v[k];
		}
		last_ts = ev[i].ts_ns;
		rc->ticks++;
	}
}

int ring_counters_build(const struct ring_event *ev, size_t nev, struct ring_counters *rc)
{
	size_t count = 0, n = 0;
	const struct ring_event *desc = NULL;
	uint64_t *prev = NULL, *gaps = NULL;
	int rc_ = 0;

	memset(rc, 0, sizeof *rc);
	if ((rc_ = busiest_sampler(ev, nev, &rc->pid, &rc->samplers, &count)) || !rc->samplers)
		goto out;
	for (size_t i = 0; i < nev && !desc; i++)
		if (ev[i].kind == ANCHOR_KIND_SENSOR_DESC && ev[i].pid == rc->pid && ev[i].value &&
		    ev[i].value <= ANCHOR_SENSOR_MAX)
			desc = &ev[i];
	if (!desc)
		goto out; /* overwritten or foreign: values without meaning */
	n = (size_t)desc->value;
	if (parse_desc(desc, rc, n)) {
		free(rc->c);
		rc->c = NULL;
		rc->n = 0;
		goto out;
	}
	prev = calloc(n, sizeof *prev);
	gaps = malloc(count * sizeof *gaps);
	if (!prev || !gaps) {
		rc_ = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		rc->c[k].ts_ns = malloc(count * sizeof(uint64_t));
		rc->c[k].cum_j = malloc(count * sizeof(double));
		if (rc->c[k].gauge)
			rc->c[k].value_w = malloc(count * sizeof(double));
		if (!rc->c[k].ts_ns || !rc->c[k].cum_j || (rc->c[k].gauge && !rc->c[k].value_w)) {
			rc_ = -ENOMEM;
			goto out;
		}
	}
	accumulate(ev, nev, rc, prev, gaps);
	if (rc->ticks > 1) {
		qsort(gaps, rc->ticks - 1, sizeof *gaps, cmp_u64);
		rc->period_ms = (double)gaps[(rc->ticks - 1) / 2] / 1e6;
		rc->max_gap_ms = (double)gaps[rc->ticks - 2] / 1e6;
	}
	if (rc->ticks < 2) {
		for (size_t k = 0; k < n; k++) {
			free(rc->c[k].ts_ns);
			free(rc->c[k].cum_j);
			free(rc->c[k].value_w);
		}
		free(rc->c);
		rc->c = NULL;
		rc->n = 0;
	}
out:
	free(prev);
	free(gaps);
	if (rc_)
		ring_counters_free(rc);
	return rc_;
}

double ring_counter_at(const struct ring_counter *c, uint64_t ts_ns)
{
	size_t lo = 0, hi;
	if (!c->n)
		return 0;
	if (ts_ns <= c->ts_ns[0])
		return c->cum_j[0];
	if (ts_ns >= c->ts_ns[c->n - 1])
		return c->cum_j[c->n - 1];
	hi = c->n - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->ts_ns[mid] <= ts_ns)
			lo = mid;
		else
			hi = mid;
	}
	return c->cum_j[lo] + (c->cum_j[hi] - c->cum_j[lo]) * (double)(ts_ns - c->ts_ns[lo]) /
				      (double)(c->ts_ns[hi] - c->ts_ns[lo]);
}

void ring_counters_free(struct ring_counters *rc)
{
	for (size_t k = 0; rc->c && k < rc->n; k++) {
		free(rc->c[k].ts_ns);
		free(rc->c[k].cum_j);
		free(rc->c[k].value_w);
	}
	free(rc->c);
	memset(rc, 0, sizeof *rc);
}
