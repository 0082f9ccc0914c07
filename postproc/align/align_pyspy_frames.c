/* align_pyspy_frames.c - method "phase-frames": no pulse sampled, the
 * offset that puts the most samples in a phase whose typical frame their
 * stack holds (align_pyspy.h). */
#include "align/align_pyspy_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- phase-frames fit (no pulse sampled) --------------------------- */

/* phase_frames_fit's inputs and working tables, shared by its stages. */
struct pf_work {
	const struct pyspy_profile *p;
	const struct thr_rows *r;
	const struct phase_thread *th;
	uint64_t base_ns;
	double scale;
	size_t nf, n, nphase, np; /* np: phases with a signature (at most 64) */
	uint32_t *fr, cap;	  /* one stack's frames */
	double *in, *out;	  /* [q * nf + f]: samples holding f inside / outside phase q */
	int *sig;		  /* per phase: its typical frame, -1 for none */
	uint8_t *has;		  /* [j * nphase + q]: row j's stack holds sig[q] */
};

/* Tallies, at offset o, how often each frame is on a stack inside and
 * outside each phase; cnt_in[q]: samples inside q, *tot: all.  -ENOMEM. */
static int pf_count(struct pf_work *w, double o, size_t *cnt_in, size_t *tot)
{
	const struct pyspy_profile *p = w->p;
	size_t nf = w->nf, np = w->np;

	memset(w->in, 0, nf * w->nphase * sizeof *w->in);
	memset(w->out, 0, nf * w->nphase * sizeof *w->out);
	for (size_t j = 0; j < w->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		int ph = phase_at(w->th, w->base_ns, s->t_rel_s * w->scale + o);
		uint32_t d = p->stacks.v[s->stack].depth;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		(*tot)++;
		if (ph >= 0 && (size_t)ph < np)
			cnt_in[ph]++;
		for (size_t q = 0; q < np; q++)
			for (uint32_t k = 0; k < d; k++) {
				if (ph == (int)q)
					w->in[q * nf + w->fr[k]] += 1;
				else
					w->out[q * nf + w->fr[k]] += 1;
			}
	}
	return 0;
}

/* Per phase, the frame with the best recall x precision (as in
 * sig_masks); none for a phase with no samples or all of them. */
static void pf_signatures(struct pf_work *w, const size_t *cnt_in, size_t tot)
{
	size_t nf = w->nf;

	for (size_t q = 0; q < w->np; q++) {
		double bestv = 0;
		w->sig[q] = -1;
		if (!cnt_in[q] || cnt_in[q] == tot)
			continue;
		for (size_t f = 0; f < nf; f++) {
			/* recall x precision, as in sig_masks */
			double both = w->in[q * nf + f] + w->out[q * nf + f];
			double v = both > 0 ? w->in[q * nf + f] / (double)cnt_in[q] * (w->in[q * nf + f] / both) : 0;
			if (v > bestv) {
				bestv = v;
				w->sig[q] = (int)f;
			}
		}
	}
}

/* has[]: which rows' stacks hold each phase's signature frame. */
static void pf_mark_rows(struct pf_work *w)
{
	const struct pyspy_profile *p = w->p;

	for (size_t j = 0; j < w->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		uint32_t d = p->stacks.v[s->stack].depth;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		for (size_t q = 0; q < w->np; q++) {
			w->has[j * w->nphase + q] = 0;
			for (uint32_t k = 0; k < d && w->sig[q] >= 0; k++)
				if (w->fr[k] == (uint32_t)w->sig[q])
					w->has[j * w->nphase + q] = 1;
		}
	}
}

/* Scans offsets lo..hi by step for the share of in-phase rows holding
 * their phase's frame; the best offset is the middle of the first plateau
 * of equal best scores.  *b_lo..*b_hi: that plateau. */
static double pf_scan(const struct pf_work *w, double o, double lo, double hi, double step, double *bs_out,
		      double *b_lo_out, double *b_hi_out)
{
	double bs = -1, bo = o, b_lo = o, b_hi = o;

	for (double c = lo; c <= hi + 1e-12; c += step) {
		size_t agree = 0, inph = 0;
		for (size_t j = 0; j < w->n; j++) {
			const struct pyspy_sample *s = &w->p->samples[w->r->idx[j]];
			int ph = phase_at(w->th, w->base_ns, s->t_rel_s * w->scale + c);
			if (ph < 0 || (size_t)ph >= w->np)
				continue;
			inph++;
			agree += w->has[j * w->nphase + (size_t)ph];
		}
		double sc = inph ? (double)agree / (double)inph : 0;
		if (sc > bs + 1e-12) {
			bs = sc;
			bo = b_lo = b_hi = c;
		} else if (sc >= bs - 1e-12 && c - b_hi <= step * 1.5) {
			b_hi = c;
			bo = (b_lo + b_hi) / 2;
		}
	}
	*bs_out = bs;
	*b_lo_out = b_lo;
	*b_hi_out = b_hi;
	return bo;
}

