/* csv.c - RFC 4180 CSV output (see csv.h). */
#include "output/csv.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void csv_init(struct csv *c, FILE *fp)
{
	c->fp = fp;
	c->nfield = 0;
}

static void sep(struct csv *c)
{
	if (c->nfield++)
		putc(',', c->fp);
}

void csv_strn(struct csv *c, const char *s, size_t n)
{
	int quote = 0;
	sep(c);
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == ',' || ch == '"' || ch == '\n' || ch == '\r') {
			quote = 1;
			break;
		}
	}
	if (n && (s[0] == ' ' || s[n - 1] == ' '))
		quote = 1;
	if (!quote) {
		fwrite(s, 1, n, c->fp);
		return;
	}
	putc('"', c->fp);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			putc('"', c->fp);
		putc(s[i], c->fp);
	}
	putc('"', c->fp);
}

void csv_str(struct csv *c, const char *s)
{
	csv_strn(c, s, s ? strlen(s) : 0);
}

void csv_header(struct csv *c, const char *const *names)
{
	for (; *names; names++)
		csv_str(c, *names);
	csv_row_end(c);
}

void csv_i64(struct csv *c, int64_t v)
{
	sep(c);
	fprintf(c->fp, "%" PRId64, v);
}

void csv_u64(struct csv *c, uint64_t v)
{
	sep(c);
	fprintf(c->fp, "%" PRIu64, v);
}

void csv_f64(struct csv *c, double v, int prec)
{
	sep(c);
	if (!isnan(v))
		fprintf(c->fp, "%.*g", prec, v);
}

void csv_fixed(struct csv *c, double v, int dec)
{
	sep(c);
	if (!isnan(v))
		fprintf(c->fp, "%.*f", dec, v);
}

void csv_empty(struct csv *c)
{
	sep(c);
}

void csv_row_end(struct csv *c)
{
	putc('\n', c->fp);
	c->nfield = 0;
}
