// The C API (c_api.cc) on a formed group: task names, health, the default
// options and callbacks.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "group_util.h"
#include "ringmaster/ringmaster.h"

namespace ringmaster {
namespace {

using testing::OneMemberCommunicator;

// The C API's additions for framework integrations, on a group of one.
TEST(CApi, TaskNamesHealthDefaultAndCallbacks) {
  rm_communicator* c = OneMemberCommunicator();
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(rm_task_name(c, 0), "/job:worker/task:0");
  EXPECT_EQ(rm_task_name(c, 1), nullptr);
  EXPECT_EQ(rm_health(c), RM_OK);
  EXPECT_EQ(rm_default_communicator(), nullptr);
  rm_set_default_communicator(c);
  EXPECT_EQ(rm_default_communicator(), c);

  double v[3] = {1, 2, 3};
  rm_tensor t{v, 3, RM_FLOAT64};
  rm_handle* h = nullptr;
  ASSERT_EQ(rm_allreduce_async(c, &t, 1, RM_SUM, nullptr, &h), RM_OK);
  struct Seen {
    std::promise<std::pair<int, std::string>> p;
  } seen;
  ASSERT_EQ(rm_handle_then(
                h,
                [](void* arg, int code, const char* msg) {
                  static_cast<Seen*>(arg)->p.set_value({code, msg});
                },
                &seen),
            RM_OK);
  auto f = seen.p.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto [code, msg] = f.get();
  EXPECT_EQ(code, RM_OK);
  EXPECT_EQ(msg, "");
  EXPECT_EQ(v[2], 3.0);  // a group of one: the sum is the value
  EXPECT_EQ(rm_handle_then(nullptr, nullptr, nullptr), RM_INVALID_ARGUMENT);
  // Out of place through the C API: the result lands in the tensor, the
  // source is only read.
  const double src[3] = {4, 5, 6};
  double dst[3] = {0, 0, 0};
  rm_tensor d{dst, 3, RM_FLOAT64};
  const void* sources[1] = {src};
  ASSERT_EQ(rm_allreduce_async_from(c, sources, &d, 1, RM_SUM, nullptr, &h), RM_OK);
  ASSERT_EQ(rm_handle_wait(h), RM_OK) << rm_last_error();
  EXPECT_EQ(dst[0], 4.0);
  EXPECT_EQ(dst[2], 6.0);
  // Destroying the default clears it: nobody is left with a dangling one.
  rm_communicator_destroy(c);
  EXPECT_EQ(rm_default_communicator(), nullptr);
}

// The local reduction (no group): the engine's loops, argument checks
// naming the field, and MEAN finished by rm_divide_local.
TEST(CApi, LocalReduction) {
  float a[3] = {1, 5, -2}, b[3] = {4, 2, 7};
  ASSERT_EQ(rm_reduce_local(RM_FLOAT32, RM_SUM, a, b, 3), RM_OK) << rm_last_error();
  EXPECT_EQ(a[0], 5);
  EXPECT_EQ(a[1], 7);
  EXPECT_EQ(a[2], 5);
  ASSERT_EQ(rm_reduce_local(RM_FLOAT32, RM_MIN, a, b, 3), RM_OK);
  EXPECT_EQ(a[0], 4);
  EXPECT_EQ(a[1], 2);
  EXPECT_EQ(a[2], 5);
  int32_t m[2] = {7, -7}, n[2] = {0, 0};
  ASSERT_EQ(rm_reduce_local(RM_INT32, RM_MEAN, m, n, 2), RM_OK);
  ASSERT_EQ(rm_divide_local(RM_INT32, m, 2, 2), RM_OK);
  EXPECT_EQ(m[0], 3);  // truncated, as TensorFlow
  EXPECT_EQ(m[1], -3);
  EXPECT_EQ(rm_reduce_local(RM_BOOL, RM_SUM, m, n, 1), RM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rm_last_error()).find("bool"), std::string::npos) << rm_last_error();
  EXPECT_EQ(rm_reduce_local(RM_FLOAT32, static_cast<rm_reduce_op>(99), a, b, 1), RM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rm_last_error()).find("op"), std::string::npos) << rm_last_error();
  EXPECT_EQ(rm_reduce_local(RM_FLOAT32, RM_SUM, nullptr, b, 1), RM_INVALID_ARGUMENT);
  EXPECT_EQ(rm_reduce_local(RM_FLOAT32, RM_SUM, a, b, -1), RM_INVALID_ARGUMENT);
  EXPECT_EQ(rm_reduce_local(RM_FLOAT32, RM_SUM, nullptr, nullptr, 0), RM_OK);
  EXPECT_EQ(rm_divide_local(RM_INT32, m, 2, 0), RM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(rm_last_error()).find("n must be"), std::string::npos) << rm_last_error();
}

}  // namespace
}  // namespace ringmaster
