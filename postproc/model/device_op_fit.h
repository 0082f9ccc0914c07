/*
 * device_op_fit.h - joules per device op (kernel, memcpy, memset of a
 * torch.profiler trace) fitted on the device's own busy time.
 *
 * Why not the phase rule (op_table.h): a device-side phase holds its
 * kernels and the device's idle time around them (the launch lag, a
 * sync), and its fitted power is their average, so a kernel that runs at
 * 250 W inside a phase that idles at 50 W for a quarter of its time got
 * 195 W x its time: 27 % low, outside its interval (t_gpu_edges_slow,
 * check 6).  Here each device op name is a "phase" of its own on the
 * device timeline (the union of its rows' times, all streams), the rest
 * of the sensor's span is the unattributed row (idle and everything
 * else), and the device group's sensors are attributed over that by the
 * same methods as phases (attrib_choose), so a kernel gets the power the
 * windows say the device drew while it ran, with the method's interval.
 * A GPU's board gain is applied as for phases (sensor_model.h).
 */
#ifndef ANCHORPOST_DEVICE_OP_FIT_H
#define ANCHORPOST_DEVICE_OP_FIT_H

#include <stddef.h>

#include "attrib/attrib.h"
#include "model/run_model.h"

struct device_op_fit {
	size_t nf;                /* the profile's frames */
	double *j, *lo, *hi;      /* per frame: the group's joules and 95 % bounds */
	unsigned char *has;       /* per frame: 1 where fitted here */
	unsigned *flags;          /* per frame: ATTRIB_FLAG_* of its row */
	double *rows_s;           /* per frame: its rows' summed seconds (each row's share of j) */
};

/* Fit group (an index into rm->m.groups) over the device rows of rm's
 * profile whose stack is the op alone.  0 (out->has all 0 when there is
 * nothing to fit, or too few sensor windows), or -ENOMEM / -EINVAL. */
int device_op_fit(const struct run_model *rm, size_t group, enum attrib_choice method, const struct attrib_opts *ao,
		  struct device_op_fit *out);

void device_op_fit_free(struct device_op_fit *f);

#endif
