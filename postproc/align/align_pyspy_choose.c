/* align_pyspy_choose.c - which method fits the reference thread's offset
 * (align_pyspy.h lists them best first): pulses when any was sampled,
 * else chrometrace's SITE labels, else phases against frames, else the
 * prior alone.  Each method returns 0 (fitted), 1 (the data do not
 * allow it: try the next) or -1 (err set). */
#include "align/align_pyspy_internal.h"

int apy_fit_choose(struct fit_ctx *c)
{
	int rc;
	if (c->nbusy)
		return apy_fit_pulses(c);
	if (c->chrome && (rc = apy_fit_site_labels(c)) <= 0)
		return rc;
	if ((rc = apy_fit_phase_frames(c)) <= 0)
		return rc;
	apy_fit_proc_start(c);
	return 0;
}
