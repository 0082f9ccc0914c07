/*
 * perun_load.c - walk perun's HDF5 file with libhdf5 into the model of
 * perun.h.
 *
 * The walk follows perun's fixed levels (APP, MULTI_RUN, RUN, NODE,
 * DEVICE_GROUP, SENSOR), checks each group's @type, and refuses anything
 * it would otherwise misread: soft or external links, non-numeric data,
 * timesteps not in seconds, series of different lengths.  Any corrupt
 * structure libhdf5 reports becomes one message naming the HDF5 path.
 */
#include "input/hdf5_probe.h"
#include "input/input_file.h"
#include "input/perun.h"
#include "input/perun_spelling.h"
#include "util/tunables.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* perun's NodeType values (perun/data_model/data.py, enum.auto from 1). */
enum {
	NODE_APP = 1,
	NODE_MULTI_RUN = 2,
	NODE_RUN = 3,
	NODE_HOST = 4,
	NODE_DEVICE_GROUP = 5,
	NODE_SENSOR = 6,
};

static const char *const node_type_names[] = {"?", "APP", "MULTI_RUN", "RUN", "NODE",
					      "DEVICE_GROUP", "SENSOR"};

/* Longest string attribute we accept; perun's longest are cpu flag lists. */
#define MAX_ATTR_STR (1u << 20)

struct ld {
	char *err;
	size_t errlen;
	/* Datasets may not claim more elements than this: perun stores them
	 * uncompressed, so a corrupt header claiming billions of samples is
	 * caught before we allocate for it. */
	uint64_t max_elems;
};

__attribute__((format(printf, 4, 5))) static int fail(struct ld *L, int rc, const char *path,
						       const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(L->err, L->errlen, "%s: ", path ? path : "/");
	if (k < 0 || (size_t)k >= L->errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(L->err + k, L->errlen - (size_t)k, fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(struct ld *L, const char *path)
{
	return fail(L, -ENOMEM, path, "out of memory");
}

/* "<parent>/<name>", or NULL when out of memory. */
static char *path_join(const char *parent, const char *name)
{
	size_t a = strlen(parent), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (!p)
		return NULL;
	memcpy(p, parent, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

/* ---- listing a group's members ---------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
	int oom;
	char *not_hard; /* first member that is a soft or external link */
};

static herr_t names_cb(hid_t g, const char *name, const H5L_info_t *info, void *op)
{
	struct names *ns = op;
	(void)g;
	if (info->type != H5L_TYPE_HARD) {
		ns->not_hard = strdup(name);
		if (!ns->not_hard)
			ns->oom = 1;
		return -1;
	}
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 16;
		char **v = realloc(ns->v, cap * sizeof *v);
		if (!v) {
			ns->oom = 1;
			return -1;
		}
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n]) {
		ns->oom = 1;
		return -1;
	}
	ns->n++;
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	free(ns->not_hard);
	memset(ns, 0, sizeof *ns);
}

/* Members of group g in name order (the order h5py and perun export use). */
static int list_members(struct ld *L, hid_t g, const char *path, struct names *ns)
{
	hsize_t idx = 0;
	memset(ns, 0, sizeof *ns);
	herr_t r = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, names_cb, ns);
	if (ns->oom) {
		names_free(ns);
		return oom(L, path);
	}
	if (ns->not_hard) {
		int rc = fail(L, -EINVAL, path, "member '%s' is a soft or external link; perun writes none",
			      ns->not_hard);
		names_free(ns);
		return rc;
	}
	if (r < 0) {
		names_free(ns);
		return fail(L, -EINVAL, path, "cannot list members (corrupt file?)");
	}
	return 0;
}

/* ---- opening members ---------------------------------------------------- */

/* Open member `name` of loc, which must exist and be of type `want`
 * (H5I_GROUP or H5I_DATASET).  *id >= 0 on success. */
static int open_member(struct ld *L, hid_t loc, const char *path, const char *name, H5I_type_t want,
		       hid_t *id)
{
	char *p = path_join(path, name);
	int rc = 0;
	*id = -1;
	if (!p)
		return oom(L, path);
	htri_t ex = H5Lexists(loc, name, H5P_DEFAULT);
	if (ex < 0) {
		rc = fail(L, -EINVAL, p, "cannot look up (corrupt file?)");
	} else if (ex == 0) {
		rc = fail(L, -EINVAL, p, "missing (not a perun file, or written by an unknown perun version?)");
	} else {
		hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
		if (o < 0) {
			rc = fail(L, -EINVAL, p, "cannot open (corrupt file?)");
		} else if (H5Iget_type(o) != want) {
			H5Oclose(o);
			rc = fail(L, -EINVAL, p, "is not a %s", want == H5I_GROUP ? "group" : "dataset");
		} else {
			*id = o;
		}
	}
	free(p);
	return rc;
}

static int has_member(hid_t loc, const char *name)
{
	return H5Lexists(loc, name, H5P_DEFAULT) > 0;
}

/* ---- attributes ------------------------------------------------------- */

/* Open attribute `name` of obj as a single element.  Returns 1 and *a when
 * present, 0 when absent, negative on error. */
static int open_attr1(struct ld *L, hid_t obj, const char *path, const char *name, hid_t *a)
{
	htri_t ex = H5Aexists(obj, name);
	*a = -1;
	if (ex < 0)
		return fail(L, -EINVAL, path, "cannot read attribute '%s' (corrupt file?)", name);
	if (ex == 0)
		return 0;
	*a = H5Aopen(obj, name, H5P_DEFAULT);
	if (*a < 0)
		return fail(L, -EINVAL, path, "cannot open attribute '%s' (corrupt file?)", name);
	hid_t sp = H5Aget_space(*a);
	hssize_t np = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
	if (sp >= 0)
		H5Sclose(sp);
	if (np != 1) {
		H5Aclose(*a);
		*a = -1;
		return fail(L, -EINVAL, path, "attribute '%s' holds %lld values, expected one", name,
			    (long long)np);
	}
	return 1;
}

/* String attribute; *out is NULL when absent and !required. */
static int attr_str(struct ld *L, hid_t obj, const char *path, const char *name, int required,
		    char **out)
{
	hid_t a, ft = -1, mt = -1;
	int rc = open_attr1(L, obj, path, name, &a);
	*out = NULL;
	if (rc < 0)
		return rc;
	if (rc == 0)
		return required ? fail(L, -EINVAL, path, "no attribute '%s' (not a perun file?)", name) : 0;
	rc = 0;
	ft = H5Aget_type(a);
	if (ft < 0 || H5Tget_class(ft) != H5T_STRING) {
		rc = fail(L, -EINVAL, path, "attribute '%s' is not a string", name);
		goto out;
	}
	mt = H5Tcopy(H5T_C_S1);
	if (mt < 0) {
		rc = fail(L, -EINVAL, path, "attribute '%s': cannot make a string type", name);
		goto out;
	}
	if (H5Tis_variable_str(ft) > 0) {
		char *s = NULL;
		hid_t sp = H5Aget_space(a);
		if (H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 || sp < 0 ||
		    H5Aread(a, mt, &s) < 0) {
			rc = fail(L, -EINVAL, path, "cannot read attribute '%s' (corrupt file?)", name);
		} else {
			size_t len = s ? strnlen(s, MAX_ATTR_STR + 1) : 0;
			if (len > MAX_ATTR_STR)
				rc = fail(L, -EINVAL, path, "attribute '%s' is longer than %u bytes", name,
					  MAX_ATTR_STR);
			else if (!(*out = strndup(s ? s : "", len)))
				rc = oom(L, path);
			if (s)
				H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &s);
		}
		if (sp >= 0)
			H5Sclose(sp);
	} else {
		size_t size = H5Tget_size(ft);
		char *buf;
		if (size == 0 || size > MAX_ATTR_STR) {
			rc = fail(L, -EINVAL, path, "attribute '%s' has a bad string size %zu", name, size);
			goto out;
		}
		buf = calloc(1, size + 1);
		if (!buf) {
			rc = oom(L, path);
			goto out;
		}
		if (H5Tset_size(mt, size) < 0 || H5Aread(a, mt, buf) < 0) {
			free(buf);
			rc = fail(L, -EINVAL, path, "cannot read attribute '%s' (corrupt file?)", name);
			goto out;
		}
		*out = buf;
	}
out:
	if (mt >= 0)
		H5Tclose(mt);
	if (ft >= 0)
		H5Tclose(ft);
	H5Aclose(a);
	return rc;
}

