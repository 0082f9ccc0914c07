/*
 * perun_api_check.c - prints what the perun.h model holds, one line per
 * fact, for tests/perun/t_perun_api.py to compare with h5py.  Built by that test
 * against postproc/perun_load.c and postproc/perun_guard.c.
 *
 * usage: perun_api_check FILE.hdf5
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "input/perun.h"
#include "input/perun_spelling.h"

static const char *clock_name(enum perun_clock c)
{
	return c == PERUN_CLOCK_REALTIME ? "realtime" : c == PERUN_CLOCK_MONOTONIC ? "monotonic" : "unknown";
}

int main(int argc, char **argv)
{
	struct perun_file pf;
	struct em_error err;
	if (argc != 2)
		return 2;
	int rc = perun_load_guarded(argv[1], &pf, &err);
	if (rc < 0) {
		printf("error %d %s\n", rc, err.msg);
		return 1;
	}
	printf("app %s runs %zu power %zu\n", pf.app, pf.nruns, perun_count_power_sensors(&pf));
	for (size_t i = 0; i < pf.nruns; i++) {
		const struct perun_multirun *m = &pf.runs[i];
		if (perun_find_run(&pf, m->id) != m)
			printf("find_run-broken %s\n", m->id);
		printf("run %s app=%s version=%s dt=%s clock=%s rounds=%zu config=%zu period=%s\n", m->id, m->app_name,
		       m->perun_version, m->execution_dt, clock_name(m->clock), m->nrounds, m->nconfig,
		       perun_config_get(m, "monitor.sampling_period") ? perun_config_get(m, "monitor.sampling_period") : "-");
		for (size_t j = 0; j < m->nrounds; j++) {
			const struct perun_round *r = &m->rounds[j];
			for (size_t k = 0; k < r->nhosts; k++) {
				const struct perun_host *h = &r->hosts[k];
				printf("host %s %s ranks", r->id, h->name);
				for (size_t q = 0; q < h->nranks; q++)
					printf(" %d", h->mpi_ranks[q]);
				printf("\n");
				for (size_t g = 0; g < h->ngroups; g++) {
					const struct perun_group *gr = &h->groups[g];
					for (size_t q = 0; q < gr->nsensors; q++) {
						const struct perun_sensor *s = &gr->sensors[q];
						double e = NAN;
						int erc = perun_sensor_energy_j(s, &e);
						const char *src = "";
						double v_sum = 0;
						for (size_t a = 0; a < s->n; a++)
							v_sum += s->values[a];
						for (size_t a = 0; a < s->nmeta; a++)
							if (!strcmp(s->meta[a].key, "source"))
								src = s->meta[a].value;
						printf("sensor %s %s %s n=%zu unit=%s mag=%.17g metric=%s digits=%d "
						       "power=%d energy=%s%.9g alt=%s alt_mag=%.17g nmeta=%zu "
						       "t_last=%.9g v_sum=%.17g alt_last=%.17g source=%s\n",
						       r->id, gr->name, s->id, s->n, s->unit, s->mag, s->metric,
						       s->values_digits, perun_sensor_is_power(s),
						       erc == -ENOENT ? "none:" : "", e,
						       s->alt_unit ? s->alt_unit : "-", s->alt_values ? s->alt_mag : 0,
						       s->nmeta, s->n ? s->timesteps_s[s->n - 1] : NAN, v_sum,
						       s->alt_values && s->n ? s->alt_values[s->n - 1] : NAN, src);
					}
				}
			}
			for (size_t k = 0; k < r->nregions; k++) {
				const struct perun_region *rg = &r->regions[k];
				for (size_t q = 0; q < rg->nranks; q++)
					printf("region %s %s rank %d calls %zu\n", r->id, rg->name,
					       rg->ranks[q].rank, rg->ranks[q].n);
			}
		}
	}
	perun_free(&pf);
	perun_free(&pf); /* safe twice: perun_free leaves a zeroed struct */
	printf("freed\n");
	return 0;
}
