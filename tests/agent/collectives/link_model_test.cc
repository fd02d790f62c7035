// What a formation measures of its links and AUTO's choice from it
// (collectives/link_model.h): the fallback thresholds, options before the
// hint before the model, and the probe over the in-process transport.
#include "collectives/link_model.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "local_transport.h"

namespace ringmaster::internal {
namespace {

TEST(Algorithms, FallbackThresholdsNeverFoldBeyondSmallSizes) {
  EXPECT_EQ(FallbackAlgorithm(1024, 4), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(FallbackAlgorithm(64 << 20, 4), Algorithm::kRing);
  EXPECT_EQ(FallbackAlgorithm(1 << 20, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(FallbackAlgorithm(1 << 20, 2), Algorithm::kRing);
  EXPECT_EQ(FallbackAlgorithm(16 << 10, 2), Algorithm::kRecursiveDoubling);
  for (int n : {3, 5, 6, 7}) {
    EXPECT_EQ(FallbackAlgorithm(4 << 10, n), Algorithm::kRecursiveDoubling) << n;
    EXPECT_EQ(FallbackAlgorithm(16 << 10, n), Algorithm::kRing) << n;
    EXPECT_EQ(FallbackAlgorithm(1 << 20, n), Algorithm::kRing) << n;
  }
  EXPECT_EQ(ChooseByModel(LinkModel{}, 1 << 20, 3), Algorithm::kRing);  // no model: the fallback
}

// Figures of the same order as the probe measured (docs/benchmarks/network.md):
// 1 Gbit/s veths shaped by tbf, and 127.0.0.1 on a 2-vCPU machine.
LinkModel GigabitLink() {
  return {35e-6, 8.37e-9, 0.3e-9};
}
LinkModel Loopback() {
  return {14e-6, 0.8e-9, 0.3e-9};
}

TEST(Algorithms, OptionsForceBeforeTheHintBeforeTheModel) {
  CommunicationOptions o;
  EXPECT_EQ(ChooseAlgorithm(o, 1 << 20, 3, GigabitLink()), Algorithm::kRing);
  o.implementation = Implementation::kRing;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, GigabitLink()), Algorithm::kRing);
  o.implementation = Implementation::kNccl;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, Loopback()), Algorithm::kRing);
  o.algorithm = Algorithm::kHalvingDoubling;
  EXPECT_EQ(ChooseAlgorithm(o, 8, 4, Loopback()), Algorithm::kHalvingDoubling);
}

TEST(Algorithms, TheModelChargesAFoldForEveryGroupThatIsNotAPowerOfTwo) {
  const LinkModel m = GigabitLink();
  const size_t mib = 1 << 20;
  // The ring's wire time tends to 2 (n-1)/n of the bytes per link.
  const double ring4 = ModelSeconds(m, Algorithm::kRing, mib, 4);
  EXPECT_NEAR(ring4, 6 * m.alpha_s + 1.5 * mib * m.beta_s_per_byte + 0.75 * mib * m.gamma_s_per_byte, 1e-12);
  // Halving-doubling moves the ring's bytes at a power of two; at 3 and 6
  // the fold moves the whole vector twice more.
  const double hd4 = ModelSeconds(m, Algorithm::kHalvingDoubling, mib, 4);
  EXPECT_NEAR(hd4, 4 * m.alpha_s + 0.75 * mib * (2 * m.beta_s_per_byte + m.gamma_s_per_byte), 1e-12);
  for (int n : {3, 6}) {
    EXPECT_GT(ModelSeconds(m, Algorithm::kHalvingDoubling, mib, n),
              1.5 * ModelSeconds(m, Algorithm::kRing, mib, n))
        << n;
  }
  EXPECT_EQ(ModelSeconds(m, Algorithm::kRing, mib, 1), 0);
  EXPECT_EQ(ModelSeconds(m, Algorithm::kRing, 0, 4), 0);
}

TEST(Algorithms, AutoOnALinkFollowsTheBytesAndOnLoopbackTheLatency) {
  const size_t kib = 1024, mib = kib * kib;
  for (const LinkModel& m : {GigabitLink(), Loopback()}) {
    for (int n = 2; n <= 8; ++n) EXPECT_EQ(ChooseByModel(m, 4 * kib, n), Algorithm::kRecursiveDoubling) << n;
    for (int n : {3, 5, 6, 7}) {  // no fold at sizes where the bytes count
      EXPECT_EQ(ChooseByModel(m, 4 * mib, n), Algorithm::kRing) << n;
    }
    EXPECT_EQ(ChooseByModel(m, 64 * mib, 4), Algorithm::kRing);
  }
  // 1 Gbit/s: the bytes dominate from tens of KiB on.
  EXPECT_EQ(ChooseByModel(GigabitLink(), 1 * mib, 3), Algorithm::kRing);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 64 * kib, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 64 * kib, 8), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(GigabitLink(), 4 * mib, 8), Algorithm::kRing);
  // Loopback: latency still counts at hundreds of KiB.
  EXPECT_EQ(ChooseByModel(Loopback(), 256 * kib, 4), Algorithm::kHalvingDoubling);
  EXPECT_EQ(ChooseByModel(Loopback(), 16 * kib, 4), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ChooseByModel(Loopback(), 16 * kib, 2), Algorithm::kRecursiveDoubling);
}

TEST(LinkProbe, EveryMemberHoldsTheSameKnownModel) {
  for (int n = 1; n <= 5; ++n) {
    std::vector<LinkModel> models(n);
    OnFabric(n, [&](Transport& t) {
      Status s = ProbeLinks(t, DeadlineAfter(60), &models[t.rank()]);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(models[r].known(), n > 1) << "n " << n << " rank " << r;
      EXPECT_EQ(models[r].alpha_s, models[0].alpha_s) << "n " << n << " rank " << r;
      EXPECT_EQ(models[r].beta_s_per_byte, models[0].beta_s_per_byte);
      EXPECT_EQ(models[r].gamma_s_per_byte, models[0].gamma_s_per_byte);
      if (n > 1) {
        EXPECT_GT(models[r].gamma_s_per_byte, 0);
        EXPECT_LT(models[r].alpha_s, 60);
      }
    }
  }
}

TEST(LinkProbe, AMemberThatNeverProbesFailsItWithinTheDeadline) {
  LocalFabric fabric(3);
  std::vector<Status> st(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {  // rank 2 never comes
    threads.emplace_back([&, r] {
      LocalTransport t(&fabric, r);
      LinkModel m;
      st[r] = ProbeLinks(t, DeadlineAfter(0.2), &m);
      EXPECT_FALSE(m.known());
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& s : st) EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
}

}  // namespace
}  // namespace ringmaster::internal