/* Numeric attribute as double; returns 1 when read, 0 when absent. */
static int attr_num(struct ld *L, hid_t obj, const char *path, const char *name, int required,
		    double *out)
{
	hid_t a, ft;
	int rc = open_attr1(L, obj, path, name, &a);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return required ? fail(L, -EINVAL, path, "no attribute '%s' (not a perun file?)", name) : 0;
	ft = H5Aget_type(a);
	H5T_class_t cl = ft < 0 ? H5T_NO_CLASS : H5Tget_class(ft);
	if (cl != H5T_INTEGER && cl != H5T_FLOAT)
		rc = fail(L, -EINVAL, path, "attribute '%s' is not a number", name);
	else if (H5Aread(a, H5T_NATIVE_DOUBLE, out) < 0)
		rc = fail(L, -EINVAL, path, "cannot read attribute '%s' (corrupt file?)", name);
	else if (!isfinite(*out))
		rc = fail(L, -EINVAL, path, "attribute '%s' is not finite", name);
	else
		rc = 1;
	if (ft >= 0)
		H5Tclose(ft);
	H5Aclose(a);
	return rc;
}

/* The group's @type must be `want`. */
static int check_type(struct ld *L, hid_t g, const char *path, int want)
{
	double t;
	int rc = attr_num(L, g, path, "type", 1, &t);
	if (rc < 0)
		return rc;
	if (t != want)
		return fail(L, -EINVAL, path, "attribute 'type' is %g, expected %d (%s)", t, want,
			    node_type_names[want]);
	return 0;
}

/* ---- datasets ----------------------------------------------------------- */

static const char *class_name(H5T_class_t cl)
{
	switch (cl) {
	case H5T_STRING: return "string";
	case H5T_COMPOUND: return "compound";
	case H5T_ENUM: return "enum";
	case H5T_ARRAY: return "array";
	case H5T_VLEN: return "variable-length";
	case H5T_REFERENCE: return "reference";
	case H5T_OPAQUE: return "opaque";
	case H5T_BITFIELD: return "bitfield";
	case H5T_TIME: return "time";
	default: return "unknown";
	}
}

/* A 1-D numeric dataset read as doubles (not yet scaled).  *digits: the
 * significant digits its stored type holds. */
