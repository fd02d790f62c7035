// The operator's leader-election settings (flags in flags.h, used by the
// LeaderElector in kube/leader.h). Apart so the pure flag parser needs no
// Kubernetes client.
#pragma once

#include <chrono>
#include <string>

namespace ringmaster::op {

struct LeaderOptions {
  std::string namespace_ = "ringmaster-system";
  std::string name = "ringmaster-operator";
  std::string identity;
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

}  // namespace ringmaster::op
