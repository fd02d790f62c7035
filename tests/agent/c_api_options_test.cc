// The C API's options and enums (c_api_options.cc): the names and parsers
// read the one table of each enum, options start from their initializer, and
// options of another layout are refused.
#include <gtest/gtest.h>

#include <cstring>

#include "c_api_internal.h"
#include "ringmaster/communicator.h"
#include "ringmaster/enum_names.h"
#include "ringmaster/ringmaster.h"

namespace ringmaster::internal {
namespace {

// The C API's enums, the C++ ones and the names all come from enums.h.
TEST(EnumTable, TheCApiReadsTheOneTable) {
  static_assert(static_cast<int>(RM_BOOL) == static_cast<int>(DataType::kBool));
  static_assert(static_cast<int>(RM_PRODUCT) == static_cast<int>(ReduceOp::kProduct));
  static_assert(static_cast<int>(RM_NCCL) == static_cast<int>(Implementation::kNccl));
  static_assert(static_cast<int>(RM_ALGORITHM_HALVING_DOUBLING) ==
                static_cast<int>(Algorithm::kHalvingDoubling));
  EXPECT_STREQ(rm_dtype_name(RM_BFLOAT16), "bfloat16");
  EXPECT_STREQ(rm_reduce_op_name(RM_MEAN), "mean");
  EXPECT_STREQ(rm_implementation_name(RM_RING), "RING");
  EXPECT_STREQ(rm_algorithm_name(RM_ALGORITHM_RECURSIVE_DOUBLING), "recursive_doubling");
  EXPECT_EQ(rm_dtype_name(11), nullptr);
  EXPECT_EQ(rm_algorithm_name(-1), nullptr);
  int v = -1;
  EXPECT_EQ(rm_parse_reduce_op("PROD", "op", &v), RM_OK);
  EXPECT_EQ(v, RM_PRODUCT);
  EXPECT_EQ(rm_parse_algorithm("hd", nullptr, &v), RM_OK);
  EXPECT_EQ(v, RM_ALGORITHM_HALVING_DOUBLING);
  EXPECT_EQ(rm_parse_dtype("int16", "x.dtype", &v), RM_OK);
  EXPECT_EQ(v, RM_INT16);
  EXPECT_EQ(rm_parse_implementation("tree", "options.implementation", &v), RM_INVALID_ARGUMENT);
  EXPECT_STREQ(
      rm_last_error(),
      "InvalidArgument: options.implementation: unknown implementation 'tree', expected one of AUTO, "
      "RING, NCCL");
  EXPECT_EQ(rm_parse_dtype(nullptr, "x", &v), RM_INVALID_ARGUMENT);
}

TEST(EnumTable, OptionsStartFromTheInitializer) {
  const rm_options init = RM_OPTIONS_INIT;
  const rm_options def = rm_default_options();
  EXPECT_EQ(init.magic, RM_OPTIONS_MAGIC);
  EXPECT_EQ(def.magic, RM_OPTIONS_MAGIC);
  EXPECT_EQ(init.size, sizeof(rm_options));
  EXPECT_EQ(def.size, sizeof(rm_options));
  EXPECT_EQ(def.bytes_per_pack, 0);
  EXPECT_EQ(def.timeout_seconds, RM_TIMEOUT_KEEP);
  EXPECT_EQ(def.implementation, RM_AUTO);
  EXPECT_EQ(def.algorithm, RM_ALGORITHM_AUTO);
}

// The layout before the magic (a size_t size first): an old caller's struct
// is refused, naming the field, instead of read with shifted fields.
TEST(EnumTable, OptionsOfAnotherLayoutAreRefused) {
  struct OldOptions {
    size_t size;
    int64_t bytes_per_pack;
    double timeout_seconds;
    int implementation, algorithm;
  } old{sizeof(OldOptions), 1 << 20, 5.0, RM_RING, RM_ALGORITHM_AUTO};
  static_assert(sizeof(OldOptions) == sizeof(rm_options));
  rm_options as_seen;
  std::memcpy(&as_seen, &old, sizeof old);
  auto o = ToOptions(&as_seen);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("options.magic: 0x00000020 is not RM_OPTIONS_MAGIC"), std::string::npos)
      << o.status().message();

  rm_options small = RM_OPTIONS_INIT;
  small.size = 8;  // magic and size only
  auto s = ToOptions(&small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("options.size: 8 is too small"), std::string::npos)
      << s.status().message();

  rm_options good = RM_OPTIONS_INIT;
  good.bytes_per_pack = 4096;
  auto g = ToOptions(&good);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->bytes_per_pack, 4096);
}

}  // namespace
}  // namespace ringmaster::internal
