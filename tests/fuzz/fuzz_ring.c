/*
 * fuzz_ring.c - libFuzzer target for the ring reader (untrusted files).
 * fuzz-sources: anchors/ring_reader.c anchors/ring_clock.c anchors/ring_procs.c
 * fuzz-seeds: tests/fuzz/seeds/ring
 * Seeds: real rings written by the marker victim (threads, a wrapped ring,
 * forks with an exec: PROC_START continuations), 1024 slots each.
 */
#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_clock.h"
#include "anchors/ring_procs.h"
#include "anchors/ring_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ring_file rf = {0};
	char err[256];
	if (ring_reader_parse(data, size, &rf, err, sizeof err) == 0) {
		struct ring_clock c;
		struct ring_procs p;
		if (ring_clock_build(rf.ev, rf.nev, &c) == 0)
			ring_clock_free(&c);
		if (ring_procs_build(rf.ev, rf.nev, rf.hdr.hostname, &p) == 0)
			ring_procs_free(&p);
	}
	ring_reader_free(&rf);
	return 0;
}
