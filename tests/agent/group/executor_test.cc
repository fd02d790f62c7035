// The executor and its failure paths over the in-process transport, with a
// fake clock: ordering and packs, MEAN, aborts, deadlines and the verdicts
// that name the culprit. No socket and no sleeping through a timeout.
#include "group/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "collectives/collectives.h"
#include "local_transport.h"

namespace ringmaster::internal {
namespace {

class FakeClock final : public EngineClock {
 public:
  Clock::time_point Now() const override {
    return Clock::time_point{} + std::chrono::seconds(1000) + offset_.load();
  }
  void Advance(double s) {
    offset_ = offset_.load() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

 private:
  std::atomic<Clock::duration> offset_{Clock::duration::zero()};
};

const std::vector<std::string> kNames = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};

// n members, `streams` slots each, over one fabric per slot.
struct LocalGroup {
  LocalGroup(int n, int streams = 2) {
    std::vector<std::string> names(kNames.begin(), kNames.begin() + n);
    for (int s = 0; s < streams; ++s) fabrics.push_back(std::make_unique<LocalFabric>(n));
    for (int r = 0; r < n; ++r) recorders.push_back(std::make_shared<FlightRecorder>(64));
    for (int r = 0; r < n; ++r) {
      Group::Config c;
      c.rank = r;
      c.names = names;
      c.recorder = recorders[r];
      c.report.print = false;
      c.clock = &clock;
      c.probe = [this, n](uint64_t seq) {
        std::vector<ProgressReport> out(n);
        for (int m = 0; m < n; ++m)
          if (!silent[m]) out[m] = recorders[m]->Report(seq);
        return out;
      };
      groups.push_back(std::make_shared<Group>(std::move(c), std::vector<int>(n, -1)));
    }
    for (int r = 0; r < n; ++r) {
      std::vector<std::unique_ptr<Transport>> ts;
      for (int s = 0; s < streams; ++s) {
        ts.push_back(std::make_unique<LocalTransport>(fabrics[s].get(), r, &clock,
                                                      [g = groups[r].get()] { return g->AbortStatus(); }));
      }
      executors.push_back(std::make_unique<Executor>(groups[r], std::move(ts), &clock));
    }
  }
  ~LocalGroup() {
    for (auto& g : groups) g->Stopping(true);
    for (auto& e : executors) e->Stop();
  }
  Deadline After(double s) const {
    return clock.Now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  // Waits (real time, bounded) until member r runs collective #seq.
  bool WaitRunning(int r, uint64_t seq) {
    for (int i = 0; i < 5000; ++i) {
      if (recorders[r]->Report(seq).progress == Progress::kRunning) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  FakeClock clock;
  std::vector<std::unique_ptr<LocalFabric>> fabrics;
  std::vector<std::shared_ptr<FlightRecorder>> recorders;
  std::vector<std::shared_ptr<Group>> groups;
  std::vector<std::unique_ptr<Executor>> executors;
  bool silent[3] = {false, false, false};
};

void OnAll(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r) ts.emplace_back(fn, r);
  for (auto& t : ts) t.join();
}

TEST(Executor, PacksAcrossSlotsInOrderWithMean) {
  const int n = 3;
  LocalGroup g(n, 2);
  std::vector<Status> st(n);
  std::vector<std::vector<std::vector<float>>> data(n);
  std::vector<std::vector<float>> second(n);
  OnAll(n, [&](int r) {
    data[r].assign(9, std::vector<float>(1000));
    std::vector<Tensor> ts;
    for (size_t i = 0; i < data[r].size(); ++i) {
      for (size_t k = 0; k < data[r][i].size(); ++k) data[r][i][k] = float((r + 1) * (i + 1));
      ts.push_back(Tensor{data[r][i].data(), int64_t(data[r][i].size()), DataType::kFloat32});
    }
    CommunicationOptions o;
    o.bytes_per_pack = 8000;  // a pack closes once over 8000 bytes: 3 tensors, 3 packs over 2 slots
    auto ops = AllReduceOps(ts, ReduceOp::kMean, o, n, LinkModel{}, 2);
    EXPECT_EQ(ops.size(), 3u);
    // Two calls back to back (on other tensors): their packs share the
    // slots, in submission order.
    second[r].assign(5000, float(r + 1));
    Tensor t2{second[r].data(), int64_t(second[r].size()), DataType::kFloat32};
    auto h1 = g.executors[r]->Submit(std::move(ops), NoDeadline(), "mean");
    auto h2 = g.executors[r]->Submit(AllReduceOps({&t2, 1}, ReduceOp::kSum, {}, n, LinkModel{}, 2),
                                     NoDeadline(), "sum");
    st[r] = h1.Wait();
    if (st[r].ok()) st[r] = h2.Wait();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].ToString();
    for (size_t i = 0; i < data[r].size(); ++i) {
      // The mean over members of (m+1)(i+1) is 2(i+1).
      EXPECT_EQ(data[r][i][0], float(2 * (i + 1))) << "member " << r << " tensor " << i;
      EXPECT_EQ(data[r][i][999], float(2 * (i + 1)));
    }
    EXPECT_EQ(second[r][0], 6.0f);
    EXPECT_EQ(second[r][4999], 6.0f);
    // Dense sequence numbers from 1, every pack finished, each heard from both peers.
    auto snap = g.recorders[r]->Snapshot();
    ASSERT_EQ(snap.size(), 4u);  // 3 packs, then the second call in one
    for (size_t i = 0; i < snap.size(); ++i) {
      EXPECT_EQ(snap[i].seq, i + 1);
      EXPECT_EQ(snap[i].progress, Progress::kFinished);
      EXPECT_NE(snap[i].heard_from.count, 0u);
    }
  }
}

TEST(Executor, TimeoutNamesTheMemberThatNeverEntered) {
  const int n = 3;
  LocalGroup g(n, 1);
  // Collective #1 everywhere; member 2 then stalls (never submits #2).
  OnAll(n, [&](int r) {
    float v = 1;
    Tensor t{&v, 1, DataType::kFloat32};
    EXPECT_TRUE(g.executors[r]
                    ->Submit(AllReduceOps({&t, 1}, ReduceOp::kSum, {}, n, LinkModel{}, 1), NoDeadline(),
                             "warm-up", true)
                    .Wait()
                    .ok());
  });
  std::vector<Status> st(2);
  std::vector<float> v(2, 1);
  std::vector<Tensor> t = {Tensor{&v[0], 1, DataType::kFloat32}, Tensor{&v[1], 1, DataType::kFloat32}};
  std::vector<CollectiveHandle> h(2);
  CommunicationOptions o;
  o.timeout_seconds = 5;
  for (int r = 0; r < 2; ++r)
    h[r] = g.executors[r]->Submit(AllReduceOps({&t[r], 1}, ReduceOp::kSum, o, n, LinkModel{}, 1), g.After(5),
                                  "step");
  ASSERT_TRUE(g.WaitRunning(0, 2) && g.WaitRunning(1, 2));
  EXPECT_FALSE(h[0].Done()) << "nothing times out before the clock moves";
  g.clock.Advance(6);
  const std::string want =
      "DeadlineExceeded: all-reduce collective #2 (pack 0 of 1) timed out after 5 s: /job:worker/task:1 "
      "never "
      "entered it (its last finished collective is #1); /job:chief/task:0 and /job:worker/task:0 waited";
  for (int r = 0; r < 2; ++r) EXPECT_EQ(h[r].Wait().ToString(), want) << "member " << r;
  // The recorder kept the failure; a later call fails fast with the same words.
  EXPECT_EQ(g.recorders[0]->Report(2).progress, Progress::kFailed);
  Status late =
      g.executors[0]
          ->Submit(AllReduceOps({&t[0], 1}, ReduceOp::kSum, o, n, LinkModel{}, 1), g.After(5), "late")
          .Wait();
  EXPECT_EQ(late.code(), StatusCode::kAborted);
  EXPECT_NE(late.message().find("/job:worker/task:1 never entered it"), std::string::npos) << late.ToString();
}

TEST(Executor, TimeoutSaysWhoDidNotAnswer) {
  const int n = 3;
  LocalGroup g(n, 1);
  g.silent[2] = true;  // frozen: its monitor does not answer
  std::vector<float> v(2, 1);
  std::vector<CollectiveHandle> h(2);
  CommunicationOptions o;
  o.timeout_seconds = 2;
  for (int r = 0; r < 2; ++r) {
    Tensor t{&v[r], 1, DataType::kFloat32};
    h[r] = g.executors[r]->Submit(AllReduceOps({&t, 1}, ReduceOp::kSum, o, n, LinkModel{}, 1), g.After(2),
                                  "step");
  }
  ASSERT_TRUE(g.WaitRunning(0, 1) && g.WaitRunning(1, 1));
  g.clock.Advance(3);
  Status s = h[0].Wait();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("timed out after 2 s: /job:worker/task:1 did not answer"), std::string::npos)
      << s.ToString();
  (void)h[1].Wait();
}

TEST(Executor, AbortWakesTheRunningCollectiveAndFailsLaterOnesFast) {
  const int n = 2;
  LocalGroup g(n, 1);
  float v = 1;
  Tensor t{&v, 1, DataType::kFloat32};
  auto h = g.executors[0]->Submit(AllReduceOps({&t, 1}, ReduceOp::kSum, {}, n, LinkModel{}, 1), NoDeadline(),
                                  "step");
  auto queued = g.executors[0]->Submit(BarrierOps(n), NoDeadline(), "barrier");
  ASSERT_TRUE(g.WaitRunning(0, 1));
  g.groups[0]->AbortRequested("the test says stop");
  EXPECT_EQ(h.Wait().ToString(), "Aborted: aborted by /job:chief/task:0: the test says stop");
  EXPECT_EQ(queued.Wait().ToString(), "Aborted: aborted by /job:chief/task:0: the test says stop");
  EXPECT_EQ(g.recorders[0]->Report(2).progress, Progress::kFailed)
      << "the queued barrier is recorded as failed";
  auto after = g.executors[0]->Submit(BarrierOps(n), NoDeadline(), "barrier").Wait();
  EXPECT_EQ(after.code(), StatusCode::kAborted);
}

TEST(Executor, ACallPastItsDeadlineBeforeStartingFails) {
  const int n = 2;
  LocalGroup g(n, 1);
  auto s = g.executors[0]->Submit(BarrierOps(n), g.After(-1), "barrier", true).Wait();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("barrier collective #1 did not start before its deadline on /job:chief/task:0"),
            std::string::npos)
      << s.ToString();
}

TEST(Executor, ShapeMismatchNamesBothMembersAndShapes) {
  const int n = 2;
  LocalGroup g(n, 1);
  std::vector<Status> st(n);
  OnAll(n, [&](int r) {
    std::vector<float> v(r == 0 ? 4 : 8, 1.0f);
    Tensor t{v.data(), int64_t(v.size()), DataType::kFloat32};
    st[r] = g.executors[r]
                ->Submit(AllReduceOps({&t, 1}, ReduceOp::kSum, {}, n, LinkModel{}, 1), NoDeadline(), "grads",
                         true)
                .Wait();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kInvalidArgument) << st[r].ToString();
    EXPECT_NE(st[r].message().find("16 bytes of float32"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find("32 bytes of float32"), std::string::npos) << st[r].ToString();
    EXPECT_NE(st[r].message().find("/job:chief/task:0"), std::string::npos);
    EXPECT_NE(st[r].message().find("/job:worker/task:0"), std::string::npos);
  }
}

}  // namespace
}  // namespace ringmaster::internal