static int read_series(struct ld *L, hid_t g, const char *gpath, const char *name, double **out,
		       size_t *n, int *digits)
{
	hid_t d, ft = -1, sp = -1;
	char *p = path_join(gpath, name);
	int rc;
	*out = NULL;
	*n = 0;
	if (!p)
		return oom(L, gpath);
	rc = open_member(L, g, gpath, name, H5I_DATASET, &d);
	if (rc < 0)
		goto out_free;
	ft = H5Dget_type(d);
	H5T_class_t cl = ft < 0 ? H5T_NO_CLASS : H5Tget_class(ft);
	if (cl != H5T_INTEGER && cl != H5T_FLOAT) {
		rc = fail(L, -EINVAL, p, "dtype is %s, expected int or float", class_name(cl));
		goto out;
	}
	*digits = (cl == H5T_FLOAT && H5Tget_size(ft) <= 4) ? 9 : 17;
	sp = H5Dget_space(d);
	int rank = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
	hsize_t dim = 0;
	if (rank != 1 || H5Sget_simple_extent_dims(sp, &dim, NULL) != 1) {
		rc = fail(L, -EINVAL, p, "has %d dimensions, expected 1", rank);
		goto out;
	}
	if (dim > L->max_elems) {
		rc = fail(L, -EINVAL, p, "claims %llu elements, more than the file can hold (corrupt?)",
			  (unsigned long long)dim);
		goto out;
	}
	*out = malloc((dim ? dim : 1) * sizeof **out);
	if (!*out) {
		rc = oom(L, p);
		goto out;
	}
	if (dim && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
		free(*out);
		*out = NULL;
		rc = fail(L, -EINVAL, p, "cannot read data (corrupt or truncated file?)");
		goto out;
	}
	*n = (size_t)dim;
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	H5Oclose(d);
out_free:
	free(p);
	return rc;
}

/* A raw_data series with its @unit and @mag, values scaled by mag. */
static int read_scaled(struct ld *L, hid_t rd, const char *rdpath, const char *name, double **out,
		       size_t *n, char **unit, double *mag, int *digits, double *vmax)
{
	hid_t d;
	char *p = path_join(rdpath, name);
	int rc;
	if (!p)
		return oom(L, rdpath);
	rc = read_series(L, rd, rdpath, name, out, n, digits);
	if (rc < 0)
		goto out;
	rc = open_member(L, rd, rdpath, name, H5I_DATASET, &d);
	if (rc < 0)
		goto out;
	rc = attr_str(L, d, p, "unit", 1, unit);
	if (rc >= 0)
		rc = attr_num(L, d, p, "mag", 1, mag);
	if (rc >= 0 && vmax) {
		/* advisory (a range, a power limit): absent or unreadable is NAN */
		double v;
		*vmax = attr_num(L, d, p, "valid_max", 0, &v) == 1 ? v * *mag : NAN;
		if (L->errlen)
			L->err[0] = '\0';
	}
	H5Oclose(d);
	if (rc < 0)
		goto out;
	rc = 0;
	if (*mag != 1.0) {
		for (size_t i = 0; i < *n; i++)
			(*out)[i] *= *mag;
		/* A scaled integer or double has no more than 15 trustworthy
		 * digits; printing 17 would show binary noise (250000 mW *
		 * 0.001 is not exactly 250). */
		if (*digits > 15)
			*digits = 15;
	}
out:
	free(p);
	return rc;
}

/* Every element finite and, for times, within PERUN_TIME_MAX_S of the
 * series' origin: perun stores what its sensors and clocks gave, and
 * neither gives infinities, NaN or a time 10^30 s away; such a number is a
 * damaged file, and passed on it would come out as "-inf" or as a row
 * centuries away in every output built on it. */
static int check_numbers(struct ld *L, const char *gpath, const char *name, const double *v, size_t n, int is_time)
{
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			return fail(L, -EINVAL, gpath, "%s[%zu] is %s, not a number perun writes (corrupt file?)", name,
				    i, isnan(v[i]) ? "NaN" : v[i] > 0 ? "inf" : "-inf");
		if (is_time && fabs(v[i]) > PERUN_TIME_MAX_S)
			return fail(L, -EINVAL, gpath, "%s[%zu] is %g s, beyond any run (corrupt file?)", name, i,
				    v[i]);
	}
	return 0;
}

/* ---- levels ------------------------------------------------------------- */

static herr_t meta_count_cb(hid_t o, const char *name, const H5A_info_t *info, void *op)
{
	(void)o;
	(void)name;
	(void)info;
	(*(size_t *)op)++;
	return 0;
}

struct meta_ctx {
	struct ld *L;
	const char *path;
	struct perun_kv **kv; /* the array being filled, *n entries */
	size_t *n;
	size_t cap;
	const char *const *skip; /* attributes kept elsewhere, NULL-terminated */
	int rc;
};

static herr_t meta_cb(hid_t o, const char *name, const H5A_info_t *info, void *op)
{
	struct meta_ctx *m = op;
	hid_t a, t;
	int is_str;
	(void)info;
	for (const char *const *k = m->skip; *k; k++)
		if (!strcmp(name, *k))
			return 0;
	a = H5Aopen(o, name, H5P_DEFAULT);
	if (a < 0)
		return 0;
	t = H5Aget_type(a);
	is_str = t >= 0 && H5Tget_class(t) == H5T_STRING;
	if (t >= 0)
		H5Tclose(t);
	H5Aclose(a);
	/* perun stores all metadata as str(value); anything else is not
	 * backend metadata (or config). */
	if (!is_str || *m->n >= m->cap)
		return 0;
	struct perun_kv *kv = &(*m->kv)[*m->n];
	m->rc = attr_str(m->L, o, m->path, name, 1, &kv->value);
	if (m->rc < 0)
		return -1;
	kv->key = strdup(name);
	if (!kv->key) {
		free(kv->value);
		kv->value = NULL;
		m->rc = oom(m->L, m->path);
		return -1;
	}
	(*m->n)++;
	return 0;
}

