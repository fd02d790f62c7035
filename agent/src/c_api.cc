#include <memory>
#include <string>
#include <vector>

#include "ringmaster/communicator.h"
#include "ringmaster/ringmaster.h"

struct rm_communicator {
  std::unique_ptr<ringmaster::Communicator> comm;
};
struct rm_handle {
  ringmaster::CollectiveHandle handle;
};

namespace {

thread_local std::string g_last_error;

int Report(const ringmaster::Status& s) {
  g_last_error = s.ok() ? std::string() : s.ToString();
  return static_cast<int>(s.code());
}

ringmaster::CommunicationOptions ToOptions(const rm_options* o) {
  ringmaster::CommunicationOptions out;
  if (!o) return out;
  out.bytes_per_pack = o->bytes_per_pack;
  if (o->timeout_seconds >= 0) out.timeout_seconds = o->timeout_seconds;
  out.implementation = static_cast<ringmaster::Implementation>(o->implementation);
  return out;
}

bool BadImplementation(const rm_options* o) {
  return o && (o->implementation < RM_AUTO || o->implementation > RM_NCCL);
}

std::vector<ringmaster::Tensor> ToTensors(const rm_tensor* t, size_t n) {
  std::vector<ringmaster::Tensor> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = {t[i].data, t[i].count, static_cast<ringmaster::DataType>(t[i].dtype)};
  return out;
}

int NullComm() {
  return Report(ringmaster::InvalidArgumentError("comm is NULL"));
}
int BadImpl() {
  return Report(ringmaster::InvalidArgumentError("options.implementation: unknown implementation"));
}

}  // namespace

extern "C" {

rm_options rm_default_options(void) {
  return rm_options{0, -1.0, RM_AUTO};
}

int rm_communicator_create_from_env(rm_communicator** out) {
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  *out = nullptr;
  auto c = ringmaster::Communicator::FromEnvironment();
  if (!c.ok()) return Report(c.status());
  *out = new rm_communicator{std::move(*c)};
  return Report(ringmaster::OkStatus());
}

void rm_communicator_destroy(rm_communicator* comm) {
  delete comm;
}
int rm_rank(const rm_communicator* comm) {
  return comm ? comm->comm->rank() : -1;
}
int rm_size(const rm_communicator* comm) {
  return comm ? comm->comm->size() : -1;
}

int rm_allreduce(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                 const rm_options* options) {
  if (!comm) return NullComm();
  if (BadImplementation(options)) return BadImpl();
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  return Report(comm->comm->AllReduce(ts, static_cast<ringmaster::ReduceOp>(op), ToOptions(options)));
}

int rm_allreduce_async(rm_communicator* comm, const rm_tensor* tensors, size_t n, rm_reduce_op op,
                       const rm_options* options, rm_handle** out) {
  if (!comm) return NullComm();
  if (!out) return Report(ringmaster::InvalidArgumentError("out is NULL"));
  if (BadImplementation(options)) return BadImpl();
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  *out = new rm_handle{
      comm->comm->AllReduceAsync(ts, static_cast<ringmaster::ReduceOp>(op), ToOptions(options))};
  return Report(ringmaster::OkStatus());
}

int rm_handle_wait(rm_handle* handle) {
  if (!handle) return Report(ringmaster::InvalidArgumentError("handle is NULL"));
  ringmaster::Status s = handle->handle.Wait();
  delete handle;
  return Report(s);
}

int rm_broadcast(rm_communicator* comm, const rm_tensor* tensors, size_t n, int root,
                 const rm_options* options) {
  if (!comm) return NullComm();
  if (BadImplementation(options)) return BadImpl();
  if (n && !tensors) return Report(ringmaster::InvalidArgumentError("tensors is NULL"));
  auto ts = ToTensors(tensors, n);
  return Report(comm->comm->Broadcast(ts, root, ToOptions(options)));
}

int rm_allgather(rm_communicator* comm, const rm_tensor* input, const rm_tensor* output,
                 const rm_options* options) {
  if (!comm) return NullComm();
  if (BadImplementation(options)) return BadImpl();
  if (!input || !output) return Report(ringmaster::InvalidArgumentError("input/output is NULL"));
  auto in = ToTensors(input, 1), out = ToTensors(output, 1);
  return Report(comm->comm->AllGather(in[0], out[0], ToOptions(options)));
}

int rm_barrier(rm_communicator* comm, const rm_options* options) {
  if (!comm) return NullComm();
  if (BadImplementation(options)) return BadImpl();
  return Report(comm->comm->Barrier(ToOptions(options)));
}

int rm_reduce(rm_communicator* comm, rm_reduce_op op, const rm_tensor* value, const int64_t* shape, int ndims,
              int has_axis, int axis, const rm_tensor* output, const rm_options* options) {
  if (!comm) return NullComm();
  if (BadImplementation(options)) return BadImpl();
  if (!value || !output || (ndims > 0 && !shape) || ndims < 0) {
    return Report(ringmaster::InvalidArgumentError("value/output/shape is NULL"));
  }
  auto v = ToTensors(value, 1), o = ToTensors(output, 1);
  std::optional<int> ax;
  if (has_axis) ax = axis;
  return Report(comm->comm->Reduce(static_cast<ringmaster::ReduceOp>(op), v[0],
                                   std::span<const int64_t>(shape, static_cast<size_t>(ndims)), ax, o[0],
                                   ToOptions(options)));
}

void rm_abort(rm_communicator* comm, const char* reason) {
  if (comm) comm->comm->Abort(reason ? reason : "rm_abort");
}

int rm_reform(rm_communicator* comm) {
  if (!comm) return NullComm();
  return Report(comm->comm->Reform());
}

const char* rm_last_error(void) {
  return g_last_error.c_str();
}

}  // extern "C"
