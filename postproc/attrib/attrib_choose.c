/* attrib_choose.c - what --method asks for, as one call (see attrib.h). */
#include "attrib/attrib.h"

static int dispatch(enum attrib_choice method, const struct attrib_series *s, const struct attrib_interval *iv,
		    size_t n_iv, size_t n_phase, const struct attrib_opts *o, struct attrib_result *out)
{
	switch (method) {
	case ATTRIB_CHOICE_INTEGRATE:
		return attrib_integrate(s, iv, n_iv, n_phase, out);
	case ATTRIB_CHOICE_REGRESS:
		return attrib_regress(s, iv, n_iv, n_phase, o, out);
	case ATTRIB_CHOICE_SPLIT:
	case ATTRIB_CHOICE_AUTO:
		return attrib_split(s, iv, n_iv, n_phase, o, out);
	case ATTRIB_CHOICE_PERPHASE:
	default:
		return attrib_auto(s, iv, n_iv, n_phase, o, out);
	}
}

int attrib_choose(enum attrib_choice method, const struct attrib_series *s, const struct attrib_interval *iv,
		  size_t n_iv, size_t n_phase, const struct attrib_opts *o, struct attrib_result *out)
{
	int rc = dispatch(method, s, iv, n_iv, n_phase, o, out);
	/* Every method's rows rest on the same windows: a slow response
	 * biases them all alike. */
	if (!rc && o && o->blur_s > 0)
		attrib_widen_blur(iv, n_iv, o->blur_s, out);
	return rc;
}
