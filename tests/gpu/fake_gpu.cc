// The fake CUDA runtime + NCCL of fake_gpu.h: device memory behind
// PROT_NONE mappings, streams drained by one worker thread, per-device
// streams, events, contexts and communicators, graph capture, and NCCL's
// non-blocking codes and abort.
#include "fake_gpu.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/kernels.h"
#include "gpu/batched_copy_params.h"
#include "ringmaster/env_vars.h"

// fake_cuda_library.cc, the library the agent loads: its calls come here.
extern "C" void ringmaster_fake_gpu_connect(const ringmaster::internal::CudaApi* cuda,
                                            const ringmaster::internal::CudaOptionalApi* optional,
                                            const ringmaster::internal::DriverApi* driver,
                                            const ringmaster::internal::NcclApi* nccl);

// The opaque handles of the real headers, defined here for the fake.
struct CUstream_st {
  int device = 0;
  bool blocking = false;
  bool legacy = false;  // the legacy default stream of `device`
  bool capturing = false;
  CUstream_st* capture_origin = nullptr;  // the stream whose capture this one joined
  bool held = false;
  std::deque<std::function<bool()>> q;  // a task answers false while it blocks
  uint64_t enqueued = 0, completed = 0;
};
struct CUevent_st {
  int device = 0;
  uint64_t recorded = 0, completed = 0;
  CUstream_st* captured_in = nullptr;  // its last record was a node of this stream's capture
};
struct ncclComm {
  std::string clique;
  int nranks = 1, rank = 0, device = 0;
  bool nonblocking = false;
  int in_progress = 0;  // polls that still answer ncclInProgress
  bool aborted = false;
  int unstarted = 0;  // collectives queued that have not reached their stream's front
  uint64_t next_coll = 0;
};

namespace ringmaster::fake {
namespace {

using internal::GpuApi;

struct Coll {
  int arrived = 0;
  bool complete = false;
  std::vector<char*> recv;
  std::vector<char> acc;
};

struct Mapping {
  size_t bytes = 0, mapped = 0;
  int device = 0;
  char* shadow = nullptr;  // the worker's read-write view
  bool agent = false;      // allocated by the agent (cudaMalloc*)
};

struct State {
  std::mutex mu;
  std::condition_variable cv;  // any progress, any new work
  std::thread worker;
  bool stop = false;
  int devices = 2;
  int hang_rank = -1;
  bool async_error = false;
  bool hold_aborted = false;
  Stats stats;
  std::vector<bool> contexts;
  std::vector<size_t> limit;
  std::vector<size_t> used;
  std::map<char*, Mapping> device_mem;  // host-visible (PROT_NONE) base -> mapping
  std::map<char*, size_t> host_mem;
  std::vector<CUstream_st*> streams;  // every live stream, legacy ones first
  std::map<std::pair<std::string, uint64_t>, Coll> colls;
  std::vector<std::string> violations;
  // Owned here and never freed while the fake lives: queued work may still
  // point at an event or communicator the backend has let go of.
  std::vector<std::unique_ptr<CUevent_st>> events;
  std::vector<std::unique_ptr<ncclComm>> comms;
  std::vector<std::unique_ptr<CUstream_st>> owned_streams;
  std::vector<int> context_ids;  // CUcontext handles: &context_ids[d]
  uint64_t next_id = 1;
  // What the agent reads once per process, when it loads its table: NCCL's
  // presence and version (the first Install's), and the batched copy kernel
  // (loaded, or refused, once per device).
  int installs = 0;
  bool with_nccl = true;
  int nccl_version = 22703;
  bool nccl_version_read = false;
  bool kernel_available = true;
  bool kernel_loaded = false, kernel_refused = false;
};

State& S() {
  static State* s = new State;
  return *s;
}
using Lock = std::unique_lock<std::mutex>;

thread_local int t_ctx = -1;  // the thread's current device, -1: no context yet

// The runtime makes a context on the current device (0 before any
// cudaSetDevice) when a call needs one.
int NeedContext() {
  if (t_ctx < 0) t_ctx = 0;
  S().contexts[t_ctx] = true;
  return t_ctx;
}

// ---------------------------------------------------------------- memory

// The worker's view of [p, p + n): nullptr (and a violation) unless it lies
// in live device memory.
char* Shadow(const void* p, size_t n, const char* what) {
  char* c = const_cast<char*>(static_cast<const char*>(p));
  auto it = S().device_mem.upper_bound(c);
  if (it != S().device_mem.begin()) {
    --it;
    if (c >= it->first && c + n <= it->first + it->second.bytes) return it->second.shadow + (c - it->first);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s touched %zu bytes at %p that are not live device memory", what, n, p);
  S().violations.emplace_back(buf);
  return nullptr;
}

// Whether [p, p + n) lies in one pinned host allocation (cudaHostAlloc).
bool InPinned(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  auto h = S().host_mem.upper_bound(const_cast<char*>(c));
  if (h == S().host_mem.begin()) return false;
  --h;
  return c >= h->first && c + n <= h->first + h->second;
}

// What a kernel sees at [p, p + n): live device memory (its shadow), or
// pinned host memory (cudaHostAlloc: device-accessible at the same address
// under unified addressing); anything else (pageable host memory, freed
// memory) is nullptr and a violation, as a GPU's illegal address would be.
char* KernelView(const void* p, size_t n, const char* what) {
  if (InPinned(p, n)) return const_cast<char*>(static_cast<const char*>(p));
  return Shadow(p, n, what);
}

const Mapping* FindDevice(const void* p) {
  char* c = const_cast<char*>(static_cast<const char*>(p));
  auto it = S().device_mem.upper_bound(c);
  if (it == S().device_mem.begin()) return nullptr;
  --it;
  if (c < it->first || c >= it->first + std::max<size_t>(it->second.bytes, 1)) return nullptr;
  return &it->second;
}

char* MapDeviceLocked(int device, size_t n, bool agent) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t mapped = (std::max<size_t>(n, 1) + page - 1) / page * page;
  int fd = ::memfd_create("fake-gpu", 0);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(mapped)) != 0) std::abort();
  void* host = ::mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  void* shadow = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (host == MAP_FAILED || shadow == MAP_FAILED) std::abort();
  S().device_mem[static_cast<char*>(host)] = {n, mapped, device, static_cast<char*>(shadow), agent};
  return static_cast<char*>(host);
}

