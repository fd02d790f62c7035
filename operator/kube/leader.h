// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
// take the lease when it is free or has not been renewed for its duration
// (measured on our clock from when we last saw it change, so clocks need not
// agree), renew it every retry period, and give up leadership when renewing
// has failed for the renew deadline. Release() frees the lease on shutdown
// so a standby takes over at once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "api_verdict.h"
#include "client.h"
#include "leader_options.h"

namespace ringmaster::op {

class LeaderElector {
 public:
  LeaderElector(KubeClient& client, LeaderOptions options);

  // Blocks until this process leads (OK) or `stop` is set (Cancelled).
  // What waiting cannot heal (the lease's namespace is missing, a Role
  // forbids the lease: core/api_verdict.h) is returned at once as
  // FailedPrecondition saying what to do; what may heal is retried, and
  // logged as a warning while it lasts, so a waiting operator is never
  // silent.
  Status Acquire(const std::atomic<bool>& stop);
  // Blocks renewing until leadership is lost (false) or `stop` is set (true).
  bool Renew(const std::atomic<bool>& stop);
  // Frees the lease if we hold it (bounded by the client's timeout).
  void Release();
  bool leading() const { return leading_; }

 private:
  // One attempt to take or renew; true when we hold the lease afterwards.
  // Else *problem says why (an empty message: another holder leads).
  bool TryAcquireOrRenew(ApiVerdict* problem);
  // The verdict on one answer, `verb` being get, create or update.
  ApiVerdict Judge(std::string_view verb, const StatusOr<HttpResponse>& answer) const;
  std::string Path() const;

  KubeClient& client_;
  LeaderOptions options_;
  std::atomic<bool> leading_{false};
  std::string observed_record_;  // holder + renewTime, as last seen
  std::chrono::steady_clock::time_point observed_at_{};
};

// MicroTime: "2026-01-02T03:04:05.123456Z".
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace ringmaster::op
