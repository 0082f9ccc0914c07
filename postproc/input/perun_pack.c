/* perun_pack.c - struct perun_file as bytes and back (see perun_pack.h). */
#include "input/perun_pack.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT64_MAX

/* ---- writing ---------------------------------------------------------- */

static void put(FILE *f, const void *p, size_t n)
{
	if (n) /* fwrite's buffer must not be NULL, even for 0 bytes (UBSan) */
		fwrite(p, 1, n, f);
}

static void put_u64(FILE *f, uint64_t v)
{
	put(f, &v, sizeof v);
}

static void put_f64(FILE *f, double v)
{
	put(f, &v, sizeof v);
}

static void put_str(FILE *f, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	put_u64(f, s ? n + 1 : 0);
	put(f, s, n);
}

static void put_f64s(FILE *f, const double *v, size_t n)
{
	put_u64(f, v ? n : NIL);
	if (v)
		put(f, v, n * sizeof *v);
}

static void put_sensor(FILE *f, const struct perun_sensor *s)
{
	put_str(f, s->id);
	put_str(f, s->device_type);
	put_u64(f, s->nmeta);
	for (size_t i = 0; i < s->nmeta; i++) {
		put_str(f, s->meta[i].key);
		put_str(f, s->meta[i].value);
	}
	put_u64(f, s->n);
	put_f64s(f, s->timesteps_s, s->n);
	put_f64s(f, s->values, s->n);
	put_str(f, s->unit);
	put_f64(f, s->mag);
	put_u64(f, (uint64_t)(int64_t)s->values_digits);
	put_f64s(f, s->alt_values, s->n);
	put_str(f, s->alt_unit);
	put_f64(f, s->alt_mag);
	put_u64(f, (uint64_t)(int64_t)s->alt_digits);
	put_f64(f, s->values_max);
	put_f64(f, s->alt_max);
	put_u64(f, (uint64_t)(int64_t)s->has_energy);
	put_f64(f, s->energy_j);
}

static void put_host(FILE *f, const struct perun_host *h)
{
	put_str(f, h->name);
	put_u64(f, h->mpi_ranks ? h->nranks : NIL);
	for (size_t i = 0; h->mpi_ranks && i < h->nranks; i++)
		put_u64(f, (uint64_t)(int64_t)h->mpi_ranks[i]);
	put_u64(f, h->ngroups);
	for (size_t g = 0; g < h->ngroups; g++) {
		put_str(f, h->groups[g].name);
		put_u64(f, h->groups[g].nsensors);
		for (size_t s = 0; s < h->groups[g].nsensors; s++)
			put_sensor(f, &h->groups[g].sensors[s]);
	}
}

static void put_round(FILE *f, const struct perun_round *r)
{
	put_str(f, r->id);
	put_u64(f, r->nhosts);
	for (size_t h = 0; h < r->nhosts; h++)
		put_host(f, &r->hosts[h]);
	put_u64(f, r->nregions);
	for (size_t g = 0; g < r->nregions; g++) {
		const struct perun_region *rg = &r->regions[g];
		put_str(f, rg->name);
		put_u64(f, rg->nranks);
		for (size_t k = 0; k < rg->nranks; k++) {
			put_u64(f, (uint64_t)(int64_t)rg->ranks[k].rank);
			put_u64(f, rg->ranks[k].n);
			put_f64s(f, rg->ranks[k].start_s, rg->ranks[k].n);
			put_f64s(f, rg->ranks[k].stop_s, rg->ranks[k].n);
		}
	}
}