void UnmapLocked(std::map<char*, Mapping>::iterator it) {
  ::munmap(it->first, it->second.mapped);
  ::munmap(it->second.shadow, it->second.mapped);
  S().device_mem.erase(it);
}

void FreeDeviceLocked(void* p) {
  auto it = S().device_mem.find(static_cast<char*>(p));
  if (it == S().device_mem.end()) return;
  if (it->second.agent) {
    S().used[it->second.device] -= it->second.bytes;
    S().stats.agent_bytes -= it->second.bytes;
  }
  UnmapLocked(it);
}

// ---------------------------------------------------------------- streams

CUstream_st* Legacy(int device) {
  return S().streams[static_cast<size_t>(device)];
}

CUstream_st* Resolve(cudaStream_t s) {
  return s ? s : Legacy(t_ctx < 0 ? 0 : t_ctx);
}

// Queues `task` on `s`, after what the legacy stream's implicit
// synchronisation orders before it. Called with the lock held.
void Enqueue(CUstream_st* s, std::function<bool()> task) {
  if (s->capturing) return;  // captured into a graph that no one launches here
  std::vector<std::pair<CUstream_st*, uint64_t>> deps;
  for (CUstream_st* o : S().streams) {
    if (o == s || o->device != s->device) continue;
    if ((s->legacy && o->blocking) || (s->blocking && o->legacy)) deps.emplace_back(o, o->enqueued);
  }
  ++s->enqueued;
  if (deps.empty()) {
    s->q.push_back(std::move(task));
  } else {
    s->q.push_back([deps, task = std::move(task)] {
      for (auto& [o, n] : deps)
        if (o->completed < n) return false;
      return task();
    });
  }
  S().cv.notify_all();
}

void WorkerLoop() {
  Lock lock(S().mu);
  while (!S().stop) {
    bool moved = false;
    for (CUstream_st* s : S().streams) {
      while (!s->q.empty() && s->q.front()()) {
        s->q.pop_front();
        ++s->completed;
        moved = true;
      }
    }
    if (moved) {
      S().cv.notify_all();
    } else {
      S().cv.wait_for(lock, std::chrono::milliseconds(2));
    }
  }
}

