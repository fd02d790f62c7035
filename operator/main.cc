// ringmaster-operator: watches DistributedJobs and runs them as pods.
// See docs/operator.md for the flags, the metrics and the RBAC it needs.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "client.h"
#include "controller.h"
#include "endpoints.h"
#include "kubeconfig.h"
#include "leader.h"
#include "log.h"
#include "metrics.h"
#include "pplx/threadpool.h"
#include "process_metrics.h"

using namespace ringmaster;
using namespace ringmaster::op;

namespace {

constexpr char kUsage[] = R"(Usage: ringmaster-operator [FLAGS]

Connection (default: in-cluster config, else $KUBECONFIG, else ~/.kube/config):
  --kubeconfig PATH            kubeconfig file (token, token file, client certificate or exec plugin)
  --context NAME               kubeconfig context (default: its current-context)
  --qps N                      client-side requests per second   (env RINGMASTER_QPS, default 500)
  --burst N                    client-side burst                  (env RINGMASTER_BURST, default 1000)
Work:
  --namespace NS[,NS...]       namespaces to watch; repeatable   (env RINGMASTER_NAMESPACES, default all)
  --workers N                  concurrent reconciles              (env RINGMASTER_WORKERS, default 8)
  --resync-seconds N           periodic full resync               (default 300)
  --cluster-domain D           appended to TF_CONFIG addresses    (default none: "<pod>.<job>.<ns>.svc")
  --network-policy[=true|false]  a NetworkPolicy per job: ingress to its pods only from its own pods
                               (default false; enforced only by a network plugin that implements it)
Leader election (coordination.k8s.io/v1 Lease):
  --leader-elect=true|false    (default true)
  --leader-election-namespace NS  (env POD_NAMESPACE, default ringmaster-system)
  --leader-election-id NAME    lease name (default ringmaster-operator)
  --identity ID                (env POD_NAME, default hostname_pid)
  --lease-duration S / --renew-deadline S / --retry-period S   (15 / 10 / 2)
Operations:
  --metrics-address HOST:PORT  /metrics                          (default :8080; "0" disables)
  --health-probe-address HOST:PORT  /healthz, /readyz        (default :8081; "0" disables)
  --log-level debug|info|warning|error
)";

struct Flags {
  std::string kubeconfig, context, cluster_domain;
  std::vector<std::string> namespaces;
  // Measured on a 2-core API server (docs/benchmarks.md, "Operator at
  // scale"): below 500 QPS creation is bound by the limiter, below 8 workers
  // by the reconciles in flight. The API server's priority and fairness
  // (on since Kubernetes 1.20) is what protects it; this limiter only keeps
  // a runaway loop from flooding it.
  int workers = 8, resync = 300;
  double qps = 500;
  int burst = 1000;
  bool leader_elect = true;
  bool network_policy = false;
  LeaderOptions leader;
  std::string metrics_address = ":8080";
  std::string probe_address = ":8081";  // controller-runtime's ports: metrics 8080, probes 8081
};

void SplitInto(const std::string& text, std::vector<std::string>& out) {
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
}

StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  if (auto v = GetEnv("RINGMASTER_NAMESPACES")) SplitInto(*v, f.namespaces);
  try {
    if (auto v = GetEnv("RINGMASTER_WORKERS")) f.workers = std::stoi(*v);
    if (auto v = GetEnv("RINGMASTER_QPS")) f.qps = std::stod(*v);
    if (auto v = GetEnv("RINGMASTER_BURST")) f.burst = std::stoi(*v);
  } catch (...) {
    return InvalidArgumentError("RINGMASTER_WORKERS/QPS/BURST must be numbers");
  }
  if (auto v = GetEnv("POD_NAMESPACE"); v && !v->empty()) f.leader.namespace_ = *v;
  if (auto v = GetEnv("POD_NAME"); v && !v->empty()) f.leader.identity = *v;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const auto eq = arg.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= argc) return InvalidArgumentError(arg + " needs a value");
      return std::string(argv[++i]);
    };
    auto number = [&](auto& out) -> Status {
      auto v = next();
      if (!v.ok()) return v.status();
      try {
        size_t pos = 0;
        if constexpr (std::is_same_v<std::decay_t<decltype(out)>, double>) {
          out = std::stod(*v, &pos);
        } else {
          out = std::stoi(*v, &pos);
        }
        if (pos != v->size()) throw std::invalid_argument("trailing");
      } catch (...) {
        return InvalidArgumentError(arg + " needs a number, got '" + *v + "'");
      }
      return OkStatus();
    };
    auto seconds = [&](std::chrono::seconds& out) -> Status {
      int s = 0;
      RM_RETURN_IF_ERROR(number(s));
      out = std::chrono::seconds(s);
      return OkStatus();
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--kubeconfig") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.kubeconfig = *v;
    } else if (arg == "--context") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.context = *v;
    } else if (arg == "--namespace" || arg == "--namespaces") {
      auto v = next();
      if (!v.ok()) return v.status();
      SplitInto(*v, f.namespaces);
    } else if (arg == "--cluster-domain") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.cluster_domain = *v;
    } else if (arg == "--workers") {
      RM_RETURN_IF_ERROR(number(f.workers));
    } else if (arg == "--resync-seconds") {
      RM_RETURN_IF_ERROR(number(f.resync));
    } else if (arg == "--qps") {
      RM_RETURN_IF_ERROR(number(f.qps));
    } else if (arg == "--burst") {
      RM_RETURN_IF_ERROR(number(f.burst));
    } else if (arg == "--network-policy") {
      f.network_policy = !has_value || value == "true" || value == "1";
      if (has_value && value != "true" && value != "false" && value != "1" && value != "0")
        return InvalidArgumentError("--network-policy takes true or false");
    } else if (arg == "--leader-elect") {
      f.leader_elect = !has_value || value == "true" || value == "1";
      if (has_value && value != "true" && value != "false" && value != "1" && value != "0")
        return InvalidArgumentError("--leader-elect takes true or false");
    } else if (arg == "--leader-election-namespace") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.leader.namespace_ = *v;
    } else if (arg == "--leader-election-id") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.leader.name = *v;
    } else if (arg == "--identity") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.leader.identity = *v;
    } else if (arg == "--lease-duration") {
      RM_RETURN_IF_ERROR(seconds(f.leader.lease_duration));
    } else if (arg == "--renew-deadline") {
      RM_RETURN_IF_ERROR(seconds(f.leader.renew_deadline));
    } else if (arg == "--retry-period") {
      RM_RETURN_IF_ERROR(seconds(f.leader.retry_period));
    } else if (arg == "--metrics-address") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.metrics_address = *v;
    } else if (arg == "--health-probe-address") {
      auto v = next();
      if (!v.ok()) return v.status();
      f.probe_address = *v;
    } else if (arg == "--log-level") {
      auto v = next();
      if (!v.ok()) return v.status();
      if (*v == "debug")
        SetLogLevel(LogLevel::kDebug);
      else if (*v == "info")
        SetLogLevel(LogLevel::kInfo);
      else if (*v == "warning")
        SetLogLevel(LogLevel::kWarning);
      else if (*v == "error")
        SetLogLevel(LogLevel::kError);
      else
        return InvalidArgumentError("--log-level: debug, info, warning or error");
    } else {
      return InvalidArgumentError("unknown flag " + arg + " (see --help)");
    }
  }
  if (f.workers < 1 || f.workers > 256) return InvalidArgumentError("--workers must be 1..256");
  if (f.leader.renew_deadline >= f.leader.lease_duration)
    return InvalidArgumentError("--renew-deadline must be shorter than --lease-duration");
  if (f.leader.identity.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    f.leader.identity = std::string(host) + "_" + std::to_string(::getpid());
  }
  return f;
}

StatusOr<ClusterConfig> LoadConfig(const Flags& f) {
  std::string path = f.kubeconfig;
  if (path.empty()) {
    auto in_cluster = InClusterConfig(GetEnv, ReadWholeFile);
    if (in_cluster.ok()) return in_cluster;
    if (auto env = GetEnv("KUBECONFIG"); env && !env->empty()) {
      path = env->substr(0, env->find(':'));
    } else if (auto home = GetEnv("HOME")) {
      path = *home + "/.kube/config";
    }
  }
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  const auto slash = path.rfind('/');
  return ParseKubeconfig(*text, f.context, slash == std::string::npos ? "." : path.substr(0, slash),
                         ReadWholeFile);
}

}  // namespace

