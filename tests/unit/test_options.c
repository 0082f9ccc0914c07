/*
 * test_options.c - the option parser (postproc/cmd/options.c) on its own:
 * defaults, --name=value, -ovalue, positional arguments kept in order,
 * "--", stop-at-non-option, and the exit status and single line of every
 * usage error (checked in a forked child, since they exit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attrib/attrib.h"
#include "cmd/options.h"

#include "unit_check.h"

static const struct cmd_usage u = {.name = "t", .usage = "[options] ARGS"};

struct vals {
	const char *out, *ring;
	double fit;
	long round;
	unsigned boot;
	int flag;
	enum attrib_choice method;
};

#define TABLE(v)                                                                                        \
	const struct option opts[] = {                                                                   \
		OPT_STRING('o', "out", &(v).out, "FILE", "out"),                                         \
		OPT_STRING(0, "ring", &(v).ring, "RING", "ring"),                                         \
		OPT_DOUBLE(0, "fit-range", &(v).fit, "S", 0, 10, 3, "fit"),                               \
		OPT_LONG(0, "round", &(v).round, "N", 0, 5, 0, "round"),                                  \
		OPT_UINT(0, "boot", &(v).boot, "N", 1, 1000, 200, "boot"),                                \
		OPT_BOOL('f', "flag", &(v).flag, "flag"),                                                 \
		OPT_CHOICE(0, "method", &(v).method, "M", opt_method_choices, "method"),                  \
		OPT_END(),                                                                                 \
	}

/* Parse a NULL-terminated argument list; returns the positional count. */
static int parse(struct vals *v, char **args, unsigned flags)
{
	TABLE(*v);
	int argc = 0;
	memset(v, 0, sizeof *v);
	while (args[argc])
		argc++;
	return options_parse(argc, args, opts, &u, flags);
}

/* Run a parse that must fail in a child: its exit status and stderr. */
static int parse_fails(char **args, char *err, size_t cap)
{
	int pipefd[2], st;
	ssize_t n;
	pid_t pid;
	if (pipe(pipefd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct vals v;
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		parse(&v, args, 0);
		_exit(0);
	}
	close(pipefd[1]);
	{
		size_t len = 0;
		/* stderr is unbuffered: the line comes in several writes. */
		while (len < cap - 1 && (n = read(pipefd[0], err + len, cap - 1 - len)) > 0)
			len += (size_t)n;
		err[len] = '\0';
	}
	close(pipefd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	struct vals v;
	char err[512];

	{
		char *a[] = {"t", NULL};
		CHECK(parse(&v, a, 0) == 0, "no arguments");
		CHECK(v.fit == 3 && v.round == 0 && v.boot == 200 && !v.out && !v.flag, "defaults: fit %g boot %u",
		      v.fit, v.boot);
		CHECK(v.method == ATTRIB_CHOICE_AUTO, "method default");
	}
	{
		char *a[] = {"t", "x", "--fit-range=2.5", "-oout.csv", "y", "--round", "4", "-f", "--method",
			     "perphase", "--boot=1000", NULL};
		int n = parse(&v, a, 0);
		CHECK(n == 2 && !strcmp(a[1], "x") && !strcmp(a[2], "y"), "positionals: %d", n);
		CHECK(v.fit == 2.5 && v.round == 4 && v.boot == 1000 && v.flag, "values");
		CHECK(v.out && !strcmp(v.out, "out.csv"), "-oVALUE");
		CHECK(v.method == ATTRIB_CHOICE_PERPHASE, "--method perphase");
	}
	{
		/* "-" is an argument (stdin/stdout), values may start with '-'. */
		char *a[] = {"t", "-o", "-", "--ring", "-x.ring", "-", NULL};
		int n = parse(&v, a, 0);
		CHECK(n == 1 && !strcmp(a[1], "-") && !strcmp(v.out, "-") && !strcmp(v.ring, "-x.ring"), "dashes");
	}
	{
		char *a[] = {"t", "-f", "--", "--ring", "r", NULL};
		int n = parse(&v, a, 0);
		CHECK(n == 2 && !strcmp(a[1], "--ring") && !v.ring, "-- ends the options");
	}
	{
		char *a[] = {"t", "-f", "python", "x.py", "--ring", "r", NULL};
		int n = parse(&v, a, OPTS_STOP_AT_NON_OPTION);
		CHECK(n == 4 && !strcmp(a[1], "python") && !strcmp(a[3], "--ring") && !v.ring, "stop at non-option");
	}
	{
		static char *bad[][4] = {
			{"t", "--nope", NULL}, {"t", "-Z", NULL},          {"t", "--ring", NULL},
			{"t", "--fit-range", "x", NULL},                {"t", "--fit-range", "11", NULL},
			{"t", "--fit-range", "nan", NULL},              {"t", "--round", "1.5", NULL},
			{"t", "--boot", "0", NULL},                     {"t", "--boot", "99999999999999999999", NULL},
			{"t", "--method", "best", NULL},                {"t", "--flag=1", NULL},
			{"t", "-fx", NULL},
		};
		for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
			int rc = parse_fails(bad[k], err, sizeof err);
			CHECK(rc == 2 && lines(err) == 1 && !strncmp(err, "anchorpost: t: ", 15),
			      "%s %s: exit %d, stderr '%s'", bad[k][1], bad[k][2] ? bad[k][2] : "", rc, err);
		}
	}
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
	return failures != 0;
}
