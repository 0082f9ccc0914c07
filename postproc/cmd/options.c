/* options.c - the option parser, help and completion (see options.h). */
#include "cmd/options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attrib/attrib.h"
#include "util/diag.h"

const struct opt_choice opt_method_choices[] = {
	{"auto", ATTRIB_CHOICE_AUTO, "split where the sensor gives window energies (RAPL), else perphase (NVML)"},
	{"split", ATTRIB_CHOICE_SPLIT,
	 "each window's measured energy, split among its phases by time share x NNLS-fitted power"},
	{"perphase", ATTRIB_CHOICE_PERPHASE, "integrate phases >= 5 sensor periods, regress shorter ones"},
	{"integrate", ATTRIB_CHOICE_INTEGRATE, "cumulative energy between phase edges"},
	{"regress", ATTRIB_CHOICE_REGRESS, "NNLS power per phase x phase time"},
	{NULL, 0, NULL},
};

void options_usage_error(const struct cmd_usage *u, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s: %s: ", diag_prog, u->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s %s --help')\n", diag_prog, u->name);
	exit(2);
}

static int takes_value(const struct option *o)
{
	return o->type != OPT_BOOL_;
}

/* "--fit-range" or "-o" for messages. */
static const char *opt_name(const struct option *o, char *buf, size_t cap)
{
	if (o->long_name)
		snprintf(buf, cap, "--%s", o->long_name);
	else
		snprintf(buf, cap, "-%c", o->short_name);
	return buf;
}

static void print_choices(FILE *fp, const struct opt_choice *c, const char *sep)
{
	for (size_t k = 0; c[k].name; k++)
		fprintf(fp, "%s%s", k ? sep : "", c[k].name);
}

/* Store arg into o's value, or exit 2 naming the option. */
static void store(const struct option *o, const char *arg, const struct cmd_usage *u)
{
	char nm[64];
	struct em_error err = {0};
	char *end;
	opt_name(o, nm, sizeof nm);
	switch (o->type) {
	case OPT_BOOL_:
		*(int *)o->value = 1;
		return;
	case OPT_STRING_:
		*(const char **)o->value = arg;
		return;
	case OPT_CALLBACK_:
		if (o->cb(o, arg, &err))
			options_usage_error(u, "%s: %s", nm, err.msg[0] ? err.msg : "bad value");
		return;
	case OPT_CHOICE_:
		for (size_t k = 0; o->choices[k].name; k++)
			if (!strcmp(o->choices[k].name, arg)) {
				*(int *)o->value = o->choices[k].value;
				return;
			}
		fflush(stdout);
		fprintf(stderr, "%s: %s: %s must be ", diag_prog, u->name, nm);
		print_choices(stderr, o->choices, ", ");
		fprintf(stderr, "; not '%s' (see '%s %s --help')\n", arg, diag_prog, u->name);
		exit(2);
	case OPT_DOUBLE_:
	case OPT_LONG_:
	case OPT_UINT_: {
		int integral = o->type != OPT_DOUBLE_;
		double v;
		errno = 0;
		if (integral) {
			long long l = strtoll(arg, &end, 10);
			v = (double)l;
		} else {
			v = strtod(arg, &end);
		}
		if (end == arg || *end || errno == ERANGE || !isfinite(v) || v < o->min || v > o->max)
			options_usage_error(u, "%s wants %s in [%g, %g], not '%s'", nm,
					    integral ? "an integer" : "a number", o->min, o->max, arg);
		if (o->type == OPT_DOUBLE_)
			*(double *)o->value = v;
		else if (o->type == OPT_LONG_)
			*(long *)o->value = (long)v;
		else
			*(unsigned *)o->value = (unsigned)v;
		return;
	}
	case OPT_END_:
		break;
	}
}

static void set_defaults(const struct option *opts)
{
	for (const struct option *o = opts; o->type != OPT_END_; o++) {
		if (!o->has_def)
			continue;
		if (o->type == OPT_DOUBLE_)
			*(double *)o->value = o->def;
		else if (o->type == OPT_LONG_)
			*(long *)o->value = (long)o->def;
		else if (o->type == OPT_UINT_)
			*(unsigned *)o->value = (unsigned)o->def;
	}
}

