// The agent's control plane: the leader's checks of a Join request
// (CheckJoin, before the request may touch any state), on a JoinRequest
// decoded from the input as gRPC would decode it.
//
// Input: one mode byte, then the serialized JoinRequest. The group is
// ["/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"].
// Modes (byte % 4):
//   0  a leader without a key: the fields alone decide;
//   1  a leader with a key, the request as it is (its challenge unknown);
//   2  a leader with a key that handed out the challenge the request now
//      carries: the proof is checked, and the fuzzer cannot forge it;
//   3  as 2, and the request is signed as an honest member with the key
//      would sign it: accepted exactly when its fields are valid, once
//      (the same challenge again is a replay).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/control_server.h"
#include "bootstrap/control_service.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/mesh.h"
#include "bootstrap/proto_forms.h"
#include "clock.h"
#include "fuzz_check.h"
#include "transport/auth.h"
#include "transport/wire.h"

namespace {

using namespace ringmaster;
using namespace ringmaster::internal;
namespace pb = ringmaster::agent::v1;
using fuzz::CheckError;

const std::vector<std::string> kNames = {"/job:chief/task:0", "/job:worker/task:0", "/job:worker/task:1"};

bool FieldsValid(const pb::JoinRequest& req) {
  const int n = static_cast<int>(kNames.size());
  return req.group_size() == n && req.rank() > 0 && req.rank() < n && req.task_name() == kNames[req.rank()] &&
         req.data_port() > 0 && req.data_port() <= 65535 && req.control_port() >= 0 &&
         req.control_port() <= 65535;
}

// What an honest member puts in its proof (JoinProof, bootstrap/join_checks.h).
std::string HonestProof(const JobKey& key, const pb::JoinRequest& req) {
  Mac mac = key.Sign("join", {req.server_nonce(), req.client_nonce(), U64(static_cast<uint64_t>(req.rank())),
                              U64(static_cast<uint64_t>(req.group_size())), req.task_name(),
                              U64(static_cast<uint64_t>(req.data_port())), U64(req.process_id()),
                              U64(static_cast<uint64_t>(req.control_port()))});
  return std::string(mac.data(), mac.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 4;
  pb::JoinRequest req;
  if (!req.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;

  static const JobKey kNoKey;
  static const JobKey kKey(std::string(32, 'k'));
  const JobKey& key = mode == 0 ? kNoKey : kKey;
  NonceBook nonces(/*capacity=*/4);
  const auto now = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  if (mode >= 2) {
    Nonce n = nonces.Issue(now);
    req.set_server_nonce(n.data(), n.size());
  }
  if (mode == 3) {
    if (req.client_nonce().size() != kNonceBytes) req.set_client_nonce(std::string(kNonceBytes, 'c'));
    req.set_proof(HonestProof(kKey, req));
  }

  Status st = CheckJoin(req, kNames, key, nonces, now);
  if (!st.ok()) {
    CheckError(st);
    FUZZ_CHECK(st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kUnauthenticated);
    // Wrong fields are InvalidArgument whatever the key; a member with valid
    // fields is only ever refused for the key.
    if (!FieldsValid(req)) FUZZ_CHECK(st.code() == StatusCode::kInvalidArgument);
    if (FieldsValid(req)) FUZZ_CHECK(st.code() == StatusCode::kUnauthenticated);
  } else {
    FUZZ_CHECK(FieldsValid(req));
    // With a key, only a proof under the key gets in: never a forged one.
    if (mode == 1 || mode == 2) FUZZ_CHECK(req.proof() == HonestProof(kKey, req));
  }
  switch (mode) {
    case 0:
      FUZZ_CHECK(st.ok() == FieldsValid(req));
      break;
    case 1:
      // No challenge was handed out: nothing with a proof is redeemable.
      FUZZ_CHECK(!st.ok());
      break;
    case 3:
      FUZZ_CHECK(st.ok() == FieldsValid(req));
      if (st.ok()) {
        Status again = CheckJoin(req, kNames, key, nonces, now);
        FUZZ_CHECK(again.code() == StatusCode::kUnauthenticated);
      }
      break;
  }
  return 0;
}
