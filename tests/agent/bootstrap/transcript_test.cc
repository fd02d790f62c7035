// Formation's decisions (bootstrap/) by transcripts: testdata/bootstrap/*.txt.
// RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the expected output.
//
// The leader's core (formation_state.h); incarnations count from 101:
//   leader members=N key=yes|no [min=N rejoin=S]   rank 0's core (`node rank=R`
//                                        for another rank's); min, rejoin: an elastic size
//   challenge as=NAME t=T                a challenge, its nonce kept as NAME
//   join rank=R process=P t=T nonce=NAME proof=key|other|none|tampered
//        [name=TASK] [size=N] [port=N] [host=H]     a follower's Join
//   leader-joins process=P t=T           the leader's own entry
//   tick t=T                             the clock (an elastic size's bound)
//   joiners                              who waits for a round the leader has not joined
//   superseded round=K                   whether round K's mesh was overtaken (a member of it joined again)
//   table round=K                        the table of round K, while kept
//   give-up rank=R process=P round=K     a waiting Join gives up
//   leader-gives-up timeout=S
//   shutdown
//   status-call nonce=NAME proof=key|other|none t=T   GetStatus's check
//   state                                the round, who is in it, who is missing
// A follower's decisions (join_rules.h):
//   answer rank=R round=K signer=leader|other       its last Join's answer checked
//   challenge-seen key_required=yes|no have_key=yes|no
//   attempt code=C                       a failed attempt (its words as an input line)
//   out-of-time code=C [earlier=E]       the last attempt failed with C and the time is up;
//                                        input: its words, then the earlier attempt's (E)
// The mesh's books (mesh_ledger.h):
//   mesh rank=R members=N channels=C
//   connected peer=P channel=C fd=F      ours to a lower rank, or one accepted
//   accept from=P channel=C fd=F         a handshake that succeeded: kept or refused
//   mesh-timeout timeout=S
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "bootstrap/formation_state.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/join_rules.h"
#include "bootstrap/mesh_ledger.h"
#include "group/overlay.h"
#include "transcript_util.h"

namespace ringmaster::internal {
namespace {

using ringmaster::testing::TranscriptCase;

const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210";

std::string EntryText(const MemberEntry& m) {
  return std::to_string(m.rank) + " " + m.task_name + " at " + m.data_host + ":" +
         std::to_string(m.data_port) + " process " + std::to_string(m.process_id);
}

class Harness {
 public:
  std::string Run(const TranscriptCase& c) {
    if (c.command == "leader" || c.command == "node") {
      members_ = std::stoi(c.Arg("members", "3"));
      names_ = TranscriptNames(members_);
      key_ = JobKey(c.Arg("key", "no") == "yes" ? kKey : "");
      next_incarnation_ = 101;
      min_size_ = std::stoi(c.Arg("min", "0"));
      state_.emplace(
          std::stoi(c.Arg("rank", "0")), names_, &key_, [this] { return next_incarnation_++; },
          ElasticSize{min_size_, std::stod(c.Arg("rejoin", "30"))});
      nonces_.clear();
      claims_.clear();
      return StateText();
    }
    if (c.command == "mesh") {
      members_ = std::stoi(c.Arg("members", "3"));
      names_ = TranscriptNames(members_);
      const int rank = std::stoi(c.Arg("rank", "0"));
      // awaited=1: data channels on first use; fingers=yes: the control
      // channel to the overlay's fingers only (group/overlay.h).
      ledger_.emplace(rank, members_, std::stoi(c.Arg("channels", "1")), std::stoi(c.Arg("awaited", "-1")),
                      c.Arg("fingers", "no") == "yes" ? Fingers(rank, members_) : std::vector<int>{});
      return "awaiting " + std::to_string(ledger_->expected());
    }
    if (c.command == "connected" || c.command == "accept" || c.command == "mesh-timeout") return Mesh(c);
    if (c.command == "challenge-seen" || c.command == "attempt" || c.command == "out-of-time")
      return Follower(c);
    if (!state_) {
      ADD_FAILURE() << c.Where() << ": `leader` first";
      return "";
    }
    return Leader(c);
  }

