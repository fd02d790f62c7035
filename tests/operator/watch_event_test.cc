#include "watch_event.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

TEST(WatchEvent, DecodesChanges) {
  auto ev = DecodeWatchEvent(
      R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p","resourceVersion":"42"}}})");
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, WatchEventType::kModified);
  EXPECT_EQ(ev->resource_version, "42");
  EXPECT_EQ(ev->object["metadata"]["name"], "p");
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"ADDED","object":{}})")->type, WatchEventType::kAdded);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"DELETED","object":{}})")->type, WatchEventType::kDeleted);
}

TEST(WatchEvent, BookmarkCarriesOnlyTheResourceVersion) {
  auto ev = DecodeWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12345","annotations":{"k8s.io/initial-events-end":"true"}}}})");
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, WatchEventType::kBookmark);
  EXPECT_EQ(ev->resource_version, "12345");
}

TEST(WatchEvent, ExpiredResourceVersionIsGone) {
  auto ev = DecodeWatchEvent(
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}})J");
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, WatchEventType::kError);
  EXPECT_TRUE(ev->gone);
  EXPECT_EQ(ev->error_message, "too old resource version: 1 (2)");
  auto other = DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"boom"}})");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->gone);
}

TEST(WatchEvent, RejectsGarbage) {
  EXPECT_FALSE(DecodeWatchEvent("not json").ok());
  EXPECT_FALSE(DecodeWatchEvent(R"({"type":"ADDED"})").ok());
  EXPECT_FALSE(DecodeWatchEvent(R"({"type":"WHAT","object":{}})").ok());
  EXPECT_FALSE(DecodeWatchEvent("[]").ok());
  // Fields of another type than the server's own (found by fuzzing): no throw.
  auto odd = DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":"410","message":5}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(odd->gone);
  EXPECT_EQ(odd->error_message, "watch error");
  auto rv = DecodeWatchEvent(R"({"type":"ADDED","object":{"metadata":{"resourceVersion":7}}})");
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(rv->resource_version, "");
  EXPECT_FALSE(IsGoneStatus({{"kind", 1}, {"code", 410}}));
}

TEST(WatchEvent, GoneStatusOfAList) {
  EXPECT_TRUE(IsGoneStatus({{"kind", "Status"}, {"code", 410}}));
  EXPECT_FALSE(IsGoneStatus({{"kind", "PodList"}}));
}

}  // namespace
}  // namespace ringmaster::op
