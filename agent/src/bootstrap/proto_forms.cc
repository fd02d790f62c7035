#include "bootstrap/proto_forms.h"

#include "bootstrap/join_checks.h"

namespace ringmaster::internal {

namespace pb = ringmaster::agent::v1;

JoinClaim ClaimOf(const pb::JoinRequest& req) {
  return JoinClaim{req.rank(),         req.group_size(), req.task_name(),
                   req.data_port(),    req.process_id(), req.server_nonce(),
                   req.client_nonce(), req.proof(),      req.control_port()};
}

void ToProto(const JoinClaim& c, pb::JoinRequest* req) {
  req->set_rank(c.rank);
  req->set_group_size(c.group_size);
  req->set_task_name(c.task_name);
  req->set_data_port(c.data_port);
  req->set_process_id(c.process_id);
  req->set_control_port(c.control_port);
  if (!c.proof.empty()) {
    req->set_server_nonce(c.server_nonce);
    req->set_client_nonce(c.client_nonce);
    req->set_proof(c.proof);
  }
}

TableAsk AskOf(const pb::TableRequest& req) {
  return TableAsk{req.incarnation(),  req.rank(),         req.task_name(),
                  req.server_nonce(), req.client_nonce(), req.proof()};
}

void ToProto(const TableAsk& a, pb::TableRequest* req) {
  req->set_incarnation(a.incarnation);
  req->set_rank(a.rank);
  req->set_task_name(a.task_name);
  if (!a.proof.empty()) {
    req->set_server_nonce(a.server_nonce);
    req->set_client_nonce(a.client_nonce);
    req->set_proof(a.proof);
  }
}

Table TableOf(const pb::JoinResponse& resp) {
  Table t;
  t.incarnation = resp.incarnation();
  for (const auto& m : resp.members())
    t.members.push_back(
        MemberEntry{m.rank(), m.task_name(), m.data_host(), m.data_port(), m.process_id(), m.control_port()});
  return t;
}

void ToProto(const Table& t, pb::JoinResponse* resp) {
  resp->set_incarnation(t.incarnation);
  for (const auto& e : t.members) {
    pb::Member* m = resp->add_members();
    m->set_rank(e.rank);
    m->set_task_name(e.task_name);
    m->set_data_host(e.data_host);
    m->set_data_port(e.data_port);
    m->set_process_id(e.process_id);
    m->set_control_port(e.control_port);
  }
}

Status CheckJoin(const pb::JoinRequest& req, const std::vector<std::string>& names, const JobKey& key,
                 NonceBook& nonces, Clock::time_point now) {
  return CheckClaim(ClaimOf(req), names, key, nonces, now);
}

Mac TableProof(const JobKey& key, const pb::JoinRequest& req, const pb::JoinResponse& table) {
  return TableProof(key, ClaimOf(req), TableOf(table));
}

}  // namespace ringmaster::internal
