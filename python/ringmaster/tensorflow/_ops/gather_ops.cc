// The collectives whose output shapes depend on every member's input:
// all-gather (first dimensions may differ), all-to-all (each member's
// splits), reduce-scatter (the first dimension split over the members), and
// the barrier that only synchronises (join is in join.cc). Each first agrees
// with the other members (agreement.h), exchanges the sizes it needs, allocates
// its outputs, then makes one synchronous engine call per tensor.
#include <numeric>
#include <string>
#include <vector>

#include "agreement.h"
#include "common.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace ringmaster_tf {

using tensorflow::OpKernel;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

namespace {

std::vector<const Tensor*> AllInputs(OpKernelContext* ctx, int first = 0, int count = -1) {
  std::vector<const Tensor*> v;
  const int end = count < 0 ? ctx->num_inputs() : first + count;
  for (int i = first; i < end; ++i) v.push_back(&ctx->input(i));
  return v;
}

int64_t RowElements(const Tensor& t) {
  int64_t n = 1;
  for (int d = 1; d < t.dims(); ++d) n *= t.dim_size(d);
  return n;
}

absl::Status NotScalar(const char* what, const std::vector<const Tensor*>& ts) {
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i]->dims() == 0)
      return absl::InvalidArgumentError(std::string(what) + ": tensor " + std::to_string(i) +
                                        " is a scalar; it needs at least one dimension (reshape it to [1])");
  return absl::OkStatus();
}

// Rows of a first dimension of `rows` for member r of n: the first rows % n
// members get one more (Horovod's split of an uneven first dimension).
int64_t RowsOf(int64_t rows, int r, int n) {
  return rows / n + (r < rows % n ? 1 : 0);
}

// Shape inference: the first dimension becomes unknown.
absl::Status FirstDimUnknown(InferenceContext* c, int inputs, int first_output = 0) {
  for (int i = 0; i < inputs; ++i) {
    ShapeHandle in = c->input(i), out;
    if (c->RankKnown(in) && c->Rank(in) > 0) {
      TF_RETURN_IF_ERROR(c->ReplaceDim(in, 0, c->UnknownDim(), &out));
      c->set_output(first_output + i, out);
    } else {
      c->set_output(first_output + i, c->UnknownShape());
    }
  }
  return absl::OkStatus();
}

}  // namespace

class CollectiveKernel : public OpKernel {
 public:
  explicit CollectiveKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ReadOptions(c, &options_));
    OP_REQUIRES_OK(c, ReadProcessSet(c, &process_set_id_));
    OP_REQUIRES_OK(c, ReadErrorStyle(c, &errors_));
  }

 protected:
  rm_options options_;
  int process_set_id_ = 0;
  ErrorStyle errors_ = ErrorStyle::kHorovod;
};

class AllGatherOp : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    auto ins = AllInputs(ctx);
    OP_REQUIRES_OK(ctx, Agree(comm, Propose(RM_COLLECTIVE_ALL_GATHER, ins), NotScalar("allgather", ins),
                              options_, nullptr, errors_));
    const int n = rm_size(comm);
    std::vector<int64_t> rows(ins.size()), all;
    for (size_t i = 0; i < ins.size(); ++i) rows[i] = ins[i]->dim_size(0);
    OP_REQUIRES_OK(ctx, GatherWords(comm, rows.data(), rows.size(), options_, &all));
    for (size_t i = 0; i < ins.size(); ++i) {
      const Tensor& in = *ins[i];
      std::vector<int64_t> counts(n);
      int64_t total_rows = 0;
      for (int r = 0; r < n; ++r) {
        const int64_t rr = all[r * ins.size() + i];
        counts[r] = rr * RowElements(in);
        total_rows += rr;
      }
      TensorShape shape = in.shape();
      shape.set_dim(0, total_rows);
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(int(i), shape, &out));
      rm_tensor vin = View(in), vout = View(*out);
      OP_REQUIRES_OK(ctx, LastError(rm_allgatherv(comm, &vin, counts.data(), &vout, &options_)));
    }
  }
};

class AllToAllOp : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    const int n = rm_size(comm), me = rm_rank(comm);
    const Tensor& in = ctx->input(0);
    const Tensor& splits_in = ctx->input(1);
    std::vector<int64_t> splits(n, 0);
    absl::Status local = NotScalar("alltoall", {&in});
    if (local.ok() && splits_in.NumElements() == 0) {
      if (in.dim_size(0) % n != 0)
        local = absl::InvalidArgumentError(
            "alltoall: the first dimension (" + std::to_string(in.dim_size(0)) +
            ") must be a multiple of the group size (" + std::to_string(n) + ") when no splits are given");
      for (auto& s : splits) s = in.dim_size(0) / n;
    } else if (local.ok()) {
      auto flat = splits_in.flat<int32_t>();
      if (splits_in.dims() != 1 || flat.size() != n) {
        local = absl::InvalidArgumentError("splits: must be a vector of " + std::to_string(n) +
                                           " entries (one per rank), got shape " +
                                           splits_in.shape().DebugString());
      } else {
        int64_t sum = 0;
        for (int r = 0; r < n && local.ok(); ++r) {
          if (flat(r) < 0)
            local = absl::InvalidArgumentError("splits[" + std::to_string(r) + "] is negative");
          splits[r] = flat(r);
          sum += flat(r);
        }
        if (local.ok() && sum > in.dim_size(0))
          local = absl::InvalidArgumentError("splits: their sum (" + std::to_string(sum) +
                                             ") exceeds the first dimension (" +
                                             std::to_string(in.dim_size(0)) + ")");
      }
    }
    OP_REQUIRES_OK(ctx,
                   Agree(comm, Propose(RM_COLLECTIVE_ALL_TO_ALL, {&in}), local, options_, nullptr, errors_));
    std::vector<int64_t> matrix;  // row r: rank r's splits
    OP_REQUIRES_OK(ctx, GatherWords(comm, splits.data(), splits.size(), options_, &matrix));
    const int64_t row = RowElements(in);
    std::vector<int64_t> send(n), recv(n);
    int64_t recv_rows = 0;
    Tensor* received = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n}), &received));
    for (int r = 0; r < n; ++r) {
      send[r] = splits[r] * row;
      const int64_t rows_from_r = matrix[r * n + me];
      recv[r] = rows_from_r * row;
      recv_rows += rows_from_r;
      received->flat<int32_t>()(r) = static_cast<int32_t>(rows_from_r);
    }
    TensorShape shape = in.shape();
    shape.set_dim(0, recv_rows);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    rm_tensor vin = View(in), vout = View(*out);
    vin.count =
        std::accumulate(send.begin(), send.end(), int64_t{0});  // a prefix when splits sum below dim 0
    OP_REQUIRES_OK(ctx, LastError(rm_alltoallv(comm, &vin, send.data(), &vout, recv.data(), &options_)));
  }
};

