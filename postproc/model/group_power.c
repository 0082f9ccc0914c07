/* group_power.c - power per device group (see group_power.h). */
#include "model/group_power.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


int group_power_build(const struct energy_model *m, size_t g, struct group_power *gp)
{
	const struct em_sensor *first = NULL;
	for (size_t s = 0; s < m->nsen && !first; s++)
		if (energy_model_group_of(m, &m->sen[s]) == g)
			first = &m->sen[s];
	memset(gp, 0, sizeof *gp);
	if (!first)
		return 0;
	gp->n = first->ser.n;
	gp->t_s = malloc(gp->n * sizeof *gp->t_s);
	gp->power_w = calloc(gp->n, sizeof *gp->power_w);
	if (!gp->t_s || !gp->power_w) {
		group_power_free(gp);
		return -ENOMEM;
	}
	memcpy(gp->t_s, first->t_tl, gp->n * sizeof *gp->t_s);
	for (size_t i = 1; i < gp->n; i++) {
		double e = 0, dt = gp->t_s[i] - gp->t_s[i - 1];
		for (size_t s = 0; s < m->nsen; s++)
			if (energy_model_group_of(m, &m->sen[s]) == g)
				e += energy_model_slice_j(&m->sen[s], gp->t_s[i - 1], gp->t_s[i]);
		gp->power_w[i] = dt > 0 ? e / dt : 0;
	}
	return 0;
}

void group_power_free(struct group_power *gp)
{
	free(gp->t_s);
	free(gp->power_w);
	memset(gp, 0, sizeof *gp);
}