/* The string attributes of g but those in skip, as key/value pairs. */
static int load_meta(struct ld *L, hid_t g, const char *path, struct perun_kv **kv, size_t *n,
		     const char *const *skip)
{
	size_t count = 0;
	hsize_t idx = 0;
	if (H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, meta_count_cb, &count) < 0)
		return fail(L, -EINVAL, path, "cannot list attributes (corrupt file?)");
	if (!count)
		return 0;
	*kv = calloc(count, sizeof **kv);
	if (!*kv)
		return oom(L, path);
	struct meta_ctx m = {L, path, kv, n, count, skip, 0};
	idx = 0;
	if (H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, meta_cb, &m) < 0)
		return m.rc < 0 ? m.rc : fail(L, -EINVAL, path, "cannot list attributes (corrupt file?)");
	return 0;
}

static int load_energy(struct ld *L, hid_t g, const char *path, struct perun_sensor *s)
{
	hid_t mg, eg;
	char *mpath = NULL, *epath = NULL;
	int rc;
	if (!has_member(g, "metrics"))
		return 0;
	rc = open_member(L, g, path, "metrics", H5I_GROUP, &mg);
	if (rc < 0)
		return rc;
	if (!has_member(mg, "ENERGY")) {
		H5Oclose(mg);
		return 0;
	}
	mpath = path_join(path, "metrics");
	epath = mpath ? path_join(mpath, "ENERGY") : NULL;
	if (!epath) {
		rc = oom(L, path);
	} else if ((rc = open_member(L, mg, mpath, "ENERGY", H5I_GROUP, &eg)) == 0) {
		rc = attr_num(L, eg, epath, "value", 1, &s->energy_j);
		H5Oclose(eg);
		if (rc > 0) {
			s->has_energy = 1;
			rc = 0;
		}
	}
	H5Oclose(mg);
	free(mpath);
	free(epath);
	return rc;
}

static int load_sensor(struct ld *L, hid_t g, const char *path, const char *id, struct perun_sensor *s)
{
	hid_t rd;
	char *rdpath = NULL, *tunit = NULL;
	double tmag = 1;
	size_t nv = 0, nalt = 0;
	int tdigits = 9, rc;

	s->values_max = s->alt_max = NAN;
	if (!(s->id = strdup(id)))
		return oom(L, path);
	if ((rc = check_type(L, g, path, NODE_SENSOR)) < 0)
		return rc;
	if ((rc = attr_str(L, g, path, "device_type", 0, &s->device_type)) < 0)
		return rc;
	if (!s->device_type && !(s->device_type = strdup("")))
		return oom(L, path);
	static const char *const sensor_skip[] = {"type", "device_type", NULL};
	if ((rc = load_meta(L, g, path, &s->meta, &s->nmeta, sensor_skip)) < 0)
		return rc;
	if ((rc = load_energy(L, g, path, s)) < 0)
		return rc;
	if (!has_member(g, "raw_data"))
		return 0;
	if ((rc = open_member(L, g, path, "raw_data", H5I_GROUP, &rd)) < 0)
		return rc;
	if (!(rdpath = path_join(path, "raw_data"))) {
		rc = oom(L, path);
		goto out;
	}
	rc = read_scaled(L, rd, rdpath, "timesteps", &s->timesteps_s, &s->n, &tunit, &tmag, &tdigits, NULL);
	if (rc < 0)
		goto out;
	if (strcmp(tunit, "s")) {
		rc = fail(L, -EINVAL, rdpath, "timesteps unit is '%s', expected 's'", tunit);
		goto out;
	}
	if ((rc = check_numbers(L, rdpath, "timesteps", s->timesteps_s, s->n, 1)) < 0)
		goto out;
	rc = read_scaled(L, rd, rdpath, "values", &s->values, &nv, &s->unit, &s->mag, &s->values_digits,
			 &s->values_max);
	if (rc < 0 || (rc = check_numbers(L, rdpath, "values", s->values, nv, 0)) < 0)
		goto out;
	if (nv != s->n) {
		rc = fail(L, -EINVAL, rdpath, "timesteps has %zu elements but values %zu", s->n, nv);
		goto out;
	}
	s->metric = perun_metric_name(s->unit);
	if (has_member(rd, "alt_values")) {
		rc = read_scaled(L, rd, rdpath, "alt_values", &s->alt_values, &nalt, &s->alt_unit,
				 &s->alt_mag, &s->alt_digits, &s->alt_max);
		if (rc < 0 || (rc = check_numbers(L, rdpath, "alt_values", s->alt_values, nalt, 0)) < 0)
			goto out;
		if (nalt != s->n) {
			rc = fail(L, -EINVAL, rdpath, "timesteps has %zu elements but alt_values %zu", s->n,
				  nalt);
			goto out;
		}
	}
out:
	free(tunit);
	free(rdpath);
	H5Oclose(rd);
	return rc;
}

/* Iterate the members of `<g>/nodes`, calling fn on each member group. */
typedef int (*member_fn)(struct ld *L, hid_t g, const char *path, const char *name, void *arg,
			 size_t i);