 private:
  std::string Leader(const TranscriptCase& c) {
    FormationState& s = *state_;
    if (c.command == "challenge") {
      auto a = s.Challenge(TranscriptTime(c));
      if (!a.key_required) return "no key required";
      nonces_[c.Arg("as")] = a.server_nonce;
      return "key required: nonce " + c.Arg("as");
    }
    if (c.command == "join") {
      const int rank = std::stoi(c.Arg("rank"));
      JoinClaim claim;
      claim.rank = rank;
      claim.group_size = std::stoi(c.Arg("size", std::to_string(members_)));
      claim.task_name = c.Arg("name", rank >= 0 && rank < members_ ? names_[rank] : "stranger");
      claim.data_port = std::stoi(c.Arg("port", std::to_string(4000 + rank)));
      claim.process_id = std::stoull(c.Arg("process", std::to_string(1000 + rank)));
      Prove(c, claim);
      const std::string host = c.Arg("host", "10.0.0." + std::to_string(rank + 1));
      auto a = s.Join(claim, host, TranscriptTime(c));
      if (a.refused.ok()) claims_[rank] = claim;
      return AdmissionText(a);
    }
    if (c.command == "leader-joins") {
      MemberEntry self{0, names_[0], "10.0.0.1", std::stoi(c.Arg("port", "4000")),
                       std::stoull(c.Arg("process", "1000"))};
      return AdmissionText(s.LeaderJoins(self, TranscriptTime(c)));
    }
    if (c.command == "tick") {
      const auto due = s.ShrinkDue();
      if (s.Tick(TranscriptTime(c))) return "round " + std::to_string(s.round() - 1) + " complete";
      return due ? "waits" : "no bound running (no elastic size, or the leader has not joined)";
    }
    if (c.command == "joiners") return std::to_string(s.Joiners()) + " waiting";
    if (c.command == "superseded") {
      const Table* t = s.Result(std::stoull(c.Arg("round", "0")));
      if (!t) return "not complete";
      return s.Superseded(*t) ? "superseded: a member of it waits in the next round" : "not superseded";
    }
    if (c.command == "table") {
      const uint64_t round = std::stoull(c.Arg("round", "0"));
      const Table* t = s.Result(round);
      if (!t)
        return s.Completed(round) ? "round " + std::to_string(round) + ": no longer kept" : "not complete";
      std::string out = "incarnation " + std::to_string(t->incarnation);
      for (const auto& m : t->members) out += "\n" + EntryText(m);
      return out;
    }
    if (c.command == "give-up") {
      return StatusText(s.FollowerGivesUp(std::stoull(c.Arg("round", "0")), std::stoi(c.Arg("rank")),
                                          std::stoull(c.Arg("process"))));
    }
    if (c.command == "leader-gives-up")
      return StatusText(s.LeaderGivesUp(std::stod(c.Arg("timeout", "300"))));
    if (c.command == "shutdown") {
      s.Shutdown();
      return "ok";
    }
    if (c.command == "status-call") {
      JoinClaim claim;  // only its nonces and proof
      Prove(c, claim);
      const std::string proof = c.Arg("proof") == "none" ? "" : Sign(c.Arg("proof"), [&](const JobKey& k) {
        return StatusProof(k, claim.server_nonce, claim.client_nonce);
      });
      return StatusText(
          s.CheckStatusCaller(claim.server_nonce, claim.client_nonce, proof, TranscriptTime(c)));
    }
    if (c.command == "answer") {
      const int rank = std::stoi(c.Arg("rank"));
      const Table* t = s.Result(std::stoull(c.Arg("round", "0")));
      if (!t || !claims_.count(rank)) return "no answer to check";
      const JoinClaim& claim = claims_[rank];
      const std::string proof =
          key_.empty() ? "" : Sign(c.Arg("signer") == "leader" ? "key" : "other", [&](const JobKey& k) {
            return TableProof(k, claim, *t);
          });
      JoinParties p{names_[rank], names_[0], "10.0.0.1:2223", 300};
      Status st = CheckAnswer(p, key_, claim, *t, proof);
      StatusOr<int> place = st.ok() ? CheckTable(*t, members_, min_size_, rank) : StatusOr<int>(st);
      return place.ok() ? "taken: incarnation " + std::to_string(t->incarnation) + ", rank " +
                              std::to_string(*place) + " of " + std::to_string(t->members.size())
                        : StatusText(place.status());
    }
    if (c.command == "state") return StateText();
    ADD_FAILURE() << c.Where() << ": unknown command " << c.command;
    return "";
  }

