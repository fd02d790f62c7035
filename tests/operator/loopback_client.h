// A KubeClient for a fake API server on 127.0.0.1:PORT (plain HTTP, 10 s
// per request), for the tests that drive the operator's shell against one.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "client.h"

namespace ringmaster::op {

inline std::unique_ptr<KubeClient> LoopbackClient(int port) {
  ClusterConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(port);
  ClientOptions opts;
  opts.request_timeout = std::chrono::seconds(10);
  auto client = KubeClient::Create(cfg, opts);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

}  // namespace ringmaster::op
