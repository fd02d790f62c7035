// Transcripts of the job's state machine (api/job_state.h), run through it
// and through both of its shells: the operator's PlanJob (pods in, a plan
// out) and `ringmaster run`'s PlanLocalStep (local processes). The expected
// output is the state machine's decision; a shell that decides otherwise
// adds a line saying how ("local: actions: stop-all"), so the transcript
// shows where the two deliberately differ and a change that makes them
// differ anew fails. Files: testdata/job_state/*.txt; commands:
//
//   job <fields>     a new job (tests/support/transcript_job.h), no status
//   update <fields>  the job changed (suspend, scale)
//   step t=N         one reconcile at N seconds, with the replicas observed
//                    one per input line: "<type>-<index> <Phase> [exit=N]
//                    [restarts=N] [deleting] [gated] [evicted] [uid=X]
//                    [gate=NAME]" (uid: the pod's metadata.uid; gated:
//                    Kueue's admission gate; evicted: Kueue's
//                    TerminationTarget mark, deleting too; gate=NAME: a
//                    scheduling gate of someone else's, which the state
//                    machine does not see, only the operator's pod);
//                    `ringmaster run` takes no step after the one that ends
//                    its run
//
// RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the files with what the code says.
#include <gtest/gtest.h>

#include <sstream>

#include "local_plan.h"
#include "names.h"
#include "pod_builder.h"
#include "reconcile.h"
#include "ringmaster/job_state.h"
#include "status_json.h"
#include "transcript.h"
#include "transcript_job.h"

