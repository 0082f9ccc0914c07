/*
 * cmd_record.c - `anchorpost record [opts] -- COMMAND ARGS...`: record one
 * training run with all three tools, the right way.
 *
 *   OUTDIR/run.ring                     anchors (libanchor.so in every process)
 *   OUTDIR/perun/<name>.hdf5            perun monitoring the run
 *   OUTDIR/profile.chrometrace.json     py-spy sampling it (or .speedscope.json)
 *   OUTDIR/record.json                  what ran, which sensor, pids, exit status
 *   OUTDIR/emulated/                    only with the emulated sensor:
 *       powercap/ (the fake RAPL tree), truth.json (the emulator's ledger)
 *
 * Which process perun wraps.  `perun monitor` runs a Python script inside
 * its own interpreter (exec of the script's code, sampler in a forked
 * child); its --binary mode would run any command but loses the command's
 * exit status and samples in a loop our perun hook does not see.  So:
 *   - `python SCRIPT.py ARGS` (any python/pythonX.Y): perun runs SCRIPT
 *     itself, so the process perun starts IS the training process;
 *   - anything else (python -m PKG, python -c, torchrun, accelerate launch,
 *     mpirun/srun, a shell script): perun runs OUTDIR/.anchor_launch.py,
 *     which runs the command as its child and hands its exit status back
 *     (anchor_emul.perun exits with it).  perun's sensors are the node's
 *     (RAPL, NVML), so what it measures is the same; the training
 *     processes are the launcher's descendants.
 * py-spy attaches to perun's pid with --subprocesses, so it follows every
 * Python descendant (DataLoader workers, torchrun's ranks), and --idle so
 * sample times stay dense.  libanchor.so is preloaded into perun and so into
 * every process below it; all write OUTDIR/run.ring (one ring per node:
 * ranks on other nodes need their own ANCHOR_FILE, docs/mpi.md).
 *
 * Sensor: real RAPL/NVML when readable, else an emulated RAPL driven by the
 * run's CPU activity (tools/emulated_power, python -m anchor_emul.*); then
 * every output says "emulated sensor, not a measurement".
 *
 * Exit status: the script's (anchor_emul.perun keeps it; plain perun only
 * knows 0/1).  See docs/recording.md for the manual equivalent.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "output/outfile.h"
#include "anchor_version.h"
#include "util/diag.h"

#define EMULATED_NOTICE "emulated sensor, not a measurement"

enum sensor { SENSOR_AUTO, SENSOR_EMULATED, SENSOR_REAL };

struct rec {
	const char *outdir_arg;
	char outdir[PATH_MAX];
	double rate_hz;
	double period_s;
	enum sensor sensor;
	int speedscope;
	int subprocesses;
	char **cmd; /* the command line to record, NULL-terminated */
	/* cmd is "python SCRIPT.py ...": perun runs the script in-process.
	 * Else perun runs launch.py (write_launcher), which runs cmd. */
	int in_process;
	char launcher[PATH_MAX];
	char tool[PATH_MAX]; /* cmd[0] found beside the interpreter */
	char python[PATH_MAX];
	char pyspy[PATH_MAX];
	char libanchor[PATH_MAX]; /* the libanchor.so the run preloads */
	char emuldir[PATH_MAX]; /* "" when tools/emulated_power is not found */
	char profile[PATH_MAX];
	pid_t perun_pid, pyspy_pid, updater_pid;
	int pyspy_tries;
};

static const struct cmd_usage record_usage = {
	.name = "record",
	.usage = "[-d OUTDIR] [options] -- COMMAND [ARGS...]",
	.about = "  Runs COMMAND under perun (monitor) and py-spy (record --idle --subprocesses),\n"
		 "  with libanchor.so preloaded into every process, and writes everything into\n"
		 "  OUTDIR (default anchor-run-YYYYmmdd-HHMMSS).  COMMAND is any command line:\n"
		 "  'python SCRIPT.py' runs inside perun itself; anything else (python -m PKG,\n"
		 "  torchrun, accelerate launch, mpirun/srun, a shell script) runs as the child of\n"
		 "  a small launcher perun monitors (docs/recording.md).  Exit status: COMMAND's.\n"
		 "  Ctrl-C, SIGTERM or SIGHUP to the recorder interrupts COMMAND (SIGINT) and keeps\n"
		 "  what was recorded so far; after SIGTERM/SIGHUP the recorder exits 128 + N.\n",
};

