// What formation exchanges, as plain values: a member's entry in the table,
// the claims of its Join, and the table the leader hands out. The gRPC shell
// (control_service.h) converts agent.proto's messages to and from these, so
// the decisions (formation_state.h) never see a protobuf or a socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringmaster::internal {

// One member as the table lists it: where its data listener is.
struct MemberEntry {
  int rank = 0;
  std::string task_name;
  // As the leader saw the Join come in (its own: its TF_CONFIG host, which a
  // follower replaces by the address its Join was answered from); the mesh
  // connects there (join_rules.h UseLeaderAddress).
  std::string data_host;
  int data_port = 0;
  uint64_t process_id = 0;  // random per process: a restarted member is a new one
  int control_port = 0;     // where it serves the control service (0: not sent the table: formation_tree.h)
};

// What a Join claims, and its proof of the job key over the claims.
struct JoinClaim {
  int rank = 0;
  int group_size = 0;
  std::string task_name;
  int data_port = 0;
  uint64_t process_id = 0;
  std::string server_nonce, client_nonce, proof;  // empty without a key
  int control_port = 0;
};

// One formation: its incarnation and every member in rank order.
struct Table {
  uint64_t incarnation = 0;
  std::vector<MemberEntry> members;
};

// A member's request for the table of the round its Join was answered in,
// when it has not come down the formation tree (formation_tree.h), and its
// proof of the job key over the leader's challenge, its own nonce and the
// fields.
struct TableAsk {
  uint64_t incarnation = 0;
  int rank = 0;
  std::string task_name;
  std::string server_nonce, client_nonce, proof;  // empty without a key
};

// What the leader says of the round a TableAsk names (agent.proto's
// TableAnswer.Round).
enum class FetchedRound : int {
  kUnknown = 0,
  kFormed = 1,      // the leader's current round: here is its table
  kSuperseded = 2,  // left: join the next round
  kNotFormed = 3,   // ask again later
};

}  // namespace ringmaster::internal
