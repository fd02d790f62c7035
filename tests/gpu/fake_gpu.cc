#include "fake_gpu.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives/kernels.h"

// The opaque handles of the real headers, defined here for the fake.
struct CUstream_st {
  int device = 0;
  std::deque<std::function<bool()>> q;  // a task answers false while it blocks
};
struct CUevent_st {
  bool done = true;
};
struct ncclComm {
  std::string clique;
  int nranks = 1, rank = 0, device = 0;
  int in_progress = 0;  // polls that still answer ncclInProgress
  bool aborted = false;
  uint64_t next_coll = 0;
};

namespace ringmaster::fake {
namespace {

using internal::GpuApi;

struct Coll {
  int arrived = 0;
  bool complete = false;
  std::vector<void*> recv;
  std::vector<char> acc;
};

struct State {
  std::recursive_mutex mu;
  int devices = 2;
  int hang_rank = -1;
  bool async_error = false;
  Stats stats;
  std::map<char*, std::pair<size_t, int>> device_mem;  // base -> (bytes, device)
  std::map<char*, size_t> host_mem;
  std::vector<CUstream_st*> streams;
  std::map<std::pair<std::string, uint64_t>, Coll> colls;
  // Owned here and never freed while the fake lives: queued work may still
  // point at an event or communicator the backend has let go of.
  std::vector<std::unique_ptr<CUevent_st>> events;
  std::vector<std::unique_ptr<ncclComm>> comms;
  uint64_t next_id = 1;
  GpuApi api;
};

State& S() {
  static State* s = new State;
  return *s;
}
thread_local int t_device = 0;

void PumpLocked() {
  bool moved = true;
  while (moved) {
    moved = false;
    for (CUstream_st* s : S().streams) {
      while (!s->q.empty() && s->q.front()()) {
        s->q.pop_front();
        moved = true;
      }
    }
  }
}

void Enqueue(cudaStream_t s, std::function<bool()> task) {
  if (!s) {  // the legacy default stream of the fake is always idle
    while (!task()) PumpLocked();
    return;
  }
  s->q.push_back(std::move(task));
  PumpLocked();
}

// ---------------------------------------------------------------- CUDA

const char* GetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorInvalidValue:
      return "invalid argument";
    default:
      return "fake CUDA error";
  }
}
cudaError_t GetDeviceCount(int* n) {
  *n = S().devices;
  return cudaSuccess;
}
cudaError_t GetDevice(int* d) {
  *d = t_device;
  return cudaSuccess;
}
cudaError_t SetDevice(int d) {
  if (d < 0 || d >= S().devices) return cudaErrorInvalidDevice;
  t_device = d;
  return cudaSuccess;
}
cudaError_t DeviceGetPCIBusId(char* out, int len, int d) {
  std::snprintf(out, static_cast<size_t>(len), "0000:%02x:00.0", d);
  return cudaSuccess;
}
cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  *a = {};
  a->type = cudaMemoryTypeUnregistered;
  char* c = const_cast<char*>(static_cast<const char*>(p));
  auto it = S().device_mem.upper_bound(c);
  if (it != S().device_mem.begin()) {
    --it;
    if (c < it->first + std::max<size_t>(it->second.first, 1)) {
      a->type = cudaMemoryTypeDevice;
      a->device = it->second.second;
      a->devicePointer = const_cast<void*>(p);
      return cudaSuccess;
    }
  }
  auto h = S().host_mem.upper_bound(c);
  if (h != S().host_mem.begin()) {
    --h;
    if (c < h->first + h->second) a->type = cudaMemoryTypeHost;
  }
  return cudaSuccess;
}
cudaError_t GetLastError() {
  return cudaSuccess;
}
cudaError_t StreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  *s = new CUstream_st{t_device, {}};
  S().streams.push_back(*s);
  return cudaSuccess;
}
cudaError_t StreamDestroy(cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  auto& v = S().streams;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == s) {
      v.erase(v.begin() + static_cast<long>(i));
      delete s;
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidResourceHandle;
}
cudaError_t StreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.stream_waits;
  Enqueue(s, [e] { return e->done; });
  return cudaSuccess;
}
cudaError_t EventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  S().events.push_back(std::make_unique<CUevent_st>());
  *e = S().events.back().get();
  return cudaSuccess;
}
cudaError_t EventDestroy(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t EventRecord(cudaEvent_t e, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  e->done = false;
  Enqueue(s, [e] {
    e->done = true;
    return true;
  });
  return cudaSuccess;
}
cudaError_t EventQuery(cudaEvent_t e) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  PumpLocked();
  return e->done ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t MemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  if (kind == cudaMemcpyDeviceToDevice) ++S().stats.d2d_copies;
  if (kind == cudaMemcpyDeviceToHost) ++S().stats.d2h_copies;
  if (kind == cudaMemcpyHostToDevice) ++S().stats.h2d_copies;
  Enqueue(s, [=] {
    std::memmove(dst, src, n);
    return true;
  });
  return cudaSuccess;
}
void* AllocDeviceLocked(int device, size_t n) {
  char* p = static_cast<char*>(std::malloc(std::max<size_t>(n, 1)));
  S().device_mem[p] = {n, device};
  return p;
}
cudaError_t MallocAsync(void** p, size_t n, cudaStream_t) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  *p = AllocDeviceLocked(t_device, n);
  return cudaSuccess;
}
cudaError_t FreeAsync(void* p, cudaStream_t s) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  Enqueue(s, [p] {
    S().device_mem.erase(static_cast<char*>(p));
    std::free(p);
    return true;
  });
  return cudaSuccess;
}
cudaError_t HostAlloc(void** p, size_t n, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.host_allocs;
  *p = std::malloc(n);
  S().host_mem[static_cast<char*>(*p)] = n;
  return cudaSuccess;
}
cudaError_t FreeHost(void* p) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  S().host_mem.erase(static_cast<char*>(p));
  std::free(p);
  return cudaSuccess;
}