bool WaitFor(Lock& lock, double seconds, const std::function<bool()>& done) {
  return S().cv.wait_for(lock, std::chrono::duration<double>(seconds), done);
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
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    default:
      return "fake CUDA error";
  }
}
cudaError_t GetDeviceCount(int* n) {
  *n = S().devices;
  return cudaSuccess;
}
cudaError_t GetDevice(int* d) {
  *d = t_ctx < 0 ? 0 : t_ctx;  // asks, makes nothing
  return cudaSuccess;
}
cudaError_t SetDevice(int d) {
  Lock lock(S().mu);
  if (d < 0 || d >= S().devices) return cudaErrorInvalidDevice;
  t_ctx = d;
  S().contexts[d] = true;  // CUDA 12: cudaSetDevice initialises the device's primary context
  return cudaSuccess;
}
int CtxGetCurrent(void** ctx) {
  *ctx = t_ctx < 0 ? nullptr : &S().context_ids[static_cast<size_t>(t_ctx)];
  return 0;
}
int CtxSetCurrent(void* ctx) {
  t_ctx = ctx ? *static_cast<int*>(ctx) : -1;
  return 0;
}
// cuMemGetAddressRange: the allocation p lies in; CUDA_ERROR_NOT_FOUND (500)
// for memory the fake did not allocate, as the driver answers.
int DriverMemGetAddressRange(unsigned long long* base, size_t* size, unsigned long long ptr) {
  Lock lock(S().mu);
  ++S().stats.range_queries;
  char* c = reinterpret_cast<char*>(static_cast<uintptr_t>(ptr));
  const Mapping* m = FindDevice(c);
  if (!m) return 500;
  *base = reinterpret_cast<uintptr_t>(std::prev(S().device_mem.upper_bound(c))->first);
  *size = m->bytes;
  return 0;
}
cudaError_t DeviceGetPCIBusId(char* out, int len, int d) {
  std::snprintf(out, static_cast<size_t>(len), "0000:%02x:00.0", d);
  return cudaSuccess;
}
cudaError_t PointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  Lock lock(S().mu);
  ++S().stats.pointer_queries;
  *a = {};
  a->type = cudaMemoryTypeUnregistered;
  if (const Mapping* m = FindDevice(p)) {
    a->type = cudaMemoryTypeDevice;
    a->device = m->device;
    a->devicePointer = const_cast<void*>(p);
    return cudaSuccess;
  }
  if (InPinned(p, 1)) a->type = cudaMemoryTypeHost;
  return cudaSuccess;
}
cudaError_t GetLastError() {
  return cudaSuccess;
}
cudaError_t StreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  Lock lock(S().mu);
  auto owned = std::make_unique<CUstream_st>();
  owned->device = NeedContext();
  owned->blocking = (flags & cudaStreamNonBlocking) == 0;
  *s = owned.get();
  S().streams.push_back(owned.get());
  S().owned_streams.push_back(std::move(owned));
  return cudaSuccess;
}
cudaError_t StreamDestroy(cudaStream_t s) {
  // Its queued work still runs (as CUDA does); the stream object stays with
  // the fake until Install/Uninstall.
  return s ? cudaSuccess : cudaErrorInvalidResourceHandle;
}
cudaError_t StreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  Lock lock(S().mu);
  *status = Resolve(s)->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t StreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  Lock lock(S().mu);
  NeedContext();
  ++S().stats.stream_waits;
  CUstream_st* st = Resolve(s);
  if (e->captured_in) {  // waiting on a captured node pulls the stream into the capture
    st->capturing = true;
    st->capture_origin = e->captured_in;
    return cudaSuccess;
  }
  const uint64_t target = e->recorded;  // the record at the time of the call (CUDA's rule)
  Enqueue(st, [e, target] { return e->completed >= target; });
  return cudaSuccess;
}
cudaError_t EventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  Lock lock(S().mu);
  ++S().stats.events_created;
  S().events.push_back(std::make_unique<CUevent_st>());
  S().events.back()->device = NeedContext();
  *e = S().events.back().get();
  return cudaSuccess;
}
cudaError_t EventDestroy(cudaEvent_t) {
  return cudaSuccess;
}
cudaError_t EventRecord(cudaEvent_t e, cudaStream_t s) {
  Lock lock(S().mu);
  NeedContext();
  CUstream_st* st = Resolve(s);
  if (st->device != e->device) return cudaErrorInvalidResourceHandle;  // another device's event
  if (st->capturing) {  // a node of the graph: the event itself is untouched
    e->captured_in = st->capture_origin ? st->capture_origin : st;
    return cudaSuccess;
  }
  e->captured_in = nullptr;
  const uint64_t gen = ++e->recorded;
  Enqueue(st, [e, gen] {
    e->completed = std::max(e->completed, gen);
    return true;
  });
  return cudaSuccess;
}
cudaError_t EventQuery(cudaEvent_t e) {
  Lock lock(S().mu);
  return e->completed >= e->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t MemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  Lock lock(S().mu);
  NeedContext();
  const bool from_dev = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDeviceToHost;
  const bool to_dev = kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyHostToDevice;
  if (kind == cudaMemcpyDeviceToDevice) ++S().stats.d2d_copies;
  if (kind == cudaMemcpyDeviceToHost) ++S().stats.d2h_copies;
  if (kind == cudaMemcpyHostToDevice) ++S().stats.h2d_copies;
  if (n == 0) return cudaSuccess;
  if ((from_dev && !FindDevice(src)) || (to_dev && !FindDevice(dst))) return cudaErrorInvalidValue;
  Enqueue(Resolve(s), [=] {
    const char* from = from_dev ? Shadow(src, n, "cudaMemcpyAsync (read)") : static_cast<const char*>(src);
    char* to = to_dev ? Shadow(dst, n, "cudaMemcpyAsync (write)") : static_cast<char*>(dst);
    if (from && to) std::memmove(to, from, n);
    return true;
  });
  return cudaSuccess;
}
// cudaMallocAsync (the agent's only device allocation), against the limit.
cudaError_t AgentAlloc(void** p, size_t n) {
  const int d = NeedContext();
  if (S().used[d] + n > S().limit[d]) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  S().used[d] += n;
  S().stats.agent_bytes += n;
  S().stats.peak_agent_bytes = std::max(S().stats.peak_agent_bytes, S().stats.agent_bytes);
  ++S().stats.device_allocs;
  *p = MapDeviceLocked(d, n, true);
  return cudaSuccess;
}
cudaError_t MallocAsync(void** p, size_t n, cudaStream_t) {
  Lock lock(S().mu);
  return AgentAlloc(p, n);
}
cudaError_t FreeAsync(void* p, cudaStream_t s) {
  Lock lock(S().mu);
  NeedContext();
  Enqueue(Resolve(s), [p] {
    FreeDeviceLocked(p);
    return true;
  });
  return cudaSuccess;
}
cudaError_t HostAlloc(void** p, size_t n, unsigned int) {
  Lock lock(S().mu);
  NeedContext();
  ++S().stats.host_allocs;
  *p = std::malloc(n);
  S().host_mem[static_cast<char*>(*p)] = n;
  return cudaSuccess;
}
cudaError_t FreeHost(void* p) {
  Lock lock(S().mu);
  S().host_mem.erase(static_cast<char*>(p));
  std::free(p);
  return cudaSuccess;
}

