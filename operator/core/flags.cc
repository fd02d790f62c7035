#include "flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "number_flag.h"

namespace ringmaster::op {
namespace {

constexpr char kDescription[] =
    "ringmaster-operator: watches DistributedJobs and runs them as pods (docs/operator.md).\n"
    "Connection: in-cluster config, else --kubeconfig, else $KUBECONFIG, else ~/.kube/config.";

int Seconds(std::chrono::seconds s) {
  return static_cast<int>(s.count());
}

}  // namespace

StatusOr<OperatorFlags> ParseOperatorFlags(const std::vector<std::string>& args) {
  OperatorFlags f;
  CLI::App app(kDescription, "ringmaster-operator");
  // A flag given twice: the last wins, as with Kubernetes' own programs
  // (a chart's extraArgs can then override one of its flags).
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(44);

  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (token, token file, client certificate or exec plugin)")
      ->group("Connection");
  app.add_option("--context", f.context, "kubeconfig context (default: its current-context)")
      ->group("Connection");
  app.add_option("--qps", f.qps, "client-side requests per second")
      ->envname("RINGMASTER_QPS")
      ->check(flags::NumberIn(0.01, 1e6, "a number", false))
      ->group("Connection");
  app.add_option("--burst", f.burst, "client-side burst")
      ->envname("RINGMASTER_BURST")
      ->check(flags::IntegerIn(1, 1e6))
      ->group("Connection");

  app.add_option("--namespace,--namespaces", f.namespaces,
                 "namespaces to watch, comma-separated or repeated (default: all)")
      ->envname("RINGMASTER_NAMESPACES")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group("Work");
  app.add_option("--workers", f.workers, "concurrent reconciles")
      ->envname("RINGMASTER_WORKERS")
      ->check(flags::IntegerIn(1, 256))
      ->group("Work");
  app.add_option("--resync-seconds", f.resync_seconds, "periodic full resync")
      ->check(flags::IntegerIn(1, 86400))
      ->group("Work");
  app.add_option("--cluster-domain", f.cluster_domain,
                 "appended to TF_CONFIG addresses (default none: <pod>.<job>.<ns>.svc)")
      ->group("Work");
  app.add_flag("--network-policy", f.network_policy,
               "a NetworkPolicy per job: ingress to its pods only from its own pods "
               "(enforced only by a network plugin that implements it)")
      ->group("Work");
  app.add_flag("--tfjob", f.tfjob,
               "also reconcile Kubeflow's TFJobs (kubeflow.org/v1), as training-operator v1.9 does; "
               "training-operator must not reconcile them too")
      ->group("Work");
  app.add_option("--gang-scheduling", f.gang_scheduling,
                 "auto: a job without a queue is gang-scheduled by Kubernetes' Workload API "
                 "(scheduling.k8s.io) when the API server serves it; off: never")
      ->check(CLI::IsMember({"auto", "off"}))
      ->group("Work");

  int lease = Seconds(f.leader.lease_duration), renew = Seconds(f.leader.renew_deadline),
      retry = Seconds(f.leader.retry_period);
  const char* kLeader = "Leader election (coordination.k8s.io/v1 Lease)";
  app.add_flag("--leader-elect", f.leader_elect, "--leader-elect=false runs without a lease")->group(kLeader);
  app.add_option("--leader-election-namespace", f.leader.namespace_, "the lease's namespace")
      ->envname("POD_NAMESPACE")
      ->group(kLeader);
  app.add_option("--leader-election-id", f.leader.name, "the lease's name")->group(kLeader);
  app.add_option("--identity", f.leader.identity, "this replica's name in the lease (default hostname_pid)")
      ->envname("POD_NAME")
      ->group(kLeader);
  app.add_option("--lease-duration", lease, "seconds")->check(flags::IntegerIn(1, 3600))->group(kLeader);
  app.add_option("--renew-deadline", renew, "seconds, shorter than --lease-duration")
      ->check(flags::IntegerIn(1, 3600))
      ->group(kLeader);
  app.add_option("--retry-period", retry, "seconds")->check(flags::IntegerIn(1, 3600))->group(kLeader);

  std::string level;
  app.add_option("--metrics-address", f.metrics_address, "HOST:PORT of /metrics (\"0\" disables)")
      ->group("Operations");
  app.add_option("--health-probe-address", f.probe_address,
                 "HOST:PORT of /healthz and /readyz (\"0\" disables)")
      ->group("Operations");
  app.add_option("--log-level", level, "debug, info, warning or error (default info)")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->group("Operations");

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    f.help = app.help();
    return f;
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(std::string(e.what()) + " (see --help)");
  }
  // An empty POD_NAMESPACE/POD_NAME (a manifest without the downward API)
  // leaves the default, as before.
  if (f.leader.namespace_.empty()) f.leader.namespace_ = LeaderOptions{}.namespace_;
  if (renew >= lease) {
    return InvalidArgumentError("--renew-deadline (" + std::to_string(renew) +
                                "s) must be shorter than --lease-duration (" + std::to_string(lease) + "s)");
  }
  f.leader.lease_duration = std::chrono::seconds(lease);
  f.leader.renew_deadline = std::chrono::seconds(renew);
  f.leader.retry_period = std::chrono::seconds(retry);
  if (level == "debug") f.log_level = LogLevel::kDebug;
  if (level == "info") f.log_level = LogLevel::kInfo;
  if (level == "warning") f.log_level = LogLevel::kWarning;
  if (level == "error") f.log_level = LogLevel::kError;
  std::erase(f.namespaces, std::string());
  return f;
}

}  // namespace ringmaster::op
