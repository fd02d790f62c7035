#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "collectives/collectives.h"
#include "collectives/kernels.h"
#include "ringmaster/communicator.h"
#include "ringmaster/ringmaster.h"

struct rm_communicator {
  std::unique_ptr<ringmaster::Communicator> comm;
  std::vector<std::string> names;  // rm_task_name's storage
};
struct rm_handle {
  ringmaster::CollectiveHandle handle;
};

namespace ringmaster::internal {

thread_local std::string g_last_error;

int Report(const ringmaster::Status& s) {
  g_last_error = s.ok() ? std::string() : s.ToString();
  return static_cast<int>(s.code());
}

}  // namespace ringmaster::internal

using ringmaster::internal::g_last_error;
using ringmaster::internal::Report;
using ringmaster::internal::ToOptions;

namespace {

std::atomic<rm_communicator*> g_default{nullptr};
// rm_set_process_set_communicator's table (id 0 lives in g_default).
std::mutex g_sets_mu;
std::map<int, rm_communicator*> g_sets;

std::vector<ringmaster::Tensor> ToTensors(const rm_tensor* t, size_t n) {
  std::vector<ringmaster::Tensor> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = {t[i].data, t[i].count, static_cast<ringmaster::DataType>(t[i].dtype)};
  return out;
}

// A counts array of rm_size() entries.
std::span<const int64_t> Counts(const rm_communicator* comm, const int64_t* counts) {
  return {counts, static_cast<size_t>(comm->comm->size())};
}

int NullComm() {
  return Report(ringmaster::InvalidArgumentError("comm is NULL"));
}

}  // namespace

