// The event recorder against a fake API server on 127.0.0.1 (loopback
// only): an API server that answers 503 (restarting) gets the same event
// again until it takes it; one that refuses an event (403) drops it alone,
// and the events queued behind either keep their order.
#include "events.h"

#include <CivetServer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::op {
namespace {

using nlohmann::json;

// Answers POST .../events with the codes given, one per request, then 201.
class FakeEvents : public CivetHandler {
 public:
  explicit FakeEvents(std::vector<int> codes) : codes_(std::move(codes)) {}
  ~FakeEvents() override {
    if (server_) server_->close();
  }
  void Start() {
    server_ = std::make_unique<CivetServer>(
        std::vector<std::string>{"listening_ports", "127.0.0.1:0", "num_threads", "2"});
    server_->addHandler("/api/v1/namespaces/ns/events", *this);
  }
  int port() const { return server_->getListeningPorts().at(0); }
  bool handlePost(CivetServer*, mg_connection* conn) override {
    std::string body(4096, '\0');
    const int n = mg_read(conn, body.data(), body.size());
    body.resize(n > 0 ? n : 0);
    int code = 201;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (posts_.size() < codes_.size()) code = codes_[posts_.size()];
      posts_.push_back(json::parse(body, nullptr, false));
    }
    const std::string reply = code == 201 ? "{}" : R"({"kind":"Status","message":"fake says no"})";
    mg_printf(conn,
              "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
              "close\r\n\r\n%s",
              code, reply.size(), reply.c_str());
    return true;
  }
  std::vector<json> Posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }
  // Waits (10 s at most) until `n` POSTs came.
  std::vector<json> AwaitPosts(size_t n) {
    for (int i = 0; i < 1000 && Posts().size() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Posts();
  }

 private:
  std::vector<int> codes_;
  std::unique_ptr<CivetServer> server_;
  std::mutex mu_;
  std::vector<json> posts_;
};

std::unique_ptr<KubeClient> ClientOf(const FakeEvents& fake) {
  ClusterConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(fake.port());
  ClientOptions opts;
  opts.request_timeout = std::chrono::seconds(10);
  auto client = KubeClient::Create(cfg, opts);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

const json kJob = {{"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "u-1"}}}};

TEST(EventRecorder, AnEventRefusedWhileTheServerRestartsIsPostedAgainUntilTaken) {
  FakeEvents fake({503, 503});
  fake.Start();
  auto client = ClientOf(fake);
  ASSERT_NE(client, nullptr);
  EventRecorder recorder(*client);
  recorder.Start();
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobRestarting", "first");
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobSucceeded", "second");
  const std::vector<json> posts = fake.AwaitPosts(4);
  recorder.Stop();
  ASSERT_EQ(posts.size(), 4u);
  // The same Event (one name) three times, then the next one: order kept.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(posts[i]["reason"], "JobRestarting") << i;
    EXPECT_EQ(posts[i]["metadata"]["name"], posts[0]["metadata"]["name"]) << i;
  }
  EXPECT_EQ(posts[3]["reason"], "JobSucceeded");
  EXPECT_NE(posts[3]["metadata"]["name"], posts[0]["metadata"]["name"]);
  EXPECT_EQ(recorder.dropped(), 0u);
}

TEST(EventRecorder, AnEventTheServerRefusesIsDroppedAloneAndOnce) {
  FakeEvents fake({403});
  fake.Start();
  auto client = ClientOf(fake);
  ASSERT_NE(client, nullptr);
  EventRecorder recorder(*client);
  recorder.Start();
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", true, "Refused", "first");
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "Taken", "second");
  const std::vector<json> posts = fake.AwaitPosts(2);
  recorder.Stop();
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[0]["reason"], "Refused");
  EXPECT_EQ(posts[1]["reason"], "Taken");
  EXPECT_EQ(recorder.dropped(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(fake.Posts().size(), 2u) << "a refused event was posted again";
}

}  // namespace
}  // namespace ringmaster::op
