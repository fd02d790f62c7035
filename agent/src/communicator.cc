// The public Communicator: a thin facade over the engine (communicator_impl.h).
#include "communicator_impl.h"

namespace ringmaster {

using internal::CommunicatorImpl;

Communicator::Communicator(std::unique_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

StatusOr<std::unique_ptr<Communicator>> Communicator::Create(const CommunicatorSettings& settings) {
  return internal::CommunicatorAccess::Create(settings, {});
}

StatusOr<std::unique_ptr<Communicator>> internal::CommunicatorAccess::Create(
    const CommunicatorSettings& settings, Formation formation) {
  auto impl = std::make_unique<CommunicatorImpl>(settings, std::move(formation));
  RM_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

StatusOr<std::unique_ptr<Communicator>> Communicator::FromEnvironment() {
  auto s = CommunicatorSettings::FromEnvironment();
  if (!s.ok()) return s.status();
  return Create(*s);
}

StatusOr<std::unique_ptr<Communicator>> Communicator::AddProcessSet(int id, std::span<const int> ranks) {
  auto impl = impl_->AddProcessSet(id, ranks);
  if (!impl.ok()) return impl.status();
  if (!*impl) return std::unique_ptr<Communicator>();
  return std::unique_ptr<Communicator>(new Communicator(std::move(*impl)));
}

Status Communicator::StartTimeline(const std::string& path) {
  return impl_->StartTimeline(path);
}
Status Communicator::StopTimeline() {
  return impl_->StopTimeline();
}

int Communicator::process_set_id() const {
  return impl_->process_set_id();
}

int Communicator::rank() const {
  return impl_->rank();
}
int Communicator::size() const {
  return impl_->size();
}
std::string Communicator::TaskName(int r) const {
  return r >= 0 && r < impl_->size() ? impl_->name(r) : std::string("(no such rank)");
}

Status Communicator::AllReduce(std::span<const Tensor> tensors, ReduceOp op,
                               const CommunicationOptions& options) {
  return impl_->AllReduceAsync(tensors, op, options, /*sync=*/true).Wait();
}
CollectiveHandle Communicator::AllReduceAsync(std::span<const Tensor> tensors, ReduceOp op,
                                              const CommunicationOptions& options) {
  return impl_->AllReduceAsync(tensors, op, options);
}
Status Communicator::Broadcast(std::span<const Tensor> tensors, int root,
                               const CommunicationOptions& options) {
  return impl_->BroadcastAsync(tensors, root, options, /*sync=*/true).Wait();
}
Status Communicator::AllGather(const Tensor& input, const Tensor& output,
                               const CommunicationOptions& options) {
  return impl_->AllGatherAsync(input, output, options, /*sync=*/true).Wait();
}
Status Communicator::AllGatherV(const Tensor& input, std::span<const int64_t> counts, const Tensor& output,
                                const CommunicationOptions& options) {
  return impl_->AllGatherVAsync(input, counts, output, options).Wait();
}
Status Communicator::AllToAll(const Tensor& input, std::span<const int64_t> send_counts, const Tensor& output,
                              std::span<const int64_t> recv_counts, const CommunicationOptions& options) {
  return impl_->AllToAllAsync(input, send_counts, output, recv_counts, options).Wait();
}
Status Communicator::ReduceScatter(const Tensor& input, std::span<const int64_t> counts, const Tensor& output,
                                   ReduceOp op, const CommunicationOptions& options) {
  return impl_->ReduceScatterAsync(input, counts, output, op, options).Wait();
}
Status Communicator::Barrier(const CommunicationOptions& options) {
  return impl_->BarrierAsync(options, /*sync=*/true).Wait();
}

Status Communicator::Reduce(ReduceOp op, const Tensor& value, std::span<const int64_t> shape,
                            std::optional<int> axis, const Tensor& output,
                            const CommunicationOptions& options) {
  return impl_->Reduce(op, value, shape, axis, output, options);
}

void Communicator::Abort(const std::string& reason) {
  impl_->Abort(reason);
}
Status Communicator::health() const {
  return impl_->Health();
}
Status Communicator::Reform() {
  return impl_->Reform();
}
StatusOr<ResumePoint> Communicator::AgreeOnResume(int64_t committed_step) {
  return impl_->AgreeOnResume(committed_step);
}

StatusOr<int> Communicator::AgreeOnJoiners() {
  return impl_->AgreeOnJoiners();
}

}  // namespace ringmaster
