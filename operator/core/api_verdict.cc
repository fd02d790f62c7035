#include "api_verdict.h"

namespace ringmaster::op {

namespace {

std::string Quote(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string Server(int code, std::string_view message) {
  std::string s = " (the API server answered " + std::to_string(code);
  if (!message.empty()) s += ": " + std::string(message);
  return s + ")";
}

}  // namespace

ApiVerdict JudgeLeaseAnswer(std::string_view verb, int code, std::string_view server_message,
                            std::string_view ns, std::string_view name) {
  if (code >= 200 && code < 300) return {true, ""};
  const std::string lease = "the leader-election Lease " + Quote(std::string(ns) + "/" + std::string(name));
  const std::string without =
      "; or pass --leader-elect=false to run a single operator without leader election";
  if (code == 404 && verb == "create") {
    // A GET of a lease in a missing namespace is a plain 404 (no lease yet);
    // only the create says the namespace itself is missing.
    return {false, "the leader-election namespace " + Quote(ns) + " does not exist" +
                       Server(code, server_message) + ": create it (kubectl create namespace " +
                       std::string(ns) +
                       "), or pass --leader-election-namespace=NS naming an existing namespace" + without};
  }
  if (code == 403) {
    return {false,
            "the operator may not " + std::string(verb) + " " + lease + Server(code, server_message) +
                ": grant its identity get, create and update on leases.coordination.k8s.io in namespace " +
                std::string(ns) + " (manifests/ and the chart have the Role)" + without};
  }
  if (code == 401) {
    return {true, "the API server refused the operator's credentials for " + lease +
                      Server(code, server_message) + "; retrying (a rotated token is re-read)"};
  }
  if (code == 0) return {true, "no answer from the API server for " + lease + "; retrying"};
  return {true, "could not " + std::string(verb) + " " + lease + Server(code, server_message) + "; retrying"};
}

ApiVerdict JudgeListAnswer(std::string_view resource, std::string_view path, int code,
                           std::string_view server_message) {
  if (code >= 200 && code < 300) return {true, ""};
  const std::string what = "list " + std::string(resource) + " (" + std::string(path) + ")";
  if (code == 404 && resource == "distributedjobs") {
    return {false,
            "cannot " + what + Server(code, server_message) +
                ": the DistributedJob CRD is not installed (kubectl apply -f manifests/00-crd.yaml, or "
                "install the chart); retrying until it is"};
  }
  if (code == 404 && resource == "tfjobs") {
    return {false,
            "cannot " + what + Server(code, server_message) +
                ": --tfjob needs the TFJob CRD (install the chart, whose crds/ has one, or kubectl "
                "create -f charts/ringmaster/crds/tfjobs.kubeflow.org.yaml); retrying until it is there"};
  }
  if (code == 403) {
    return {false, "the operator may not " + what + Server(code, server_message) +
                       ": its ClusterRole (manifests/, the chart) must grant list and watch on " +
                       std::string(resource) + "; retrying until it does"};
  }
  if (code == 0) return {true, "cannot " + what + ": no answer from the API server; retrying"};
  return {true, "cannot " + what + Server(code, server_message) + "; retrying"};
}

}  // namespace ringmaster::op
