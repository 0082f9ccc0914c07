/*
 * align_pyspy.h - put py-spy samples on the ring's timeline (seconds since
 * the ring's first record, like align.h does for perun).
 *
 * A sample of py-spy thread k taken at profile time t (t_rel_s) happened
 * at timeline time  offset_s[k] + scale * t.
 *
 *   chrometrace  t is real CLOCK_MONOTONIC time since py-spy made its
 *                recorder: scale 1, one offset for every thread.
 *   speedscope   t is the nominal i/rate of the thread's i-th sample:
 *                drift (py-spy falling behind) is a scale, and each thread's
 *                profile starts at 0 at its own first sample, so a thread
 *                that started after py-spy attached gets its own offset.
 *
 * Methods, best first:
 *   pulse        sync pulses: every sample whose stack holds
 *                _anchor_sync_pulse_busy must fall inside one of the ring's
 *                "anchor.sync_pulse" ranges of that thread, and the other
 *                samples of the thread outside them.  The offset is the
 *                middle of the set of offsets meeting that (uncertainty: its
 *                half width, widened by the spread between pulses); with
 *                pulses far apart, speedscope's scale is fitted too.
 *   +pulses      speedscope with more than two pulses: a knot at each
 *                (clusters of pulse samples matched in order to the
 *                ring's pulse groups by their steps in time: py-spy may
 *                miss or split a pulse); the warp keeps these knots.
 *   speedscope's uncertainty includes the drift between time anchors
 *                (real time between neighbouring pulses, and from the
 *                last to the process's exit, against the nominal time of
 *                the samples between them: where py-spy lost or crowded
 *                samples nothing shows) plus the warp's p95 move off the
 *                pulses' mapping.
 *   +warp        speedscope only: py-spy's lag is not uniform (it falls
 *                behind while the machine is busy, then catches up), so a
 *                line through the pulses is off by up to ~0.4 s in between
 *                (measured on 2 loaded cores).  Samples are assigned, in
 *                order, to the reference thread's phase timeline so that
 *                most hold their phase's typical frame (dynamic
 *                programming in a band around the line); each phase's
 *                first and last typical sample are pinned inside it and
 *                time is piecewise linear between those knots.  Kept only
 *                if the pulses' RMS miss under it is within one sample
 *                period of the line's.
 *   phase-frames no pulse sampled: the offset that maximises the share of
 *                samples whose stack holds the frame most typical of the
 *                phase they fall in (the function that runs the phase).
 *   proc-start   the prior alone: py-spy's own PROC_START when py-spy ran
 *                under libanchor (its argv names py-spy), else the profiled
 *                process's start (py-spy attached some time after it).
 * Threads are mapped to ring threads: chrometrace "tid" is the pthread id,
 * which the ring's THREAD records carry as value; speedscope names carry
 * the OS tid.
 */
#ifndef ANCHORPOST_ALIGN_PYSPY_H
#define ANCHORPOST_ALIGN_PYSPY_H

#include <stddef.h>
#include <stdint.h>

#include "input/pyspy.h"
#include "input/ringload.h"
#include "phase/phase_set.h"

struct align_pyspy_thread {
	double offset_s;     /* timeline = offset_s + scale * t_rel_s */
	double x_shift_s;    /* speedscope: t_rel_s + x_shift_s = reference-thread time */
	uint32_t ring_pid;   /* 0 when not found in the ring */
	uint32_t ring_tid;   /* 0 when only the process was found */
	double ring_end_s;   /* its process's end on the timeline, INFINITY unknown */
	double ring_start_s; /* its process's start, -INFINITY unknown */
};

