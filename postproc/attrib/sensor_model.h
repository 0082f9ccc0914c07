/*
 * sensor_model.h - how a GPU's power reading responds to the power drawn
 * (the forward model the regression uses for NVML readings).
 *
 * perun's GPU power is nvmlDeviceGetPowerUsage, a reading of power, not an
 * energy counter.  What one reading stands for depends on the GPU:
 *   - NVML's own documentation (nvmlDeviceGetPowerUsage): "On Ampere
 *     (except GA100) or newer GPUs, the API returns power averaged over 1
 *     sec interval. On GA100 and older architectures, instantaneous power
 *     is returned."
 *   - arXiv 2312.02741 (Yang, Adamek, Armour, "Part-time Power
 *     Measurements: nvidia-smi's Lack of Attention", SC24): on A100 and
 *     H100 only 25 % of the runtime is sampled for power; the other 75 %
 *     is unseen.
 * So a reading is modelled as the mean power over the window_s before it
 * (0: a point reading), computed from a fraction `coverage` of that window.
 * Partial coverage does not bias the mean when the sampled slices fall
 * independently of the phases, it adds noise: the regression's block
 * bootstrap sees it in the residuals and widens the intervals.  A phase
 * locked to the sampling pattern would be biased; nothing in the readings
 * can tell (README, "what cannot be known").
 * The table matches the GPU name perun stores (HDF5 attribute `name`);
 * `--gpu-window S` / `--gpu-coverage F` override it.
 */
#ifndef ANCHORPOST_SENSOR_MODEL_H
#define ANCHORPOST_SENSOR_MODEL_H

struct sensor_response {
	double window_s;    /* mean over this long before each read (0: point) */
	double coverage;    /* fraction of the window actually sampled (1: all) */
	const char *model;  /* the table row that matched ("default" if none) */
	const char *source; /* where the numbers come from */
};

/* Overrides from the command line; < 0: use the table. */
extern double sensor_model_window_override_s;
extern double sensor_model_coverage_override;

/* Board gain (reported / true power) from an external meter, --gpu-gain;
 * < 0: uncalibrated.  Each board's gain is off by about ±5 % (arXiv
 * 2312.02741, 70+ GPUs against a meter): an uncalibrated absolute GPU
 * joule carries that floor in its interval; a share between phases on
 * one GPU does not (the gain cancels). */
extern double sensor_model_gpu_gain;
#define SENSOR_GAIN_FLOOR 0.05

/* A GPU energy e with interval [*lo, *hi] (NAN: none): divided by the
 * calibrated gain, or else the interval widened by the gain floor (added
 * in quadrature to what is there, independent errors).  Returns the energy. */
double sensor_model_gpu_joules(double e, double *lo, double *hi);

/* The response from the run's own data (attrib/sensor_ident.h): a reading
 * taken at t holds the window [u - d - W, u - d] of the last update u <= t,
 * and t - u is spread over the period P, so it stands, on average, for a
 * box of P + 2d + W before t (the same centre, wide enough for every
 * position) of which W is sampled.  --gpu-window/--gpu-coverage still win. */
void sensor_model_identified(double period_s, double window_s, double delay_s, struct sensor_response *out);

/* The response of a GPU named `name` (may be NULL), overrides applied. */
void sensor_model_lookup(const char *name, struct sensor_response *out);

#endif
