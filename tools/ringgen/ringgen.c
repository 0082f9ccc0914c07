/*
 * ringgen.c - write a synthetic rank's ring file, byte by byte per
 * anchors/ring_format.h, with a known truth: for tests of multi-ring
 * merging (hosts whose clocks disagree) and for the scale benchmark.
 *
 *   ringgen OUT.ring --rank R --nranks N --steps S [--host H]
 *           [--t0-unix-ns T] [--mono-base-ns M] [--rt-error-ns E]
 *           [--slow-rank R --slow-ms MS] [--seed K] [--pid P]
 *           [--no-exit] [--truth FILE.csv]
 *           [--power-out FILE.csv --period-s P] [--perun-monitor]
 *
 * The simulated job: N ranks in lock step.  Step k starts on every rank at
 * the same true time S_k; each rank runs data, forward, backward (jittered
 * by a hash of (seed, step, rank), --slow-rank gets --slow-ms more forward),
 * then MPI_Allreduce until the last rank arrives (+0.3 ms), then
 * optimizer.step (1 ms); train_step spans it all.  12 records per step.
 *
 * Clocks: true time is unix ns from T.  This host's CLOCK_MONOTONIC reads
 * true - T + M (a different M per host: unrelated monotonic origins), and
 * its CLOCK_REALTIME reads true + E (E: the host's realtime error).  SYNC
 * records (every simulated second) pair the two as libanchor would, so a
 * reader that maps each ring through its own SYNCs recovers true + E.
 *
 * --truth writes every rank's steps (not just this one's) as CSV:
 *   step,rank,t0_unix_ns,t1_unix_ns,wait_ns,slowest
 * --no-exit leaves out PROC_EXIT (a rank that was killed).
 * --power-out writes what an emulated RAPL sensor of this rank's host would
 * count, sampled every P s (default 0.1) from 0.5 s before the first step
 * to 0.5 s after the last, with a fixed power per phase (phase_power below):
 *   # first_sample_unix_ns=N
 *   t_rel_s,pkg_j,dram_j          cumulative joules since the first sample
 * and, appended to --truth's directory as FILE.energy.csv, the exact joules
 * per phase put into those counters.
 * --perun-monitor: the rank runs as `perun monitor train.py` whose sampler
 * (a forked child, pid P + 100000) lives from 98 ms before the first
 * power sample to 20 ms after the last; the steps start 600 ms after the
 * process (what the ring's hard bounds on perun's offset are made of).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchor_version.h"
#include "ring_format.h"

struct gen {
	uint8_t *buf;   /* header + slots */
	uint64_t nslots, ticket;
	uint32_t pid;
	int64_t t0_unix_ns, mono_base_ns, rt_error_ns;
	uint64_t next_sync_ns;
};

