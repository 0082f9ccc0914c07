/* sample_energy.c - energy per aligned py-spy sample (see sample_energy.h). */
#include "model/sample_energy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attrib/attrib.h"
#include "input/input_file.h"
#include "model/sample_labels.h"

/* Leaf source lines that wait rather than run.  Without --native py-spy
 * shows the Python line that called the blocking C function. */
static const char *const blocking_calls[] = {
	"sleep(", "wait(", ".join()", "acquire(", "select(", "poll(", ".recv(", "recv_into(", "accept(", NULL,
};

struct src_file {
	char *path;
	char *text;
	size_t *line_off; /* start of line i+1 */
	size_t nlines;
};

static int load_src(struct src_file *f, const char *path)
{
	/* The profile names the file: a FIFO or device there must not hang us. */
	int fd = input_file_open(path, 0, NULL);
	FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
	size_t cap = 0, len = 0;
	if (fd >= 0 && !fp)
		close(fd);
	f->path = strdup(path);
	f->text = NULL;
	f->line_off = NULL;
	f->nlines = 0;
	if (!f->path)
		return -ENOMEM;
	if (!fp)
		return 0; /* unknown source: the line counts as running */
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *t = realloc(f->text, cap);
			if (!t) {
				fclose(fp);
				return -ENOMEM;
			}
			f->text = t;
		}
		size_t got = fread(f->text + len, 1, 4096, fp);
		len += got;
		if (got < 4096)
			break;
	}
	fclose(fp);
	f->text[len] = '\0';
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += f->text[i] == '\n';
	f->line_off = malloc(lines * sizeof *f->line_off);
	if (!f->line_off)
		return -ENOMEM;
	f->line_off[f->nlines++] = 0;
	for (size_t i = 0; i < len; i++)
		if (f->text[i] == '\n') {
			f->text[i] = '\0';
			f->line_off[f->nlines++] = i + 1;
		}
	return 0;
}

/* py-spy's --subprocesses / --threads root pseudo-frames. */
static int pseudo_frame(const struct pyspy_frame *fr)
{
	return (!fr->file || !fr->file[0]) && (!strncmp(fr->name, "process ", 8) || !strncmp(fr->name, "thread (", 8));
}

static int classify_frames(const struct pyspy_profile *p, const char *string_src, uint8_t *blocking)
{
	struct src_file *files = NULL;
	size_t nfiles = 0;
	int rc = 0;
	for (uint32_t f = 0; f < p->frames.n && !rc; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		struct src_file *sf = NULL;
		const char *path = fr->file;
		blocking[f] = (uint8_t)pseudo_frame(fr);
		if (path && string_src && !strcmp(path, "<string>"))
			path = string_src;
		if (!path || fr->line <= 0)
			continue;
		for (size_t i = 0; i < nfiles && !sf; i++)
			if (!strcmp(files[i].path, path))
				sf = &files[i];
		if (!sf) {
			struct src_file *nf = realloc(files, (nfiles + 1) * sizeof *nf);
			if (!nf) {
				rc = -ENOMEM;
				break;
			}
			files = nf;
			sf = &files[nfiles++];
			if ((rc = load_src(sf, path)))
				break;
		}
		if (!sf->text || (size_t)fr->line > sf->nlines)
			continue;
		const char *line = sf->text + sf->line_off[fr->line - 1];
		for (size_t k = 0; blocking_calls[k]; k++)
			if (strstr(line, blocking_calls[k]))
				blocking[f] = 1;
	}
	for (size_t i = 0; i < nfiles; i++) {
		free(files[i].path);
		free(files[i].text);
		free(files[i].line_off);
	}
	free(files);
	return rc;
}

/* A sweep event: a sample's slice (dev 0) or a device-side segment (dev 1)
 * starts or ends. */
struct sweep_ev {
	double t;
	size_t i;
	int start, dev;
};

static int cmp_ev(const void *x, const void *y)
{
	const struct sweep_ev *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->start - b->start; /* ends before starts at the same instant */
}

struct active {
	size_t *v;
	size_t n, cap;
};

static int active_add(struct active *s, size_t i)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		size_t *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = i;
	return 0;
}

static void active_del(struct active *s, size_t i)
{
	for (size_t k = 0; k < s->n; k++)
		if (s->v[k] == i) {
			s->v[k] = s->v[--s->n];
			return;
		}
}

/* The phase thread (index into m->ph.thr) whose timeline a profile
 * thread's samples are read on (sample_energy_phase_at), or -1. */
