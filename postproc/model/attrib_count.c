/*
 * attrib_count.c - counts attribution passes (see attrib_count.h).
 */
#include "model/attrib_count.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A run has a few timelines and a few sensors; past the table's end the
 * passes are counted under the last key (the hook still shows "more than
 * once"). */
#define NKEYS 512

static struct {
	char key[192];
	unsigned n;
} keys[NKEYS];
static size_t nkeys;
/* mring attributes its rings in a worker pool (mring.c) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int enabled(void)
{
	const char *v = getenv("ANCHORPOST_DEBUG_ATTRIB");
	return v && *v && strcmp(v, "0");
}

void attrib_count_note(const char *ring, unsigned tid, const char *sensor)
{
	char key[192];
	size_t i;
	if (!enabled())
		return;
	snprintf(key, sizeof key, "%s thread %u sensor %s", ring, tid, sensor ? sensor : "?");
	pthread_mutex_lock(&lock);
	for (i = 0; i < nkeys; i++)
		if (!strcmp(keys[i].key, key))
			break;
	if (i == nkeys && nkeys < NKEYS)
		snprintf(keys[nkeys++].key, sizeof keys[0].key, "%s", key);
	else if (i == nkeys)
		i = NKEYS - 1;
	keys[i].n++;
	pthread_mutex_unlock(&lock);
}

void attrib_count_print(FILE *fp)
{
	if (!enabled())
		return;
	for (size_t i = 0; i < nkeys; i++)
		fprintf(fp, "anchorpost: debug: attributed %s: %u time(s)\n", keys[i].key, keys[i].n);
}