struct opts {
	const char *out, *host, *truth, *power_out;
	double period_s;
	int rank, nranks, steps, slow_rank, no_exit, perun_monitor;
	double slow_ms;
	uint64_t seed;
	uint32_t pid;
	int64_t t0_unix_ns, mono_base_ns, rt_error_ns;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Uniform [0, 1) from (seed, step, rank, what). */
static double unif(uint64_t seed, uint64_t step, uint64_t rank, uint64_t what)
{
	uint64_t h = mix(seed ^ mix(step * 0x9e3779b97f4a7c15ull ^ mix(rank * 31 + what)));
	return (double)(h >> 11) / 9007199254740992.0;
}

/* Watts (package, dram) per phase; idle outside steps. */
static const struct {
	const char *name;
	double pkg_w, dram_w;
} phase_power[] = {
	{"data", 20, 2}, {"forward", 45, 4}, {"backward", 50, 5}, {"MPI_Allreduce", 12, 1.5},
	{"optimizer.step", 30, 6}, {NULL, 8, 1}, /* idle */
};
#define NPOW (sizeof phase_power / sizeof phase_power[0])

struct power {
	int64_t first_ns;   /* unix ns of sample 0 */
	double period_s;
	size_t n;           /* samples */
	double *pkg, *dram; /* energy inside window (i-1, i] */
	double phase_j[NPOW][2];
};

/* Add [a, b) (true unix ns) at phase k's power into the windows. */
static void power_add(struct power *p, int64_t a, int64_t b, size_t k)
{
	double ta = (double)(a - p->first_ns) / 1e9, tb = (double)(b - p->first_ns) / 1e9;
	if (!p->n || tb <= ta)
		return;
	p->phase_j[k][0] += phase_power[k].pkg_w * (tb - ta);
	p->phase_j[k][1] += phase_power[k].dram_w * (tb - ta);
	while (ta < tb) {
		size_t w = (size_t)floor(ta / p->period_s) + 1; /* window (w-1, w] */
		double end = (double)w * p->period_s;
		/* ta / period can round down just below w - 1 when ta sits on a
		 * boundary: step to the next window instead of looping. */
		if (end <= ta)
			end = (double)++w * p->period_s;
		if (end > tb)
			end = tb;
		if (w < p->n) {
			p->pkg[w] += phase_power[k].pkg_w * (end - ta);
			p->dram[w] += phase_power[k].dram_w * (end - ta);
		}
		ta = end;
	}
}

static size_t power_phase(const char *name)
{
	size_t k;
	for (k = 0; phase_power[k].name && strcmp(phase_power[k].name, name); k++)
		;
	return k;
}

static uint64_t mono_of(const struct gen *g, int64_t true_ns)
{
	return (uint64_t)(true_ns - g->t0_unix_ns + g->mono_base_ns);
}

/* One record at ticket g->ticket: head + text continuations. */
static void emit(struct gen *g, int64_t true_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		 size_t len)
{
	struct anchor_slot *head;
	size_t ncont = len > ANCHOR_NAME_INLINE ? (len - ANCHOR_NAME_INLINE + ANCHOR_CONT_BYTES - 1) / ANCHOR_CONT_BYTES : 0;
	uint64_t t = g->ticket, h;
	const uint64_t *w;

	if (ncont > ANCHOR_TEXT_MAX_CONT) {
		ncont = ANCHOR_TEXT_MAX_CONT;
		len = ANCHOR_NAME_INLINE + ncont * ANCHOR_CONT_BYTES;
		flags |= ANCHOR_FLAG_TRUNC;
	}
	head = (struct anchor_slot *)(g->buf + ANCHOR_RING_HDR_SIZE + (t & (g->nslots - 1)) * ANCHOR_SLOT_SIZE);
	memset(head, 0, sizeof *head);
	head->ts_ns = mono_of(g, true_ns);
	head->pid = g->pid;
	head->tid = g->pid;
	head->kind = kind;
	head->flags = flags;
	head->nslots = (uint8_t)(1 + ncont);
	head->value = value;
	memcpy(head->name, text, len < ANCHOR_NAME_INLINE ? len : ANCHOR_NAME_INLINE);
	h = anchor_check_init(t);
	w = (const uint64_t *)(const void *)head;
	for (unsigned i = 1; i < 8; i++)
		h = anchor_check_step(h, i - 1, w[i]);
	for (size_t c = 0; c < ncont; c++) {
		struct anchor_cont *cs = (struct anchor_cont *)(g->buf + ANCHOR_RING_HDR_SIZE +
								 ((t + 1 + c) & (g->nslots - 1)) * ANCHOR_SLOT_SIZE);
		size_t off = ANCHOR_NAME_INLINE + c * ANCHOR_CONT_BYTES, k = len - off;
		uint64_t d[7];
		memset(cs, 0, sizeof *cs);
		memcpy(cs->data, text + off, k < ANCHOR_CONT_BYTES ? k : ANCHOR_CONT_BYTES);
		cs->commit = (t + 1 + c + 1) | ANCHOR_SLOT_CONT;
		memcpy(d, cs->data, sizeof d);
		for (unsigned i = 0; i < 7; i++)
			h = anchor_check_step(h, 7 + 7 * (unsigned)c + i, d[i]);
	}
	head->check = anchor_check_fold(h);
	head->commit = t + 1;
	g->ticket += 1 + ncont;
}

static void sync_rec(struct gen *g, int64_t true_ns)
{
	struct anchor_sync_payload p = {0};
	char name[ANCHOR_NAME_INLINE];
	p.bracket_ns = 40;
	p.tries = 5;
	memcpy(name, &p, sizeof name);
	emit(g, true_ns, ANCHOR_KIND_SYNC, ANCHOR_FLAG_VALUE, (uint64_t)(true_ns + g->rt_error_ns), name, sizeof name);
}

static void ev(struct gen *g, int64_t true_ns, uint8_t kind, const char *name)
{
	if ((uint64_t)true_ns >= g->next_sync_ns) {
		sync_rec(g, true_ns);
		g->next_sync_ns = (uint64_t)true_ns + 1000000000ull;
	}
	emit(g, true_ns, kind, 0, 0, name, strlen(name));
}

static int64_t arg_i64(const char *v)
{
	char *end;
	long long x = strtoll(v, &end, 10);
	if (*end) {
		fprintf(stderr, "ringgen: '%s' is not an integer\n", v);
		exit(2);
	}
	return x;
}

static void parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof *o);
	o->host = "node0";
	o->nranks = 1;
	o->steps = 100;
	o->slow_rank = -1;
	o->slow_ms = 3;
	o->period_s = 0.1;
	o->seed = 1;
	o->t0_unix_ns = 1790000000000000000ll;
	o->mono_base_ns = 1000000000000ll;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-') {
			o->out = a;
			continue;
		}
		if (!strcmp(a, "--no-exit")) {
			o->no_exit = 1;
			continue;
		}
		if (!strcmp(a, "--perun-monitor")) {
			o->perun_monitor = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "ringgen: %s needs a value\n", a);
			exit(2);
		}
		i++;
		if (!strcmp(a, "--host"))
			o->host = v;
		else if (!strcmp(a, "--truth"))
			o->truth = v;
		else if (!strcmp(a, "--power-out"))
			o->power_out = v;
		else if (!strcmp(a, "--period-s"))
			o->period_s = atof(v);
		else if (!strcmp(a, "--rank"))
			o->rank = (int)arg_i64(v);
		else if (!strcmp(a, "--nranks"))
			o->nranks = (int)arg_i64(v);
		else if (!strcmp(a, "--steps"))
			o->steps = (int)arg_i64(v);
		else if (!strcmp(a, "--slow-rank"))
			o->slow_rank = (int)arg_i64(v);
		else if (!strcmp(a, "--slow-ms"))
			o->slow_ms = atof(v);
		else if (!strcmp(a, "--seed"))
			o->seed = (uint64_t)arg_i64(v);
		else if (!strcmp(a, "--pid"))
			o->pid = (uint32_t)arg_i64(v);
		else if (!strcmp(a, "--t0-unix-ns"))
			o->t0_unix_ns = arg_i64(v);
		else if (!strcmp(a, "--mono-base-ns"))
			o->mono_base_ns = arg_i64(v);
		else if (!strcmp(a, "--rt-error-ns"))
			o->rt_error_ns = arg_i64(v);
		else {
			fprintf(stderr, "ringgen: unknown option %s\n", a);
			exit(2);
		}
	}
	if (!o->out || o->nranks < 1 || o->rank < 0 || o->rank >= o->nranks || o->steps < 1) {
		fprintf(stderr, "usage: ringgen OUT.ring --rank R --nranks N --steps S [options] (see source)\n");
		exit(2);
	}
	if (!o->pid)
		o->pid = 1000 + (uint32_t)o->rank;
}

