/*
 * perun_spelling.h - perun's older command-line spellings, recognised only
 * to explain what perun 1.0 calls them, never to guess a value from them.
 *
 * Read from perun's source (git tags v0.1.1 .. v0.9.1, and 1.0.0 as
 * installed: perun/api/cli.py, perun/configuration.py, perun/core.py):
 *   - up to 0.3 the monitor options came before the subcommand, `perun
 *     --format hdf5 --sampling_rate 0.5 monitor app.py`; perun 1.0 knows no
 *     such option there and takes `hdf5` for the subcommand ("invalid
 *     choice: 'hdf5'", exit 2, nothing recorded);
 *   - up to 0.7 the sampling period was `--sampling_rate` (seconds between
 *     samples despite the name; config key monitor.sampling_rate), from 0.8
 *     `--sampling_period` (1.0 also `--sampling-period`);
 *   - up to 0.3 `--raw` (1.0 always writes its HDF5), `--bench` (now
 *     `--format bench`), `--bench_rounds`, `--bench_warmup_rounds` (now
 *     `--rounds`, `--warmup_rounds`); up to 0.4 `--emissions_factor` (now
 *     `--emission_factor`);
 *   - perun 1.0 parses with argparse's parse_known_args: an option it does
 *     not know is dropped without a word (`--sampling_rate=0.5`: sampled
 *     at the default 1 s), and a value after one (`--sampling_rate 0.5
 *     app.py`) becomes the script to run (perun logs "File 0.5 does not
 *     exist" and exits 0);
 *   - 0.8 .. 1.0 reset a sampling period below 0.1 s to 1 s.
 * perun stores no command line: a multirun's attributes hold its config as
 * "section.option" strings (core.py _process_multirun), so an older file
 * shows the older keys; the command line itself is what libanchor recorded
 * of perun's process in the ring.  What perun really did (its config, its
 * timesteps) is what anchorpost uses; these notes say why it differs from
 * what the command asked for.
 */
#ifndef ANCHORPOST_PERUN_SPELLING_H
#define ANCHORPOST_PERUN_SPELLING_H

#include <stddef.h>

#include "input/perun.h"

/* 1 when argv (a command line as the ring holds it, words separated by
 * spaces) runs `perun ... monitor` (perun, python -m perun, or the
 * emulator's python -m anchor_emul.perun). */
int perun_spelling_is_monitor(const char *argv);

/* Notes on argv's old or unknown spellings, appended to buf as lines
 * ending in '\n' (buf stays a string; cut at cap).  mr (NULL: unknown)
 * is the multirun perun recorded, for the period it really used.  The
 * last note, when any came before, is the command in perun 1.0's
 * spelling.  Returns the number of notes. */
size_t perun_spelling_argv(const char *argv, const struct perun_multirun *mr, char *buf, size_t cap);

/* Notes on a multirun's config keys that perun 1.0 spells differently
 * (monitor.sampling_rate, output.raw, benchmarking.bench_*), appended to
 * buf as lines ending in '\n'.  Returns the number of notes. */
size_t perun_spelling_config(const struct perun_multirun *mr, char *buf, size_t cap);

/* The multirun's config value of "section.option", or NULL. */
const char *perun_config_get(const struct perun_multirun *mr, const char *key);

#endif
