// Shared fixtures: a job object as the API server returns it.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ringmaster/job.h"

namespace ringmaster::op::testing {

// examples/quickstart.yaml as the API server would return it (namespace,
// uid, generation set).
inline nlohmann::json QuickstartObject(const std::string& ns = "team-a") {
  nlohmann::json obj = {{"apiVersion", "ringmaster.io/v1alpha1"},
                        {"kind", "DistributedJob"},
                        {"metadata",
                         {{"name", "quickstart"},
                          {"namespace", ns},
                          {"uid", "uid-1234"},
                          {"generation", 1},
                          {"resourceVersion", "100"}}}};
  obj["spec"] = {{"communication", {{"implementation", "AUTO"}, {"bytesPerPack", 0}, {"timeoutSeconds", 60}}},
                 {"runPolicy", {{"backoffLimit", 2}, {"cleanPodPolicy", "Running"}}},
                 {"replicaSpecs",
                  {{"Chief",
                    {{"replicas", 1},
                     {"restartPolicy", "OnFailure"},
                     {"template",
                      {{"spec",
                        {{"containers",
                          {{{"name", "trainer"},
                            {"image", "ghcr.io/ringmaster/worker:0.1.0"},
                            {"command", {"ringmaster-worker"}}}}}}}}}}},
                   {"Worker",
                    {{"replicas", 2},
                     {"restartPolicy", "OnFailure"},
                     {"template",
                      {{"spec",
                        {{"containers",
                          {{{"name", "trainer"},
                            {"image", "ghcr.io/ringmaster/worker:0.1.0"},
                            {"command", {"ringmaster-worker"}}}}}}}}}}}}}};
  return obj;
}

inline nlohmann::json PodWithPhase(const nlohmann::json& pod, const std::string& phase, int exit_code = -1) {
  nlohmann::json p = pod;
  p["status"] = {{"phase", phase}};
  if (exit_code >= 0) {
    p["status"]["containerStatuses"] = {
        {{"name", "trainer"}, {"restartCount", 0}, {"state", {{"terminated", {{"exitCode", exit_code}}}}}}};
  }
  return p;
}

}  // namespace ringmaster::op::testing
