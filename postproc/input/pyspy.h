/*
 * pyspy.h - py-spy profiles: readers (speedscope, chrometrace, raw), the
 * in-memory model used for energy attribution, and an energy-weighted
 * speedscope writer.  Facts about the formats: ../shared/FORMATS.md.
 *
 * Two ways to read, one code path:
 *
 *  - Streaming: pyspy_read() fills the *tables* of a struct pyspy_profile
 *    (meta, threads, frames, the stack prefix tree) and hands every sample
 *    to a callback instead of storing it.  Memory is O(frames + distinct
 *    stacks + threads) plus, for speedscope only, 4 bytes per sample of the
 *    profile being parsed: py-spy writes "samples" before "weights", so a
 *    thread's samples can only be timed once its weights have been read;
 *    and up to 32 MB for a memo of whole stacks already seen (speedscope
 *    resolves a repeated stack with one lookup).  py-spy also writes the
 *    frame table ("shared") after all profiles, so frames.complete tells a
 *    callback whether names are known yet.
 *
 *  - Model: pyspy_load() = pyspy_read() with a callback that appends each
 *    sample (24 bytes) to p->samples.  1.8 M samples cost ~45 MB.
 *
 * A stack is one u32: a node of the prefix tree (node = parent node +
 * frame index).  Node 0 is the empty stack.  Identical stacks share one
 * node, so per-stack work (aggregation, formatting) is done once per node.
 *
 * Time: t_rel_s is seconds since the profile's start.  speedscope: the
 * running sum of the *nominal* weights (py-spy writes 1/rate for every
 * sample; real intervals are random and dropped idle samples leave no
 * gap).  chrometrace: real time since py-spy created its recorder (ts µs
 * / 1e6), one row per interval during which a thread's stack did not
 * change.  raw: no time at all (NaN), one row per distinct stack with its
 * count.  Library code never exits or prints: errors come back in an
 * em_error (util/diag.h) with a location (byte offset or line) in msg and
 * file NULL (the caller names the file it gave).
 */
#ifndef ANCHORPOST_PYSPY_H
#define ANCHORPOST_PYSPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/diag.h"

enum pyspy_format {
	PYSPY_FMT_AUTO = 0,
	PYSPY_FMT_SPEEDSCOPE,
	PYSPY_FMT_CHROMETRACE,
	PYSPY_FMT_RAW,
};

/* Does the profile look recorded with `py-spy record --idle`? */
enum pyspy_idle {
	PYSPY_IDLE_UNKNOWN = 0,
	PYSPY_IDLE_LIKELY,
	PYSPY_IDLE_UNLIKELY,
};

/* The parsers' messages keep the length they always had (one line,
 * without the file name, which the caller prints): em_error's msg is
 * longer, pyspy_set_err cuts at this. */
#define PYSPY_ERR_MAX 320

struct pyspy_frame {
	const char *name; /* never NULL */
	const char *file; /* NULL when absent */
	int32_t line;     /* -1 when absent (null, --nolineno) */
};

struct pyspy_frames {
	struct pyspy_frame *v;
	uint32_t n, cap;
	int complete;     /* every frame a sample can name is in v */
	/* private: string arena blocks and the (name,file,line) intern hash */
	char **blocks;
	size_t nblocks, block_used, block_cap;
	uint32_t *hash;
	uint32_t hash_cap;
};

struct pyspy_node {
	uint32_t parent; /* UINT32_MAX for node 0 */
	uint32_t frame;  /* index into frames.v */
	uint32_t depth;  /* frames on the stack, 0 for node 0 */
};

struct pyspy_stacks {
	struct pyspy_node *v;
	uint32_t n, cap;
	/* private: (parent,frame) -> child hash */
	uint32_t *hash;
	uint32_t hash_cap;
};

/* One speedscope profile = one (process, thread); chrometrace: one (pid,
 * tid); raw: a single pseudo-thread. */
struct pyspy_thread {
	char *profile;      /* speedscope profile name, or "Process P Thread T" */
	int64_t pid;        /* -1 when the file does not say */
	char tid[24];       /* as written: decimal (Linux) or 0x hex (macOS) */
	char *thread_name;  /* "" when unnamed or unknown */
	uint64_t pthread_id;/* chrometrace "tid" (pthread value); 0 otherwise */
	char unit[16];      /* speedscope unit; "seconds" for chrometrace */
	double unit_s;      /* seconds per unit; NaN when not a time unit */
	int evented;        /* speedscope evented profile (pyinstrument etc.) */
	double start_value, end_value; /* speedscope, in unit */
	uint64_t nsamples;  /* rows delivered (raw: sum of counts) */
	double total_weight;/* sum of weights in unit (raw: sum of counts) */
};

struct pyspy_meta {
	enum pyspy_format format;
	char exporter[64];  /* "py-spy@0.4.1"; "" when absent */
	char unit[16];      /* unit shared by all profiles, or "mixed" */
	double rate_hz;     /* 1/weight when weights are constant seconds; NaN */
	int weights_constant;
	int times_known;    /* t_rel_s/duration_s are meaningful */
	enum pyspy_idle idle;
	char idle_reason[160];
	uint64_t empty_samples; /* samples with an empty stack */
	/* torch.profiler / Kineto traces (torch_trace.c; format CHROMETRACE:
	 * rows are intervals of constant op stack, as py-spy's) */
	int torch;              /* the profile is a torch.profiler trace */
	int torch_schema;       /* its schemaVersion */
	int torch_has_base;     /* baseTimeNanoseconds present (torch >= 2.4) */
	int64_t torch_base_ns;  /* unix ns of ts 0 (0 without: ts is unix µs) */
	double torch_t0_us;     /* ts of the earliest kept event: t_rel_s 0 */
	uint64_t torch_events, torch_device_events, torch_annotations;
};

