// run_summary.h: the closing lines of `ringmaster run`.
#include "run_summary.h"

#include <cstdio>

#include "ringmaster/join_list.h"
#include "ringmaster/verdict.h"

namespace ringmaster::cli {
namespace {

// The job's Failed condition, when it has one that is true.
const Condition* FailedCondition(const JobStatus& status) {
  for (auto it = status.conditions.rbegin(); it != status.conditions.rend(); ++it)
    if (it->type == ConditionType::kFailed && it->status && !it->message.empty()) return &*it;
  return nullptr;
}

}  // namespace

void RecoveryTally::Note(const LocalStep& step) {
  begun += static_cast<int>(step.recoveries_begun.size());
  for (const auto& [key, seconds] : step.recoveries_ended)
    recovered.push_back(key.Name() + " back after " + std::to_string(seconds) + "s");
  if (!step.finished) {
    not_back.clear();
    for (const auto& [key, since] : step.status.replacements) not_back.push_back(key.Name());
  }
  const Condition* running = step.status.Find(ConditionType::kRunning);
  if (running && running->status && running->reason == "RunningShrunk" &&
      (fewest_workers < 0 || step.status.workers_active < fewest_workers))
    fewest_workers = step.status.workers_active;
}

std::string OfKind(std::string text, const std::string& job, const std::string& kind) {
  const std::string ours = "DistributedJob " + job;
  if (kind == "DistributedJob") return text;
  for (size_t at = text.find(ours); at != std::string::npos; at = text.find(ours, at))
    text.replace(at, ours.size(), kind + " " + job);
  return text;
}

void WriteRunSummary(const RunFacts& f, std::ostream& out) {
  const JobStatus& status = *f.status;
  const Condition* end = status.Find(ConditionType::kSucceeded);
  if (!end || !end->status) end = status.Find(ConditionType::kFailed);
  const std::string verdict = f.interrupted && !status.Finished()    ? "Interrupted"
                              : status.Is(ConditionType::kSucceeded) ? "Succeeded"
                                                                     : "Failed";
  out << "[ringmaster] job " << f.job << ": " << verdict;
  if (end && end->status) out << " (" << end->reason << ": " << OfKind(end->message, f.job, f.kind) << ")";
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", f.seconds);
  out << " after " << secs << "s, " << status.restart_count << " restarts\n";
  for (const ReplicaOutcome& r : f.replicas) {
    out << "[ringmaster]   " << r.name << ": started " << r.starts << "x, last exit code " << r.exit_code
        << (r.stopped ? " (stopped by ringmaster)" : "") << "\n";
  }
  const RecoveryTally& t = f.recoveries;
  if (t.begun > 0) {
    out << "[ringmaster]   recoveries in place: " << t.begun;
    if (!t.recovered.empty()) out << " (" << JoinList(t.recovered) << ")";
    // The members' word (their output), not the state machine's.
    if (t.resumed_after) out << "; the group last resumed after step " << *t.resumed_after;
    out << "\n";
    if (t.fewest_workers >= 0)
      out << "[ringmaster]   ran shrunk: down to " << t.fewest_workers << " of " << status.workers_wanted
          << " workers\n";
    if (!t.not_back.empty())
      out << "[ringmaster]   not back when the run ended: " << JoinList(t.not_back) << "\n";
  }
  if (verdict == "Failed") {
    // Who the culprit is, in the words of the replica that said so first.
    std::vector<ReplicaExit> exits;  // rank order: chief, then workers
    for (const ReplicaOutcome& r : f.replicas)
      exits.push_back({r.name, r.exit_code, r.message, r.finished_ms});
    if (auto chosen = ChooseVerdict(exits)) {
      out << "[ringmaster] verdict: " << exits[*chosen].replica << ": "
          << OneLine(exits[*chosen].message, kMaxTerminationMessage) << "\n";
    } else if (const Condition* failed = FailedCondition(status)) {
      // No replica said why (a SIGKILL leaves no word): the job's own
      // reason, which names the replica and its exit.
      out << "[ringmaster] verdict: " << failed->reason << ": "
          << OneLine(failed->message, kMaxVerdictMessage) << "\n";
    }
  }
  out.flush();
}

}  // namespace ringmaster::cli
