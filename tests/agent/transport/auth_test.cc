// The job key (transport/auth.h), pure: its proofs bind every field, the
// key file's bounds, and the nonce book (single use, expiring, bounded).
#include "transport/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

namespace ringmaster {
namespace {

using internal::JobKey;

const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210";

TEST(JobKey, ProofsBindEveryFieldAndItsBoundaries) {
  JobKey a(kKey), b(kOtherKey);
  auto m = a.Sign("join", {"ab", "c"});
  EXPECT_TRUE(a.Verify(internal::View(m), "join", {"ab", "c"}));
  EXPECT_FALSE(a.Verify(internal::View(m), "join", {"a", "bc"})) << "field boundaries are signed";
  EXPECT_FALSE(a.Verify(internal::View(m), "status", {"ab", "c"})) << "the purpose is signed";
  EXPECT_FALSE(b.Verify(internal::View(m), "join", {"ab", "c"})) << "another key";
  EXPECT_FALSE(a.Verify(std::string_view(internal::View(m)).substr(0, 31), "join", {"ab", "c"}));
}

TEST(JobKey, FileMustHoldSixteenToFourKiBytesAndErrorsNameTheVariable) {
  const std::string path = ::testing::TempDir() + "/rm_key_" + std::to_string(::getpid());
  std::ofstream(path) << "short";
  auto k = internal::ReadJobKeyFile(path);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("RINGMASTER_JOB_KEY_FILE (" + path + ")"), std::string::npos);
  std::ofstream(path) << kKey;
  k = internal::ReadJobKeyFile(path);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(*k, kKey);
  EXPECT_FALSE(internal::ReadJobKeyFile(path + ".missing").ok());
  ::unlink(path.c_str());
}

TEST(NonceBook, SingleUseExpiringAndBounded) {
  internal::NonceBook book(3, std::chrono::seconds(60));
  auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  auto n1 = book.Issue(t0);
  EXPECT_TRUE(book.Redeem(internal::View(n1), t0));
  EXPECT_FALSE(book.Redeem(internal::View(n1), t0)) << "single use";
  auto n2 = book.Issue(t0);
  EXPECT_FALSE(book.Redeem(internal::View(n2), t0 + std::chrono::seconds(61))) << "expired";
  auto n3 = book.Issue(t0);
  for (int i = 0; i < 5; ++i) (void)book.Issue(t0);
  EXPECT_EQ(book.size(), 3u) << "bounded";
  EXPECT_FALSE(book.Redeem(internal::View(n3), t0)) << "the oldest was dropped";
  EXPECT_FALSE(book.Redeem("short", t0));
}

}  // namespace
}  // namespace ringmaster
