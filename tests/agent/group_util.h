// Test helpers: groups of Communicators on 127.0.0.1, one thread per member.
// A group forms in process (an in-process bootstrap: no gRPC; the data mesh
// over loopback TCP) unless a test asks for the agent's own gRPC control
// plane, as a deployed member forms.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "communicator_impl.h"
#include "free_ports.h"
#include "local_bootstrap.h"
#include "ringmaster/communicator.h"
#include "ringmaster/ringmaster.h"

namespace ringmaster::testing {

// Settings for a chief + (n - 1) workers on fresh local ports.
inline std::vector<CommunicatorSettings> LocalSettings(int n) {
  CollectiveGroup group;
  // TF_CONFIG ports, then the agents' own ports (as `ringmaster run` gives them).
  const auto ports = internal::FreeLocalPorts(2 * n);
  for (int r = 0; r < n; ++r) {
    group.members.push_back(
        {r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, "127.0.0.1:" + std::to_string(ports.at(r))});
  }
  std::vector<CommunicatorSettings> out(n);
  for (int r = 0; r < n; ++r) {
    out[r].group = group;
    out[r].control_ports.assign(ports.begin() + n, ports.end());
    out[r].group.rank = r;
    out[r].formation_timeout_seconds = 30;
    out[r].heartbeat_timeout_seconds = 10;
  }
  return out;
}

// The C API's communicator of a group of one (TF_CONFIG of one worker on a
// fresh local port, set only while it forms); nullptr with a test failure.
inline rm_communicator* OneMemberCommunicator() {
  auto port = internal::FreeLocalPorts(1);
  EXPECT_EQ(port.size(), 1u);
  if (port.size() != 1) return nullptr;
  ::setenv("TF_CONFIG",
           ("{\"cluster\":{\"worker\":[\"127.0.0.1:" + std::to_string(port[0]) +
            "\"]},\"task\":{\"type\":\"worker\",\"index\":0}}")
               .c_str(),
           1);
  rm_communicator* c = nullptr;
  EXPECT_EQ(rm_communicator_create_from_env(&c), RM_OK) << rm_last_error();
  ::unsetenv("TF_CONFIG");
  return c;
}

// Runs fn(rank) on n threads and joins them.
inline void OnAll(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

using Group = std::vector<std::unique_ptr<Communicator>>;

// How a test's group forms: through one LocalBootstrapHub in this process,
// or through the agent's gRPC control service on the settings' ports (what
// Communicator::Create does; a test that restarts a member with Create
// needs it for the whole group).
enum class Via { kInProcess, kGrpc };

// A member's in-process bootstrap; it keeps the group's hub alive as long as
// any member holds it.
class SharedHubMember final : public internal::Bootstrap {
 public:
  SharedHubMember(std::shared_ptr<LocalBootstrapHub> hub, int rank, const std::string& key)
      : hub_(std::move(hub)), member_(hub_->Member(rank, key)) {}
  StatusOr<internal::Table> Exchange(const internal::MemberEntry& self,
                                     internal::Deadline deadline) override {
    return member_->Exchange(self, deadline);
  }
  bool Superseded(const internal::Table& table) override { return member_->Superseded(table); }
  int Waiting() override { return member_->Waiting(); }

 private:
  std::shared_ptr<LocalBootstrapHub> hub_;
  std::unique_ptr<internal::Bootstrap> member_;
};

// One in-process bootstrap per member of `settings`' group (the leader's
// key, formation timeout and elastic size are the hub's).
inline std::vector<std::unique_ptr<internal::Bootstrap>> InProcessBootstraps(
    const std::vector<CommunicatorSettings>& settings) {
  std::vector<std::string> names;
  for (const auto& m : settings.at(0).group.members) names.push_back(m.TaskName());
  const auto& lead = settings[0];
  auto hub =
      std::make_shared<LocalBootstrapHub>(names, lead.job_key, lead.formation_timeout_seconds,
                                          internal::ElasticSize{lead.min_size, lead.rejoin_timeout_seconds});
  std::vector<std::unique_ptr<internal::Bootstrap>> out;
  for (size_t r = 0; r < settings.size(); ++r)
    out.push_back(std::make_unique<SharedHubMember>(hub, static_cast<int>(r), settings[r].job_key));
  return out;
}

// Forms a group (every member's Create runs concurrently); empty entries
// mark members that failed, with their status in *errors.
inline Group FormGroup(const std::vector<CommunicatorSettings>& settings,
                       std::vector<Status>* errors = nullptr, Via via = Via::kInProcess) {
  const int n = static_cast<int>(settings.size());
  Group g(n);
  std::vector<Status> st(n);
  auto bootstraps = via == Via::kInProcess ? InProcessBootstraps(settings)
                                           : std::vector<std::unique_ptr<internal::Bootstrap>>(n);
  OnAll(n, [&](int r) {
    auto c = internal::CommunicatorAccess::Create(settings[r], {std::move(bootstraps[r]), {}});
    if (c.ok())
      g[r] = std::move(*c);
    else
      st[r] = c.status();
  });
  if (errors) *errors = st;
  return g;
}

// Every member all-reduces int64 values (i * (rank + 1)) and checks the
// exact sum: the group works (after a re-formation, say, or under attack).
inline void ExpectExactSum(Group& g, size_t count = 5001) {
  const int n = static_cast<int>(g.size());
  std::vector<Status> st(n);
  std::vector<std::vector<int64_t>> v(n, std::vector<int64_t>(count));
  OnAll(n, [&](int r) {
    for (size_t i = 0; i < v[r].size(); ++i) v[r][i] = int64_t(i) * (r + 1);
    Tensor t{v[r].data(), int64_t(v[r].size()), DataType::kInt64};
    st[r] = g[r]->AllReduce({&t, 1}, ReduceOp::kSum);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].ToString();
    for (size_t i = 0; i < v[r].size(); i += 97) ASSERT_EQ(v[r][i], int64_t(i) * n * (n + 1) / 2);
  }
}

}  // namespace ringmaster::testing