static const struct opt_choice sensor_choices[] = {
	{"auto", SENSOR_AUTO, "real when RAPL or an NVIDIA GPU is readable, else emulated"},
	{"emulated", SENSOR_EMULATED, "an emulated RAPL driven by the run's CPU time"},
	{"real", SENSOR_REAL, NULL},
	{NULL, 0, NULL},
};

static const struct opt_choice pyspy_format_choices[] = {
	{"chrometrace", 0, NULL},
	{"speedscope", 1, NULL},
	{NULL, 0, NULL},
};

/* The basename of a path. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* "python", "python3", "python3.11": an interpreter we can run perun in. */
static int is_python_name(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "python", 6) && strspn(b + 6, "0123456789.") == strlen(b + 6);
}

/* `python SCRIPT.py ...`: perun runs the script in its own process. */
static int is_python_script(char **cmd)
{
	size_t n;
	if (!is_python_name(cmd[0]) || !cmd[1] || cmd[1][0] == '-')
		return 0;
	n = strlen(cmd[1]);
	return n > 3 && !strcmp(cmd[1] + n - 3, ".py");
}

/* The interpreter named by an executable's "#!" line (a console script
 * like torchrun or accelerate), copied to out; 0 when it has none. */
static int shebang_python(const char *prog, char *out, size_t cap)
{
	char path[PATH_MAX], line[PATH_MAX];
	const char *env = getenv("PATH");
	FILE *fp = NULL;

	if (strchr(prog, '/')) {
		fp = fopen(prog, "r");
	} else {
		for (const char *p = env ? env : ""; *p && !fp;) {
			size_t len = strcspn(p, ":");
			if (len && (size_t)snprintf(path, sizeof path, "%.*s/%s", (int)len, p, prog) < sizeof path &&
			    !access(path, X_OK))
				fp = fopen(path, "r");
			p += len + (p[len] == ':');
		}
	}
	if (!fp)
		return 0;
	if (!fgets(line, sizeof line, fp) || strncmp(line, "#!", 2)) {
		fclose(fp);
		return 0;
	}
	fclose(fp);
	line[strcspn(line, "\r\n")] = 0;
	{
		char *interp = line + 2 + strspn(line + 2, " \t");
		char *end = interp + strcspn(interp, " \t");
		*end = 0;
		if (!is_python_name(interp) || interp[0] != '/')
			return 0;
		snprintf(out, cap, "%s", interp);
	}
	return 1;
}

static void parse_args(struct rec *r, int argc, char **argv)
{
	int fmt = 0, sensor = SENSOR_AUTO, no_sub = 0, n;
	const char *dir_o = NULL;
	const struct option opts[] = {
		OPT_STRING('d', "dir", &r->outdir_arg, "DIR", "the output directory (default anchor-run-DATE-TIME)"),
		OPT_STRING('o', NULL, &dir_o, "DIR", NULL), /* the same, as record spelled it before */
		OPT_DOUBLE(0, "rate", &r->rate_hz, "HZ", 1, 10000, ANCHOR_RECORD_PYSPY_RATE_HZ, "py-spy samples per second"),
		OPT_DOUBLE(0, "sampling-period", &r->period_s, "S", 0.1, 3600, ANCHOR_RECORD_PERUN_PERIOD_S,
			   "perun's sampling period, s (perun resets values below 0.1 to 1)"),
		OPT_CHOICE(0, "sensor", &sensor, "WHICH", sensor_choices, "perun's power sensor [auto]"),
		OPT_CHOICE(0, "format", &fmt, "F", pyspy_format_choices, "py-spy's output format [chrometrace]"),
		OPT_BOOL(0, "no-subprocesses", &no_sub, "py-spy samples only the process perun runs"),
		OPT_END(),
	};

	n = options_parse(argc, argv, opts, &record_usage, OPTS_STOP_AT_NON_OPTION);
	if (dir_o && r->outdir_arg && strcmp(dir_o, r->outdir_arg))
		options_usage_error(&record_usage, "-o and -d name different directories");
	if (dir_o)
		r->outdir_arg = dir_o;
	r->sensor = (enum sensor)sensor;
	r->speedscope = fmt;
	r->subprocesses = !no_sub;
	if (n < 1)
		options_usage_error(&record_usage, "give the command to record after '--'");
	argv[n + 1] = NULL; /* argv[argc] was NULL: the command's argv */
	r->cmd = argv + 1;
	r->in_process = is_python_script(r->cmd);
	if (r->in_process && access(r->cmd[1], R_OK))
		diag_fatal(r->cmd[1], "%s", strerror(errno));
}

static void mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof buf)
		diag_fatal(path, "path too long");
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			diag_fatal(buf, "cannot create directory: %s", strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		diag_fatal(buf, "cannot create directory: %s", strerror(errno));
}

