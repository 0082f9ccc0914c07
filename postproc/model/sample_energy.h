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
 *
 * Device groups (GPU) when the ring has device-side edges: a GPU executes
 * a phase's work after the host launched it, so the GPU energy of a
 * py-spy sample's own instant belongs to whatever the device ran then,
 * not to the stack py-spy saw.  Rule: the GPU energy inside each
 * device-side segment of a phase occurrence (the device timeline's
 * exclusive pieces, phase_set.h) goes to the host-side occurrence that
 * launched it (same phase, same occurrence number on the process's
 * primary thread: the k-th device-side "forward" is the k-th host-side
 * one), and is shared by the samples of that thread read inside the
 * host occurrence's own (self) time (those a SITE record places in its
 * phase first, then busy ones, idle ones only when no busy one is there;
 * an occurrence no sample instant reaches: the nearest sample labelled
 * with its phase, else the samples whose slices overlap it; the order
 * and why: struct dev_dist in the .c, model/sample_labels.h).
 * How the energy inside the device-side phases divides among them is
 * the fit `anchorpost phases` makes on the device timeline (perun's
 * 0.1 s curve smears short phases into their neighbours), scaled so the
 * sum stays perun's integral over that time (dev_rescale in the .c).
 * GPU energy outside every paired device-side segment (device idle,
 * between phases) stays on the host timeline as above; CPU/DRAM always
 * do.  A host occurrence no sample covers leaves its device-side energy
 * unsampled.
 */
#ifndef ANCHORPOST_SAMPLE_ENERGY_H
#define ANCHORPOST_SAMPLE_ENERGY_H

#include <stddef.h>
#include <stdint.h>

#include "align/align_pyspy.h"
#include "align/pyspy_sites.h"
#include "input/pyspy.h"
#include "model/energy_model.h"
#include "phase/phase_set.h"

struct sample_energy {
	size_t n, ngroups;
	double *t0_s, *t1_s;   /* n: aligned slices (timeline seconds) */
	double *t_s;           /* n: the sample's own instant, the stack's read (timeline seconds) */
	uint8_t *idle;         /* n */
	double *e_j;           /* n x ngroups */
	double *attributed_j;  /* ngroups: sum of e_j */
	double *unsampled_j;   /* ngroups: perun energy no sample covers */
	double *span_j;        /* ngroups: perun energy over its whole span */
	uint8_t *frame_blocking; /* frames.n: leaf line blocks */
	double idle_share;     /* share of samples that are idle */
	/* Device-side attribution (all zero without device-side edges). */
	uint8_t *dev_group;    /* ngroups: attributed on the device-side phases */
	double *dev_j;         /* ngroups: energy of the paired device-side segments */
	uint32_t dev_pid;      /* the process whose device timeline was used */
	size_t dev_paired;     /* device-side occurrences paired with a host one */
	size_t dev_unpaired;   /* occurrences of either side without a twin */
	int dev_fit;           /* 1: shares among device-side phases from the fit */
};

/* 0 or -ENOMEM.  sites: the stacks' SITE labels (pyspy_sites.h, the run
 * model's); string_src: the source file of frames whose file is
 * "<string>" (perun monitor runs the script from a string), or NULL. */
int sample_energy_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const struct pyspy_sites *sites, const char *string_src, struct sample_energy *se);

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

/* 1 when some sample got joules (perun's span holds part of the profile).
 * When none did, a one-line reason in buf: the profile's aligned span and
 * its process against perun's span and the process perun ran, and what to
 * do (the user's two concurrent runs: perun's own start-up takes seconds,
 * so a short script under py-spy can end before perun's first sample). */
int sample_energy_overlaps(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			   const struct sample_energy *se, char *buf, size_t cap);

/* The phase_set thread (index into m->ph.thr) whose phases a profile
 * thread's samples are read on, by the rule above; -1 none. */
long sample_energy_thread(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread);

#endif