/* Compute time (ns) of rank r in step k up to its allreduce arrival. */
static void work_ns(const struct opts *o, int k, int r, int64_t *d, int64_t *f, int64_t *b)
{
	*d = (int64_t)(1e6 * (0.8 + 0.4 * unif(o->seed, (uint64_t)k, (uint64_t)r, 1)));
	*f = (int64_t)(1e6 * (2.0 + 1.0 * unif(o->seed, (uint64_t)k, (uint64_t)r, 2)));
	*b = (int64_t)(1e6 * (4.0 + 2.0 * unif(o->seed, (uint64_t)k, (uint64_t)r, 3)));
	if (r == o->slow_rank)
		*f += (int64_t)(o->slow_ms * 1e6);
}

/* The ring in memory, its header filled as libanchor would (overwrite
 * mode, CLOCK_MONOTONIC), sized so the run's records never wrap. */
static struct anchor_ring_hdr *ring_init(struct gen *g, const struct opts *o)
{
	struct anchor_ring_hdr *hdr;
	/* 12 records a step, a SYNC per simulated second (< 1 a step), the
	 * start records: size the ring so nothing wraps. */
	uint64_t need = (uint64_t)o->steps * 13 + 64;

	g->nslots = ANCHOR_RING_MIN_SLOTS;
	while (g->nslots < need)
		g->nslots <<= 1;
	g->buf = calloc(1, ANCHOR_RING_HDR_SIZE + g->nslots * ANCHOR_SLOT_SIZE);
	if (!g->buf)
		return NULL;
	g->pid = o->pid;
	g->t0_unix_ns = o->t0_unix_ns;
	g->mono_base_ns = o->mono_base_ns;
	g->rt_error_ns = o->rt_error_ns;
	hdr = (struct anchor_ring_hdr *)g->buf;
	memcpy(hdr->magic, ANCHOR_RING_MAGIC, 8);
	hdr->endian = ANCHOR_RING_ENDIAN;
	hdr->version_major = ANCHOR_RING_VERSION_MAJOR;
	hdr->version_minor = ANCHOR_RING_VERSION_MINOR;
	hdr->header_size = ANCHOR_RING_HDR_SIZE;
	hdr->slot_size = ANCHOR_SLOT_SIZE;
	hdr->mode = ANCHOR_RING_MODE_OVERWRITE;
	hdr->nslots = g->nslots;
	hdr->data_offset = ANCHOR_RING_HDR_SIZE;
	hdr->feat_mask = ANCHOR_FEAT_CHECK;
	hdr->session_id[0] = (uint8_t)o->seed;
	hdr->clock_id = 1; /* CLOCK_MONOTONIC */
	hdr->state = ANCHOR_RING_STATE_READY;
	hdr->create_realtime_ns = (uint64_t)(o->t0_unix_ns + o->rt_error_ns);
	hdr->create_monotonic_ns = (uint64_t)o->mono_base_ns;
	hdr->creator_pid = o->pid;
	snprintf(hdr->writer_version, sizeof hdr->writer_version, "%s", ANCHOR_VERSION);
	snprintf(hdr->hostname, sizeof hdr->hostname, "%s", o->host);
	return hdr;
}

