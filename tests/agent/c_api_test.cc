// The C API (c_api.cc) on a formed group: task names, health, the default
// options and callbacks.
#include <gtest/gtest.h>

#include <chrono>
#include <future>

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

}  // namespace
}  // namespace ringmaster
