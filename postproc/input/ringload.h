/*
 * ringload.h - load a ring for a subcommand: reader + clock + processes,
 * with errors turned into one line naming the file.
 */
#ifndef ANCHORPOST_RINGLOAD_H
#define ANCHORPOST_RINGLOAD_H

#include "anchors/ring_clock.h"
#include "anchors/ring_procs.h"
#include "anchors/ring_reader.h"
#include "util/diag.h"

struct ringload {
	struct ring_file rf;
	struct ring_clock clock;
	struct ring_procs procs;
};

/* Load path: 0, or a negative errno with a one-line reason in *e, file
 * NULL (the caller names the file).  Warnings (truncated file, clock
 * steps) go to stderr and do not fail. */
int ringload_load(struct ringload *rl, const char *path, struct em_error *e);

/* ringload_load without the warnings: for a reader that loads each ring
 * more than once (mring) and must not repeat them. */
int ringload_read(struct ringload *rl, const char *path, struct em_error *e);

void ringload_close(struct ringload *rl);

/* When the reader found damage (torn records, orphan continuations,
 * records failing their check, slots missing from a short file), describe
 * it in buf ("1 torn record, 3 slots missing") and return 1; else 0.  A
 * failed overlap check then names the ring, not the other file. */
int ringload_damage(const struct ring_file *rf, char *buf, size_t cap);

/* Printable value of an event (text for marks etc.) into buf. */
void ringload_event_name(const struct ring_event *e, char *buf, size_t cap);

#endif