static void join(char *dst, const char *a, const char *b)
{
	if ((size_t)snprintf(dst, PATH_MAX, "%s/%s", a, b) >= PATH_MAX)
		diag_fatal(a, "path too long");
}

/* perun runs in that interpreter: say so before anything starts when it
 * cannot import perun (issue 22: `record -- python3.9 train.py` ended in
 * a traceback from anchor_emul.perun, and a ./perun directory, perun's
 * data_out, passed a bare `import perun` as a namespace package). */
static void need_perun(const char *python)
{
	char cmd[PATH_MAX + 320], ver[32] = "";
	FILE *p;
	int rc, major, minor;

	snprintf(cmd, sizeof cmd,
		 "'%s' -c 'import sys, importlib.util as u\n"
		 "print(\"%%d.%%d\" %% sys.version_info[:2])\n"
		 "try: ok = u.find_spec(\"perun.monitoring.subprocess\") is not None\n"
		 "except ImportError: ok = False\n"
		 "sys.exit(0 if ok else 3)' 2>/dev/null",
		 python);
	if (!(p = popen(cmd, "r")))
		return; /* resolve_python ran it a moment ago: let perun say */
	if (!fgets(ver, sizeof ver, p))
		ver[0] = 0;
	ver[strcspn(ver, "\n")] = 0;
	rc = pclose(p);
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 3)
		return;
	if (sscanf(ver, "%d.%d", &major, &minor) == 2 && major == 3 && minor < 10)
		diag_fatal(python, "cannot import perun, and perun 1.0.0 requires Python >= 3.10 (this is %s): "
			   "record this script with py-spy alone (docs/recording.md), or run it with Python 3.10+", ver);
	diag_fatal(python, "cannot import perun (Python %s): install it there, e.g. '%s -m pip install perun==1.0.0' "
		   "(scripts/install-deps.sh)", ver[0] ? ver : "?", python);
}

/* The real interpreter behind `python` (often a pyenv shim: a bash script
 * that would put a dozen extra processes into the ring and make py-spy
 * attach to bash).  perun runs in it: the command's own interpreter when
 * the command is `python ...`, the one a console script (torchrun,
 * accelerate) names in its #! line, else $ANCHOR_PYTHON or python3. */
static void resolve_python(struct rec *r)
{
	char cmd[PATH_MAX + 64], bang[PATH_MAX];
	const char *py = r->cmd[0];
	FILE *p;
	size_t n;

	if (!is_python_name(py)) {
		const char *env = getenv("ANCHOR_PYTHON");
		py = shebang_python(r->cmd[0], bang, sizeof bang) ? bang : env && *env ? env : "python3";
	}
	snprintf(cmd, sizeof cmd, "'%s' -c 'import sys; print(sys.executable)' 2>/dev/null", py);
	if (strchr(py, '\'') || !(p = popen(cmd, "r")))
		diag_fatal(py, "cannot run the Python interpreter");
	if (!fgets(r->python, sizeof r->python, p))
		r->python[0] = 0;
	if (pclose(p) != 0 || !r->python[0])
		diag_fatal(py, "is not a working Python interpreter");
	n = strlen(r->python);
	if (n && r->python[n - 1] == '\n')
		r->python[n - 1] = 0;
	need_perun(r->python);
	/* The launched command runs the real interpreter too, not the shim,
	 * and a bare console-script name (torchrun) is taken from beside it
	 * when it is there (pyenv puts bash shims first on PATH). */
	if (!r->in_process && is_python_name(r->cmd[0])) {
		r->cmd[0] = r->python;
	} else if (!r->in_process && !strchr(r->cmd[0], '/')) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", r->python);
		*strrchr(dir, '/') = 0;
		join(r->tool, dir, r->cmd[0]);
		if (!access(r->tool, X_OK))
			r->cmd[0] = r->tool;
	}
}

/* perun runs this script in its own process (exec of its code, sampler in
 * a forked child, as for any script); it runs the command as its child and
 * ends with the command's status.  A Ctrl-C that `record` forwards to it
 * goes on to the command; the command's launcher (torchrun, mpirun) passes
 * it to its workers. */