static long thread_of(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread)
{
	const struct phase_set *ph = &m->ph;
	uint32_t pid = a->thr[thread].ring_pid, tid = a->thr[thread].ring_tid;
	long th = -1;
	for (size_t i = 0; i < ph->nthr && pid; i++)
		if (ph->thr[i].pid == pid && ph->thr[i].tid == tid)
			th = (long)i;
	if (th < 0 && pid)
		th = phase_set_primary_of(ph, pid);
	if (th < 0 && ph->nthr)
		th = (long)ph->primary;
	return th;
}

/*
 * Device-side plan: the device timeline D (of the process with most
 * device-side phase time), its process's primary host thread H, and for
 * every device-side occurrence the host-side occurrence that launched it:
 * the same phase's k-th occurrence on H for its k-th on D (the ring
 * writes both edges of a phase at once, so the orders agree; a phase
 * whose counts differ is paired up to the shorter list and counted).
 */
struct dev_plan {
	long dthr, hthr;
	int *host_of;   /* per occ: host occurrence of a device one, or -1 */
	double *occ_j;  /* nocc x ngroups: device-side energy per host occurrence */
	double *ph_j;   /* nnames x ngroups: the same per phase (integral) */
	uint8_t *gdev;  /* per group: attributed on the device-side phases */
};

static int dev_plan_pair(const struct phase_set *ph, struct dev_plan *dp, struct sample_energy *se)
{
	const struct phase_thread *d = &ph->thr[dp->dthr], *h = &ph->thr[dp->hthr];
	size_t np = ph->nnames, *off = calloc(np + 1, sizeof *off), *k = calloc(np + 1, sizeof *k), *hl;
	if (!off || !k || !(hl = malloc((ph->nocc ? ph->nocc : 1) * sizeof *hl))) {
		free(off);
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ph->nocc; i++)
		if (ph->occ[i].pid == h->pid && ph->occ[i].tid == h->tid)
			off[ph->occ[i].phase + 1]++;
	for (size_t p = 0; p < np; p++)
		off[p + 1] += off[p];
	for (size_t i = 0; i < ph->nocc; i++) /* occ is sorted by t0 within a thread */
		if (ph->occ[i].pid == h->pid && ph->occ[i].tid == h->tid)
			hl[off[ph->occ[i].phase] + k[ph->occ[i].phase]++] = i;
	memset(k, 0, (np + 1) * sizeof *k);
	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		size_t p = (size_t)o->phase;
		if (o->pid != d->pid || o->tid != d->tid)
			continue;
		if (off[p] + k[p] < off[p + 1]) {
			dp->host_of[i] = (int)hl[off[p] + k[p]++];
			se->dev_paired++;
		} else {
			se->dev_unpaired++;
		}
	}
	for (size_t p = 0; p < np; p++) /* host occurrences left without a device twin */
		se->dev_unpaired += off[p + 1] - off[p] > k[p] && k[p] ? off[p + 1] - off[p] - k[p] : 0;
	free(off);
	free(k);
	free(hl);
	return 0;
}

/* 0 with dp->dthr = -1 when there is nothing to do on a device timeline. */
static int dev_plan_build(const struct energy_model *m, struct dev_plan *dp, struct sample_energy *se)
{
	size_t ng = m->ngroups, any = 0;
	memset(dp, 0, sizeof *dp);
	dp->dthr = phase_set_device_of(&m->ph, 0);
	dp->hthr = dp->dthr >= 0 ? phase_set_primary_of(&m->ph, m->ph.thr[dp->dthr].pid) : -1;
	for (size_t g = 0; g < ng; g++)
		any += phase_set_group_is_device(m->groups[g]) != 0;
	if (dp->dthr < 0 || dp->hthr < 0 || !any) {
		dp->dthr = -1;
		return 0;
	}
	dp->host_of = malloc((m->ph.nocc ? m->ph.nocc : 1) * sizeof *dp->host_of);
	dp->occ_j = calloc((m->ph.nocc ? m->ph.nocc : 1) * (ng ? ng : 1), sizeof *dp->occ_j);
	dp->ph_j = calloc((m->ph.nnames ? m->ph.nnames : 1) * (ng ? ng : 1), sizeof *dp->ph_j);
	dp->gdev = calloc(ng ? ng : 1, 1);
	if (!dp->host_of || !dp->occ_j || !dp->ph_j || !dp->gdev)
		return -ENOMEM;
	for (size_t i = 0; i < m->ph.nocc; i++)
		dp->host_of[i] = -1;
	for (size_t g = 0; g < ng; g++)
		dp->gdev[g] = se->dev_group[g] = (uint8_t)(phase_set_group_is_device(m->groups[g]) != 0);
	se->dev_pid = m->ph.thr[dp->dthr].pid;
	return dev_plan_pair(&m->ph, dp, se);
}

