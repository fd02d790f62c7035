// The informer against a fake API server on 127.0.0.1 (loopback only): list,
// watch from the list's resourceVersion, a bookmark, a 410 Gone that forces
// a relist, and resuming from the last event's resourceVersion.
#include "informer.h"

#include <CivetServer.h>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <thread>

namespace ringmaster::op {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"labels", {{"ringmaster.io/job-name", "j"}}}}}};
}

std::string Line(const std::string& type, const json& obj) {
  return json{{"type", type}, {"object", obj}}.dump() + "\n";
}

struct HttpReply {
  int code = 200;
  std::string content_type;
  std::string body;
};

// Answers every request with one whole body and closes the connection (a
// watch that ends), on civetweb, the server the operator's endpoints use.
class FakeApiServer : public CivetHandler {
 public:
  ~FakeApiServer() override {
    if (server_) server_->close();
  }
  Status Start() {
    try {
      server_ = std::make_unique<CivetServer>(
          std::vector<std::string>{"listening_ports", "127.0.0.1:0", "num_threads", "4"});
    } catch (const std::exception& e) {
      return UnavailableError(std::string("fake API server: ") + e.what());
    }
    server_->addHandler("/api/v1/namespaces/ns/pods", *this);
    port_ = server_->getListeningPorts().at(0);
    return OkStatus();
  }
  int port() const { return port_; }
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const mg_request_info* ri = mg_get_request_info(conn);
    std::string target = ri->local_uri ? ri->local_uri : "";
    if (ri->query_string) target += std::string("?") + ri->query_string;
    const HttpReply r = Serve(target);
    mg_printf(conn, "HTTP/1.1 %d OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
              r.code, r.content_type.c_str(), r.body.size());
    mg_write(conn, r.body.data(), r.body.size());
    return true;
  }
  std::vector<std::string> Targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

 private:
  HttpReply Serve(const std::string& target) {
    std::lock_guard<std::mutex> lock(mu_);
    targets_.push_back(target);
    HttpReply r{200, "application/json", ""};
    if (target.find("watch=1") == std::string::npos) {
      ++lists_;
      json items = json::array({Pod("a", "3")});
      if (lists_ > 1) items.push_back(Pod("b", "15"));
      r.body = json{
          {"kind", "PodList"},
          {"metadata", {{"resourceVersion", lists_ == 1 ? "5" : "20"}}},
          {"items",
           items}}.dump();
      return r;
    }
    ++watches_;
    if (watches_ == 1) {
      // A bookmark, then the resourceVersion has expired.
      r.body = Line("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "7"}}}}) +
               Line("ERROR", {{"kind", "Status"},
                              {"code", 410},
                              {"reason", "Expired"},
                              {"message", "too old resource version: 7 (19)"}});
    } else if (watches_ == 2) {
      r.body = Line("ADDED", Pod("c", "21")) + Line("DELETED", Pod("a", "22"));
    } else {
      // Later watches: nothing new; the informer waits before asking again.
      r.body = "";
    }
    return r;
  }

  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> targets_;
  int lists_ = 0, watches_ = 0;
};

TEST(TrimPod, KeepsTerminatedStatesWithTheirMessages) {
  json pod = json::parse(R"({"metadata":{"name":"j-worker-0","managedFields":[{}],"annotations":{"a":"b"}},
    "spec":{"containers":[{"name":"trainer"}]},
    "status":{"phase":"Running","podIP":"10.0.0.1","containerStatuses":[{"name":"trainer","restartCount":1,
      "image":"x","state":{"running":{"startedAt":"2027-01-15T08:00:01Z"}},
      "lastState":{"terminated":{"exitCode":1,"message":"DeadlineExceeded: ...","finishedAt":"2027-01-15T08:00:00Z"}}}]}})");
  TrimPod(pod);
  EXPECT_FALSE(pod.contains("spec"));
  EXPECT_FALSE(pod["metadata"].contains("managedFields"));
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_FALSE(pod["status"].contains("podIP"));
  const json& cs = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(cs, json::parse(R"({"name":"trainer","restartCount":1,
    "lastState":{"terminated":{"exitCode":1,"message":"DeadlineExceeded: ...","finishedAt":"2027-01-15T08:00:00Z"}}})"));
}

