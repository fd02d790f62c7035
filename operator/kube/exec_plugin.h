// Runs a kubeconfig exec credential plugin (core/exec_credential.h says
// what goes in and comes out): the command with its args, our environment
// plus the stanza's env and KUBERNETES_EXEC_INFO, no standard input (we are
// never interactive), bounded by a timeout (the plugin is killed after it).
#pragma once

#include <chrono>

#include "kubeconfig.h"

namespace ringmaster::op {

// The credential, or an error naming the plugin: not found (with its
// installHint), a non-zero exit (with its standard error), a timeout, or
// output that is not an ExecCredential.
StatusOr<ExecCredential> RunExecPlugin(const ClusterConfig& cluster,
                                       std::chrono::seconds timeout = std::chrono::seconds(60));

}  // namespace ringmaster::op
