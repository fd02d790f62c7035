// Horovod's join(): a member that has run out of data calls join() and, until
// every member has joined, stands in for each all-reduce the others still
// issue with zeros of the same shapes, so they need not know who stopped.
//
// How, without a coordinator: every collective starts with the agreement
// (agreement.h), an all-gather of one proposal per member. A joined member's
// proposal says "join" and how many agreements it has stood in since it
// joined. From the same proposals every member reaches the same verdict:
//   - every member joined: join() returns on all of them, with the rank
//     that joined last (the fewest rounds; the highest rank of a tie, the
//     order Horovod's coordinator reads them in);
//   - the others agree on a host all-reduce: their lowest rank broadcasts
//     the tensors' dtypes and shapes and the call's packing, and the joined
//     members all-reduce zeros with them (an average still divides by the
//     whole group's size, as Horovod's does);
//   - anything else (a gather, a broadcast, an all-reduce of GPU tensors):
//     the others fail with FailedPrecondition naming who joined, and the
//     joined members wait on (Horovod refuses those calls with Join too).
#include <string>
#include <vector>

#include "agreement.h"
#include "common.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/types.h"

namespace ringmaster_tf {

using tensorflow::OpKernel;
using tensorflow::shape_inference::InferenceContext;

namespace {

int FirstActive(const std::vector<Proposal>& all) {
  for (size_t r = 0; r < all.size(); ++r)
    if (!Joined(all[r])) return static_cast<int>(r);
  return -1;
}

// What the joined members stand in for, as int64 words: bytes_per_pack,
// implementation, the count of tensors, then each one's dtype, rank and
// dimensions.
std::vector<int64_t> Describe(const std::vector<const Tensor*>& tensors, const rm_options& options) {
  std::vector<int64_t> w = {options.bytes_per_pack, options.implementation,
                            static_cast<int64_t>(tensors.size())};
  for (const Tensor* t : tensors) {
    w.push_back(t->dtype());
    w.push_back(t->dims());
    for (int d = 0; d < t->dims(); ++d) w.push_back(t->dim_size(d));
  }
  return w;
}

// `root` broadcasts its words (the others' `words` are replaced): their
// count first, then the words.
absl::Status ExchangeWords(rm_communicator* comm, int root, const rm_options& options,
                           std::vector<int64_t>* words) {
  int64_t count = static_cast<int64_t>(words->size());
  rm_tensor head{&count, 1, RM_INT64};
  TF_RETURN_IF_ERROR(LastError(rm_broadcast(comm, &head, 1, root, &options)));
  words->resize(count);
  rm_tensor body{words->data(), count, RM_INT64};
  return LastError(rm_broadcast(comm, &body, 1, root, &options));
}

// The joined member's half: zeros for what the others all-reduce.
absl::Status StandIn(rm_communicator* comm, const Proposal& lead, int root, const rm_options& own) {
  std::vector<int64_t> w;
  TF_RETURN_IF_ERROR(ExchangeWords(comm, root, own, &w));
  rm_reduce_op op = RM_SUM;
  TF_RETURN_IF_ERROR(ToRmReduceOp(static_cast<int>(lead.reduce_op), &op));
  rm_options options = own;  // packing as the others pack; our own timeout
  options.bytes_per_pack = w.at(0);
  options.implementation = static_cast<rm_implementation>(w.at(1));
  std::vector<std::vector<char>> zeros;
  std::vector<rm_tensor> ts;
  size_t at = 3;
  for (int64_t i = 0; i < w.at(2); ++i) {
    const auto dtype = static_cast<DataType>(w.at(at));
    const int64_t dims = w.at(at + 1);
    int64_t count = 1;
    for (int64_t d = 0; d < dims; ++d) count *= w.at(at + 2 + d);
    at += 2 + dims;
    if (count == 0) continue;  // the others skip empty tensors too
    rm_tensor t{};
    TF_RETURN_IF_ERROR(ToRmDtype(dtype, &t.dtype));
    zeros.emplace_back(static_cast<size_t>(count) * tensorflow::DataTypeSize(dtype), 0);
    t.data = zeros.back().data();
    t.count = count;
    ts.push_back(t);
  }
  if (ts.empty()) return absl::OkStatus();
  return LastError(rm_allreduce(comm, ts.data(), ts.size(), op, &options));
}

// Join: stands in until every member has joined.
class JoinOp : public OpKernel {
 public:
  explicit JoinOp(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ReadOptions(c, &options_));
    OP_REQUIRES_OK(c, ReadProcessSet(c, &process_set_id_));
  }

  void Compute(OpKernelContext* ctx) override {
    rm_communicator* comm = nullptr;
    OP_REQUIRES_OK(ctx, Communicator(process_set_id_, &comm));
    for (int64_t rounds = 0;; ++rounds) {
      Proposal mine = Propose(RM_COLLECTIVE_JOIN, {});
      mine.joined_rounds = rounds;
      std::vector<Proposal> all;
      std::vector<int64_t> records;
      OP_REQUIRES_OK(ctx, GatherProposals(comm, mine, nullptr, 0, options_, &all, &records));
      const int lead = FirstActive(all);
      if (lead < 0) {
        Tensor* out = nullptr;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
        out->scalar<int32_t>()() = LastJoined(all);
        return;
      }
      // The others fail this call (they judge the same proposals): wait on.
      if (all[lead].local_error != 0 || !Judge(comm, all, lead).ok() || !JoinedVerdict(comm, all).ok())
        continue;
      OP_REQUIRES_OK(ctx, StandIn(comm, all[lead], lead, options_));
    }
  }

 private:
  static int LastJoined(const std::vector<Proposal>& all) {
    int last = 0;
    for (int r = 1; r < static_cast<int>(all.size()); ++r)
      if (all[r].joined_rounds <= all[last].joined_rounds) last = r;
    return last;
  }

  rm_options options_;
  int process_set_id_ = 0;
};

}  // namespace

absl::Status JoinedVerdict(rm_communicator* comm, const std::vector<Proposal>& all) {
  const int lead = FirstActive(all);
  if (lead < 0) return absl::OkStatus();
  bool stand_in = all[lead].kind == RM_COLLECTIVE_ALL_REDUCE;
  std::string joined;
  for (size_t r = 0; r < all.size(); ++r) {
    if (Joined(all[r]))
      joined += (joined.empty() ? "" : ", ") + Member(comm, static_cast<int>(r));
    else
      stand_in = stand_in && all[r].stands_in != 0;
  }
  if (stand_in) return absl::OkStatus();
  return absl::FailedPreconditionError(
      std::string("ringmaster ") + KindName(all[lead].kind) + ": " + joined +
      " called join(); while a member has joined, only allreduce of tensors in host memory runs (the joined "
      "members stand in with zeros, as in Horovod, where the other collectives are refused with Join too)");
}

absl::Status ServeJoined(rm_communicator* comm, const std::vector<Proposal>& all,
                         const std::vector<const Tensor*>& tensors, const rm_options& options) {
  std::vector<int64_t> w = Describe(tensors, options);
  return ExchangeWords(comm, FirstActive(all), options, &w);
}

REGISTER_OP("RingmasterJoin")
    .Output("last_rank: int32")
    .RINGMASTER_OPTION_ATTRS.SetIsStateful()
    .SetIsDistributedCommunication()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Horovod's join: stands in with zeros for the all-reduces the other members
still issue, until every member has joined; returns the rank that joined
last (the same on every member).
)doc");

REGISTER_KERNEL_BUILDER(Name("RingmasterJoin").Device(tensorflow::DEVICE_CPU), JoinOp);

}  // namespace ringmaster_tf
