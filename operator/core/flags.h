// The operator's command line, parsed with CLI11: `--flag value` and
// `--flag=value` alike, booleans as `--flag`, `--flag=true|false`, each
// numeric flag range-checked, environment variables as defaults that a
// flag overrides (RINGMASTER_NAMESPACES/WORKERS/QPS/BURST, and POD_NAMESPACE /
// POD_NAME, which the manifests set from the downward API). Pure but for the
// environment it reads; main.cc turns the result into the running operator.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "leader_options.h"
#include "log.h"
#include "ringmaster/status.h"

namespace ringmaster::op {

struct OperatorFlags {
  std::string kubeconfig, context, cluster_domain;
  std::vector<std::string> namespaces;  // empty: all
  // Measured on a 2-core API server (docs/benchmarks/operator.md, "Client QPS
  // and workers"): below 500 QPS creation is bound by the limiter, below 8 workers
  // by the reconciles in flight. The API server's priority and fairness
  // (on since Kubernetes 1.20) is what protects it; this limiter only keeps
  // a runaway loop from flooding it.
  int workers = 8, resync_seconds = 300;
  double qps = 500;
  int burst = 1000;
  bool leader_elect = true;
  bool network_policy = false;
  // --tfjob: also reconcile Kubeflow's kubeflow.org/v1 TFJobs (their CRD
  // must be installed; training-operator must not reconcile them too).
  bool tfjob = false;
  // Kubernetes' Workload API for jobs without a queue (gang.h): used when
  // discovery finds it ("auto"), never ("off").
  std::string gang_scheduling = "auto";
  LeaderOptions leader;  // identity empty: main.cc makes hostname_pid
  std::string metrics_address = ":8080";
  std::string probe_address = ":8081";  // controller-runtime's ports: metrics 8080, probes 8081
  std::optional<LogLevel> log_level;
  // Non-empty when --help was given: print it and exit 0, nothing else.
  std::string help;
};

// args: the command line without the program's name. InvalidArgument names
// the flag (or the environment variable) and what it takes.
StatusOr<OperatorFlags> ParseOperatorFlags(const std::vector<std::string>& args);

}  // namespace ringmaster::op
