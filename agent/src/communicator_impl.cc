// The communicator's life: forming the group (and its process sets),
// stopping, re-forming, aborting, the timeline. A formation's transports are
// wired in formation_transports.cc, the collective calls are in
// communicator_calls.cc.
#include "communicator_impl.h"

#include <algorithm>
#include <cstdio>

#include "agent_log.h"
#include "bootstrap/agent_bootstrap.h"
#include "bootstrap/random_id.h"
#include "collectives/collectives.h"
#include "collectives/link_model.h"
#include "formation_transports.h"
#include "gpu/gpu_backend.h"
#include "group/overlay.h"
#include "group/process_set.h"
#include "group/resume.h"
#include "group/terminate.h"
#include "group/timeline.h"
#include "transport/data_acceptor.h"
#include "transport/net.h"

namespace ringmaster::internal {

CommunicatorImpl::CommunicatorImpl(const CommunicatorSettings& settings, Formation formation)
    : settings_(settings),
      rank_(settings.group.rank.value_or(-1)),
      size_(static_cast<int>(settings.group.members.size())),
      config_rank_(rank_),
      process_id_(RandomId()),
      recorder_(
          std::make_shared<FlightRecorder>(static_cast<size_t>(std::max(1, settings.flight_recorder_size)))),
      key_(settings.job_key),
      refusals_(rank_ >= 0 && rank_ < size_ ? settings.group.members[rank_].TaskName() : "agent"),
      bootstrap_(std::move(formation.bootstrap)),
      mesh_(formation.mesh ? std::move(formation.mesh) : MeshFactory(FormMesh)) {
  for (const auto& m : settings_.group.members) {
    names_.push_back(m.TaskName());
    std::string host;
    int port = 0;
    hosts_.push_back(SplitHostPort(m.address, &host, &port).ok() ? host : m.address);
  }
  config_names_ = names_;
  config_hosts_ = hosts_;
  gpu_ = GpuBackend::Create({rank_, size_, names_, settings_.streams});
  set_recorder_ =
      std::make_shared<FlightRecorder>(static_cast<size_t>(std::max(1, settings.flight_recorder_size)));
}

CommunicatorImpl::CommunicatorImpl(CommunicatorImpl* parent, int id, int wire_key, std::vector<int> members)
    : settings_(parent->settings_),
      rank_(static_cast<int>(std::find(members.begin(), members.end(), parent->rank_) - members.begin())),
      size_(static_cast<int>(members.size())),
      config_rank_(rank_),
      process_id_(parent->process_id_),
      key_(std::string()),
      refusals_(parent->names_[parent->rank_]),
      parent_(parent),
      set_id_(id),
      wire_key_(wire_key),
      formation_(parent->formation_.load()),
      members_(std::move(members)) {
  for (int r : members_) {
    names_.push_back(parent->names_[r]);
    hosts_.push_back(parent->hosts_[r]);
  }
}

StatusOr<std::unique_ptr<CommunicatorImpl>> CommunicatorImpl::AddProcessSet(int id,
                                                                            std::span<const int> ranks) {
  if (parent_) return UnimplementedError("process sets of a process set: add them to the whole group");
  std::vector<int> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  const Status local = CheckProcessSet(id, sorted, size_, sets_added_);
  // Every member of the group says what it adds, and all decide alike.
  const ProcessSetOffer mine = OfferProcessSet(local.ok(), id, sorted);
  std::vector<int64_t> all(static_cast<size_t>(kProcessSetWords) * size_);
  CommunicationOptions o;
  Tensor in{const_cast<int64_t*>(mine.data()), kProcessSetWords, DataType::kInt64},
      out{all.data(), static_cast<int64_t>(all.size()), DataType::kInt64};
  RM_RETURN_IF_ERROR(AllGatherAsync(in, out, o).Wait());
  if (!local.ok()) return local;
  RM_RETURN_IF_ERROR(DecideProcessSet(id, all, rank_, names_));
  // The set's key on the wire: how many sets the whole group has added in
  // this formation, the same on every member (the calls are collective and
  // agreed, and every member counts from 0 at each formation: a survivor of
  // a re-formation as a new incarnation does), so an id that Horovod reuses
  // never meets an old set's sequence numbers.
  const int key = ++sets_added_;
  if (!std::binary_search(sorted.begin(), sorted.end(), rank_)) return std::unique_ptr<CommunicatorImpl>();
  return std::make_unique<CommunicatorImpl>(this, id, key, std::move(sorted));
}

CommunicatorImpl::~CommunicatorImpl() {
  Stop(/*destroyed=*/true);
  if (gpu_) gpu_->Shutdown();
  bootstrap_.reset();  // stops the agent's control service, before the key and refusal log it uses
}

Status CommunicatorImpl::Start() {
  RM_RETURN_IF_ERROR(settings_.Validate());
  auto own_port = ControlPort(rank_);
  if (!own_port.ok()) return own_port.status();
  if (size_ > 1) InstallTerminationHook();
  if (!bootstrap_) {
    AgentBootstrapConfig bc;
    bc.rank = rank_;
    bc.names = names_;
    bc.hosts = hosts_;
    bc.own_port = *own_port;
    auto leader_port = ControlPort(0);
    bc.leader_port = leader_port.ok() ? *leader_port : 0;
    bc.timeout_s = settings_.formation_timeout_seconds;
    bc.elastic = ElasticSize{settings_.min_size, settings_.rejoin_timeout_seconds};
    bc.key = &key_;
    bc.refusals = &refusals_;
    auto bootstrap = StartAgentBootstrap(bc);
    if (!bootstrap.ok()) return bootstrap.status();
    bootstrap_ = std::move(*bootstrap);
  }
  return Form();
}

StatusOr<int> CommunicatorImpl::ControlPort(int rank) const {
  const auto& ports = settings_.control_ports;
  if (ports.size() == 1) return ports[0];
  if (!ports.empty()) return ports[static_cast<size_t>(rank)];
  if (rank != 0) return 0;  // nobody needs to know it: the kernel picks one
  std::string h;
  int tf_port = 0;
  RM_RETURN_IF_ERROR(SplitHostPort(settings_.group.members[0].address, &h, &tf_port));
  return DefaultAgentPort(tf_port);
}

Status CommunicatorImpl::Form() {
  // A member that leaves right after the mesh formed (the link probe, the
  // first exchange, meets its closed connections) sends the others into the
  // next round too: formed again with its new process, within one deadline.
  const Deadline until = DeadlineAfter(settings_.formation_timeout_seconds);
  while (true) {
    Status st = FormOnce(until);
    if (st.ok() || st.code() != StatusCode::kAborted || Clock::now() >= until) return st;
    Info(config_names_[config_rank_] + ": " + st.message() + "; forming again");
  }
}

Status CommunicatorImpl::FormOnce(Deadline until) {
  MeshConfig mc;
  mc.rank = config_rank_;
  mc.names = config_names_;
  mc.hosts = config_hosts_;
  mc.min_size = settings_.min_size;
  mc.process_id = process_id_;
  // 0: control, 1..streams: data, then process sets', then the GPU's.
  mc.channels = settings_.streams + 3;
  mc.first_use = true;  // data channels: when an algorithm first needs the peer
  // Control connections between the overlay's fingers only (2⌈log2 N⌉ per
  // member, not N - 1): heartbeats, abort frames and the diagnosis travel
  // over them (docs/engine.md, "Connections at scale").
  mc.control_peers = [](int rank, int size) { return Fingers(rank, size); };
  mc.timeout_s = settings_.formation_timeout_seconds;
  mc.deadline = until;
  mc.key = &key_;
  mc.refusals = &refusals_;
  auto mesh = mesh_(mc, *bootstrap_);
  if (!mesh.ok()) return mesh.status();
  incarnation_ = mesh->incarnation;
  // A new formation: sets of the last one are void (executor()), and the
  // sets added from now on are numbered from 1 on every member, survivors
  // and new incarnations alike.
  ++formation_;
  sets_added_ = 0;
  // The group formed (all of TF_CONFIG unless an elastic size left some out).
  const int before = size_;
  names_.clear();
  hosts_.clear();
  for (int r : mesh->members) {
    names_.push_back(config_names_[r]);
    hosts_.push_back(config_hosts_[r]);
  }
  rank_ = mesh->rank;
  size_ = static_cast<int>(mesh->members.size());
  if (size_ != before || size_ != static_cast<int>(config_names_.size())) {
    std::string out;
    for (int r = 0; r < static_cast<int>(config_names_.size()); ++r) {
      if (std::find(mesh->members.begin(), mesh->members.end(), r) == mesh->members.end())
        out += (out.empty() ? "" : ", ") + config_names_[r];
    }
    Info(config_names_[config_rank_] + ": formed with " + std::to_string(size_) + " of " +
         std::to_string(config_names_.size()) + " members" + (out.empty() ? "" : " (without " + out + ")") +
         "; rank " + std::to_string(rank_));
  }

  Group::Config gc;
  gc.rank = rank_;
  gc.names = names_;
  gc.heartbeat_timeout_s = settings_.heartbeat_timeout_seconds;
  // Heartbeats on the control overlay: a silent member is found by its
  // fingers, whose abort frame tells everyone, naming it.
  gc.heartbeat_peers = Fingers(rank_, size_);
  gc.forming = true;  // until the link probe is done (Formed())
  gc.recorder = recorder_;
  gc.report.flight_dir = settings_.flight_recorder_dir;
  gc.report.termination_log = settings_.termination_log;
  std::vector<int> control(size_, -1);
  for (int p = 0; p < size_; ++p) std::swap(control[p], mesh->conns[p][0]);
  auto group = std::make_shared<Group>(std::move(gc), std::move(control));
  // The data connections formation did not make open when first needed
  // (docs/engine.md, "Connections at scale"): the higher rank dials, our
  // acceptor takes the others'.
  FormationTransports wiring(*mesh, MeshView{&key_, incarnation_, rank_, size_, mc.channels}, &refusals_,
                             *group, names_);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int s = 0; s < settings_.streams; ++s) transports.push_back(wiring.On(s + 1));
  // What the links are like, for AUTO (link_model.h): on the first data
  // stream, before any collective, within the formation's timeout.
  LinkModel link;
  // The control overlay is watched from now on: a member connects its
  // fingers only, so it may finish its part of a round that others have
  // left (a member of it died): a finger's closed control connection, or
  // the abort it floods, then stops the probe here, and everyone takes the
  // next round (no report: the group is not formed yet).
  group->StartMonitor();
  const auto probe_start = Clock::now();
  if (Status st = ProbeLinks(*transports[0], until, &link); !st.ok()) {
    const StatusCode code = st.code() == StatusCode::kUnavailable ? StatusCode::kAborted : st.code();
    return Status(code, "measuring the links after formation: " + st.message());
  }
  group->SetLink(link);
  if (link.known() && DebugLogEnabled()) {
    char line[200];
    std::snprintf(
        line, sizeof line, "links: %.1f us per step, %.3f Gbit/s, reduce %.2f GB/s (probe took %.2f ms)",
        link.alpha_s * 1e6, 8e-9 / link.beta_s_per_byte, 1e-9 / std::max(link.gamma_s_per_byte, 1e-15),
        std::chrono::duration<double, std::milli>(Clock::now() - probe_start).count());
    DebugLog(line);
  }
  // The GPU's slot: its calls may wait long on the GPU, and no host
  // collective waits behind them (its channel connects on first use).
  transports.push_back(wiring.On(settings_.streams + 2));
  Executor::Options options;
  options.reserved = 1;
  auto executor = std::make_shared<Executor>(group, std::move(transports), std::move(options));
  std::vector<std::unique_ptr<Transport>> set_transport;
  set_transport.push_back(wiring.On(settings_.streams + 1));
  Executor::Options set_options;
  set_options.recorder = set_recorder_;
  set_options.exchange = false;
  auto set_executor = std::make_shared<Executor>(group, std::move(set_transport), std::move(set_options));
  group->Formed();  // failures are reported from now on
  {
    std::lock_guard<std::mutex> lock(mu_);
    executor_ = std::move(executor);
    set_executor_ = std::move(set_executor);
    acceptor_ = wiring.acceptor();
  }
  bootstrap_->Publish(incarnation_, OkStatus());
  return OkStatus();
}

