// Net plugins (transport/net/net_plugin*.cc, include/collcomm_net.h): the loader's file names and
// search, the libraries it must refuse (a missing file, a file that is no library, no plugin
// symbol, a NCCL version it does not load, another ABI version, a failing init), each with its
// sentence through init and through communicator creation; and the plugins the build makes (the
// in-tree socket and OFI backends as plugins, our NCCL v8 layout plugin) carrying messages of every
// size, in order, matched by tag across posting orders the sender does not follow.
#include "transport/net/net_plugin.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collcomm.h"
#include "common/status.h"
#include "support/net_only.h"
#include "support/net_plugins.h"
#include "support/ofi_provider.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"
#include "transport/net/net.h"

namespace collcomm::detail {
namespace {

using Clock = std::chrono::steady_clock;
const NetSecret kSecret{{0x1234, 0x5678}};
const std::string kTestPlugins = COLLCOMM_BINARY_DIR "/test-plugins/";

// COLLCOMM_NET_PLUGIN for one scope.
struct PluginSetting {
  explicit PluginSetting(const std::string& value) { setenv("COLLCOMM_NET_PLUGIN", value.c_str(), 1); }
  ~PluginSetting() { unsetenv("COLLCOMM_NET_PLUGIN"); }
};

TEST(NetPluginLoader, ShortNamesAndFileNames) {
  EXPECT_EQ(netPluginFileName("socket"), "libcollcomm-net-socket.so");
  EXPECT_EQ(netPluginFileName("libnccl-net.so"), "libnccl-net.so");
  EXPECT_EQ(netPluginFileName("libnccl-net.so.1"), "libnccl-net.so.1");
  EXPECT_EQ(netPluginFileName("/opt/x/libfoo"), "/opt/x/libfoo");
}

struct BadCase {
  const char* name;
  std::string setting;
  Status code;
  std::vector<std::string> fragments;
};

// A file that exists but is no shared library (written by the test that uses it).
const std::string kNotALibrary = kTestPlugins + "not-a-library.so";
void writeNotALibrary() {
  FILE* f = fopen(kNotALibrary.c_str(), "w");
  ASSERT_NE(f, nullptr) << kNotALibrary;
  fputs("this is a text file, not an ELF shared object\n", f);
  fclose(f);
}

std::vector<BadCase> badCases() {
  return {
      {"MissingPath",
       "/nonexistent/libcc-none.so",
       Status::kInvalidUsage,
       {"/nonexistent/libcc-none.so", "does not exist"}},
      {"MissingShortName",
       "nothing-such",
       Status::kInvalidUsage,
       {"COLLCOMM_NET_PLUGIN=nothing-such", "no library libcollcomm-net-nothing-such.so was found", "LD_LIBRARY_PATH"}},
      {"NotALibrary", kNotALibrary, Status::kInvalidUsage, {"not-a-library.so", "is not a shared library"}},
      {"NoSymbol",
       kTestPlugins + "libcc-test-bad-no-symbol.so",
       Status::kInvalidUsage,
       {"exports none of ccNetPlugin_v1, ncclNetPlugin_v9 and ncclNetPlugin_v8", "is it a net plugin?"}},
      {"OtherNcclVersion",
       kTestPlugins + "libcc-test-bad-nccl-v10.so",
       Status::kInvalidUsage,
       {"it has ncclNetPlugin_v10", "NCCL versions this collcomm does not load"}},
      {"WrongVersion",
       kTestPlugins + "libcc-test-bad-version.so",
       Status::kInvalidUsage,
       {"says version 99", "supports version 1 only"}},
      {"InitFails",
       kTestPlugins + "libcc-test-bad-init.so",
       Status::kSystemError,
       {"net plugin bad: init failed", "bad-init test plugin: no fabric here"}},
  };
}

class NetPluginBad : public test::NetOnlyTest, public ::testing::WithParamInterface<int> {};

TEST_P(NetPluginBad, RefusedWithASentenceByInitAndByCommunicatorCreation) {
  test::Watchdog dog(60, "net plugin refused");
  const BadCase c = badCases()[GetParam()];
  if (c.setting == kNotALibrary) writeNotALibrary();
  PluginSetting setting(c.setting);
  clearThreadLastError();
  EXPECT_EQ(selectedNet().init(), c.code);
  for (const std::string& f : c.fragments)
    EXPECT_NE(threadLastError().find(f), std::string::npos) << "'" << f << "' not in: " << threadLastError();
  // Twice: a later init says the same.
  clearThreadLastError();
  EXPECT_EQ(selectedNet().init(), c.code);
  EXPECT_NE(threadLastError().find(c.fragments[0]), std::string::npos) << threadLastError();

  test::ThreadRanks ranks(2);
  EXPECT_EQ(ranks.initResult(), toResult(c.code));
  const std::string last = ccGetLastError(nullptr);
  for (const std::string& f : c.fragments)
    EXPECT_NE(last.find(f), std::string::npos) << "'" << f << "' not in: " << last;
}

INSTANTIATE_TEST_SUITE_P(Libraries, NetPluginBad, ::testing::Range(0, static_cast<int>(badCases().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return badCases()[info.param].name; });

// The search: a short name found by dlopen's search (this program's RUNPATH holds the build folder,
// where the in-tree plugins are; tests/plugins/load_by_name.c checks the folder of libcollcomm.so).
TEST(NetPluginLoader, ShortNameIsFoundByTheSearch) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer intercepts dlopen, so the object whose RUNPATH dlopen searches is the
  // sanitizer's runtime, not this program. The plugin goes where the loader looks next instead:
  // the folder of the code that holds the loader (this program, which links the library).
  {
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&netPluginFileName), &info), 0);
    std::string folder = info.dli_fname;
    folder.resize(folder.rfind('/') + 1);
    const std::string link = folder + "libcollcomm-net-socket.so";
    const std::string target = test::testNetPlugin("socket");
    ASSERT_TRUE(symlink(target.c_str(), link.c_str()) == 0 || errno == EEXIST) << link << ": " << strerror(errno);
  }
