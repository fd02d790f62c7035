// One all-reduce call of a kernel, as far as handing it to the engine: its
// attributes, the agreement, its outputs and the engine's asynchronous call.
// Two kernels share it: RingmasterAllReduce (ringmaster_ops.cc), which
// completes when the engine is done, and RingmasterAllReduceStart
// (allreduce_start_wait.cc), which returns once the call is handed over and
// leaves the completion to RingmasterAllReduceWait.
#pragma once

#include <vector>

#include "common.h"

namespace ringmaster_tf {

// The attributes of an all-reduce kernel (the op's, and which device's
// memory its tensors are in).
struct AllReduceAttrs {
  bool gpu = false;    // the tensors are in GPU memory
  int horovod_op = 1;  // Horovod's numbering (ToRmReduceOp)
  float prescale = 1.f, postscale = 1.f;
  rm_options options;
  int process_set_id = 0;
  ErrorStyle errors = ErrorStyle::kHorovod;

  absl::Status Read(OpKernelConstruction* c, bool on_gpu);
};

// What the engine works on until the call's handle completes: the engine
// reads `sources` (null: in place) and writes `tensors`, which the caller
// keeps alive until then.
struct EngineCall {
  std::vector<rm_tensor> tensors;
  std::vector<const void*> sources;
  rm_handle* handle = nullptr;  // null: the call ended in BeginAllReduce
};

// Outputs alias their inputs when TensorFlow lets us (the result is written
// in place). Else, with `sources`, the input is named as the engine's
// source for that output (the engine reads it on its own threads, so the
// copy overlaps the packs already on the wire); without, it is copied into
// the fresh output here. With a prescale factor the output gets the scaled
// input (and is reduced in place). Fills `ts` with the non-empty outputs
// (every rank has the same shapes, so every rank skips the same ones).
// Output i has input i's shape.
absl::Status PrepareOutputs(OpKernelContext* ctx, std::vector<rm_tensor>* ts,
                            std::vector<const void*>* sources, double prescale);

// The kernel's inputs, in order.
std::vector<const Tensor*> Inputs(OpKernelContext* ctx);

// Begins the all-reduce of ctx's inputs into its outputs (output i has
// input i's shape; a kernel may have more outputs after them): the members agree (agreement.h), then the call
// goes to the engine and *call gets its handle. A host call of at most Proposal::kInlineBytes, or one of
// empty tensors, ends here with a null handle (its outputs final, postscale applied). An error is the call's
// status, on every member where the agreement says so.
absl::Status BeginAllReduce(OpKernelContext* ctx, const AllReduceAttrs& attrs, EngineCall* call);

// Output i *= factor for i < n (Horovod's postscale).
absl::Status ScaleOutputs(OpKernelContext* ctx, int n, double factor);

}  // namespace ringmaster_tf