int main(int argc, char** argv) {
  // Block SIGTERM/SIGINT before any thread exists (threads inherit the mask);
  // one thread below turns them into `stop`.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Memory: few malloc arenas (threads mostly wait on the network) and a
  // small cpprestsdk I/O pool instead of its default 40 threads.
  mallopt(M_ARENA_MAX, 1);
  auto flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "ringmaster-operator: " << flags.status().ToString() << "\n";
    return 2;
  }
  auto config = LoadConfig(*flags);
  if (!config.ok()) {
    LogError("no cluster configuration", {{"error", config.status().ToString()}});
    return 1;
  }
  if (!config->ca_pem.empty()) {
    // With a cluster CA, the system's CA bundle is never trusted (see
    // client.cc), yet cpprestsdk loads it into every new connection's TLS
    // context before we replace the store: about 1 MiB parsed and thrown
    // away per connection (and every watch opens one). Point OpenSSL's
    // default file at nothing; done before any thread that could read the
    // environment exists.
    setenv("SSL_CERT_FILE", "/dev/null", 1);
  }
  crossplat::threadpool::initialize_with_threads(4);
  std::atomic<bool> stop{false};
  std::thread([signals, &stop]() mutable {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("signal received: shutting down", {{"signal", sig}});
    stop = true;
  }).detach();

  ClientOptions copts;
  copts.qps = flags->qps;
  copts.burst = flags->burst;
  auto client = KubeClient::Create(*config, copts);
  if (!client.ok()) {
    LogError("cannot make a client", {{"error", client.status().ToString()}});
    return 1;
  }
  // Events get a client (and so a rate budget) of their own.
  auto events_client = KubeClient::Create(*config, copts);
  if (!events_client.ok()) {
    LogError("cannot make a client", {{"error", events_client.status().ToString()}});
    return 1;
  }
  OperatorMetrics metrics(RINGMASTER_VERSION);
  {
    // rest_client_*'s host label: the API server's host:port, as client-go's.
    const std::string& server = config->server;
    const size_t scheme = server.find("://");
    metrics.SetApiHost(scheme == std::string::npos ? server : server.substr(scheme + 3));
    auto observe = [&metrics](std::string_view method, int code, double s) {
      metrics.Request(method, code, s);
    };
    (*client)->SetRequestObserver(observe);
    (*events_client)->SetRequestObserver(observe);
  }
  ControllerOptions options;
  options.namespaces = flags->namespaces;
  options.workers = flags->workers;
  options.resync = std::chrono::seconds(flags->resync);
  options.build.cluster_domain = flags->cluster_domain;
  options.build.network_policy = flags->network_policy;
  Controller controller(**client, **events_client, metrics, options);
  std::atomic<bool> leading{false};

  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  if (flags->metrics_address != "0") {
    auto e = MetricsEndpoint::Start(flags->metrics_address,
                                    {metrics.registry(), std::make_shared<ProcessCollector>()});
    if (!e.ok()) {
      LogError("cannot serve metrics", {{"error", e.status().ToString()}});
      return 1;
    }
    metrics_endpoint = std::move(*e);
    LogInfo("serving /metrics", {{"port", metrics_endpoint->port()}});
  }
  std::unique_ptr<ProbeEndpoint> probes;
  if (flags->probe_address != "0") {
    // A standby is ready to take over; a leader once its caches are synced.
    auto e = ProbeEndpoint::Start(flags->probe_address, [&] { return !leading || controller.Synced(); });
    if (!e.ok()) {
      LogError("cannot serve the health probes", {{"error", e.status().ToString()}});
      return 1;
    }
    probes = std::move(*e);
    LogInfo("serving /healthz, /readyz", {{"probe_port", probes->port()}});
  }
  LogInfo("starting", {{"server", config->server},
                       {"workers", flags->workers},
                       {"namespaces", flags->namespaces},
                       {"leader_elect", flags->leader_elect},
                       {"network_policy", flags->network_policy}});

  int rc = 0;
  if (flags->leader_elect) {
    LeaderElector elector(**client, flags->leader);
    Status acquired = elector.Acquire(stop);
    if (!acquired.ok() && acquired.code() != StatusCode::kCancelled) rc = 1;  // logged: it will not heal
    if (acquired.ok()) {
      leading = true;
      metrics.SetLeader(true);
      controller.Start();
      if (!elector.Renew(stop)) rc = 1;  // lost the lease: stop reconciling at once
      leading = false;
      metrics.SetLeader(false);
      controller.Stop();
      elector.Release();
    }
  } else {
    leading = true;
    controller.Start();
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    controller.Stop();
  }
  probes.reset();  // before the controller its readiness asks goes
  metrics_endpoint.reset();
  LogInfo("stopped", {{"exit_code", rc}});
  return rc;
}
