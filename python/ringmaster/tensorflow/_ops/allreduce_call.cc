// One all-reduce call of a kernel, as far as handing it to the engine
// (allreduce_call.h): the agreement, the outputs, the small calls that the
// agreement itself completes, and the engine's asynchronous call.
#include "allreduce_call.h"

#include <cstring>
#include <vector>

#include "agreement.h"
#include "tensorflow/core/framework/device_base.h"
#include "xla/stream_executor/device_memory.h"
#include "xla/stream_executor/stream.h"

namespace ringmaster_tf {

absl::Status PrepareOutputs(OpKernelContext* ctx, std::vector<rm_tensor>* ts,
                            std::vector<const void*>* sources, double prescale) {
  const int n = ctx->num_inputs();
  ts->clear();
  ts->reserve(n);
  if (sources) sources->clear();
  for (int i = 0; i < n; ++i) {
    const Tensor& in = ctx->input(i);
    Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({i}, i, in.shape(), &out));
    if (in.NumElements() == 0) continue;
    auto src = in.tensor_data();
    char* dst = const_cast<char*>(out->tensor_data().data());
    if (prescale != 1.0) {
      TF_RETURN_IF_ERROR(Scale(in, out, prescale));
      if (sources) sources->push_back(nullptr);
    } else if (sources) {
      sources->push_back(dst != src.data() ? src.data() : nullptr);
    } else if (dst != src.data()) {
      std::memcpy(dst, src.data(), src.size());
    }
    ts->push_back(View(*out));
  }
  return absl::OkStatus();
}

std::vector<const Tensor*> Inputs(OpKernelContext* ctx) {
  std::vector<const Tensor*> v;
  for (int i = 0; i < ctx->num_inputs(); ++i) v.push_back(&ctx->input(i));
  return v;
}

namespace {

// GPU tensors: outputs alias their inputs when TensorFlow lets us; else the
// input is named as the engine's source for its fresh output (the engine
// reads it on its own stream, after TensorFlow's, which it waits for:
// rm_allreduce_async_on_stream_from), so nothing here copies or blocks.
// *stream: TensorFlow's cudaStream_t for this kernel.
absl::Status PrepareDeviceOutputs(OpKernelContext* ctx, std::vector<rm_tensor>* ts,
                                  std::vector<const void*>* sources, void** stream) {
  tensorflow::DeviceContext* dc = ctx->op_device_context();
  stream_executor::Stream* s = dc ? dc->stream() : nullptr;
  if (!s)
    return absl::InternalError("RingmasterAllReduce on GPU: TensorFlow gave the kernel no device stream");
  *stream = s->platform_specific_handle().stream;
  ts->clear();
  sources->clear();
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    const Tensor& in = ctx->input(i);
    Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({i}, i, in.shape(), &out));
    if (in.NumElements() == 0) continue;
    auto src = in.tensor_data();
    char* dst = const_cast<char*>(out->tensor_data().data());
    sources->push_back(dst != src.data() ? src.data() : nullptr);
    ts->push_back(View(*out));
  }
  return absl::OkStatus();
}

int64_t DataBytes(const std::vector<const Tensor*>& tensors) {
  int64_t bytes = 0;
  for (const Tensor* t : tensors) bytes += static_cast<int64_t>(t->TotalBytes());
  return bytes;
}

// A host all-reduce of at most Proposal::kInlineBytes, on the kernel's
// thread: the outputs get the (prescaled) inputs, their bytes travel in
// the agreement's record, and every member reduces the gathered values in
// rank order, so every member computes the same bits with no round trip
// beyond the agreement's. With members that have joined it goes on as an
// ordinary all-reduce, which they take part in with zeros.
absl::Status AllReduceSmall(OpKernelContext* ctx, rm_communicator* comm, const AllReduceAttrs& a,
                            const Proposal& mine, absl::Status local, rm_reduce_op op,
                            const std::vector<const Tensor*>& inputs) {
  std::vector<rm_tensor> ts;
  if (local.ok()) local = PrepareOutputs(ctx, &ts, nullptr, a.prescale);
  char payload[Proposal::kInlineBytes];
  std::vector<size_t> lens;  // per tensor of ts (the non-empty outputs, in order)
  size_t bytes = 0;
  for (int i = 0; local.ok() && i < ctx->num_inputs(); ++i) {
    const auto data = ctx->mutable_output(i)->tensor_data();
    if (data.empty()) continue;
    std::memcpy(payload + bytes, data.data(), data.size());
    lens.push_back(data.size());
    bytes += data.size();
  }
  std::vector<int64_t> records;
  bool joined = false;
  TF_RETURN_IF_ERROR(
      Agree(comm, mine, local, a.options, &inputs, a.errors, {payload, bytes, &records, &joined}));
  if (joined) {
    if (!ts.empty()) TF_RETURN_IF_ERROR(LastError(rm_allreduce(comm, ts.data(), ts.size(), op, &a.options)));
  } else {
    const int n = rm_size(comm);
    size_t at = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      const rm_tensor& t = ts[i];
      std::memcpy(t.data, InlineData(records, 0) + at, lens[i]);
      for (int r = 1; r < n; ++r)
        TF_RETURN_IF_ERROR(
            LastError(rm_reduce_local(t.dtype, op, t.data, InlineData(records, r) + at, t.count)));
      if (op == RM_MEAN) TF_RETURN_IF_ERROR(LastError(rm_divide_local(t.dtype, t.data, t.count, n)));
      at += lens[i];
    }
  }
  return a.postscale != 1.f ? ScaleOutputs(ctx, ctx->num_inputs(), a.postscale) : absl::OkStatus();
}

}  // namespace

