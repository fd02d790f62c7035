// The job of a transcript: a DistributedJob object as the API server returns
// it (namespace "ns", uid "uid-1", generation 1), every replica running the
// same container, and the fields a command names in the CRD's words:
//
//   job Chief=1 Worker=2 restartPolicy=OnFailure backoffLimit=2
//   update suspend=true Worker.restartPolicy=ExitCode
//
// <Type>=N (Chief, Worker, PS, Evaluator): replicas; restartPolicy: every
// type's, <Type>.restartPolicy: one type's; backoffLimit,
// activeDeadlineSeconds, ttlSecondsAfterFinished, cleanPodPolicy, suspend, recovery:
// runPolicy's; queue, priorityClass, minAvailable, scheduleTimeoutSeconds:
// its schedulingPolicy's; minWorkers, rejoinTimeoutSeconds,
// replacementTimeoutSeconds: its elastic's;
// successPolicy; name. Other arguments are left to the harness.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "transcript.h"

namespace ringmaster::testing {

inline nlohmann::json TranscriptValue(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos) return std::stoll(text);
  return text;
}

// Applies the job arguments of `c` to `job`; the arguments not about the
// job are skipped when named in `others`, and fail the test otherwise.
inline void ApplyJobArgs(const TranscriptCase& c, nlohmann::json& job,
                         const std::set<std::string>& others = {}) {
  static const std::set<std::string> kTypes = {"Chief", "Master", "Worker", "PS", "Evaluator"};
  static const std::set<std::string> kRunPolicy = {
      "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "cleanPodPolicy", "suspend",
      "recovery"};
  nlohmann::json& spec = job["spec"];
  // The replica types first: restartPolicy applies to every one named.
  for (const auto& [key, value] : c.args) {
    if (!kTypes.count(key)) continue;
    nlohmann::json& r = spec["replicaSpecs"][key];
    r["replicas"] = TranscriptValue(value);
    if (!r.contains("template")) {
      r["template"] = {{"spec",
                        {{"containers",
                          {{{"name", "trainer"},
                            {"image", "ghcr.io/ringmaster/worker:0.1.0"},
                            {"command", {"ringmaster-worker"}}}}}}}};
    }
  }
  for (const auto& [key, value] : c.args) {
    if (others.count(key) || kTypes.count(key)) continue;
    const auto dot = key.find('.');
    if (key == "restartPolicy") {
      for (auto& [type, r] : spec["replicaSpecs"].items()) r["restartPolicy"] = value;
    } else if (dot != std::string::npos && kTypes.count(key.substr(0, dot)) &&
               key.substr(dot + 1) == "restartPolicy") {
      spec["replicaSpecs"][key.substr(0, dot)]["restartPolicy"] = value;
    } else if (kRunPolicy.count(key)) {
      spec["runPolicy"][key] = TranscriptValue(value);
    } else if (key == "queue" || key == "priorityClass" || key == "minAvailable" ||
               key == "scheduleTimeoutSeconds") {
      spec["runPolicy"]["schedulingPolicy"][key] = TranscriptValue(value);
    } else if (key == "minWorkers" || key == "rejoinTimeoutSeconds" || key == "replacementTimeoutSeconds") {
      spec["runPolicy"]["elastic"][key] = TranscriptValue(value);
    } else if (key == "successPolicy") {
      spec["successPolicy"] = value;
    } else if (key == "name") {
      job["metadata"]["name"] = value;
    } else {
      ADD_FAILURE() << c.Where() << ": unknown argument " << key;
    }
  }
}

// A new job from the arguments of `c` ("job" commands).
inline nlohmann::json TranscriptJob(const TranscriptCase& c, const std::set<std::string>& others = {}) {
  nlohmann::json job = {
      {"apiVersion", "ringmaster.io/v1alpha1"},
      {"kind", "DistributedJob"},
      {"metadata",
       {{"name", "j"}, {"namespace", "ns"}, {"uid", "uid-1"}, {"generation", 1}, {"resourceVersion", "1"}}},
      {"spec", {{"replicaSpecs", nlohmann::json::object()}}}};
  ApplyJobArgs(c, job, others);
  return job;
}

// "update" commands: a changed spec is a new generation.
inline void UpdateTranscriptJob(const TranscriptCase& c, nlohmann::json& job,
                                const std::set<std::string>& others = {}) {
  ApplyJobArgs(c, job, others);
  job["metadata"]["generation"] = job["metadata"]["generation"].get<int64_t>() + 1;
}

// A "set" command's input line, "a.b.c = JSON": sets obj[a][b][c] (a
// failure names the line when it is not of that form).
inline void SetAtPath(const TranscriptCase& c, nlohmann::json& obj, const std::string& line) {
  const auto eq = line.find(" = ");
  if (eq == std::string::npos) {
    ADD_FAILURE() << c.Where() << ": not path = JSON: " << line;
    return;
  }
  nlohmann::json value = nlohmann::json::parse(line.substr(eq + 3), nullptr, false);
  if (value.is_discarded()) {
    ADD_FAILURE() << c.Where() << ": not JSON: " << line.substr(eq + 3);
    return;
  }
  nlohmann::json* at = &obj;
  std::istringstream path(line.substr(0, eq));
  for (std::string part; std::getline(path, part, '.');) at = &(*at)[part];
  *at = std::move(value);
}

}  // namespace ringmaster::testing
