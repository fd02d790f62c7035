// The data-plane handshake's state machine (transport/handshake.h), both
// sides as pure functions: the same key accepted even byte by byte, another
// key or none refused saying why, strangers rejected on their Hello.
#include "transport/handshake.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

#include "transport/auth.h"
#include "transport/wire.h"

namespace ringmaster {
namespace {

using internal::Challenge;
using internal::HandshakeAcceptor;
using internal::Hello;
using internal::JobKey;
using internal::MeshView;
using internal::Proof;
using Kind = HandshakeAcceptor::Kind;

const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210";

// The acceptor's state machine against a connector built from the same
// functions the engine uses.
struct Handshake {
  JobKey acceptor_key, connector_key;
  MeshView acceptor{&acceptor_key, 77, 0, 3, 2}, connector{&connector_key, 77, 2, 3, 2};
  HandshakeAcceptor::Step Run(std::string* error = nullptr, size_t chunk = 1000) {
    HandshakeAcceptor acc(acceptor, internal::FreshNonce());
    Hello hello = internal::MakeHello(connector, 0, 1, internal::FreshNonce());
    std::string bytes(reinterpret_cast<const char*>(&hello), sizeof hello);
    HandshakeAcceptor::Step step;
    for (size_t i = 0; i < bytes.size(); i += chunk)
      step = acc.Feed(std::string_view(bytes).substr(i, chunk));
    if (step.kind != Kind::kReply) {
      if (step.kind == Kind::kRejected && step.reply.size() == sizeof(Challenge) && error) {
        Challenge c;
        std::memcpy(&c, step.reply.data(), sizeof c);
        Proof p;
        *error = internal::CheckChallenge(connector, hello, c, "/job:chief/task:0", &p).ToString();
      }
      return step;
    }
    Challenge c;
    std::memcpy(&c, step.reply.data(), sizeof c);
    Proof p;
    Status st = internal::CheckChallenge(connector, hello, c, "/job:chief/task:0", &p);
    if (error) *error = st.ToString();
    if (!st.ok()) p = Proof{internal::kProofMagic, 0, {}};
    std::string proof(reinterpret_cast<const char*>(&p), sizeof p);
    for (size_t i = 0; i < proof.size(); i += chunk)
      step = acc.Feed(std::string_view(proof).substr(i, chunk));
    EXPECT_EQ(acc.from(), 2);
    EXPECT_EQ(acc.channel(), 1);
    return step;
  }
};

TEST(Handshake, SameKeyIsAcceptedEvenByteByByte) {
  Handshake h{JobKey(kKey), JobKey(kKey)};
  EXPECT_EQ(h.Run().kind, Kind::kAccepted);
  EXPECT_EQ(h.Run(nullptr, 1).kind, Kind::kAccepted);
  Handshake none{JobKey(), JobKey()};
  EXPECT_EQ(none.Run().kind, Kind::kAccepted) << "a group without a key still forms";
}

TEST(Handshake, WrongOrMissingKeyIsRefusedAndSaysWhy) {
  std::string error;
  Handshake wrong{JobKey(kKey), JobKey(kOtherKey)};
  auto s = wrong.Run(&error);
  EXPECT_EQ(s.kind, Kind::kRejected);
  EXPECT_EQ(s.why, "a wrong job key");
  EXPECT_NE(error.find("did not prove the job key"), std::string::npos) << error;
  Handshake missing{JobKey(kKey), JobKey()};
  s = missing.Run(&error);
  EXPECT_EQ(s.kind, Kind::kRejected);
  EXPECT_EQ(error,
            "Unauthenticated: /job:chief/task:0 requires the job key and this member has none "
            "(RINGMASTER_JOB_KEY_FILE)");
  Handshake unexpected{JobKey(), JobKey(kKey)};
  s = unexpected.Run(&error);
  EXPECT_EQ(s.kind, Kind::kRejected);
  EXPECT_NE(error.find("has no job key but this member has one"), std::string::npos) << error;
}

TEST(Handshake, StrangersAreRejectedOnTheirHello) {
  JobKey key(kKey);
  MeshView view{&key, 77, 0, 3, 2};
  auto feed = [&](Hello h) {
    HandshakeAcceptor acc(view, internal::FreshNonce());
    return acc.Feed(std::string_view(reinterpret_cast<const char*>(&h), sizeof h));
  };
  Hello good = internal::MakeHello(MeshView{&key, 77, 2, 3, 2}, 0, 1, internal::FreshNonce());
  Hello h = good;
  h.incarnation = 78;
  EXPECT_EQ(feed(h).why, "a hello for another formation");
  h = good;
  h.to_rank = 1;
  EXPECT_EQ(feed(h).kind, Kind::kRejected);
  h = good;
  h.channel = 9;
  EXPECT_EQ(feed(h).kind, Kind::kRejected);
  h = good;
  h.magic = 0x78787878;
  EXPECT_EQ(feed(h).why, "not a Ringmaster hello");
  h = good;
  h.version = 3;  // an agent from before the fingers-only control plane
  EXPECT_EQ(feed(h).why,
            "a hello of protocol version 3 (this agent speaks 4; every member must run the same Ringmaster "
            "release)");
  HandshakeAcceptor acc(view, internal::FreshNonce());
  EXPECT_EQ(acc.Feed("xyz").kind, Kind::kNeedMore);
  EXPECT_EQ(acc.Need(), sizeof(Hello) - 3) << "never more than one message is buffered";
}

}  // namespace
}  // namespace ringmaster
