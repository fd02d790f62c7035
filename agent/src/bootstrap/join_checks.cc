#include "bootstrap/join_checks.h"

namespace ringmaster::internal {

Mac JoinProof(const JobKey& key, const JoinClaim& c) {
  return key.Sign(
      "join", {c.server_nonce, c.client_nonce, U64(static_cast<uint64_t>(c.rank)),
               U64(static_cast<uint64_t>(c.group_size)), c.task_name, U64(static_cast<uint64_t>(c.data_port)),
               U64(c.process_id), U64(static_cast<uint64_t>(c.control_port))});
}

Status CheckClaim(const JoinClaim& c, const std::vector<std::string>& names, const JobKey& key,
                  NonceBook& nonces, Clock::time_point now) {
  const int n = static_cast<int>(names.size());
  if (c.group_size != n) {
    return InvalidArgumentError("group_size " + std::to_string(c.group_size) + " != " + std::to_string(n));
  }
  if (c.rank <= 0 || c.rank >= n) {
    return InvalidArgumentError("rank " + std::to_string(c.rank) + " out of range");
  }
  if (c.task_name != names[c.rank]) {
    return InvalidArgumentError("rank " + std::to_string(c.rank) + " is " + names[c.rank] + ", not '" +
                                c.task_name.substr(0, 200) + "'");
  }
  if (c.data_port <= 0 || c.data_port > 65535) return InvalidArgumentError("data_port out of range");
  if (c.control_port < 0 || c.control_port > 65535) return InvalidArgumentError("control_port out of range");
  if (key.empty()) return OkStatus();
  if (c.proof.empty()) {
    return UnauthenticatedError(c.task_name + " has no job key and the leader requires one");
  }
  if (!nonces.Redeem(c.server_nonce, now)) {
    return UnauthenticatedError("an unknown or expired challenge (ask again)");
  }
  if (c.client_nonce.size() != kNonceBytes ||
      !key.Verify(
          c.proof, "join",
          {c.server_nonce, c.client_nonce, U64(static_cast<uint64_t>(c.rank)),
           U64(static_cast<uint64_t>(c.group_size)), c.task_name, U64(static_cast<uint64_t>(c.data_port)),
           U64(c.process_id), U64(static_cast<uint64_t>(c.control_port))})) {
    return UnauthenticatedError("the proof of " + c.task_name.substr(0, 200) +
                                " does not match the leader's job key (a different key)");
  }
  return OkStatus();
}

namespace {

std::string MembersText(const Table& table) {
  std::string members;
  for (const auto& m : table.members) {
    members += U64(static_cast<uint64_t>(m.rank)) + U64(m.task_name.size()) + m.task_name +
               U64(m.data_host.size()) + m.data_host + U64(static_cast<uint64_t>(m.data_port)) +
               U64(m.process_id) + U64(static_cast<uint64_t>(m.control_port));
  }
  return members;
}

}  // namespace

Mac TableProof(const JobKey& key, const JoinClaim& c, const Table& table) {
  return key.Sign("join-ok", {c.server_nonce, c.client_nonce, U64(table.incarnation), MembersText(table)});
}

Mac ForwardedTableProof(const JobKey& key, const Table& table) {
  return key.Sign("table", {U64(table.incarnation), MembersText(table)});
}

Mac TableAskProof(const JobKey& key, const TableAsk& a) {
  return key.Sign("table-ask", {a.server_nonce, a.client_nonce, U64(static_cast<uint64_t>(a.rank)),
                                a.task_name, U64(a.incarnation)});
}

Status CheckTableAsk(const TableAsk& a, const std::vector<std::string>& names, const JobKey& key,
                     NonceBook& nonces, Clock::time_point now) {
  const int n = static_cast<int>(names.size());
  if (a.rank <= 0 || a.rank >= n)
    return InvalidArgumentError("rank " + std::to_string(a.rank) + " out of range");
  if (a.task_name != names[a.rank]) {
    return InvalidArgumentError("rank " + std::to_string(a.rank) + " is " + names[a.rank] + ", not '" +
                                a.task_name.substr(0, 200) + "'");
  }
  if (key.empty()) return OkStatus();
  if (a.proof.empty()) {
    return UnauthenticatedError(a.task_name + " has no job key and the leader requires one");
  }
  if (!nonces.Redeem(a.server_nonce, now)) {
    return UnauthenticatedError("an unknown or expired challenge (ask again)");
  }
  if (a.client_nonce.size() != kNonceBytes ||
      !key.Verify(a.proof, "table-ask",
                  {a.server_nonce, a.client_nonce, U64(static_cast<uint64_t>(a.rank)), a.task_name,
                   U64(a.incarnation)})) {
    return UnauthenticatedError("the proof of " + a.task_name.substr(0, 200) +
                                " does not match the leader's job key (a different key)");
  }
  return OkStatus();
}

Mac TableAnswerProof(const JobKey& key, const TableAsk& a, FetchedRound round, std::string_view why,
                     const Table& table) {
  return key.Sign("table-answer",
                  {a.server_nonce, a.client_nonce, U64(a.incarnation), U64(static_cast<uint64_t>(round)), why,
                   U64(table.incarnation), MembersText(table)});
}

Mac StatusProof(const JobKey& key, std::string_view server_nonce, std::string_view client_nonce) {
  return key.Sign("status", {server_nonce, client_nonce});
}

}  // namespace ringmaster::internal
