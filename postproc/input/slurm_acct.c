/* slurm_acct.c - Slurm's accounting of a job's energy (see slurm_acct.h). */
#include "input/slurm_acct.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* sacct asks slurmdbd; scontrol asks slurmctld.  Either answers in well
 * under a second when it is up; a daemon that is down makes them retry
 * for a minute or more, longer than a report should wait for a side note. */
#define SLURM_QUERY_TIMEOUT_S 10

/* Run argv (PATH searched) with stdout and stderr into out (NUL-ended,
 * truncated to cap).  Its exit status, 127 when it cannot be run, -ETIME
 * when it ran past the limit (killed), -errno when no process started. */
static int run_capture(char *const argv[], char *out, size_t cap)
{
	int fd[2], status = 0;
	size_t len = 0;
	pid_t pid;
	struct timespec t0, now;
	out[0] = '\0';
	if (pipe2(fd, O_CLOEXEC))
		return -errno;
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return -errno;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = fd[0], .events = POLLIN};
		char buf[1024];
		ssize_t n;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int left_ms = (int)(SLURM_QUERY_TIMEOUT_S * 1000 - ((now.tv_sec - t0.tv_sec) * 1000 +
								    (now.tv_nsec - t0.tv_nsec) / 1000000));
		if (left_ms <= 0 || poll(&p, 1, left_ms) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(fd[0]);
			return -ETIME;
		}
		n = read(fd[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + 1 < cap) {
			size_t k = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;
			memcpy(out + len, buf, k);
			len += k;
			out[len] = '\0';
		}
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The first line of text, trimmed, into buf. */
static void first_line(const char *text, char *buf, size_t cap)
{
	size_t n;
	text += strspn(text, " \t\r\n");
	n = strcspn(text, "\r\n");
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
		n--;
	snprintf(buf, cap, "%.*s", (int)n, text);
}

int slurm_acct_parse(const char *text, const char *job, const char *step, struct slurm_acct *a)
{
	char want_step[48], line[256];
	int found_job = 0, found_step = 0;
	double job_e = 0, job_t = 0, step_e = 0, step_t = 0;
	snprintf(want_step, sizeof want_step, "%s.%s", job, step ? step : "");
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		char *f[3] = {NULL}, *save = NULL;
		snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
		p += n + (p[n] == '\n');
		f[0] = line;
		for (int k = 1; k < 3 && f[k - 1] && (save = strchr(f[k - 1], '|')); k++) {
			*save = '\0';
			f[k] = save + 1;
		}
		if (!f[1])
			continue; /* not a JobID|Energy|Elapsed line */
		if (f[2])
			f[2][strcspn(f[2], "|\r")] = '\0';
		double e = *f[1] ? strtod(f[1], NULL) : 0, t = f[2] && *f[2] ? strtod(f[2], NULL) : 0;
		if (!strcmp(f[0], job)) {
			found_job = 1, job_e = e, job_t = t;
		} else if (step && *step && !strcmp(f[0], want_step)) {
			found_step = 1, step_e = e, step_t = t;
		}
	}
	if (!found_job && !found_step)
		return -ENOENT;
	snprintf(a->jobstep, sizeof a->jobstep, "%s", found_step ? want_step : job);
	a->energy_j = found_step ? step_e : job_e;
	a->elapsed_s = found_step ? step_t : job_t;
	a->state = a->energy_j > 0 ? SLURM_ACCT_ENERGY : SLURM_ACCT_NO_ENERGY;
	if (a->state == SLURM_ACCT_NO_ENERGY)
		snprintf(a->why, sizeof a->why, "sacct reports ConsumedEnergy 0 for %s", a->jobstep);
	return 0;
}

static int job_id_ok(const char *s)
{
	return *s && strspn(s, "0123456789_+") == strlen(s);
}

/* ", AcctGatherEnergyType = acct_gather_energy/none (scontrol show config)"
 * appended to a->why, when scontrol says it. */
static void energy_plugin(struct slurm_acct *a)
{
	char *argv[] = {"scontrol", "show", "config", NULL};
	char *out = malloc(1 << 16), *line, val[96];
	if (!out)
		return;
	if (run_capture(argv, out, 1 << 16) == 0 && (line = strstr(out, "AcctGatherEnergyType"))) {
		line += strcspn(line, "=");
		first_line(*line ? line + 1 : line, val, sizeof val);
		size_t l = strlen(a->why);
		snprintf(a->why + l, sizeof a->why - l, "%sAcctGatherEnergyType = %s (scontrol show config)",
			 l ? "; " : "", val);
	}
	free(out);
}

int slurm_acct_query(const char *job, const char *step, struct slurm_acct *a)
{
	char jobarg[64], out[8192], msg[200];
	char *argv[] = {"sacct", "-j", jobarg, "-n", "-P", "--noconvert", "--format=JobID,ConsumedEnergyRaw,ElapsedRaw",
			NULL};
	int rc;
	memset(a, 0, sizeof *a);
	a->state = SLURM_ACCT_UNREADABLE;
	if (!job_id_ok(job)) {
		snprintf(a->why, sizeof a->why, "'%s' is not a Slurm job id", job);
		return -EINVAL;
	}
	snprintf(jobarg, sizeof jobarg, "%s", job);
	rc = run_capture(argv, out, sizeof out);
	if (rc == 127 || rc == -ENOENT) {
		snprintf(a->why, sizeof a->why, "sacct is not installed here (run the report where sacct works)");
		return 0;
	}
	if (rc == -ETIME) {
		snprintf(a->why, sizeof a->why, "sacct did not answer in %d s", SLURM_QUERY_TIMEOUT_S);
		return 0;
	}
	if (rc != 0) {
		first_line(out, msg, sizeof msg);
		snprintf(a->why, sizeof a->why, "sacct -j %s failed (exit %d): %s", job, rc, msg[0] ? msg : "no message");
		energy_plugin(a);
		return 0;
	}
	if (slurm_acct_parse(out, job, step, a)) {
		first_line(out, msg, sizeof msg);
		snprintf(a->why, sizeof a->why, "sacct has no line for job %s%s%s", job, msg[0] ? ": " : "", msg);
		energy_plugin(a);
		return 0;
	}
	if (a->state == SLURM_ACCT_NO_ENERGY)
		energy_plugin(a);
	return 0;
}
