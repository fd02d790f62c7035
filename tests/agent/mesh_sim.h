// A group of N members in one process, thousands of them, to show what
// formation and the first ring all-reduce cost each member as N grows
// (docs/benchmarks/mesh.md, "The simulation"). The real Communicator runs
// threads per member (an executor per stream, the data acceptor, the
// heartbeat, the gRPC server) and a socket per connection, so it cannot hold
// 4,096 members in one process; this runs, per member, one thread and the
// agent's own code at the level below it:
//
//   formation    the real protocol: LocalBootstrapHub's leader (FormationHub)
//                and each follower's JoinThrough (challenge, proof of the job
//                key, Join, the answer checked), the table going down the
//                formation tree from member to member with the leader's
//                proof (bootstrap/formation_tree.h); counted in calls to the
//                leader and deliveries, each a request and an answer, and in
//                the member entries each member sent;
//   heartbeat    one period over the control overlay: one frame to each of
//                Fingers(r, N) (group/overlay.h), one from each;
//   link probe   what ProbeLinks (collectives/link_model.h) does on the first
//                stream, with 8-byte rounds in place of its two 512 KiB ones:
//                its ring rounds, then its agreement, the real
//                RecursiveDoublingAllReduce;
//   all-reduce   the real RingAllReduce of `count` float32 (4 bytes by
//                default), on the stream its sequence number picks (the
//                second of two).
//
// Messages travel over LocalFabric, one per stream and one for the control
// plane, which counts each member's messages and connections: a peer it sent
// to or heard from on that fabric, as a first-use connection opens.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clock.h"
#include "collectives/algorithms.h"
#include "collectives/link_model.h"
#include "group/overlay.h"
#include "local_bootstrap.h"
#include "local_transport.h"

namespace ringmaster::testing {

struct MeshSimConfig {
  int n = 1024;
  int streams = 2;
  size_t count = 1;  // float32 elements of the first all-reduce
  double timeout_s = 300;
  std::string key = "0123456789abcdef0123456789abcdef";
};

// One member's bill.
struct MemberBill {
  int control_connections = 0;     // its overlay fingers (heartbeats)
  int data_connections = 0;        // peers x streams opened on first use
  int formation_messages = 0;      // sent and received: the leader's calls, the table's deliveries
  uint64_t formation_entries = 0;  // member entries sent: the tables in answers and deliveries
  int heartbeat_messages = 0;      // sent and received in one period
  int data_messages = 0;           // sent and received: probe and all-reduce
  int connections() const { return control_connections + data_connections; }
  int messages() const { return formation_messages + heartbeat_messages + data_messages; }
};

struct MeshSimResult {
  bool formed = false;   // every member has the same table of n
  bool correct = false;  // every member has the exact sum
  std::string error;     // the first failure, if any
  double formation_s = 0, probe_s = 0, allreduce_s = 0, wall_s = 0;
  std::vector<MemberBill> bills;  // by rank; rank 0 is the leader
  uint64_t total_messages = 0;
  // Across the followers (the leader answers every Join: O(N), reported apart).
  MemberBill max_follower;
  double mean_follower_connections = 0, mean_follower_messages = 0;
};

namespace mesh_sim_detail {

// Runs fn(0..n-1) on n threads of a small stack each (thousands of threads).
inline void RunThreads(int n, const std::function<void(int)>& fn) {
  struct Arg {
    const std::function<void(int)>* fn;
    int rank;
  };
  std::vector<Arg> args(static_cast<size_t>(n));
  std::vector<pthread_t> threads(static_cast<size_t>(n));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  for (int r = 0; r < n; ++r) {
    args[r] = {&fn, r};
    auto body = [](void* p) -> void* {
      auto* a = static_cast<Arg*>(p);
      (*a->fn)(a->rank);
      return nullptr;
    };
    if (pthread_create(&threads[r], &attr, body, &args[r]) != 0) std::abort();
  }
  pthread_attr_destroy(&attr);
  for (int r = 0; r < n; ++r) pthread_join(threads[r], nullptr);
}

inline double Since(internal::Clock::time_point t0) {
  return std::chrono::duration<double>(internal::Clock::now() - t0).count();
}

}  // namespace mesh_sim_detail

inline MeshSimResult RunMeshSim(const MeshSimConfig& c) {
  using namespace internal;
  const int n = c.n;
  MeshSimResult out;
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) names.push_back("/job:worker/task:" + std::to_string(r));
  LocalBootstrapHub hub(names, c.key, c.timeout_s);
  hub.SendTablesDownTree();
  LocalFabric control(n);
  std::vector<std::unique_ptr<LocalFabric>> data;
  for (int s = 0; s < c.streams; ++s) data.push_back(std::make_unique<LocalFabric>(n));
  const int ar_stream = 1 % c.streams;

