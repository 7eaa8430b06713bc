// gpu_copy_bw: the device-to-device copy rate of one GPU, the reference the GPU check
// (scripts/gpu_check.sh) compares ranks x busbw with. Copies --bytes (256 MiB) from one cudaMalloc
// buffer to another with cudaMemcpyAsync, times each copy with CUDA events, and prints the median
// of --reps (20) as bytes copied per second (each byte is read once and written once).
//
//   gpu_copy_bw [--device N] [--bytes B] [--reps N]
//
// Last line, for scripts: "copy_GBps <median GB/s copied>". Exit status 1 on any CUDA error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

#define CHECK(call)                                                                                       \
  do {                                                                                                    \
    const cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                              \
      fprintf(stderr, "gpu_copy_bw: %s: %s (%s)\n", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

[[noreturn]] void usage(const char* why) {
  fprintf(stderr, "gpu_copy_bw: %s\nusage: gpu_copy_bw [--device N] [--bytes B] [--reps N]\n", why);
  exit(2);
}

long long number(const char* text, long long lo, long long hi, const char* what) {
  char* end = nullptr;
  const long long v = strtoll(text, &end, 0);
  if (end == text || *end != '\0' || v < lo || v > hi) usage(what);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  size_t bytes = 256ull << 20;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: gpu_copy_bw [--device N] [--bytes B] [--reps N]\n");
      return 0;
    }
    if (i + 1 >= argc) usage("every option needs a value");
    if (strcmp(argv[i], "--device") == 0) {
      device = static_cast<int>(number(argv[++i], 0, 1023, "invalid --device"));
    } else if (strcmp(argv[i], "--bytes") == 0) {
      bytes = static_cast<size_t>(number(argv[++i], 1, 1ll << 40, "invalid --bytes"));
    } else if (strcmp(argv[i], "--reps") == 0) {
      reps = static_cast<int>(number(argv[++i], 1, 100000, "invalid --reps"));
    } else {
      usage("unknown option");
    }
  }

  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (device >= count) {
    fprintf(stderr, "gpu_copy_bw: CUDA device %d does not exist: this machine has %d\n", device, count);
    return 1;
  }
  CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  void* src = nullptr;
  void* dst = nullptr;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemset(src, 1, bytes));
  CHECK(cudaMemset(dst, 0, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaDeviceSynchronize());

  for (int i = 0; i < 3; ++i) CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    seconds.push_back(ms / 1e3);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double gbps = static_cast<double>(bytes) / 1e9 / median;
  printf("device %d: %s (sm_%d%d)\n", device, prop.name, prop.major, prop.minor);
  printf("cudaMemcpyAsync device to device, %zu bytes, %d copies: median %.3f ms (min %.3f, max %.3f)\n", bytes, reps,
         median * 1e3, seconds.front() * 1e3, seconds.back() * 1e3);
  printf("%.1f GB/s copied (%.1f GB/s of memory traffic, read + write)\n", gbps, 2 * gbps);
  printf("copy_GBps %.1f\n", gbps);

  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return 0;
}
