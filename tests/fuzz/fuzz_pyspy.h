/*
 * fuzz_pyspy.h - shared body of the py-spy reader fuzz targets: load the
 * input as the given format into the model (through the streaming path),
 * then exercise what consumers do with a model: walk every stack and
 * write the energy-weighted speedscope file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "input/pyspy.h"
#include "output/pyspy_energy.h"

static int fuzz_pyspy_one(const uint8_t *data, size_t size, enum pyspy_format fmt)
{
	struct pyspy_profile p;
	struct em_error err;
	FILE *fp;
	if (!size)
		return 0;
	fp = fmemopen((void *)data, size, "rb");
	if (!fp)
		return 0;
	pyspy_profile_init(&p);
	if (pyspy_load_fp(fp, fmt, &p, &err) == 0) {
		double *w = malloc((p.nsamples + 1) * sizeof *w);
		uint32_t frames[64];
		for (size_t i = 0; i < p.nsamples; i++) {
			uint32_t d = pyspy_stack_frames(&p.stacks, p.samples[i].stack, frames, 64);
			for (uint32_t k = 0; k < d && k < 64; k++)
				if (frames[k] >= p.frames.n)
					abort(); /* a stack naming a missing frame: reader bug */
			if (w)
				w[i] = p.samples[i].duration_s == p.samples[i].duration_s ? p.samples[i].duration_s : 1.0;
		}
		if (w) {
			char *buf = NULL;
			size_t len = 0;
			FILE *out = open_memstream(&buf, &len);
			if (out) {
				pyspy_write_energy_speedscope(&p, w, out, "fuzz");
				fclose(out);
			}
			free(buf);
			free(w);
		}
	}
	pyspy_profile_free(&p);
	fclose(fp);
	return 0;
}