static const char launcher_src[] =
	"# Written by `anchorpost record` (postproc/cmd/cmd_record.c): perun monitors\n"
	"# this process; the recorded command runs as its child.  The script ends\n"
	"# normally whatever the command's status (perun 1.0.0 saves nothing for a\n"
	"# script that exits non-zero); the status goes to anchor_emul.perun, which\n"
	"# exits with it after perun has saved its data.\n"
	"import os\n"
	"import signal\n"
	"import subprocess\n"
	"import sys\n"
	"\n"
	"\n"
	"def _main(cmd):\n"
	"    # os.environ, not the C environment: perun's MPI singleton start\n"
	"    # (mpi4py) has put OMPI_*/PMIX_* variables there, and a child mpirun\n"
	"    # that inherits them fails; os.environ is the environment as it was.\n"
	"    try:\n"
	"        child = subprocess.Popen(cmd, env=dict(os.environ))\n"
	"    except OSError as e:\n"
	"        print(f\"anchorpost: record: {cmd[0]}: {e.strerror}\", file=sys.stderr)\n"
	"        return 127\n"
	"\n"
	"    def forward(sig, frame):\n"
	"        try:\n"
	"            child.send_signal(sig)\n"
	"        except ProcessLookupError:\n"
	"            pass\n"
	"\n"
	"    signal.signal(signal.SIGINT, forward)\n"
	"    signal.signal(signal.SIGTERM, forward)\n"
	"    rc = child.wait()\n"
	"    return 128 - rc if rc < 0 else rc\n"
	"\n"
	"\n"
	"os.environ[\"ANCHOR_RECORD_STATUS\"] = str(_main(sys.argv[1:]))\n";

static void write_launcher(struct rec *r)
{
	struct outfile of;
	join(r->launcher, r->outdir, ".anchor_launch.py");
	outfile_open(&of, r->launcher);
	fputs(launcher_src, of.fp);
	outfile_commit(&of);
}

/* perun's name for the run (its HDF5 file's name): the module of
 * `python -m PKG`, else the command's basename. */
static const char *app_name(const struct rec *r, char *buf, size_t cap)
{
	const char *name = base_name(r->cmd[0]);
	if (is_python_name(r->cmd[0]))
		for (char **c = r->cmd + 1; *c; c++)
			if (!strcmp(*c, "-m") && c[1]) {
				name = c[1];
				break;
			}
	snprintf(buf, cap, "%s", name);
	for (char *c = buf; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '_' || *c == '-' || *c == '.'))
			*c = '_';
	if (!buf[0] || buf[0] == '.')
		snprintf(buf, cap, "command");
	return buf;
}

