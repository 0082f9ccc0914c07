/*
 * fuzz_raw.c - libFuzzer target for the py-spy raw reader.
 * fuzz-sources: postproc/util/diag.c postproc/input/input_file.c postproc/util/file_ids.c postproc/input/pyspy_tables.c postproc/input/pyspy_read.c postproc/input/pyspy_speedscope.c postproc/input/pyspy_chrometrace.c postproc/input/pyspy_raw.c postproc/input/torch_trace.c postproc/input/gzip_input.c postproc/output/pyspy_energy.c postproc/model/lookup.c
 * fuzz-libs: yajl zlib
 * fuzz-seeds: tests/fuzz/seeds/raw
 */
#include "fuzz_pyspy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_pyspy_one(data, size, PYSPY_FMT_RAW);
}