static void dev_plan_free(struct dev_plan *dp)
{
	free(dp->host_of);
	free(dp->occ_j);
	free(dp->ph_j);
	free(dp->gdev);
}

/* The device-side segment of D a sweep event names, paired or not. */
static const struct phase_seg *dev_seg(const struct energy_model *m, const struct dev_plan *dp, size_t s)
{
	return &m->ph.thr[dp->dthr].seg[s];
}

/* The sweep's events: every sample's slice, every paired device segment. */
static size_t sweep_events(const struct energy_model *m, const struct dev_plan *dp, const struct sample_energy *se,
			   struct sweep_ev *ev)
{
	size_t nev = 0;
	for (size_t i = 0; i < se->n; i++) {
		if (!(se->t1_s[i] > se->t0_s[i]))
			continue;
		ev[nev++] = (struct sweep_ev){se->t0_s[i], i, 1, 0};
		ev[nev++] = (struct sweep_ev){se->t1_s[i], i, 0, 0};
	}
	for (size_t s = 0; dp->dthr >= 0 && s < m->ph.thr[dp->dthr].nseg; s++) {
		const struct phase_seg *sg = dev_seg(m, dp, s);
		if (sg->occ < 0 || dp->host_of[sg->occ] < 0)
			continue;
		ev[nev++] = (struct sweep_ev){energy_model_tl(m, sg->t0_ns), s, 1, 1};
		ev[nev++] = (struct sweep_ev){energy_model_tl(m, sg->t1_ns), s, 0, 1};
	}
	qsort(ev, nev, sizeof *ev, cmp_ev);
	return nev;
}

/* One elementary piece [a, b] of the sweep: its energy per group goes to
 * the busy samples there (else the idle ones), except a device group's
 * inside a paired device segment, which goes to that segment's host-side
 * occurrence (dev_distribute). */
static void sweep_piece(const struct energy_model *m, const struct dev_plan *dp, long dseg, const struct active *busy,
			const struct active *idle, double a, double b, double *seg, struct sample_energy *se)
{
	const struct active *who = busy->n ? busy : idle->n ? idle : NULL;
	size_t ng = m->ngroups;
	memset(seg, 0, ng * sizeof *seg);
	for (size_t s = 0; s < m->nsen; s++)
		seg[energy_model_group_of(m, &m->sen[s])] += energy_model_slice_j(&m->sen[s], a, b);
	for (size_t g = 0; g < ng; g++) {
		if (dseg >= 0 && dp->gdev[g]) {
			const struct phase_seg *ds = dev_seg(m, dp, (size_t)dseg);
			int h = dp->host_of[ds->occ];
			dp->occ_j[(size_t)h * ng + g] += seg[g];
			dp->ph_j[(size_t)ds->phase * ng + g] += seg[g];
			se->dev_j[g] += seg[g];
			continue;
		}
		if (!who) {
			se->unsampled_j[g] += seg[g];
			continue;
		}
		double share = seg[g] / (double)who->n;
		for (size_t j = 0; j < who->n; j++)
			se->e_j[who->v[j] * ng + g] += share;
		se->attributed_j[g] += seg[g];
	}
}

static int sweep(const struct energy_model *m, const struct dev_plan *dp, const struct sweep_ev *ev, size_t nev,
		 struct sample_energy *se)
{
	struct active busy = {0}, idle = {0};
	double prev = m->span_t0_s, *seg = calloc(m->ngroups ? m->ngroups : 1, sizeof *seg);
	long dseg = -1;
	int rc = seg ? 0 : -ENOMEM;
	for (size_t k = 0; k <= nev && !rc; k++) {
		double t = k < nev ? ev[k].t : m->span_t1_s;
		if (t > prev) {
			sweep_piece(m, dp, dseg, &busy, &idle, prev, t, seg, se);
			prev = t;
		}
		if (k == nev)
			break;
		if (ev[k].dev) {
			/* a thread's segments never overlap: one at a time */
			dseg = ev[k].start ? (long)ev[k].i : -1;
			continue;
		}
		struct active *set = se->idle[ev[k].i] ? &idle : &busy;
		if (ev[k].start)
			rc = active_add(set, ev[k].i);
		else
			active_del(set, ev[k].i);
	}
	free(seg);
	free(busy.v);
	free(idle.v);
	return rc;
}

