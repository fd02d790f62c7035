// The event recorder's rule for one POST's answer: delivered, retried with
// a growing delay while young, or dropped.
#include "event_delivery.h"

#include <gtest/gtest.h>

namespace ringmaster::op {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(EventDelivery, CreatedAndAlreadyExistsAreDelivered) {
  for (int code : {200, 201, 202, 409}) {
    const EventPostDecision d = DecideEventPost(code, 1, milliseconds(0));
    EXPECT_EQ(d.next, EventPostNext::kDone) << code;
  }
  // A retry of a POST whose answer was lost: the event exists already.
  EXPECT_EQ(DecideEventPost(409, 3, seconds(5)).next, EventPostNext::kDone);
}

TEST(EventDelivery, NoAnswerThrottledAndServerErrorsAreRetried) {
  for (int code : {0, 429, 500, 502, 503, 504}) {
    const EventPostDecision d = DecideEventPost(code, 1, milliseconds(0));
    EXPECT_EQ(d.next, EventPostNext::kRetry) << code;
    EXPECT_EQ(d.delay, milliseconds(250)) << code;
  }
}

TEST(EventDelivery, DelayDoublesUpToFourSeconds) {
  const milliseconds want[] = {milliseconds(250),  milliseconds(500),  milliseconds(1000), milliseconds(2000),
                               milliseconds(4000), milliseconds(4000), milliseconds(4000)};
  for (int attempts = 1; attempts <= 7; ++attempts) {
    const EventPostDecision d = DecideEventPost(0, attempts, seconds(1));
    ASSERT_EQ(d.next, EventPostNext::kRetry) << attempts;
    EXPECT_EQ(d.delay, want[attempts - 1]) << attempts;
  }
}

TEST(EventDelivery, AnEventTooOldToRetryIsDropped) {
  EXPECT_EQ(DecideEventPost(503, 10, kEventRetryFor - seconds(5)).next, EventPostNext::kRetry);
  // The next try would land past kEventRetryFor.
  EXPECT_EQ(DecideEventPost(503, 10, kEventRetryFor - milliseconds(3000)).next, EventPostNext::kDrop);
  EXPECT_EQ(DecideEventPost(0, 1, kEventRetryFor).next, EventPostNext::kDrop);
}

TEST(EventDelivery, OtherAnswersAreDroppedAtOnce) {
  for (int code : {400, 401, 403, 404, 422}) {
    EXPECT_EQ(DecideEventPost(code, 1, milliseconds(0)).next, EventPostNext::kDrop) << code;
  }
}

}  // namespace
}  // namespace ringmaster::op