/* One line per option, tab-separated: "--name[ -s]", the value's name
 * ("-" for a flag), its choices (space-separated, or "-"), its kind (flag,
 * string, number, choice): for the completion script and the tests. */
static void list_opts(const struct option *opts)
{
	for (const struct option *o = opts; o->type != OPT_END_; o++) {
		if (!o->help && !o->long_name)
			continue;
		if (o->long_name)
			printf("--%s", o->long_name);
		else
			printf("-%c", o->short_name);
		if (o->short_name && o->long_name)
			printf(" -%c", o->short_name);
		/* "-" for an empty field: bash's read merges adjacent tabs. */
		printf("\t%s\t", !takes_value(o) ? "-" : o->argh ? o->argh : "VALUE");
		if (o->choices)
			print_choices(stdout, o->choices, " ");
		else
			printf("-");
		printf("\t%s\n", o->type == OPT_BOOL_ ? "flag"
				 : o->type == OPT_CHOICE_ ? "choice"
				 : o->type == OPT_DOUBLE_ || o->type == OPT_LONG_ || o->type == OPT_UINT_ ? "number"
										      : "string");
	}
}

void options_help(FILE *fp, const struct option *opts, const struct cmd_usage *u)
{
	fprintf(fp, "usage: %s %s %s\n", diag_prog, u->name, u->usage);
	if (u->about)
		fprintf(fp, "%s", u->about);
	fprintf(fp, "options:\n");
	for (const struct option *o = opts; o->type != OPT_END_; o++) {
		char left[64];
		int n = 0;
		if (!o->help)
			continue;
		if (o->short_name && o->long_name)
			n = snprintf(left, sizeof left, "-%c, --%s", o->short_name, o->long_name);
		else if (o->short_name)
			n = snprintf(left, sizeof left, "-%c", o->short_name);
		else
			n = snprintf(left, sizeof left, "--%s", o->long_name);
		if (takes_value(o) && n > 0 && (size_t)n < sizeof left)
			snprintf(left + n, sizeof left - (size_t)n, " %s", o->argh ? o->argh : "VALUE");
		fprintf(fp, "  %-20s %s", left, o->help);
		/* A default outside the range means "not set" (--pid, --rate). */
		if (o->has_def && o->def >= o->min && o->type == OPT_DOUBLE_)
			fprintf(fp, " [%g]", o->def);
		else if (o->has_def && o->def >= o->min)
			fprintf(fp, " [%.0f]", o->def);
		fprintf(fp, "\n");
		if (o->choices)
			for (size_t k = 0; o->choices[k].name; k++) {
				if (o->choices[k].help)
					fprintf(fp, "  %-20s   %-10s %s\n", "", o->choices[k].name, o->choices[k].help);
				else
					fprintf(fp, "  %-20s   %s\n", "", o->choices[k].name);
			}
	}
	fprintf(fp, "  %-20s %s\n", "-h, --help", "this help");
	if (u->more)
		fprintf(fp, "%s", u->more);
}

static const struct option *find_long(const struct option *opts, const char *name, size_t len)
{
	for (const struct option *o = opts; o->type != OPT_END_; o++)
		if (o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, name, len))
			return o;
	return NULL;
}

static const struct option *find_short(const struct option *opts, int c)
{
	for (const struct option *o = opts; o->type != OPT_END_; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

int options_parse(int argc, char **argv, const struct option *opts, const struct cmd_usage *u, unsigned flags)
{
	int npos = 0, i;
	set_defaults(opts);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct option *o;
		const char *val = NULL;
		char nm[64];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			options_help(stdout, opts, u);
			exit(0);
		}
		if (!strcmp(a, "--list-opts")) {
			list_opts(opts);
			exit(0);
		}
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (flags & OPTS_STOP_AT_NON_OPTION)
				break;
			argv[++npos] = (char *)a;
			continue;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			o = find_long(opts, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
			if (!o)
				options_usage_error(u, "unknown option '%.*s'", eq ? (int)(eq - a) : (int)strlen(a), a);
			if (eq && !takes_value(o))
				options_usage_error(u, "--%s takes no value", o->long_name);
			val = eq ? eq + 1 : NULL;
		} else {
			o = find_short(opts, a[1]);
			if (!o)
				options_usage_error(u, "unknown option '-%c'", a[1]);
			if (a[2] && !takes_value(o))
				options_usage_error(u, "unknown option '%s'", a);
			val = a[2] ? a + 2 : NULL;
		}
		if (takes_value(o) && !val) {
			if (i + 1 >= argc)
				options_usage_error(u, "%s needs a value (%s)", opt_name(o, nm, sizeof nm),
						    o->argh ? o->argh : "VALUE");
			val = argv[++i];
		}
		store(o, val, u);
	}
	/* Whatever follows "--" or the first non-option (STOP mode). */
	for (; i < argc; i++)
		argv[++npos] = argv[i];
	return npos;
}

