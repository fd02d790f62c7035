// A follower's bootstrap: Join at the leader's control service over gRPC
// (the protocol and its decisions are follower.h's and join_rules.h's; this
// is the channel and the two calls).
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/auth.h"

namespace ringmaster::internal {

class GrpcJoinBootstrap final : public Bootstrap {
 public:
  // `names`: every member in rank order; the leader (rank 0) serves on
  // `leader_host`:`leader_port`. `key`: never null, empty for none.
  GrpcJoinBootstrap(std::vector<std::string> names, std::string leader_host, int leader_port,
                    const JobKey* key, double timeout_s)
      : names_(std::move(names)),
        leader_host_(std::move(leader_host)),
        leader_port_(leader_port),
        key_(key),
        timeout_s_(timeout_s) {}
  // Retried while the leader is not there yet or going away, until the
  // deadline.
  StatusOr<Table> Exchange(const MemberEntry& self, Deadline deadline) override;

 private:
  std::vector<std::string> names_;
  std::string leader_host_;
  int leader_port_;
  const JobKey* key_;
  double timeout_s_;
};

}  // namespace ringmaster::internal