static int is_exec(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/* py-spy: next to the interpreter (pip installs it there), else on PATH. */
static void find_pyspy(struct rec *r)
{
	char dir[PATH_MAX];
	const char *path = getenv("PATH");

	snprintf(dir, sizeof dir, "%s", r->python);
	*strrchr(dir, '/') = 0;
	join(r->pyspy, dir, "py-spy");
	if (is_exec(r->pyspy))
		return;
	for (const char *p = path ? path : ""; *p;) {
		size_t len = strcspn(p, ":");

		snprintf(dir, sizeof dir, "%.*s", (int)len, p);
		join(r->pyspy, dir, "py-spy");
		if (len && is_exec(r->pyspy))
			return;
		p += len + (p[len] == ':');
	}
	diag_fatal(NULL, "record: py-spy not found next to %s or on PATH (scripts/install-deps.sh)", r->python);
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* The parts sit beside anchorpost in the build tree (build/libanchor.so,
 * tools/emulated_power) and under the prefix after `make install`
 * (PREFIX/lib/libanchor.so.MAJOR, PREFIX/share/anchor/emulated_power). */
static void find_parts(struct rec *r)
{
	static const char *const libs[] = {"libanchor.so", "../lib/libanchor.so." STR(ANCHOR_VERSION_MAJOR), NULL};
	static const char *const emuls[] = {"../tools/emulated_power", "../share/anchor/emulated_power", NULL};
	char self[PATH_MAX], probe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	const char *env = getenv("ANCHOR_EMUL_DIR");

	if (n <= 0)
		diag_fatal("/proc/self/exe", "cannot find anchorpost's own directory");
	self[n] = 0;
	*strrchr(self, '/') = 0;
	for (int i = 0; libs[i]; i++) {
		join(r->libanchor, self, libs[i]);
		if (!access(r->libanchor, R_OK))
			break;
		if (!libs[i + 1])
			diag_fatal(self, "libanchor.so is neither beside anchorpost nor in ../lib (make install): %s",
				   strerror(errno));
	}
	r->emuldir[0] = 0;
	for (int i = 0; !r->emuldir[0] && emuls[i]; i++) {
		if (env && *env)
			snprintf(r->emuldir, sizeof r->emuldir, "%s", env);
		else
			join(r->emuldir, self, emuls[i]);
		join(probe, r->emuldir, "anchor_emul/perun.py");
		if (access(probe, R_OK))
			r->emuldir[0] = 0;
	}
}

/* Real sensors perun could read: a RAPL energy counter we may open, or an
 * NVIDIA device node. */
static int have_real_sensor(void)
{
	glob_t g;
	int found = 0;

	if (!glob("/sys/class/powercap/intel-rapl:*/energy_uj", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc && !found; i++) {
			char buf[32];
			int fd = open(g.gl_pathv[i], O_RDONLY);

			found = fd >= 0 && read(fd, buf, sizeof buf) > 0;
			if (fd >= 0)
				close(fd);
		}
		globfree(&g);
	}
	return found || !access("/dev/nvidiactl", R_OK);
}

static void prepend_env(const char *name, const char *val)
{
	const char *old = getenv(name);
	char *v;

	if (!old || !*old) {
		setenv(name, val, 1);
		return;
	}
	if (asprintf(&v, "%s:%s", val, old) < 0)
		_exit(127);
	setenv(name, v, 1);
	free(v);
}

/* Child side of spawn(): environment for the run's processes. */
static void child_env(const struct rec *r, int anchored)
{
	char buf[PATH_MAX];

	if (r->emuldir[0])
		prepend_env("PYTHONPATH", r->emuldir);
	if (!anchored)
		return;
	join(buf, r->outdir, "run.ring");
	setenv("ANCHOR_FILE", buf, 1);
	/* perun's sampler writes its own clock readings into the ring: exact
	 * perun alignment (python_hooks/anchor/_perun_hook.py). */
	{
		const char *a = getenv("ANCHOR_AUTO");
		if (!a || !*a)
			setenv("ANCHOR_AUTO", "perun", 1);
		else if (!strstr(a, "perun")) {
			char v[512];
			snprintf(v, sizeof v, "%s,perun", a);
			setenv("ANCHOR_AUTO", v, 1);
		}
	}
	prepend_env("LD_PRELOAD", r->libanchor);
}

/* fork+exec argv.  anchored: preload libanchor into it.  gate_fd >= 0:
 * the child waits for one byte on it before exec.  Every child gets its own
 * process group, so a Ctrl-C at the terminal reaches only the recorder,
 * which forwards it to the training process alone (on_stop). */
static pid_t spawn(const struct rec *r, char *const argv[], int anchored, int gate_fd, int quiet)
{
	pid_t pid = fork();

	if (pid < 0)
		diag_fatal(NULL, "record: fork: %s", strerror(errno));
	if (pid) {
		setpgid(pid, pid); /* also in the child: whichever runs first */
		return pid;
	}
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	child_env(r, anchored);
	if (gate_fd >= 0) {
		char c;

		while (read(gate_fd, &c, 1) < 0 && errno == EINTR)
			;
		close(gate_fd);
	}
	if (quiet) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 1);
	}
	execv(argv[0], argv);
	fprintf(stderr, "anchorpost: record: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static int wait_status(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Wait up to timeout_s for pid; then send sig and wait for good. */
static int wait_or_signal(pid_t pid, double timeout_s, int sig)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	int status = 0;

	for (double t = 0; t < timeout_s; t += 0.02) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return exit_code(status);
		if (w < 0 && errno != EINTR)
			return -1;
		nanosleep(&ts, NULL);
	}
	kill(pid, sig);
	if (wait_status(pid, &status))
		return -1;
	return exit_code(status);
}

/* interrupted: the first stop signal the recorder got (0: none). */
static volatile sig_atomic_t training_pid, interrupted;

/* Ctrl-C (SIGINT), and a request to stop (SIGTERM from `timeout`, `kill`
 * or a batch system; SIGHUP from a closed terminal): interrupt the
 * training script only, with SIGINT in every case.  anchor_emul.perun
 * turns its KeyboardInterrupt into a normal end (status 130), so perun
 * stops its sampler and saves the data; the sampler, the emulator and
 * py-spy, in their own process groups, never see the signal and finish
 * their files.  Killed by the signal instead, perun 1.0.0 writes no HDF5
 * at all and the run's energy is lost. */
