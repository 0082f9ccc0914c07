/*
 * pyspy_energy_main.c - test driver for pyspy_write_energy_speedscope():
 * load a py-spy profile into the model, give sample i the weight
 * duration_s * POWER_W joules (raw: count * POWER_W), write the energy
 * speedscope file.  Built and run by tests/pyspy/t_pyspy_energy.py.
 *
 * usage: pyspy_energy_main PROFILE OUT.json POWER_W
 */
#include <stdio.h>
#include <stdlib.h>

#include "input/pyspy.h"
#include "output/pyspy_energy.h"

int main(int argc, char **argv)
{
	struct pyspy_profile p;
	struct em_error err;
	double power_w, total_j = 0, *w;
	FILE *fp;
	if (argc != 4)
		return 2;
	power_w = atof(argv[3]);
	pyspy_profile_init(&p);
	if (pyspy_load(argv[1], PYSPY_FMT_AUTO, &p, &err)) {
		fprintf(stderr, "%s: %s\n", argv[1], err.msg);
		return 1;
	}
	w = malloc((p.nsamples + 1) * sizeof *w);
	if (!w)
		return 1;
	for (size_t i = 0; i < p.nsamples; i++) {
		double d = p.samples[i].duration_s;
		w[i] = (d == d ? d : (double)(p.counts ? p.counts[i] : 1)) * power_w;
		total_j += w[i];
	}
	if (!(fp = fopen(argv[2], "w")) || pyspy_write_energy_speedscope(&p, w, fp, "test energy") || fclose(fp)) {
		fprintf(stderr, "%s: write failed\n", argv[2]);
		return 1;
	}
	printf("samples=%zu threads=%u total_j=%.17g\n", p.nsamples, p.nthreads, total_j);
	free(w);
	pyspy_profile_free(&p);
	return 0;
}