/* For every phase, the frame whose presence in a stack is most typical of
 * samples inside it (highest share inside minus share outside), given
 * offset o; then the share of in-phase samples holding their phase's
 * frame, scanned over offsets. */
int apy_phase_frames_fit(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
			    uint64_t base_ns, size_t nphase, double scale, double lo, double hi, double *best_o,
			    double *best_score, double *half_s)
{
	struct pf_work w = { .p = p, .r = r, .th = th, .base_ns = base_ns, .scale = scale, .nf = p->frames.n,
			     .n = r->n, .nphase = nphase, .np = nphase < 64 ? nphase : 64 };
	int rc = -ENOMEM;
	double o = (lo + hi) / 2, step;

	if (!w.n || !nphase || !w.nf)
		return -ENODATA;
	w.in = calloc(w.nf * nphase, sizeof *w.in);
	w.out = calloc(w.nf * nphase, sizeof *w.out);
	w.sig = malloc(nphase * sizeof *w.sig);
	w.has = calloc(w.n * nphase, 1);
	if (!w.in || !w.out || !w.sig || !w.has)
		goto done;
	/* Two rounds: signatures at the centre, scan; signatures at the
	 * best offset, scan narrower. */
	step = (hi - lo) / 400 > COARSE_STEP_S ? (hi - lo) / 400 : COARSE_STEP_S;
	for (int round = 0; round < 2; round++) {
		size_t cnt_in[64] = {0}, tot = 0;
		double bs, b_lo, b_hi;
		if (pf_count(&w, o, cnt_in, &tot))
			goto done;
		pf_signatures(&w, cnt_in, tot);
		pf_mark_rows(&w);
		o = pf_scan(&w, o, lo, hi, step, &bs, &b_lo, &b_hi);
		*best_score = bs;
		*half_s = (b_hi - b_lo) / 2 + step / 2;
		lo = o - 5 * step;
		hi = o + 5 * step;
		step = step / 10 > FINE_STEP_S * 10 ? step / 10 : FINE_STEP_S * 10;
	}
	*best_o = o;
	rc = 0;
done:
	free(w.fr);
	free(w.in);
	free(w.out);
	free(w.sig);
	free(w.has);
	return rc;
}

/* Method "phase-frames": no pulse sampled, the reference thread has phases. */
int apy_fit_phase_frames(struct fit_ctx *c)
{
	long th = apy_ref_timeline(c);
	double o, score, half;
	double w_lo = c->lo, w_hi = c->hi < c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S ? c->hi : c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S;
	/* speedscope with --idle starts sampling with the process: py-spy's
	 * own PROC_START bounds the search (a training loop repeats, and
	 * phases against frames fit nearly as well many steps away: 10 s
	 * off in issue 21's recordings) */
	int bounded = !c->chrome && c->p->meta.idle != PYSPY_IDLE_UNLIKELY && !strncmp(c->a->prior, "py-spy", 6);
	if (bounded) {
		w_lo = fmax(c->lo, c->a->prior_offset_s - ALIGN_PYSPY_PRIOR_SLACK_S);
		w_hi = fmin(w_hi, c->a->prior_offset_s + ALIGN_PYSPY_PRIOR_SLACK_S);
		if (!(w_lo < w_hi)) {
			w_lo = c->lo;
			w_hi = c->hi < c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S ? c->hi : c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S;
		}
	}
	int pf = th >= 0 ? apy_phase_frames_fit(c->p, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, c->ph->nnames, 1.0,
						w_lo, w_hi, &o, &score, &half)
			 : -ENODATA;
	if (pf == -ENOMEM) {
		/* not a reason to fall back to the prior silently */
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	if (pf)
		return 1;
	c->a->offset_s = o;
	c->a->phase_score = score;
	c->a->uncert_ms = half * 1e3;
	c->a->resid_ms = NAN;
	snprintf(c->a->method, sizeof c->a->method, "phase-frames");
	return 0;
}
