// The event recorder against a fake API server on 127.0.0.1 (loopback
// only): an API server that answers 503 (restarting) gets the same event
// again until it takes it; one that refuses an event (403) drops it alone,
// and the events queued behind either keep their order. A job's end (a
// once-event) is posted once per recorder under a name of the job's uid, so
// a second recorder's (a new leader's) is answered 409. A once-event that
// cannot wait (a restart's, before its pod goes) is delivered on the
// caller's thread, within a bound, or is an error.
#include "events.h"

#include <CivetServer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loopback_client.h"

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

const json kJob = {{"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "u-1"}}}};

struct Delivery {
  std::vector<json> posts;  // what the fake received, in order
  uint64_t dropped = 0;     // the recorder's count
};

// Records two events, JobRestarting then JobSucceeded, through a recorder
// posting to a fake that answers `codes`; waits for `posts` POSTs, and then
// 400 ms more so that a POST too many is seen.
Delivery RecordTwo(std::vector<int> codes, size_t posts) {
  FakeEvents fake(std::move(codes));
  fake.Start();
  auto client = LoopbackClient(fake.port());
  if (client == nullptr) return {};
  EventRecorder recorder(*client);
  recorder.Start();
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobRestarting", "first");
  recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobSucceeded", "second");
  fake.AwaitPosts(posts);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  recorder.Stop();
  return {fake.Posts(), recorder.dropped()};
}

TEST(EventRecorder, AnEventRefusedWhileTheServerRestartsIsPostedAgainUntilTaken) {
  const Delivery d = RecordTwo({503, 503}, 4);
  ASSERT_EQ(d.posts.size(), 4u);
  // The same Event (one name) three times, then the next one: order kept.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d.posts[i]["reason"], "JobRestarting") << i;
    EXPECT_EQ(d.posts[i]["metadata"]["name"], d.posts[0]["metadata"]["name"]) << i;
  }
  EXPECT_EQ(d.posts[3]["reason"], "JobSucceeded");
  EXPECT_NE(d.posts[3]["metadata"]["name"], d.posts[0]["metadata"]["name"]);
  EXPECT_EQ(d.dropped, 0u);
}

TEST(EventRecorder, AnEventTheServerRefusesIsDroppedAloneAndOnce) {
  const Delivery d = RecordTwo({403}, 2);
  ASSERT_EQ(d.posts.size(), 2u) << "a refused event was posted again, or the next one not at all";
  EXPECT_EQ(d.posts[0]["reason"], "JobRestarting");
  EXPECT_EQ(d.posts[1]["reason"], "JobSucceeded");
  EXPECT_EQ(d.dropped, 1u);
}

TEST(EventRecorder, AJobsEndIsOneEventWhoeverTellsItAndHowOften) {
  // 201 for the first leader's; the second leader's POST of the same name
  // is what the API server answers for a name that exists: 409.
  FakeEvents fake({201, 409});
  fake.Start();
  auto client = LoopbackClient(fake.port());
  ASSERT_NE(client, nullptr);
  {
    EventRecorder first(*client);
    first.Start();
    EXPECT_TRUE(first.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobSucceeded", "done",
                             /*once=*/"end"));
    // Told again at the next looks: nothing more is queued.
    for (int i = 0; i < 5; ++i)
      EXPECT_FALSE(first.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobSucceeded",
                                "done",
                                /*once=*/"end"));
    fake.AwaitPosts(1);
    first.Stop();
  }
  EventRecorder second(*client);  // the next leader, after the first was killed
  second.Start();
  EXPECT_TRUE(second.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", false, "JobSucceeded", "done",
                            /*once=*/"end"));
  const auto posts = fake.AwaitPosts(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  second.Stop();
  ASSERT_EQ(fake.Posts().size(), 2u);
  EXPECT_EQ(posts[0]["metadata"]["name"], "j.end.u-1");
  EXPECT_EQ(posts[1]["metadata"]["name"], "j.end.u-1");
  EXPECT_EQ(second.dropped(), 0u);  // 409: it exists, delivered
}

TEST(EventRecorder, AOnceEventDeliveredNowIsPostedBeforeDeliverReturnsThroughARestart) {
  // The API server restarting (503 twice) while a restart's event must be
  // told before its pod goes: Deliver posts it on the caller's thread until
  // it is taken, and a later Deliver of it (the next look) posts nothing.
  FakeEvents fake({503, 503});
  fake.Start();
  auto client = LoopbackClient(fake.port());
  ASSERT_NE(client, nullptr);
  EventRecorder recorder(*client);
  recorder.Start();
  EXPECT_FALSE(recorder.Known(kJob, "restart.p-1"));
  const Status st = recorder.Deliver(kJob, "ringmaster.io/v1alpha1", "DistributedJob", true, "JobRestarting",
                                     "restarting Worker 0", "restart.p-1", std::chrono::seconds(5));
  EXPECT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(fake.Posts().size(), 3u) << "Deliver returned before the event was taken";
  EXPECT_EQ(fake.Posts()[2]["metadata"]["name"], "j.restart.p-1.u-1");
  EXPECT_TRUE(recorder.Known(kJob, "restart.p-1"));
  EXPECT_TRUE(recorder
                  .Deliver(kJob, "ringmaster.io/v1alpha1", "DistributedJob", true, "JobRestarting",
                           "restarting Worker 0", "restart.p-1", std::chrono::seconds(5))
                  .ok());
  // Nor does the queue post it again.
  EXPECT_FALSE(recorder.Record(kJob, "ringmaster.io/v1alpha1", "DistributedJob", true, "JobRestarting",
                               "restarting Worker 0", "restart.p-1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  recorder.Stop();
  EXPECT_EQ(fake.Posts().size(), 3u);
}

TEST(EventRecorder, AOnceEventThatCannotBeDeliveredInTimeIsAnErrorNamingIt) {
  FakeEvents fake(std::vector<int>(100, 503));
  fake.Start();
  auto client = LoopbackClient(fake.port());
  ASSERT_NE(client, nullptr);
  EventRecorder recorder(*client);
  recorder.Start();
  const Status st = recorder.Deliver(kJob, "ringmaster.io/v1alpha1", "DistributedJob", true, "JobRestarting",
                                     "restarting Worker 0", "restart.p-1", std::chrono::milliseconds(600));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("ns/j.restart.p-1.u-1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("JobRestarting"), std::string::npos) << st.message();
  // Not delivered: a later telling may deliver it.
  EXPECT_FALSE(recorder.Known(kJob, "restart.p-1"));
  recorder.Stop();
}

}  // namespace
}  // namespace ringmaster::op