/* Per phase, a device group's joules as `anchorpost phases` attributes
 * them on the device timeline (attrib_split: each window's energy split by
 * time share x NNLS-fitted power; instant NVML reads: per-phase fit) into
 * fit_j (nnames).  -ENODATA when too few windows cover the phases. */
static int dev_fit_group(const struct energy_model *m, const struct dev_plan *dp, size_t g, double *fit_j)
{
	const struct phase_thread *d = &m->ph.thr[dp->dthr];
	struct attrib_interval *iv = malloc((d->nseg ? d->nseg : 1) * sizeof *iv);
	struct attrib_opts ao = {.n_boot = 20}; /* point estimates only */
	size_t np = m->ph.nnames, niv = 0;
	int rc = iv ? 0 : -ENOMEM;
	for (size_t i = 0; i < d->nseg && !rc; i++) {
		if (phase_set_is_tool(&m->ph, d->seg[i].phase))
			continue; /* as `phases`: the tools' own activity is no phase to fit */
		/* Device groups' sensors keep perun's stamps (no lag fitted:
		 * model/sensor_lag.h), so the alignment's offset is theirs. */
		iv[niv].t0_s = energy_model_tl(m, d->seg[i].t0_ns) - m->align.offset_s;
		iv[niv].t1_s = energy_model_tl(m, d->seg[i].t1_ns) - m->align.offset_s;
		iv[niv++].phase = d->seg[i].phase;
	}
	for (size_t s = 0; s < m->nsen && !rc; s++) {
		struct attrib_result r;
		if (energy_model_group_of(m, &m->sen[s]) != g)
			continue;
		memset(&r, 0, sizeof r);
		if (!(rc = attrib_split(&m->sen[s].ser, iv, niv, np, &ao, &r)))
			for (size_t k = 0; k < np; k++)
				fit_j[k] += r.row[k].energy_j;
		attrib_result_free(&r);
	}
	free(iv);
	return rc;
}

/*
 * The energy inside the device-side phases is perun's (integral over
 * their time); how it divides among the phases is the fit's: each phase's
 * integral is scaled by fit/integral, then all by one factor so their sum
 * is the integral again.  Why: the integral of a curve sampled every
 * 0.1 s smears a 15 ms phase into its neighbours (tens of %), the fit does
 * not; the scaling keeps every joule of perun's and only moves it between
 * device-side phases.  Occurrences of one phase keep their integrals'
 * proportions.  A failed fit leaves the integrals (se->dev_fit = 0).
 */
static int dev_rescale(const struct energy_model *m, struct dev_plan *dp, struct sample_energy *se)
{
	size_t np = m->ph.nnames, ng = m->ngroups;
	double *fit = calloc(np ? np : 1, sizeof *fit), *f = calloc(np ? np : 1, sizeof *f);
	int rc = fit && f ? 0 : -ENOMEM;
	se->dev_fit = 1;
	for (size_t g = 0; g < ng && !rc; g++) {
		double in = 0, out = 0;
		if (!dp->gdev[g])
			continue;
		memset(fit, 0, np * sizeof *fit);
		if ((rc = dev_fit_group(m, dp, g, fit)) == -ENODATA || rc == -EINVAL) {
			se->dev_fit = 0;
			rc = 0;
			continue;
		}
		for (size_t p = 0; p < np; p++) {
			double i = dp->ph_j[p * ng + g];
			f[p] = i > 0 && fit[p] >= 0 && !phase_set_is_tool(&m->ph, (int)p) ? fit[p] / i : 1;
			in += i;
			out += f[p] * i;
		}
		for (size_t p = 0; p < np; p++) /* a fit of all zeros: the integrals */
			f[p] = out > 0 ? f[p] * in / out : 1;
		for (size_t o = 0; o < m->ph.nocc; o++)
			dp->occ_j[o * ng + g] *= f[m->ph.occ[o].phase];
	}
	free(fit);
	free(f);
	return rc;
}

