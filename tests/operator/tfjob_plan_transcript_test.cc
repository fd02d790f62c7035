// Transcripts of the TFJob planner (PlanTfJob): a kubeflow.org/v1 TFJob and
// what the caches show in, the plan out, as plan_transcript_test does for a
// DistributedJob. Files: testdata/tfjob_plan/*.txt; commands:
//
//   tfjob            the input lines are the TFJob, JSON (namespace "ns",
//                    uid "uid-1" and generation 1 are added when absent)
//   set              one "path = JSON" per input line, as in plan_transcript
//   plan t=N [nowrite] [pruned] [networkPolicy] [gang=v1alpha1|v1alpha2|v1beta1]
//                    one reconcile at N seconds. Input lines: "services" (every
//                    replica's Service exists), "service <replica>" (that
//                    one's), "creating <replica>", "deleting <replica>", and
//                    pods: "<replica> <Phase> [exit=N] [restarts=N] [deleting]
//                    [owner=UID|owner=none] [uid=X]", <replica> as in the names
//                    ("master-0", "worker-1"). The plan's status and its
//                    patch of the job are then the job's, as if written,
//                    unless `nowrite`; `pruned`: the status as
//                    training-operator's CRD stores it (the fields it does
//                    not know dropped).
//   reconcile t=N [nowrite] [pruned]
//                    `plan` as the controller runs it, as in
//                    plan_transcript_test: what is pending comes from its
//                    expectations (transcript_shell.h: "observe",
//                    "observe-gone" and "answer" lines), and the plan's pod
//                    creations and deletions raise them
//   pod <name>, svc <name>, netpol <name>, gang <kind>
//                    the pod, the Service, the NetworkPolicy or the gang
//                    object (Workload, PodGroup) the last plan creates, as
//                    JSON
//   env <name>       that pod's tensorflow container's environment, a line
//                    per variable
//
// RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the files with what the code says.
#include <gtest/gtest.h>

#include <sstream>

#include "ringmaster/tfjob.h"
#include "tfjob_reconcile.h"
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

