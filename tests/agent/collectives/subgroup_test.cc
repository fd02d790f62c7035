// A process set's view of a transport (collectives/subgroup.h), alone over
// the in-process transport: ranks renumbered, messages to the right members.
#include "collectives/subgroup.h"

#include <gtest/gtest.h>

#include <vector>

#include "group_util.h"
#include "local_transport.h"

namespace ringmaster {
namespace {

using testing::OnAll;

// The adapter alone: ranks renumbered, messages to the right members.
TEST(SubgroupTransport, RenumbersMembersOverTheParent) {
  internal::LocalFabric fabric(4);
  std::vector<int> members = {1, 3};
  std::vector<Status> st(4);
  std::vector<int64_t> got(4, -1);
  OnAll(4, [&](int r) {
    if (r != 1 && r != 3) return;
    internal::LocalTransport parent(&fabric, r);
    internal::SubgroupTransport sub(parent, members);
    EXPECT_EQ(sub.size(), 2);
    EXPECT_EQ(sub.rank(), r == 1 ? 0 : 1);
    parent.Begin(1, internal::NoDeadline());
    int64_t mine = r, theirs = -1;
    int a = sub.Isend(1 - sub.rank(), 7, &mine, sizeof mine);
    int b = sub.Irecv(1 - sub.rank(), 7, &theirs, sizeof theirs);
    st[r] = sub.Wait(b);
    if (st[r].ok()) st[r] = sub.Wait(a);
    got[r] = theirs;
  });
  EXPECT_TRUE(st[1].ok()) << st[1].ToString();
  EXPECT_TRUE(st[3].ok()) << st[3].ToString();
  EXPECT_EQ(got[1], 3);
  EXPECT_EQ(got[3], 1);
}

}  // namespace
}  // namespace ringmaster