TEST(TrimPod, KeepsWhatKueueSaysOfThePod) {
  json pod = json::parse(R"({"metadata":{"name":"j-worker-0","finalizers":["kueue.x-k8s.io/managed"],
    "annotations":{"a":"b","kueue.x-k8s.io/retriable-in-group":"false"}},
    "spec":{"containers":[{"name":"trainer"}],"schedulingGates":[{"name":"kueue.x-k8s.io/admission"}]},
    "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},
      {"type":"TerminationTarget","status":"True","reason":"WorkloadEvictedDueToPreempted"}]}})");
  TrimPod(pod);
  EXPECT_EQ(pod["metadata"]["finalizers"], json::parse(R"(["kueue.x-k8s.io/managed"])"));
  EXPECT_EQ(pod["metadata"]["annotations"], json::parse(R"({"kueue.x-k8s.io/retriable-in-group":"false"})"));
  EXPECT_EQ(pod["spec"], json::parse(R"({"schedulingGates":[{"name":"kueue.x-k8s.io/admission"}]})"));
  EXPECT_EQ(pod["status"]["conditions"], json::parse(R"([{"type":"TerminationTarget","status":"True",
    "reason":"WorkloadEvictedDueToPreempted"}])"));
}

TEST(InformerLoopback, SurvivesGoneWithARelistAndResumesFromTheLastVersion) {
  FakeApiServer fake;
  ASSERT_TRUE(fake.Start().ok());
  ClusterConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(fake.port());
  ClientOptions opts;
  opts.request_timeout = std::chrono::seconds(10);
  auto client = KubeClient::Create(cfg, opts);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  std::mutex mu;
  std::vector<std::string> seen;
  Informer informer(**client, "pods", "/api/v1/namespaces/ns/pods", "ringmaster.io/job-name",
                    [&](WatchEventType type, const json& obj, const json*) {
                      std::lock_guard<std::mutex> lock(mu);
                      seen.push_back(std::string(type == WatchEventType::kDeleted ? "-" : "+") +
                                     obj["metadata"]["name"].get<std::string>());
                    });
  informer.Start();
  // Liveness bound only: the sequence takes milliseconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!informer.Get("ns/c").has_value() || informer.Get("ns/a").has_value()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    bool resumed = false;
    for (const auto& t : fake.Targets()) resumed |= t.find("resourceVersion=22") != std::string::npos;
    if (resumed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  informer.Stop();

  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(informer.relists(), 2);
  EXPECT_TRUE(informer.Get("ns/b").has_value());
  EXPECT_TRUE(informer.Get("ns/c").has_value());
  EXPECT_FALSE(informer.Get("ns/a").has_value());
  EXPECT_EQ(informer.ByJob("ns/j").size(), 2u);

  const auto targets = fake.Targets();
  std::vector<std::string> watch_versions;
  for (const auto& t : targets) {
    if (t.find("watch=1") == std::string::npos) continue;
    EXPECT_NE(t.find("allowWatchBookmarks=true"), std::string::npos) << t;
    EXPECT_NE(t.find("labelSelector=ringmaster.io%2Fjob-name"), std::string::npos) << t;
    watch_versions.push_back(t.substr(t.find("resourceVersion=") + 16));
    watch_versions.back() = watch_versions.back().substr(0, watch_versions.back().find('&'));
  }
  ASSERT_GE(watch_versions.size(), 3u);
  EXPECT_EQ(watch_versions[0], "5");   // from the first list
  EXPECT_EQ(watch_versions[1], "20");  // after the 410: from the relist
  EXPECT_EQ(watch_versions[2], "22");  // from the last event
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "+c"), 1);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "-a"), 1);
}

}  // namespace
}  // namespace ringmaster::op
