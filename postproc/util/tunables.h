/*
 * tunables.h - every number anchorpost chose rather than measured, in one
 * place, each with the reason for its value (SQLite's sqliteLimit.h style).
 * Change one here and the option defaults, the help text and the code that
 * uses it follow.
 */
#ifndef ANCHORPOST_TUNABLES_H
#define ANCHORPOST_TUNABLES_H

/* --- ring <-> perun alignment (energy_model.c, mring.c) --- */

/* Half-width, s, of the offset search around perun's execution_dt: that
 * timestamp is taken in Python around the monitored call and lands within
 * a second or two of the first sample even on a loaded machine; 3 s covers
 * it without letting the fit wander to a different, similar-looking step. */
#define ANCHOR_FIT_RANGE_S 3.0
/* The largest --fit-range accepted: beyond an hour the two files do not
 * describe the same run. */
#define ANCHOR_FIT_RANGE_MAX_S 3600.0

/* --- a sensor's own lag behind perun's exact stamps (model/sensor_lag.c) --- */

/* Half-width, s, of the lag search: the timing error assumed at every
 * edge when the lag is not fitted (attrib_split.c's SPLIT_TIMING_S, 3 ms:
 * perun's reads after its stamp plus a RAPL counter's last update).  The
 * lags measured on the emulated sensor lie within 0.3-0.9 ms of it
 * (BENCHMARKS.md section 20); one the data place only at this edge is not
 * decided. */
#define ANCHOR_LAG_RANGE_S 0.003
/* Grid steps, s: 0.2 ms over the whole range (31 fits) finds the valley,
 * which is a few tenths of a ms wide on 0.1 s windows; 25 us inside it
 * (17 fits) puts its bottom and its 95 % set to well under its width. */
#define ANCHOR_LAG_COARSE_S 0.0002
#define ANCHOR_LAG_FINE_S 0.000025
/* The least timing error, s, the intervals allow once the lag is fitted:
 * a counter that updates about every ms (RAPL, and the emulated sensor's
 * 1 ms tick) reads between 0 and 1 ms stale at random, so the lag is
 * known to half an update at best, whatever its likelihood-ratio set says
 * (which takes the windows' residuals as independent).  Measured on five
 * 200-step layer recordings (1-10 ms phases): a quarter of an update left
 * 1 of 70 rows outside its interval (+67 % on a 5 J row), half of it
 * covered all 70 at a median half width of 15-27 %. */
#define ANCHOR_LAG_FLOOR_S 0.0005
/* A sensor whose best lag sits at the range's edge answers more slowly
 * than a read lag explains (a response that averages its input: the
 * emulated CPU-activity model's 50 ms window of CPU time).  The search
 * then goes out to ANCHOR_LAG_SLOW_RANGE_S in ANCHOR_LAG_SLOW_COARSE_S
 * steps (101 fits, only then); further than half a 0.1 s period would
 * match an edge with the next window's.  A decided slow response moves
 * the windows by its lag like a read lag, and the intervals allow at
 * least half the lag: an averaging response turns a step into a ramp,
 * and moving a box of width W by its mean delay W/2 leaves an eighth of
 * W on each edge; half the lag is twice that, for responses less even
 * than a box. */
#define ANCHOR_LAG_SLOW_RANGE_S 0.05
#define ANCHOR_LAG_SLOW_COARSE_S 0.001

/* --- torch.profiler traces (align/align_torch.c) --- */

/* How far, ms, torch's own clock reading (ts + baseTimeNanoseconds, the
 * system clock sampled through its approximate TSC clock) may be from the
 * realtime the ring's SYNC records pair with CLOCK_MONOTONIC, when no
 * record_function range pairs with an anchor.  Measured on torch 2.13 CPU
 * (tests/torch/t_torch_align): within 0.05 ms; 1 ms leaves room for a
 * realtime slewed by NTP between the two reads and a coarser TSC fit. */
#define TORCH_CLOCK_PRIOR_MS 1.0

/* --- perun's file (perun_load.c) --- */

/* Largest |time| in s a perun series or region may hold, from its origin
 * (the host's first sample, rank 0's start): 10^9 s is 31 years, longer
 * than any run; a larger value is a damaged file, not a measurement. */
#define PERUN_TIME_MAX_S 1e9

