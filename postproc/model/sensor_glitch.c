/* sensor_glitch.c - repair perun's impossible readings (see sensor_glitch.h). */
#include "model/sensor_glitch.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tunables.h"

double sensor_glitch_ceiling_w(const struct perun_sensor *ps, const char *group)
{
	double c = !strcmp(group, "cpu") ? ANCHOR_GLITCH_CPU_MAX_W
		   : !strcmp(group, "ram") ? ANCHOR_GLITCH_RAM_MAX_W
		   : !strcmp(group, "gpu") ? ANCHOR_GLITCH_GPU_MAX_W
					    : ANCHOR_GLITCH_OTHER_MAX_W;
	/* A device limit perun stored (NVML's default power limit) tightens
	 * it; RAPL's float32 max and NVML's "unknown" (uint32 max mW) do not. */
	if (perun_sensor_is_power(ps) && isfinite(ps->values_max) && ps->values_max > 0 &&
	    ps->values_max * ANCHOR_GLITCH_LIMIT_FACTOR < c)
		c = ps->values_max * ANCHOR_GLITCH_LIMIT_FACTOR;
	return c;
}

/* The counter can be read as energy: in J, and either never going down or
 * with the range it wraps at known (else a decrease cannot be told from a
 * wrap, and perun's power, which knew the range, is the better source). */
static int counter_usable(const struct perun_sensor *ps)
{
	if (!ps->alt_values || !ps->alt_unit || strcmp(ps->alt_unit, "J"))
		return 0;
	if (isfinite(ps->alt_max) && ps->alt_max > 0)
		return 1;
	for (size_t i = 1; i < ps->n; i++)
		if (ps->alt_values[i] < ps->alt_values[i - 1])
			return 0;
	return 1;
}

int sensor_glitch_repair(const struct perun_sensor *ps, const char *group, enum attrib_kind kind_power,
			 struct sensor_glitch *out)
{
	size_t n = ps->n;
	int rc;
	memset(out, 0, sizeof *out);
	out->ceiling_w = sensor_glitch_ceiling_w(ps, group);
	out->from_counter = counter_usable(ps);
	out->kind = out->from_counter ? ATTRIB_COUNTER_J : kind_power;
	out->value = malloc((n ? n : 1) * sizeof *out->value);
	out->bad = malloc(n ? n : 1);
	if (!out->value || !out->bad) {
		sensor_glitch_free(out);
		return -ENOMEM;
	}
	if (out->from_counter)
		rc = attrib_glitch_counter(ps->timesteps_s, ps->alt_values, n,
					   isfinite(ps->alt_max) ? ps->alt_max : 0, out->ceiling_w, out->value, out->bad,
					   &out->g);
	else
		rc = attrib_glitch_power(ps->timesteps_s, ps->values, n, kind_power, out->ceiling_w, out->value,
					 out->bad, &out->g);
	if (rc < 0) {
		/* timesteps that do not increase: nothing to judge windows by */
		memcpy(out->value, out->from_counter ? ps->alt_values : ps->values, n * sizeof *out->value);
		memset(&out->g, 0, sizeof out->g);
	}
	if (!out->g.nbad) {
		free(out->bad);
		out->bad = NULL;
	}
	return rc;
}

void sensor_glitch_free(struct sensor_glitch *sg)
{
	free(sg->value);
	free(sg->bad);
	sg->value = NULL;
	sg->bad = NULL;
}

void sensor_glitch_describe(const struct perun_sensor *ps, const struct sensor_glitch *sg, char *buf, size_t cap)
{
	const struct attrib_glitch *g = &sg->g;
	size_t est = g->nruns - g->nexact;
	char how[160] = "";
	buf[0] = '\0';
	if (!g->nbad)
		return;
	if (g->nexact && est)
		snprintf(how, sizeof how, "%zu run(s) repaired exactly from the readings around them, %zu estimated from "
					  "the neighbouring windows' power", g->nexact, est);
	else if (g->nexact)
		snprintf(how, sizeof how, "repaired exactly from the readings around %s",
			 g->nexact > 1 ? "them" : "it");
	else
		snprintf(how, sizeof how, "estimated from the neighbouring windows' power");
	snprintf(buf, cap,
		 "%s: %zu window(s) with an impossible reading (%s%.3g W at %.3f s; ceiling %.0f W): %s, %.1f J used "
		 "instead of %.1f J",
		 ps->id, g->nbad, sg->from_counter ? "counter: " : "", g->max_w, g->first_t_s, sg->ceiling_w, how,
		 g->used_j, g->raw_j);
}
