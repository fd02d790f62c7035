#include "local_plan.h"

namespace ringmaster::cli {

LocalStep PlanLocalStep(const DistributedJob& job, const JobStatus& status,
                        const std::vector<ReplicaObservation>& observed, int64_t now) {
  Decision d = Reconcile(job, status, observed, now);
  LocalStep step;
  for (const auto& e : d.events)
    step.lines.push_back((e.warning ? "warning: " : "") + e.reason + ": " + e.message);
  step.status = std::move(d.status);
  step.finished = step.status.Finished();
  for (const Action& a : d.actions) {
    switch (a.kind) {
      case ActionKind::kCreate:
        step.commands.push_back({LocalCommandKind::kStart, a.key});
        break;
      case ActionKind::kRestart:
        step.commands.push_back({LocalCommandKind::kRestart, a.key});
        break;
      case ActionKind::kDelete:
        if (!step.finished) step.commands.push_back({LocalCommandKind::kTerminate, a.key});
        break;
      case ActionKind::kDeleteJob:
        break;
    }
  }
  return step;
}

}  // namespace ringmaster::cli
