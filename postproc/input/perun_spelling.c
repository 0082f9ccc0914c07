/* perun_spelling.c - perun's older spellings, explained (see perun_spelling.h). */
#include "input/perun_spelling.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An option perun 1.0 does not have (or not there), and what it is now. */
struct old_opt {
	const char *name;  /* "--sampling_rate" */
	int value;         /* takes a value */
	const char *since; /* the first perun without it: "0.8" */
	const char *now;   /* perun 1.0's spelling; "" when it has none */
	const char *why;   /* what became of it, when now is "" */
};

/* Options of `perun monitor` that perun 1.0 spells differently. */
static const struct old_opt renamed[] = {
	{"--sampling_rate", 1, "0.8", "--sampling_period", NULL},
	{"--bench_rounds", 1, "0.4", "--rounds", NULL},
	{"--bench_warmup_rounds", 1, "0.4", "--warmup_rounds", NULL},
	{"--emissions_factor", 1, "0.5", "--emission_factor", NULL},
	{"--bench", 0, "0.4", "--format bench", NULL},
	{"--raw", 0, "0.4", "", "perun 1.0 always writes its HDF5 file"},
};

/* Options perun <= 0.3 took before `monitor` (click, on the group), with
 * whether they take a value. */
static const struct {
	const char *name;
	int value;
} before_monitor_03[] = {
	{"--format", 1}, {"--sampling_rate", 1}, {"--data_out", 1}, {"--raw", 0}, {"--app_name", 1},
	{"--run_id", 1}, {"--pue", 1}, {"--emissions_factor", 1}, {"--price_factor", 1}, {"--bench", 0},
	{"--bench_rounds", 1}, {"--bench_warmup_rounds", 1},
};

/* perun 1.0's own options (api/cli.py) that take a value: to find where
 * the options end and the script begins.  Flags: -b/--binary, --version. */
static const char *const value_opts_10[] = {
	"-c", "--configuration", "-l", "--log-lvl", "--log_lvl", "--log-file", "--log_file", "-n", "--app-name",
	"--app_name", "-i", "--run-id", "--run_id", "-f", "--format", "--data-out", "--data_out", "--sampling-period",
	"--sampling_period", "--queue-timeout", "--queue_timeout", "--include-sensors", "--include_sensors",
	"--include-backends", "--include_backends", "--exclude-sensors", "--exclude_sensors", "--exclude-backends",
	"--exclude_backends", "--power-overhead", "--power_overhead", "--pue", "--price-factor", "--price_factor",
	"--price-unit", "--price_unit", "--emission-factor", "--emission_factor", "--rounds", "--warmup-rounds",
	"--warmup_rounds", "--bench-metrics", "--bench_metrics", "--region-metrics", "--region_metrics",
	"--live-callback-files", "--live_callback_files",
	/* tools/emulated_power's wrapper (anchor_emul.perun), before `monitor` */
	"--powercap", NULL,
};
static const char *const flag_opts_10[] = {"-b", "--binary", "--version", "-h", "--help", "--real", NULL};

/* Config keys of an older perun and what perun 1.0 calls the setting. */
static const struct {
	const char *key, *until, *now;
} old_keys[] = {
	{"monitor.sampling_rate", "0.7", "--sampling_period, config monitor.sampling_period"},
	{"output.raw", "0.3", "nothing: perun 1.0 always writes its HDF5 file"},
	{"benchmarking.bench_enable", "0.3", "--format bench"},
	{"benchmarking.bench_rounds", "0.3", "--rounds, config benchmarking.rounds"},
	{"benchmarking.bench_warmup_rounds", "0.3", "--warmup_rounds, config benchmarking.warmup_rounds"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The words of argv; *n of them, in w (pointers into the copy *store). */
#define MAX_WORDS 128
static size_t split_words(const char *argv, char **store, char *w[MAX_WORDS])
{
	size_t n = 0;
	char *save = NULL, *tok;
	*store = strdup(argv ? argv : "");
	if (!*store)
		return 0;
	for (tok = strtok_r(*store, " \t", &save); tok && n < MAX_WORDS; tok = strtok_r(NULL, " \t", &save))
		w[n++] = tok;
	return n;
}

static int in_list(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && !strncmp(*list, name, len))
			return 1;
	return 0;
}

/* Index of the word after the perun program (perun, .../perun, -m perun,
 * -m anchor_emul.perun), or 0 when argv does not run perun. */
static size_t after_program(char **w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(w[i], '/') ? strrchr(w[i], '/') + 1 : w[i];
		int module = i > 0 && !strcmp(w[i - 1], "-m");
		if (!strcmp(base, "perun") && (module || i == 0 || strchr(w[i], '/') || !strcmp(w[i], "perun")))
			return i + 1;
		if (module && !strcmp(w[i], "anchor_emul.perun"))
			return i + 1;
	}
	return 0;
}