#endif
  PluginSetting setting("socket");
  ASSERT_EQ(selectedNet().init(), kOk) << threadLastError();
  int n = 0;
  ASSERT_EQ(selectedNet().devices(&n), kOk);
  EXPECT_GT(n, 0);
  NetProperties props{};
  ASSERT_EQ(selectedNet().getProperties(0, &props), kOk);
  EXPECT_NE(props.name[0], '\0');
}

// ---- the plugins the build makes, through the adapters

struct Pair {
  const NetOpsV1* n;
  void* send = nullptr;
  void* recv = nullptr;
  void* listen = nullptr;
  unsigned char handle[kNetHandleBytes] = {};
  ~Pair() {
    if (send != nullptr) (void)n->closeSend(send);
    if (recv != nullptr) (void)n->closeRecv(recv);
    if (listen != nullptr) (void)n->closeListen(listen);
  }
};

class NetPluginRuns : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "ofi") {
      CC_REQUIRE_OFI_PROVIDER("tcp");
      setenv("COLLCOMM_OFI_PROVIDER", "tcp", 1);
    }
    setenv("COLLCOMM_NET_PLUGIN", test::testNetPlugin(GetParam()).c_str(), 1);
    net_ = &selectedNet();
    ASSERT_EQ(net_->init(), kOk) << threadLastError();
  }
  void TearDown() override {
    unsetenv("COLLCOMM_NET_PLUGIN");
    unsetenv("COLLCOMM_OFI_PROVIDER");
  }

  bool connect(Pair* p) {
    p->n = net_;
    if (net_->listen(0, kSecret, p->handle, &p->listen) != kOk) return false;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while ((p->send == nullptr || p->recv == nullptr) && Clock::now() < until) {
      if (p->send == nullptr && net_->connect(0, kSecret, p->handle, &p->send) != kOk) return false;
      if (p->recv == nullptr && net_->accept(p->listen, &p->recv) != kOk) return false;
    }
    return p->send != nullptr && p->recv != nullptr;
  }

  // Tests every request until all are done; false on an error or after 60 s.
  bool waitAll(const std::vector<void*>& reqs, std::vector<size_t>* sizes = nullptr) {
    std::vector<bool> done(reqs.size(), false);
    if (sizes != nullptr) sizes->assign(reqs.size(), 0);
    size_t left = reqs.size();
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (left > 0 && Clock::now() < until) {
      for (size_t i = 0; i < reqs.size(); ++i) {
        if (done[i]) continue;
        bool d = false;
        size_t sz = 0;
        if (net_->test(reqs[i], &d, &sz) != kOk) return false;
        if (d) {
          done[i] = true;
          --left;
          if (sizes != nullptr) (*sizes)[i] = sz;
        }
      }
    }
    return left == 0;
  }

  // Posts until the comm takes the request (a null request means: test earlier ones, try again).
  void* post(const std::function<Status(void**)>& op) {
    void* r = nullptr;
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (r == nullptr && Clock::now() < until)
      if (op(&r) != kOk) return nullptr;
    return r;
  }

  const NetOpsV1* net_ = nullptr;
};

