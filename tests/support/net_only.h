// A fixture whose communicators connect every pair of ranks over NET (COLLCOMM_P2P_DISABLE=1
// COLLCOMM_SHM_DISABLE=1), with operations timing out after 30 s; the variables are unset again
// after each test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

namespace collcomm::test {

class NetOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("COLLCOMM_P2P_DISABLE", "1", 1);
    setenv("COLLCOMM_SHM_DISABLE", "1", 1);
    setenv("COLLCOMM_TIMEOUT", "30", 1);
  }
  void TearDown() override {
    unsetenv("COLLCOMM_P2P_DISABLE");
    unsetenv("COLLCOMM_SHM_DISABLE");
    unsetenv("COLLCOMM_TIMEOUT");
  }
};

}  // namespace collcomm::test