static void on_stop(int sig)
{
	if (!interrupted)
		interrupted = sig;
	if (training_pid > 0)
		kill((pid_t)training_pid, SIGINT);
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

static const char *stop_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

static void handle_stop_signals(void (*handler)(int))
{
	struct sigaction sa = {.sa_handler = handler};

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		sigaction(stop_signals[i], &sa, NULL);
}

/* Wait for the training process.  After a Ctrl-C, repeat the SIGINT every
 * 2 s until it ends: once, in testing, the forwarded signal was lost and
 * the script ran to its end (suspected: delivered while py-spy had the
 * process ptrace-stopped).  anchor_emul.perun ignores SIGINT after the
 * first, so repeats cannot break perun's saving. */
static int wait_training(pid_t pid, int *status)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	int since_sent = 0;

	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		nanosleep(&ts, NULL);
		if (interrupted && ++since_sent >= 20) {
			kill(pid, SIGINT);
			since_sent = 0;
		}
	}
}

static void run_init(const struct rec *r, const char *powercap)
{
	char *argv[] = {(char *)r->python, "-m", "anchor_emul.updater", "--powercap", (char *)powercap, "--init", NULL};
	int status;
	pid_t pid = spawn(r, argv, 0, -1, 0);

	if (wait_status(pid, &status) || exit_code(status))
		diag_fatal(powercap, "record: creating the emulated powercap tree failed");
}

static void start_updater(struct rec *r, const char *powercap)
{
	char pidbuf[32], truth[PATH_MAX], ready[PATH_MAX];
	struct timespec ts = {0, 10 * 1000 * 1000};

	snprintf(pidbuf, sizeof pidbuf, "%d", (int)r->perun_pid);
	join(truth, r->outdir, "emulated/truth.json");
	join(ready, r->outdir, "emulated/updater.ready");
	unlink(ready);
	char *argv[] = {r->python, "-m", "anchor_emul.updater", "--powercap", (char *)powercap,
			"--model", "cpu", "--watch-pid", pidbuf, "--truth", truth, "--ready-file", ready, NULL};
	r->updater_pid = spawn(r, argv, 0, -1, 0);
	/* perun reads the counters from its first sample on: let the updater
	 * tick before the run starts.  30 s covers a slow Python start. */
	for (int i = 0; i < 3000 && access(ready, F_OK); i++) {
		int status;

		if (waitpid(r->updater_pid, &status, WNOHANG) == r->updater_pid)
			diag_fatal(NULL, "record: the emulated sensor's updater exited (status %d)", exit_code(status));
		nanosleep(&ts, NULL);
	}
	if (access(ready, F_OK))
		diag_fatal(ready, "record: the emulated sensor's updater did not start in 30 s");
	unlink(ready);
}

static pid_t start_perun(struct rec *r, enum sensor s, const char *powercap, int gate_fd)
{
	char period[32], data_out[PATH_MAX], name[128];
	char *argv[64 + 1024];
	int n = 0;

	snprintf(period, sizeof period, "%g", r->period_s);
	join(data_out, r->outdir, "perun");
	argv[n++] = r->python;
	argv[n++] = "-m";
	if (r->emuldir[0]) {
		argv[n++] = "anchor_emul.perun";
		argv[n++] = s == SENSOR_EMULATED ? "--powercap" : "--real";
		if (s == SENSOR_EMULATED)
			argv[n++] = (char *)powercap;
	} else {
		argv[n++] = "perun";
	}
	argv[n++] = "monitor";
	argv[n++] = "--data_out";
	argv[n++] = data_out;
	argv[n++] = "--sampling_period";
	argv[n++] = period;
	if (!r->in_process) {
		argv[n++] = "--app_name";
		argv[n++] = (char *)app_name(r, name, sizeof name);
		argv[n++] = r->launcher;
	}
	for (char **c = r->cmd + r->in_process; *c; c++) {
		if (n >= (int)(sizeof argv / sizeof *argv) - 1)
			diag_fatal(NULL, "record: too many arguments");
		argv[n++] = *c;
	}
	argv[n] = NULL;
	return spawn(r, argv, 1, gate_fd, 0);
}

static pid_t start_pyspy(struct rec *r)
{
	char rate[32], pid[32];
	char *argv[20];
	int n = 0;

	snprintf(rate, sizeof rate, "%g", r->rate_hz);
	snprintf(pid, sizeof pid, "%d", (int)r->perun_pid);
	argv[n++] = r->pyspy;
	argv[n++] = "record";
	argv[n++] = "--idle";
	argv[n++] = "--rate";
	argv[n++] = rate;
	argv[n++] = "--format";
	argv[n++] = r->speedscope ? "speedscope" : "chrometrace";
	argv[n++] = "-o";
	argv[n++] = r->profile;
	if (r->subprocesses)
		argv[n++] = "--subprocesses";
	argv[n++] = "--pid";
	argv[n++] = pid;
	argv[n] = NULL;
	return spawn(r, argv, 1, -1, 1);
}

