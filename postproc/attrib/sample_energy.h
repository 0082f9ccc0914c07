/*
 * sample_energy.h - the energy of every aligned py-spy sample.
 *
 * Each sample owns its aligned slice of the timeline (align_pyspy_slice).
 * Where several samples overlap (threads sampled at once, processes with
 * --subprocesses), the energy of the overlap is split equally among the
 * *busy* samples there; idle samples (empty stack, or a leaf line that
 * blocks: sleep, wait, join, acquire, select, poll, recv, accept; or
 * only py-spy's "process N:..."/"thread (N)" pseudo-frames) get a
 * share only when no busy sample overlaps.  Why: with py-spy --idle a
 * sleeping thread is sampled as often as a spinning one, and whole-machine
 * power is drawn by what runs, not by what waits.  Energy of time no
 * sample covers stays unattributed and is reported as such.
 */
#ifndef ANCHORPOST_SAMPLE_ENERGY_H
#define ANCHORPOST_SAMPLE_ENERGY_H

#include <stddef.h>
#include <stdint.h>

#include "align_pyspy.h"
#include "energy_model.h"
#include "pyspy.h"

struct sample_energy {
	size_t n, ngroups;
	double *t0_s, *t1_s;   /* n: aligned slices (timeline seconds) */
	uint8_t *idle;         /* n */
	double *e_j;           /* n x ngroups */
	double *attributed_j;  /* ngroups: sum of e_j */
	double *unsampled_j;   /* ngroups: perun energy no sample covers */
	double *span_j;        /* ngroups: perun energy over its whole span */
	uint8_t *frame_blocking; /* frames.n: leaf line blocks */
	double idle_share;     /* share of samples that are idle */
};

/* 0 or -ENOMEM.  string_src: the source file of frames whose file is
 * "<string>" (perun monitor runs the script from a string), or NULL. */
int sample_energy_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const char *string_src, struct sample_energy *se);

/* The script `perun monitor` ran (first *.py argument after "monitor" in
 * a PROC_START argv of the ring), if that file is readable; else NULL. */
const char *sample_energy_perun_script(const struct ringload *rl, char *buf, size_t cap);

/* `perun monitor` exec's the script from a string, so py-spy names its
 * frames' file "<string>": give those frames (a function the script
 * defines, or its module body) the script's path, kept in buf.  Returns
 * how many frames were renamed. */
size_t sample_energy_name_script(const struct ringload *rl, struct pyspy_profile *p, char *buf, size_t cap);

void sample_energy_free(struct sample_energy *se);

/* Exclusive-timeline phase at timeline time t for a profile thread:
 * its ring thread's own phases, else its process's primary thread, else
 * the run's primary thread.  -1 outside every phase. */
int sample_energy_phase_at(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread, double t_s);

#endif