std::shared_ptr<Executor> CommunicatorImpl::executor() const {
  if (parent_) {
    std::lock_guard<std::mutex> lock(parent_->mu_);
    if (parent_->formation_ != formation_) return nullptr;
    return parent_->set_executor_;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return executor_;
}

Status CommunicatorImpl::NotFormed() const {
  if (parent_ && parent_->formation_ != formation_) {
    return FailedPreconditionError("process set " + std::to_string(set_id_) +
                                   ": the group re-formed since the set was added; add it again");
  }
  return AbortedError("the group is not formed; call Reform()");
}

void CommunicatorImpl::Stop(bool destroyed) {
  std::shared_ptr<Executor> ex, set_ex;
  std::shared_ptr<DataAcceptor> acceptor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ex = std::move(executor_);
    set_ex = std::move(set_executor_);
    acceptor = std::move(acceptor_);
  }
  if (!ex) return;
  // Queued collectives fail fast; running ones are woken by the abort fd.
  ex->group()->Stopping(destroyed);
  ex->Stop();
  if (set_ex) set_ex->Stop();
  if (acceptor) acceptor->Stop();  // its thread logs refusals in ours, which the transports may outlive
  ex->group()->Close(/*goodbye=*/destroyed);
}

Status CommunicatorImpl::StartTimeline(const std::string& path) {
  if (parent_) return parent_->StartTimeline(path);
  auto t = Timeline::Open(path, rank_, names_[rank_]);
  if (!t.ok()) return t.status();
  std::lock_guard<std::mutex> lock(timeline_mu_);
  if (timeline_) (void)timeline_->Close();
  timeline_ = *t;
  recorder_->SetTimeline(timeline_, 0);
  set_recorder_->SetTimeline(timeline_, 1);
  return OkStatus();
}

