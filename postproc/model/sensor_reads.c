/* sensor_reads.c - each reading at its own read (see sensor_reads.h). */
#include "model/sensor_reads.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "model/energy_model.h"

int sensor_reads_apply(struct em_sensor *s, const struct ring_event *ev, size_t n, uint32_t pid, size_t round_idx)
{
	size_t ns = s->ser.n;
	double *t, *v = NULL;
	struct align_reads ar;
	int rc;
	s->reads = (struct sensor_reads){0};
	if (s->ser.kind == ATTRIB_INSTANT_W || ns < 2)
		return 0;
	/* t holds the delays first, then the reads' times. */
	if (!(t = malloc(ns * sizeof *t)))
		return -ENOMEM;
	rc = align_perun_reads(ev, n, pid, round_idx, s->ps->id, s->ser.t_s, ns, t, &ar);
	if (rc == -ENODATA || rc == -EINVAL) {
		s->reads.state = rc == -ENODATA ? SENSOR_READS_ABSENT : SENSOR_READS_MISMATCH;
		free(t);
		return 0;
	}
	if (s->ser.kind == ATTRIB_WINDOW_AVG_W)
		v = malloc(ns * sizeof *v);
	if (rc || (s->ser.kind == ATTRIB_WINDOW_AVG_W && !v)) {
		free(t);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ns; i++)
		t[i] += s->ser.t_s[i];
	/* A window mean's energy is what perun measured over the window: the
	 * same joules over the reads' window. */
	if (v) {
		v[0] = s->ser.value[0];
		for (size_t i = 1; i < ns; i++)
			v[i] = (s->cum_j[i] - s->cum_j[i - 1]) / (t[i] - t[i - 1]);
		s->v_read = v;
		s->ser.value = v;
	}
	s->t_read = t;
	s->ser.t_s = t;
	s->reads = (struct sensor_reads){SENSOR_READS_TIMED, ar.p50_s, ar.max_s, ar.n_late};
	return 0;
}

void sensor_reads_describe(const struct em_sensor *s, char *buf, size_t cap)
{
	if (s->reads.state == SENSOR_READS_TIMED)
		snprintf(buf, cap, "%s %.3f ms (max %.3f; %zu off it by > 0.5 ms)", s->ps->id, s->reads.p50_s * 1e3,
			 s->reads.max_s * 1e3, s->reads.n_late);
	else if (cap)
		buf[0] = '\0';
}
