// The all-reduce in two ops, for gradient buckets inside a graph:
//
//   RingmasterAllReduceStart  tensors -> (started, handle): agrees with the
//                             other members, hands the call to the engine and
//                             returns. `started` are the output buffers the
//                             engine is writing; only the Wait may read them.
//   RingmasterAllReduceWait   (started, handle) -> reduced: completes when the
//                             engine is done (asynchronously), its outputs the
//                             same buffers.
//
// Why two: TensorFlow runs the stateful ops of a function in program order,
// each after the previous one has finished. With one op per bucket, bucket
// k + 1 reaches the engine only after bucket k is reduced, so the link
// idles while the next bucket agrees and starts. Start is stateful and
// ordered (every rank submits the buckets in the same order, the rule the
// engine needs); Wait is not, so nothing waits on it but the values it
// produces: bucket k + 1 is queued behind bucket k while bucket k is on the
// wire, and bucket k's weight updates start when it is done.
//
// The handle is a scalar DT_VARIANT holding the call's shared state; the
// state keeps the inputs and outputs alive until the engine is done, even
// when no Wait ever runs (a step that failed elsewhere). Host memory only:
// with a GPU visible the Python face keeps one RingmasterAllReduce per
// bucket (its GPU kernel).
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "allreduce_call.h"
#include "common.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/variant.h"
#include "tensorflow/core/framework/variant_tensor_data.h"
#include "tensorflow/core/lib/core/threadpool.h"

namespace ringmaster_tf {
namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernel;
using tensorflow::Variant;
using tensorflow::shape_inference::InferenceContext;

// One started call: what its Start handed to the engine, the engine's
// verdict once it is done, and the Wait that is waiting for it.
class Pending {
 public:
  EngineCall engine;         // the engine's view of the buffers
  std::vector<Tensor> keep;  // inputs and outputs, alive until the engine is done
  double postscale = 1.0;    // applied by the Wait

  // Once, when the engine is done (on its thread, or on the Start's).
  void Finish(absl::Status status) {
    std::function<void()> waiter;
    std::vector<Tensor> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      status_ = std::move(status);
      waiter = std::move(waiter_);
      release.swap(keep);
    }
    if (waiter) waiter();
  }

  // fn(status) once the call is done: now, on this thread, if it is, else
  // on `workers` (TensorFlow's threads) when the engine is done.
  void Then(tensorflow::thread::ThreadPool* workers, std::function<void(absl::Status)> fn) {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) {
      absl::Status s = status_;
      lock.unlock();
      fn(std::move(s));
      return;
    }
    waiter_ = [this, workers, fn = std::move(fn)]() mutable {
      auto run = [this, fn = std::move(fn)]() { fn(status_); };  // status_ is final once finished_
      if (workers) {
        workers->Schedule(std::move(run));
      } else {
        run();
      }
    };
  }

 private:
  std::mutex mu_;
  bool finished_ = false;
  absl::Status status_;
  std::function<void()> waiter_;
};

// The handle's value in its DT_VARIANT tensor. It never leaves the process
// (Encode writes nothing; Decode refuses).
struct PendingHandle {
  std::shared_ptr<Pending> pending;

  std::string TypeName() const { return "ringmaster.PendingAllReduce"; }
  void Encode(tensorflow::VariantTensorData* /*data*/) const {}
  bool Decode(tensorflow::VariantTensorData /*data*/) { return false; }
  std::string DebugString() const { return "ringmaster.PendingAllReduce"; }
};

// On the engine's thread: arg owns a reference to the call's state.
void EngineDone(void* arg, int code, const char* message) {
  std::unique_ptr<std::shared_ptr<Pending>> ref(static_cast<std::shared_ptr<Pending>*>(arg));
  (*ref)->Finish(FromCode(code, message ? message : ""));
}

class AllReduceStartOp : public OpKernel {
 public:
  explicit AllReduceStartOp(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, attrs_.Read(c, /*on_gpu=*/false));
  }

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    Tensor* handle = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(n, TensorShape({}), &handle));
    auto pending = std::make_shared<Pending>();
    handle->scalar<Variant>()() = PendingHandle{pending};
    OP_REQUIRES_OK(ctx, BeginAllReduce(ctx, attrs_, &pending->engine));
    rm_handle* started = pending->engine.handle;
    if (!started) {  // done already (small, or nothing to reduce)
      pending->Finish(absl::OkStatus());
      return;
    }
    pending->postscale = attrs_.postscale;
    for (int i = 0; i < n; ++i) {
      pending->keep.push_back(ctx->input(i));
      pending->keep.push_back(*ctx->mutable_output(i));
    }
    auto* ref = new std::shared_ptr<Pending>(pending);
    if (int rc = rm_handle_then(started, &EngineDone, ref); rc != RM_OK) {
      // Only for a NULL handle or callback, which cannot happen here.
      delete ref;
      pending->Finish(LastError(rc));
    }
  }

 private:
  AllReduceAttrs attrs_;
};

class AllReduceWaitOp : public AsyncOpKernel {
 public:
  explicit AllReduceWaitOp(OpKernelConstruction* c) : AsyncOpKernel(c) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const int n = ctx->num_outputs();
    const Tensor& handle = ctx->input(n);
    const PendingHandle* h = handle.dims() == 0 ? handle.scalar<Variant>()().get<PendingHandle>() : nullptr;
    OP_REQUIRES_ASYNC(ctx, h != nullptr && h->pending != nullptr,
                      absl::InvalidArgumentError(
                          "RingmasterAllReduceWait: handle: not the handle of a RingmasterAllReduceStart"),
                      done);
    for (int i = 0; i < n; ++i) ctx->set_output(i, ctx->input(i));
    std::shared_ptr<Pending> pending = h->pending;
    auto* threads = ctx->device()->tensorflow_cpu_worker_threads();
    pending->Then(threads ? threads->workers : nullptr,
                  [ctx, done = std::move(done), pending](absl::Status s) {
                    if (s.ok() && pending->postscale != 1.0)
                      s = ScaleOutputs(ctx, ctx->num_outputs(), pending->postscale);
                    if (!s.ok()) ctx->SetStatus(s);
                    done();
                  });
  }
};

REGISTER_OP("RingmasterAllReduceStart")
    .Input("tensors: T")
    .Output("started: T")
    .Output("handle: variant")
    .Attr("T: list(" + OpTypes(/*with_bool=*/false) + ") >= 1")
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
      c->set_output(c->num_inputs(), c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The first half of RingmasterAllReduce (same attributes): agrees, hands the
call to the engine and returns. `started` must go to RingmasterAllReduceWait
with `handle` and nowhere else: the engine writes it until the Wait ends.
)doc");

REGISTER_OP("RingmasterAllReduceWait")
    .Input("started: T")
    .Input("handle: variant")
    .Output("reduced: T")
    .Attr("T: list(" + OpTypes(/*with_bool=*/false) + ") >= 1")
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The second half of RingmasterAllReduce: `started` once the engine is done
(postscaled), or the call's error. Not stateful: only its outputs wait for it.
)doc");

REGISTER_KERNEL_BUILDER(Name("RingmasterAllReduceStart").Device(tensorflow::DEVICE_CPU), AllReduceStartOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterAllReduceWait").Device(tensorflow::DEVICE_CPU), AllReduceWaitOp);

}  // namespace
}  // namespace ringmaster_tf