// A pod as the operator's cache shows it, labelled as training-operator
// labels its pods.
json ParsePod(const TranscriptCase& c, const json& job, const std::string& line) {
  std::istringstream in(line);
  std::string replica, phase;
  in >> replica >> phase;
  const auto dash = replica.rfind('-');
  json pod = {{"metadata",
               {{"name", PodNameOf(job, replica)},
                {"namespace", job["metadata"]["namespace"]},
                {"labels",
                 {{kTfJobNameLabel, job["metadata"]["name"]},
                  {kTfJobOperatorNameLabel, kTfJobOperatorName},
                  {kTfJobReplicaTypeLabel, replica.substr(0, dash)},
                  {kTfJobReplicaIndexLabel, replica.substr(dash + 1)}}},
                {"ownerReferences", json::array({{{"apiVersion", kTfJobApiVersion},
                                                  {"kind", kTfJobKind},
                                                  {"name", job["metadata"]["name"]},
                                                  {"uid", job["metadata"]["uid"]},
                                                  {"controller", true}}})}}},
              {"status", {{"phase", phase}}}};
  std::optional<int> exit;
  int restarts = 0;
  for (std::string w; in >> w;) {
    if (w.rfind("exit=", 0) == 0) {
      exit = std::stoi(w.substr(5));
    } else if (w.rfind("restarts=", 0) == 0) {
      restarts = std::stoi(w.substr(9));
    } else if (w == "deleting") {
      pod["metadata"]["deletionTimestamp"] = FormatRfc3339(kT0);
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
    json cs = {{"name", "tensorflow"}, {"restartCount", restarts}};
    if (exit) {
      cs["state"] = {
          {"terminated", {{"exitCode", *exit}, {"reason", "Error"}, {"finishedAt", FormatRfc3339(kT0)}}}};
    }
    pod["status"]["containerStatuses"] = json::array({cs});
  }
  return pod;
}

json ParseService(const json& job, const std::string& replica) {
  return {{"metadata",
           {{"name", PodNameOf(job, replica)},
            {"namespace", job["metadata"]["namespace"]},
            {"labels", {{kTfJobNameLabel, job["metadata"]["name"]}}},
            {"ownerReferences", json::array({{{"apiVersion", kTfJobApiVersion},
                                              {"kind", kTfJobKind},
                                              {"name", job["metadata"]["name"]},
                                              {"uid", job["metadata"]["uid"]},
                                              {"controller", true}}})}}}};
}

// Every replica's name ("worker-1") of the TFJob as written.
std::vector<std::string> Replicas(const json& job) {
  std::vector<std::string> out;
  const json& specs = job["spec"]["tfReplicaSpecs"];
  for (const auto& [type, spec] : specs.items()) {
    std::string lower;
    for (char ch : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const int n = spec.value("replicas", 1);
    for (int i = 0; i < n; ++i) out.push_back(lower + "-" + std::to_string(i));
  }
  return out;
}

// The plan; of its status only what differs from `old`.
std::string Render(const Plan& plan, const json& old) {
  std::ostringstream out;
  out << "state: " << (plan.state.empty() ? "(none)" : plan.state);
  for (const Step& step : plan.steps) {
    out << "\nstep on-failure=" << OnFailureName(step.on_failure) << ":";
    bool first = true;
    for (const ApiAction& a : step.actions) {
      out << (first ? " " : ", ") << ApiActionKindName(a.kind) << (a.name.empty() ? "" : " " + a.name);
      if (a.kind == ApiActionKind::kDeletePod) out << " (" << a.reason << ")";
      if (a.kind == ApiActionKind::kPatchJob) out << " " << a.object.dump();
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
        out << "\nstatus.conditions: " << (same ? "(same) " : "") << c.dump();
      }
    }
  }
  for (const auto& e : plan.events)
    out << "\nevent: " << (e.warning ? "warning: " : "") << e.reason << ": " << e.message;
  if (plan.requeue_after_seconds) out << "\nrequeue: " << *plan.requeue_after_seconds;
  return out.str();
}

const json* Created(const Plan& plan, ApiActionKind kind, const std::string& name) {
  for (const Step& step : plan.steps) {
    for (const ApiAction& a : step.actions) {
      if (a.name == name && a.kind == kind) return &a.object;
    }
  }
  return nullptr;
}

class TfJobPlanTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(TfJobPlanTranscript, PlansAsWritten) {
  json job;
  testing::Shell shell_state;  // the controller's expectations, for "reconcile"
  std::optional<Plan> last;
  ringmaster::testing::RunTranscript(GetParam(), [&](const TranscriptCase& c) -> std::string {
    if (c.command == "tfjob") {
      std::string text;
      for (const auto& l : c.input) text += l + "\n";
      job = json::parse(text, nullptr, false);
      if (job.is_discarded() || !job.is_object()) {
        ADD_FAILURE() << c.Where() << ": the TFJob is not a JSON object";
        return "";
      }
      json& meta = job["metadata"];
      if (!meta.contains("namespace")) meta["namespace"] = "ns";
      if (!meta.contains("uid")) meta["uid"] = "uid-1";
      if (!meta.contains("generation")) meta["generation"] = 1;
      shell_state.Reset();
      return "ok";
    }
    if (c.command == "set") {
      for (const auto& line : c.input) SetAtPath(c, job, line);
      return "ok";
    }
    if (c.command == "gang") {
      const std::string kind = c.args.empty() ? "" : c.args[0].first;
      for (const Step& step : last ? last->steps : std::vector<Step>{}) {
        for (const ApiAction& a : step.actions) {
          if (a.kind == ApiActionKind::kCreateGangObject && a.object.value("kind", "") == kind)
            return a.object.dump(1);
        }
      }
      return "the last plan creates no " + kind;
    }
    if (c.command == "pod" || c.command == "svc" || c.command == "netpol" || c.command == "configmap" ||
        c.command == "env") {
      const std::string name = c.args.empty() ? "" : c.args[0].first;
      const auto kind = c.command == "svc"         ? ApiActionKind::kCreateService
                        : c.command == "netpol"    ? ApiActionKind::kCreateNetworkPolicy
                        : c.command == "configmap" ? ApiActionKind::kCreateConfigMap
                                                   : ApiActionKind::kCreatePod;
      const json* o = last ? Created(*last, kind, name) : nullptr;
      if (!o) return "the last plan creates no " + c.command + " " + name;
      if (c.command != "env") return o->dump(1);
      std::string out;
      for (const auto& ct : (*o)["spec"]["containers"]) {
        if (ct.value("name", "") != kTfJobContainerName) continue;
        for (const auto& e : ct["env"]) {
          // A value read when the container starts: where from.
          const std::string value =
              e.contains("valueFrom") ? "<- " + e["valueFrom"].dump() : e.value("value", "");
          out += (out.empty() ? "" : "\n") + e.value("name", "") + "=" + value;
        }
      }
      return out;
    }
    if (c.command != "plan" && c.command != "reconcile") {
      ADD_FAILURE() << c.Where() << ": unknown command " << c.command;
      return "";
    }
    const bool shell = c.command == "reconcile";
    const int64_t now = kT0 + std::stoll(c.Arg("t", "0"));
    std::vector<json> pods, services;
    Pending pending;
    for (const auto& line : c.input) {
      if (shell && testing::IsShellLine(line)) continue;
      std::istringstream in(line);
      std::string first, replica;
      in >> first >> replica;
      if (first == "services") {
        for (const auto& r : Replicas(job)) services.push_back(ParseService(job, r));
      } else if (first == "service") {
        services.push_back(ParseService(job, replica));
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
    const std::string gang = c.Arg("gang");
    opts.gang_api = gang.empty() ? GangApi::kNone
                                 : GangApiFromDiscovery({{"name", "scheduling.k8s.io"},
                                                         {"versions", json::array({{{"version", gang}}})}});
    last = PlanTfJob(job, pods, services, pending, now, opts);
    std::string out = opening + Render(*last, job.value("status", json()));
    if (shell) out += "\n" + shell_state.Execute(c, *last, pod_name, now);
    if (!c.Has("nowrite")) {
      if (last->status) job["status"] = *last->status;
      if (c.Has("pruned")) {
        for (const char* ours : {"restartCount", "replacements", "countedFailures"})
          job["status"].erase(ours);
      }
      for (const Step& step : last->steps) {
        for (const ApiAction& a : step.actions) {
          if (a.kind == ApiActionKind::kPatchJob) job.merge_patch(a.object);
        }
      }
    }
    return out;
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, TfJobPlanTranscript,
                         ::testing::ValuesIn(ringmaster::testing::TranscriptFiles(
                             RINGMASTER_SOURCE_DIR "/tests/operator/testdata/tfjob_plan")),
                         [](const auto& info) { return ringmaster::testing::TranscriptName(info.param); });

}  // namespace
}  // namespace ringmaster::op