/* One delivered sample (speedscope), interval (chrometrace, evented
 * speedscope) or distinct stack (raw). */
struct pyspy_sample_ev {
	uint32_t thread;     /* index into p->threads */
	uint32_t stack;      /* node in p->stacks */
	uint64_t index;      /* per-thread sample index (raw: line number - 1) */
	double t_rel_s;      /* NaN when unknown */
	double duration_s;   /* NaN when unknown */
	double weight;       /* in the profile's unit (raw: count) */
	double ts_us;        /* chrometrace: absolute ts of interval start; NaN */
	uint64_t count;      /* samples this row stands for (raw count; 1 else) */
};

struct pyspy_profile;

/* Return 0 to go on, non-zero to stop reading (pyspy_read returns -ECANCELED
 * and keeps the message the callback put in err, if any). */
typedef int (*pyspy_sample_fn)(void *ctx, const struct pyspy_profile *p,
			       const struct pyspy_sample_ev *s, struct em_error *err);

/* A stored sample: 24 bytes. */
struct pyspy_sample {
	uint32_t thread;
	uint32_t stack;
	double t_rel_s;
	double duration_s;
};

struct pyspy_profile {
	/* Input, set after pyspy_profile_init: when > 0, speedscope samples
	 * are timed i/rate regardless of weights (py-spy < 0.3.8 wrote unit
	 * "none", 0.3.8 wrote weights of 1 "seconds"). */
	double rate_override_hz;
	struct pyspy_meta meta;
	struct pyspy_thread *threads;
	uint32_t nthreads, threads_cap;
	struct pyspy_frames frames;
	struct pyspy_stacks stacks;
	/* Model only (pyspy_load): */
	struct pyspy_sample *samples;
	size_t nsamples, samples_cap;
	double *ts_us;     /* chrometrace: interval start ts µs, else NULL */
	uint64_t *counts;  /* raw: count per row, else NULL (all 1) */
};

/* Zero a profile before reading. */
void pyspy_profile_init(struct pyspy_profile *p);

/* Free everything a read or load allocated. */
void pyspy_profile_free(struct pyspy_profile *p);

/* Stream path (fmt AUTO detects) into p's tables, calling fn per sample.
 * 0, or -errno with err->msg set (-EINVAL: malformed input). */
int pyspy_read(const char *path, enum pyspy_format fmt, struct pyspy_profile *p,
	       pyspy_sample_fn fn, void *ctx, struct em_error *err);

/* Same from an open stream (fuzzing, stdin). */
int pyspy_read_fp(FILE *fp, enum pyspy_format fmt, struct pyspy_profile *p,
		  pyspy_sample_fn fn, void *ctx, struct em_error *err);

/* Read everything into the model (p->samples etc.). */
int pyspy_load(const char *path, enum pyspy_format fmt, struct pyspy_profile *p,
	       struct em_error *err);
int pyspy_load_fp(FILE *fp, enum pyspy_format fmt, struct pyspy_profile *p,
		  struct em_error *err);

/* "speedscope", "chrometrace", "raw", "auto". */
const char *pyspy_format_name(enum pyspy_format f);

/* Parse a --format argument; -1 when unknown. */
int pyspy_format_parse(const char *s);

/* "likely", "unlikely", "unknown". */
const char *pyspy_idle_name(enum pyspy_idle i);

/* Frame indices of a stack, root first, into out[0..depth); returns depth
 * (the node's depth; only min(depth, cap) entries are written). */
uint32_t pyspy_stack_frames(const struct pyspy_stacks *s, uint32_t node, uint32_t *out, uint32_t cap);

/* Functions: a function is (name, file), every line of it one function.
 * fn_of_frame[f] (frames.n entries): frame f's function, numbered in
 * (name, file) order; first_frame[g] (frames.n entries, NULL: not
 * wanted): the first frame of function g in that order.  *nfn: how many.
 * 0 or -ENOMEM. */
int pyspy_function_ids(const struct pyspy_profile *p, uint32_t *fn_of_frame, uint32_t *first_frame, uint32_t *nfn);

/* Leaf frame index of a non-empty stack node. */
static inline uint32_t pyspy_stack_leaf(const struct pyspy_stacks *s, uint32_t node)
{
	return s->v[node].frame;
}

/* The "exporter" of the speedscope files anchorpost writes (the energy
 * profile), written as the file's second key: what marks them as outputs
 * (run_find.h skips them, pyspy_load refuses them as a profile). */
#define PYSPY_ENERGY_EXPORTER "anchorpost"
#define PYSPY_OWN_OUTPUT_MSG                                                                                    \
	"written by anchorpost (a profile weighted in joules, as report's energy.speedscope.json), "           \
	"not by py-spy: give py-spy's own profile"

/* 1 when the first len bytes of a file (at least its first KiB when it
 * has one) are the start of an energy profile anchorpost wrote. */
int pyspy_written_by_anchorpost(const char *head, size_t len);

/* Internal to the readers (pyspy_tables.c). */
int pyspy_frames_add(struct pyspy_frames *f, const char *name, size_t name_len, const char *file,
		     size_t file_len, int32_t line, uint32_t *idx);
int pyspy_frames_intern(struct pyspy_frames *f, const char *name, size_t name_len, const char *file,
			size_t file_len, int32_t line, uint32_t *idx);
int pyspy_stacks_child(struct pyspy_stacks *s, uint32_t parent, uint32_t frame, uint32_t *child);
int pyspy_stacks_init(struct pyspy_stacks *s);
int pyspy_thread_add(struct pyspy_profile *p, uint32_t *idx);
/* Fill err's msg (at most PYSPY_ERR_MAX - 1 characters), file NULL;
 * err may be NULL. */
void pyspy_set_err(struct em_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