class ReduceScatterOp : public CollectiveKernel {
 public:
  explicit ReduceScatterOp(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &horovod_op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
  }

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    const int n = rm_size(comm), me = rm_rank(comm);
    auto ins = AllInputs(ctx);
    rm_reduce_op op = RM_SUM;
    absl::Status local = NotScalar("reducescatter", ins);
    if (local.ok()) local = ToRmReduceOp(horovod_op_, &op);
    Proposal mine = Propose(RM_COLLECTIVE_REDUCE_SCATTER, ins);
    mine.reduce_op = horovod_op_;
    mine.prescale_bits = Bits(prescale_);
    mine.postscale_bits = Bits(postscale_);
    OP_REQUIRES_OK(ctx, Agree(comm, mine, local, options_, nullptr, errors_));
    for (size_t i = 0; i < ins.size(); ++i) {
      const Tensor* in = ins[i];
      Tensor scaled;
      if (prescale_ != 1.0) {
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(in->dtype(), in->shape(), &scaled));
        OP_REQUIRES_OK(ctx, Scale(*in, &scaled, prescale_));
        in = &scaled;
      }
      const int64_t rows = in->dim_size(0), row = RowElements(*in);
      std::vector<int64_t> counts(n);
      for (int r = 0; r < n; ++r) counts[r] = RowsOf(rows, r, n) * row;
      TensorShape shape = in->shape();
      shape.set_dim(0, RowsOf(rows, me, n));
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(int(i), shape, &out));
      rm_tensor vin = View(*in), vout = View(*out);
      OP_REQUIRES_OK(ctx, LastError(rm_reducescatter(comm, &vin, counts.data(), &vout, op, &options_)));
      if (postscale_ != 1.0) OP_REQUIRES_OK(ctx, Scale(*out, out, postscale_));
    }
  }

 private:
  int horovod_op_ = 1;
  float prescale_ = 1.f, postscale_ = 1.f;
};

// Barrier: the agreement itself waits for every member.
class BarrierOp : public CollectiveKernel {
 public:
  using CollectiveKernel::CollectiveKernel;

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    OP_REQUIRES_OK(ctx, Agree(comm, Propose(RM_COLLECTIVE_BARRIER, {}), absl::OkStatus(), options_));
  }
};

REGISTER_OP("RingmasterAllGather")
    .Input("tensors: T")
    .Output("gathered: T")
    .Attr("T: list(" + OpTypes(/*with_bool=*/true) + ") >= 1")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) { return FirstDimUnknown(c, c->num_inputs()); })
    .Doc("Concatenates every rank's tensors along the first dimension (which may differ per rank).");

REGISTER_OP("RingmasterAllToAll")
    .Input("tensor: T")
    .Input("splits: int32")
    .Output("output: T")
    .Output("received_splits: int32")
    .Attr("T: " + OpTypes(/*with_bool=*/true))
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(FirstDimUnknown(c, 1));
      c->set_output(1, c->Vector(c->UnknownDim()));
      return absl::OkStatus();
    })
    .Doc("Sends splits[r] rows of the tensor to rank r; returns the rows received and their counts.");

REGISTER_OP("RingmasterReduceScatter")
    .Input("tensors: T")
    .Output("reduced: T")
    .Attr("T: list(" + OpTypes(/*with_bool=*/false) + ") >= 1")
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) { return FirstDimUnknown(c, c->num_inputs()); })
    .Doc("Reduces the tensors across ranks; rank r keeps its share of the first dimension.");

REGISTER_OP("RingmasterBarrier").RINGMASTER_OPTION_ATTRS.SetIsStateful().SetIsDistributedCommunication();

REGISTER_KERNEL_BUILDER(Name("RingmasterAllGather").Device(tensorflow::DEVICE_CPU), AllGatherOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterAllToAll").Device(tensorflow::DEVICE_CPU), AllToAllOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterReduceScatter").Device(tensorflow::DEVICE_CPU), ReduceScatterOp);
REGISTER_KERNEL_BUILDER(Name("RingmasterBarrier").Device(tensorflow::DEVICE_CPU), BarrierOp);

}  // namespace ringmaster_tf
