/*
 * perun_reads.c - when each of perun's sensor reads happened
 * (align.h align_perun_reads).
 *
 * Why: perun stamps a round, then reads its sensors one after another.
 * Idle, a read follows its stamp by 0.05-0.4 ms; a sampler preempted
 * between the two reads later, and its window then holds energy up to a
 * time the stamp does not tell.  The perun hook (python_hooks/anchor/
 * _perun_hook.py) times every energy or power read and ends the round
 * with, per sensor, "perun.read.n <id>" (reads; 0: they did not pair with
 * the stamps), "perun.read.p50 <id>" and "perun.read.max <id>" (delays in
 * ns), and "perun.read <id>" = index << 40 | delay for each read more
 * than 0.5 ms from the median.  A read not listed is taken at the median
 * delay, which it is within 0.5 ms of.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"

#define READ_INDEX_SHIFT 40

/* After "perun.read" + suffix, the sensor id: "perun.read.n cpu" has
 * suffix ".n". */
static int is(const char *text, const char *suffix, const char *id)
{
	size_t ls = strlen("perun.read"), lx = strlen(suffix);
	return !strncmp(text, "perun.read", ls) && !strncmp(text + ls, suffix, lx) && text[ls + lx] == ' ' &&
	       !strcmp(text + ls + lx + 1, id);
}

int align_perun_reads(const struct ring_event *ev, size_t n, uint32_t pid, size_t round_idx, const char *sensor_id,
		      const double *stamp_s, size_t nts, double *delay_s, struct align_reads *out)
{
	long round = -1;
	int have_n = 0, have_p50 = 0, have_max = 0, bad = 0;
	uint64_t count = 0, p50 = 0, max = 0;
	if (!ev || !sensor_id || !delay_s || !out || !nts)
		return -EINVAL;
	*out = (struct align_reads){0};
	for (size_t i = 0; i < n; i++) {
		const struct ring_event *e = &ev[i];
		if (e->pid != pid || e->kind != ANCHOR_KIND_MARK || !(e->flags & ANCHOR_FLAG_VALUE))
			continue;
		if (!strcmp(e->text, "perun.round")) {
			if (++round > (long)round_idx)
				break;
			continue;
		}
		if (round != (long)round_idx || strncmp(e->text, "perun.read", 10))
			continue;
		if (is(e->text, ".n", sensor_id)) {
			have_n = 1;
			count = e->value;
		} else if (is(e->text, ".p50", sensor_id)) {
			have_p50 = 1;
			p50 = e->value;
		} else if (is(e->text, ".max", sensor_id)) {
			have_max = 1;
			max = e->value;
		} else if (is(e->text, "", sensor_id)) {
			/* Reads off the median come after the summary: their delays go in
			 * once the median has filled every slot. */
			uint64_t k = e->value >> READ_INDEX_SHIFT;
			if (!have_p50 || k >= nts) {
				bad = 1;
				continue;
			}
			delay_s[k] = (double)(e->value & ((1ull << READ_INDEX_SHIFT) - 1)) / 1e9;
			out->n_late++;
		}
		if (have_p50 && !out->filled) {
			for (size_t k = 0; k < nts; k++)
				delay_s[k] = (double)p50 / 1e9;
			out->filled = 1;
		}
	}
	if (!have_n)
		return -ENODATA;
	if (bad || count != nts || !have_p50 || !have_max || p50 > max)
		return -EINVAL;
	out->p50_s = (double)p50 / 1e9;
	out->max_s = (double)max / 1e9;
	/* Each read before the next stamp; the last, which has none, within
	 * the longest round (a mutated ring could put it anywhere). */
	double longest = 0;
	for (size_t k = 0; stamp_s && k + 1 < nts; k++) {
		double gap = stamp_s[k + 1] - stamp_s[k];
		if (delay_s[k] >= gap || delay_s[k] > out->max_s)
			return -EINVAL;
		if (gap > longest)
			longest = gap;
	}
	if (stamp_s && nts > 1 && (delay_s[nts - 1] >= longest || delay_s[nts - 1] > out->max_s))
		return -EINVAL;
	return 0;
}