/* First segment of h ending after ns (binary search). */
static size_t seg_after(const struct phase_thread *h, uint64_t ns)
{
	size_t lo = 0, hi = h->nseg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->seg[mid].t1_ns <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t tl_ns(const struct energy_model *m, double t_s)
{
	return (uint64_t)fmax(0, t_s * 1e9 + (double)m->base_ns);
}

/*
 * Who gets a host occurrence's device-side energy: the samples of H whose
 * own instant (when py-spy read the stack) falls in its self time, one
 * equal share each, and of those only the ones whose stack a SITE record
 * places in the occurrence's phase when there are such (sample_labels.h:
 * they ran that phase's code); an occurrence shorter than the sampling
 * period may hold no instant, then the sample nearest in time whose
 * stack is labelled with its phase, and only when the phase has no
 * labelled sample, the samples whose slices overlap it, by overlap.  A
 * sample whose label contradicts its stamp (in no occurrence of its
 * phase) takes no part: the stamp is wrong.
 * Instants first because a slice can stretch over samples py-spy
 * dropped under load, into a neighbouring phase whose launch carries
 * much GPU energy in a short host time (backward's, optimizer.step's).
 * Labels before times because the neighbours run another phase: on the
 * stand-in (t_gpu_edges_slow) 11 of 40 9-ms optimizer.step occurrences
 * held no instant at 200 Hz on an idle machine, their 20 J went to
 * backward's last sample by overlap (SGD.step -22..-26 % in 3 runs, -54 %
 * under CI's load), and beside stress-ng backward's late-stamped samples
 * took 20 of 73 J inside the step (-28.7 %).
 */
struct dev_dist {
	const struct energy_model *m;
	const struct dev_plan *dp;
	struct sample_energy *se;
	const struct sample_labels *lab;
	double *w;     /* nocc x 5: instants busy, idle; overlaps busy, idle; instants labelled with the phase */
	double *given; /* per group: energy handed to samples */
	uint8_t *done; /* per occ: given to the nearest labelled sample */
	int pass;      /* 0: weigh, 1: give */
};

static void dist_give(struct dev_dist *dd, size_t i, int occ, double share)
{
	size_t ng = dd->m->ngroups;
	for (size_t g = 0; g < ng; g++)
		if (dd->dp->gdev[g]) {
			double e = dd->dp->occ_j[(size_t)occ * ng + g] * share;
			dd->se->e_j[i * ng + g] += e;
			dd->given[g] += e;
		}
}

static void dist_one(struct dev_dist *dd, size_t i, int occ, int overlap, double x)
{
	double *w = &dd->w[(size_t)occ * 5];
	int idle = dd->se->idle[i], inst = w[0] > 0 || w[1] > 0;
	int conf = !overlap && dd->lab->lab[i] >= 0 && dd->lab->lab[i] == dd->m->ph.occ[occ].phase;
	double tot;
	if (!dd->pass) {
		w[2 * overlap + idle] += x;
		w[4] += conf;
		return;
	}
	if (dd->done[occ] || overlap == inst)
		return; /* an instant-weighed occurrence ignores overlaps, and back */
	if (!overlap && w[4] > 0) {
		if (conf)
			dist_give(dd, i, occ, 1 / w[4]);
		return;
	}
	tot = w[2 * overlap] > 0 ? w[2 * overlap] : w[2 * overlap + 1];
	if ((w[2 * overlap] > 0 && idle) || !(tot > 0))
		return;
	dist_give(dd, i, occ, x / tot);
}

/* A launcher sample labelled with a phase, by (phase, instant). */
struct labelled {
	int32_t phase;
	uint64_t x_ns;
	size_t i;
};

static int labelled_cmp(const void *a, const void *b)
{
	const struct labelled *u = a, *v = b;
	if (u->phase != v->phase)
		return u->phase < v->phase ? -1 : 1;
	return (u->x_ns > v->x_ns) - (u->x_ns < v->x_ns);
}

static uint64_t ns_away(uint64_t x, uint64_t t0, uint64_t t1)
{
	return x < t0 ? t0 - x : x > t1 ? x - t1 : 0;
}

/* The nearest labelled sample of phase q to [t0, t1] in v (sorted), or
 * SIZE_MAX. */
static size_t nearest_labelled(const struct labelled *v, size_t nv, int32_t q, uint64_t t0, uint64_t t1)
{
	size_t lo = 0, hi = nv, best = SIZE_MAX;
	while (lo < hi) { /* first of q at or after t0 */
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].phase < q || (v[mid].phase == q && v[mid].x_ns < t0))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nv && v[lo].phase == q)
		best = lo;
	if (lo > 0 && v[lo - 1].phase == q &&
	    (best == SIZE_MAX || ns_away(v[lo - 1].x_ns, t0, t1) <= ns_away(v[best].x_ns, t0, t1)))
		best = lo - 1;
	return best;
}

/* Occurrences of H no instant reached: all of it to the nearest sample
 * labelled with their phase, where there is one. */
