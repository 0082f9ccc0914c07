#!/usr/bin/env bash
# Unit tests of single postproc modules (tests/unit/test_<module>.c, built
# by make from the module and what it needs): CSV quoting and numbers
# (output/csv.c), timeline seconds to unix_s (model/timebase.c), phases
# from ring events (phase/phase_set.c), the GPU reading response table
# (attrib/sensor_model.c), the GPU sensor's period and window from data
# (attrib/sensor_ident.c), plausibility flags of phase rows
# (model/phase_checks.c), sacct's energy lines (input/slurm_acct.c),
# perun's timed reads paired with its stamps (align/perun_reads.c).  Runs every one, fails if any fails.
set -u
cd "$ANCHOR_ROOT"
B=${BUILD:-$ANCHOR_ROOT/build}
tests="test_csv test_timebase test_phase_set test_sensor_model test_sensor_ident test_phase_flags test_slurm_acct test_perun_reads"
targets=""
for t in $tests; do targets="$targets $B/$t"; done
make -s B="$B" $targets || exit 1
rc=0
for t in $tests; do
	"$B/$t" || { echo "FAILED: $t"; rc=1; }
done
exit $rc