/* The process start records (PROC_START with the MPI rank variables,
 * THREAD, the first SYNC) at now. */
static void write_start(struct gen *g, const struct opts *o, int64_t now)
{
	char text[512];
	size_t tl = 0;

	tl += (size_t)snprintf(text + tl, sizeof text - tl, "host=%s", o->host) + 1;
	tl += (size_t)snprintf(text + tl, sizeof text - tl, "OMPI_COMM_WORLD_RANK=%d", o->rank) + 1;
	tl += (size_t)snprintf(text + tl, sizeof text - tl, "OMPI_COMM_WORLD_SIZE=%d", o->nranks) + 1;
	tl += (size_t)snprintf(text + tl, sizeof text - tl, "exe=/usr/bin/python3") + 1;
	tl += (size_t)snprintf(text + tl, sizeof text - tl, "argv=%s",
			       o->perun_monitor ? "perun monitor train.py --synthetic" : "python3 train.py --synthetic") + 1;
	emit(g, now, ANCHOR_KIND_PROC_START, 0, 1, text, tl);
	emit(g, now, ANCHOR_KIND_THREAD, ANCHOR_FLAG_VALUE, 1, "python3", 7);
	sync_rec(g, now);
	g->next_sync_ns = (uint64_t)now + 1000000000ull;
}

