/* run_model.c - one run opened once (see run_model.h). */
#include "model/run_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(struct run_model *rm, struct em_error *e, int code, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int fail(struct run_model *rm, struct em_error *e, int code, const char *file, const char *fmt, ...)
{
	va_list ap;
	e->file = file;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	run_model_close(rm);
	return code;
}

/* The profile: load, align with the ring, give every sample its slice's
 * energy.  Errors name the profile. */
static int open_profile(struct run_model *rm, const char *profile, struct em_error *e)
{
	struct energy_model *m = &rm->m;
	struct em_error perr, aerr;
	int rc;

	pyspy_profile_init(&rm->p);
	rm->have_profile = 1;
	if ((rc = pyspy_load(profile, PYSPY_FMT_AUTO, &rm->p, &perr)))
		return fail(rm, e, rc < 0 ? rc : -EINVAL, profile, "%s", perr.msg);
	if (!rm->p.nsamples)
		return fail(rm, e, -EINVAL, profile, "the profile holds no samples");
	if ((rc = align_profile_fit(&m->rl, &m->ph, m->base_ns, &rm->p, &rm->al, &aerr))) {
		char dmg[192];
		/* A damaged ring is the likelier cause (ringload_damage). */
		if (ringload_damage(&m->rl.rf, dmg, sizeof dmg))
			return fail(rm, e, -EINVAL, m->ring_path, "damaged ring (%s), which is the likelier cause: %s: %s",
				    dmg, profile, aerr.msg);
		return fail(rm, e, rc == -ENOMEM ? rc : -EINVAL, profile, "%s", aerr.msg);
	}
	rm->profile = profile;
	const char *string_src = sample_energy_perun_script(&m->rl, rm->script, sizeof rm->script);
	sample_energy_name_script(&m->rl, &rm->p, rm->script, sizeof rm->script);
	align_pyspy_describe(&rm->al, &rm->p, rm->align_text, sizeof rm->align_text);
	rm->fn_of_frame = calloc(rm->p.frames.n ? rm->p.frames.n : 1, sizeof *rm->fn_of_frame);
	rm->fn_first = calloc(rm->p.frames.n ? rm->p.frames.n : 1, sizeof *rm->fn_first);
	if (!rm->fn_of_frame || !rm->fn_first || pyspy_function_ids(&rm->p, rm->fn_of_frame, rm->fn_first, &rm->nfn) ||
	    pyspy_sites_label(&m->rl.rf, &m->ph, &rm->p, &rm->sites) ||
	    sample_energy_build(m, &rm->p, &rm->al, &rm->sites, string_src, &rm->se))
		return fail(rm, e, -ENOMEM, NULL, "out of memory");
	/* Waiting threads sampled at all means --idle; pyspy.h's guess is
	 * fooled by processes that come and go under --subprocesses. */
	rm->al.idle_dropped = rm->al.idle_dropped && rm->se.idle_share < 0.01;
	return 0;
}

int run_model_open(struct run_model *rm, const struct run_opts *o, struct em_error *e)
{
	int rc;
	memset(rm, 0, sizeof *rm);
	if ((rc = energy_model_open(&rm->m, &o->em, e)))
		return rc;
	if (o->need_power && !rm->m.nsen)
		return fail(rm, e, -EINVAL, o->em.perun,
			    "the file holds no power sensors (psutil only: no RAPL or GPU was readable): "
			    "no energy to give to functions");
	if (o->profile)
		return open_profile(rm, o->profile, e);
	return 0;
}

void run_model_close(struct run_model *rm)
{
	if (rm->have_profile) {
		/* Each part is zeroed until built, and its free takes zeros. */
		sample_energy_free(&rm->se);
		pyspy_sites_free(&rm->sites);
		free(rm->fn_of_frame);
		free(rm->fn_first);
		align_pyspy_free(&rm->al);
		pyspy_profile_free(&rm->p);
	}
	energy_model_close(&rm->m);
	memset(rm, 0, sizeof *rm);
}