  std::string Follower(const TranscriptCase& c) {
    JoinParties p{"/job:worker/task:0", "/job:chief/task:0", "10.0.0.1:2223", 300};
    if (c.command == "challenge-seen") {
      return StatusText(CheckChallengeAgrees(p, c.Arg("key_required") == "yes", c.Arg("have_key") == "yes"));
    }
    if (c.command == "out-of-time") {
      const Status attempt(TranscriptCode(c.Arg("code")), c.input.empty() ? "" : c.input[0]);
      const std::string e = c.Arg("earlier", "");
      const Status earlier =
          e.empty() ? OkStatus() : Status(TranscriptCode(e), c.input.size() > 1 ? c.input[1] : "");
      return "gives up: " + StatusText(JoinFailed(p, attempt, earlier));
    }
    const Status attempt(TranscriptCode(c.Arg("code")), InputText(c));
    if (JoinAgain(attempt)) return "asked again";
    return "gives up: " + StatusText(JoinFailed(p, attempt));
  }

  std::string Mesh(const TranscriptCase& c) {
    if (!ledger_) {
      ADD_FAILURE() << c.Where() << ": `mesh` first";
      return "";
    }
    MeshLedger& l = *ledger_;
    if (c.command == "mesh-timeout")
      return StatusText(l.TimedOut(names_, std::stod(c.Arg("timeout", "300"))));
    const int peer = std::stoi(c.Arg(c.command == "accept" ? "from" : "peer"));
    const int channel = std::stoi(c.Arg("channel", "0"));
    if (c.command == "accept") {
      if (auto why = l.Refusal(peer, channel)) return "refused: " + *why;
    }
    l.Connected(peer, channel, std::stoi(c.Arg("fd", "10")));
    const std::string missing = l.Missing(names_);
    return "kept; awaiting " + std::to_string(l.expected()) +
           (missing.empty() ? "" : " (from " + missing + ")");
  }

  // Fills the claim's nonces and proof as the case says: proof=key (the job
  // key), other (another key), tampered (the key, then the port changed),
  // none (no proof).
  void Prove(const TranscriptCase& c, JoinClaim& claim) {
    const std::string how = c.Arg("proof", "none");
    if (how == "none") return;
    claim.server_nonce = c.Has("nonce") ? nonces_[c.Arg("nonce")] : std::string(kNonceBytes, 'x');
    claim.client_nonce = std::string(kNonceBytes, 'c');
    claim.proof = Sign(how, [&](const JobKey& k) { return JoinProof(k, claim); });
    if (how == "tampered") ++claim.data_port;
  }

  template <typename F>
  static std::string Sign(const std::string& how, F sign) {
    const JobKey key(how == "other" ? kOtherKey : kKey);
    Mac m = sign(key);
    return std::string(m.data(), m.size());
  }

  static std::string AdmissionText(const FormationState::Admission& a) {
    if (!a.refused.ok())
      return "refused: " + a.refused.ToString() + (a.stranger ? " (logged as a refused peer)" : "");
    if (a.completed) return "round " + std::to_string(a.round) + " complete";
    return "waits for round " + std::to_string(a.round);
  }

  std::string StateText() const {
    std::string out = "round " + std::to_string(state_->round());
    for (const auto& m : state_->Pending()) out += "\njoined: " + EntryText(m);
    const std::string missing = state_->Missing();
    out += "\nmissing: " + (missing.empty() ? std::string("none") : missing);
    return out;
  }

  int members_ = 0;
  int min_size_ = 0;  // the elastic size of `leader min=N`
  std::vector<std::string> names_;
  JobKey key_{""};
  uint64_t next_incarnation_ = 101;
  std::optional<FormationState> state_;
  std::optional<MeshLedger> ledger_;
  std::map<std::string, std::string> nonces_;
  std::map<int, JoinClaim> claims_;  // each rank's last admitted Join
};

class BootstrapTranscript : public ::testing::TestWithParam<std::string> {};

TEST_P(BootstrapTranscript, Matches) {
  Harness h;
  ringmaster::testing::RunTranscript(GetParam(), [&](const TranscriptCase& c) { return h.Run(c); });
}

INSTANTIATE_TEST_SUITE_P(Files, BootstrapTranscript,
                         ::testing::ValuesIn(ringmaster::testing::TranscriptFiles(RINGMASTER_TESTDATA
                                                                                  "/bootstrap")),
                         [](const auto& info) { return ringmaster::testing::TranscriptName(info.param); });

}  // namespace
}  // namespace ringmaster::internal