static int for_each_node(struct ld *L, hid_t g, const char *path, const char *sub, size_t *count,
			 int (*alloc)(void *arg, size_t n), member_fn fn, void *arg)
{
	hid_t ng;
	struct names ns;
	char *npath = path_join(path, sub);
	int rc;
	if (!npath)
		return oom(L, path);
	rc = open_member(L, g, path, sub, H5I_GROUP, &ng);
	if (rc < 0)
		goto out_path;
	rc = list_members(L, ng, npath, &ns);
	if (rc < 0)
		goto out_group;
	if (ns.n && alloc(arg, ns.n) < 0) {
		rc = oom(L, npath);
		goto out_names;
	}
	*count = 0;
	for (size_t i = 0; i < ns.n && rc >= 0; i++) {
		hid_t c;
		char *cpath = path_join(npath, ns.v[i]);
		if (!cpath) {
			rc = oom(L, npath);
			break;
		}
		rc = open_member(L, ng, npath, ns.v[i], H5I_GROUP, &c);
		if (rc >= 0) {
			/* Count first so a failing member is still freed. */
			(*count)++;
			rc = fn(L, c, cpath, ns.v[i], arg, i);
			H5Oclose(c);
		}
		free(cpath);
	}
out_names:
	names_free(&ns);
out_group:
	H5Oclose(ng);
out_path:
	free(npath);
	return rc;
}

/* ---- group level: real device groups, or a sensor placed directly
 * under the host (perun does that for DeviceType.NODE sensors,
 * monitoring/subprocess.py createNode). */

static int alloc_sensors(void *arg, size_t n)
{
	struct perun_group *gr = arg;
	gr->sensors = calloc(n, sizeof *gr->sensors);
	return gr->sensors ? 0 : -1;
}

static int sensor_fn(struct ld *L, hid_t g, const char *path, const char *name, void *arg, size_t i)
{
	struct perun_group *gr = arg;
	return load_sensor(L, g, path, name, &gr->sensors[i]);
}

static int load_group(struct ld *L, hid_t g, const char *path, const char *name, struct perun_group *gr)
{
	double t;
	int rc = attr_num(L, g, path, "type", 1, &t);
	if (rc < 0)
		return rc;
	if (t == NODE_SENSOR) {
		gr->sensors = calloc(1, sizeof *gr->sensors);
		if (!gr->sensors)
			return oom(L, path);
		gr->nsensors = 1;
		rc = load_sensor(L, g, path, name, &gr->sensors[0]);
		gr->name = strdup(gr->sensors[0].device_type && gr->sensors[0].device_type[0]
					  ? gr->sensors[0].device_type
					  : "node");
		return rc < 0 ? rc : gr->name ? 0 : oom(L, path);
	}
	if ((rc = check_type(L, g, path, NODE_DEVICE_GROUP)) < 0)
		return rc;
	if (!(gr->name = strdup(name)))
		return oom(L, path);
	return for_each_node(L, g, path, "nodes", &gr->nsensors, alloc_sensors, sensor_fn, gr);
}

static int alloc_groups(void *arg, size_t n)
{
	struct perun_host *h = arg;
	h->groups = calloc(n, sizeof *h->groups);
	return h->groups ? 0 : -1;
}

static int group_fn(struct ld *L, hid_t g, const char *path, const char *name, void *arg, size_t i)
{
	struct perun_host *h = arg;
	return load_group(L, g, path, name, &h->groups[i]);
}

/* "[0, 1, 2]" (str of a Python list) into ints. */
static int parse_ranks(struct ld *L, const char *path, const char *s, struct perun_host *h)
{
	size_t cap = 1;
	for (const char *q = s; *q; q++)
		cap += *q == ',';
	h->mpi_ranks = calloc(cap, sizeof *h->mpi_ranks);
	if (!h->mpi_ranks)
		return oom(L, path);
	const char *q = s;
	while (*q == ' ')
		q++;
	if (*q++ != '[')
		goto bad;
	while (*q == ' ')
		q++;
	if (*q == ']')
		return q[1] ? fail(L, -EINVAL, path, "attribute 'mpi_ranks' is '%s', expected a list of ranks", s) : 0;
	for (;;) {
		char *end;
		long v = strtol(q, &end, 10);
		if (end == q || v < 0 || v > INT32_MAX || h->nranks >= cap)
			goto bad;
		h->mpi_ranks[h->nranks++] = (int)v;
		q = end;
		while (*q == ' ')
			q++;
		if (*q == ']' && !q[1])
			return 0;
		if (*q++ != ',')
			goto bad;
	}
bad:
	return fail(L, -EINVAL, path, "attribute 'mpi_ranks' is '%s', expected a list of ranks", s);
}

static int load_host(struct ld *L, hid_t g, const char *path, const char *name, struct perun_host *h)
{
	char *ranks = NULL;
	int rc;
	if (!(h->name = strdup(name)))
		return oom(L, path);
	if ((rc = check_type(L, g, path, NODE_HOST)) < 0)
		return rc;
	/* perun's record of a failed run (script raised or exited: the file
	 * is failed_APP.hdf5, its round is named "failed") writes its host
	 * node without mpi_ranks; any other host node must have it. */
	if ((rc = attr_str(L, g, path, "mpi_ranks", !strstr(path, "/nodes/failed/"), &ranks)) < 0)
		return rc;
	rc = ranks ? parse_ranks(L, path, ranks, h) : 0;
	free(ranks);
	if (rc < 0)
		return rc;
	return for_each_node(L, g, path, "nodes", &h->ngroups, alloc_groups, group_fn, h);
}

/* ---- regions ---------------------------------------------------------- */