// ---------------------------------------------------------------- NCCL

int g_nccl_version = 22703;
ncclResult_t GetVersion(int* v) {
  *v = g_nccl_version;
  return ncclSuccess;
}
const char* NcclErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case ncclSystemError:
      return "unhandled system error";
    default:
      return "fake NCCL error";
  }
}
const char* NcclLastError(ncclComm_t) {
  return "";
}
ncclResult_t GetUniqueId(ncclUniqueId* id) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.unique_ids;
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "fake-id-%llu",
                static_cast<unsigned long long>(S().next_id++));
  return ncclSuccess;
}
ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                ncclConfig_t* config) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.comm_inits;
  S().comms.push_back(std::make_unique<ncclComm>());
  ncclComm* c = S().comms.back().get();
  c->clique = std::string(id.internal, strnlen(id.internal, sizeof id.internal));
  c->nranks = nranks;
  c->rank = rank;
  c->device = t_device;
  const bool nonblocking = config && config->blocking == 0;
  c->in_progress = nonblocking ? 1 : 0;
  *comm = c;
  return nonblocking ? ncclInProgress : ncclSuccess;
}
ncclResult_t CommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  PumpLocked();
  if (S().async_error) {
    *state = ncclSystemError;
  } else if (c->in_progress > 0) {
    --c->in_progress;
    *state = ncclInProgress;
  } else {
    *state = ncclSuccess;
  }
  return ncclSuccess;
}
ncclResult_t CommFinalize(ncclComm_t c) {
  c->in_progress = 1;
  return ncclInProgress;
}
ncclResult_t CommDestroy(ncclComm_t c) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.comm_destroys;
  c->aborted = true;
  return ncclSuccess;
}
ncclResult_t CommAbort(ncclComm_t c) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.comm_aborts;
  c->aborted = true;
  PumpLocked();  // its blocked work is dropped
  return ncclSuccess;
}
thread_local int t_group_depth = 0;
thread_local std::vector<ncclComm_t> t_group_comms;
ncclResult_t GroupStart() {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.group_starts;
  ++t_group_depth;
  return ncclSuccess;
}
ncclResult_t GroupEnd() {
  if (--t_group_depth > 0) return ncclSuccess;
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  bool nonblocking = false;
  for (ncclComm_t c : t_group_comms) {
    c->in_progress = 1;
    nonblocking = true;
  }
  t_group_comms.clear();
  return nonblocking ? ncclInProgress : ncclSuccess;
}

