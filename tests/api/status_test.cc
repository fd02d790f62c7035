#include "ringmaster/status.h"

#include <gtest/gtest.h>

namespace ringmaster {
namespace {

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, CodesUseTensorFlowNames) {
  EXPECT_EQ(DeadlineExceededError("pack 3").ToString(), "DeadlineExceeded: pack 3");
  EXPECT_EQ(InvalidArgumentError("x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnavailable), 14);  // gRPC's number
  EXPECT_EQ(StatusCodeName(StatusCode::kAborted), "Aborted");
}

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgumentError("odd");
  return v / 2;
}

Status Chain(int v, int& out) {
  auto h = Half(v);
  RM_RETURN_IF_ERROR(h.status());
  out = *h;
  return OkStatus();
}

TEST(StatusOr, ValueOrError) {
  int out = 0;
  EXPECT_TRUE(Chain(8, out).ok());
  EXPECT_EQ(out, 4);
  Status s = Chain(7, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

}  // namespace
}  // namespace ringmaster