static int load_region(struct ld *L, hid_t g, const char *path, const char *name, struct perun_region *r)
{
	hid_t rd;
	struct names ns;
	char *rdpath = path_join(path, "raw_data");
	int rc;
	if (!rdpath || !(r->name = strdup(name))) {
		free(rdpath);
		return oom(L, path);
	}
	rc = open_member(L, g, path, "raw_data", H5I_GROUP, &rd);
	if (rc < 0)
		goto out_path;
	rc = list_members(L, rd, rdpath, &ns);
	if (rc < 0)
		goto out_group;
	if (ns.n && !(r->ranks = calloc(ns.n, sizeof *r->ranks))) {
		rc = oom(L, rdpath);
		goto out_names;
	}
	for (size_t i = 0; i < ns.n; i++) {
		struct perun_region_rank *rr = &r->ranks[r->nranks];
		char *end;
		double *ev;
		size_t nev;
		int digits;
		long rank = strtol(ns.v[i], &end, 10);
		if (end == ns.v[i] || *end || rank < 0 || rank > INT32_MAX) {
			rc = fail(L, -EINVAL, rdpath, "member '%s' is not an MPI rank number", ns.v[i]);
			break;
		}
		rc = read_series(L, rd, rdpath, ns.v[i], &ev, &nev, &digits);
		if (rc >= 0 && (rc = check_numbers(L, rdpath, ns.v[i], ev, nev, 1)) < 0)
			free(ev);
		if (rc < 0)
			break;
		rr->rank = (int)rank;
		rr->n = (nev + 1) / 2;
		rr->start_s = malloc((rr->n ? rr->n : 1) * sizeof *rr->start_s);
		rr->stop_s = malloc((rr->n ? rr->n : 1) * sizeof *rr->stop_s);
		r->nranks++;
		if (!rr->start_s || !rr->stop_s) {
			free(ev);
			rc = oom(L, rdpath);
			break;
		}
		/* perun appends a start and a stop per call (api/decorator.py);
		 * an odd count means the run died inside the region. */
		for (size_t k = 0; k < rr->n; k++) {
			rr->start_s[k] = ev[2 * k];
			rr->stop_s[k] = 2 * k + 1 < nev ? ev[2 * k + 1] : NAN;
		}
		free(ev);
	}
out_names:
	names_free(&ns);
out_group:
	H5Oclose(rd);
out_path:
	free(rdpath);
	return rc;
}

static int load_regions(struct ld *L, hid_t g, const char *path, struct perun_round *rd)
{
	hid_t rg;
	struct names ns;
	char *rpath;
	int rc;
	if (!has_member(g, "regions"))
		return 0;
	if (!(rpath = path_join(path, "regions")))
		return oom(L, path);
	rc = open_member(L, g, path, "regions", H5I_GROUP, &rg);
	if (rc < 0)
		goto out_path;
	rc = list_members(L, rg, rpath, &ns);
	if (rc < 0)
		goto out_group;
	if (ns.n && !(rd->regions = calloc(ns.n, sizeof *rd->regions))) {
		rc = oom(L, rpath);
		goto out_names;
	}
	for (size_t i = 0; i < ns.n && rc >= 0; i++) {
		hid_t c;
		char *cpath = path_join(rpath, ns.v[i]);
		if (!cpath) {
			rc = oom(L, rpath);
			break;
		}
		rc = open_member(L, rg, rpath, ns.v[i], H5I_GROUP, &c);
		if (rc >= 0) {
			rd->nregions++;
			rc = load_region(L, c, cpath, ns.v[i], &rd->regions[i]);
			H5Oclose(c);
		}
		free(cpath);
	}
out_names:
	names_free(&ns);
out_group:
	H5Oclose(rg);
out_path:
	free(rpath);
	return rc;
}

/* ---- rounds, multiruns, app ------------------------------------------- */

static int alloc_hosts(void *arg, size_t n)
{
	struct perun_round *r = arg;
	r->hosts = calloc(n, sizeof *r->hosts);
	return r->hosts ? 0 : -1;
}

static int host_fn(struct ld *L, hid_t g, const char *path, const char *name, void *arg, size_t i)
{
	struct perun_round *r = arg;
	return load_host(L, g, path, name, &r->hosts[i]);
}

static int load_round(struct ld *L, hid_t g, const char *path, const char *name, struct perun_round *r)
{
	int rc;
	if (!(r->id = strdup(name)))
		return oom(L, path);
	if ((rc = check_type(L, g, path, NODE_RUN)) < 0)
		return rc;
	if ((rc = for_each_node(L, g, path, "nodes", &r->nhosts, alloc_hosts, host_fn, r)) < 0)
		return rc;
	return load_regions(L, g, path, r);
}

static int alloc_rounds(void *arg, size_t n)
{
	struct perun_multirun *m = arg;
	m->rounds = calloc(n, sizeof *m->rounds);
	return m->rounds ? 0 : -1;
}

static int round_fn(struct ld *L, hid_t g, const char *path, const char *name, void *arg, size_t i)
{
	struct perun_multirun *m = arg;
	return load_round(L, g, path, name, &m->rounds[i]);
}

/* perun switched its sample and region clock from time.time_ns() to
 * time.perf_counter_ns() in 1.0 (docs/perun-format.md). */
static enum perun_clock clock_of_version(const char *v)
{
	char *end;
	long major = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return PERUN_CLOCK_UNKNOWN;
	return major >= 1 ? PERUN_CLOCK_MONOTONIC : PERUN_CLOCK_REALTIME;
}

/* 1 for a perun version before 0.9 ("0.7.0"), whose files this reader
 * was never written for (docs/perun-format.md). */
static int older_than_0_9(const char *v)
{
	char *end;
	long major = strtol(v, &end, 10), minor;
	if (end == v || *end != '.')
		return 0;
	minor = strtol(end + 1, NULL, 10);
	return major == 0 && minor < 9;
}