// ---------------------------------------------------------------- the batched copy kernel

// The runtime's loading of the agent's embedded image, and its kernels run on
// the host: the by-value one's parameter is the RmBatchedCopyParams; the
// table one's is an RmBatchedCopyTableParams, whose table is read from device
// memory when the kernel runs (as on a GPU), not when it is launched.
int g_library = 0, g_kernel = 0, g_table_kernel = 0;  // their addresses are the handles
cudaError_t RuntimeGetVersion(int* v) {
  *v = 12090;
  return cudaSuccess;
}
cudaError_t DeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= S().devices) return cudaErrorInvalidDevice;
  if (attr == cudaDevAttrComputeCapabilityMajor)
    *value = 9;
  else if (attr == cudaDevAttrComputeCapabilityMinor)
    *value = 0;
  else
    return cudaErrorInvalidValue;
  return cudaSuccess;
}
cudaError_t LibraryLoadData(cudaLibrary_t* lib, const void* code, cudaJitOption*, void**, unsigned int,
                            cudaLibraryOption*, void**, unsigned int) {
  if (!code) return cudaErrorInvalidValue;
  Lock lock(S().mu);
  if (!S().kernel_available) {  // what a runtime that cannot load the image answers
    S().kernel_refused = true;
    return cudaErrorUnsupportedPtxVersion;
  }
  S().kernel_loaded = true;
  *lib = reinterpret_cast<cudaLibrary_t>(&g_library);
  return cudaSuccess;
}
cudaError_t LibraryUnload(cudaLibrary_t) {
  return cudaSuccess;
}
cudaError_t LibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t, const char* name) {
  if (std::strcmp(name, RM_BATCHED_COPY_KERNEL_NAME) == 0) {
    *kernel = reinterpret_cast<cudaKernel_t>(&g_kernel);
  } else if (std::strcmp(name, RM_BATCHED_COPY_TABLE_KERNEL_NAME) == 0) {
    *kernel = reinterpret_cast<cudaKernel_t>(&g_table_kernel);
  } else {
    return cudaErrorSymbolNotFound;
  }
  return cudaSuccess;
}
cudaError_t FuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (func != &g_kernel && func != &g_table_kernel) return cudaErrorInvalidDeviceFunction;
  *attr = {};
  attr->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
