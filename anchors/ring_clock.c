/* ring_clock.c - monotonic -> UTC from SYNC records (see ring_clock.h). */
#include "ring_clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* NTP slews at most 500 ppm; anything faster is a step. */
#define SLEW_PPM 500.0
#define STEP_FLOOR_NS 1000000.0

static int cmp_pt(const void *a, const void *b)
{
	const struct ring_clock_point *x = a, *y = b;
	return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

int ring_clock_build(const struct ring_event *ev, size_t n, struct ring_clock *c)
{
	size_t cap = 0;
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		struct anchor_sync_payload p;
		if (!ring_event_sync(&ev[i], &p))
			continue;
		if (c->n == cap) {
			cap = cap ? cap * 2 : 64;
			struct ring_clock_point *q = realloc(c->pt, cap * sizeof *q);
			if (!q)
				return -ENOMEM;
			c->pt = q;
		}
		c->pt[c->n].mono_ns = ev[i].ts_ns;
		c->pt[c->n].offset_ns = (int64_t)(ev[i].value - ev[i].ts_ns);
		c->pt[c->n].bracket_ns = p.bracket_ns;
		c->n++;
	}
	if (c->n)
		qsort(c->pt, c->n, sizeof *c->pt, cmp_pt);
	for (size_t i = 0; i < c->n; i++) {
		double br = c->pt[i].bracket_ns / 1e3;
		if (br > c->max_bracket_us)
			c->max_bracket_us = br;
		if (i) {
			double dt = (double)(c->pt[i].mono_ns - c->pt[i - 1].mono_ns);
			double d = (double)(c->pt[i].offset_ns - c->pt[i - 1].offset_ns);
			if (d < 0)
				d = -d;
			if (d > STEP_FLOOR_NS + dt * SLEW_PPM * 1e-6) {
				c->steps++;
				if (d / 1e6 > c->max_step_ms)
					c->max_step_ms = d / 1e6;
			}
		}
	}
	return 0;
}

void ring_clock_use_creation(struct ring_clock *c, const struct anchor_ring_hdr *h)
{
	struct ring_clock_point *q;

	if (c->n || !h->create_realtime_ns || !h->create_monotonic_ns)
		return;
	q = realloc(c->pt, sizeof *q);
	if (!q)
		return;
	c->pt = q;
	q->mono_ns = h->create_monotonic_ns;
	q->offset_ns = (int64_t)(h->create_realtime_ns - h->create_monotonic_ns);
	q->bracket_ns = 0;
	c->n = 1;
	c->from_creation = 1;
}

static int64_t offset_at(const struct ring_clock *c, uint64_t mono)
{
	size_t lo = 0, hi = c->n;
	if (!c->n)
		return 0;
	if (mono <= c->pt[0].mono_ns)
		return c->pt[0].offset_ns;
	if (mono >= c->pt[c->n - 1].mono_ns)
		return c->pt[c->n - 1].offset_ns;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (c->pt[mid].mono_ns <= mono)
			lo = mid;
		else
			hi = mid;
	}
	{
		const struct ring_clock_point *a = &c->pt[lo], *b = &c->pt[lo + 1];
		double f = (double)(mono - a->mono_ns) / (double)(b->mono_ns - a->mono_ns);
		return a->offset_ns + (int64_t)(f * (double)(b->offset_ns - a->offset_ns));
	}
}

int64_t ring_clock_unix_ns(const struct ring_clock *c, uint64_t mono_ns)
{
	if (!c->n)
		return 0;
	return (int64_t)mono_ns + offset_at(c, mono_ns);
}

uint64_t ring_clock_mono_ns(const struct ring_clock *c, int64_t unix_ns)
{
	/* Offsets change slowly: two fixed-point steps are exact enough. */
	int64_t m = unix_ns - offset_at(c, (uint64_t)(unix_ns - (c->n ? c->pt[0].offset_ns : 0)));
	m = unix_ns - offset_at(c, (uint64_t)m);
	return (uint64_t)m;
}

void ring_clock_free(struct ring_clock *c)
{
	free(c->pt);
	memset(c, 0, sizeof *c);
}

void ring_clock_iso(int64_t unix_ns, char *buf, size_t cap)
{
	time_t s = (time_t)(unix_ns / 1000000000);
	long ns = (long)(unix_ns % 1000000000);
	struct tm tm;
	char date[32];
	if (ns < 0) {
		ns += 1000000000;
		s -= 1;
	}
	gmtime_r(&s, &tm);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%09ldZ", date, ns);
}