absl::Status AllReduceAttrs::Read(OpKernelConstruction* c, bool on_gpu) {
  gpu = on_gpu;
  TF_RETURN_IF_ERROR(c->GetAttr("reduce_op", &horovod_op));
  TF_RETURN_IF_ERROR(c->GetAttr("prescale_factor", &prescale));
  TF_RETURN_IF_ERROR(c->GetAttr("postscale_factor", &postscale));
  TF_RETURN_IF_ERROR(ReadOptions(c, &options));
  TF_RETURN_IF_ERROR(ReadProcessSet(c, &process_set_id));
  return ReadErrorStyle(c, &errors);
}

absl::Status ScaleOutputs(OpKernelContext* ctx, int n, double factor) {
  for (int i = 0; i < n; ++i) {
    Tensor* out = ctx->mutable_output(i);
    TF_RETURN_IF_ERROR(Scale(*out, out, factor));
  }
  return absl::OkStatus();
}

absl::Status BeginAllReduce(OpKernelContext* ctx, const AllReduceAttrs& a, EngineCall* call) {
  call->handle = nullptr;
  rm_communicator* comm = nullptr;
  TF_RETURN_IF_ERROR(Communicator(a.process_set_id, &comm));
  rm_reduce_op op = RM_SUM;
  const std::vector<const Tensor*> inputs = Inputs(ctx);
  Proposal mine = Propose(RM_COLLECTIVE_ALL_REDUCE, inputs);
  mine.reduce_op = a.horovod_op;
  mine.prescale_bits = Bits(a.prescale);
  mine.postscale_bits = Bits(a.postscale);
  absl::Status local = ToRmReduceOp(a.horovod_op, &op);
  if (local.ok() && a.gpu && (a.prescale != 1.f || a.postscale != 1.f)) {
    // The Python face places such calls on the CPU; a graph built by hand may not.
    local = absl::UnimplementedError(
        "RingmasterAllReduce on GPU tensors: prescale_factor and postscale_factor are not supported on the "
        "GPU yet (place the op on the CPU)");
  }
  // Small: the agreement carries the data, and the call ends here.
  if (!a.gpu && DataBytes(inputs) <= Proposal::kInlineBytes)
    return AllReduceSmall(ctx, comm, a, mine, local, op, inputs);
  // Members that have joined stand in with zeros for host tensors (join.cc).
  TF_RETURN_IF_ERROR(Agree(comm, mine, local, a.options, a.gpu ? nullptr : &inputs, a.errors));
  void* stream = nullptr;
  TF_RETURN_IF_ERROR(a.gpu ? PrepareDeviceOutputs(ctx, &call->tensors, &call->sources, &stream)
                           : PrepareOutputs(ctx, &call->tensors, &call->sources, a.prescale));
  if (call->tensors.empty()) return absl::OkStatus();
  // The inputs stay alive until the handle completes: the engine may read them until then.
  const int rc =
      a.gpu ? rm_allreduce_async_on_stream_from(comm, call->sources.data(), call->tensors.data(),
                                                call->tensors.size(), op, &a.options, stream, &call->handle)
            : rm_allreduce_async_from(comm, call->sources.data(), call->tensors.data(), call->tensors.size(),
                                      op, &a.options, &call->handle);
  if (rc != RM_OK) {
    call->handle = nullptr;
    return LastError(rc);
  }
  return absl::OkStatus();
}

}  // namespace ringmaster_tf
