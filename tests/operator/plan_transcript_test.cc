// Transcripts of the operator's planner (PlanJob): a job object and what the
// caches show in, the plan out: its steps in order with what a failure
// means, the status it writes (what changes of it), its events. Files: testdata/plan/*.txt;
// commands:
//
//   job <fields>     a new job (tests/support/transcript_job.h), no status
//   update <fields>  the spec changed: a new generation
//   set              one "path = JSON" per input line, path dotted from the
//                    object's top ("spec.communication.keySecretRef =
//                    {"name":"k"}", "status.restartCount = 1")
//   plan t=N [networkPolicy] [nowrite]
//                    one reconcile at N seconds. Input lines: "service" (the
//                    Service exists); "creating <replica>" and "deleting
//                    <replica>" (expectations not yet seen in the cache);
//                    a pod: "<replica> <Phase> [exit=N] [restarts=N]
//                    [deleting] [owner=UID|owner=none] [uid=X] [last] [at=N]
//                    [gated] [evicted] [kueue] [unretriable]
//                    [message=TEXT TO THE END OF THE LINE]" (its container
//                    ended with exit N at N seconds, in state.terminated,
//                    or with `last` in lastState.terminated; Kueue's
//                    marks: `gated` its admission gate, `evicted` its
//                    TerminationTarget condition, `kueue` its pod-group
//                    label and finalizer, `unretriable` the end-of-group
//                    annotation). The plan's
//                    status is then the job's, as if written, unless
//                    `nowrite`.
//   reconcile t=N [nowrite]
//                    `plan` as the controller runs it: what is pending comes
//                    from its expectations (transcript_shell.h: the
//                    "observe", "observe-gone" and "answer" lines), and the
//                    plan's pod creations and deletions raise them. The
//                    output opens with what was pending and ends with what
//                    is expected after the plan.
//
// RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the files with what the code says.
#include <gtest/gtest.h>

#include <sstream>

#include "names.h"
#include "reconcile.h"
#include "time_util.h"
#include "transcript.h"
#include "transcript_job.h"
#include "transcript_shell.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;
using ringmaster::testing::SetAtPath;
using ringmaster::testing::TranscriptCase;

constexpr int64_t kT0 = 1'800'000'000;

std::string PodNameOf(const json& job, const std::string& replica) {
  return job["metadata"]["name"].get<std::string>() + "-" + replica;
}

