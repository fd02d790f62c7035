// Join's checks (bootstrap/join_checks.h), on the wire's JoinRequest
// (proto_forms.h, CheckJoin): the fields, then the key's proof, before any
// state changes.
#include "bootstrap/join_checks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/proto_forms.h"
#include "ringmaster/agent.grpc.pb.h"
#include "transport/auth.h"

namespace ringmaster {
namespace {

using internal::JobKey;
namespace pb = ringmaster::agent::v1;

const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210";

TEST(Join, ChecksFieldsThenTheProofBeforeAnyStateChanges) {
  JobKey key(kKey);
  internal::NonceBook book;
  const std::vector<std::string> names = {"/job:chief/task:0", "/job:worker/task:0"};
  auto now = std::chrono::steady_clock::now();
  pb::JoinRequest req;
  req.set_rank(1);
  req.set_group_size(2);
  req.set_task_name(names[1]);
  req.set_data_port(4000);
  req.set_process_id(9);
  req.set_control_port(5000);
  EXPECT_EQ(internal::CheckJoin(req, names, key, book, now).code(), StatusCode::kUnauthenticated)
      << "no proof";
  auto prove = [&](const JobKey& k) {
    auto n = book.Issue(now);
    auto mine = internal::FreshNonce();
    req.set_server_nonce(n.data(), n.size());
    req.set_client_nonce(mine.data(), mine.size());
    auto m = k.Sign("join", {req.server_nonce(), req.client_nonce(), internal::U64(1), internal::U64(2),
                             req.task_name(), internal::U64(4000), internal::U64(9), internal::U64(5000)});
    req.set_proof(m.data(), m.size());
  };
  prove(JobKey(kOtherKey));
  Status s = internal::CheckJoin(req, names, key, book, now);
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(s.message().find("different key"), std::string::npos) << s.ToString();
  prove(key);
  EXPECT_TRUE(internal::CheckJoin(req, names, key, book, now).ok());
  EXPECT_FALSE(internal::CheckJoin(req, names, key, book, now).ok()) << "a replayed Join is refused";
  prove(key);
  req.set_data_port(4001);  // a field changed after signing
  EXPECT_FALSE(internal::CheckJoin(req, names, key, book, now).ok());
  req.set_data_port(4000);
  prove(key);
  req.set_control_port(5001);  // where its table is sent: bound too
  EXPECT_FALSE(internal::CheckJoin(req, names, key, book, now).ok());
  req.set_control_port(5000);
  req.set_rank(5);
  EXPECT_EQ(internal::CheckJoin(req, names, key, book, now).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster
