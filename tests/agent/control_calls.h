// What a test sees of the calls one control server answers, through a gRPC
// server interceptor of its own (given to ServeControl, control_server.h):
// the Joins held (received, not answered yet), the tables Deliver took, the
// tables FetchTable gave; and a FetchTable that answers Unavailable, as a
// leader that cannot be reached would. The service itself keeps no count.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ringmaster/agent.pb.h"

namespace ringmaster::testing {

class ControlCalls {
 public:
  // Joins that reached the server and are not answered yet (the hub holds them).
  int held_joins() const { return held_joins_.load(); }
  // Deliver calls answered OK: tables the member took from its parent.
  int tables_delivered() const { return delivered_.load(); }
  // Those of them whose table was of round `incarnation`. Another test's
  // process beside this one (ctest -j) may have been handed a port this
  // test released unserved (a member that claims one where nothing
  // listens), and its tables then reach a member here: they count above,
  // not here.
  int tables_delivered(uint64_t incarnation) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = delivered_of_.find(incarnation);
    return it == delivered_of_.end() ? 0 : it->second;
  }
  // FetchTable calls answered OK with a formed round's table (the leader's).
  int tables_fetched() const { return fetched_.load(); }
  // From now on every FetchTable is answered Unavailable ("the leader does
  // not answer"), whatever the service answered.
  void StopAnsweringFetches() { fetches_stopped_ = true; }

  // For ServeControl's `interceptors`; this object must outlive the server.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> Interceptors() {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> v;
    v.push_back(std::make_unique<Factory>(this));
    return v;
  }

 private:
  enum class Method { kOther, kJoin, kDeliver, kFetchTable };

  class Interceptor final : public grpc::experimental::Interceptor {
   public:
    Interceptor(ControlCalls* calls, Method method) : calls_(calls), method_(method) {
      if (method_ == Method::kJoin) ++calls_->held_joins_;
    }
    ~Interceptor() override { Answered(); }  // a call cancelled before its answer
    void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
      using Hook = grpc::experimental::InterceptionHookPoints;
      if (method_ == Method::kFetchTable && m->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE))
        formed_ = Formed(m);
      if (method_ == Method::kDeliver && m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
        if (const void* msg = m->GetRecvMessage())
          incarnation_ = static_cast<const agent::v1::TableDelivery*>(msg)->table().incarnation();
      }
      if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
        if (method_ == Method::kFetchTable && calls_->fetches_stopped_)
          m->ModifySendStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the leader does not answer"));
        const bool ok = m->GetSendStatus().ok();
        if (ok && method_ == Method::kDeliver) {
          ++calls_->delivered_;
          std::lock_guard<std::mutex> lock(calls_->mu_);
          ++calls_->delivered_of_[incarnation_];
        }
        if (ok && method_ == Method::kFetchTable && formed_) ++calls_->fetched_;
        Answered();
      }
      m->Proceed();
    }

   private:
    // Whether the answer about to be sent gives a formed round's table.
    static bool Formed(grpc::experimental::InterceptorBatchMethods* m) {
      agent::v1::TableAnswer answer;
      if (const void* msg = m->GetSendMessage()) {
        answer = *static_cast<const agent::v1::TableAnswer*>(msg);
      } else if (grpc::ByteBuffer* bytes = m->GetSerializedSendMessage()) {
        std::vector<grpc::Slice> slices;
        if (!bytes->Dump(&slices).ok()) return false;
        std::string all;
        for (const auto& s : slices) all.append(reinterpret_cast<const char*>(s.begin()), s.size());
        if (!answer.ParseFromString(all)) return false;
      }
      return answer.round() == agent::v1::TableAnswer::FORMED;
    }
    void Answered() {
      if (method_ == Method::kJoin && !answered_) --calls_->held_joins_;
      answered_ = true;
    }
    ControlCalls* calls_;
    const Method method_;
    bool formed_ = false;
    bool answered_ = false;
    uint64_t incarnation_ = 0;  // a Deliver's table's
  };

  class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    explicit Factory(ControlCalls* calls) : calls_(calls) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo* info) override {
      const std::string name = info->method() ? info->method() : "";
      const std::string prefix = "/ringmaster.agent.v1.Agent/";
      Method m = Method::kOther;
      if (name == prefix + "Join") m = Method::kJoin;
      if (name == prefix + "Deliver") m = Method::kDeliver;
      if (name == prefix + "FetchTable") m = Method::kFetchTable;
      return new Interceptor(calls_, m);
    }

   private:
    ControlCalls* calls_;
  };

  std::atomic<int> held_joins_{0}, delivered_{0}, fetched_{0};
  mutable std::mutex mu_;
  std::map<uint64_t, int> delivered_of_;  // by the delivered table's incarnation
  std::atomic<bool> fetches_stopped_{false};
};

}  // namespace ringmaster::testing
