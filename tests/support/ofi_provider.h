// Whether the OFI net backend can run over a libfabric provider here: the tests that use it skip
// with the reason where libfabric or the provider is missing, unless CC_TEST_REQUIRE_OFI=1 (CI sets
// it: libfabric is installed there, and a skip would hide a broken backend), where they fail.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "common/status.h"
#include "transport/net/net.h"

namespace collcomm::test {

// "" when COLLCOMM_NET=ofi with COLLCOMM_OFI_PROVIDER=provider has a device here, else why not.
// Leaves COLLCOMM_OFI_PROVIDER as it was.
inline std::string ofiUnavailable(const char* provider) {
  const char* old = getenv("COLLCOMM_OFI_PROVIDER");
  const std::string saved = old != nullptr ? old : "";
  setenv("COLLCOMM_OFI_PROVIDER", provider, 1);
  detail::clearThreadLastError();
  int n = 0;
  const detail::Status s = detail::ofiNet().devices(&n);
  std::string why;
  if (!detail::isOk(s) || n == 0) {
    why = "libfabric provider " + std::string(provider) + " is not usable here";
    if (detail::isOk(detail::ofiNet().init()))
      why += " (no device)";
    else
      why += ": " + detail::threadLastError();
  }
  if (old != nullptr)
    setenv("COLLCOMM_OFI_PROVIDER", saved.c_str(), 1);
  else
    unsetenv("COLLCOMM_OFI_PROVIDER");
  return why;
}

inline bool ofiRequired() {
  const char* v = getenv("CC_TEST_REQUIRE_OFI");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace collcomm::test

// In a test body: skips (or, under CC_TEST_REQUIRE_OFI=1, fails) when the provider is unusable.
#define CC_REQUIRE_OFI_PROVIDER(provider)                                                    \
  do {                                                                                       \
    const std::string ccOfiWhy = ::collcomm::test::ofiUnavailable(provider);                 \
    if (!ccOfiWhy.empty()) {                                                                 \
      if (::collcomm::test::ofiRequired()) FAIL() << ccOfiWhy << " (CC_TEST_REQUIRE_OFI=1)"; \
      GTEST_SKIP() << ccOfiWhy;                                                              \
    }                                                                                        \
  } while (0)