ncclResult_t AllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                       ncclComm_t comm, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  ++S().stats.allreduces;
  if (t_group_depth > 0) t_group_comms.push_back(comm);
  if (comm->rank == S().hang_rank) {  // stuck: never takes part, never finishes
    Enqueue(stream, [comm] { return comm->aborted; });
    return ncclSuccess;
  }
  DataType dt;
  switch (type) {
    case ncclFloat16:
      dt = DataType::kFloat16;
      break;
    case ncclBfloat16:
      dt = DataType::kBFloat16;
      break;
    case ncclFloat32:
      dt = DataType::kFloat32;
      break;
    case ncclFloat64:
      dt = DataType::kFloat64;
      break;
    case ncclInt32:
      dt = DataType::kInt32;
      break;
    case ncclInt64:
      dt = DataType::kInt64;
      break;
    case ncclUint8:
      dt = DataType::kUInt8;
      break;
    case ncclInt8:
      dt = DataType::kInt8;
      break;
    default:
      return ncclInvalidArgument;
  }
  ReduceOp rop;
  switch (op) {
    case ncclSum:
      rop = ReduceOp::kSum;
      break;
    case ncclAvg:
      rop = ReduceOp::kMean;
      break;
    case ncclMin:
      rop = ReduceOp::kMin;
      break;
    case ncclMax:
      rop = ReduceOp::kMax;
      break;
    case ncclProd:
      rop = ReduceOp::kProduct;
      break;
    default:
      return ncclInvalidArgument;
  }
  const auto key = std::make_pair(comm->clique, comm->next_coll++);
  const size_t bytes = count * DataTypeSize(dt);
  auto arrived = std::make_shared<bool>(false);
  Enqueue(stream, [=] {
    if (comm->aborted) return true;  // dropped by ncclCommAbort
    Coll& c = S().colls[key];
    if (!*arrived) {
      *arrived = true;
      if (c.arrived == 0) {
        c.acc.assign(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
      } else {
        internal::ReduceInto(dt, rop, c.acc.data(), send, count);
      }
      ++c.arrived;
      c.recv.push_back(recv);
      if (c.arrived == comm->nranks) {
        if (rop == ReduceOp::kMean && comm->nranks > 1)
          internal::DivideBy(dt, c.acc.data(), count, comm->nranks);
        for (void* r : c.recv) std::memcpy(r, c.acc.data(), bytes);
        c.complete = true;
      }
    }
    return c.complete;
  });
  return ncclSuccess;
}

}  // namespace

void Install(int devices, bool with_nccl, int nccl_version) {
  State& s = S();
  {
    std::lock_guard<std::recursive_mutex> lock(s.mu);
    for (auto& [p, _] : s.device_mem) std::free(p);
    s.device_mem.clear();
    s.devices = devices;
    s.hang_rank = -1;
    s.async_error = false;
    s.stats = {};
    s.colls.clear();
    g_nccl_version = nccl_version;
    GpuApi a;
    auto& c = a.cuda;
    c.GetErrorString = GetErrorString;
    c.GetDeviceCount = GetDeviceCount;
    c.GetDevice = GetDevice;
    c.SetDevice = SetDevice;
    c.DeviceGetPCIBusId = DeviceGetPCIBusId;
    c.PointerGetAttributes = PointerGetAttributes;
    c.GetLastError = GetLastError;
    c.StreamCreateWithFlags = StreamCreateWithFlags;
    c.StreamDestroy = StreamDestroy;
    c.StreamWaitEvent = StreamWaitEvent;
    c.EventCreateWithFlags = EventCreateWithFlags;
    c.EventDestroy = EventDestroy;
    c.EventRecord = EventRecord;
    c.EventQuery = EventQuery;
    c.MemcpyAsync = MemcpyAsync;
    c.MallocAsync = MallocAsync;
    c.FreeAsync = FreeAsync;
    c.HostAlloc = HostAlloc;
    c.FreeHost = FreeHost;
    a.have_nccl = with_nccl;
    a.nccl_version = with_nccl ? nccl_version : 0;
    a.nccl_unavailable = with_nccl ? "" : "NCCL could not be loaded (the fake has none)";
    auto& n = a.nccl;
    n.GetVersion = GetVersion;
    n.GetErrorString = NcclErrorString;
    n.GetLastError = NcclLastError;
    n.GetUniqueId = GetUniqueId;
    n.CommInitRankConfig = CommInitRankConfig;
    n.CommGetAsyncError = CommGetAsyncError;
    n.CommFinalize = CommFinalize;
    n.CommDestroy = CommDestroy;
    n.CommAbort = CommAbort;
    n.GroupStart = GroupStart;
    n.GroupEnd = GroupEnd;
    n.AllReduce = AllReduce;
    s.api = a;
  }
  internal::SetGpuApiForTesting(&s.api);
}

void Uninstall() {
  internal::SetGpuApiForTesting(nullptr);
}

Stats GetStats() {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  return S().stats;
}

void* DeviceAlloc(int device, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  return AllocDeviceLocked(device, bytes);
}

void SetHangingRank(int r) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  S().hang_rank = r;
}

void SetAsyncError(bool on) {
  std::lock_guard<std::recursive_mutex> lock(S().mu);
  S().async_error = on;
}

const internal::GpuApi& Api() {
  return S().api;
}

}  // namespace ringmaster::fake