struct align_pyspy {
	double scale;          /* 1 for chrometrace */
	double offset_s;       /* of the reference (pulse) thread */
	double uncert_ms;      /* 1-sigma-ish: plateau half width + spread */
	double resid_ms;       /* RMS miss of the pulse constraints, final mapping */
	double resid_max_ms;   /* worst miss */
	double prior_offset_s; /* from PROC_START */
	char method[48];
	char prior[96];        /* what the prior came from */
	size_t pulse_samples;  /* busy-pulse samples used */
	size_t pulse_groups;   /* pulse clusters fitted */
	double phase_score;    /* phase-frames: share of samples agreeing */
	double sample_period_s;/* typical interval between samples */
	int idle_dropped;      /* speedscope seemingly without --idle */
	double unsampled_s;    /* speedscope: process life beyond the profile's nominal length */
	int time_unknown;      /* speedscope, no pulse, unsampled_s > 5 % of the life */
	struct align_pyspy_thread *thr; /* one per profile thread */
	size_t nthr, nmapped;
	/* speedscope warp: reference-thread profile time -> timeline,
	 * piecewise linear through knots (none: offset_s + scale * x) */
	double *knot_x, *knot_y;
	size_t nknots;
	double warp_max_ms;    /* largest correction the warp made */
	int warp_rejected;     /* it missed the pulses more than the line */
	size_t pulse_knots;    /* knots at pulses (speedscope, > 2 pulses) */
	/* speedscope: the largest gap between the real time that passed
	 * between two time anchors (pulses, the process's exit) and the
	 * nominal time of the samples between them: missing or extra
	 * samples whose place nothing shows, so any sample in between may
	 * be off by that much (0: not measured) */
	double drift_ms;
	/* SITE records (pyspy_sites.h): samples whose stack names the phase
	 * they were taken in, and how many of those the final mapping puts
	 * inside a range of that phase on their own thread */
	size_t label_sites, labelled, labelled_in;
	/* Confidence (align_pyspy_confidence.c): speedscope without pulses,
	 * the dead-reckoning p95 and the offset's ambiguity (ms, NAN when not
	 * measured); cannot_place with the reason in verdict; per sample
	 * unplaced (1: its time is not known well enough to name its phase,
	 * or it lies outside its process's life: outside_life of them). */
	double reckon_ms, ambiguity_ms;
	/* speedscope, decided by structure: the time error inside phases from
	 * the samples' counts per phase occurrence against its exact length
	 * (align_pyspy_confidence.c count_p95_s), ms; NAN not measured */
	double count_ms;
	/* speedscope, decided by structure: py-spy's rate in the phase where
	 * it sampled fastest and slowest (labelled samples per second of the
	 * phase's exact time, align_pyspy_confidence.c phase_rates), set only
	 * where the two differ beyond counting noise by more than
	 * ALIGN_PYSPY_RATE_RATIO (else 0): the count floor above then holds
	 * py-spy's catching up, not only time error */
	double rate_hi_ps, rate_lo_ps;
	char rate_hi_phase[64], rate_lo_phase[64];
	/* speedscope, SITE labels, no pulse (align_pyspy_slip.c): the phase
	 * pattern repeats, so a warp started a whole step off can hold the
	 * sites as well.  slip_step_ms: the pattern's period (0: not
	 * checked); slip_tried: reruns from shifted lines; slip_open_ms: how
	 * far (p95) a rerun that holds the labels as well puts the samples
	 * from the kept mapping, added to the stated uncertainty (0: every
	 * rerun found the same mapping, or none held the labels) */
	double slip_step_ms, slip_open_ms;
	size_t slip_tried;
	/* speedscope, decided by structure, the profile short of the
	 * process's life (time_unknown: py-spy started late or fell behind)
	 * by more than slip_step_ms: a stretch of it may sit a step off while
	 * the sites hold (align_pyspy_confidence.c); slip_open_ms is then that
	 * step */
	int slip_lag_open;
	int cannot_place;
	char verdict[320];
	uint8_t *unplaced;
	size_t outside_life;
	uint32_t ref_pid;      /* the reference thread's process (0: none mapped) */
};

/* Align a loaded profile (pyspy_load) with the ring.  0, or -1 with a
 * one-line reason in *e, file NULL (no thread or process of the profile
 * in the ring, no time overlap, raw format without times). */
int align_pyspy_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
		    const struct pyspy_profile *p, struct align_pyspy *out, struct em_error *e);

void align_pyspy_free(struct align_pyspy *a);

/* Timeline seconds of profile time t on thread k. */
double align_pyspy_time(const struct align_pyspy *a, uint32_t k, double t_rel_s);

/* The aligned slice of sample i: chrometrace [t, t+d) (the stack held
 * from one sample to the next), speedscope from halfway to the thread's
 * previous sample to halfway to its next; cut at
 * the end of the sample's process (py-spy keeps a dead process's last
 * stack open until it stops recording). */
void align_pyspy_slice(const struct align_pyspy *a, const struct pyspy_profile *p, size_t i, double *t0_s,
		       double *t1_s);

/* One line: method, uncertainty, residual, pulses, prior. */
void align_pyspy_describe(const struct align_pyspy *a, const struct pyspy_profile *p, char *buf, size_t cap);

#endif