// The table kernel as it runs, reading its table from device memory then:
// every chunk of every item exactly once, each chunk copied where its index
// entry says (a wrong entry copies the wrong bytes, as on a GPU), anything
// else recorded as a violation.
void RunCopyTable(const RmBatchedCopyTableParams& t, const void* table, const void* chunk_table) {
  const char* raw =
      Shadow(table, size_t{t.count} * sizeof(RmBatchedCopyItem), "the batched copy table (read)");
  const char* raw_chunks =
      Shadow(chunk_table, size_t{t.chunk_count} * sizeof(unsigned), "the batched copy chunks (read)");
  if (!raw || !raw_chunks) return;
  std::vector<RmBatchedCopyItem> items(t.count);
  std::memcpy(items.data(), raw, items.size() * sizeof(RmBatchedCopyItem));
  std::vector<unsigned> chunks(t.chunk_count);
  std::memcpy(chunks.data(), raw_chunks, chunks.size() * sizeof(unsigned));
  size_t next = 0;  // the chunks must be the items', in order, without gaps
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t n = (items[i].bytes + t.chunk_bytes - 1) / t.chunk_bytes;
    bool right = items[i].first_chunk == next && next + n <= chunks.size();
    for (size_t k = 0; right && k < n; ++k) right = chunks[next + k] == i;
    if (!right) {
      S().violations.push_back("the batched copy table's item " + std::to_string(i) + " (first chunk " +
                               std::to_string(items[i].first_chunk) + ") does not own chunks " +
                               std::to_string(next) + ".." + std::to_string(next + n));
      return;
    }
    next += n;
  }
  if (next != chunks.size()) {
    S().violations.push_back("the batched copy table has " + std::to_string(chunks.size()) + " chunks for " +
                             std::to_string(next) + " of its items'");
    return;
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    const RmBatchedCopyItem& it = items[chunks[c]];
    const size_t off = (c - it.first_chunk) * size_t{t.chunk_bytes};
    const size_t n = std::min<size_t>(t.chunk_bytes, it.bytes - off);
    const char* from = KernelView(reinterpret_cast<const void*>(static_cast<uintptr_t>(it.src + off)), n,
                                  "the batched copy table kernel (read)");
    char* to = KernelView(reinterpret_cast<void*>(static_cast<uintptr_t>(it.dst + off)), n,
                          "the batched copy table kernel (write)");
    if (from && to) std::memmove(to, from, n);
  }
}

cudaError_t LaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t, cudaStream_t s) {
  Lock lock(S().mu);
  const int d = NeedContext();
  if ((func != &g_kernel && func != &g_table_kernel) || !args) return cudaErrorInvalidDeviceFunction;
  CUstream_st* st = Resolve(s);
  if (st->device != d)
    return cudaErrorInvalidResourceHandle;  // a kernel runs on the current device's streams
  if (block.x != RM_BATCHED_COPY_THREADS) return cudaErrorInvalidConfiguration;
  if (func == &g_table_kernel) {
    const RmBatchedCopyTableParams t = *static_cast<const RmBatchedCopyTableParams*>(args[0]);
    const void* table = reinterpret_cast<const void*>(static_cast<uintptr_t>(t.items));
    const void* chunk_table = reinterpret_cast<const void*>(static_cast<uintptr_t>(t.chunks));
    if (t.count == 0 || t.chunk_count == 0 || t.chunk_bytes == 0 || t.chunk_bytes % 16 != 0 || grid.x == 0 ||
        !FindDevice(table) || !FindDevice(chunk_table))
      return cudaErrorInvalidValue;
    ++S().stats.kernel_launches;
    ++S().stats.table_launches;
    Enqueue(st, [t, table, chunk_table] {
      RunCopyTable(t, table, chunk_table);
      return true;
    });
    return cudaSuccess;
  }
  const RmBatchedCopyParams p = *static_cast<const RmBatchedCopyParams*>(args[0]);
  if (p.count == 0 || p.count > RM_BATCHED_COPY_MAX_ITEMS || grid.x != p.block_end[p.count - 1])
    return cudaErrorInvalidConfiguration;
  ++S().stats.kernel_launches;
  Enqueue(st, [p] {
    for (unsigned i = 0; i < p.count; ++i) {
      const void* src = reinterpret_cast<const void*>(p.src[i]);
      void* dst = reinterpret_cast<void*>(p.dst[i]);
      const char* from = KernelView(src, p.bytes[i], "the batched copy kernel (read)");
      char* to = KernelView(dst, p.bytes[i], "the batched copy kernel (write)");
      if (from && to) std::memmove(to, from, p.bytes[i]);
    }
    return true;
  });
  return cudaSuccess;
}

// ---------------------------------------------------------------- NCCL

