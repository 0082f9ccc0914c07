/* run_find.c - a run's files in a directory (see run_find.h). */
#include "input/run_find.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anchors/ring_format.h"
#include "input/pyspy.h"

enum kind { K_RING, K_PERUN, K_PROFILE, K_N };

struct cands {
	char **v[K_N];
	size_t n[K_N];
};

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && !strcmp(s + a - b, tail);
}

static int kind_of(const char *name, int in_perun_dir)
{
	if (ends_with(name, ".hdf5") || ends_with(name, ".h5"))
		return K_PERUN;
	if (in_perun_dir)
		return -1;
	if (ends_with(name, ".ring"))
		return K_RING;
	if (ends_with(name, ".speedscope.json") || ends_with(name, ".chrometrace.json") ||
	    (!strncmp(name, "profile", 7) && (ends_with(name, ".json") || ends_with(name, ".txt"))))
		return K_PROFILE;
	return -1;
}

/* Two rings created by the same process at the same instant on the same
 * host are one ring twice (a copy beside it), not two ranks: 1 then, with
 * their indices in *a, *b.  Unreadable headers are left to the reader. */
static int same_ring(const struct cands *c, size_t *a, size_t *b)
{
	struct anchor_ring_hdr *h = calloc(c->n[K_RING] ? c->n[K_RING] : 1, sizeof *h);
	int found = 0;
	if (!h)
		return 0;
	for (size_t i = 0; i < c->n[K_RING]; i++) {
		int fd = open(c->v[K_RING][i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || pread(fd, &h[i], sizeof h[i], 0) != (ssize_t)sizeof h[i])
			memset(&h[i], 0, sizeof h[i]);
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < c->n[K_RING] && !found; i++)
		for (size_t j = i + 1; j < c->n[K_RING] && !found; j++)
			if (h[i].create_realtime_ns && h[i].create_realtime_ns == h[j].create_realtime_ns &&
			    h[i].creator_pid == h[j].creator_pid && !strncmp(h[i].hostname, h[j].hostname, sizeof h[i].hostname))
				found = 1, *a = i, *b = j;
	free(h);
	return found;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when the JSON file at path is an energy profile anchorpost wrote:
 * the exporter near its start (pyspy_energy.c), or, as older versions
 * wrote it, in its last bytes.  Whatever its name: a report written into
 * the run directory, or its energy.speedscope.json copied there under
 * another name, is no py-spy profile. */
static int written_by_us(const char *path)
{
	static const char tail_mark[] = "\"exporter\":\"" PYSPY_ENERGY_EXPORTER "\"}";
	char buf[1024];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), own = 0;
	if (fd < 0)
		return 0; /* unreadable: left to the reader's own message */
	if ((n = pread(fd, buf, sizeof buf, 0)) > 0)
		own = pyspy_written_by_anchorpost(buf, (size_t)n);
	if (!own && !fstat(fd, &st) && st.st_size > (off_t)sizeof tail_mark) {
		off_t at = st.st_size > 64 ? st.st_size - 64 : 0;
		if ((n = pread(fd, buf, 64, at)) > 0)
			own = memmem(buf, (size_t)n, tail_mark, sizeof tail_mark - 1) != NULL;
	}
	close(fd);
	return own;
}

/* Add the regular files of dir/sub ("" for dir itself) to c; the
 * profiles this tool wrote to f->skipped instead. */
static int scan(const char *dir, const char *sub, struct cands *c, struct run_files *f)
{
	char path[4096];
	DIR *d;
	struct dirent *de;
	snprintf(path, sizeof path, "%s%s%s", dir, *sub ? "/" : "", sub);
	if (!(d = opendir(path)))
		return *sub ? 0 : -errno;
	while ((de = readdir(d))) {
		struct stat st;
		char *full, **nv;
		int k = kind_of(de->d_name, *sub != '\0');
		if (k < 0)
			continue;
		if (asprintf(&full, "%s/%s", path, de->d_name) < 0)
			goto oom;
		if (stat(full, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(full);
			continue;
		}
		if (k == K_PROFILE && ends_with(de->d_name, ".json") && written_by_us(full)) {
			char **ns = realloc(f->skipped, (f->nskipped + 1) * sizeof *ns);
			if (!ns) {
				free(full);
				goto oom;
			}
			f->skipped = ns;
			ns[f->nskipped++] = full;
			continue;
		}
		nv = realloc(c->v[k], (c->n[k] + 1) * sizeof *nv);
		if (!nv) {
			free(full);
			goto oom;
		}
		c->v[k] = nv;
		nv[c->n[k]++] = full;
	}
	closedir(d);
	return 0;
oom:
	closedir(d);
	return -ENOMEM;
}

static void cands_free(struct cands *c)
{
	for (int k = 0; k < K_N; k++) {
		for (size_t i = 0; i < c->n[k]; i++)
			free(c->v[k][i]);
		free(c->v[k]);
	}
}

/* "several rings: a, b; name one with --ring" */
static void several(char *err, size_t errlen, const char *what, const char *opt, const struct cands *c, int k)
{
	size_t len = 0;
	int w = snprintf(err, errlen, "several %s: ", what);
	len = w > 0 ? (size_t)w : 0;
	for (size_t i = 0; i < c->n[k] && len < errlen; i++) {
		w = snprintf(err + len, errlen - len, "%s%s", i ? ", " : "", c->v[k][i]);
		len += w > 0 ? (size_t)w : 0;
	}
	if (len < errlen)
		snprintf(err + len, errlen - len, "; pick one with `anchorpost phases %s FILE` (or report)", opt);
}

int run_find(const char *dir, struct run_files *f, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct cands c;
	int rc;
	memset(f, 0, sizeof *f);
	memset(&c, 0, sizeof c);
	/* perun/: where `record` puts it; perun_results/: perun's own default
	 * --data_out, for a run made by hand in this directory. */
	if ((rc = scan(dir, "", &c, f)) || (rc = scan(dir, "perun", &c, f)) || (rc = scan(dir, "perun_results", &c, f))) {
		snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
		cands_free(&c);
		run_find_free(f);
		return rc;
	}
	for (int k = 0; k < K_N; k++)
		if (c.n[k] > 1)
			qsort(c.v[k], c.n[k], sizeof *c.v[k], cmp_str);
	rc = 0;
	size_t d1 = 0, d2 = 0;
	if (c.n[K_RING] > 1 && same_ring(&c, &d1, &d2))
		snprintf(err, errlen, "several rings of one process (a copy?): %s, %s; pick one with `anchorpost phases "
				      "--ring FILE` (or report)", c.v[K_RING][d1], c.v[K_RING][d2]), rc = -EEXIST;
	else if (c.n[K_PERUN] > 1)
		several(err, errlen, "perun files", "--perun", &c, K_PERUN), rc = -EEXIST;
	else if (c.n[K_PROFILE] > 1)
		several(err, errlen, "py-spy profiles", "--profile", &c, K_PROFILE), rc = -EEXIST;
	else if (!c.n[K_RING] || !c.n[K_PERUN]) {
		snprintf(err, errlen, "no run here: %s", !c.n[K_RING] && !c.n[K_PERUN] ? "no ring (*.ring) and no perun file (*.hdf5)"
							 : !c.n[K_RING] ? "no ring (*.ring) beside the perun file"
									: "no perun file (*.hdf5, here, in perun/ or in perun_results/) beside the ring");
		rc = -ENOENT;
	}
	if (!rc || (rc == -ENOENT && (c.n[K_RING] || c.n[K_PERUN]))) {
		/* Hand over what was found; the caller needs to know a half run. */
		if (c.n[K_RING]) {
			f->rings = c.v[K_RING], f->nrings = c.n[K_RING], f->ring = f->rings[0];
			c.v[K_RING] = NULL, c.n[K_RING] = 0;
		}
		if (c.n[K_PERUN])
			f->perun = c.v[K_PERUN][0], c.n[K_PERUN] = 0;
		if (c.n[K_PROFILE])
			f->profile = c.v[K_PROFILE][0], c.n[K_PROFILE] = 0;
	}
	cands_free(&c);
	return rc;
}

void run_find_free(struct run_files *f)
{
	for (size_t i = 0; i < f->nrings; i++)
		free(f->rings[i]);
	free(f->rings);
	free(f->perun);
	free(f->profile);
	for (size_t i = 0; i < f->nskipped; i++)
		free(f->skipped[i]);
	free(f->skipped);
	memset(f, 0, sizeof *f);
}