  std::vector<uint64_t> incarnation(n, 0);
  std::vector<int> table_size(n, 0);
  std::vector<float> result(n, 0);
  std::vector<std::string> errors(n);
  std::vector<double> formed_at(n, 0), probed_at(n, 0), reduced_at(n, 0);
  Clock::time_point t0 = Clock::now(), t_probe, t_reduce;
  std::barrier after_formation(n, [&]() noexcept { t_probe = Clock::now(); });
  std::barrier after_probe(n, [&]() noexcept { t_reduce = Clock::now(); });
  const Deadline deadline = DeadlineAfter(c.timeout_s);

  mesh_sim_detail::RunThreads(n, [&](int r) {
    auto fail = [&](const std::string& what, const Status& st) {
      if (errors[r].empty()) errors[r] = names[r] + ": " + what + ": " + st.ToString();
    };
    // Formation.
    {
      auto member = hub.Member(r, c.key);
      MemberEntry self{r, names[r], "127.0.0.1", 20000 + r, 1000u + static_cast<uint64_t>(r)};
      auto table = member->Exchange(self, deadline);
      if (table.ok()) {
        incarnation[r] = table->incarnation;
        table_size[r] = static_cast<int>(table->members.size());
      } else {
        fail("formation", table.status());
      }
      formed_at[r] = mesh_sim_detail::Since(t0);
    }
    after_formation.arrive_and_wait();
    // One heartbeat period on the overlay, then the link probe on stream 0.
    {
      LocalTransport ctl(&control, r);
      ctl.SetWaitSlice(std::chrono::milliseconds(100));
      ctl.Begin(1, deadline);
      const std::vector<int> fingers = Fingers(r, n);
      const char beat[16] = {};
      std::vector<char> in(16 * fingers.size());
      for (size_t i = 0; i < fingers.size(); ++i) {
        ctl.Irecv(fingers[i], 7, in.data() + 16 * i, 16);
        ctl.Isend(fingers[i], 7, beat, sizeof beat);
      }
      if (Status st = ctl.WaitAll(); !st.ok()) fail("heartbeat", st);
      LocalTransport t(data[0].get(), r);
      t.SetWaitSlice(std::chrono::milliseconds(100));
      t.Begin(0, deadline);
      const int right = (r + 1) % n, left = (r + n - 1) % n;
      char ping[8] = {}, pong[8];
      for (int i = 0; i < kProbeLatencyRounds + kProbeBulkRounds && n > 1; ++i) {
        const uint32_t tag = 0x7f000000u | static_cast<uint32_t>(i);
        int rr = t.Irecv(left, tag, pong, sizeof pong);
        t.Isend(right, tag, ping, sizeof ping);
        if (Status st = t.Wait(rr); !st.ok()) fail("probe", st);
      }
      double model[3] = {1.0 * r, 2.0, 3.0};
      if (Status st = RecursiveDoublingAllReduce(t, model, 3, DataType::kFloat64, ReduceOp::kMax); !st.ok())
        fail("probe agreement", st);
      else if (model[0] != n - 1)
        fail("probe agreement", InternalError("max " + std::to_string(model[0])));
      probed_at[r] = mesh_sim_detail::Since(t0);
    }
    after_probe.arrive_and_wait();
    // The first all-reduce: member r gives r + 1 (and i more in element i).
    {
      LocalTransport t(data[ar_stream].get(), r);
      t.SetWaitSlice(std::chrono::milliseconds(100));
      t.Begin(1, deadline);
      std::vector<float> v(c.count);
      for (size_t i = 0; i < c.count; ++i) v[i] = static_cast<float>(r + 1 + static_cast<int>(i % 7));
      if (Status st = RingAllReduce(t, v.data(), c.count, DataType::kFloat32, ReduceOp::kSum, RingTuning{});
          !st.ok())
        fail("all-reduce", st);
      bool ok = true;
      const double base = 0.5 * n * (n + 1.0);
      for (size_t i = 0; i < c.count && ok; ++i) ok = v[i] == static_cast<float>(base + 1.0 * n * (i % 7));
      result[r] = ok ? 1.0f : 0.0f;
      reduced_at[r] = mesh_sim_detail::Since(t0);
    }
  });
  out.wall_s = mesh_sim_detail::Since(t0);

