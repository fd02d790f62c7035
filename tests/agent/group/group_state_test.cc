// The group's state machine (group_state.h) by transcripts:
// testdata/group_state/*.txt, events in, decisions and state out.
// RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the expected output.
//
//   new rank=R members=N heartbeat=S [watch=P,Q]
//                                        a formation at t=0 (names: chief, workers);
//                                        watch: the peers whose heartbeats it expects
//   heard peer=P t=T                     any bytes from P
//   tick t=T
//   paused s=S                           this member itself did not run for S seconds
//   lost peer=P how=closed|reset         (or the words as an input line)
//   goodbye peer=P
//   abort-frame peer=P code=C            the peer's words as an input line
//   reform-frame peer=P                  the words as an input line
//   protocol-error peer=P
//   collective-failed code=C             the status's words as an input line
//   abort-requested                      the reason as an input line
//   reform-requested
//   stopping destroyed=true|false
//   failed-call code=C                   what a caller whose own status is C gets
//   state                                aborted, cause, new calls, watching, next deadline
#include "group/group_state.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "transcript_util.h"
#include "transport/peer_loss.h"

namespace ringmaster::internal {
namespace {

using ringmaster::testing::TranscriptCase;

std::string DecisionText(const GroupDecision& d, const GroupState& g) {
  if (!d.abort) return "decision: none";
  std::string out = "decision: abort";
  if (d.tell_peers) out += " tell-peers";
  if (d.report) out += " report";
  if (d.reform) out += " reform";
  return out + "\ncause: " + g.cause().ToString();
}

std::string StateText(const GroupState& g, int members) {
  std::string out = g.aborted() ? "aborted: " + g.cause().ToString() : "formed";
  out += "\nnew call: " + StatusText(g.ForNewCall());
  std::string watching;
  for (int p = 0; p < members; ++p) {
    if (g.Watching(p)) watching += (watching.empty() ? "" : " ") + std::to_string(p);
  }
  out += "\nwatching: " + (watching.empty() ? std::string("none") : watching);
  out += "\nnext deadline: " + SecondsText(g.NextDeadline());
  out += std::string("\nmay reform: ") + (g.MayReform() ? "yes" : "no");
  return out;
}

class Harness {
 public:
  std::string Run(const TranscriptCase& c) {
    if (c.command == "new") {
      members_ = std::stoi(c.Arg("members", "3"));
      std::vector<int> watched;  // watch=1,3: the overlay's fingers; absent: everyone
      for (std::stringstream in(c.Arg("watch", "")); in.good();) {
        std::string p;
        if (std::getline(in, p, ',') && !p.empty()) watched.push_back(std::stoi(p));
      }
      g_.emplace(std::stoi(c.Arg("rank", "0")), TranscriptNames(members_),
                 std::stod(c.Arg("heartbeat", "15")), TranscriptTime(c), watched);
      return StateText(*g_, members_);
    }
    if (!g_) {
      ADD_FAILURE() << c.Where() << ": `new` first";
      return "";
    }
    GroupState& g = *g_;
    const int peer = std::stoi(c.Arg("peer", "-1"));
    if (c.command == "heard") {
      g.HeardFrom(peer, TranscriptTime(c));
      return "ok";
    }
    if (c.command == "tick") return DecisionText(g.Tick(TranscriptTime(c)), g);
    if (c.command == "paused") {
      g.Paused(
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::stod(c.Arg("s")))));
      return "ok";
    }
    if (c.command == "lost") {
      const std::string how = c.Arg("how");
      return DecisionText(g.ConnectionLost(peer, how == "closed"  ? kHowClosed
                                                 : how == "reset" ? kHowReset
                                                                  : InputText(c)),
                          g);
    }
    if (c.command == "goodbye") return DecisionText(g.Goodbye(peer), g);
    if (c.command == "abort-frame")
      return DecisionText(g.AbortFrame(peer, TranscriptCode(c.Arg("code")), InputText(c)), g);
    if (c.command == "reform-frame") return DecisionText(g.ReformFrame(peer, InputText(c)), g);
    if (c.command == "protocol-error") return DecisionText(g.ProtocolError(peer), g);
    if (c.command == "collective-failed")
      return DecisionText(g.CollectiveFailed(Status(TranscriptCode(c.Arg("code")), InputText(c))), g);
    if (c.command == "abort-requested") return DecisionText(g.AbortRequested(InputText(c)), g);
    if (c.command == "reform-requested") return DecisionText(g.ReformRequested(), g);
    if (c.command == "stopping") return DecisionText(g.Stopping(c.Arg("destroyed") == "true"), g);
    if (c.command == "failed-call")
      return "gets: " + StatusText(g.ForFailedCall(Status(TranscriptCode(c.Arg("code")), InputText(c))));
    if (c.command == "state") return StateText(g, members_);
    ADD_FAILURE() << c.Where() << ": unknown command " << c.command;
    return "";
  }

 private:
  std::optional<GroupState> g_;
  int members_ = 0;
};

class GroupStateTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(GroupStateTranscript, Matches) {
  Harness h;
  ringmaster::testing::RunTranscript(GetParam(), [&](const TranscriptCase& c) { return h.Run(c); });
}

INSTANTIATE_TEST_SUITE_P(Files, GroupStateTranscript,
                         ::testing::ValuesIn(ringmaster::testing::TranscriptFiles(RINGMASTER_TESTDATA
                                                                                  "/group_state")),
                         [](const auto& info) { return ringmaster::testing::TranscriptName(info.param); });

}  // namespace
}  // namespace ringmaster::internal
