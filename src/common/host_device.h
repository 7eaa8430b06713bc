// The one place that looks at __CUDACC__: qualifiers and switches for code compiled both by g++
// (host executor) and by nvcc (CUDA kernels). Every portable header includes this instead.
#pragma once

#if defined(__CUDACC__)
#define CC_HD __host__ __device__
#define CC_HOST_ONLY __host__
#else
#define CC_HD
#define CC_HOST_ONLY
#endif

// 1 while nvcc compiles device code, 0 for every host pass (g++ or nvcc's host side).
#if defined(__CUDA_ARCH__)
#define CC_DEVICE_COMPILE 1
#else
#define CC_DEVICE_COMPILE 0
#endif

#define CC_FORCE_INLINE inline __attribute__((always_inline))

// A function kept out of line in device code, where inlining copies of a large body into every
// caller costs nvcc more time than the call costs the kernel; host code keeps g++'s choice.
#if defined(__CUDA_ARCH__)
#define CC_DEVICE_NOINLINE __noinline__
#else
#define CC_DEVICE_NOINLINE
#endif