static size_t find_word(char **w, size_t from, size_t n, const char *word)
{
	for (size_t i = from; i < n; i++)
		if (!strcmp(w[i], word))
			return i;
	return n;
}

int perun_spelling_is_monitor(const char *argv)
{
	char *store, *w[MAX_WORDS];
	size_t n = split_words(argv, &store, w), p = after_program(w, n);
	int yes = p && find_word(w, p, n, "monitor") < n;
	free(store);
	return yes;
}

/* Append one formatted line to buf. */
static void __attribute__((format(printf, 3, 4))) add(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;
	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
	len = strlen(buf);
	if (len + 1 < cap) {
		buf[len] = '\n';
		buf[len + 1] = '\0';
	} else {
		buf[cap - 2] = '\n'; /* cut, but still a line */
	}
}

static const struct old_opt *renamed_of(const char *name, size_t len)
{
	for (size_t i = 0; i < NELEM(renamed); i++)
		if (strlen(renamed[i].name) == len && !strncmp(renamed[i].name, name, len))
			return &renamed[i];
	return NULL;
}

/* perun 1.0's spelling of the command: prog words, `monitor`, the
 * options translated (renamed ones renamed, dropped ones dropped), then
 * the script and its arguments. */
struct fixed {
	char text[600];
};

static void fixed_add(struct fixed *f, const char *word)
{
	size_t len = strlen(f->text);
	snprintf(f->text + len, sizeof f->text - len, "%s%s", len ? " " : "", word);
}

/* One option word at w[i] (with its value at w[i + 1] unless "=" holds
 * it); fills the notes and the fixed command, returns the words used. */
static size_t one_option(char **w, size_t i, size_t n, int before, const struct perun_multirun *mr, struct fixed *fx,
			 char *buf, size_t cap, size_t *notes)
{
	const char *eq = strchr(w[i], '=');
	size_t len = eq ? (size_t)(eq - w[i]) : strlen(w[i]);
	const struct old_opt *old = renamed_of(w[i], len);
	int takes = old ? old->value : in_list(value_opts_10, w[i], len);
	const char *val = eq ? eq + 1 : takes && i + 1 < n ? w[i + 1] : NULL;
	size_t used = 1 + (takes && !eq && i + 1 < n);
	const char *period = mr ? perun_config_get(mr, "monitor.sampling_period") : NULL;
	char word[256];

	if (old) {
		char what[192];
		if (old->now[0])
			snprintf(what, sizeof what, "called %s since perun %s", old->now, old->since);
		else
			snprintf(what, sizeof what, "gone since perun %s (%s)", old->since, old->why);
		if (!before && takes && !eq)
			add(buf, cap, "%s %s: %s; perun 1.0 does not know %s and took '%s' for the script to run", w[i],
			    val ? val : "", what, old->name, val ? val : "");
		else if (!before)
			add(buf, cap, "%s: %s; perun 1.0 does not know %s and ignored it", w[i], what, old->name);
		if (!before && !strcmp(old->name, "--sampling_rate") && period)
			add(buf, cap, "this file's samples follow its own config, monitor.sampling_period = %s s, not the %s "
				      "asked for", period, val ? val : "value");
		(*notes)++;
		if (old->now[0]) {
			snprintf(word, sizeof word, "%s", old->now);
			fixed_add(fx, word);
			if (val && takes)
				fixed_add(fx, val);
		}
		return used;
	}
	if (!before && len == strlen("--sampling_period") && !strncmp(w[i], "--sampling_period", len) && val &&
	    atof(val) < 0.1 && atof(val) >= 0) {
		add(buf, cap, "%s %s: perun resets a sampling period below 0.1 s to 1 s%s%s%s", w[i], val,
		    period ? " (this file's config: monitor.sampling_period = " : "", period ? period : "", period ? " s)" : "");
		(*notes)++;
	} else if (!before && w[i][0] == '-' && !takes && !in_list(flag_opts_10, w[i], len)) {
		add(buf, cap, "%.*s: perun 1.0 has no such option and ignored it", (int)len, w[i]);
		(*notes)++;
	}
	fixed_add(fx, w[i]);
	if (used == 2)
		fixed_add(fx, w[i + 1]);
	return used;
}

