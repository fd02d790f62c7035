// The public Communicator: a thin facade over the engine (communicator_impl.h).
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/kernels.h"
#include "communicator_impl.h"

namespace ringmaster {

using internal::CommunicatorImpl;

Communicator::Communicator(std::unique_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

StatusOr<std::unique_ptr<Communicator>> Communicator::Create(const CommunicatorSettings& settings) {
  auto impl = std::make_unique<CommunicatorImpl>(settings);
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
  return impl_->BroadcastAsync(tensors, root, options).Wait();
}
Status Communicator::AllGather(const Tensor& input, const Tensor& output,
                               const CommunicationOptions& options) {
  return impl_->AllGatherAsync(input, output, options).Wait();
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
  RM_RETURN_IF_ERROR(internal::CheckOp(op));
  RM_RETURN_IF_ERROR(internal::CheckDType(value.dtype, "value.dtype"));
  RM_RETURN_IF_ERROR(internal::CheckReducible("reduce", {&value, 1}));
  if (output.dtype != value.dtype) return InvalidArgumentError("output.dtype must equal value.dtype");
  int64_t elems = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgumentError("shape: dimensions must be >= 0");
    elems *= d;
  }
  if (elems != value.count) {
    return InvalidArgumentError("value.count " + std::to_string(value.count) + " does not match shape (" +
                                std::to_string(elems) + " elements)");
  }
  if (value.memory != MemoryKind::kHost || output.memory != MemoryKind::kHost) {
    return UnimplementedError("Reduce: GPU memory is not supported yet (AllReduce takes GPU tensors)");
  }
  if (!axis) {
    if (output.count != value.count)
      return InvalidArgumentError("output.count must equal value.count without axis");
    if (output.data != value.data && value.count > 0) std::memmove(output.data, value.data, value.bytes());
    Tensor t = output;
    return AllReduce({&t, 1}, op, options);
  }
  int64_t len = 0;
  RM_RETURN_IF_ERROR(internal::ReduceAlongAxis(op, value, shape, *axis, output, &len));
  Tensor t = output;
  if (op != ReduceOp::kMean) return AllReduce({&t, 1}, op, options);
  // MEAN: divide the global sum by the global element count along the axis.
  int64_t n = len;
  Tensor parts[2] = {t, Tensor{&n, 1, DataType::kInt64}};
  RM_RETURN_IF_ERROR(AllReduce(parts, ReduceOp::kSum, options));
  if (n == 0) {
    if (value.dtype != DataType::kFloat16 && value.dtype != DataType::kBFloat16 &&
        value.dtype != DataType::kFloat32 && value.dtype != DataType::kFloat64) {  // integers: 0 / 0
      return FailedPreconditionError("Reduce: MEAN over an empty axis on every member");
    }
  }
  internal::DivideBy(value.dtype, output.data, static_cast<size_t>(output.count), n);
  return OkStatus();
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
