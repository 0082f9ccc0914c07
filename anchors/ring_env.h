/*
 * ring_env.h - every ANCHOR_* environment variable the writers read, in
 * one table (ring_env.c), read at one moment, and the ring they describe.
 *
 * Compiled into libanchor.so and, separately, into the `anchor` Python
 * module (python_hooks/src/env.c), like ring_writer.c.  The model is
 * LTTng-UST's src/common/getenv.c: a library living inside someone else's
 * process reads its variables once, early, instead of calling getenv()
 * from its own threads, signal handlers or later calls while the program
 * may be calling setenv() (which getenv() races with); and in a setuid or
 * setgid program (AT_SECURE) it takes no file or library path from an
 * environment that the less privileged caller chose.
 */
#ifndef ANCHOR_RING_ENV_H
#define ANCHOR_RING_ENV_H

#include <stddef.h>

#include "ring_writer.h"

enum ring_env {
	RING_ENV_FILE,           /* ANCHOR_FILE: the ring (templates %r %h %p) */
	RING_ENV_RING_SIZE,      /* ANCHOR_RING_SIZE: data area of a new ring */
	RING_ENV_RING_MODE,      /* ANCHOR_RING_MODE: overwrite | discard */
	RING_ENV_DISABLE,        /* ANCHOR_DISABLE: record nothing */
	RING_ENV_DEBUG,          /* ANCHOR_DEBUG: say where it attached */
	RING_ENV_STACKS,         /* ANCHOR_STACKS: native stacks on marks */
	RING_ENV_SIGNALS,        /* ANCHOR_SIGNALS=0: no fatal-signal record */
	RING_ENV_AUTO,           /* ANCHOR_AUTO: Python auto mode */
	RING_ENV_SYNC_PULSE,     /* ANCHOR_SYNC_PULSE: Python sync pulses */
	RING_ENV_LAYERS_DEPTH,   /* ANCHOR_LAYERS_DEPTH: ANCHOR_AUTO=layers depth */
	RING_ENV_MPI,            /* ANCHOR_MPI=0: no MPI ranges */
	RING_ENV_SENSORS,        /* ANCHOR_SENSORS: rapl,nvml sampler */
	RING_ENV_SENSOR_HZ,      /* ANCHOR_SENSOR_HZ: its rate */
	RING_ENV_SENSORS_OWNER,  /* ANCHOR_SENSORS_OWNER: "pid ring" sampling */
	RING_ENV_POWERCAP_ROOT,  /* ANCHOR_POWERCAP_ROOT: powercap tree */
	RING_ENV_NVML_LIB,       /* ANCHOR_NVML_LIB: NVML library to dlopen */
	RING_ENV_SAID,           /* ANCHOR_SAID: set by us, see ring_env_say */
	RING_ENV_COUNT_
};

/* Read every variable of the table from the environment now (libanchor's
 * constructor; the module's import and its first attach).  Not
 * thread-safe against itself: call it where nothing else runs ours. */
void ring_env_init(void);

/* The value read by ring_env_init, NULL when unset (or refused in a
 * setuid/setgid process: path-like variables only). */
const char *ring_env_get(enum ring_env v);

/* The variable's name ("ANCHOR_FILE"). */
const char *ring_env_name(enum ring_env v);

/* Set, non-empty, and not "0", "false" or "no" (any case). */
int ring_env_true(enum ring_env v);

/* Set name=value in the process environment, for children to inherit,
 * and in the table.  0, or -1 (no memory: the environment unchanged). */
int ring_env_export(enum ring_env v, const char *value);

/*
 * "anchoring disabled" once per run, not once per process: a host that
 * starts 300 children with a bad ring path (read-only or full directory,
 * missing directory, ulimit -f) printed 301 lines, a Python spawn pool
 * one per worker.  The first process that says why anchoring is off
 * exports ANCHOR_SAID=<its pid>; a process started with it set stays
 * quiet about its own failure to attach (ANCHOR_DEBUG=1 shows each).  An
 * environment variable, not a file: it reaches exec'd children (vfork
 * included) with nothing written anywhere, and a child the program gives
 * an environment of its own tries and speaks for itself.
 * ring_env_say: 1 when this process should print its line now; 0 when
 * the run already said it.  ring_env_said: the line is out, export the
 * mark (not from a signal handler: setenv).
 */
int ring_env_say(int debug);
void ring_env_said(void);

/* The run's default name for its ring: ./anchor-<UTC stamp>-<pid>.ring,
 * absolute, so that a child that starts in another directory (subprocess
 * cwd=, a launcher that chdir's) appends to the same ring once the name
 * is exported, instead of making its own beside it. */
void ring_env_default_path(char *out, size_t cap);

/*
 * The ring the environment asks this process to attach: ANCHOR_FILE
 * (templates expanded into path) or the default name; ANCHOR_RING_SIZE
 * and ANCHOR_RING_MODE into o.  o->path points
 * into path.  Returns 0; 1 when the path is the default name (the caller
 * exports it once attached); -1 with a one-line reason in why when the
 * environment cannot be used (path too long, size not a size).  *note is
 * set to a remark worth saying when this process creates the ring (a size
 * below the smallest ring, raised), else NULL.
 */
int ring_env_ring(struct ring_writer_opts *o, char *path, size_t cap, char *why, size_t whylen,
		  const char **note);

#endif /* ANCHOR_RING_ENV_H */