TEST_P(NetPluginRuns, EverySizeArrivesIntactWithRegisteredAndUnregisteredBuffers) {
  test::Watchdog dog(120, "net plugin sizes");
  Pair p;
  ASSERT_TRUE(connect(&p)) << threadLastError();
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{65537}, size_t{1} << 20, size_t{9} << 20}) {
    for (bool registered : {false, true}) {
      std::vector<unsigned char> src(bytes), dst(bytes + 1, 0xee);
      for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>((i * 131 + bytes) >> 3);
      void *smr = nullptr, *rmr = nullptr;
      if (registered) {
        ASSERT_EQ(net_->regMr(p.send, src.data(), bytes, NetMemType::kHost, &smr), kOk) << threadLastError();
        ASSERT_EQ(net_->regMr(p.recv, dst.data(), bytes + 1, NetMemType::kHost, &rmr), kOk) << threadLastError();
      }
      void* buf = dst.data();
      const size_t cap = bytes + 1;
      const uint32_t tag = 3;
      void* rreq = post([&](void** r) { return net_->irecv(p.recv, 1, &buf, &cap, &tag, &rmr, r); });
      void* sreq = post([&](void** r) { return net_->isend(p.send, src.data(), bytes, tag, smr, r); });
      ASSERT_NE(rreq, nullptr) << threadLastError();
      ASSERT_NE(sreq, nullptr) << threadLastError();
      std::vector<size_t> sizes;
      ASSERT_TRUE(waitAll({sreq, rreq}, &sizes)) << bytes << " bytes did not arrive: " << threadLastError();
      EXPECT_EQ(sizes[1], bytes);
      if (bytes != 0) {
        EXPECT_EQ(memcmp(src.data(), dst.data(), bytes), 0) << bytes << " bytes arrived corrupted";
      }
      EXPECT_EQ(dst[bytes], 0xee) << "wrote past the message";
      if (registered) {
        EXPECT_EQ(net_->deregMr(p.send, smr), kOk);
        EXPECT_EQ(net_->deregMr(p.recv, rmr), kOk);
      }
    }
  }
}

// The transport's pattern: receives posted for several tags in an order the sender does not follow
// (a NCCL plugin matches by order alone: the adapter must match by tag).
TEST_P(NetPluginRuns, ReceivesMatchTheirTagWhateverTheOrderOfPosting) {
  test::Watchdog dog(60, "net plugin tags");
  Pair p;
  ASSERT_TRUE(connect(&p)) << threadLastError();
  constexpr int kMessages = 12;
  uint32_t got[kMessages] = {};
  std::vector<void*> reqs;
  // Receives: tag 2 first (posted early, arrives last, like the peer's state word), then tags 0
  // and 1 alternating.
  uint32_t rtags[kMessages];
  rtags[0] = 2;
  for (int i = 1; i < kMessages; ++i) rtags[i] = static_cast<uint32_t>(i % 2);
  for (int i = 0; i < kMessages; ++i) {
    void* buf = &got[i];
    const size_t cap = sizeof(uint32_t);
    reqs.push_back(post([&](void** r) { return net_->irecv(p.recv, 1, &buf, &cap, &rtags[i], nullptr, r); }));
    ASSERT_NE(reqs.back(), nullptr) << threadLastError();
  }
  // Sends: every tag-0 message, then every tag-1 one, then tag 2.
  uint32_t vals[kMessages];
  int k = 0;
  for (uint32_t tag : {0u, 1u}) {
    for (int i = 1; i < kMessages; ++i) {
      if (rtags[i] != tag) continue;
      vals[k] = 1000 * tag + static_cast<uint32_t>(i);
      const uint32_t* v = &vals[k++];
      reqs.push_back(post([&](void** r) { return net_->isend(p.send, v, sizeof(uint32_t), tag, nullptr, r); }));
      ASSERT_NE(reqs.back(), nullptr) << threadLastError();
    }
  }
  vals[k] = 2000;
  reqs.push_back(post([&](void** r) { return net_->isend(p.send, &vals[k], sizeof(uint32_t), 2, nullptr, r); }));
  ASSERT_NE(reqs.back(), nullptr) << threadLastError();
  ASSERT_TRUE(waitAll(reqs)) << threadLastError();
  EXPECT_EQ(got[0], 2000u);
  for (int i = 1; i < kMessages; ++i) EXPECT_EQ(got[i], 1000 * rtags[i] + static_cast<uint32_t>(i)) << "receive " << i;
}

