// `ringmaster run`'s pure parts beside the state machine (whose transcripts
// are in tests/api): what the runner reads of its members' output.
#include "local_plan.h"

#include <gtest/gtest.h>

namespace ringmaster::cli {
namespace {

TEST(ResumeStepOf, ReadsTheAgentsAndTheWorkersLines) {
  // The agent's line (every member, whatever the program).
  EXPECT_EQ(ResumeStepOf("ringmaster: /job:chief/task:0: resuming after step 41 from /job:worker/task:0; "
                         "/job:worker/task:1 takes its state"),
            41);
  // ringmaster-worker's own.
  EXPECT_EQ(
      ResumeStepOf("ringmaster-worker /job:worker/task:1: joined a running group: resuming after step 2 "
                   "from rank 0 (35.0 ms, at unix ms 1800000000000)"),
      2);
  EXPECT_EQ(
      ResumeStepOf("ringmaster: /job:chief/task:0: no member holds state: starting from /job:chief/task:0's"),
      std::nullopt);
  EXPECT_EQ(ResumeStepOf("resuming after step x"), std::nullopt);
  EXPECT_EQ(ResumeStepOf("epoch 3 done"), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::cli
