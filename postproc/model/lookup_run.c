/*
 * lookup_run.c - the writers' lookups into the ring, the run and perun's
 * file (see lookup.h).
 */
#include "model/lookup.h"

#include "align/pyspy_sites.h"
#include "anchors/ring_procs.h"

const struct ring_proc *lookup_proc(const struct ring_procs *t, uint32_t pid)
{
	return ring_procs_find(t, pid);
}

uint64_t lookup_stack_phases(const struct run_model *rm, uint32_t stack)
{
	return pyspy_sites_set(&rm->sites, stack);
}

const char *lookup_kind_name(unsigned kind)
{
	return ring_kind_name(kind);
}

void lookup_event_name(const struct ring_event *e, char *buf, size_t cap)
{
	ringload_event_name(e, buf, cap);
}

size_t lookup_perun_power_sensors(const struct perun_file *pf)
{
	return perun_count_power_sensors(pf);
}

const char *lookup_perun_metric(const char *unit)
{
	return perun_metric_name(unit);
}

int lookup_perun_is_power(const struct perun_sensor *s)
{
	return perun_sensor_is_power(s);
}

int lookup_perun_energy_j(const struct perun_sensor *s, double *energy_j)
{
	return perun_sensor_energy_j(s, energy_j);
}