Status CommunicatorImpl::StopTimeline() {
  if (parent_) return parent_->StopTimeline();
  std::shared_ptr<Timeline> t;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    t = std::move(timeline_);
    recorder_->SetTimeline(nullptr, 0);
    set_recorder_->SetTimeline(nullptr, 1);
  }
  return t ? t->Close() : OkStatus();
}

Status CommunicatorImpl::Health() {
  if (parent_) return parent_->Health();
  auto ex = executor();
  if (!ex) return AbortedError("the group is not formed");
  return ex->group()->AbortStatus();
}

void CommunicatorImpl::Abort(const std::string& reason) {
  if (parent_) return parent_->Abort(reason);  // one group: a set's abort is the group's
  if (auto ex = executor()) ex->group()->AbortRequested(reason);
  if (bootstrap_) bootstrap_->Publish(incarnation_, AbortedError(reason));
}

Status CommunicatorImpl::Reform() {
  if (parent_) {
    return FailedPreconditionError("process set " + std::to_string(set_id_) +
                                   ": reform the whole group, then add the process set again");
  }
  if (auto ex = executor()) ex->group()->ReformRequested();
  Stop(/*destroyed=*/false);
  return Form();
}

int CommunicatorImpl::Joiners() const {
  if (parent_) return parent_->Joiners();
  return bootstrap_ && config_rank_ == 0 ? bootstrap_->Waiting() : 0;
}