// A pod as the operator's cache shows it (TrimPod keeps no more).
json ParsePod(const TranscriptCase& c, const json& job, const std::string& line) {
  std::string text = line, message;
  bool has_message = false;
  if (auto m = text.find(" message="); m != std::string::npos) {
    message = text.substr(m + 9);
    text = text.substr(0, m);
    has_message = true;
  }
  std::istringstream in(text);
  std::string replica, phase;
  in >> replica >> phase;
  const auto dash = replica.rfind('-');
  json pod = {{"metadata",
               {{"name", PodNameOf(job, replica)},
                {"namespace", job["metadata"]["namespace"]},
                {"labels",
                 {{kLabelJobName, job["metadata"]["name"]},
                  {kLabelReplicaType, replica.substr(0, dash)},
                  {kLabelReplicaIndex, replica.substr(dash + 1)}}},
                {"ownerReferences", json::array({{{"apiVersion", "ringmaster.io/v1alpha1"},
                                                  {"kind", "DistributedJob"},
                                                  {"name", job["metadata"]["name"]},
                                                  {"uid", job["metadata"]["uid"]},
                                                  {"controller", true}}})}}},
              {"status", {{"phase", phase}}}};
  std::optional<int> exit;
  int restarts = 0;
  int64_t at = 0;
  bool last = false;
  for (std::string w; in >> w;) {
    if (w.rfind("exit=", 0) == 0) {
      exit = std::stoi(w.substr(5));
    } else if (w.rfind("restarts=", 0) == 0) {
      restarts = std::stoi(w.substr(9));
    } else if (w.rfind("at=", 0) == 0) {
      at = std::stoll(w.substr(3));
    } else if (w == "last") {
      last = true;
    } else if (w == "deleting") {
      pod["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0);
    } else if (w == "gated") {
      pod["spec"]["schedulingGates"] = json::array({{{"name", kKueueAdmissionGate}}});
    } else if (w == "evicted") {
      pod["status"]["conditions"] = json::array({{{"type", kKueueTerminationTargetCondition},
                                                  {"status", "True"},
                                                  {"reason", "WorkloadEvictedDueToPreempted"}}});
    } else if (w == "kueue") {
      pod["metadata"]["labels"][kKueuePodGroupLabel] = job["metadata"]["name"];
      pod["metadata"]["finalizers"] = json::array({kKueueFinalizer});
    } else if (w == "unretriable") {
      pod["metadata"]["annotations"][kKueueRetriableInGroupAnnotation] = "false";
    } else if (w.rfind("uid=", 0) == 0) {
      pod["metadata"]["uid"] = w.substr(4);
    } else if (w == "owner=none") {
      pod["metadata"].erase("ownerReferences");
    } else if (w.rfind("owner=", 0) == 0) {
      pod["metadata"]["ownerReferences"][0]["uid"] = w.substr(6);
    } else {
      ADD_FAILURE() << c.Where() << ": unknown word " << w;
    }
  }
  if (exit || restarts) {
    json cs = {{"name", "trainer"}, {"restartCount", restarts}};
    if (exit) {
      json term = {{"exitCode", *exit}, {"reason", "Error"}, {"finishedAt", FormatRfc3339(kT0 + at)}};
      if (has_message) term["message"] = message;
      cs[last ? "lastState" : "state"] = {{"terminated", term}};
    }
    pod["status"]["containerStatuses"] = json::array({cs});
  }
  return pod;
}

// The plan; of its status only what differs from `old` (the job's): the
// fields, and the conditions by type.
std::string Render(const Plan& plan, const json& old) {
  std::ostringstream out;
  out << "state: " << plan.state;
  for (const Step& step : plan.steps) {
    out << "\nstep on-failure=" << OnFailureName(step.on_failure) << ":";
    bool first = true;
    for (const ApiAction& a : step.actions) {
      out << (first ? " " : ", ") << ApiActionKindName(a.kind) << (a.name.empty() ? "" : " " + a.name);
      if (a.kind == ApiActionKind::kDeletePod || a.kind == ApiActionKind::kPatchPod)
        out << " (" << a.reason << ")";
      first = false;
    }
  }
  if (!plan.status) {
    out << "\nstatus: unchanged";
  } else {
    for (const auto& [key, value] : plan.status->items()) {
      if (old.is_object() && old.contains(key) && old[key] == value) continue;
      if (key != "conditions") {
        out << "\nstatus." << key << ": " << value.dump();
        continue;
      }
      for (const auto& c : value) {
        bool same = false;
        if (old.is_object() && old.contains("conditions"))
          for (const auto& o : old["conditions"]) same |= o == c;
        if (!same) out << "\nstatus.conditions: " << c.dump();
      }
    }
  }
  for (const auto& e : plan.events)
    out << "\nevent: " << (e.warning ? "warning: " : "") << e.reason << ": " << e.message;
  if (plan.requeue_after_seconds) out << "\nrequeue: " << *plan.requeue_after_seconds;
  return out.str();
}

class PlanTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanTranscript, PlansAsWritten) {
  json job;
  testing::Shell shell_state;  // the controller's expectations, for "reconcile"
  ringmaster::testing::RunTranscript(GetParam(), [&](const TranscriptCase& c) -> std::string {
    if (c.command == "job") {
      job = ringmaster::testing::TranscriptJob(c);
      shell_state.Reset();
      return "ok";
    }
    if (c.command == "update") {
      ringmaster::testing::UpdateTranscriptJob(c, job);
      return "ok";
    }
    if (c.command == "set") {
      for (const auto& line : c.input) SetAtPath(c, job, line);
      return "ok";
    }
    if (c.command != "plan" && c.command != "reconcile") {
      ADD_FAILURE() << c.Where() << ": unknown command " << c.command;
      return "";
    }
    const bool shell = c.command == "reconcile";
    const int64_t now = kT0 + std::stoll(c.Arg("t", "0"));
    std::vector<json> pods;
    std::optional<json> service;
    Pending pending;
    for (const auto& line : c.input) {
      if (shell && testing::IsShellLine(line)) continue;
      std::istringstream in(line);
      std::string first, replica;
      in >> first >> replica;
      if (first == "service") {
        service = json::object();
      } else if (first == "creating") {
        pending.creating.insert(PodNameOf(job, replica));
      } else if (first == "deleting") {
        pending.deleting.insert(PodNameOf(job, replica));
      } else {
        pods.push_back(ParsePod(c, job, line));
      }
    }
    auto pod_name = [&](const std::string& replica) { return PodNameOf(job, replica); };
    std::string opening;
    if (shell) {
      pending = shell_state.PendingFor(
          c, pods, [&](const std::string& line) { return ParsePod(c, job, line); }, pod_name, now);
      opening = "pending: " + testing::RenderPending(pending) + "\n";
    }
    BuildOptions opts;
    opts.network_policy = c.Has("networkPolicy");
    const Plan plan = PlanJob(job, pods, service ? &*service : nullptr, pending, now, opts);
    std::string out = opening + Render(plan, job.value("status", json()));
    if (shell) out += "\n" + shell_state.Execute(c, plan, pod_name, now);
    if (plan.status && !c.Has("nowrite")) job["status"] = *plan.status;
    return out;
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, PlanTranscript,
                         ::testing::ValuesIn(ringmaster::testing::TranscriptFiles(
                             RINGMASTER_SOURCE_DIR "/tests/operator/testdata/plan")),
                         [](const auto& info) { return ringmaster::testing::TranscriptName(info.param); });

}  // namespace
}  // namespace ringmaster::op