// The secret crosses the ABI: a connection presenting another one is dropped by accept, and the
// comm accepted next is the right peer's (its message arrives on it).
TEST_P(NetPluginRuns, WrongSecretIsDroppedAndTheRightPeerConnects) {
  if (std::string(GetParam()).rfind("nccl", 0) == 0) GTEST_SKIP() << "NCCL plugins carry no secret (docs/net.md)";
  test::Watchdog dog(60, "net plugin secret");
  Pair p;
  p.n = net_;
  ASSERT_EQ(net_->listen(0, kSecret, p.handle, &p.listen), kOk) << threadLastError();
  unsigned char intruderHandle[kNetHandleBytes];
  memcpy(intruderHandle, p.handle, sizeof(intruderHandle));
  const NetSecret wrong{{0x1234, 0x5679}};
  void* intruder = nullptr;
  auto until = Clock::now() + std::chrono::seconds(10);
  while (intruder == nullptr && Clock::now() < until) {
    ASSERT_EQ(net_->connect(0, wrong, intruderHandle, &intruder), kOk) << threadLastError();
    ASSERT_EQ(net_->accept(p.listen, &p.recv), kOk) << threadLastError();
    ASSERT_EQ(p.recv, nullptr) << "a connection with the wrong secret was accepted";
  }
  ASSERT_NE(intruder, nullptr);
  until = Clock::now() + std::chrono::seconds(10);
  while ((p.send == nullptr || p.recv == nullptr) && Clock::now() < until) {
    if (p.send == nullptr) {
      ASSERT_EQ(net_->connect(0, kSecret, p.handle, &p.send), kOk) << threadLastError();
    }
    if (p.recv == nullptr) {
      ASSERT_EQ(net_->accept(p.listen, &p.recv), kOk) << threadLastError();
    }
  }
  ASSERT_NE(p.send, nullptr);
  ASSERT_NE(p.recv, nullptr);
  const uint32_t sent = 0xc0ffee;
  uint32_t got = 0;
  void* buf = &got;
  const size_t cap = sizeof(got);
  const uint32_t tag = 9;
  void* rreq = post([&](void** r) { return net_->irecv(p.recv, 1, &buf, &cap, &tag, nullptr, r); });
  void* sreq = post([&](void** r) { return net_->isend(p.send, &sent, sizeof(sent), tag, nullptr, r); });
  ASSERT_NE(rreq, nullptr) << threadLastError();
  ASSERT_NE(sreq, nullptr) << threadLastError();
  ASSERT_TRUE(waitAll({sreq, rreq})) << "the accepted comm is not the right peer's: " << threadLastError();
  EXPECT_EQ(got, sent);
  (void)net_->closeSend(intruder);
}

TEST_P(NetPluginRuns, ManyMessagesInFlightKeepTheirOrder) {
  test::Watchdog dog(60, "net plugin order");
  Pair p;
  ASSERT_TRUE(connect(&p)) << threadLastError();
  constexpr int kMessages = 200;
  constexpr size_t kBytes = 3000;
  std::vector<unsigned char> src(kMessages * kBytes), dst(kMessages * kBytes, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + i / kBytes);
  std::vector<void*> sends, recvs;
  int posted = 0, sent = 0;
  const auto until = Clock::now() + std::chrono::seconds(30);
  // Keeps up to 16 of each in flight, testing the oldest as it goes.
  std::vector<bool> sdone, rdone;
  int completed = 0;
  while (completed < kMessages && Clock::now() < until) {
    while (posted < kMessages && posted - completed < 16) {
      void* buf = dst.data() + posted * kBytes;
      const size_t cap = kBytes;
      const uint32_t tag = 5;
      void* r = nullptr;
      ASSERT_EQ(net_->irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &r), kOk) << threadLastError();
      if (r == nullptr) break;
      recvs.push_back(r);
      ++posted;
    }
    while (sent < posted) {
      void* s = nullptr;
      ASSERT_EQ(net_->isend(p.send, src.data() + sent * kBytes, kBytes, 5, nullptr, &s), kOk) << threadLastError();
      if (s == nullptr) break;
      sends.push_back(s);
      ++sent;
    }
    if (completed < sent) {
      bool sd = false, rd = false;
      // A request reported done is freed: test each until it is, then move on.
      for (;;) {
        if (sends[completed] != nullptr) {
          ASSERT_EQ(net_->test(sends[completed], &sd, nullptr), kOk) << threadLastError();
          if (sd) sends[completed] = nullptr;
        }
        if (recvs[completed] != nullptr) {
          ASSERT_EQ(net_->test(recvs[completed], &rd, nullptr), kOk) << threadLastError();
          if (rd) recvs[completed] = nullptr;
        }
        if (sends[completed] == nullptr && recvs[completed] == nullptr) {
          ++completed;
          break;
        }
        if (Clock::now() > until) break;
      }
    }
  }
  ASSERT_EQ(completed, kMessages);
  EXPECT_EQ(memcmp(src.data(), dst.data(), src.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(Plugins, NetPluginRuns, ::testing::Values("socket", "ofi", "nccl", "nccl9"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace collcomm::detail