/* --power-out: the sample windows from 0.5 s before now to 0.5 s after
 * the last step (a dry run of the schedule gives the run's length), the
 * start-up before now at idle power.  Returns 0, or main's exit code. */
static int power_plan(const struct opts *o, int64_t now, struct power *pw)
{
	int64_t t = now, d, f, b;

	for (int k = 0; k < o->steps; k++) {
		int64_t mx = 0;
		for (int r = 0; r < o->nranks; r++) {
			work_ns(o, k, r, &d, &f, &b);
			if (d + f + b > mx)
				mx = d + f + b;
		}
		t += mx + 1300000;
	}
	if (o->period_s < 0.001) {
		fprintf(stderr, "ringgen: --period-s must be at least 0.001\n");
		return 2;
	}
	pw->first_ns = now - 500000000;
	pw->period_s = o->period_s;
	pw->n = (size_t)ceil((double)(t + 500000000 - pw->first_ns) / 1e9 / o->period_s) + 1;
	pw->pkg = calloc(pw->n, sizeof *pw->pkg);
	pw->dram = calloc(pw->n, sizeof *pw->dram);
	if (!pw->pkg || !pw->dram) {
		fprintf(stderr, "ringgen: out of memory\n");
		return 1;
	}
	power_add(pw, pw->first_ns, now, NPOW - 1);
	return 0;
}

/* Step k from now: every rank's truth row, this rank's 12 records and its
 * power; returns the step's end. */
static int64_t write_step(struct gen *g, const struct opts *o, int k, int64_t now, FILE *truth, struct power *pw)
{
	int64_t arrive_max = 0, d, f, b, end_ar, end_step;
	int slowest = 0;

	for (int r = 0; r < o->nranks; r++) {
		work_ns(o, k, r, &d, &f, &b);
		if (d + f + b > arrive_max) {
			arrive_max = d + f + b;
			slowest = r;
		}
	}
	end_ar = now + arrive_max + 300000;
	end_step = end_ar + 1000000;
	if (truth)
		for (int r = 0; r < o->nranks; r++) {
			work_ns(o, k, r, &d, &f, &b);
			fprintf(truth, "%d,%d,%lld,%lld,%lld,%d\n", k, r, (long long)(now + o->rt_error_ns),
				(long long)(end_step + o->rt_error_ns), (long long)(end_ar - (now + d + f + b)),
				r == slowest);
		}
	work_ns(o, k, o->rank, &d, &f, &b);
	ev(g, now, ANCHOR_KIND_BEGIN, "train_step");
	ev(g, now, ANCHOR_KIND_BEGIN, "data");
	ev(g, now + d, ANCHOR_KIND_END, "data");
	ev(g, now + d, ANCHOR_KIND_BEGIN, "forward");
	ev(g, now + d + f, ANCHOR_KIND_END, "forward");
	ev(g, now + d + f, ANCHOR_KIND_BEGIN, "backward");
	ev(g, now + d + f + b, ANCHOR_KIND_END, "backward");
	ev(g, now + d + f + b, ANCHOR_KIND_BEGIN, "MPI_Allreduce");
	ev(g, end_ar, ANCHOR_KIND_END, "MPI_Allreduce");
	ev(g, end_ar, ANCHOR_KIND_BEGIN, "optimizer.step");
	ev(g, end_step, ANCHOR_KIND_END, "optimizer.step");
	ev(g, end_step, ANCHOR_KIND_END, "train_step");
	if (pw->n) {
		power_add(pw, now, now + d, power_phase("data"));
		power_add(pw, now + d, now + d + f, power_phase("forward"));
		power_add(pw, now + d + f, now + d + f + b, power_phase("backward"));
		power_add(pw, now + d + f + b, end_ar, power_phase("MPI_Allreduce"));
		power_add(pw, end_ar, end_step, power_phase("optimizer.step"));
	}
	return end_step;
}

/* --power-out's file: the tail after now at idle power, then cumulative
 * joules per sample (format in the opening comment).  Frees the samples. */
