// TensorFlow ops over Ringmaster's collective engine (the C API of
// libringmaster, ringmaster/ringmaster.h): the all-reduce and the broadcast.
// The gathers, all-to-all, reduce-scatter and barrier are in gather_ops.cc,
// join in join.cc; the agreement they all reach first in agreement.h, what
// else they share (options, scaling) in common.h.
//
//   RingmasterAllReduce  a list of tensors -> the same list, reduced across
//                        every rank of the group, in ONE engine call (so the
//                        engine packs them by bytes_per_pack). Asynchronous:
//                        once the members agree (agreement.h), the kernel
//                        returns and the engine's thread signals completion.
//   RingmasterBroadcast  a list of tensors -> root_rank's values on every rank.
//
// The all-reduce has a GPU kernel too (AllReduceGpuOp): GPU tensors stay on
// the device; the engine waits for TensorFlow's stream through an event and
// reduces with NCCL (or stages through the host). It is compiled on every
// build (it needs only TensorFlow's headers) and registered for DEVICE_GPU,
// which a CPU-only TensorFlow never uses; docs/gpu.md says where it ran.
// The other ops are CPU kernels: TensorFlow copies GPU tensors to the host
// and back around them.
//
// The group is the process default communicator (rm_default_communicator),
// which the Python package sets in ringmaster.init(). Status codes of the
// engine are gRPC's, which are TensorFlow's error codes, so they map 1:1
// (DeadlineExceeded, Unavailable, Aborted, ...). The ops are marked as
// distributed communication: TensorFlow replaces Unavailable from any other
// op with Internal.
#include <memory>
#include <string>
#include <vector>

#include "agreement.h"
#include "common.h"
#include "tensorflow/core/framework/device_base.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/lib/core/threadpool.h"
#include "tensorflow/core/public/version.h"
#include "xla/stream_executor/device_memory.h"
#include "xla/stream_executor/stream.h"

namespace ringmaster_tf {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernel;
using tensorflow::shape_inference::InferenceContext;

// Outputs alias their inputs when TensorFlow lets us (the result is written
// in place). Else, with `sources`, the input is named as the engine's
// source for that output (the engine reads it on its own threads, so the
// copy overlaps the packs already on the wire); without, it is copied into
// the fresh output here. With a prescale factor the output gets the scaled
// input (and is reduced in place). Fills `ts` with the non-empty outputs
// (every rank has the same shapes, so every rank skips the same ones).
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

std::vector<const Tensor*> Inputs(OpKernelContext* ctx) {
  std::vector<const Tensor*> v;
  for (int i = 0; i < ctx->num_inputs(); ++i) v.push_back(&ctx->input(i));
  return v;
}

void SameShapes(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
}

class AllReduceOp : public AsyncOpKernel {
 public:
  // gpu: the tensors are in GPU memory (AllReduceGpuOp).
  explicit AllReduceOp(OpKernelConstruction* c, bool gpu = false) : AsyncOpKernel(c), gpu_(gpu) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &horovod_op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
    OP_REQUIRES_OK(c, ReadOptions(c, &options_));
    OP_REQUIRES_OK(c, ReadProcessSet(c, &process_set_id_));
    OP_REQUIRES_OK(c, ReadErrorStyle(c, &errors_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, Communicator(process_set_id_, &comm), done);
    rm_reduce_op op = RM_SUM;
    const std::vector<const Tensor*> inputs = Inputs(ctx);
    Proposal mine = Propose(RM_COLLECTIVE_ALL_REDUCE, inputs);
    mine.reduce_op = horovod_op_;
    mine.prescale_bits = Bits(prescale_);
    mine.postscale_bits = Bits(postscale_);
    absl::Status local = ToRmReduceOp(horovod_op_, &op);
    if (local.ok() && gpu_ && (prescale_ != 1.f || postscale_ != 1.f)) {
      // The Python face places such calls on the CPU; a graph built by hand may not.
      local = absl::UnimplementedError(
          "RingmasterAllReduce on GPU tensors: prescale_factor and postscale_factor are not supported on the "
          "GPU yet (place the op on the CPU)");
    }
    if (!gpu_ && DataBytes(inputs) <= Proposal::kInlineBytes) {
      // Small: the agreement carries the data, and the call ends here.
      OP_REQUIRES_OK_ASYNC(ctx, AllReduceSmall(ctx, comm, mine, local, op, inputs), done);
      done();
      return;
    }
    // Members that have joined stand in with zeros for host tensors (join.cc).
    OP_REQUIRES_OK_ASYNC(ctx, Agree(comm, mine, local, options_, gpu_ ? nullptr : &inputs, errors_), done);
    auto call = std::make_unique<Call>();
    call->ctx = ctx;
    call->done = std::move(done);
    call->postscale = postscale_;
    void* stream = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx,
                         gpu_ ? PrepareDeviceOutputs(ctx, &call->tensors, &call->sources, &stream)
                              : PrepareOutputs(ctx, &call->tensors, &call->sources, prescale_),
                         call->done);
    if (call->tensors.empty()) {
      call->done();
      return;
    }
    rm_handle* handle = nullptr;
    // The inputs stay alive until done(): the engine may read them until then.
    int rc = gpu_ ? rm_allreduce_async_on_stream_from(comm, call->sources.data(), call->tensors.data(),
                                                      call->tensors.size(), op, &options_, stream, &handle)
                  : rm_allreduce_async_from(comm, call->sources.data(), call->tensors.data(),
                                            call->tensors.size(), op, &options_, &handle);
    if (rc != RM_OK) {
      ctx->SetStatus(LastError(rc));
      call->done();
      return;
    }
    Call* raw = call.release();
    rc = rm_handle_then(handle, &AllReduceOp::Finished, raw);
    if (rc != RM_OK) {
      // Only for a NULL handle or callback, which cannot happen here.
      std::unique_ptr<Call> owned(raw);
      owned->ctx->SetStatus(LastError(rc));
      owned->done();
    }
  }