int perun_pack(const struct perun_file *pf, char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	put(f, "PPK1", 4);
	put_str(f, pf->app);
	put_u64(f, pf->nruns);
	for (size_t i = 0; i < pf->nruns; i++) {
		const struct perun_multirun *m = &pf->runs[i];
		put_str(f, m->id);
		put_str(f, m->app_name);
		put_str(f, m->perun_version);
		put_str(f, m->execution_dt);
		put_u64(f, (uint64_t)m->clock);
		put_u64(f, m->nconfig);
		for (size_t k = 0; k < m->nconfig; k++) {
			put_str(f, m->config[k].key);
			put_str(f, m->config[k].value);
		}
		put_u64(f, m->nrounds);
		for (size_t j = 0; j < m->nrounds; j++)
			put_round(f, &m->rounds[j]);
	}
	if (ferror(f) | fclose(f)) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- reading ---------------------------------------------------------- */

struct rd {
	const char *p, *end;
	int rc; /* first failure, sticky */
};

static int take(struct rd *r, void *dst, size_t n)
{
	if (r->rc || (size_t)(r->end - r->p) < n) {
		if (!r->rc)
			r->rc = -EINVAL;
		return r->rc;
	}
	memcpy(dst, r->p, n);
	r->p += n;
	return 0;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t v = 0;
	take(r, &v, sizeof v);
	return v;
}

static double get_f64(struct rd *r)
{
	double v = 0;
	take(r, &v, sizeof v);
	return v;
}

static int get_int(struct rd *r)
{
	return (int)(int64_t)get_u64(r);
}

static char *get_str(struct rd *r)
{
	uint64_t n = get_u64(r);
	char *s;
	if (r->rc || !n)
		return NULL;
	if (n - 1 > (uint64_t)(r->end - r->p)) {
		r->rc = -EINVAL;
		return NULL;
	}
	if (!(s = malloc(n))) {
		r->rc = -ENOMEM;
		return NULL;
	}
	take(r, s, n - 1);
	s[n - 1] = '\0';
	return s;
}

/* A count of elements of size sz that the rest of the buffer can hold
 * (each element takes at least min bytes there); else 0 with r->rc set. */
static size_t get_count(struct rd *r, size_t min)
{
	uint64_t n = get_u64(r);
	if (r->rc)
		return 0;
	if (n > (uint64_t)(r->end - r->p) / (min ? min : 1)) {
		r->rc = -EINVAL;
		return 0;
	}
	return (size_t)n;
}

/* calloc of n (at least one) elements, r->rc = -ENOMEM on failure. */
static void *get_array(struct rd *r, size_t n, size_t sz)
{
	void *p;
	if (r->rc)
		return NULL;
	if (!(p = calloc(n ? n : 1, sz)))
		r->rc = -ENOMEM;
	return p;
}

static double *get_f64s(struct rd *r, size_t want)
{
	uint64_t n = get_u64(r);
	double *v;
	if (r->rc || n == NIL)
		return NULL;
	if (n != want || n > (uint64_t)(r->end - r->p) / sizeof *v) {
		r->rc = -EINVAL;
		return NULL;
	}
	if ((v = get_array(r, (size_t)n, sizeof *v)))
		take(r, v, (size_t)n * sizeof *v);
	return v;
}

static void get_sensor(struct rd *r, struct perun_sensor *s)
{
	s->id = get_str(r);
	s->device_type = get_str(r);
	s->nmeta = get_count(r, 16);
	if ((s->meta = get_array(r, s->nmeta, sizeof *s->meta)))
		for (size_t i = 0; i < s->nmeta && !r->rc; i++) {
			s->meta[i].key = get_str(r);
			s->meta[i].value = get_str(r);
		}
	else
		s->nmeta = 0;
	s->n = get_count(r, 0);
	s->timesteps_s = get_f64s(r, s->n);
	s->values = get_f64s(r, s->n);
	s->unit = get_str(r);
	s->metric = perun_metric_name(s->unit);
	s->mag = get_f64(r);
	s->values_digits = get_int(r);
	s->alt_values = get_f64s(r, s->n);
	s->alt_unit = get_str(r);
	s->alt_mag = get_f64(r);
	s->alt_digits = get_int(r);
	s->values_max = get_f64(r);
	s->alt_max = get_f64(r);
	s->has_energy = get_int(r);
	s->energy_j = get_f64(r);
}

static void get_host(struct rd *r, struct perun_host *h)
{
	uint64_t nr;
	h->name = get_str(r);
	nr = get_u64(r);
	if (!r->rc && nr != NIL) {
		if (nr > (uint64_t)(r->end - r->p) / 8) {
			r->rc = -EINVAL;
			return;
		}
		if ((h->mpi_ranks = get_array(r, (size_t)nr, sizeof *h->mpi_ranks))) {
			h->nranks = (size_t)nr;
			for (size_t i = 0; i < h->nranks; i++)
				h->mpi_ranks[i] = get_int(r);
		}
	}
	h->ngroups = get_count(r, 16);
	if (!(h->groups = get_array(r, h->ngroups, sizeof *h->groups))) {
		h->ngroups = 0;
		return;
	}
	for (size_t g = 0; g < h->ngroups && !r->rc; g++) {
		struct perun_group *gr = &h->groups[g];
		gr->name = get_str(r);
		gr->nsensors = get_count(r, 64);
		if (!(gr->sensors = get_array(r, gr->nsensors, sizeof *gr->sensors)))
			gr->nsensors = 0;
		for (size_t s = 0; s < gr->nsensors && !r->rc; s++)
			get_sensor(r, &gr->sensors[s]);
	}
}

static void get_region(struct rd *r, struct perun_region *rg)
{
	rg->name = get_str(r);
	rg->nranks = get_count(r, 32);
	if (!(rg->ranks = get_array(r, rg->nranks, sizeof *rg->ranks))) {
		rg->nranks = 0;
		return;
	}
	for (size_t k = 0; k < rg->nranks && !r->rc; k++) {
		struct perun_region_rank *rr = &rg->ranks[k];
		rr->rank = get_int(r);
		rr->n = get_count(r, 0);
		rr->start_s = get_f64s(r, rr->n);
		rr->stop_s = get_f64s(r, rr->n);
	}
}

static void get_round(struct rd *r, struct perun_round *rd)
{
	rd->id = get_str(r);
	rd->nhosts = get_count(r, 24);
	if (!(rd->hosts = get_array(r, rd->nhosts, sizeof *rd->hosts)))
		rd->nhosts = 0;
	for (size_t h = 0; h < rd->nhosts && !r->rc; h++)
		get_host(r, &rd->hosts[h]);
	rd->nregions = get_count(r, 16);
	if (!(rd->regions = get_array(r, rd->nregions, sizeof *rd->regions)))
		rd->nregions = 0;
	for (size_t g = 0; g < rd->nregions && !r->rc; g++)
		get_region(r, &rd->regions[g]);
}

int perun_unpack(const char *buf, size_t len, struct perun_file *pf)
{
	struct rd r = {buf, buf + len, 0};
	char magic[4];
	memset(pf, 0, sizeof *pf);
	if (take(&r, magic, 4) || memcmp(magic, "PPK1", 4))
		return -EINVAL;
	pf->app = get_str(&r);
	pf->nruns = get_count(&r, 48);
	if (!(pf->runs = get_array(&r, pf->nruns, sizeof *pf->runs)))
		pf->nruns = 0;
	for (size_t i = 0; i < pf->nruns && !r.rc; i++) {
		struct perun_multirun *m = &pf->runs[i];
		m->id = get_str(&r);
		m->app_name = get_str(&r);
		m->perun_version = get_str(&r);
		m->execution_dt = get_str(&r);
		m->clock = (enum perun_clock)get_u64(&r);
		m->nconfig = get_count(&r, 16);
		if ((m->config = get_array(&r, m->nconfig, sizeof *m->config)))
			for (size_t k = 0; k < m->nconfig && !r.rc; k++) {
				m->config[k].key = get_str(&r);
				m->config[k].value = get_str(&r);
			}
		else
			m->nconfig = 0;
		m->nrounds = get_count(&r, 24);
		if (!(m->rounds = get_array(&r, m->nrounds, sizeof *m->rounds)))
			m->nrounds = 0;
		for (size_t j = 0; j < m->nrounds && !r.rc; j++)
			get_round(&r, &m->rounds[j]);
	}
	if (!r.rc && r.p != r.end)
		r.rc = -EINVAL;
	if (r.rc)
		perun_free(pf);
	return r.rc;
}