size_t perun_spelling_argv(const char *argv, const struct perun_multirun *mr, char *buf, size_t cap)
{
	char *store, *w[MAX_WORDS];
	size_t n = split_words(argv, &store, w), p = after_program(w, n), mon, notes = 0, i;
	struct fixed fx = {""};
	char moved[256] = "";

	if (!p || (mon = find_word(w, p, n, "monitor")) == n) {
		free(store);
		return 0;
	}
	for (i = 0; i < p; i++)
		fixed_add(&fx, w[i]);
	/* Before `monitor`: perun 1.0's global options stay there; perun
	 * <= 0.3's monitor options move after it. */
	struct fixed tail = {""};
	for (i = p; i < mon;) {
		const char *eq = strchr(w[i], '=');
		size_t len = eq ? (size_t)(eq - w[i]) : strlen(w[i]), k, used = 1;
		for (k = 0; k < NELEM(before_monitor_03); k++)
			if (strlen(before_monitor_03[k].name) == len && !strncmp(before_monitor_03[k].name, w[i], len))
				break;
		if (k < NELEM(before_monitor_03)) {
			size_t ml = strlen(moved);
			snprintf(moved + ml, sizeof moved - ml, "%s%.*s", ml ? ", " : "", (int)len, w[i]);
			used = one_option(w, i, mon, 1, mr, &tail, buf, cap, &notes);
		} else {
			used = in_list(value_opts_10, w[i], len) && !eq && i + 1 < mon ? 2 : 1;
			fixed_add(&fx, w[i]);
			if (used == 2)
				fixed_add(&fx, w[i + 1]);
		}
		i += used;
	}
	if (moved[0]) {
		add(buf, cap, "%s before 'monitor': perun 0.3 and older took its options there; perun 1.0 takes them after "
			      "'monitor' only (before it, it stops with \"invalid choice\" and records nothing)", moved);
		notes++;
	}
	fixed_add(&fx, "monitor");
	if (tail.text[0])
		fixed_add(&fx, tail.text);
	/* After `monitor`: options up to the script. */
	for (i = mon + 1; i < n && w[i][0] == '-';)
		i += one_option(w, i, n, 0, mr, &fx, buf, cap, &notes);
	for (; i < n; i++)
		fixed_add(&fx, w[i]);
	/* The command as perun 1.0 spells it, when that is another one. */
	struct fixed orig = {""};
	for (i = 0; i < n; i++)
		fixed_add(&orig, w[i]);
	if (notes && strcmp(orig.text, fx.text))
		add(buf, cap, "in perun 1.0's spelling: %s", fx.text);
	free(store);
	return notes;
}

const char *perun_config_get(const struct perun_multirun *mr, const char *key)
{
	for (size_t i = 0; mr && i < mr->nconfig; i++)
		if (!strcmp(mr->config[i].key, key))
			return mr->config[i].value;
	return NULL;
}

size_t perun_spelling_config(const struct perun_multirun *mr, char *buf, size_t cap)
{
	size_t notes = 0;
	for (size_t k = 0; k < NELEM(old_keys); k++) {
		const char *v = perun_config_get(mr, old_keys[k].key);
		if (!v)
			continue;
		add(buf, cap, "its config has %s = %s (perun %s and older; perun 1.0: %s)", old_keys[k].key, v,
		    old_keys[k].until, old_keys[k].now);
		notes++;
	}
	return notes;
}