StatusOr<int> CommunicatorImpl::AgreeOnJoiners() {
  if (parent_) {
    return FailedPreconditionError("process set " + std::to_string(set_id_) +
                                   ": membership is the whole group's; agree on it there");
  }
  // Without an elastic size nobody waits while the group is whole (a
  // member that comes back finds it broken and re-forming): no collective
  // per commit. Every member has the same settings, so all skip alike.
  if (settings_.min_size == 0) return 0;
  int64_t joiners = Joiners();
  Tensor t{&joiners, 1, DataType::kInt64};
  auto ex = executor();
  if (Status st = BroadcastAsync({&t, 1}, 0, CommunicationOptions()).Wait(); !st.ok()) {
    // The leader finishes its broadcast first and may be re-forming already
    // when ours is cut short: it re-forms for a joiner, and so do we.
    if (ex && ex->group()->PeerReformed()) return 1;
    return Status(st.code(), "agreeing who joins: " + st.message());
  }
  return static_cast<int>(joiners);
}

StatusOr<ResumePoint> CommunicatorImpl::AgreeOnResume(int64_t committed_step) {
  if (parent_) {
    return FailedPreconditionError("process set " + std::to_string(set_id_) +
                                   ": recovery is the whole group's; agree on it there");
  }
  std::vector<int64_t> all(static_cast<size_t>(size_));
  int64_t mine = committed_step;
  CommunicationOptions o;
  Tensor in{&mine, 1, DataType::kInt64}, out{all.data(), static_cast<int64_t>(all.size()), DataType::kInt64};
  if (Status st = AllGatherAsync(in, out, o).Wait(); !st.ok()) {
    return Status(st.code(), "agreeing where to resume: " + st.message());
  }
  auto d = DecideResume(all, names_);
  if (!d.ok()) return d.status();
  if (d->point.step != kNoState) {
    Info(names_[rank_] + ": " + DescribeResume(*d, names_));
  }
  return d->point;
}

}  // namespace ringmaster::internal