/* --- perun's impossible readings (model/sensor_glitch.c, attrib_glitch.c) --- */

/* The most power a reading of one sensor can show, W; above it a reading
 * is a glitch, not a measurement.  What a glitch looks like: a RAPL
 * counter that steps back once (a reset, a read racing an update) is
 * taken by perun 1.0 for a full wrap, 262,143 J on many Intel parts: 2.6
 * MW in a 0.1 s window, 262 kW at perun's default 1 s, still 2.6 kW at
 * 100 s; NVML's power read fails as 0 or as garbage up to uint32 mW
 * (4.3 MW).  Why not the run's own distribution (median/MAD): training
 * alternates idle and busy phases, so legitimate windows sit hundreds of
 * MADs above the median (60 W idle GPU, 700 W bursts); a hard bound far
 * above any hardware and far below any glitch separates them.
 *
 * CPU package (RAPL): the largest server parts are rated 500 W (AMD EPYC
 * 9965, Intel Xeon 6980P); short-term limits (PL2) allow ~1.2-1.5x that. */
#define ANCHOR_GLITCH_CPU_MAX_W 1500.0
/* DRAM (RAPL): 24 DDR5 RDIMMs at 10-15 W each, ~360 W; 4x room. */
#define ANCHOR_GLITCH_RAM_MAX_W 1500.0
/* GPU (NVML): B200 1 kW, the largest boards up to 1.2 kW per GPU. */
#define ANCHOR_GLITCH_GPU_MAX_W 3000.0
/* Any other device group perun reports power for. */
#define ANCHOR_GLITCH_OTHER_MAX_W 10000.0
/* NVML: perun stores the GPU's default power limit (valid_max); readings
 * stay within the enforced limit but for short excursions, and a user may
 * raise the limit above the default (RTX 4090: 450 -> 600 W, 1.33x).
 * Twice the default is above both, and tighter than the hard bound. */
#define ANCHOR_GLITCH_LIMIT_FACTOR 2.0

/* --- attribution (attrib_regress.c) --- */

/* Bootstrap resamples for regression intervals: 200 gives stable 95 %
 * percentiles (the 5th and 195th order statistics) in well under a
 * second for typical phase counts. */
#define ANCHOR_BOOT_RESAMPLES 200

/* --- outputs --- */

/* occurrences.csv gives one occurrence its own joules (attrib_occurrence:
 * its whole windows measured, its two partial ones at its own power) only
 * when it lasts this many sensor periods: the rule attrib_auto uses to
 * integrate a phase (attrib_regress.c choose_methods), and enough whole
 * windows (4 or more) to bound the power at its edges.  A shorter
 * occurrence shares its windows with its neighbours: the data give the
 * phase's mean power over many occurrences (phases.csv), not the power of
 * one, and its cells stay empty. */
#define ANCHOR_OCC_MIN_PERIODS 5.0
/* The timing error assumed at each edge of one occurrence, s, when the
 * sensor's lag is not fitted: perun reads its sensors some ms after it
 * stamps a round (attrib_split.c's SPLIT_TIMING_S, the same 3 ms,
 * measured there); a fitted lag gives its own (model/sensor_lag.h). */
#define ANCHOR_OCC_TIMING_S 0.003
/* With the sensor's lag fitted, how far one read may sit from that mean
 * lag, s, on top of the lag's own range: a counter that updates every ms
 * reads 0 to 1 ms stale, perun reads a sensor 0.1-0.5 ms after its stamp
 * (the emulated updater can be late too).  Measured on the 0.7 s
 * occurrences of tests/report/t_occurrences_truth_slow.py's recordings
 * (package and dram): the lag's range alone let 4 of 48 miss their exact
 * joules (by the equivalent of 0.01-0.3 ms), half an update on top 1 of
 * 80; a whole update none of 128 (8 recordings, 3 beside stress-ng --cpu
 * 4), widest half width 0.28-0.45 % (0.57-0.65 % with the 3 ms). */
#define ANCHOR_OCC_READ_S 0.001

/* `timeline` bin width, s: ten bins per second resolve a training step
 * of a few hundred ms while a one-hour run stays at 36000 rows. */
#define ANCHOR_TIMELINE_BIN_S 0.1

/* --- record --- */

/* py-spy's rate: 100 Hz is py-spy's own default, a sample per 10 ms
 * resolves phases of tens of ms at a few percent of one core. */
