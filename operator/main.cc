// ringmaster-operator: watches DistributedJobs (and, with --tfjob, Kubeflow's
// TFJobs) and runs them as pods.
// See docs/operator.md for the flags, the metrics and the RBAC it needs.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "client.h"
#include "controller.h"
#include "endpoints.h"
#include "flags.h"
#include "kubeconfig.h"
#include "leader.h"
#include "log.h"
#include "metrics.h"
#include "pplx/threadpool.h"
#include "process_metrics.h"

using namespace ringmaster;
using namespace ringmaster::op;

namespace {

StatusOr<ClusterConfig> LoadConfig(const OperatorFlags& f) {
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
  auto flags = ParseOperatorFlags({argv + 1, argv + argc});
  if (!flags.ok()) {
    std::cerr << "ringmaster-operator: " << flags.status().message() << "\n";
    return 2;
  }
  if (!flags->help.empty()) return std::cout << flags->help, 0;
  if (flags->log_level) SetLogLevel(*flags->log_level);
  if (flags->leader.identity.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    flags->leader.identity = std::string(host) + "_" + std::to_string(::getpid());
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
  options.resync = std::chrono::seconds(flags->resync_seconds);
  options.build.cluster_domain = flags->cluster_domain;
  options.build.network_policy = flags->network_policy;
  if (flags->gang_scheduling == "auto") {
    // Once, at start: an API server upgraded underneath is seen at the next
    // start, as a restarted operator sees a new CRD version.
    auto group = (*client)->Request("GET", "/apis/scheduling.k8s.io");
    if (group.ok() && group->ok()) options.build.gang_api = GangApiFromDiscovery(group->body);
    if (!group.ok() || (!group->ok() && group->code != 404)) {
      LogWarning("cannot ask discovery for the Workload API: no native gang scheduling",
                 {{"error", group.ok() ? group->Message() : group.status().ToString()}});
    }
  }
  Controller controller(**client, **events_client, metrics, options);
  // TFJobs: a controller of their own, with the same options but the kind.
  std::unique_ptr<Controller> tfjobs;
  if (flags->tfjob) {
    ControllerOptions tf_options = options;
    tf_options.kind = TfJobKind();
    tfjobs = std::make_unique<Controller>(**client, **events_client, metrics, tf_options);
  }
  auto start = [&] {
    controller.Start();
    if (tfjobs) tfjobs->Start();
  };
  auto stop_all = [&] {
    controller.Stop();
    if (tfjobs) tfjobs->Stop();
  };
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
    auto e = ProbeEndpoint::Start(flags->probe_address, [&] {
      return !leading || (controller.Synced() && (!tfjobs || tfjobs->Synced()));
    });
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
                       {"network_policy", flags->network_policy},
                       {"tfjob", flags->tfjob},
                       {"gang_scheduling", std::string(GangApiName(options.build.gang_api))}});

  int rc = 0;
  if (flags->leader_elect) {
    LeaderElector elector(**client, flags->leader);
    Status acquired = elector.Acquire(stop);
    if (!acquired.ok() && acquired.code() != StatusCode::kCancelled) rc = 1;  // logged: it will not heal
    if (acquired.ok()) {
      leading = true;
      metrics.SetLeader(true);
      start();
      if (!elector.Renew(stop)) rc = 1;  // lost the lease: stop reconciling at once
      leading = false;
      metrics.SetLeader(false);
      stop_all();
      elector.Release();
    }
  } else {
    leading = true;
    start();
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop_all();
  }
  probes.reset();  // before the controllers its readiness asks go
  metrics_endpoint.reset();
  LogInfo("stopped", {{"exit_code", rc}});
  return rc;
}
