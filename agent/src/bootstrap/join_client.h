// A follower's bootstrap: Join at the leader's control service over gRPC
// (the protocol and its decisions are follower.h's and join_rules.h's; this
// is the channel and the two calls).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/formation_tree.h"
#include "bootstrap/table_inbox.h"
#include "transport/auth.h"

namespace ringmaster::internal {

// Looks a host up now: its addresses as text ("10.0.0.5", "fd00::7"), best
// first.
using HostResolver = std::function<StatusOr<std::vector<std::string>>(const std::string& host)>;
// The system's resolver (getaddrinfo, as TensorFlow and the node's own tools
// use it): a new query on a new socket for every lookup, bounded by
// resolv.conf's timeout and attempts.
StatusOr<std::vector<std::string>> ResolveWithSystem(const std::string& host);

class GrpcJoinBootstrap final : public Bootstrap {
 public:
  // `names`: every member in rank order; the leader (rank 0) serves on
  // `leader_host`:`leader_port`. `key`: never null, empty for none.
  // `leader_host` is looked up with `resolve` before each connection to the
  // leader, and gRPC is given the address; a gRPC target
  // ("dns://SERVER/NAME") is given to gRPC as it is.
  // `inbox`: the member's own control service, serving on `control_port`,
  // where its parent in the formation tree sends the table (null: the
  // leader answers its Join with the whole table). `fetch_after_s`: how
  // long per hop a table that has not come down the tree is waited for
  // before it is asked of the leader (formation_tree.h
  // kFetchTableAfterSeconds; 0: never asked, it only comes down the tree).
  GrpcJoinBootstrap(std::vector<std::string> names, std::string leader_host, int leader_port,
                    const JobKey* key, double timeout_s, HostResolver resolve = ResolveWithSystem,
                    TableInbox* inbox = nullptr, int control_port = 0,
                    double fetch_after_s = kFetchTableAfterSeconds)
      : names_(std::move(names)),
        leader_host_(std::move(leader_host)),
        leader_port_(leader_port),
        key_(key),
        timeout_s_(timeout_s),
        resolve_(std::move(resolve)),
        inbox_(inbox),
        control_port_(control_port),
        fetch_after_s_(fetch_after_s) {}
  // Retried while the leader is not there yet or going away, until the
  // deadline.
  StatusOr<Table> Exchange(const MemberEntry& self, Deadline deadline) override;

 private:
  std::vector<std::string> names_;
  std::string leader_host_;
  int leader_port_;
  const JobKey* key_;
  double timeout_s_;
  HostResolver resolve_;
  TableInbox* inbox_;
  int control_port_;
  double fetch_after_s_;
};

}  // namespace ringmaster::internal