/* py-spy fails when it attaches before the interpreter is initialised
 * (no Python version found yet): retry while the run is young. */
static void attach_pyspy(struct rec *r)
{
	struct timespec ts = {0, 100 * 1000 * 1000};

	for (r->pyspy_tries = 1; r->pyspy_tries <= 20; r->pyspy_tries++) {
		int status = 0, quit = 0;

		nanosleep(&ts, NULL);
		siginfo_t si = {0};

		/* WNOWAIT: only look; the exit status is collected later. */
		if (waitid(P_PID, (id_t)r->perun_pid, &si, WEXITED | WNOHANG | WNOWAIT) || si.si_pid)
			break;
		r->pyspy_pid = start_pyspy(r);
		for (int i = 0; i < 30 && !quit; i++) {
			nanosleep(&ts, NULL);
			quit = waitpid(r->pyspy_pid, &status, WNOHANG) == r->pyspy_pid;
		}
		if (!quit)
			return;
		r->pyspy_pid = 0;
		/* A run shorter than the wait: py-spy followed it to the end. */
		if (exit_code(status) == 0)
			return;
	}
	diag_warn(NULL, "record: py-spy could not attach to pid %d; no profile", (int)r->perun_pid);
}

static void write_record_json(const struct rec *r, enum sensor s, int status)
{
	char path[PATH_MAX];
	struct outfile of;
	cJSON *o = cJSON_CreateObject(), *cmd = cJSON_AddArrayToObject(o, "command");
	char *text;

	for (char **c = r->cmd; *c; c++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(*c));
	cJSON_AddStringToObject(o, "python", r->python);
	cJSON_AddStringToObject(o, "sensor", s == SENSOR_EMULATED ? "emulated" : "real");
	if (s == SENSOR_EMULATED)
		cJSON_AddStringToObject(o, "notice", EMULATED_NOTICE);
	cJSON_AddNumberToObject(o, "training_pid", r->perun_pid);
	cJSON_AddStringToObject(o, "training_process",
				r->in_process ? "perun monitor (runs the script in-process)"
					      : "children of perun monitor (it runs .anchor_launch.py, which runs the command)");
	cJSON_AddNumberToObject(o, "sampling_period_s", r->period_s);
	cJSON_AddNumberToObject(o, "pyspy_rate_hz", r->rate_hz);
	cJSON_AddStringToObject(o, "pyspy_format", r->speedscope ? "speedscope" : "chrometrace");
	cJSON_AddBoolToObject(o, "pyspy_idle", 1);
	cJSON_AddBoolToObject(o, "pyspy_subprocesses", r->subprocesses);
	cJSON_AddNumberToObject(o, "pyspy_attach_tries", r->pyspy_tries);
	cJSON_AddNumberToObject(o, "exit_status", status);
	if (interrupted)
		cJSON_AddStringToObject(o, "stopped_by", stop_name(interrupted));
	text = cJSON_Print(o);
	join(path, r->outdir, "record.json");
	outfile_open(&of, path);
	fprintf(of.fp, "%s\n", text);
	outfile_commit(&of);
	free(text);
	cJSON_Delete(o);
}

/* Print every file under dir with its size; the fake powercap tree is
 * shown as one line (its files are the emulator's, not outputs). */
