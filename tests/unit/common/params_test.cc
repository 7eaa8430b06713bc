// Every declared COLLCOMM_* variable is documented in docs/env.md, and parsing follows the docs.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/params.h"

namespace collcomm::detail {
namespace {

TEST(Params, EveryVariableIsDocumented) {
  std::ifstream f(std::string(COLLCOMM_SOURCE_DIR) + "/docs/env.md");
  ASSERT_TRUE(f.good()) << "docs/env.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
    const char* name = paramInfo(static_cast<Param>(i)).name;
    EXPECT_NE(doc.find(std::string("`") + name + "`"), std::string::npos) << name << " is not in docs/env.md";
  }
}

TEST(Params, IntegerParsingAndDefaults) {
  unsetenv("COLLCOMM_TIMEOUT");
  EXPECT_FALSE(paramIsSet(Param::kTimeout));
  EXPECT_EQ(paramInt(Param::kTimeout), 300);
  setenv("COLLCOMM_TIMEOUT", "17", 1);
  EXPECT_EQ(paramInt(Param::kTimeout), 17);
  setenv("COLLCOMM_TIMEOUT", "0x10", 1);
  EXPECT_EQ(paramInt(Param::kTimeout), 16);
  setenv("COLLCOMM_TIMEOUT", "soon", 1);
  EXPECT_EQ(paramInt(Param::kTimeout), 300);
  unsetenv("COLLCOMM_TIMEOUT");
}

}  // namespace
}  // namespace collcomm::detail
