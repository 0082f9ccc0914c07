/*
 * pyspy_energy.c - write an energy-weighted speedscope file from a py-spy
 * model (pyspy.h): the same stacks, one weight in joules per sample.
 * speedscope has no "joules" unit, so the unit is "none" and the profile
 * names say what the numbers are.
 */
#include "output/pyspy_energy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string; bytes that are not UTF-8 (raw input is not validated)
 * become U+FFFD so the output always parses. */
static void json_str(FILE *fp, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	putc('"', fp);
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t l;
		if (c == '"' || c == '\\') {
			putc('\\', fp);
			putc(c, fp);
			i++;
		} else if (c < 0x20) {
			fprintf(fp, "\\u%04x", c);
			i++;
		} else if ((l = utf8_len(s + i, n - i)) == 0) {
			fputs("\\ufffd", fp);
			i++;
		} else {
			fwrite(s + i, 1, l, fp);
			i += l;
		}
	}
	putc('"', fp);
}

/* Sample indices grouped by thread, each thread's order kept: thread t's
 * are order[start[t] .. start[t + 1]).  0 or -ENOMEM. */
static int group_by_thread(const struct pyspy_profile *p, uint32_t **order, uint32_t **start)
{
	uint32_t *o = malloc((p->nsamples ? p->nsamples : 1) * sizeof *o);
	uint32_t *st = calloc((size_t)p->nthreads + 1, sizeof *st);
	uint32_t *fill = calloc((size_t)p->nthreads + 1, sizeof *fill);
	*order = o;
	*start = st;
	if (!o || !st || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		st[p->samples[i].thread + 1]++;
	for (uint32_t t = 0; t < p->nthreads; t++)
		st[t + 1] += st[t];
	for (size_t i = 0; i < p->nsamples; i++) {
		uint32_t t = p->samples[i].thread;
		o[st[t] + fill[t]++] = (uint32_t)i;
	}
	free(fill);
	return 0;
}

static void write_frames(const struct pyspy_profile *p, FILE *fp)
{
	/* The exporter first: input/run_find.c tells this file from py-spy's
	 * own by its first bytes, so a report left in a run directory is
	 * never taken for the run's profile. */
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"" PYSPY_ENERGY_EXPORTER
	      "\",\"shared\":{\"frames\":[", fp);
	for (uint32_t f = 0; f < p->frames.n; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		fputs(f ? ",{\"name\":" : "{\"name\":", fp);
		json_str(fp, fr->name);
		if (fr->file) {
			fputs(",\"file\":", fp);
			json_str(fp, fr->file);
		}
		if (fr->line >= 0)
			fprintf(fp, ",\"line\":%d", fr->line);
		putc('}', fp);
	}
	fputs("]},\"profiles\":[", fp);
}

/* One thread's sampled profile: its samples idx[0 .. n) in order.
 * *frames / *cap: a stack buffer grown as needed.  0 or -ENOMEM. */
static int write_thread(const struct pyspy_profile *p, uint32_t t, const uint32_t *idx, uint32_t n,
			const double *weight_j, FILE *fp, uint32_t **frames, uint32_t *cap)
{
	double total = 0;
	char pname[512];
	for (uint32_t k = 0; k < n; k++)
		total += isnan(weight_j[idx[k]]) ? 0 : weight_j[idx[k]];
	snprintf(pname, sizeof pname, "%s (joules)", p->threads[t].profile ? p->threads[t].profile : "");
	fputs(t ? ",{\"type\":\"sampled\",\"name\":" : "{\"type\":\"sampled\",\"name\":", fp);
	json_str(fp, pname);
	fprintf(fp, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%.17g,\"samples\":[", total);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t node = p->samples[idx[k]].stack;
		uint32_t depth = p->stacks.v[node].depth;
		if (depth > *cap) {
			uint32_t *nf = realloc(*frames, (size_t)depth * sizeof *nf);
			if (!nf)
				return -ENOMEM;
			*frames = nf;
			*cap = depth;
		}
		lookup_stack_frames(p, node, *frames, *cap);
		fputs(k ? ",[" : "[", fp);
		for (uint32_t d = 0; d < depth; d++)
			fprintf(fp, d ? ",%u" : "%u", (*frames)[d]);
		putc(']', fp);
	}
	fputs("],\"weights\":[", fp);
	for (uint32_t k = 0; k < n; k++) {
		double w = weight_j[idx[k]];
		fprintf(fp, k ? ",%.17g" : "%.17g", isnan(w) ? 0.0 : w);
	}
	fputs("]}", fp);
	return 0;
}

int pyspy_write_energy_speedscope(const struct pyspy_profile *p, const double *weight_j, FILE *fp,
				  const char *name)
{
	uint32_t *order = NULL, *start = NULL, *frames = NULL, cap = 0;
	int rc;

	for (size_t i = 0; i < p->nsamples; i++)
		if (weight_j[i] < 0)
			return -EINVAL;
	if ((rc = group_by_thread(p, &order, &start)))
		goto out;
	write_frames(p, fp);
	for (uint32_t t = 0; t < p->nthreads && !rc; t++)
		rc = write_thread(p, t, order + start[t], start[t + 1] - start[t], weight_j, fp, &frames, &cap);
	if (rc)
		goto out;
	fputs("],\"name\":", fp);
	json_str(fp, name ? name : "energy (joules)");
	fprintf(fp, ",\"activeProfileIndex\":%s}\n", p->nthreads ? "0" : "null");
	if (ferror(fp))
		rc = -EIO;
out:
	free(order);
	free(start);
	free(frames);
	return rc;
}
