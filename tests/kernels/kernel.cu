// Device code for the kernel-image tests: tests/kernels/kernels.cmake compiles
// it with nvcc for many targets. The architecture-specific branch makes the
// 'a' builds differ from the plain ones where the toolkit defines the
// feature macro; the family builds share the plain code path.
extern "C" __global__ void ptb_test_axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n");
#endif
  y[i] = a * x[i] + y[i];
}

extern "C" int ptb_test_axpy_launch(float* y, const float* x, float a, int n) {
  ptb_test_axpy<<<(n + 127) / 128, 128>>>(y, x, a, n);
  return 0;
}
