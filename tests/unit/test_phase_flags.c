/*
 * test_phase_flags.c - model/phase_checks.c: the plausibility flags of a
 * phase row (phase_checks.h; their text: output/phase_flags.h), on a
 * hand-made run model: one thread with a 2 s phase "fwd" over 0.1 s
 * windows of 100 W, a 50 ms "burst" right after it inside a 1000 W window, and anchor's own "anchor.sync".
 * Known answers for each flag and its edges: the 1 % slack, the window
 * just before and after the phase not counted, bursts shorter than a window never
 * "above max", a group's sensors adding up, other groups and NaN windows
 * ignored, the unattributed row and a scope without a thread, and the
 * flags' text.  Exits non-zero when a check fails.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "anchors/ring_format.h"
#include "model/energy_model.h"
#include "output/phase_flags.h"

#include "unit_check.h"

#define NW 51 /* sample times 0, 0.1, ..., 5.0 s */

static struct energy_model m;
static struct phase_scope sr;
static struct phase_group_row rows[4 * 2];
static double total_j[2] = {500, 20000};
static struct em_sensor sen[3];
static struct perun_sensor ps[3];
static double t_tl[NW], pkg0[NW], pkg1[NW], gpu[NW];
static char *groups[] = {"cpu", "gpu"};
static int fwd, burst, sync_ph;

static void add(struct ring_event *e, uint64_t ts, int kind, const char *name)
{
	memset(e, 0, sizeof *e);
	e->ts_ns = ts;
	e->kind = (uint8_t)kind;
	e->pid = 100;
	e->tid = 1;
	e->text = name;
	e->text_len = (uint32_t)strlen(name);
}

static void setup(void)
{
	struct ring_event ev[6];
	add(&ev[0], 200000000, ANCHOR_KIND_BEGIN, "anchor.sync");
	add(&ev[1], 300000000, ANCHOR_KIND_END, "anchor.sync");
	add(&ev[2], 1000000000, ANCHOR_KIND_BEGIN, "fwd");
	add(&ev[3], 3000000000, ANCHOR_KIND_END, "fwd");
	add(&ev[4], 3000000000, ANCHOR_KIND_BEGIN, "burst");
	add(&ev[5], 3050000000, ANCHOR_KIND_END, "burst");
	if (phase_set_build(ev, 6, NULL, &m.ph)) {
		printf("phase_set_build failed\n");
		failures++;
		return;
	}
	fwd = phase_set_find(&m.ph, "fwd");
	burst = phase_set_find(&m.ph, "burst");
	sync_ph = phase_set_find(&m.ph, "anchor.sync");
	for (int i = 0; i < NW; i++) {
		t_tl[i] = i / 10.0;
		pkg0[i] = 60;
		pkg1[i] = 40; /* a second package: the group's power is the sum */
		gpu[i] = 5000; /* another group: never counted for cpu */
	}
	pkg0[31] = 960; /* window (3.0, 3.1]: after fwd, holds the burst */
	pkg0[10] = 460; /* window (0.9, 1.0]: before fwd, not one of its windows */
	pkg0[20] = NAN; /* a window perun could not read: skipped */
	for (int s = 0; s < 3; s++) {
		ps[s].values = s == 0 ? pkg0 : s == 1 ? pkg1 : gpu;
		ps[s].n = NW;
		sen[s].ps = &ps[s];
		sen[s].group = s < 2 ? "cpu" : "gpu";
		sen[s].ser.n = NW;
		/* what attribution reads (phase_flags takes window powers from it) */
		sen[s].ser.value = ps[s].values;
		sen[s].ser.t_s = t_tl;
		sen[s].ser.kind = ATTRIB_WINDOW_AVG_W;
		sen[s].t_tl = t_tl;
	}
	m.base_ns = 0;
	m.sen = sen;
	m.nsen = 3;
	m.groups = groups;
	m.ngroups = 2;
	sr.thr = (long)m.ph.primary;
	sr.row = rows;
	sr.total_j = total_j;
}

/* Flags of phase k in group 0 (cpu) with energy and interval in W over
 * self_s seconds. */
static unsigned check(int k, double self_s, double mean_s, double lo_w, double w, double hi_w, double *maxw)
{
	struct phase_group_row *r = &sr.row[(size_t)k * m.ngroups];
	r->energy_j = w * self_s;
	r->lo_j = lo_w * self_s;
	r->hi_j = hi_w * self_s;
	return phase_flags_check(&m, &sr, (size_t)k, 0, self_s, mean_s, maxw);
}

static void test_above_max(void)
{
	double maxw;
	unsigned f;
	f = check(fwd, 2, 2, 150, 160, 170, &maxw);
	CHECK(f == PHASE_FLAG_ABOVE_MAX, "150 W..170 W over 100 W windows: flags %#x", f);
	/* The window after the phase (960+40 W) is not one of its windows. */
	CHECK(maxw == 100, "fwd's highest window %g W, want 100 (60 + 40)", maxw);
	f = check(fwd, 2, 2, 90, 150, 170, &maxw);
	CHECK(f == PHASE_FLAG_POINT_ABOVE_MAX, "estimate above, interval reaching below: flags %#x", f);
	f = check(fwd, 2, 2, 95, 100.9, 110, &maxw);
	CHECK(f == 0, "within the 1 %% slack: flags %#x", f);
	f = check(fwd, 2, 2, 95, 101.5, 110, &maxw);
	CHECK(f == PHASE_FLAG_POINT_ABOVE_MAX, "beyond the 1 %% slack: flags %#x", f);
	/* Instances shorter than a window: a burst may exceed every mean. */
	f = check(fwd, 2, 0.05, 150, 160, 170, &maxw);
	CHECK(f == 0, "mean instance 0.05 s under 0.1 s windows: flags %#x", f);
	f = check(burst, 0.05, 0.05, 1500, 1600, 1700, &maxw);
	CHECK(f == 0 && maxw == 1000, "burst: flags %#x, max window %g W (want 1000)", f, maxw);
}

