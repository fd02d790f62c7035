// The informer against a fake API server on 127.0.0.1 (loopback only): list,
// watch from the list's resourceVersion, a bookmark, a 410 Gone that forces
// a relist, and resuming from the last event's resourceVersion.
#include "informer.h"

#include <CivetServer.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "loopback_client.h"

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

// What the fake answers: the request's target and how many lists and
// watches (this one included) it has served.
using Script = std::function<HttpReply(const std::string& target, int lists, int watches)>;

// Answers every request with one whole body and closes the connection (a
// watch that ends), on civetweb, the server the operator's endpoints use.
class FakeApiServer : public CivetHandler {
 public:
  explicit FakeApiServer(Script script) : script_(std::move(script)) {}
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
    int lists, watches;
    {
      std::lock_guard<std::mutex> lock(mu_);
      targets_.push_back(target);
      if (target.find("watch=1") == std::string::npos)
        ++lists_;
      else
        ++watches_;
      lists = lists_;
      watches = watches_;
    }
    // Outside the lock: a script may hold a watch back.
    return script_(target, lists, watches);
  }

  Script script_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> targets_;
  int lists_ = 0, watches_ = 0;
};

std::unique_ptr<KubeClient> ClientOf(const FakeApiServer& fake) {
  return LoopbackClient(fake.port());
}

json PodList(const std::string& rv, json items) {
  return {{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", std::move(items)}};
}

// A list, a bookmark and a 410 Gone; a relist, then an add and a delete.
HttpReply GoneScript(const std::string& target, int lists, int watches) {
  HttpReply r{200, "application/json", ""};
  if (target.find("watch=1") == std::string::npos) {
    json items = json::array({Pod("a", "3")});
    if (lists > 1) items.push_back(Pod("b", "15"));
    r.body = PodList(lists == 1 ? "5" : "20", items).dump();
  } else if (watches == 1) {
    // A bookmark, then the resourceVersion has expired.
    r.body = Line("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "7"}}}}) +
             Line("ERROR", {{"kind", "Status"},
                            {"code", 410},
                            {"reason", "Expired"},
                            {"message", "too old resource version: 7 (19)"}});
  } else if (watches == 2) {
    r.body = Line("ADDED", Pod("c", "21")) + Line("DELETED", Pod("a", "22"));
  }
  // Later watches: nothing new; the informer waits before asking again.
  return r;
}

TEST(InformerLoopback, SurvivesGoneWithARelistAndResumesFromTheLastVersion) {
  FakeApiServer fake(GoneScript);
  ASSERT_TRUE(fake.Start().ok());
  auto client = ClientOf(fake);
  ASSERT_NE(client, nullptr);

  std::mutex mu;
  std::vector<std::string> seen;
  Informer informer(*client, "pods", "/api/v1/namespaces/ns/pods", "ringmaster.io/job-name",
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

// The operator puts its own writes' answers into the cache (Upsert); the
// watch delivers the versions in between later. A stale one must neither
// replace the newer object nor reach the handler: a controller that
// reconciled it would decide again from an old status (and say so twice
// in the job's events).
TEST(InformerLoopback, AWatchEventOlderThanTheCacheIsDropped) {
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool released = false;
  FakeApiServer fake([&](const std::string& target, int, int watches) {
    HttpReply r{200, "application/json", ""};
    if (target.find("watch=1") == std::string::npos) {
      r.body = PodList("5", json::array({Pod("a", "3")})).dump();
    } else if (watches == 1) {
      std::unique_lock<std::mutex> lock(gate_mu);
      gate_cv.wait_for(lock, std::chrono::seconds(20), [&] { return released; });
      r.body =
          Line("MODIFIED", Pod("a", "6")) + Line("ADDED", Pod("c", "8")) + Line("MODIFIED", Pod("a", "9"));
    }
    return r;
  });
  ASSERT_TRUE(fake.Start().ok());
  auto client = ClientOf(fake);
  ASSERT_NE(client, nullptr);
  std::mutex mu;
  std::vector<std::string> seen;  // name@resourceVersion, as the handler saw them
  Informer informer(*client, "pods", "/api/v1/namespaces/ns/pods", "",
                    [&](WatchEventType, const json& obj, const json*) {
                      std::lock_guard<std::mutex> lock(mu);
                      seen.push_back(obj["metadata"]["name"].get<std::string>() + "@" +
                                     obj["metadata"]["resourceVersion"].get<std::string>());
                    });
  informer.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // liveness only
  while (!informer.HasSynced() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(informer.HasSynced());
  informer.Upsert(Pod("a", "7"));  // our write's answer, ahead of the watch
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    released = true;
  }
  gate_cv.notify_all();
  auto rv_of_a = [&] {
    auto a = informer.Get("ns/a");
    return a ? (*a)["metadata"]["resourceVersion"].get<std::string>() : std::string();
  };
  while (rv_of_a() != "9" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  informer.Stop();

  EXPECT_EQ(rv_of_a(), "9");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"a@3", "c@8", "a@9"}));
}

}  // namespace
}  // namespace ringmaster::op