/* A file of an older perun that failed to load: say so after the reason,
 * with what perun 1.0 calls the options its config shows (never a value
 * guessed from them). */
static void explain_old_version(struct ld *L, const struct perun_multirun *m)
{
	char notes[512] = "";
	size_t len = strlen(L->err);
	perun_spelling_config(m, notes, sizeof notes);
	/* One line: the notes' newlines become "; ", the last one goes. */
	for (char *c = notes; (c = strchr(c, '\n'));) {
		if (!c[1] || strlen(notes) + 2 >= sizeof notes) {
			*c = '\0';
			break;
		}
		memmove(c + 2, c + 1, strlen(c + 1) + 1);
		c[0] = ';';
		c[1] = ' ';
	}
	if (len < L->errlen)
		snprintf(L->err + len, L->errlen - len, " (written by perun %s; anchorpost reads the files of perun 0.9 and "
				"1.0%s%s)", m->perun_version, notes[0] ? "; " : "", notes);
}

static const char *const multirun_skip[] = {"type", "app_name", "perun_version", "execution_dt", "n_runs", NULL};

static int load_multirun(struct ld *L, hid_t g, const char *path, const char *name,
			 struct perun_multirun *m)
{
	int rc;
	if (!(m->id = strdup(name)))
		return oom(L, path);
	if ((rc = check_type(L, g, path, NODE_MULTI_RUN)) < 0 ||
	    (rc = attr_str(L, g, path, "app_name", 1, &m->app_name)) < 0 ||
	    (rc = attr_str(L, g, path, "perun_version", 1, &m->perun_version)) < 0 ||
	    (rc = attr_str(L, g, path, "execution_dt", 1, &m->execution_dt)) < 0)
		return rc;
	m->clock = clock_of_version(m->perun_version);
	if ((rc = load_meta(L, g, path, &m->config, &m->nconfig, multirun_skip)) < 0)
		return rc;
	rc = for_each_node(L, g, path, "nodes", &m->nrounds, alloc_rounds, round_fn, m);
	if (rc < 0 && older_than_0_9(m->perun_version))
		explain_old_version(L, m);
	return rc;
}

static int alloc_runs(void *arg, size_t n)
{
	struct perun_file *pf = arg;
	pf->runs = calloc(n, sizeof *pf->runs);
	return pf->runs ? 0 : -1;
}

static int run_fn(struct ld *L, hid_t g, const char *path, const char *name, void *arg, size_t i)
{
	struct perun_file *pf = arg;
	return load_multirun(L, g, path, name, &pf->runs[i]);
}

static int load_file(struct ld *L, hid_t f, struct perun_file *pf)
{
	struct names ns;
	hid_t app;
	char *apath;
	int rc = list_members(L, f, "/", &ns);
	if (rc < 0)
		return rc;
	if (ns.n != 1) {
		rc = fail(L, -EINVAL, "/",
			  "holds %zu top-level objects; perun writes exactly one group named after the app (not a perun file?)",
			  ns.n);
		names_free(&ns);
		return rc;
	}
	apath = path_join("", ns.v[0]);
	pf->app = strdup(ns.v[0]);
	if (!apath || !pf->app) {
		free(apath);
		names_free(&ns);
		return oom(L, "/");
	}
	rc = open_member(L, f, "", ns.v[0], H5I_GROUP, &app);
	names_free(&ns);
	if (rc == 0) {
		rc = check_type(L, app, apath, NODE_APP);
		if (rc == 0)
			rc = for_each_node(L, app, apath, "nodes", &pf->nruns, alloc_runs, run_fn, pf);
		H5Oclose(app);
	}
	free(apath);
	return rc;
}

int perun_load_image(const void *buf, size_t len, struct perun_file *pf, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct ld L = {err, errlen, 0};
	struct hdf5_probe probe;
	hid_t fapl, f;
	int rc;

	memset(pf, 0, sizeof *pf);
	if (errlen)
		err[0] = '\0';
	/* libhdf5 prints a multi-line error stack by default; we report one
	 * line with the HDF5 path instead. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (len == 0) {
		snprintf(err, errlen, "empty file (0 bytes), not HDF5");
		return -EINVAL;
	}
	if ((rc = hdf5_probe_buf(buf, len, &probe, e)) < 0)
		return rc == -ENOENT ? -EINVAL : rc;
	L.max_elems = (uint64_t)len + 4096;
	/* The core driver over the bytes read: libhdf5 never opens the file
	 * (the name below is only a label; no backing store is written). */
	fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 16, 0) < 0 || H5Pset_file_image(fapl, (void *)buf, len) < 0) {
		if (fapl >= 0)
			H5Pclose(fapl);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f = H5Fopen("anchorpost-perun-image", H5F_ACC_RDONLY, fapl);
	H5Pclose(fapl);
	if (f < 0) {
		snprintf(err, errlen, "cannot open as HDF5 (corrupt or truncated file?)");
		return -EINVAL;
	}
	rc = load_file(&L, f, pf);
	H5Fclose(f);
	if (rc < 0)
		perun_free(pf);
	return rc;
}

