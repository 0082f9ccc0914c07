/* trace_json.c - Chrome / Perfetto trace writer (see trace_json.h). */
#include "output/trace_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/group_power.h"
#include "model/lookup.h"
#include "model/timebase.h"
#include "output/outfile.h"

/* Pseudo-process of the power counters when no phase ran; real pids stay
 * below 2^22. */
#define POWER_PID 1073741824u
/* py-spy tracks: tid | STACK_TID_BIT beside the thread they sample. */
#define STACK_TID_BIT (1u << 30)
#define STACK_TID_UNMAPPED (1u << 23)

struct w {
	FILE *fp;
	const char *path;
	int first;
	double origin_s; /* timeline seconds at ts 0 */
	struct trace_stats *st;
	uint32_t *shown; /* sorted pids that carry something: the others get no track */
	size_t nshown;
	int oom;         /* sticky: an allocation failed, the file is abandoned */
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int shown(const struct w *w, uint32_t pid)
{
	return bsearch(&pid, w->shown, w->nshown, sizeof pid, cmp_u32) != NULL;
}

/* Strict JSON has no nan/inf: a number that is not finite is null. */
static void put_val(struct w *w, const char *fmt, double v)
{
	if (isfinite(v))
		fprintf(w->fp, fmt, v);
	else
		fputs("null", w->fp);
}

static void put_num(struct w *w, const char *key, const char *fmt, double v)
{
	fprintf(w->fp, ",\"%s\":", key);
	put_val(w, fmt, v);
}

/* Strings go through cJSON: its escaping is the JSON spec's, not ours. */
static char *json_string(const char *s)
{
	cJSON *j = cJSON_CreateString(s ? s : "");
	char *out = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	return out;
}

static void put_str(struct w *w, const char *s)
{
	char *e = json_string(s);
	if (!e) {
		w->oom = 1;
		return;
	}
	fputs(e, w->fp);
	cJSON_free(e);
}

static void open_ev(struct w *w, const char *ph, uint32_t pid, uint32_t tid)
{
	fprintf(w->fp, "%s\n{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, w->first ? "" : ",", ph, pid, tid);
	w->first = 0;
}

static void put_ts(struct w *w, const char *key, double t_s)
{
	put_num(w, key, "%.3f", (t_s - w->origin_s) * 1e6);
}

static void meta(struct w *w, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	open_ev(w, "M", pid, tid);
	fprintf(w->fp, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	put_str(w, name);
	fputs("}}", w->fp);
}

static void sort_index(struct w *w, const char *what, uint32_t pid, uint32_t tid, long idx)
{
	open_ev(w, "M", pid, tid);
	fprintf(w->fp, ",\"name\":\"%s\",\"args\":{\"sort_index\":%ld}}", what, idx);
}

/* ---- anchors ---- */

enum aev_type { AEV_SLICE, AEV_ASYNC, AEV_MARK, AEV_EXIT };

struct aev {
	uint32_t pid, tid;
	uint64_t ts_ns;
	size_t seq;    /* input order: outer slices before the inner ones */
	size_t idx;    /* occurrence or ring event */
	int type;
};

static int cmp_aev(const void *a, const void *b)
{
	const struct aev *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static double mark_value(const struct ring_event *e, int *has)
{
	*has = !!(e->flags & ANCHOR_FLAG_VALUE);
	if (e->flags & ANCHOR_FLAG_F64) {
		double d;
		memcpy(&d, &e->value, sizeof d);
		return d;
	}
	return (double)(int64_t)e->value;
}

/* The anchor events in v (room for nocc + nev), sorted per track; returns
 * how many.  Occurrences come sorted by (pid, tid, t0), outer first: a
 * slice must end before (or with) every slice open around it, else the
 * viewers mis-nest it, so those become async.  open_end: scratch, nocc. */
static size_t collect_anchor_events(const struct w *w, const struct energy_model *m, struct aev *v,
				    uint64_t *open_end)
{
	const struct phase_set *ph = &m->ph;
	const struct ring_file *rf = &m->rl.rf;
	size_t n = 0, nopen = 0;
	uint32_t cur_pid = 0, cur_tid = 0;

	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		int type = AEV_SLICE;
		if (i == 0 || o->pid != cur_pid || o->tid != cur_tid)
			nopen = 0, cur_pid = o->pid, cur_tid = o->tid;
		while (nopen && open_end[nopen - 1] <= o->t0_ns)
			nopen--;
		if (nopen && o->t1_ns > open_end[nopen - 1])
			type = AEV_ASYNC;
		else
			open_end[nopen++] = o->t1_ns;
		v[n] = (struct aev){o->pid, o->tid, o->t0_ns, n, i, type};
		n++;
	}
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		if (e->kind == ANCHOR_KIND_MARK) {
			v[n] = (struct aev){e->pid, e->tid, e->ts_ns, n, i, AEV_MARK};
			n++;
		} else if (e->kind == ANCHOR_KIND_PROC_EXIT && shown(w, e->pid)) {
			v[n] = (struct aev){e->pid, e->pid, e->ts_ns, n, i, AEV_EXIT};
			n++;
		}
	}
	qsort(v, n, sizeof *v, cmp_aev);
	return n;
}

/* A phase occurrence: an "X" slice, or "b"/"e" on its own async track. */
static void write_occ(struct w *w, const struct energy_model *m, const struct aev *a)
{
	const struct phase_set *ph = &m->ph;
	const struct phase_occ *o = &ph->occ[a->idx];
	const char *name = ph->names[o->phase];
	double t0 = energy_model_tl(m, o->t0_ns), t1 = energy_model_tl(m, o->t1_ns);

	if (a->type == AEV_SLICE) {
		open_ev(w, "X", a->pid, a->tid);
		/* Device-side phases: their own category and track. */
		fputs(o->tid == PHASE_DEVICE_TID ? ",\"cat\":\"anchor.device\",\"name\":"
						 : ",\"cat\":\"anchor\",\"name\":", w->fp);
		put_str(w, name);
		put_ts(w, "ts", t0);
		put_num(w, "dur", "%.3f", (t1 - t0) * 1e6);
		fprintf(w->fp, ",\"args\":{\"depth\":%d%s}}", o->depth,
			o->unclosed ? ",\"unclosed\":true" : o->from_mark ? ",\"from_mark\":true" : "");
	} else {
		/* Async: "b" then "e" on the same (cat, id) track. */
		for (int end = 0; end < 2; end++) {
			open_ev(w, end ? "e" : "b", a->pid, a->tid);
			fprintf(w->fp, ",\"cat\":\"anchor\",\"id\":\"occ%zu\",\"name\":", a->idx);
			put_str(w, name);
			put_ts(w, "ts", end ? t1 : t0);
			fputs("}", w->fp);
		}
	}
	w->st->slices++;
}

/* A mark (thread instant, its value if finite) or a process exit. */
static void write_instant(struct w *w, const struct energy_model *m, const struct aev *a)
{
	const struct ring_event *e = &m->rl.rf.ev[a->idx];

	open_ev(w, "i", a->pid, a->tid);
	if (a->type == AEV_MARK) {
		int has;
		double val = mark_value(e, &has);
		fputs(",\"s\":\"t\",\"cat\":\"mark\",\"name\":", w->fp);
		put_str(w, e->text);
		put_ts(w, "ts", energy_model_tl(m, e->ts_ns));
		if (has && isfinite(val))
			fprintf(w->fp, ",\"args\":{\"value\":%.17g}", val);
		fputs("}", w->fp);
	} else {
		fputs(",\"s\":\"p\",\"cat\":\"process\",\"name\":\"exit\"", w->fp);
		put_ts(w, "ts", energy_model_tl(m, e->ts_ns));
		fprintf(w->fp, ",\"args\":{\"%s\":%" PRIu64 "}}",
			e->flags & ANCHOR_FLAG_SIGNAL ? "signal" : "status", e->value);
	}
	w->st->instants++;
}

static void write_anchors(struct w *w, const struct energy_model *m)
{
	struct aev *v = malloc((m->ph.nocc + m->rl.rf.nev + 1) * sizeof *v);
	uint64_t *open_end = malloc((m->ph.nocc + 1) * sizeof *open_end);
	size_t n;

	if (!v || !open_end) {
		free(v);
		free(open_end);
		w->oom = 1;
		return;
	}
	n = collect_anchor_events(w, m, v, open_end);
	for (size_t i = 0; i < n; i++) {
		if (v[i].type == AEV_SLICE || v[i].type == AEV_ASYNC)
			write_occ(w, m, &v[i]);
		else
			write_instant(w, m, &v[i]);
	}
	free(v);
	free(open_end);
}

static void write_names(struct w *w, const struct energy_model *m)
{
	const struct ring_file *rf = &m->rl.rf;
	char buf[640];
	for (size_t i = 0; i < m->rl.procs.n; i++) {
		const struct ring_proc *p = &m->rl.procs.p[i];
		int later = 0;
		/* A pid reused (fork then exec): name it after its last image. */
		for (size_t k = i + 1; k < m->rl.procs.n; k++)
			later |= m->rl.procs.p[k].pid == p->pid;
		if (later || !shown(w, p->pid))
			continue;
		snprintf(buf, sizeof buf, "%.500s", p->argv[0] ? p->argv : p->exe);
		meta(w, "process_name", p->pid, 0, buf);
	}
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		if (e->kind != ANCHOR_KIND_THREAD || !shown(w, e->pid))
			continue;
		snprintf(buf, sizeof buf, "%.200s (tid %" PRIu32 ")", e->text && e->text[0] ? e->text : "thread", e->tid);
		meta(w, "thread_name", e->pid, e->tid, buf);
		sort_index(w, "thread_sort_index", e->pid, e->tid, 2 * (long)e->tid);
	}
	/* Device-side timelines (phase_set.h): named, sorted after the host's. */
	for (size_t i = 0; i < m->ph.nthr; i++) {
		if (m->ph.thr[i].tid != PHASE_DEVICE_TID)
			continue;
		snprintf(buf, sizeof buf, "device-side phases (GPU stream, calibrated: drift %.1f ppm, bracket <= %.1f us)",
			 m->ph.dev_drift_ppm, m->ph.dev_max_bracket_us);
		meta(w, "thread_name", m->ph.thr[i].pid, PHASE_DEVICE_TID, buf);
		sort_index(w, "thread_sort_index", m->ph.thr[i].pid, PHASE_DEVICE_TID, 1L << 40);
	}
	/* The primary thread's process first: that is where the joules go. */
	if (m->ph.nthr)
		sort_index(w, "process_sort_index", m->ph.thr[m->ph.primary].pid, 0, -1);
}

/* ---- power ---- */

static void write_power(struct w *w, const struct energy_model *m)
{
	char buf[256];
	uint32_t pid = POWER_PID;
	if (!m->ngroups)
		return;
	/* The Perfetto UI orders processes by their slices, whatever the
	 * sort_index says: a counter-only process always ends up last.  So
	 * the counters go on the primary thread's process, the one listed
	 * first, and a pseudo-process holds them only when no phase ran. */
	if (m->ph.nthr) {
		pid = m->ph.thr[m->ph.primary].pid;
	} else {
		snprintf(buf, sizeof buf, "perun %s: power per device group%s%s", m->host->name,
			 m->emulated ? " - " : "", energy_model_sensor_note(m));
		meta(w, "process_name", pid, 0, buf);
		sort_index(w, "process_sort_index", pid, 0, -2);
	}
	for (size_t g = 0; g < m->ngroups; g++) {
		struct group_power gp;
		char *name;
		/* Perfetto names a counter track "<name> <arg key>": "cpu power (W)". */
		name = json_string(m->groups[g]);
		if (!name) {
			w->oom = 1;
			return;
		}
		if (group_power_build(m, g, &gp)) {
			cJSON_free(name);
			w->oom = 1;
			return;
		}
		/* A counter holds its value until the next event: each window's
		 * mean at the window's start, and 0 after the last window. */
		for (size_t i = 1; i <= gp.n && gp.n > 1; i++) {
			open_ev(w, "C", pid, 0);
			fprintf(w->fp, ",\"name\":%s", name);
			put_ts(w, "ts", gp.t_s[i - 1]);
			fputs(",\"args\":{\"power (W)\":", w->fp);
			put_val(w, "%.6g", i < gp.n ? gp.power_w[i] : 0.0);
			fputs("}}", w->fp);
			w->st->counters++;
		}
		/* and the energy so far, a second track ("cpu energy (J)"): at
		 * each window's end, the sum of the windows up to it */
		double cum = 0;
		for (size_t i = 1; i < gp.n; i++) {
			if (isfinite(gp.power_w[i]))
				cum += gp.power_w[i] * (gp.t_s[i] - gp.t_s[i - 1]);
			open_ev(w, "C", pid, 0);
			fprintf(w->fp, ",\"name\":%s", name);
			put_ts(w, "ts", gp.t_s[i]);
			fputs(",\"args\":{\"energy (J)\":", w->fp);
			put_val(w, "%.6g", cum);
			fputs("}}", w->fp);
			w->st->counters++;
		}
		cJSON_free(name);
		group_power_free(&gp);
	}
}

/* ---- py-spy stacks ---- */

struct sidx {
	uint32_t thread;
	double t, t_end; /* the sample's aligned slice on the timeline */
	size_t i;
};

static int cmp_sidx(const void *a, const void *b)
{
	const struct sidx *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* OS tid of a py-spy thread: speedscope names it; chrometrace has the
 * pthread id, which the ring's THREAD record of that thread holds. */
static long os_tid(const struct energy_model *m, const struct pyspy_thread *t, uint32_t pid)
{
	if (t->pthread_id) {
		for (size_t i = 0; i < m->rl.rf.nev; i++) {
			const struct ring_event *e = &m->rl.rf.ev[i];
			if (e->kind == ANCHOR_KIND_THREAD && e->pid == pid && e->value == t->pthread_id)
				return e->tid;
		}
		return -1;
	}
	if (t->tid[0] && t->tid[0] != '0') {
		char *end;
		long v = strtol(t->tid, &end, 10);
		return *end ? -1 : v;
	}
	return -1;
}

/* The process a py-spy thread's track goes on, and whether it is drawn. */
static uint32_t stack_pid(const struct trace_pyspy *ps, uint32_t t, uint32_t default_pid)
{
	const struct pyspy_thread *th = &ps->p->threads[t];
	const struct align_pyspy_thread *at = t < ps->al->nthr ? &ps->al->thr[t] : NULL;
	return at && at->ring_pid ? at->ring_pid : th->pid >= 0 ? (uint32_t)th->pid : default_pid;
}

static int stack_kept(const struct energy_model *m, const struct trace_pyspy *ps, uint32_t pid)
{
	return ps->all_processes || phase_set_primary_of(&m->ph, pid) >= 0;
}

struct stack_track {
	uint32_t pid, tid;
	int keep;
};

/* A slice is a function (name + file) while it stays on the stack: a
 * sample that only moved to another line of the same functions changes
 * nothing, which keeps the trace several times smaller than py-spy's own
 * per-line chrometrace.  canon[f] numbers frames by (name, file). */
static const struct pyspy_frames *sort_frames;

static int cmp_frame(const void *a, const void *b)
{
	const struct pyspy_frame *x = &sort_frames->v[*(const uint32_t *)a], *y = &sort_frames->v[*(const uint32_t *)b];
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return strcmp(x->file ? x->file : "", y->file ? y->file : "");
}

static uint32_t *canonical_frames(const struct pyspy_frames *fr)
{
	uint32_t *order = malloc((fr->n ? fr->n : 1) * sizeof *order);
	uint32_t *canon = malloc((fr->n ? fr->n : 1) * sizeof *canon);
	if (!order || !canon) {
		free(order);
		free(canon);
		return NULL;
	}
	for (uint32_t i = 0; i < fr->n; i++)
		order[i] = i;
	sort_frames = fr;
	qsort(order, fr->n, sizeof *order, cmp_frame);
	for (uint32_t i = 0; i < fr->n; i++)
		canon[order[i]] = i && !cmp_frame(&order[i - 1], &order[i]) ? canon[order[i - 1]] : order[i];
	free(order);
	return canon;
}

/* E events carry the name of the slice they close: speedscope's Chrome
 * importer (and strict readers) match B and E by name. */
static void frame_close(struct w *w, const struct stack_track *tr, double t, const char *name_json, double energy_j)
{
	open_ev(w, "E", tr->pid, tr->tid);
	fprintf(w->fp, ",\"cat\":\"py-spy\",\"name\":%s", name_json);
	put_ts(w, "ts", t);
	if (!isnan(energy_j)) {
		fputs(",\"args\":{\"energy_j\":", w->fp);
		put_val(w, "%.9g", energy_j);
		fputs("}", w->fp);
	}
	fputs("}", w->fp);
	w->st->stack_events++;
}

static void frame_open(struct w *w, const struct stack_track *tr, double t, const struct pyspy_frame *fr,
		       char **fname, uint32_t f)
{
	if (!fname[f])
		fname[f] = json_string(fr->name);
	if (!fname[f]) {
		w->oom = 1;
		return;
	}
	open_ev(w, "B", tr->pid, tr->tid);
	fprintf(w->fp, ",\"cat\":\"py-spy\",\"name\":%s", fname[f]);
	put_ts(w, "ts", t);
	if (fr->file) {
		fputs(",\"args\":{\"file\":", w->fp);
		put_str(w, fr->file);
		fputs("}", w->fp);
	}
	fputs("}", w->fp);
	w->st->stack_events++;
}

/* Per py-spy thread: its track (pid, tid in the ring where known), whether
 * it is shown, and its name and sort metadata. */
static void stack_tracks(struct w *w, const struct energy_model *m, const struct trace_pyspy *ps,
			 uint32_t default_pid, struct stack_track *tr)
{
	const struct pyspy_profile *p = ps->p;
	char buf[320];

	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct pyspy_thread *th = &p->threads[t];
		const struct align_pyspy_thread *at = t < ps->al->nthr ? &ps->al->thr[t] : NULL;
		uint32_t pid = stack_pid(ps, t, default_pid);
		long tid = at && at->ring_tid ? (long)at->ring_tid : os_tid(m, th, pid);
		tr[t].pid = pid;
		tr[t].tid = STACK_TID_BIT | (tid >= 0 ? (uint32_t)tid : STACK_TID_UNMAPPED | t);
		tr[t].keep = stack_kept(m, ps, pid);
		if (!tr[t].keep)
			continue;
		const char *who = p->meta.torch ? "torch.profiler" : "py-spy";
		if (tid >= 0)
			snprintf(buf, sizeof buf, "%s %s%s(tid %ld)", who, th->thread_name, th->thread_name[0] ? " " : "", tid);
		else
			snprintf(buf, sizeof buf, "%s %s%s(%s thread %s)", who, th->thread_name,
				 th->thread_name[0] ? " " : "", who, th->tid[0] ? th->tid : "?");
		meta(w, "thread_name", pid, tr[t].tid, buf);
		sort_index(w, "thread_sort_index", pid, tr[t].tid, tid >= 0 ? 2 * tid + 1 : (long)tr[t].tid);
		if (!lookup_proc(&m->rl.procs, pid)) {
			snprintf(buf, sizeof buf, "pid %" PRIu32 " (py-spy only)", pid);
			meta(w, "process_name", pid, 0, buf);
		}
	}
}

/* Scratch of the stack diff: frame ids of the current and previous
 * sample's stacks (maxdepth each), canonical frame per id, JSON names. */
struct stack_diff {
	uint32_t *cur, *prev, *canon, maxdepth;
	char **fname;
	const double *row_j; /* NULL: no energy args */
	double *acc;         /* maxdepth: joules of each open slice so far */
};

static double acc_take(const struct stack_diff *d, uint32_t depth)
{
	if (!d->row_j)
		return NAN;
	double v = d->acc[depth];
	d->acc[depth] = 0;
	return v;
}

/* Samples s[k..] of one thread: diff consecutive stacks as py-spy does,
 * by function: functions that left get "E" (leaf first), new ones "B"
 * (root first); a gap (no sample: idle dropped, thread gone) closes all.
 * Returns the index past the thread's samples. */
static size_t diff_thread_stacks(struct w *w, const struct pyspy_profile *p, const struct stack_track *t,
				 const struct sidx *s, size_t k, size_t ns, const struct stack_diff *d)
{
	uint32_t th = s[k].thread, nprev = 0;
	double prev_end = 0;

	for (; k < ns && s[k].thread == th; k++) {
		const struct pyspy_sample *sm = &p->samples[s[k].i];
		double t0 = s[k].t, t_end = s[k].t_end;
		uint32_t ncur = lookup_stack_frames(p, sm->stack, d->cur, d->maxdepth), same = 0;
		if (nprev && t0 > prev_end + 1e-6) {
			while (nprev) {
				frame_close(w, t, prev_end, d->fname[d->prev[nprev - 1]], acc_take(d, nprev - 1));
				nprev--;
			}
		}
		while (same < nprev && same < ncur && d->canon[d->prev[same]] == d->canon[d->cur[same]])
			same++;
		for (; nprev > same; nprev--)
			frame_close(w, t, t0, d->fname[d->prev[nprev - 1]], acc_take(d, nprev - 1));
		for (uint32_t j = same; j < ncur; j++) {
			frame_open(w, t, t0, &p->frames.v[d->cur[j]], d->fname, d->cur[j]);
			d->prev[j] = d->cur[j];
		}
		for (uint32_t j = 0; d->row_j && j < ncur && j < d->maxdepth; j++)
			d->acc[j] += isfinite(d->row_j[s[k].i]) ? d->row_j[s[k].i] : 0;
		nprev = ncur;
		prev_end = t_end > t0 ? t_end : t0;
	}
	for (; nprev; nprev--)
		frame_close(w, t, prev_end, d->fname[d->prev[nprev - 1]], acc_take(d, nprev - 1));
	return k;
}

static void write_stacks(struct w *w, const struct energy_model *m, const struct trace_pyspy *ps, uint32_t default_pid)
{
	const struct pyspy_profile *p = ps->p;
	struct stack_track *tr = calloc(p->nthreads ? p->nthreads : 1, sizeof *tr);
	struct sidx *s = malloc((p->nsamples ? p->nsamples : 1) * sizeof *s);
	struct stack_diff d = {.maxdepth = 1};
	size_t ns = 0;

	d.fname = calloc(p->frames.n ? p->frames.n : 1, sizeof *d.fname);
	d.canon = canonical_frames(&p->frames);
	for (uint32_t i = 0; i < p->stacks.n; i++)
		if (p->stacks.v[i].depth > d.maxdepth)
			d.maxdepth = p->stacks.v[i].depth;
	d.cur = malloc(d.maxdepth * sizeof *d.cur);
	d.prev = malloc(d.maxdepth * sizeof *d.prev);
	d.row_j = ps->row_j;
	d.acc = calloc(d.maxdepth, sizeof *d.acc);
	if (!tr || !d.fname || !s || !d.canon || !d.cur || !d.prev || !d.acc) {
		w->oom = 1;
		goto out;
	}
	stack_tracks(w, m, ps, default_pid, tr);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *sm = &p->samples[i];
		if (!tr[sm->thread].keep || !isfinite(sm->t_rel_s))
			continue;
		s[ns++] = (struct sidx){sm->thread, ps->t0_s[i], ps->t1_s[i], i};
	}
	qsort(s, ns, sizeof *s, cmp_sidx);
	for (size_t k = 0; k < ns;)
		k = diff_thread_stacks(w, p, &tr[s[k].thread], s, k, ns, &d);
	for (uint32_t f = 0; f < p->frames.n; f++)
		cJSON_free(d.fname[f]);
out:
	free(d.fname);
	free(tr);
	free(s);
	free(d.cur);
	free(d.prev);
	free(d.acc);
	free(d.canon);
}