 private:
  static int64_t DataBytes(const std::vector<const Tensor*>& tensors) {
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
  absl::Status AllReduceSmall(OpKernelContext* ctx, rm_communicator* comm, const Proposal& mine,
                              absl::Status local, rm_reduce_op op, const std::vector<const Tensor*>& inputs) {
    std::vector<rm_tensor> ts;
    if (local.ok()) local = PrepareOutputs(ctx, &ts, nullptr, prescale_);
    char payload[Proposal::kInlineBytes];
    std::vector<size_t> lens;  // per tensor of ts (the non-empty outputs, in order)
    size_t bytes = 0;
    for (int i = 0; local.ok() && i < ctx->num_outputs(); ++i) {
      const auto data = ctx->mutable_output(i)->tensor_data();
      if (data.empty()) continue;
      std::memcpy(payload + bytes, data.data(), data.size());
      lens.push_back(data.size());
      bytes += data.size();
    }
    std::vector<int64_t> records;
    bool joined = false;
    TF_RETURN_IF_ERROR(
        Agree(comm, mine, local, options_, &inputs, errors_, {payload, bytes, &records, &joined}));
    if (joined) {
      if (!ts.empty()) TF_RETURN_IF_ERROR(LastError(rm_allreduce(comm, ts.data(), ts.size(), op, &options_)));
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
    if (postscale_ != 1.f) {
      for (int i = 0; i < ctx->num_outputs(); ++i) {
        Tensor* out = ctx->mutable_output(i);
        TF_RETURN_IF_ERROR(Scale(*out, out, postscale_));
      }
    }
    return absl::OkStatus();
  }

  struct Call {
    OpKernelContext* ctx = nullptr;
    DoneCallback done;
    std::vector<rm_tensor> tensors;
    std::vector<const void*> sources;  // per tensor: its input, or null (in place)
    double postscale = 1.0;
  };

  // On the engine's thread: only hand the completion to a TensorFlow thread.
  static void Finished(void* arg, int code, const char* message) {
    Call* call = static_cast<Call*>(arg);
    std::string msg = message ? message : "";
    auto finish = [call, code, msg]() {
      std::unique_ptr<Call> owned(call);
      OpKernelContext* ctx = owned->ctx;
      if (code != RM_OK) {
        ctx->SetStatus(FromCode(code, msg));
      } else if (owned->postscale != 1.0) {
        for (int i = 0; i < ctx->num_outputs(); ++i) {
          Tensor* out = ctx->mutable_output(i);
          absl::Status s = Scale(*out, out, owned->postscale);
          if (!s.ok()) ctx->SetStatus(s);
        }
      }
      owned->done();
    };
    auto* threads = call->ctx->device()->tensorflow_cpu_worker_threads();
    if (threads && threads->workers) {
      threads->workers->Schedule(std::move(finish));
    } else {
      finish();
    }
  }

  bool gpu_ = false;
  int horovod_op_ = 1;
  float prescale_ = 1.f, postscale_ = 1.f;
  rm_options options_;
  int process_set_id_ = 0;
  ErrorStyle errors_ = ErrorStyle::kHorovod;
};

class BroadcastOp : public OpKernel {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_));
    OP_REQUIRES_OK(c, ReadOptions(c, &options_));
    OP_REQUIRES_OK(c, ReadProcessSet(c, &process_set_id_));
  }

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    const int size = rm_size(comm);
    absl::Status local = absl::OkStatus();
    if (root_ < 0 || root_ >= size)
      local = absl::InvalidArgumentError("root_rank: must be in [0, " + std::to_string(size) + "), got " +
                                         std::to_string(root_));
    Proposal mine = Propose(RM_COLLECTIVE_BROADCAST, Inputs(ctx));
    mine.root = root_;
    OP_REQUIRES_OK(ctx, Agree(comm, mine, local, options_));
    std::vector<rm_tensor> ts;
    OP_REQUIRES_OK(ctx, PrepareOutputs(ctx, &ts, nullptr, 1.0));
    if (ts.empty()) return;
    OP_REQUIRES_OK(ctx, LastError(rm_broadcast(comm, ts.data(), ts.size(), root_, &options_)));
  }

 private:
  int root_ = 0;
  rm_options options_;
  int process_set_id_ = 0;
};