static int dist_labelled(struct dev_dist *dd, const struct pyspy_profile *p, const uint8_t *launcher)
{
	const struct energy_model *m = dd->m;
	const struct phase_thread *h = &m->ph.thr[dd->dp->hthr];
	const struct sample_labels *l = dd->lab;
	struct labelled *v;
	size_t nv = 0;
	if (!l->nlabelled)
		return 0;
	if (!(v = malloc(l->nlabelled * sizeof *v)))
		return -ENOMEM;
	for (size_t i = 0; i < dd->se->n; i++)
		if (l->lab[i] >= 0 && launcher[p->samples[i].thread] && dd->se->t1_s[i] > dd->se->t0_s[i] &&
		    !sample_labels_misstamped(l, i))
			v[nv++] = (struct labelled){l->lab[i], l->x_ns[i], i};
	qsort(v, nv, sizeof *v, labelled_cmp);
	for (size_t o = 0; o < m->ph.nocc; o++) {
		const struct phase_occ *oc = &m->ph.occ[o];
		const double *w = &dd->w[o * 5];
		size_t best;
		if (w[0] > 0 || w[1] > 0 || oc->pid != h->pid || oc->tid != h->tid)
			continue;
		if ((best = nearest_labelled(v, nv, oc->phase, oc->t0_ns, oc->t1_ns)) != SIZE_MAX) {
			dist_give(dd, v[best].i, (int)o, 1);
			dd->done[o] = 1;
		}
	}
	free(v);
	return 0;
}

/* Sample i's instant and slice against the self segments of H. */
static void dist_sample(struct dev_dist *dd, const struct align_pyspy *a, const struct pyspy_profile *p, size_t i)
{
	const struct phase_thread *h = &dd->m->ph.thr[dd->dp->hthr];
	uint64_t x = tl_ns(dd->m, align_pyspy_time(a, p->samples[i].thread, p->samples[i].t_rel_s));
	uint64_t t0 = tl_ns(dd->m, dd->se->t0_s[i]), t1 = tl_ns(dd->m, dd->se->t1_s[i]);
	size_t s = seg_after(h, x);
	if (sample_labels_misstamped(dd->lab, i))
		return;
	if (s < h->nseg && h->seg[s].t0_ns <= x && h->seg[s].occ >= 0)
		dist_one(dd, i, h->seg[s].occ, 0, 1);
	for (s = seg_after(h, t0); s < h->nseg && h->seg[s].t0_ns < t1; s++) {
		uint64_t lo = h->seg[s].t0_ns > t0 ? h->seg[s].t0_ns : t0, hi = h->seg[s].t1_ns < t1 ? h->seg[s].t1_ns : t1;
		if (hi > lo && h->seg[s].occ >= 0)
			dist_one(dd, i, h->seg[s].occ, 1, (double)(hi - lo) / 1e9);
	}
}

/* The profile threads that are H, the thread that launched the device
 * work: the one mapped to H's (pid, tid); if none is (py-spy's threads
 * not matched to the ring's), every thread whose samples read H's phases.
 * Not a helper thread of H's process that merely runs while H launches
 * (a data loader, the device runtime's worker): it launched nothing.
 * Returns 0 (the flags set in launcher). */
static int launcher_threads(const struct energy_model *m, const struct align_pyspy *a, const struct pyspy_profile *p,
			    const struct dev_plan *dp, uint8_t *launcher)
{
	const struct phase_thread *h = &m->ph.thr[dp->hthr];
	int exact = 0;
	for (uint32_t t = 0; t < p->nthreads; t++)
		exact |= launcher[t] = a->thr[t].ring_pid == h->pid && a->thr[t].ring_tid == h->tid;
	for (uint32_t t = 0; t < p->nthreads && !exact; t++)
		launcher[t] = thread_of(m, a, t) == dp->hthr;
	return 0;
}

/* Each host-side occurrence's device-side energy over its samples (see
 * struct dev_dist); an occurrence no sample of H reaches leaves its
 * device-side energy unsampled. */