/* What ts 0 is, so that the trace can be merged with another of the same
 * run (torch.profiler, Nsight): its CLOCK_MONOTONIC reading and, through
 * the ring's SYNC records, its UTC time (null without SYNC records). */
static void write_epoch(struct w *w, const struct energy_model *m)
{
	int64_t mono_ns = (int64_t)m->base_ns + (int64_t)llround(w->origin_s * 1e9);
	int64_t unix_ns = mono_ns > 0 ? timebase_unix_ns(&m->rl.clock, (uint64_t)mono_ns) : 0;
	char iso[64];
	fputs(",\"clock_domain\":\"CLOCK_MONOTONIC\"", w->fp);
	fprintf(w->fp, ",\"ts0_monotonic_ns\":%" PRId64, mono_ns);
	if (unix_ns) {
		timebase_iso(unix_ns, iso, sizeof iso);
		fprintf(w->fp, ",\"ts0_unix_ns\":%" PRId64 ",\"ts0_unix_s\":%.6f,\"ts0_utc\":\"%s\"", unix_ns,
			(double)unix_ns / 1e9, iso);
	} else {
		fputs(",\"ts0_unix_ns\":null,\"ts0_unix_s\":null,\"ts0_utc\":null", w->fp);
	}
}

static void write_other(struct w *w, const struct energy_model *m, const struct trace_pyspy *ps, const char *title)
{
	fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"run\":", w->fp);
	put_str(w, title);
	fputs(",\"ring\":", w->fp);
	put_str(w, m->rl.rf.path);
	fputs(",\"sensor_note\":", w->fp);
	put_str(w, m->times_only ? "no perun file: no power" : m->emulated ? energy_model_sensor_note(m) : "measured by perun");
	fprintf(w->fp, ",\"ts_zero\":\"the ring's first record %+.6f s (CLOCK_MONOTONIC)\"", w->origin_s);
	write_epoch(w, m);
	fputs(",\"perun_alignment\":", w->fp);
	put_str(w, m->align.method);
	put_num(w, "perun_align_uncert_ms", "%.6g", m->align.uncert_ms);
	if (ps && ps->p) {
		fputs(",\"pyspy_alignment\":", w->fp);
		put_str(w, ps->align_text);
		put_num(w, "pyspy_align_uncert_ms", "%.6g", ps->al->uncert_ms);
	}
	fputs("}}\n", w->fp);
}