namespace ringmaster {
namespace {

using nlohmann::json;
using testing::TranscriptCase;

constexpr int64_t kT0 = 1'800'000'000;

std::string Time(const std::optional<int64_t>& t) {
  return t ? std::to_string(*t - kT0) : "-";
}

std::string RenderActions(const std::vector<std::string>& actions) {
  std::string out;
  for (const auto& a : actions) out += (out.empty() ? "" : ", ") + a;
  return out.empty() ? "-" : out;
}

std::string RenderStatus(const JobStatus& s) {
  std::ostringstream out;
  out << "status: start=" << Time(s.start_time) << " completion=" << Time(s.completion_time)
      << " restarts=" << s.restart_count << " replicas=";
  bool first = true;
  for (const auto& [type, c] : s.replica_statuses) {
    out << (first ? "" : ",") << ReplicaTypeName(type) << ":" << c.active << "/" << c.succeeded << "/"
        << c.failed;
    first = false;
  }
  out << " workers=" << s.workers_active << "/" << s.workers_wanted;
  if (!s.replacements.empty()) {
    out << " replacing=";
    first = true;
    for (const auto& [key, since] : s.replacements) {
      out << (first ? "" : ",") << key.Name() << "@" << (since - kT0);
      first = false;
    }
  }
  if (!s.counted_failures.empty()) {
    out << " counted=";
    first = true;
    for (const auto& [key, uid] : s.counted_failures) {
      out << (first ? "" : ",") << key.Name() << ":" << uid;
      first = false;
    }
  }
  for (const auto& c : s.conditions) {
    out << "\ncondition: " << ConditionTypeName(c.type) << "=" << (c.status ? "True" : "False") << " "
        << c.reason << " @" << (c.last_transition_time - kT0) << ": " << c.message;
  }
  return out.str();
}

std::vector<std::string> RenderEvents(const std::vector<JobEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back((e.warning ? "warning: " : "") + e.reason + ": " + e.message);
  return out;
}

// One shell's decision in the state machine's words.
struct Said {
  std::vector<std::string> actions;
  JobStatus status;
  std::vector<std::string> events;
  std::optional<int64_t> requeue;
};

// The lines of `shell` that differ from `core`.
void Diverge(const std::string& shell, const Said& core, const Said& said, std::ostringstream& out) {
  if (said.actions != core.actions) out << "\n" << shell << ": actions: " << RenderActions(said.actions);
  if (!(said.status == core.status)) {
    std::istringstream lines(RenderStatus(said.status));
    for (std::string l; std::getline(lines, l);) out << "\n" << shell << ": " << l;
  }
  if (said.events != core.events) {
    if (said.events.empty()) out << "\n" << shell << ": event: -";
    for (const auto& e : said.events) out << "\n" << shell << ": event: " << e;
  }
  if (said.requeue != core.requeue)
    out << "\n" << shell << ": requeue: " << (said.requeue ? std::to_string(*said.requeue) : "-");
}

// A replica as the transcript names it: "worker-1".
ReplicaKey ParseKey(const TranscriptCase& c, const std::string& name) {
  const auto dash = name.rfind('-');
  auto type = dash == std::string::npos ? std::nullopt : ParseReplicaType(name.substr(0, dash));
  if (!type) ADD_FAILURE() << c.Where() << ": not a replica: " << name;
  return {type.value_or(ReplicaType::kWorker),
          dash == std::string::npos ? 0 : std::stoi(name.substr(dash + 1))};
}

// A replica as observed, and the scheduling gate of someone else's on its
// pod ("" when none).
struct Observed {
  ReplicaObservation o;
  std::string other_gate;
};

Observed ParseObservation(const TranscriptCase& c, const std::string& line) {
  std::istringstream in(line);
  std::string name, phase;
  in >> name >> phase;
  Observed out;
  ReplicaObservation& o = out.o;
  o.key = ParseKey(c, name);
  if (phase == "Pending") {
    o.phase = ReplicaPhase::kPending;
  } else if (phase == "Running") {
    o.phase = ReplicaPhase::kRunning;
  } else if (phase == "Succeeded") {
    o.phase = ReplicaPhase::kSucceeded;
  } else if (phase == "Failed") {
    o.phase = ReplicaPhase::kFailed;
    o.exit_code = 1;
  } else {
    ADD_FAILURE() << c.Where() << ": not a phase: " << phase;
  }
  for (std::string w; in >> w;) {
    if (w.rfind("exit=", 0) == 0) {
      o.exit_code = std::stoi(w.substr(5));
    } else if (w.rfind("restarts=", 0) == 0) {
      o.restarts = std::stoi(w.substr(9));
    } else if (w == "deleting") {
      o.deleting = true;
    } else if (w == "gated") {
      o.gated = true;
    } else if (w == "evicted") {
      o.evicted = o.deleting = true;
    } else if (w.rfind("uid=", 0) == 0) {
      o.uid = w.substr(4);
    } else if (w.rfind("gate=", 0) == 0) {
      out.other_gate = w.substr(5);
    } else {
      ADD_FAILURE() << c.Where() << ": unknown word " << w;
    }
  }
  return out;
}

std::string Describe(const Action& a) {
  switch (a.kind) {
    case ActionKind::kCreate:
      return "create " + a.key.Name();
    case ActionKind::kDelete:
      return "delete " + a.key.Name();
    case ActionKind::kRestart:
      return "restart " + a.key.Name();
    case ActionKind::kDeleteJob:
      return "delete-job";
  }
  return "?";
}

// The pod of `o` as the operator's cache would show it: what PlanJob reads
// of a pod (its name, labels and controller reference, its phase and
// container's exit), for a replica the job may no longer have (scaled down).
json PodOf(const DistributedJob& job, const Observed& seen) {
  const ReplicaObservation& o = seen.o;
  json pod = {{"metadata",
               {{"name", op::PodName(job.name, o.key)},
                {"namespace", "ns"},
                {"labels",
                 {{op::kLabelJobName, job.name},
                  {op::kLabelReplicaType, std::string(ReplicaTypeLower(o.key.type))},
                  {op::kLabelReplicaIndex, std::to_string(o.key.index)}}},
                {"ownerReferences", json::array({op::OwnerReference(job)})}}}};
  static const char* kPhases[] = {"Pending", "Running", "Succeeded", "Failed"};
  pod["status"] = {{"phase", kPhases[static_cast<int>(o.phase)]}};
  json cs = {{"name", "trainer"}, {"restartCount", o.restarts}};
  if (o.phase == ReplicaPhase::kSucceeded || o.phase == ReplicaPhase::kFailed) {
    cs["state"] = {{"terminated", {{"exitCode", o.exit_code}}}};
  }
  pod["status"]["containerStatuses"] = json::array({cs});
  if (o.deleting) pod["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  if (!o.uid.empty()) pod["metadata"]["uid"] = o.uid;
  json gates = json::array();
  if (!seen.other_gate.empty()) gates.push_back({{"name", seen.other_gate}});
  if (o.gated) gates.push_back({{"name", kKueueAdmissionGate}});
  if (!gates.empty()) pod["spec"] = {{"schedulingGates", std::move(gates)}};
  if (o.evicted) {
    pod["status"]["conditions"] = json::array({{{"type", kKueueTerminationTargetCondition},
                                                {"status", "True"},
                                                {"reason", "WorkloadEvictedDueToPreempted"}}});
  }
  return pod;
}

class JobStateTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(JobStateTranscript, BothShellsDecideAsTheStateMachine) {
  json job_obj;  // the operator's job, its status as last written
  std::optional<DistributedJob> job;
  JobStatus core_status, local_status;
  testing::RunTranscript(GetParam(), [&](const TranscriptCase& c) -> std::string {
    if (c.command == "job" || c.command == "update") {
      if (c.command == "job") {
        job_obj = testing::TranscriptJob(c);
        core_status = local_status = {};
      } else {
        testing::UpdateTranscriptJob(c, job_obj);
      }
      LoadedJob loaded = DecodeJob(job_obj);
      if (!loaded.job) {
        ADD_FAILURE() << c.Where()
                      << ": invalid job: " << (loaded.errors.empty() ? "" : loaded.errors[0].message);
        return "";
      }
      job = *loaded.job;
      return "ok";
    }
    if (c.command != "step") {
      ADD_FAILURE() << c.Where() << ": unknown command " << c.command;
      return "";
    }
    if (!job) {
      ADD_FAILURE() << c.Where() << ": step before job";
      return "";
    }
    const int64_t now = kT0 + std::stoll(c.Arg("t", "0"));
    std::vector<Observed> seen;
    std::vector<ReplicaObservation> observed;
    for (const auto& line : c.input) {
      seen.push_back(ParseObservation(c, line));
      observed.push_back(seen.back().o);
    }

    // The state machine itself.
    const Decision d = Reconcile(*job, core_status, observed, now);
    Said core{{}, d.status, RenderEvents(d.events), d.requeue_after_seconds};
    for (const auto& a : d.actions) core.actions.push_back(Describe(a));

    // The operator: pods in, a plan out; the status through its JSON.
    std::vector<json> pods;
    for (const auto& o : seen) pods.push_back(PodOf(*job, o));
    const json service = json::object();
    const op::Plan plan = op::PlanJob(job_obj, pods, &service, {}, now, {});
    Said oper;
    oper.events = RenderEvents(plan.events);
    oper.requeue = plan.requeue_after_seconds;
    const std::string prefix = job->name + "-";
    for (const auto& step : plan.steps) {
      for (const auto& a : step.actions) {
        const std::string replica = a.name.substr(std::min(prefix.size(), a.name.size()));
        if (a.kind == op::ApiActionKind::kCreatePod) oper.actions.push_back("create " + replica);
        if (a.kind == op::ApiActionKind::kDeletePod)
          oper.actions.push_back((a.reason == "RestartingPod" ? "restart " : "delete ") + replica);
        if (a.kind == op::ApiActionKind::kDeleteJob) oper.actions.push_back("delete-job");
      }
    }
    if (plan.status) job_obj["status"] = *plan.status;
    oper.status = op::StatusFromJson(job_obj.value("status", json::object()));

    // `ringmaster run`, until its run has ended.
    std::optional<Said> run;
    if (!local_status.Finished()) {
      const cli::LocalStep local = cli::PlanLocalStep(*job, local_status, observed, now);
      run = Said{{}, local.status, local.lines, std::nullopt};
      for (const auto& cmd : local.commands) {
        static const char* kWords[] = {"create ", "restart ", "delete "};
        run->actions.push_back(kWords[static_cast<int>(cmd.kind)] + cmd.key.Name());
      }
      if (local.finished) run->actions.push_back("stop-all");
      run->requeue = core.requeue;  // the runner looks again every tick: nothing to compare
      local_status = local.status;
    }

    std::ostringstream out;
    out << "actions: " << RenderActions(core.actions) << "\n";
    out << (d.status == core_status ? "status: unchanged" : RenderStatus(d.status));
    for (const auto& e : core.events) out << "\nevent: " << e;
    if (core.requeue) out << "\nrequeue: " << *core.requeue;
    Diverge("operator", core, oper, out);
    if (run) Diverge("local", core, *run, out);
    core_status = d.status;
    return out.str();
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, JobStateTranscript,
                         ::testing::ValuesIn(testing::TranscriptFiles(RINGMASTER_SOURCE_DIR
                                                                      "/tests/api/testdata/job_state")),
                         [](const auto& info) { return testing::TranscriptName(info.param); });

}  // namespace
}  // namespace ringmaster