static void list_dir(const char *base, const char *dir)
{
	char path[PATH_MAX];
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		struct stat st;

		join(path, dir, name);
		if (name[0] != '.' && !stat(path, &st)) {
			const char *rel = path + strlen(base) + 1;

			if (S_ISDIR(st.st_mode) && !strcmp(name, "powercap"))
				printf("  %12s  %s/ (emulated RAPL tree)\n", "", rel);
			else if (S_ISDIR(st.st_mode))
				list_dir(base, path);
			else if (S_ISREG(st.st_mode))
				printf("  %12lld  %s\n", (long long)st.st_size, rel);
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

/* OUTDIR (given or named by the time), which must not hold a recording
 * yet, the profile's path in it, and the launcher script. */
static void prepare_outdir(struct rec *r)
{
	char ring[PATH_MAX], gen[64];
	const char *dir = r->outdir_arg;

	if (!dir) {
		time_t now = time(NULL);

		strftime(gen, sizeof gen, "anchor-run-%Y%m%d-%H%M%S", localtime(&now));
		dir = gen;
	}
	mkdir_p(dir);
	if (!realpath(dir, r->outdir))
		diag_fatal(dir, "%s", strerror(errno));
	join(ring, r->outdir, "run.ring");
	if (!access(ring, F_OK))
		diag_fatal(ring, "record: OUTDIR already holds a recording; choose another -d");
	join(r->profile, r->outdir, r->speedscope ? "profile.speedscope.json" : "profile.chrometrace.json");
	if (!r->in_process)
		write_launcher(r);
}

/* The sensor perun reads (auto: real where RAPL or an NVIDIA GPU is
 * readable); the emulated one gets its powercap tree under OUTDIR, whose
 * path goes to powercap (else left empty). */
static enum sensor choose_sensor(struct rec *r, char *powercap)
{
	enum sensor s = r->sensor;

	if (s == SENSOR_AUTO)
		s = have_real_sensor() ? SENSOR_REAL : SENSOR_EMULATED;
	if (r->sensor == SENSOR_REAL && !have_real_sensor())
		diag_warn(NULL, "record: --sensor real, but no RAPL counter is readable and there is no NVIDIA GPU: perun will record no energy");
	if (s == SENSOR_EMULATED && !r->emuldir[0])
		diag_fatal(NULL, "record: the emulated sensor needs tools/emulated_power beside the build dir, or ANCHOR_EMUL_DIR");
	if (s == SENSOR_EMULATED) {
		fprintf(stderr, "anchorpost: record: %s: %s (%s)\n",
			r->sensor == SENSOR_AUTO ? "no readable RAPL counter or NVIDIA GPU" : "--sensor emulated",
			"perun reads an emulated RAPL driven by the run's CPU time", EMULATED_NOTICE);
		join(powercap, r->outdir, "emulated");
		mkdir_p(powercap);
		join(powercap, r->outdir, "emulated/powercap");
		run_init(r, powercap);
	}
	return s;
}

/* Start perun (running the program), the emulated sensor's updater and
 * py-spy; the program is held at a gate until the others are up. */
static void launch(struct rec *r, enum sensor s, const char *powercap)
{
	int gate[2];

	handle_stop_signals(on_stop);
	if (pipe2(gate, O_CLOEXEC))
		diag_fatal(NULL, "record: pipe: %s", strerror(errno));
	r->perun_pid = start_perun(r, s, powercap, gate[0]);
	training_pid = r->perun_pid;
	close(gate[0]);
	if (s == SENSOR_EMULATED)
		start_updater(r, powercap);
	/* The run starts now: one byte opens the gate (EOF would not come
	 * while another child still held the write end). */
	if (write(gate[1], "g", 1) != 1)
		diag_fatal(NULL, "record: pipe write: %s", strerror(errno));
	close(gate[1]);
	attach_pyspy(r);
}

/* Wait for the program, then for py-spy and the updater; the program's
 * exit code. */
static int wait_run(struct rec *r)
{
	int status = 0, code;

	if (wait_training(r->perun_pid, &status))
		diag_fatal(NULL, "record: waitpid: %s", strerror(errno));
	training_pid = 0; /* reaped: its pid may be reused */
	code = exit_code(status);
	/* py-spy notices the exit and writes its file; a long profile takes
	 * a while to serialise. */
	if (r->pyspy_pid && wait_or_signal(r->pyspy_pid, 120, SIGINT) != 0)
		diag_warn(r->profile, "record: py-spy ended with an error");
	if (r->updater_pid && wait_or_signal(r->updater_pid, 10, SIGTERM) != 0)
		diag_warn(NULL, "record: the emulated sensor's updater ended with an error");
	handle_stop_signals(SIG_DFL);
	return code;
}

int cmd_record(int argc, char **argv)
{
	struct rec r = {.subprocesses = 1};
	char powercap[PATH_MAX] = "";
	enum sensor s;
	int code;

	parse_args(&r, argc, argv);
	find_parts(&r);
	resolve_python(&r);
	find_pyspy(&r);
	prepare_outdir(&r);
	s = choose_sensor(&r, powercap);
	launch(&r, s, powercap);
	code = wait_run(&r);
	write_record_json(&r, s, code);

	if (interrupted)
		printf("anchorpost record: %s (exit status %d; stopped by %s, the data so far saved)\n", r.outdir, code,
		       stop_name(interrupted));
	else
		printf("anchorpost record: %s (exit status %d)\n", r.outdir, code);
	list_dir(r.outdir, r.outdir);
	if (s == SENSOR_EMULATED)
		printf("  energy: %s (perun/EMULATED_SENSOR.txt)\n", EMULATED_NOTICE);
	/* Asked to stop (not a Ctrl-C): end as a process that signal stopped
	 * would, so `timeout` and batch systems see the usual 128 + N. */
	if (interrupted && interrupted != SIGINT)
		return 128 + interrupted;
	return code;
}