/* Processes that carry a phase, a mark or a drawn py-spy track: the
 * others (cpuinfo, lscpu, orted, ... started under LD_PRELOAD) would only
 * be empty tracks above the ones that matter. */
static void collect_shown(struct w *w, const struct energy_model *m, const struct trace_pyspy *ps,
			  uint32_t default_pid)
{
	size_t cap = m->ph.nocc + m->rl.rf.nev + (ps && ps->p ? ps->p->nthreads : 0) + 1, n = 0;
	uint32_t *v = malloc(cap * sizeof *v);
	if (!v) {
		w->oom = 1;
		return;
	}
	for (size_t i = 0; i < m->ph.nocc; i++)
		v[n++] = m->ph.occ[i].pid;
	for (size_t i = 0; i < m->rl.rf.nev; i++)
		if (m->rl.rf.ev[i].kind == ANCHOR_KIND_MARK)
			v[n++] = m->rl.rf.ev[i].pid;
	if (ps && ps->p)
		for (uint32_t t = 0; t < ps->p->nthreads; t++) {
			uint32_t pid = stack_pid(ps, t, default_pid);
			if (stack_kept(m, ps, pid))
				v[n++] = pid;
		}
	qsort(v, n, sizeof *v, cmp_u32);
	w->nshown = 0;
	for (size_t i = 0; i < n; i++)
		if (!w->nshown || v[i] != v[w->nshown - 1])
			v[w->nshown++] = v[i];
	w->shown = v;
}