#define ANCHOR_RECORD_PYSPY_RATE_HZ 100.0
/* perun's sampling period, s: its shortest (perun resets smaller values to
 * 1 s); RAPL counters update every ms, so nothing finer is lost. */
#define ANCHOR_RECORD_PERUN_PERIOD_S 0.1

/* --- py-spy <-> ring alignment (align_pyspy.c) --- */

/* Slack on process lifetimes when bounding the offset: py-spy's ts is
 * taken when it processes a sample, a little after reading the stack. */
#define ALIGN_PYSPY_LIFETIME_SLACK_S 0.05
/* py-spy's chrometrace stamps a sample when its main thread dequeues it,
 * which under load runs late by up to ~1 s: the last sample bounds the
 * pulse fit's offset from above only with this much room (a tight bound
 * pinned the fit 83 ms early in a loaded t_e2e_demo_slow run). */
#define ALIGN_PYSPY_STAMP_LAG_S 1.0
/* Coarse grid of the offset scan: 1 ms is below py-spy's 10 ms period,
 * so the best cell is never skipped. */
#define ALIGN_PYSPY_COARSE_STEP_S 1e-3
/* Fine grid of the final refinement: 10 us, finer than any evidence. */
#define ALIGN_PYSPY_FINE_STEP_S 1e-5
/* Largest clock-rate difference accepted between the two streams. */
#define ALIGN_PYSPY_MAX_DRIFT 0.5
/* Samples further apart than this, s, belong to different sync-pulse
 * bursts: a burst's samples are 10 ms apart, bursts about a second. */
#define ALIGN_PYSPY_PULSE_GAP_X_S 0.3
#define ALIGN_PYSPY_MAX_SCALE_DEV 1.0
/* Half-width, s, of the search around a pulse burst's predicted offset:
 * the burst gap (above), so a fit never jumps to the neighbouring burst. */
#define ALIGN_PYSPY_PULSE_HALF_S 0.3
/* Bursts closer than this, s, belong to one sync pulse (its bursts are
 * 20 ms apart; a user's periodic pulses 0.3 s or more: a 1 s threshold
 * merged pulses every 10 training steps into one). */
#define ALIGN_PYSPY_PULSE_GROUP_GAP_S 0.25
/* Half-width, s, of the refit over all pulses once the scale is known:
 * the two per-burst fits already agree within a few ms. */
#define ALIGN_PYSPY_REFIT_HALF_S 0.01
/* Without pulses, phases are matched against frames over the first 30 s
 * only: enough for many steps of any training loop, and the scan stays
 * linear in that window rather than the whole run. */
#define ALIGN_PYSPY_FRAMES_WINDOW_S 30.0
/* Upper bound on the offset when the profiled process never ended in the
 * ring (it was still running): an hour past its start. */
#define ALIGN_PYSPY_OPEN_SPAN_S 3600.0
/* Placement confidence (align_pyspy_confidence.c, issue 21).  Shifts of
 * the whole mapping searched for an offset that fits the phase sites as
 * well: out to 5 s (a training step is well below that; a longer period
 * that fits as well is beyond what labels can tell anyway), a shift
 * counting as "as well" when it loses at most 3 % of the labelled
 * samples (noise: samples on phase edges), the scan capped in work. */
#define ALIGN_PYSPY_AMBIG_SPAN_S 5.0
#define ALIGN_PYSPY_AMBIG_TOL 0.03
#define ALIGN_PYSPY_AMBIG_MAX_WORK 2e8
/* An ambiguity beyond 1 s leaves the phase of every sample of a typical
 * step open: not a placement any more, a CANNOT PLACE. */
#define ALIGN_PYSPY_AMBIG_MAX_MS 1000.0
/* Fewer labelled samples than this say nothing about the whole run. */
#define ALIGN_PYSPY_MIN_LABELS 20
/* py-spy's rate per phase (labelled samples over the phase's exact time,
 * align_pyspy_confidence.c phase_rates): highest over lowest, each two
 * Poisson sigmas towards the other, above this says py-spy did not keep
 * one rate (it falls behind while the host computes and catches up while
 * it sleeps), which the count floor reads as time error.  Counting noise
 * alone gave 0.55-1.18 over 64 recordings at 100 Hz; the count floors
 * that were more than 3x the true p95 time error + a period had
 * 1.60-4.50 (61 at 500 Hz, tests/pyspy/t_pyspy_clock_slow.py). */