  out.formed = true;
  out.correct = true;
  for (int r = 0; r < n; ++r) {
    if (out.error.empty() && !errors[r].empty()) out.error = errors[r];
    out.formed = out.formed && table_size[r] == n && incarnation[r] == incarnation[0] && incarnation[0] != 0;
    out.correct = out.correct && result[r] == 1.0f;
  }
  out.formation_s = *std::max_element(formed_at.begin(), formed_at.end());
  out.probe_s = *std::max_element(probed_at.begin(), probed_at.end()) -
                std::chrono::duration<double>(t_probe - t0).count();
  out.allreduce_s = *std::max_element(reduced_at.begin(), reduced_at.end()) -
                    std::chrono::duration<double>(t_reduce - t0).count();

  // The bills: each fabric counted what every member sent and received.
  out.bills.resize(n);
  uint64_t follower_calls = 0;
  for (int r = 1; r < n; ++r) follower_calls += hub.CallsOf(r);
  for (int r = 0; r < n; ++r) {
    MemberBill& b = out.bills[r];
    const auto ctl = control.CountsOf(r);
    b.control_connections = ctl.peers;
    b.heartbeat_messages = static_cast<int>(ctl.sent + ctl.received);
    for (auto& f : data) {
      const auto d = f->CountsOf(r);
      b.data_connections += d.peers;
      b.data_messages += static_cast<int>(d.sent + d.received);
    }
    b.formation_messages =
        static_cast<int>(2 * ((r == 0 ? follower_calls : hub.CallsOf(r)) + hub.DeliveriesOf(r)));
    b.formation_entries = hub.EntriesSentBy(r);
    out.total_messages += hub.DeliveriesOf(r);  // each delivery counted at both ends: 2 messages
    out.total_messages += ctl.sent;
    for (auto& f : data) out.total_messages += f->CountsOf(r).sent;
  }
  out.total_messages += 2 * follower_calls;
  double conns = 0, msgs = 0;
  for (int r = 1; r < n; ++r) {
    const MemberBill& b = out.bills[r];
    MemberBill& m = out.max_follower;
    m.control_connections = std::max(m.control_connections, b.control_connections);
    m.data_connections = std::max(m.data_connections, b.data_connections);
    m.formation_messages = std::max(m.formation_messages, b.formation_messages);
    m.formation_entries = std::max(m.formation_entries, b.formation_entries);
    m.heartbeat_messages = std::max(m.heartbeat_messages, b.heartbeat_messages);
    m.data_messages = std::max(m.data_messages, b.data_messages);
    conns += b.connections();
    msgs += b.messages();
  }
  if (n > 1) {
    out.mean_follower_connections = conns / (n - 1);
    out.mean_follower_messages = msgs / (n - 1);
  }
  return out;
}

// Whether every follower's connections and messages stay within
// c x log2 N (the leader's formation messages are O(N) by design: it answers
// every Join; its connections must stay within the bound too).
inline bool WithinLogBound(const MeshSimResult& r, int n, double c, std::string* why) {
  const double bound = c * std::log2(static_cast<double>(std::max(n, 2)));
  for (size_t i = 0; i < r.bills.size(); ++i) {
    const MemberBill& b = r.bills[i];
    const int conns = b.connections();
    const int msgs = i == 0 ? b.heartbeat_messages + b.data_messages : b.messages();
    if (conns > bound || msgs > bound) {
      if (why)
        *why = "rank " + std::to_string(i) + ": " + std::to_string(conns) + " connections, " +
               std::to_string(msgs) + " messages, over " + std::to_string(bound);
      return false;
    }
  }
  return true;
}

}  // namespace ringmaster::testing
