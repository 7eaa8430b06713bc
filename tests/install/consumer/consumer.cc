// A C++ user program of an installed collcomm (core library only): two ranks as threads of one
// process (ccCommInitAll), one float all-reduce each, checked exactly. Prints
// "consumer_cxx: 2 ranks: sum 3 correct" and exits 0, else says what was wrong and exits 1.
#include <collcomm.h>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr int kRanks = 2;
  constexpr size_t kCount = 4097;
  ccComm_t comms[kRanks];
  if (ccCommInitAll(comms, kRanks, nullptr) != ccSuccess) {
    std::fprintf(stderr, "consumer_cxx: ccCommInitAll: %s\n", ccGetLastError(nullptr));
    return 1;
  }
  std::vector<std::vector<float>> send(kRanks), recv(kRanks);
  ccResult_t results[kRanks];
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    send[r].assign(kCount, static_cast<float>(r + 1));
    recv[r].assign(kCount, -1.0f);
    threads.emplace_back([&, r] {
      results[r] = ccAllReduce(send[r].data(), recv[r].data(), kCount, ccFloat32, ccSum, comms[r], nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  bool ok = true;
  for (int r = 0; r < kRanks; ++r) {
    ok = ok && results[r] == ccSuccess;
    for (float v : recv[r]) ok = ok && v == 3.0f;  // 1 + 2, exact in float
    ok = ccCommDestroy(comms[r]) == ccSuccess && ok;
  }
  std::printf("consumer_cxx: %d ranks: sum %g %s\n", kRanks, static_cast<double>(recv[0][kCount - 1]),
              ok ? "correct" : "WRONG");
  return ok ? 0 : 1;
}