extern "C" {

int rm_communicator_create_from_env(rm_communicator** out) {
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  *out = nullptr;
  auto c = ringmaster::Communicator::FromEnvironment();
  if (!c.ok()) return Report(c.status());
  auto* made = new rm_communicator{std::move(*c), {}};
  for (int r = 0; r < made->comm->size(); ++r) made->names.push_back(made->comm->TaskName(r));
  *out = made;
  return Report(ringmaster::OkStatus());
}

void rm_communicator_destroy(rm_communicator* comm) {
  // Never leave a dangling default behind.
  rm_communicator* expected = comm;
  g_default.compare_exchange_strong(expected, nullptr);
  {
    std::lock_guard<std::mutex> lock(g_sets_mu);
    std::erase_if(g_sets, [comm](const auto& kv) { return kv.second == comm; });
  }
  delete comm;
}

int rm_process_set_add(rm_communicator* comm, int id, const int* ranks, size_t n, rm_communicator** out) {
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  *out = nullptr;
  if (!comm) return NullComm();
  if (n && !ranks) return Report(ringmaster::InvalidArgumentError("ranks is NULL"));
  auto set = comm->comm->AddProcessSet(id, std::span<const int>(ranks, n));
  if (!set.ok()) return Report(set.status());
  if (*set) {
    auto* made = new rm_communicator{std::move(*set), {}};
    for (int r = 0; r < made->comm->size(); ++r) made->names.push_back(made->comm->TaskName(r));
    *out = made;
  }
  return Report(ringmaster::OkStatus());
}

int rm_start_timeline(rm_communicator* comm, const char* path) {
  if (!comm) return NullComm();
  if (!path) return Report(ringmaster::InvalidArgumentError("path is NULL"));
  return Report(comm->comm->StartTimeline(path));
}

int rm_stop_timeline(rm_communicator* comm) {
  if (!comm) return NullComm();
  return Report(comm->comm->StopTimeline());
}

int rm_process_set_id(const rm_communicator* comm) {
  return comm ? comm->comm->process_set_id() : -1;
}

void rm_set_process_set_communicator(int id, rm_communicator* comm) {
  if (id == 0) return rm_set_default_communicator(comm);
  std::lock_guard<std::mutex> lock(g_sets_mu);
  if (comm) {
    g_sets[id] = comm;
  } else {
    g_sets.erase(id);
  }
}

rm_communicator* rm_process_set_communicator(int id) {
  if (id == 0) return rm_default_communicator();
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto it = g_sets.find(id);
  return it == g_sets.end() ? nullptr : it->second;
}
int rm_rank(const rm_communicator* comm) {
  return comm ? comm->comm->rank() : -1;
}
int rm_size(const rm_communicator* comm) {
  return comm ? comm->comm->size() : -1;
}

const char* rm_task_name(const rm_communicator* comm, int rank) {
  if (!comm || rank < 0 || rank >= comm->comm->size()) return nullptr;
  return comm->names[static_cast<size_t>(rank)].c_str();
}

int rm_health(const rm_communicator* comm) {
  if (!comm) return NullComm();
  return Report(comm->comm->health());
}

void rm_set_default_communicator(rm_communicator* comm) {
  g_default.store(comm, std::memory_order_release);
}

rm_communicator* rm_default_communicator(void) {
  return g_default.load(std::memory_order_acquire);
}

int rm_allreduce(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                 const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  return Report(comm->comm->AllReduce(ts, static_cast<ringmaster::ReduceOp>(op), *opts));
}

int rm_allreduce_async(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                       const rm_options* options, rm_handle** out) {
  return rm_allreduce_async_from(comm, nullptr, tensors, n, op, options, out);
}

int rm_allreduce_async_from(rm_communicator* comm, const void* const* sources, const rm_tensor* tensors,
                            size_t n, rm_reduce_op op, const rm_options* options, rm_handle** out) {
  if (!comm) return NullComm();
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  for (size_t i = 0; sources && i < n; ++i) ts[i].source = sources[i];
  *out = new rm_handle{comm->comm->AllReduceAsync(ts, static_cast<ringmaster::ReduceOp>(op), *opts)};
  return Report(ringmaster::OkStatus());
}

int rm_allreduce_async_on_stream(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                                 const rm_options* options, void* stream, rm_handle** out) {
  return rm_allreduce_async_on_stream_from(comm, nullptr, tensors, n, op, options, stream, out);
}

int rm_allreduce_async_on_stream_from(rm_communicator* comm, const void* const* sources,
                                      const rm_tensor* tensors, size_t n, rm_reduce_op op,
                                      const rm_options* options, void* stream, rm_handle** out) {
  if (!comm) return NullComm();
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  for (size_t i = 0; i < n; ++i) {
    ts[i].memory = ringmaster::MemoryKind::kDevice;
    ts[i].stream = stream;
    if (sources) ts[i].source = sources[i];
  }
  *out = new rm_handle{comm->comm->AllReduceAsync(ts, static_cast<ringmaster::ReduceOp>(op), *opts)};
  return Report(ringmaster::OkStatus());
}

int rm_handle_wait(rm_handle* handle) {
  if (!handle) return Report(ringmaster::InvalidArgumentError("handle is NULL"));
  ringmaster::Status s = handle->handle.Wait();
  delete handle;
  return Report(s);
}

int rm_handle_done(const rm_handle* handle) {
  return handle && handle->handle.Done() ? 1 : 0;
}

int rm_handle_then(rm_handle* handle, rm_done_fn done, void* arg) {
  if (!handle) return Report(ringmaster::InvalidArgumentError("handle is NULL"));
  if (!done) return Report(ringmaster::InvalidArgumentError("done is NULL"));
  ringmaster::CollectiveHandle h = std::move(handle->handle);
  delete handle;
  h.Then([done, arg](const ringmaster::Status& s) {
    std::string msg = s.ok() ? std::string() : s.ToString();
    done(arg, static_cast<int>(s.code()), msg.c_str());
  });
  return Report(ringmaster::OkStatus());
}

int rm_broadcast(rm_communicator* comm, const rm_tensor* tensors, size_t n, int root,
                 const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  return Report(comm->comm->Broadcast(ts, root, *opts));
}

int rm_allgather(rm_communicator* comm, const rm_tensor* input, const rm_tensor* output,
                 const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (!input || !output) return Report(ringmaster::InvalidArgumentError("input/output is NULL"));
  auto in = ToTensors(input, 1), out = ToTensors(output, 1);
  return Report(comm->comm->AllGather(in[0], out[0], *opts));
}

int rm_allgatherv(rm_communicator* comm, const rm_tensor* input, const int64_t* counts,
                  const rm_tensor* output, const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (!input || !output) return Report(ringmaster::InvalidArgumentError("input/output is NULL"));
  if (!counts) return Report(ringmaster::InvalidArgumentError("counts is NULL"));
  auto in = ToTensors(input, 1), out = ToTensors(output, 1);
  return Report(comm->comm->AllGatherV(in[0], Counts(comm, counts), out[0], *opts));
}

int rm_alltoallv(rm_communicator* comm, const rm_tensor* input, const int64_t* send_counts,
                 const rm_tensor* output, const int64_t* recv_counts, const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (!input || !output) return Report(ringmaster::InvalidArgumentError("input/output is NULL"));
  if (!send_counts || !recv_counts) {
    return Report(ringmaster::InvalidArgumentError("send_counts/recv_counts is NULL"));
  }
  auto in = ToTensors(input, 1), out = ToTensors(output, 1);
  return Report(
      comm->comm->AllToAll(in[0], Counts(comm, send_counts), out[0], Counts(comm, recv_counts), *opts));
}

int rm_reducescatter(rm_communicator* comm, const rm_tensor* input, const int64_t* counts,
                     const rm_tensor* output, rm_reduce_op op, const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (!input || !output) return Report(ringmaster::InvalidArgumentError("input/output is NULL"));
  if (!counts) return Report(ringmaster::InvalidArgumentError("counts is NULL"));
  auto in = ToTensors(input, 1), out = ToTensors(output, 1);
  return Report(comm->comm->ReduceScatter(in[0], Counts(comm, counts), out[0],
                                          static_cast<ringmaster::ReduceOp>(op), *opts));
}

int rm_barrier(rm_communicator* comm, const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  return Report(comm->comm->Barrier(*opts));
}

namespace {

// rm_reduce_local's and rm_divide_local's arguments.
ringmaster::Status CheckLocal(ringmaster::DataType d, const void* data, int64_t count) {
  using namespace ringmaster::internal;
  RM_RETURN_IF_ERROR(CheckDType(d, "dtype"));
  const ringmaster::Tensor t{const_cast<void*>(data), count, d};
  RM_RETURN_IF_ERROR(CheckReducible("local reduction", {&t, 1}));
  if (count < 0) return ringmaster::InvalidArgumentError("count must be >= 0");
  if (count > 0 && !data) return ringmaster::InvalidArgumentError("data is NULL");
  return ringmaster::OkStatus();
}

}  // namespace

int rm_reduce_local(rm_dtype dtype, rm_reduce_op op, void* inout, const void* in, int64_t count) {
  const auto d = static_cast<ringmaster::DataType>(dtype);
  const auto o = static_cast<ringmaster::ReduceOp>(op);
  if (auto st = ringmaster::internal::CheckOp(o); !st.ok()) return Report(st);
  if (auto st = CheckLocal(d, inout && in ? inout : nullptr, count); !st.ok()) return Report(st);
  if (count > 0) ringmaster::internal::ReduceInto(d, o, inout, in, static_cast<size_t>(count));
  return Report(ringmaster::OkStatus());
}

int rm_divide_local(rm_dtype dtype, void* data, int64_t count, int64_t n) {
  const auto d = static_cast<ringmaster::DataType>(dtype);
  if (auto st = CheckLocal(d, data, count); !st.ok()) return Report(st);
  if (n <= 0) return Report(ringmaster::InvalidArgumentError("n must be > 0"));
  if (count > 0) ringmaster::internal::DivideBy(d, data, static_cast<size_t>(count), n);
  return Report(ringmaster::OkStatus());
}

int rm_reduce(rm_communicator* comm, rm_reduce_op op, const rm_tensor* value, const int64_t* shape, int ndims,
              int has_axis, int axis, const rm_tensor* output, const rm_options* options) {
  if (!comm) return NullComm();
  auto opts = ToOptions(options);
  if (!opts.ok()) return Report(opts.status());
  if (!value || !output || (ndims > 0 && !shape) || ndims < 0) {
    return Report(ringmaster::InvalidArgumentError("value/output/shape is NULL"));
  }
  auto v = ToTensors(value, 1), o = ToTensors(output, 1);
  std::optional<int> ax;
  if (has_axis) ax = axis;
  return Report(comm->comm->Reduce(static_cast<ringmaster::ReduceOp>(op), v[0],
                                   std::span<const int64_t>(shape, static_cast<size_t>(ndims)), ax, o[0],
                                   *opts));
}

void rm_abort(rm_communicator* comm, const char* reason) {
  if (comm) comm->comm->Abort(reason ? reason : "rm_abort");
}

int rm_reform(rm_communicator* comm) {
  if (!comm) return NullComm();
  return Report(comm->comm->Reform());
}

int rm_agree_on_resume(rm_communicator* comm, int64_t committed_step, int64_t* step, int* root) {
  if (!comm) return NullComm();
  if (!step || !root)
    return Report(ringmaster::InvalidArgumentError("rm_agree_on_resume: step and root must not be null"));
  auto p = comm->comm->AgreeOnResume(committed_step);
  if (!p.ok()) return Report(p.status());
  *step = p->step;
  *root = p->root;
  return Report(ringmaster::OkStatus());
}

int rm_agree_on_joiners(rm_communicator* comm, int* joiners) {
  if (!comm) return NullComm();
  if (!joiners)
    return Report(ringmaster::InvalidArgumentError("rm_agree_on_joiners: joiners must not be null"));
  auto n = comm->comm->AgreeOnJoiners();
  if (!n.ok()) return Report(n.status());
  *joiners = *n;
  return Report(ringmaster::OkStatus());
}

const char* rm_last_error(void) {
  return g_last_error.c_str();
}

}  // extern "C"