ncclResult_t GetVersion(int* v) {
  Lock lock(S().mu);
  S().nccl_version_read = true;
  *v = S().nccl_version;
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
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    default:
      return "fake NCCL error";
  }
}
const char* NcclLastError(ncclComm_t) {
  return "";
}
ncclResult_t GetUniqueId(ncclUniqueId* id) {
  Lock lock(S().mu);
  ++S().stats.unique_ids;
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "fake-id-%llu",
                static_cast<unsigned long long>(S().next_id++));
  return ncclSuccess;
}
ncclResult_t CommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                ncclConfig_t* config) {
  Lock lock(S().mu);
  ++S().stats.comm_inits;
  S().comms.push_back(std::make_unique<ncclComm>());
  ncclComm* c = S().comms.back().get();
  c->clique = std::string(id.internal, strnlen(id.internal, sizeof id.internal));
  c->nranks = nranks;
  c->rank = rank;
  c->device = NeedContext();
  c->nonblocking = config && config->blocking == 0;
  c->in_progress = c->nonblocking ? 2 : 0;
  *comm = c;
  return c->nonblocking ? ncclInProgress : ncclSuccess;
}
ncclResult_t CommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  Lock lock(S().mu);
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
  Lock lock(S().mu);
  if (c->in_progress > 0) return ncclInvalidUsage;
  c->in_progress = 1;
  return ncclInProgress;
}
ncclResult_t CommDestroy(ncclComm_t c) {
  Lock lock(S().mu);
  ++S().stats.comm_destroys;
  c->aborted = true;
  S().cv.notify_all();
  return ncclSuccess;
}
ncclResult_t CommAbort(ncclComm_t c) {
  Lock lock(S().mu);
  ++S().stats.comm_aborts;
  c->aborted = true;
  S().cv.notify_all();
  // The real abort waits for the work queued on the communicator's streams
  // to reach its kernels: behind a stream that never progresses, forever.
  S().cv.wait(lock, [c] { return c->unstarted == 0 || S().stop; });
  return ncclSuccess;
}
thread_local int t_group_depth = 0;
thread_local std::vector<ncclComm_t> t_group_comms;
ncclResult_t GroupStart() {
  Lock lock(S().mu);
  ++S().stats.group_starts;
  ++t_group_depth;
  return ncclSuccess;
}
ncclResult_t GroupEnd() {
  Lock lock(S().mu);
  if (--t_group_depth > 0) return ncclSuccess;
  bool nonblocking = false;
  for (ncclComm_t c : t_group_comms) {
    if (!c->nonblocking) continue;
    c->in_progress = 1;
    nonblocking = true;
  }
  t_group_comms.clear();
  return nonblocking ? ncclInProgress : ncclSuccess;
}

StatusOr<DataType> FromNccl(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
      return DataType::kFloat16;
    case ncclBfloat16:
      return DataType::kBFloat16;
    case ncclFloat32:
      return DataType::kFloat32;
    case ncclFloat64:
      return DataType::kFloat64;
    case ncclInt32:
      return DataType::kInt32;
    case ncclInt64:
      return DataType::kInt64;
    case ncclUint8:
      return DataType::kUInt8;
    case ncclInt8:
      return DataType::kInt8;
    default:
      return InvalidArgumentError("type");
  }
}
StatusOr<ReduceOp> FromNccl(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return ReduceOp::kSum;
    case ncclAvg:
      return ReduceOp::kMean;
    case ncclMin:
      return ReduceOp::kMin;
    case ncclMax:
      return ReduceOp::kMax;
    case ncclProd:
      return ReduceOp::kProduct;
    default:
      return InvalidArgumentError("op");
  }
}

ncclResult_t AllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                       ncclComm_t comm, cudaStream_t stream) {
  Lock lock(S().mu);
  ++S().stats.allreduces;
  if (comm->in_progress > 0) return ncclInvalidUsage;  // not polled to success since the last call
  auto dt = FromNccl(type);
  auto rop = FromNccl(op);
  if (!dt.ok() || !rop.ok()) return ncclInvalidArgument;
  CUstream_st* st = Resolve(stream);
  if (st->device != comm->device) return ncclUnhandledCudaError;  // a stream of another device
  const size_t bytes = count * DataTypeSize(*dt);
  const Mapping* ms = FindDevice(send);
  const Mapping* mr = FindDevice(recv);
  if (!ms || !mr || ms->device != comm->device || mr->device != comm->device) return ncclInvalidArgument;
  if (t_group_depth > 0) {
    t_group_comms.push_back(comm);
  } else if (comm->nonblocking) {
    comm->in_progress = 1;
  }
  if (st->capturing) return t_group_depth > 0 || !comm->nonblocking ? ncclSuccess : ncclInProgress;
  ++comm->unstarted;
  auto started = std::make_shared<bool>(false);
  auto start = [comm, started] {
    if (*started) return;
    *started = true;
    --comm->unstarted;
    S().cv.notify_all();
  };
  if (comm->rank == S().hang_rank) {  // stuck: never takes part, never finishes
    Enqueue(st, [comm, start] {
      start();
      return comm->aborted && !S().hold_aborted;
    });
    return t_group_depth > 0 || !comm->nonblocking ? ncclSuccess : ncclInProgress;
  }
  const auto key = std::make_pair(comm->clique, comm->next_coll++);
  auto arrived = std::make_shared<bool>(false);
  const DataType d = *dt;
  const ReduceOp r = *rop;
  Enqueue(st, [=] {
    start();
    if (comm->aborted) return !S().hold_aborted;  // dropped by ncclCommAbort
    Coll& c = S().colls[key];
    if (!*arrived) {
      char* in = Shadow(send, bytes, "ncclAllReduce (send)");
      char* out = Shadow(recv, bytes, "ncclAllReduce (recv)");
      if (!in || !out) return true;
      *arrived = true;
      if (c.arrived == 0) {
        c.acc.assign(in, in + bytes);
      } else {
        internal::ReduceInto(d, r, c.acc.data(), in, count);
      }
      ++c.arrived;
      c.recv.push_back(out);
      if (c.arrived == comm->nranks) {
        if (r == ReduceOp::kMean && comm->nranks > 1)
          internal::DivideBy(d, c.acc.data(), count, comm->nranks);
        for (char* o : c.recv) std::memcpy(o, c.acc.data(), bytes);
        c.complete = true;
      }
    }
    return c.complete;
  });
  return t_group_depth > 0 || !comm->nonblocking ? ncclSuccess : ncclInProgress;
}