static void test_zero_under_load(void)
{
	double maxw;
	unsigned f;
	f = check(fwd, 2, 2, 0, 0, 10, &maxw);
	CHECK(f == PHASE_FLAG_ZERO_UNDER_LOAD, "0 J, interval to 10 W under 100 W windows: flags %#x", f);
	f = check(fwd, 2, 2, 0, 0, 60, &maxw);
	CHECK(f == 0, "0 J, interval reaching 60 W (> half the lowest window): flags %#x", f);
	/* The group's lowest power is 60 + 40 W (both packages draw at
	 * once), not the lower package's 40 W alone. */
	f = check(fwd, 2, 2, 0, 0, 30, &maxw);
	CHECK(f == PHASE_FLAG_ZERO_UNDER_LOAD, "0 J, interval to 30 W under 60 + 40 W windows: flags %#x", f);
	f = check(fwd, 2, 2, 0, 1, 10, &maxw);
	CHECK(f == 0, "1 W is not zero: flags %#x", f);
	/* Half the lowest window, on the one-sensor gpu group (5000 W). */
	struct phase_group_row *g = &sr.row[(size_t)fwd * m.ngroups + 1];
	*g = (struct phase_group_row){.energy_j = 0, .lo_j = 0, .hi_j = 2 * 2400};
	f = phase_flags_check(&m, &sr, (size_t)fwd, 1, 2, 2, &maxw);
	CHECK(f == PHASE_FLAG_ZERO_UNDER_LOAD, "gpu 0 J up to 2400 W under 5000 W windows: flags %#x", f);
	g->hi_j = 2 * 2600;
	f = phase_flags_check(&m, &sr, (size_t)fwd, 1, 2, 2, &maxw);
	CHECK(f == 0, "gpu 0 J up to 2600 W (above half of 5000 W): flags %#x", f);
}

static void test_wide_tool_and_rest(void)
{
	double maxw;
	unsigned f;
	/* Interval wider than the group's 500 J. */
	f = check(fwd, 2, 2, 0, 50, 300, &maxw);
	CHECK(f & PHASE_FLAG_WIDE, "600 J wide interval of a 500 J total: flags %#x", f);
	f = check(sync_ph, 0.1, 0.1, 50, 60, 70, &maxw);
	CHECK(f & PHASE_FLAG_TOOL, "anchor.sync not flagged tool: %#x", f);
	CHECK(!(check(fwd, 2, 2, 50, 60, 70, &maxw) & PHASE_FLAG_TOOL), "fwd flagged tool");
	/* The unattributed row: only the interval check, no window power. */
	f = check((int)m.ph.nnames, 2, 2, 100, 200, 400, &maxw);
	CHECK(f == PHASE_FLAG_WIDE && isnan(maxw), "unattributed row: flags %#x, max %g", f, maxw);
	/* A scope without a thread: no timeline to compare with. */
	sr.thr = -1;
	f = check(fwd, 2, 2, 150, 160, 170, &maxw);
	CHECK(f == 0 && isnan(maxw), "no thread: flags %#x, max %g", f, maxw);
	sr.thr = (long)m.ph.primary;
	/* NaN energy: nothing to judge. */
	f = check(fwd, 2, 2, 150, NAN, 170, &maxw);
	CHECK(f == 0, "NaN energy: flags %#x", f);
	/* The gpu group: its own sensor only (5000 W). */
	sr.row[(size_t)fwd * m.ngroups + 1] = (struct phase_group_row){.energy_j = 2 * 4000, .lo_j = 2 * 3000,
								       .hi_j = 2 * 4900};
	f = phase_flags_check(&m, &sr, (size_t)fwd, 1, 2, 2, &maxw);
	CHECK(f == 0 && maxw == 5000, "gpu group: flags %#x, max %g W (want 5000)", f, maxw);
}

static void test_text(void)
{
	char buf[128] = "", small[12] = "";
	phase_flags_text(0, buf, sizeof buf);
	CHECK(!strcmp(buf, ""), "no flags: [%s]", buf);
	phase_flags_text(PHASE_FLAG_WIDE | PHASE_FLAG_TOOL | PHASE_FLAG_ABOVE_MAX, buf, sizeof buf);
	CHECK(!strcmp(buf, "tool;power-above-window-max;interval-wider-than-total"), "three flags: [%s]", buf);
	phase_flags_text(PHASE_FLAG_ZERO_UNDER_LOAD | PHASE_FLAG_POINT_ABOVE_MAX, small, sizeof small);
	CHECK(strlen(small) < sizeof small && !strncmp(small, "point-above", strlen(small)),
	      "cut to the buffer: [%s]", small);
}

int main(void)
{
	setup();
	test_above_max();
	test_zero_under_load();
	test_wide_tool_and_rest();
	test_text();
	phase_set_free(&m.ph);
	if (failures) {
		printf("test_phase_flags: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_phase_flags: all checks passed\n");
	return 0;
}