#define ALIGN_PYSPY_RATE_RATIO 1.4
/* The step-slip check (align_pyspy_slip.c): another step of the phase
 * pattern "holds the labels as well" when all but 1 + 0.25 sqrt(n) of
 * the n labelled samples lie within half a sample period of a phase of
 * their set.  Measured on 22 real recordings (100 Hz, about 230 labels,
 * and one of 9555 at 500 Hz): where the kept mapping was a step late, the
 * true step missed 0, 0 and 4; where it was right, the nearest other step
 * missed 4-21 (one of 19 at 4: a needless STEP OPEN) and 148 of 9555.
 * Misses from samples on phase edges grow like sqrt(n), not n: a share
 * (3 % of n) would have opened the 9555-label run.  Steps tried each
 * way: one (the slips seen were one step). */
#define ALIGN_PYSPY_SLIP_TOL_SQRT 0.25
#define ALIGN_PYSPY_SLIP_MAX_STEPS 1
/* The share of labelled samples (or of phase-frames' in-phase samples)
 * inside their phases below which the placement is not trusted: the
 * project's placement target (DESIGN.md: >= 90 %). */
#define ALIGN_PYSPY_MIN_PLACED 0.9
/* speedscope with --idle starts with the process: a phases-vs-frames
 * offset more than 1 s from the prior (py-spy's attach takes ~0.1 s) is
 * not confirmed by anything. */
#define ALIGN_PYSPY_PRIOR_SLACK_S 1.0
/* More than 5 % of the reference thread's samples (+5) outside their
 * process's life: the mapping, not the samples, is wrong (measured: a
 * right placement under stress-ng had 8 of 411 past the exit, py-spy's
 * lag; Lightning's 5 s-off offset had 569 of 1500). */
#define ALIGN_PYSPY_LIFE_TOL 0.05

/* GPU power sensor identification (attrib/sensor_ident.h). */
/* Updates needed before a period is stated: 20 grid points fix a step to
 * a few µs with 1 ms ticks, and fewer is a few seconds of any run. */
#define SENSOR_IDENT_MIN_UPDATES 20
/* Phase edges inside the fitted span needed before a window is stated:
 * each edge crossing a window is what separates W from d and from the
 * phases' powers; a run of one long phase has none. */
#define SENSOR_IDENT_MIN_EDGES 10
/* Events farther from the grid than this share of the step are not one
 * grid (a sensor that does not update periodically). */
#define SENSOR_IDENT_GRID_MAX_DEV 0.25
/* A window is decided when its interval is at most this share of the
 * period wide (or SENSOR_IDENT_DECIDED_MIN_S): wider says nothing a table
 * would not. */
#define SENSOR_IDENT_DECIDED_SHARE 0.2
#define SENSOR_IDENT_DECIDED_MIN_S 0.004
/* ... or at most this share of the window itself (a 1 s average known to
 * +-2.5 % serves the response model as well as a 25 ms window to 4 ms). */
#define SENSOR_IDENT_DECIDED_WINDOW_SHARE 0.05
/* ... and the model explains at least this share of the readings'
 * variance (a poorer fit is a sensor the model does not describe). */
#define SENSOR_IDENT_MIN_R2 0.5
/* Coarse grid: this many steps over the period (at least 1 ms); the fine
 * grid then steps a tenth of that over two coarse steps either side. */
#define SENSOR_IDENT_COARSE_STEPS 100
#define SENSOR_IDENT_COARSE_MIN_S 0.001
/* Update periods across P's interval at which (W, d) are fitted and their
 * regions joined (sensor_ident.c; odd, so that the middle one is P). */
#define SENSOR_IDENT_PERIODS 5
/* chi2 with 2 degrees of freedom at 95 %: the joint (W, d) region. */
#define SENSOR_IDENT_CHI2_2 5.99
/* Longest averaging window sought, s: NVML's 1 s "average" power
 * (nvmlDeviceGetPowerUsage on Ampere and newer, per NVML's docs) with
 * room either side. */
#define SENSOR_IDENT_MAX_WINDOW_S 1.5
/* Phases (plus idle) the per-candidate least squares solves for. */
#define SENSOR_IDENT_MAX_PHASES 31

#endif
