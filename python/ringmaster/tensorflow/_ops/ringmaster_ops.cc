// TensorFlow ops over Ringmaster's collective engine (the C API of
// libringmaster, ringmaster/ringmaster.h): the all-reduce and the broadcast.
// The gathers, all-to-all, reduce-scatter and barrier are in gather_ops.cc,
// join in join.cc, the all-reduce split in two for gradient buckets
// (RingmasterAllReduceStart/Wait) in allreduce_start_wait.cc; the agreement
// they all reach first in agreement.h, the all-reduce's call up to the
// engine in allreduce_call.h, what else they share (options, scaling) in
// common.h.
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
#include "allreduce_call.h"
#include "common.h"
#include "tensorflow/core/framework/device_base.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/lib/core/threadpool.h"
#include "tensorflow/core/public/version.h"

namespace ringmaster_tf {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernel;
using tensorflow::shape_inference::InferenceContext;

void SameShapes(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
}

class AllReduceOp : public AsyncOpKernel {
 public:
  // gpu: the tensors are in GPU memory (AllReduceGpuOp).
  explicit AllReduceOp(OpKernelConstruction* c, bool gpu = false) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, attrs_.Read(c, gpu));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto call = std::make_unique<Call>();
    OP_REQUIRES_OK_ASYNC(ctx, BeginAllReduce(ctx, attrs_, &call->engine), done);
    if (!call->engine.handle) {
      done();
      return;
    }
    call->ctx = ctx;
    call->done = std::move(done);
    call->postscale = attrs_.postscale;
    rm_handle* handle = call->engine.handle;
    Call* raw = call.release();
    if (int rc = rm_handle_then(handle, &AllReduceOp::Finished, raw); rc != RM_OK) {
      // Only for a NULL handle or callback, which cannot happen here.
      std::unique_ptr<Call> owned(raw);
      owned->ctx->SetStatus(LastError(rc));
      owned->done();
    }
  }

 private:
  struct Call {
    OpKernelContext* ctx = nullptr;
    DoneCallback done;
    EngineCall engine;
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
        ctx->SetStatus(ScaleOutputs(ctx, ctx->num_outputs(), owned->postscale));
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

  AllReduceAttrs attrs_;
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