void ResetLocked(int devices) {
  State& s = S();
  while (!s.device_mem.empty()) UnmapLocked(s.device_mem.begin());
  for (auto& [p, _] : s.host_mem) std::free(p);
  s.host_mem.clear();
  s.devices = devices;
  s.hang_rank = -1;
  s.async_error = false;
  s.hold_aborted = false;
  s.stats = {};
  s.colls.clear();
  s.violations.clear();
  s.contexts.assign(static_cast<size_t>(devices), false);
  s.limit.assign(static_cast<size_t>(devices), SIZE_MAX);
  s.used.assign(static_cast<size_t>(devices), 0);
  s.context_ids.resize(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d) s.context_ids[static_cast<size_t>(d)] = d;
  s.streams.clear();
  s.owned_streams.clear();
  for (int d = 0; d < devices; ++d) {
    auto legacy = std::make_unique<CUstream_st>();
    legacy->device = d;
    legacy->legacy = true;
    s.streams.push_back(legacy.get());
    s.owned_streams.push_back(std::move(legacy));
  }
}

// The fake's functions, handed once to the library the agent loads, and
// that library named where the agent looks (RINGMASTER_CUDART_LIBRARY and
// RINGMASTER_NCCL_LIBRARY; its soname is libcuda.so.1). Done before main()
// too, so that nothing loads the agent's table without the fake.
void Connect() {
  static const bool connected = [] {
    static internal::CudaApi c;
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
    c.StreamIsCapturing = StreamIsCapturing;
    static internal::CudaOptionalApi o;
    o.RuntimeGetVersion = RuntimeGetVersion;
    o.DeviceGetAttribute = DeviceGetAttribute;
    o.LibraryLoadData = LibraryLoadData;
    o.LibraryUnload = LibraryUnload;
    o.LibraryGetKernel = LibraryGetKernel;
    o.FuncGetAttributes = FuncGetAttributes;
    o.LaunchKernel = LaunchKernel;
    static internal::DriverApi d;
    d.CtxGetCurrent = CtxGetCurrent;
    d.CtxSetCurrent = CtxSetCurrent;
    d.MemGetAddressRange = DriverMemGetAddressRange;
    static internal::NcclApi n;
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
    ringmaster_fake_gpu_connect(&c, &o, &d, &n);
    Dl_info info{};
    if (!::dladdr(reinterpret_cast<void*>(&ringmaster_fake_gpu_connect), &info) || !info.dli_fname) {
      std::fprintf(stderr, "fake_gpu: cannot find the fake's library (dladdr)\n");
      std::abort();
    }
    ::setenv(kEnvCudartLibrary, info.dli_fname, 1);
    ::setenv(kEnvNcclLibrary, info.dli_fname, 1);
    return true;
  }();
  (void)connected;
}
[[maybe_unused]] const bool g_connected_before_main = (Connect(), true);

// What the agent keeps for the process's life cannot change with a later
// Install: such a case must run in a process of its own, as ctest runs each.
[[noreturn]] void FixedPerProcess(const std::string& what) {
  std::fprintf(stderr,
               "fake_gpu: %s, but the agent read it once for this process; run this case in a process of "
               "its own (ctest runs each case alone)\n",
               what.c_str());
  std::abort();
}

}  // namespace

