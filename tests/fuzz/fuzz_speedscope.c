/*
 * fuzz_speedscope.c - libFuzzer target for the py-spy speedscope reader.
 * fuzz-sources: postproc/pyspy_tables.c postproc/pyspy_read.c postproc/pyspy_speedscope.c postproc/pyspy_chrometrace.c postproc/pyspy_raw.c postproc/pyspy_energy.c
 * fuzz-libs: yajl
 * fuzz-seeds: tests/fuzz/seeds/speedscope ../shared/fixtures/pyspy
 */
#include "fuzz_pyspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_pyspy_one(data, size, PYSPY_FMT_SPEEDSCOPE);
}