REGISTER_OP("RingmasterAllReduce")
    .Input("tensors: T")
    .Output("reduced: T")
    .Attr("T: list(" + OpTypes(/*with_bool=*/false) + ") >= 1")
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()  // else TF turns our UnavailableError into InternalError
    .SetShapeFn([](InferenceContext* c) {
      SameShapes(c);
      return absl::OkStatus();
    })
    .Doc(R"doc(
All-reduces every tensor of the list across the Ringmaster group in one call
(packed by bytes_per_pack). reduce_op: Horovod's values (0 Average, 1 Sum,
3 Min, 4 Max, 5 Product). bytes_per_pack 0, timeout_seconds < 0 and
implementation 0 (AUTO) keep the job's defaults; implementation 1 = RING,
2 = NCCL.
)doc");

REGISTER_OP("RingmasterBroadcast")
    .Input("tensors: T")
    .Output("broadcast: T")
    .Attr("T: list(" + OpTypes(/*with_bool=*/true) + ") >= 1")
    .Attr("root_rank: int = 0")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) {
      SameShapes(c);
      return absl::OkStatus();
    })
    .Doc(R"doc(
Every rank gets root_rank's values of the tensors (one call for the list).
)doc");

// GPU tensors stay on the device (registered in every build; a CPU-only
// TensorFlow has no GPU device to place it on).
class AllReduceGpuOp : public AllReduceOp {
 public:
  explicit AllReduceGpuOp(OpKernelConstruction* c) : AllReduceOp(c, /*gpu=*/true) {}
};

REGISTER_KERNEL_BUILDER(Name("RingmasterAllReduce").Device(tensorflow::DEVICE_CPU), AllReduceOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterAllReduce").Device(tensorflow::DEVICE_GPU), AllReduceGpuOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterBroadcast").Device(tensorflow::DEVICE_CPU), BroadcastOp);

}  // namespace ringmaster_tf
