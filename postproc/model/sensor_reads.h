/*
 * sensor_reads.h - each reading at its own read, not at its round's stamp.
 *
 * perun stamps a round and then reads its sensors; the perun hook times
 * every energy or power read (align.h align_perun_reads).  With those
 * times a sensor's window edges move from the stamps to the reads, before
 * its lag is fitted (sensor_lag.h), which then has only the counter's own
 * staleness left to find.  A sampler preempted between stamp and read
 * reads milliseconds late, at random: a timing error no fitted lag
 * describes.  Reads within 0.5 ms of the median delay are taken at it
 * (the hook lists only the others, to spare the ring).  Window energies only (RAPL counters or window means, whose
 * energy stays exactly what perun measured: a window mean is re-divided by
 * the new window length); NVML's power reads keep their stamps.
 */
#ifndef ANCHORPOST_SENSOR_READS_H
#define ANCHORPOST_SENSOR_READS_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_reader.h"

enum sensor_reads_state {
	SENSOR_READS_NONE = 0, /* not tried: no exact stamps, or a power read */
	SENSOR_READS_TIMED,    /* the windows' edges are the reads */
	SENSOR_READS_ABSENT,   /* the ring holds no timed reads of it (an older hook) */
	SENSOR_READS_MISMATCH, /* its reads do not pair with the stamps: stamps kept */
};

struct sensor_reads {
	enum sensor_reads_state state;
	double p50_s, max_s; /* a read's delay after its stamp (TIMED): median, largest */
	size_t n_late;       /* reads more than 0.5 ms off the median, each at its own time; the rest at the median */
};

struct em_sensor;

/* Move s's readings to its reads, from the hook's marks of sampler pid's
 * round_idx-th round in ev (the ring).  0 (s->reads says what happened),
 * or -ENOMEM. */
int sensor_reads_apply(struct em_sensor *s, const struct ring_event *ev, size_t n, uint32_t pid, size_t round_idx);

/* "cpu_0_package-0 0.011 ms (max 3.900; 2 off it by > 0.5 ms)"; "" unless
 * TIMED. */
void sensor_reads_describe(const struct em_sensor *s, char *buf, size_t cap);

#endif
