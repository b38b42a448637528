// Functions compiled for both the GPU and the host: the kernels' index math
// that the CPU tests check.
#pragma once

#if defined(__CUDACC__)
#define PTB_HOST_DEVICE __host__ __device__
#else
#define PTB_HOST_DEVICE
#endif