int trace_json_write(const struct energy_model *m, const struct trace_pyspy *ps, const char *title,
		     const char *path, struct trace_stats *st, struct em_error *e)
{
	struct outfile of;
	int rc;
	struct w w = {.path = path, .first = 1, .st = st};
	uint32_t default_pid = m->rl.procs.n ? m->rl.procs.p[0].pid : 0;

	memset(st, 0, sizeof *st);
	/* ts 0: the earliest of the ring, perun and the profile, so that no
	 * timestamp is negative. */
	w.origin_s = fmin(0, m->span_t0_s);
	if (ps && ps->p)
		for (size_t i = 0; i < ps->p->nsamples; i++) {
			if (!isfinite(ps->p->samples[i].t_rel_s))
				continue;
			w.origin_s = fmin(w.origin_s, ps->t0_s[i]);
		}
	collect_shown(&w, m, ps, default_pid);
	if ((rc = outfile_create(&of, path, e)) != 0) {
		free(w.shown);
		return rc;
	}
	w.fp = of.fp;
	fputs("{\"traceEvents\":[", w.fp);
	/* Power first: viewers that keep file order list it on top. */
	write_power(&w, m);
	write_names(&w, m);
	write_anchors(&w, m);
	if (ps && ps->p)
		write_stacks(&w, m, ps, default_pid);
	write_other(&w, m, ps, title);
	free(w.shown);
	if (w.oom || ferror(w.fp)) {
		outfile_abort(&of);
		return diag_error(e, w.oom ? -ENOMEM : -EIO, path, "%s", w.oom ? "out of memory" : "write error");
	}
	return outfile_finish(&of, path, e);
}
