/*
 * test_csv.c - output/csv.c against RFC 4180 as csv.h promises it: which
 * fields are quoted (comma, quote, CR, LF, leading or trailing space) and
 * how ('"' doubled), NULL and empty fields, numbers (NaN empty, 17 digits
 * round-trip, extremes of the integer types), rows.  Every written file
 * is also read back by a small strict RFC 4180 reader written here, so a
 * field that breaks the row structure fails even where the expected text
 * was mistyped.  Exits non-zero when a check fails.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/csv.h"

#include "unit_check.h"

static char *buf;
static size_t len;
static FILE *fp;
static struct csv c;

static void start(void)
{
	fp = open_memstream(&buf, &len);
	if (!fp) {
		perror("open_memstream");
		exit(2);
	}
	csv_init(&c, fp);
}

/* Close the stream and compare with want; the text stays in buf. */
static void expect(const char *want, const char *what)
{
	fclose(fp);
	CHECK(len == strlen(want) && !memcmp(buf, want, len), "%s:\n  got  [%.*s]\n  want [%s]", what, (int)len,
	      buf, want);
}

/* Strict RFC 4180 read of field `field` of row `row` of buf into out;
 * -1 if the text is not valid CSV or has no such field. */
static int read_field(size_t row, size_t field, char *out, size_t cap)
{
	size_t r = 0, f = 0, o = 0, i = 0;
	while (i < len) {
		int quoted = buf[i] == '"';
		o = 0;
		if (quoted) {
			for (i++;; i++) {
				if (i >= len)
					return -1; /* unterminated quote */
				if (buf[i] == '"') {
					if (i + 1 < len && buf[i + 1] == '"')
						i++;
					else
						break;
				}
				if (r == row && f == field && o + 1 < cap)
					out[o++] = buf[i];
			}
			i++;
			if (i < len && buf[i] != ',' && buf[i] != '\n')
				return -1; /* text after the closing quote */
		} else {
			for (; i < len && buf[i] != ',' && buf[i] != '\n'; i++) {
				if (buf[i] == '"' || buf[i] == '\r')
					return -1; /* must have been quoted */
				if (r == row && f == field && o + 1 < cap)
					out[o++] = buf[i];
			}
		}
		if (r == row && f == field) {
			out[o] = '\0';
			return 0;
		}
		if (i < len && buf[i] == '\n')
			r++, f = 0;
		else
			f++;
		i++;
	}
	return -1;
}

static void test_quoting(void)
{
	static const char *const fields[] = {
		"plain", "a,b", "say \"hi\"", "two\nlines", "cr\rhere", " lead", "trail ", "in side", "", "\"", ",",
	};
	static const char *const want_text[] = {
		"plain", "\"a,b\"", "\"say \"\"hi\"\"\"", "\"two\nlines\"", "\"cr\rhere\"", "\" lead\"", "\"trail \"",
		"in side", "", "\"\"\"\"", "\",\"",
	};
	size_t n = sizeof fields / sizeof fields[0];
	for (size_t k = 0; k < n; k++) {
		char want[64], back[64];
		start();
		csv_str(&c, "x");
		csv_str(&c, fields[k]);
		csv_str(&c, "y");
		csv_row_end(&c);
		snprintf(want, sizeof want, "x,%s,y\n", want_text[k]);
		expect(want, fields[k]);
		CHECK(read_field(0, 1, back, sizeof back) == 0 && !strcmp(back, fields[k]),
		      "field %zu does not read back as itself", k);
		CHECK(read_field(0, 2, back, sizeof back) == 0 && !strcmp(back, "y"), "field %zu shifts the row", k);
		free(buf);
	}
	/* csv_strn: exactly n bytes (no terminator needed), quoting on those. */
	start();
	csv_strn(&c, "ab,cd", 2);
	csv_strn(&c, "ab,cd", 5);
	csv_strn(&c, "", 0);
	csv_str(&c, NULL);
	csv_row_end(&c);
	expect("ab,\"ab,cd\",,\n", "csv_strn and NULL");
	free(buf);
}

static void test_numbers(void)
{
	char back[64];
	start();
	csv_f64(&c, NAN, 6);
	csv_f64(&c, 0.1, 17);
	csv_f64(&c, 1.0 / 3, 6);
	csv_f64(&c, -0.0, 6);
	csv_f64(&c, 1e-300, 6);
	csv_fixed(&c, NAN, 3);
	csv_fixed(&c, 2.5, 3);
	csv_fixed(&c, -1234.56789, 2);
	csv_row_end(&c);
	expect(",0.10000000000000001,0.333333,-0,1e-300,,2.500,-1234.57\n", "floating point");
	CHECK(read_field(0, 1, back, sizeof back) == 0 && strtod(back, NULL) == 0.1, "0.1 does not round-trip");
	free(buf);

	start();
	csv_i64(&c, INT64_MIN);
	csv_i64(&c, -1);
	csv_u64(&c, UINT64_MAX);
	csv_u64(&c, 0);
	csv_empty(&c);
	csv_row_end(&c);
	expect("-9223372036854775808,-1,18446744073709551615,0,\n", "integers");
	free(buf);
}

static void test_rows(void)
{
	static const char *const cols[] = {"t_s", "phase", "energy_j", NULL};
	char back[64];
	start();
	csv_header(&c, cols);
	csv_f64(&c, 1.5, 6);
	csv_str(&c, "a,b");
	csv_f64(&c, NAN, 6);
	csv_row_end(&c);
	csv_row_end(&c); /* an empty row: a lone newline, no separator carried over */
	csv_i64(&c, 7);
	csv_row_end(&c);
	expect("t_s,phase,energy_j\n1.5,\"a,b\",\n\n7\n", "header and rows");
	CHECK(read_field(1, 1, back, sizeof back) == 0 && !strcmp(back, "a,b"), "row 1 field 1");
	CHECK(read_field(3, 0, back, sizeof back) == 0 && !strcmp(back, "7"), "row 3 field 0");
	free(buf);
	/* An empty header list: just the row end. */
	static const char *const none[] = {NULL};
	start();
	csv_header(&c, none);
	expect("\n", "empty header");
	free(buf);
}

int main(void)
{
	test_quoting();
	test_numbers();
	test_rows();
	if (failures) {
		printf("test_csv: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_csv: all checks passed\n");
	return 0;
}
