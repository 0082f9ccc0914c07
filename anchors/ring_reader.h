/*
 * ring_reader.h - read an anchor ring file (format in ring_format.h).
 *
 * Offline reader: validates the header, scans every ticket the ring can
 * still hold, surfaces only records whose commit word, continuations and
 * check hash all agree, and counts everything else.  Events come out
 * sorted by (ts_ns, ticket), so each thread's records keep their order.
 * Also: the per-process table (PROC_START/EXIT/FORK/THREAD records) and
 * the monotonic -> UTC mapping from SYNC records.
 */
#ifndef ANCHOR_RING_READER_H
#define ANCHOR_RING_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ring_format.h"

struct ring_event {
	uint64_t ts_ns;   /* CLOCK_MONOTONIC */
	uint64_t ticket;
	uint64_t value;
	uint32_t pid, tid;
	uint8_t kind, flags;
	uint16_t nstack;
	uint32_t text_len;
	const char *text;        /* NUL-terminated (SYNC: raw payload bytes) */
	const uint64_t *stack;   /* nstack return addresses, innermost first */
	uint16_t ring;           /* index of the ring among those loaded */
};

struct ring_stats {
	uint64_t nslots;
	uint64_t head;              /* tickets handed out */
	uint64_t records;           /* valid records surfaced */
	uint64_t torn;              /* claimed, never committed (writer died mid-write) */
	uint64_t bad_check;         /* committed but payload fails the check hash */
	uint64_t overwritten_slots; /* slots lost to wrap-around (head - nslots) */
	uint64_t orphan_slots;      /* continuations whose head was overwritten */
	uint64_t dropped;           /* records refused in discard mode */
	uint64_t truncated_slots;   /* slots missing from a short file */
	/* With the writers' ledger (feature LEDGER; all 0 without):
	 * written = records + overwritten + dropped + torn + bad_check. */
	int ledger;                 /* 1: the counts below are known */
	uint64_t written;           /* records writers counted, plus dropped */
	uint64_t written_user;      /* of those, MARK/BEGIN/END */
	uint64_t records_user;      /* of records, MARK/BEGIN/END */
	uint64_t overwritten;       /* records lost to wrap-around */
	uint64_t lapped;            /* of those, given up by a stalled writer */
	uint64_t dropped_user;      /* of dropped, MARK/BEGIN/END */
	uint64_t ledger_short;      /* records seen beyond the ledger (damaged header) */
	uint64_t unstored;          /* counted, never stored: writer killed in between */
};

struct ring_file {
	char *path;
	struct anchor_ring_hdr hdr;  /* copy of the header */
	struct ring_event *ev;       /* sorted by (ts_ns, ticket) */
	size_t nev;
	struct ring_stats stats;
	char *arena;                 /* text and stacks of all events */
	size_t arena_len, arena_cap;
};

/* Load and validate a ring.  0, or -errno with a one-line reason in err
 * (without the path: callers prefix it). */
int ring_reader_load(const char *path, struct ring_file *rf, char *err, size_t errlen);

/* Parse a ring held in memory (fuzzing, tests).  Same contract. */
int ring_reader_parse(const void *buf, size_t len, struct ring_file *rf, char *err, size_t errlen);

/* Free everything ring_reader_load allocated. */
void ring_reader_free(struct ring_file *rf);

/* "mark", "begin", ...; "kind17" style for unknown kinds (static buffer). */
const char *ring_kind_name(unsigned kind);

/* SYNC payload decoding; 0 if ev is not a well-formed SYNC. */
int ring_event_sync(const struct ring_event *ev, struct anchor_sync_payload *out);

/* SENSOR record decoding: fills vals[0..n) with the raw counter values and
 * returns n; 0 if ev is not a well-formed SENSOR record or n > max. */
unsigned ring_event_sensor(const struct ring_event *ev, uint64_t *vals, unsigned max);

/* Look up "key=value" in a PROC_START text; returns value (NUL-terminated
 * in the text) or NULL. */
const char *ring_event_field(const struct ring_event *ev, const char *key);

#endif /* ANCHOR_RING_READER_H */
