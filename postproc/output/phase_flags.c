/* phase_flags.c - the phase table's flags as text (see phase_flags.h). */
#include "output/phase_flags.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void phase_flags_text(unsigned f, char *buf, size_t cap)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{PHASE_FLAG_TOOL, "tool"},
		{PHASE_FLAG_ABOVE_MAX, "power-above-window-max"},
		{PHASE_FLAG_POINT_ABOVE_MAX, "point-above-window-max"},
		{PHASE_FLAG_ZERO_UNDER_LOAD, "zero-power-under-load"},
		{PHASE_FLAG_WIDE, "interval-wider-than-total"},
		{PHASE_FLAG_GLITCH, "sensor-glitch"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (!(f & names[i].bit))
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%s", l ? ";" : "", names[i].name);
	}
}

void phase_flags_attrib_text(unsigned f, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (f & ATTRIB_FLAG_UNIDENTIFIABLE)
		strncat(buf, "unidentifiable;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_AT_ZERO)
		strncat(buf, "at-zero;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_NO_TIME)
		strncat(buf, "no-time-in-span;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_REMAINDER)
		strncat(buf, "remainder;", cap - strlen(buf) - 1);
	if (buf[0])
		buf[strlen(buf) - 1] = '\0';
}

/* Every name the flags column holds, its code and what it means.  The
 * first four are attrib's (attrib.h ATTRIB_FLAG_*, phase_flags_attrib_text),
 * the others this file's.  A new flag without a line here still gets a
 * mark ('?'), never none. */
static const struct {
	const char *name;
	char code;
	const char *legend;
} flag_codes[] = {
	{"unidentifiable", 'U', "its power cannot be told apart from another phase's (they recur in lock-step with "
				"perun's windows): the interval is [0, total]"},
	{"at-zero", 'Z', "the fit held its power at 0 W"},
	{"no-time-in-span", 'T', "none of its time is on the attributed timeline inside perun's span: no joules"},
	{"remainder", 'R', "perun's total minus the phases, not a fit of its own"},
	{"power-above-window-max", 'A', "even its interval's low end exceeds every perun window around it"},
	{"point-above-window-max", 'a', "its estimate exceeds every perun window around it"},
	{"zero-power-under-load", 'L', "0 J while every window around it shows power"},
	{"interval-wider-than-total", 'W', "its 95% interval is wider than the group's total: it says nothing"},
	{"sensor-glitch", 'G', "a sensor reading in its time was impossible and repaired: part of its joules is the "
			       "repair's"},
};
#define N_FLAG_CODES (sizeof flag_codes / sizeof flag_codes[0])
/* Bit of used for a name without a code. */
#define FLAG_CODE_UNKNOWN (1u << N_FLAG_CODES)

void phase_flags_codes(const char *flags, char *buf, size_t cap, unsigned *used)
{
	size_t n = 0;
	const char *s = flags;
	buf[0] = '\0';
	while (s && *s) {
		const char *e = strchr(s, ';');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char code = '?';
		unsigned bit = FLAG_CODE_UNKNOWN;
		if (len == 4 && !strncmp(s, "tool", 4)) {
			s = e ? e + 1 : NULL;
			continue; /* hidden rows: the table's "hidden:" line says it */
		}
		for (size_t i = 0; i < N_FLAG_CODES; i++)
			if (strlen(flag_codes[i].name) == len && !strncmp(s, flag_codes[i].name, len)) {
				code = flag_codes[i].code;
				bit = 1u << i;
			}
		*used |= bit;
		if (n + 1 < cap && !memchr(buf, code, n)) {
			buf[n++] = code;
			buf[n] = '\0';
		}
		s = e ? e + 1 : NULL;
	}
}

void phase_flags_legend(FILE *tty, unsigned used)
{
	const char *sep = "";
	if (!used)
		return;
	fprintf(tty, "flags (column flags of phases.csv): ");
	for (size_t i = 0; i < N_FLAG_CODES; i++)
		if (used & (1u << i)) {
			fprintf(tty, "%s%c %s = %s", sep, flag_codes[i].code, flag_codes[i].name, flag_codes[i].legend);
			sep = "; ";
		}
	if (used & FLAG_CODE_UNKNOWN)
		fprintf(tty, "%s? = a flag this table has no letter for: see phases.csv", sep);
	fprintf(tty, "\n");
}

void phase_flags_legend_short(unsigned used, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i <= N_FLAG_CODES && n < cap; i++) {
		int w;
		if (!(used & (1u << i)))
			continue;
		if (i == N_FLAG_CODES)
			w = snprintf(buf + n, cap - n, "%s? other (see phases.csv)", n ? ", " : "");
		else
			w = snprintf(buf + n, cap - n, "%s%c %s", n ? ", " : "", flag_codes[i].code, flag_codes[i].name);
		n += w > 0 ? (size_t)w : 0;
	}
}
