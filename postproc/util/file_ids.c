/*
 * file_ids.c - the files of this run (see file_ids.h).
 */
#include "util/file_ids.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file this run reads or writes: identity by inode when it exists, and
 * by canonical path (an output that does not exist yet has no inode). */
struct known {
	char *raw, *canon;
	dev_t dev;
	ino_t ino;
	int has_id;
	struct known *next;
};

static struct known *g_inputs, *g_outputs;
/* mring loads rings on worker threads */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* realpath(path), or realpath(dirname) + "/" + basename for a path that
 * does not exist yet, or a copy of path; NULL only when out of memory. */
static char *canon_path(const char *path)
{
	char *r = realpath(path, NULL), *dir, *slash, *out;
	const char *base;
	if (r)
		return r;
	dir = strdup(path);
	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = path + (slash - dir) + 1;
		r = realpath(slash == dir ? "/" : dir, NULL);
	} else {
		base = path;
		r = realpath(".", NULL);
	}
	free(dir);
	if (!r)
		return strdup(path);
	if (asprintf(&out, "%s/%s", strcmp(r, "/") ? r : "", base) < 0)
		out = NULL;
	free(r);
	return out;
}

/* 0 or -ENOMEM (nothing remembered). */
static int remember(struct known **list, const char *path, const struct stat *st)
{
	struct known *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	k->raw = strdup(path);
	k->canon = canon_path(path);
	if (!k->raw || !k->canon) {
		free(k->raw);
		free(k->canon);
		free(k);
		return -ENOMEM;
	}
	if (st) {
		k->dev = st->st_dev;
		k->ino = st->st_ino;
		k->has_id = 1;
	}
	k->next = *list;
	*list = k;
	return 0;
}

static const char *find(const struct known *list, const char *path, const struct stat *st)
{
	char *canon = NULL;
	const char *hit = NULL;
	for (const struct known *k = list; k && !hit; k = k->next) {
		if (st && k->has_id && k->dev == st->st_dev && k->ino == st->st_ino) {
			hit = k->canon ? k->canon : "(input)";
			break;
		}
		if (!canon)
			canon = canon_path(path);
		if (canon && k->canon && strcmp(canon, k->canon) == 0)
			hit = k->canon;
	}
	free(canon);
	return hit;
}

int file_ids_note_input(const char *path, const struct stat *st)
{
	const char *out;
	int rc = 0;
	pthread_mutex_lock(&g_lock);
	out = find(g_outputs, path, st);
	if (!out)
		rc = remember(&g_inputs, path, st);
	pthread_mutex_unlock(&g_lock);
	return out ? -EEXIST : rc;
}

const char *file_ids_same_input(const char *path, const struct stat *st)
{
	const char *hit;
	pthread_mutex_lock(&g_lock);
	hit = find(g_inputs, path, st); /* entries are never freed: the pointer stays valid */
	pthread_mutex_unlock(&g_lock);
	return hit;
}

void file_ids_note_output(const char *path, const struct stat *st)
{
	pthread_mutex_lock(&g_lock);
	(void)remember(&g_outputs, path, st); /* lost: only a later input check */
	pthread_mutex_unlock(&g_lock);
}

void file_ids_forget_output(const char *path)
{
	pthread_mutex_lock(&g_lock);
	for (struct known **p = &g_outputs; *p; p = &(*p)->next) {
		if ((*p)->raw && strcmp(path, (*p)->raw) == 0) {
			struct known *k = *p;
			*p = k->next;
			free(k->raw);
			free(k->canon);
			free(k);
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
}
