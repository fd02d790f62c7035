// NewJobKey (ringmaster/job_key.h): kJobKeyBytes bytes, fresh each time.
#include "ringmaster/job_key.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ringmaster {
namespace {

TEST(JobKey, IsKJobKeyBytesLongAndFreshEachTime) {
  EXPECT_EQ(kJobKeyBytes, 32u);
  std::set<std::string> keys;
  for (int i = 0; i < 8; ++i) {
    auto key = NewJobKey();
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_EQ(key->size(), kJobKeyBytes);
    keys.insert(*key);
  }
  // Two equal 256-bit keys from a CSPRNG would be a broken generator.
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_NE(*keys.begin(), std::string(kJobKeyBytes, '\0'));
}

}  // namespace
}  // namespace ringmaster