void Install(int devices, bool with_nccl, int nccl_version) {
  Connect();
  Uninstall();
  State& s = S();
  {
    Lock lock(s.mu);
    if (s.installs++ == 0) {
      s.with_nccl = with_nccl;
      s.nccl_version = nccl_version;
      // Without NCCL the agent finds none where it is told to look.
      if (!with_nccl) {
        if (s.nccl_version_read) FixedPerProcess("Install asks for no NCCL");
        const std::string none = std::string(std::getenv(kEnvNcclLibrary)) + ".no-nccl";
        ::setenv(kEnvNcclLibrary, none.c_str(), 1);
      }
    } else if (with_nccl != s.with_nccl || (with_nccl && nccl_version != s.nccl_version)) {
      FixedPerProcess(with_nccl ? "Install asks for NCCL " + std::to_string(nccl_version)
                                : std::string("Install asks for no NCCL"));
    }
    if (s.kernel_refused) FixedPerProcess("an earlier case turned the batched copy kernel off");
    ResetLocked(devices);
    s.kernel_available = true;
    t_ctx = -1;
    s.stop = false;
  }
  s.worker = std::thread(WorkerLoop);
}

void Uninstall() {
  State& s = S();
  {
    Lock lock(s.mu);
    s.stop = true;
    s.cv.notify_all();
  }
  if (s.worker.joinable()) s.worker.join();
  t_ctx = -1;
}

Stats GetStats() {
  Lock lock(S().mu);
  return S().stats;
}

void* DeviceAlloc(int device, size_t bytes) {
  Lock lock(S().mu);
  return MapDeviceLocked(device, bytes, false);
}

void Upload(void* device_ptr, const void* host, size_t bytes) {
  Lock lock(S().mu);
  if (char* to = Shadow(device_ptr, bytes, "fake::Upload")) std::memcpy(to, host, bytes);
}

void Download(void* host, const void* device_ptr, size_t bytes) {
  Lock lock(S().mu);
  if (const char* from = Shadow(device_ptr, bytes, "fake::Download")) std::memcpy(host, from, bytes);
}

cudaStream_t NewStream(int device, bool blocking) {
  Lock lock(S().mu);
  auto owned = std::make_unique<CUstream_st>();
  owned->device = device;
  owned->blocking = blocking;
  cudaStream_t s = owned.get();
  S().streams.push_back(s);
  S().owned_streams.push_back(std::move(owned));
  return s;
}

void HoldStream(cudaStream_t s) {
  Lock lock(S().mu);
  CUstream_st* st = Resolve(s);
  st->held = true;
  Enqueue(st, [st] { return !st->held; });
}

void ReleaseStream(cudaStream_t s) {
  Lock lock(S().mu);
  Resolve(s)->held = false;
  S().cv.notify_all();
}

void FillAsync(void* device_ptr, uint8_t value, size_t bytes, cudaStream_t s) {
  Lock lock(S().mu);
  Enqueue(Resolve(s), [=] {
    if (char* to = Shadow(device_ptr, bytes, "fake::FillAsync")) std::memset(to, value, bytes);
    return true;
  });
}

bool WaitIdle(cudaStream_t s, double seconds) {
  Lock lock(S().mu);
  CUstream_st* st = Resolve(s);
  return WaitFor(lock, seconds, [st] { return st->q.empty(); });
}

bool Synchronize(double seconds) {
  Lock lock(S().mu);
  return WaitFor(lock, seconds, [] {
    for (CUstream_st* s : S().streams)
      if (!s->q.empty()) return false;
    return true;
  });
}

void BeginCapture(cudaStream_t s) {
  Lock lock(S().mu);
  Resolve(s)->capturing = true;
}

void EndCapture(cudaStream_t s) {
  Lock lock(S().mu);
  CUstream_st* origin = Resolve(s);
  for (CUstream_st* o : S().streams) {
    if (o == origin || o->capture_origin == origin) {
      o->capturing = false;
      o->capture_origin = nullptr;
    }
  }
}

bool HasContext(int device) {
  Lock lock(S().mu);
  return S().contexts[static_cast<size_t>(device)];
}

void SetAgentMemoryLimit(int device, size_t bytes) {
  Lock lock(S().mu);
  S().limit[static_cast<size_t>(device)] = bytes;
}

void SetHangingRank(int r) {
  Lock lock(S().mu);
  S().hang_rank = r;
}

void SetBatchedCopyKernel(bool available) {
  Lock lock(S().mu);
  if (!available && S().kernel_loaded) FixedPerProcess("SetBatchedCopyKernel(false) after the kernel loaded");
  S().kernel_available = available;
}

void SetAsyncError(bool on) {
  Lock lock(S().mu);
  S().async_error = on;
}

void HoldAbortedKernels(bool on) {
  Lock lock(S().mu);
  S().hold_aborted = on;
  S().cv.notify_all();
}

std::vector<std::string> Violations() {
  Lock lock(S().mu);
  return S().violations;
}

const internal::GpuApi& Api() {
  Connect();
  auto api = internal::LoadGpuApi();
  if (!api.ok()) {
    std::fprintf(stderr, "fake_gpu: the agent did not load the fake: %s\n", api.status().message().c_str());
    std::abort();
  }
  return **api;
}

}  // namespace ringmaster::fake