int perun_read_bytes(const char *path, char **buf, size_t *len, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct hdf5_probe probe;
	struct stat st;
	uint64_t want;
	size_t n = 0;
	char *b;
	int fd, rc;

	*buf = NULL;
	*len = 0;
	/* never blocks on a FIFO; no output of this run may replace it */
	if ((rc = input_file_check(path, INPUT_FILE_REMEMBER, e)))
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int en = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s", en == EINVAL ? "not a regular file" : strerror(en));
		return -en;
	}
	if (st.st_size == 0) {
		close(fd);
		snprintf(err, errlen, "empty file (0 bytes), not HDF5");
		return -EINVAL;
	}
	/* A few small reads decide whether this is HDF5 and how much of it
	 * libhdf5 can address (hdf5_probe.h): a 2 GiB log or sparse file is
	 * refused without being read, and bytes past the superblock's end of
	 * file (a file extended after perun closed it) are never read. */
	if ((rc = hdf5_probe_fd(fd, (uint64_t)st.st_size, &probe, e)) < 0) {
		close(fd);
		return rc == -ENOENT ? -EINVAL : rc;
	}
	if (probe.stored_eof > (uint64_t)st.st_size) {
		close(fd);
		snprintf(err, errlen,
			 "truncated: its HDF5 superblock says the file ends at byte %llu, it has %llu bytes "
			 "(copied in part, or still being written?)",
			 (unsigned long long)probe.stored_eof, (unsigned long long)st.st_size);
		return -EINVAL;
	}
	want = probe.stored_eof;
	if (want > SIZE_MAX - 1 || !(b = malloc((size_t)want + 1))) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (n < want) {
		ssize_t k = read(fd, b + n, (size_t)want - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int en = errno;
			free(b);
			close(fd);
			snprintf(err, errlen, "read failed: %s", strerror(en));
			return -en;
		}
		if (k == 0)
			break; /* shrank since fstat: libhdf5 says truncated */
		n += (size_t)k;
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
}

int perun_load(const char *path, struct perun_file *pf, struct em_error *e)
{
	char *buf;
	size_t len;
	int rc;
	memset(pf, 0, sizeof *pf);
	if ((rc = perun_read_bytes(path, &buf, &len, e)))
		return rc;
	rc = perun_load_image(buf, len, pf, e);
	free(buf);
	return rc;
}

/* ---- freeing and helpers ---------------------------------------------- */

static void free_sensor(struct perun_sensor *s)
{
	free(s->id);
	free(s->device_type);
	for (size_t i = 0; i < s->nmeta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].value);
	}
	free(s->meta);
	free(s->timesteps_s);
	free(s->values);
	free(s->unit);
	free(s->alt_values);
	free(s->alt_unit);
}

void perun_free(struct perun_file *pf)
{
	for (size_t i = 0; i < pf->nruns; i++) {
		struct perun_multirun *m = &pf->runs[i];
		for (size_t j = 0; j < m->nrounds; j++) {
			struct perun_round *r = &m->rounds[j];
			for (size_t k = 0; k < r->nhosts; k++) {
				struct perun_host *h = &r->hosts[k];
				for (size_t g = 0; g < h->ngroups; g++) {
					struct perun_group *gr = &h->groups[g];
					for (size_t s = 0; s < gr->nsensors; s++)
						free_sensor(&gr->sensors[s]);
					free(gr->sensors);
					free(gr->name);
				}
				free(h->groups);
				free(h->mpi_ranks);
				free(h->name);
			}
			free(r->hosts);
			for (size_t k = 0; k < r->nregions; k++) {
				struct perun_region *rg = &r->regions[k];
				for (size_t q = 0; q < rg->nranks; q++) {
					free(rg->ranks[q].start_s);
					free(rg->ranks[q].stop_s);
				}
				free(rg->ranks);
				free(rg->name);
			}
			free(r->regions);
			free(r->id);
		}
		free(m->rounds);
		free(m->id);
		free(m->app_name);
		free(m->perun_version);
		free(m->execution_dt);
		for (size_t k = 0; k < m->nconfig; k++) {
			free(m->config[k].key);
			free(m->config[k].value);
		}
		free(m->config);
	}
	free(pf->runs);
	free(pf->app);
	memset(pf, 0, sizeof *pf);
}

const struct perun_multirun *perun_find_run(const struct perun_file *pf, const char *id)
{
	for (size_t i = 0; i < pf->nruns; i++)
		if (!strcmp(pf->runs[i].id, id))
			return &pf->runs[i];
	return NULL;
}

int perun_sensor_is_power(const struct perun_sensor *s)
{
	return s->unit && !strcmp(s->unit, "W");
}

int perun_sensor_energy_j(const struct perun_sensor *s, double *energy_j)
{
	if (!s->has_energy)
		return -ENOENT;
	*energy_j = s->energy_j;
	return 0;
}

size_t perun_count_power_sensors(const struct perun_file *pf)
{
	size_t n = 0;
	for (size_t i = 0; i < pf->nruns; i++)
		for (size_t j = 0; j < pf->runs[i].nrounds; j++) {
			const struct perun_round *r = &pf->runs[i].rounds[j];
			for (size_t k = 0; k < r->nhosts; k++)
				for (size_t g = 0; g < r->hosts[k].ngroups; g++) {
					const struct perun_group *gr = &r->hosts[k].groups[g];
					for (size_t s = 0; s < gr->nsensors; s++)
						n += perun_sensor_is_power(&gr->sensors[s]);
				}
		}
	return n;
}

const char *perun_metric_name(const char *unit)
{
	static const struct {
		const char *unit, *metric;
	} map[] = {
		{"W", "power"}, {"J", "energy"},    {"%", "utilization"}, {"Hz", "frequency"},
		{"B", "bytes"}, {"B/s", "bandwidth"}, {"s", "time"},
	};
	for (size_t i = 0; unit && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(unit, map[i].unit))
			return map[i].metric;
	return "value";
}
