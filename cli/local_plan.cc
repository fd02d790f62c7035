#include "local_plan.h"

#include <charconv>
#include <optional>

namespace ringmaster::cli {

LocalStep PlanLocalStep(const DistributedJob& job, const JobStatus& status,
                        const std::vector<ReplicaObservation>& observed, int64_t now) {
  // No queue admits local processes: a job's schedulingPolicy is the
  // cluster's business, and locally every replica starts at once.
  std::optional<DistributedJob> unqueued;
  if (!(job.run_policy.scheduling_policy == SchedulingPolicy{})) {
    unqueued = job;
    unqueued->run_policy.scheduling_policy = {};
  }
  Decision d = Reconcile(unqueued ? *unqueued : job, status, observed, now);
  LocalStep step;
  for (const auto& e : d.events)
    step.lines.push_back((e.warning ? "warning: " : "") + e.reason + ": " + e.message);
  step.status = std::move(d.status);
  step.finished = step.status.Finished();
  for (const auto& [key, since] : step.status.replacements) {
    if (!status.replacements.count(key)) step.recoveries_begun.push_back(key);
  }
  if (!step.finished) {  // the end of the job clears what it was replacing: no recovery ended
    for (const auto& [key, since] : status.replacements) {
      if (!step.status.replacements.count(key)) step.recoveries_ended.emplace_back(key, now - since);
    }
  }
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

std::optional<int64_t> ResumeStepOf(std::string_view line) {
  constexpr std::string_view kWords = "resuming after step ";
  const auto at = line.find(kWords);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = line.data() + at + kWords.size();
  int64_t step = 0;
  auto [ptr, ec] = std::from_chars(begin, line.data() + line.size(), step);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  return step;
}

}  // namespace ringmaster::cli