const char *options_input(const struct cmd_usage *u, int npos, char **argv, const char *flag_val,
			  const char *flag)
{
	if (npos > 1 || (npos == 1 && flag_val))
		options_usage_error(u, "one %s only ('%s' is one too many)", flag + 2, argv[npos]);
	if (npos == 1)
		return argv[1];
	if (!flag_val) {
		char up[32];
		size_t k;
		for (k = 0; flag[k + 2] && k < sizeof up - 1; k++)
			up[k] = (char)(flag[k + 2] >= 'a' && flag[k + 2] <= 'z' ? flag[k + 2] - 32 : flag[k + 2]);
		up[k] = '\0';
		options_usage_error(u, "needs a %s (%s %s, or %s as the only argument)", flag + 2, flag, up, up);
	}
	return flag_val;
}

int options_completion_bash(FILE *fp, const char *const *names, size_t n, int (*list)(const char *name))
{
	fprintf(fp, "# bash completion for anchorpost, generated by 'anchorpost --completion bash'\n"
		    "# from the option tables (postproc/cmd/options.h).  Source it, or install it\n"
		    "# as share/bash-completion/completions/anchorpost.\n"
		    "_anchorpost_opts() {\n"
		    "\tcase $1 in\n");
	for (size_t k = 0; k < n; k++) {
		int st;
		pid_t pid;
		fprintf(fp, "\t%s) cat <<'EOF'\n", names[k]);
		fflush(fp);
		pid = fork();
		if (pid < 0)
			return -errno;
		if (pid == 0) {
			if (fileno(fp) != STDOUT_FILENO && dup2(fileno(fp), STDOUT_FILENO) < 0)
				_exit(1);
			_exit(list(names[k]));
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return -EIO;
		fprintf(fp, "EOF\n\t\t;;\n");
	}
	fprintf(fp, "\tesac\n}\n\n"
		    "_anchorpost() {\n"
		    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		    "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
		    "\t\tCOMPREPLY=($(compgen -W \"");
	for (size_t k = 0; k < n; k++)
		fprintf(fp, "%s ", names[k]);
	fprintf(fp, "--help --version --completion\" -- \"$cur\"))\n"
		    "\t\treturn\n"
		    "\tfi\n"
		    "\tlocal cmd=${COMP_WORDS[1]} name short argh choices kind\n"
		    "\tlocal table; table=$(_anchorpost_opts \"$cmd\")\n"
		    "\t# After an option that takes a value: its choices, a directory or a file.\n"
		    "\twhile IFS=$'\\t' read -r name argh choices kind; do\n"
		    "\t\tshort=${name#* }; name=${name%% *}\n"
		    "\t\t[ \"$short\" = \"$name\" ] && short=\n"
		    "\t\tif [ \"$prev\" = \"$name\" ] || { [ -n \"$short\" ] && [ \"$prev\" = \"$short\" ]; }; then\n"
		    "\t\t\t[ \"$argh\" = - ] && break\n"
		    "\t\t\tif [ \"$choices\" != - ]; then COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\"))\n"
		    "\t\t\telif [ \"$argh\" = DIR ]; then COMPREPLY=($(compgen -d -- \"$cur\"))\n"
		    "\t\t\telse COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
		    "\t\t\treturn\n"
		    "\t\tfi\n"
		    "\tdone <<< \"$table\"\n"
		    "\tif [[ $cur == -* ]]; then\n"
		    "\t\tCOMPREPLY=($(compgen -W \"$(cut -f1 <<< \"$table\" | tr ' ' '\\n') --help\" -- \"$cur\"))\n"
		    "\telse\n"
		    "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		    "\tfi\n"
		    "}\n"
		    "complete -o filenames -F _anchorpost anchorpost\n");
	return ferror(fp) ? -EIO : 0;
}
