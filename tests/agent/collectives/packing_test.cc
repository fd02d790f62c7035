// TF's packing rule (collectives/packing.h): group_by_size, dtypes never
// sharing a pack, empty tensors skipped, the agent's own size bounded.
#include "collectives/packing.h"

#include <gtest/gtest.h>

#include <vector>

namespace ringmaster::internal {
namespace {

Tensor T(int64_t count, DataType dt = DataType::kFloat32) {
  static char dummy[8];
  return Tensor{dummy, count, dt};
}

TEST(Packing, FollowsTfGroupBySize) {
  // TF: a new pack starts once the current one is *larger* than bytes_per_pack.
  std::vector<Tensor> ts{T(10), T(10), T(10), T(1), T(30)};  // 40, 40, 40, 4, 120 bytes
  auto packs = PlanPacks(ts, 80);
  ASSERT_EQ(packs.size(), 2u);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0, 1, 2}));  // 80 is not > 80, so the third joins
  EXPECT_EQ(packs[0].bytes, 120u);
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{3, 4}));
  auto one_each = PlanPacks(ts, 1);
  EXPECT_EQ(one_each.size(), 5u);
  auto huge = PlanPacks(ts, int64_t{1} << 40);
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_EQ(huge[0].count, 61u);
}

TEST(Packing, DtypesNeverSharePackAndEmptyTensorsAreSkipped) {
  std::vector<Tensor> ts{T(4), T(2, DataType::kInt64), T(0),
                         T(4), T(3, DataType::kInt64), T(1, DataType::kFloat16)};
  auto packs = PlanPacks(ts, int64_t{1} << 30);
  ASSERT_EQ(packs.size(), 3u);
  EXPECT_EQ(packs[0].dtype, DataType::kFloat32);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(packs[1].dtype, DataType::kInt64);
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{1, 4}));
  EXPECT_EQ(packs[1].bytes, 40u);
  EXPECT_EQ(packs[2].dtype, DataType::kFloat16);
  EXPECT_TRUE(PlanPacks(std::vector<Tensor>{T(0)}, 100).empty());
}

TEST(Packing, TheAgentsOwnPackingNeverStagesALargeTensor) {
  // A Dense model's gradients: kernel, bias, kernel, bias... (bytes 400, 8, 1600, 8, 40, 4).
  std::vector<Tensor> ts{T(100), T(2), T(400), T(2), T(10), T(1)};
  auto packs = PlanPacks(ts, 1000, /*alone_from=*/100);
  ASSERT_EQ(packs.size(), 5u);
  EXPECT_EQ(packs[0].tensors, (std::vector<size_t>{0}));  // large: alone, reduced in place
  EXPECT_EQ(packs[1].tensors, (std::vector<size_t>{1}));  // the bias after it starts a new pack
  // Larger than a pack: two slices of it, each alone and in place.
  EXPECT_EQ(packs[2].tensors, (std::vector<size_t>{2}));
  EXPECT_EQ(packs[3].tensors, (std::vector<size_t>{2}));
  EXPECT_EQ(packs[2].first, 0u);
  EXPECT_EQ(packs[2].count, 200u);
  EXPECT_EQ(packs[3].first, 200u);
  EXPECT_EQ(packs[3].bytes, 800u);
  EXPECT_EQ(packs[4].tensors, (std::vector<size_t>{3, 4, 5}));  // small ones still grouped
  EXPECT_EQ(packs[4].bytes, 52u);
  // Without alone_from (an explicit bytes_per_pack: TF's rule), the large ones share packs.
  auto tf_rule = PlanPacks(ts, 1000);
  ASSERT_EQ(tf_rule.size(), 2u);
  EXPECT_EQ(tf_rule[0].tensors, (std::vector<size_t>{0, 1, 2}));
}

TEST(Packing, ALargeLoneTensorIsCutIntoNearEqualSlicesCoveringIt) {
  // 1001 elements of 4 bytes, packs of 1000 bytes: 5 slices of 201 or 200.
  std::vector<Tensor> ts{T(1001), T(3)};
  auto packs = PlanPacks(ts, 1000, /*alone_from=*/100);
  ASSERT_EQ(packs.size(), 6u);
  size_t next = 0;
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(packs[k].tensors, (std::vector<size_t>{0}));
    EXPECT_EQ(packs[k].first, next);
    EXPECT_EQ(packs[k].count, k == 0 ? 201u : 200u);
    EXPECT_EQ(packs[k].bytes, packs[k].count * 4);
    next += packs[k].count;
  }
  EXPECT_EQ(next, 1001u);
  EXPECT_EQ(packs[5].tensors, (std::vector<size_t>{1}));
  EXPECT_EQ(packs[5].first, 0u);
  // TF's rule (an explicit bytes_per_pack) never cuts a tensor.
  auto tf_rule = PlanPacks(ts, 1000);
  ASSERT_EQ(tf_rule.size(), 2u);
  EXPECT_EQ(tf_rule[0].count, 1001u);
  EXPECT_EQ(tf_rule[0].first, 0u);
}

TEST(Packing, AutoSizeIsBounded) {
  EXPECT_EQ(AutoBytesPerPack(100, 2), kMinAutoPack);
  EXPECT_EQ(AutoBytesPerPack(size_t{1} << 34, 2), kMaxAutoPack);
  EXPECT_EQ(AutoBytesPerPack(size_t{32} << 20, 2), int64_t{8} << 20);
}

}  // namespace
}  // namespace ringmaster::internal