static int dev_distribute(const struct energy_model *m, const struct align_pyspy *a, const struct pyspy_profile *p,
			  const struct pyspy_sites *sites, const struct dev_plan *dp, struct sample_energy *se)
{
	size_t nocc = m->ph.nocc ? m->ph.nocc : 1, ng = m->ngroups;
	const struct phase_thread *h = &m->ph.thr[dp->hthr];
	struct sample_labels lab = {0};
	struct dev_dist dd = {m, dp, se, &lab, calloc(nocc * 5, sizeof(double)), calloc(ng ? ng : 1, sizeof(double)),
			      calloc(nocc, 1), 0};
	int rc = dd.w && dd.given && dd.done ? 0 : -ENOMEM;
	uint8_t *launcher = calloc(p->nthreads ? p->nthreads : 1, 1);
	if (!launcher || launcher_threads(m, a, p, dp, launcher))
		rc = -ENOMEM;
	if (!rc)
		rc = sample_labels_build(m, p, a, sites, h->pid, h->tid, &lab);
	for (dd.pass = 0; dd.pass < 2 && !rc; dd.pass++) {
		for (size_t i = 0; i < se->n; i++)
			if (se->t1_s[i] > se->t0_s[i] && launcher[p->samples[i].thread])
				dist_sample(&dd, a, p, i);
		if (!dd.pass)
			rc = dist_labelled(&dd, p, launcher);
	}
	free(launcher);
	for (size_t g = 0; g < ng && !rc; g++)
		if (dp->gdev[g]) {
			se->attributed_j[g] += dd.given[g];
			se->unsampled_j[g] += se->dev_j[g] - dd.given[g];
		}
	sample_labels_free(&lab);
	free(dd.w);
	free(dd.given);
	free(dd.done);
	return rc;
}

static int se_alloc(struct sample_energy *se, size_t n, size_t ng, size_t nframes)
{
	memset(se, 0, sizeof *se);
	se->n = n;
	se->ngroups = ng;
	se->t0_s = malloc((n ? n : 1) * sizeof *se->t0_s);
	se->t1_s = malloc((n ? n : 1) * sizeof *se->t1_s);
	se->t_s = malloc((n ? n : 1) * sizeof *se->t_s);
	se->idle = calloc(n ? n : 1, 1);
	se->e_j = calloc((n ? n : 1) * (ng ? ng : 1), sizeof *se->e_j);
	se->attributed_j = calloc(ng ? ng : 1, sizeof *se->attributed_j);
	se->unsampled_j = calloc(ng ? ng : 1, sizeof *se->unsampled_j);
	se->span_j = calloc(ng ? ng : 1, sizeof *se->span_j);
	se->dev_j = calloc(ng ? ng : 1, sizeof *se->dev_j);
	se->dev_group = calloc(ng ? ng : 1, 1);
	se->frame_blocking = calloc(nframes ? nframes : 1, 1);
	if (!se->t0_s || !se->t1_s || !se->t_s || !se->idle || !se->e_j || !se->attributed_j || !se->unsampled_j || !se->span_j ||
	    !se->dev_j || !se->dev_group || !se->frame_blocking)
		return -ENOMEM;
	return 0;
}