static int power_write(const struct opts *o, int64_t now, struct power *pw)
{
	double cp = 0, cd = 0;
	FILE *pf;

	power_add(pw, now, pw->first_ns + (int64_t)llround((double)(pw->n - 1) * pw->period_s * 1e9), NPOW - 1);
	pf = fopen(o->power_out, "w");
	if (!pf) {
		fprintf(stderr, "ringgen: %s: %s\n", o->power_out, strerror(errno));
		return 1;
	}
	fprintf(pf, "# first_sample_unix_ns=%lld\n", (long long)(pw->first_ns + o->rt_error_ns));
	for (size_t k = 0; k < NPOW; k++)
		fprintf(pf, "# phase_j %s=%.9f,%.9f\n", phase_power[k].name ? phase_power[k].name : "(idle)",
			pw->phase_j[k][0], pw->phase_j[k][1]);
	fprintf(pf, "t_rel_s,pkg_j,dram_j\n");
	for (size_t i = 0; i < pw->n; i++) {
		cp += pw->pkg[i];
		cd += pw->dram[i];
		fprintf(pf, "%.6f,%.9f,%.9f\n", (double)i * pw->period_s, cp, cd);
	}
	if (fclose(pf)) {
		fprintf(stderr, "ringgen: %s: %s\n", o->power_out, strerror(errno));
		return 1;
	}
	free(pw->pkg);
	free(pw->dram);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct gen g = {0};
	struct anchor_ring_hdr *hdr;
	struct power pw = {0};
	int64_t now;
	FILE *fp, *truth = NULL;
	int rc;

	parse(argc, argv, &o);
	if (!(hdr = ring_init(&g, &o))) {
		fprintf(stderr, "ringgen: out of memory\n");
		return 1;
	}
	now = o.t0_unix_ns;
	write_start(&g, &o, now);
	if (o.perun_monitor) {
		/* perun forks its sampler, which samples from 500 ms before the first step */
		g.pid = o.pid + 100000;
		emit(&g, now + 2000000, ANCHOR_KIND_FORK, 0, o.pid, "", 0);
		g.pid = o.pid;
		now += 600000000;
	} else {
		now += 1000000; /* 1 ms of start-up */
	}
	if (o.power_out && (rc = power_plan(&o, now, &pw)))
		return rc;
	if (o.truth && !(truth = fopen(o.truth, "w"))) {
		fprintf(stderr, "ringgen: %s: %s\n", o.truth, strerror(errno));
		return 1;
	}
	if (truth)
		fprintf(truth, "step,rank,t0_unix_ns,t1_unix_ns,wait_ns,slowest\n");
	for (int k = 0; k < o.steps; k++)
		now = write_step(&g, &o, k, now, truth, &pw);
	int64_t last_sample = pw.first_ns + (int64_t)llround((double)(pw.n ? pw.n - 1 : 0) * pw.period_s * 1e9);
	if (pw.n && (rc = power_write(&o, now, &pw)))
		return rc;
	if (truth && fclose(truth)) {
		fprintf(stderr, "ringgen: %s: %s\n", o.truth, strerror(errno));
		return 1;
	}
	if (o.perun_monitor) {
		int64_t sx = (pw.first_ns ? last_sample : now) + 20000000;
		g.pid = o.pid + 100000;
		emit(&g, sx, ANCHOR_KIND_PROC_EXIT, ANCHOR_FLAG_VALUE, 0, "status=0", 8);
		g.pid = o.pid;
		now = sx;
	}
	if (!o.no_exit)
		emit(&g, now + 1000000, ANCHOR_KIND_PROC_EXIT, ANCHOR_FLAG_VALUE, 0, "status=0", 8);
	hdr->head = g.ticket;

	fp = fopen(o.out, "wb");
	if (!fp || fwrite(g.buf, 1, ANCHOR_RING_HDR_SIZE + g.nslots * ANCHOR_SLOT_SIZE, fp) !=
			   ANCHOR_RING_HDR_SIZE + g.nslots * ANCHOR_SLOT_SIZE ||
	    fclose(fp)) {
		fprintf(stderr, "ringgen: %s: %s\n", o.out, strerror(errno));
		return 1;
	}
	free(g.buf);
	return 0;
}
