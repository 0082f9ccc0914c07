// gpucheck_kernels.cu - the device check's one kernel (scripts/gpu-check.sh).
//
// spin(iters): every thread runs four independent FMA chains for iters
// rounds.  The launch is the same grid for every size, so the GPU is as
// busy (same power) and the work, hence the time and the energy, scales
// with iters: the 1x/2x/4x kernels of the check.  The result is written
// only when impossible, so the compiler keeps the loop and memory stays
// idle.
extern "C" __global__ void spin(unsigned long long iters, float *out)
{
	float a = threadIdx.x * 1e-3f, b = 1.000001f, c = 0.999999f, d = blockIdx.x * 1e-3f;
	for (unsigned long long i = 0; i < iters; i++) {
		a = fmaf(a, b, c);
		b = fmaf(b, c, d);
		c = fmaf(c, d, a);
		d = fmaf(d, a, b);
	}
	if (a + b + c + d == 1234.5f)
		out[0] = a;
}