int sample_energy_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const struct pyspy_sites *sites, const char *string_src, struct sample_energy *se)
{
	size_t n = p->nsamples, nev, nseg = 0;
	struct sweep_ev *ev = NULL;
	struct dev_plan dp = {.dthr = -1};
	int rc;

	if ((rc = se_alloc(se, n, m->ngroups, p->frames.n)) || (rc = classify_frames(p, string_src, se->frame_blocking)) ||
	    (rc = dev_plan_build(m, &dp, se)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t st = p->samples[i].stack;
		align_pyspy_slice(a, p, i, &se->t0_s[i], &se->t1_s[i]);
		se->t_s[i] = align_pyspy_time(a, p->samples[i].thread, p->samples[i].t_rel_s);
		/* the leaf decides; a pseudo-frame leaf means no Python frame */
		se->idle[i] = !st || se->frame_blocking[pyspy_stack_leaf(&p->stacks, st)];
		se->idle_share += se->idle[i];
	}
	se->idle_share = n ? se->idle_share / (double)n : 0;
	for (size_t s = 0; s < m->nsen; s++)
		se->span_j[energy_model_group_of(m, &m->sen[s])] +=
			energy_model_slice_j(&m->sen[s], m->span_t0_s, m->span_t1_s);
	if (dp.dthr >= 0)
		nseg = m->ph.thr[dp.dthr].nseg;
	rc = -ENOMEM;
	if (!(ev = malloc((2 * n + 2 * nseg + 2) * sizeof *ev)))
		goto out;
	nev = sweep_events(m, &dp, se, ev);
	if ((rc = sweep(m, &dp, ev, nev, se)))
		goto out;
	if (dp.dthr >= 0 && !(rc = dev_rescale(m, &dp, se)))
		rc = dev_distribute(m, a, p, sites, &dp, se);
out:
	free(ev);
	dev_plan_free(&dp);
	if (rc)
		sample_energy_free(se);
	return rc;
}

void sample_energy_free(struct sample_energy *se)
{
	free(se->t0_s);
	free(se->t1_s);
	free(se->t_s);
	free(se->idle);
	free(se->e_j);
	free(se->attributed_j);
	free(se->unsampled_j);
	free(se->span_j);
	free(se->dev_j);
	free(se->dev_group);
	free(se->frame_blocking);
	memset(se, 0, sizeof *se);
}

int sample_energy_overlaps(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			   const struct sample_energy *se, char *buf, size_t cap)
{
	double att = 0, t0 = INFINITY, t1 = -INFINITY;
	uint32_t own = energy_model_own_pid(m);
	for (size_t g = 0; g < m->ngroups; g++)
		att += se->attributed_j[g];
	if (att > 0)
		return 1;
	for (size_t i = 0; i < p->nsamples; i++) {
		t0 = fmin(t0, se->t0_s[i]);
		t1 = fmax(t1, se->t1_s[i]);
	}
	if (!own && m->ph.nthr)
		own = m->ph.thr[m->ph.primary].pid;
	if (a->ref_pid && own && a->ref_pid != own && t1 < m->span_t0_s)
		snprintf(buf, cap,
			 "the profile observed pid %u, which ran %.3f .. %.3f s on the ring's timeline and ended before "
			 "perun's first sample (perun measured %.3f .. %.3f s, its own run, pid %u: perun's start-up "
			 "took that long): no joules were measured while the profiled process ran; profile the process "
			 "perun runs (py-spy record -- perun monitor script.py) or run the script long enough to overlap",
			 a->ref_pid, t0, t1, m->span_t0_s, m->span_t1_s, own);
	else
		snprintf(buf, cap,
			 "no sample overlaps perun's span after alignment (%s): the profile spans %.3f .. %.3f s, perun "
			 "%.3f .. %.3f s on the ring's timeline: nothing to attribute (files from different runs?)",
			 a->method, t0, t1, m->span_t0_s, m->span_t1_s);
	return 0;
}

long sample_energy_thread(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread)
{
	return thread_of(m, a, thread);
}

int sample_energy_phase_at(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread, double t_s)
{
	long th = thread_of(m, a, thread);
	double ns = t_s * 1e9 + (double)m->base_ns;
	if (ns < 0 || th < 0)
		return -1;
	return phase_set_phase_at(&m->ph.thr[th], (uint64_t)ns);
}

const char *sample_energy_perun_script(const struct ringload *rl, char *buf, size_t cap)
{
	/* From the PROC_START records themselves: ring_procs keeps only the
	 * first 512 bytes of argv, and perun's options come before the script. */
	for (size_t i = 0; i < rl->rf.nev; i++) {
		const struct ring_event *e = &rl->rf.ev[i];
		if (e->kind != ANCHOR_KIND_PROC_START)
			continue;
		const char *a = ring_event_field(e, "argv"), *mon;
		if (!a || !(mon = strstr(a, " monitor ")) || !strstr(a, "perun"))
			continue;
		/* argv is space-joined: the first token ending in .py after it */
		const char *t = mon + 9;
		while (*t) {
			const char *end = strchr(t, ' ');
			size_t len = end ? (size_t)(end - t) : strlen(t);
			if (len > 3 && !memcmp(t + len - 3, ".py", 3) && len < cap) {
				memcpy(buf, t, len);
				buf[len] = '\0';
				if (input_file_check(buf, 0, NULL) == 0)
					return buf;
				break;
			}
			if (!end)
				break;
			t = end + 1;
		}
	}
	return NULL;
}

/* Is `name` defined in the script (a "def name(" line), or its module body? */
static int script_defines(const char *script, const char *name, int32_t line)
{
	char buf[4096], pat[300];
	int n = 0, found = !strcmp(name, "<module>");
	FILE *fp = fopen(script, "r");
	if (!fp)
		return 0;
	snprintf(pat, sizeof pat, "def %s(", name);
	while (fgets(buf, sizeof buf, fp)) {
		if (strchr(buf, '\n'))
			n++;
		if (!found && strstr(buf, pat))
			found = 1;
	}
	fclose(fp);
	/* the frame's line must exist in the script */
	return found && line <= n + 1;
}

size_t sample_energy_name_script(const struct ringload *rl, struct pyspy_profile *p, char *buf, size_t cap)
{
	const char *script = sample_energy_perun_script(rl, buf, cap);
	size_t renamed = 0;
	if (!script)
		return 0;
	for (uint32_t f = 0; f < p->frames.n; f++) {
		struct pyspy_frame *fr = &p->frames.v[f];
		if (fr->file && !strcmp(fr->file, "<string>") && script_defines(script, fr->name, fr->line)) {
			fr->file = script;
			renamed++;
		}
	}
	return renamed;
}
