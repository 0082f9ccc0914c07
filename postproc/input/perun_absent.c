/* perun_absent.c - why there is no perun file (see perun_absent.h). */
#include "input/perun_absent.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "input/perun_spelling.h"

static void __attribute__((format(printf, 3, 4))) line(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;
	if (len + 2 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(buf);
	buf[len] = '\n';
	buf[len + 1] = '\0';
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT:
		return "SIGINT (Ctrl-C)";
	case SIGTERM:
		return "SIGTERM";
	case SIGKILL:
		return "SIGKILL";
	case SIGHUP:
		return "SIGHUP";
	case SIGSEGV:
		return "SIGSEGV";
	case SIGABRT:
		return "SIGABRT";
	default:
		return NULL;
	}
}

/* The value after --data_out / --data-out in argv, into out ("" if none). */
static void data_out_of(const char *argv, char *out, size_t cap)
{
	static const char *const names[] = {"--data_out", "--data-out"};
	out[0] = '\0';
	for (size_t k = 0; k < 2; k++) {
		const char *p = strstr(argv, names[k]);
		size_t n;
		if (!p)
			continue;
		p += strlen(names[k]);
		if (*p != '=' && *p != ' ')
			continue;
		p++;
		n = strcspn(p, " ");
		snprintf(out, cap, "%.*s", (int)n, p);
		return;
	}
}

/* Did the script perun runs (in its own process) write any anchor of its
 * own?  Not the tools' (phase_set.h's phase_set_is_tool, by name here:
 * perun's MPI calls, anchor's sync pulses, perun's sample stamps). */
static int has_anchors(const struct ringload *rl, uint32_t pid)
{
	char name[600];
	for (size_t i = 0; i < rl->rf.nev; i++) {
		const struct ring_event *e = &rl->rf.ev[i];
		if (e->pid != pid || (e->kind != ANCHOR_KIND_BEGIN && e->kind != ANCHOR_KIND_MARK))
			continue;
		ringload_event_name(e, name, sizeof name);
		if (strncmp(name, "MPI_", 4) && strncmp(name, "anchor.", 7) && strncmp(name, "perun.", 6))
			return 1;
	}
	return 0;
}

static void explain_one(const struct ringload *rl, const struct ring_proc *p, char *buf, size_t cap)
{
	char dout[256], sp[2048] = "";
	const char *sig = p->exit_known && p->exit_signal ? signal_name(p->exit_value) : NULL;
	int script_ran = has_anchors(rl, p->pid);

	data_out_of(p->argv, dout, sizeof dout);
	line(buf, cap, "perun (pid %u: %.300s)", p->pid, p->argv);
	if (!p->exit_known)
		line(buf, cap, "  left no exit record: it was killed (SIGINT with Python's default handler, SIGTERM, SIGKILL) "
			       "or the ring ends before it did; perun 1.0 writes nothing when it is stopped so");
	else if (p->exit_signal)
		line(buf, cap, "  ended by %s%s: perun 1.0 writes nothing when it is stopped so", sig ? sig : "signal",
		     sig ? "" : " (see the exit column of `anchorpost info`)");
	else if (p->exit_value == 1)
		line(buf, cap, "  exited with status 1: what perun 1.0 does, without writing its file, when the script "
			       "raises or calls sys.exit() with a non-zero status (after monitor.queue_timeout, 60 s)");
	else if (p->exit_value == 2)
		line(buf, cap, "  exited with status 2: argparse's, perun did not understand its command line");
	else if (p->exit_value == 0 && script_ran)
		line(buf, cap, "  exited with status 0: it wrote its file into %s%s", dout[0] ? dout
		     : "./perun_results (its default --data_out) in the directory it ran in", dout[0] ? " (its --data_out)" : "");
	else if (p->exit_value == 0)
		line(buf, cap, "  exited with status 0, but no anchor of the script's is in it: it ran no script (perun 1.0 "
			       "exits 0 when the script it was given does not exist)");
	else
		line(buf, cap, "  exited with status %d", p->exit_value);
	if (perun_spelling_argv(p->argv, NULL, sp, sizeof sp)) {
		for (char *s = sp, *e; *s; s = e + 1) {
			e = strchr(s, '\n');
			if (!e)
				break;
			*e = '\0';
			line(buf, cap, "  %s", s);
		}
	}
}

size_t perun_absent_explain(const struct ringload *rl, char *buf, size_t cap)
{
	size_t found = 0;
	for (size_t i = 0; i < rl->procs.n; i++) {
		const struct ring_proc *p = &rl->procs.p[i];
		/* perun's own process: not the images it exec'd away from (a
		 * pyenv shim), not its forked children (its sampler inherits
		 * its command line). */
		if (p->execed || p->forked || !perun_spelling_is_monitor(p->argv))
			continue;
		explain_one(rl, p, buf, cap);
		found++;
	}
	if (!found)
		line(buf, cap, "the ring holds no `perun monitor` process: perun did not run under libanchor for this ring "
			       "(LD_PRELOAD=libanchor.so on perun's command line too), or did not run");
	line(buf, cap, "perun 1.0 writes no file when the script raises, ends with sys.exit(N != 0) or is stopped with "
		       "Ctrl-C; `anchorpost record -- python SCRIPT.py` runs it so that it saves in those cases too");
	return found;
}
