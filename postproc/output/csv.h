/*
 * csv.h - RFC 4180 CSV output.
 *
 * Fields are quoted only when they contain ',', '"', CR or LF (or leading/
 * trailing space), with '"' doubled; rows end in "\n".  Numbers use the C
 * locale and enough digits to round-trip where it matters.
 */
#ifndef ANCHORPOST_CSV_H
#define ANCHORPOST_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct csv {
	FILE *fp;
	int nfield; /* fields written in the current row */
};

/* Start writing CSV to fp. */
void csv_init(struct csv *c, FILE *fp);

/* Write a header row from a NULL-terminated list of names. */
void csv_header(struct csv *c, const char *const *names);

/* A string field (NULL writes an empty field). */
void csv_str(struct csv *c, const char *s);

/* A string field of n bytes. */
void csv_strn(struct csv *c, const char *s, size_t n);

/* Integer fields. */
void csv_i64(struct csv *c, int64_t v);
void csv_u64(struct csv *c, uint64_t v);

/* A floating-point field with `prec` significant digits ("%.*g");
 * NaN writes an empty field. */
void csv_f64(struct csv *c, double v, int prec);

/* A floating-point field with `dec` digits after the point ("%.*f"). */
void csv_fixed(struct csv *c, double v, int dec);

/* An empty field. */
void csv_empty(struct csv *c);

/* End the row. */
void csv_row_end(struct csv *c);

#endif
