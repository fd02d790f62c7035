// The controller's bookkeeping around a plan, for the planners' transcripts'
// "reconcile" command (plan_transcript_test, tfjob_plan_transcript_test):
// what the controller does with its expectations (operator/core/
// expectations.h) before and after a plan, driven by a transcript instead
// of an informer and an API server. A reconcile's input lines, besides the
// pods and Services of `plan`:
//
//   observe <pod>        a watch event of that pod (as a pod line) that the
//                        informer applied after this reconcile read the
//                        pods, before it made its plan
//   observe-gone <replica>
//                        the same for the pod's DELETED event
//   answer <replica> <code>
//                        the API server's answer to the plan's create or
//                        delete of that replica's pod (else 201 and 200)
//
// The pods listed are the cache as the reconcile reads them; the watch
// events that brought the cache there since the last reconcile's read were
// observed before (Shell::PendingFor). The plan is made from the pods and what
// the expectations say is pending for them (Expectations::Settle); then its
// pod creations and deletions are asked and answered, as the controller's
// RunStep does.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "expectations.h"
#include "reconcile.h"
#include "transcript.h"

namespace ringmaster::op::testing {

constexpr char kShellJobKey[] = "ns/j";

inline bool IsShellLine(const std::string& line) {
  std::istringstream in(line);
  std::string first;
  in >> first;
  return first == "observe" || first == "observe-gone" || first == "answer";
}

inline std::string RenderPending(const Pending& p) {
  std::string out;
  for (const auto& n : p.creating) out += (out.empty() ? "" : ", ") + std::string("creating ") + n;
  for (const auto& n : p.deleting) out += (out.empty() ? "" : ", ") + std::string("deleting ") + n;
  return out.empty() ? "-" : out;
}

// The controller's expectations and what its pod cache showed last, across
// a transcript's reconciles.
class Shell {
 public:
  void Reset() {
    expectations_.Forget(kShellJobKey);
    cache_.clear();
  }

  // What is pending for a plan made from `pods`, the cache as this
  // reconcile read it. First the watch events that brought the cache there
  // from what the last reconcile read (each pod that appeared or changed,
  // each one gone), then the reconcile's "observe" lines: events applied
  // after it read the pods.
  Pending PendingFor(const ringmaster::testing::TranscriptCase& c, const std::vector<nlohmann::json>& pods,
                     const std::function<nlohmann::json(const std::string&)>& parse_pod,
                     const std::function<std::string(const std::string&)>& pod_name, int64_t now) {
    std::map<std::string, nlohmann::json> read;
    for (const auto& pod : pods) read[pod["metadata"].value("name", "")] = pod;
    for (const auto& [name, pod] : cache_) {
      if (!read.count(name)) expectations_.Observe(kShellJobKey, WatchEventType::kDeleted, pod);
    }
    for (const auto& [name, pod] : read) {
      auto it = cache_.find(name);
      if (it == cache_.end() || it->second != pod)
        expectations_.Observe(kShellJobKey, WatchEventType::kModified, pod);
    }
    cache_ = read;
    for (const auto& line : c.input) {
      std::istringstream in(line);
      std::string first, rest;
      in >> first;
      std::getline(in >> std::ws, rest);
      if (first == "observe") {
        nlohmann::json pod = parse_pod(rest);
        expectations_.Observe(kShellJobKey, WatchEventType::kModified, pod);
        cache_[pod["metadata"].value("name", "")] = pod;
      } else if (first == "observe-gone") {
        nlohmann::json gone = {{"metadata", {{"name", pod_name(rest)}, {"namespace", "ns"}}}};
        expectations_.Observe(kShellJobKey, WatchEventType::kDeleted, gone);
        cache_.erase(pod_name(rest));
      }
    }
    return expectations_.Settle(kShellJobKey, pods, now);
  }

  // The plan's pod creations and deletions, asked and answered; then what
  // the expectations hold, as a line of the transcript's output.
  std::string Execute(const ringmaster::testing::TranscriptCase& c, const Plan& plan,
                      const std::function<std::string(const std::string&)>& pod_name, int64_t now) {
    std::map<std::string, int> answers;  // pod name -> HTTP status
    for (const auto& line : c.input) {
      std::istringstream in(line);
      std::string first, replica;
      int code = 0;
      in >> first >> replica >> code;
      if (first == "answer") answers[pod_name(replica)] = code;
    }
    for (const Step& step : plan.steps) {
      for (const ApiAction& a : step.actions) {
        if (a.kind != ApiActionKind::kCreatePod && a.kind != ApiActionKind::kDeletePod) continue;
        expectations_.Asked(kShellJobKey, a, now);
        auto it = answers.find(a.name);
        expectations_.Answered(kShellJobKey, a,
                               it != answers.end()                   ? it->second
                               : a.kind == ApiActionKind::kCreatePod ? 201
                                                                     : 200);
      }
    }
    return "expecting: " + RenderPending(expectations_.Get(kShellJobKey, now));
  }

 private:
  Expectations expectations_;
  std::map<std::string, nlohmann::json> cache_;  // pod name -> the pod
};

}  // namespace ringmaster::op::testing
