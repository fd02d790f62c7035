// rm-bench-gpu's three measurements (gpu_cases.h): the agent's figure and its
// bound from the same inputs, both checked byte for byte afterwards.
#include "gpu_cases.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

#include "free_ports.h"

namespace rmgpubench {

using ringmaster::CollectiveGroup;
using ringmaster::CommunicationOptions;
using ringmaster::Communicator;
using ringmaster::CommunicatorSettings;
using ringmaster::DataType;
using ringmaster::Implementation;
using ringmaster::MemoryKind;
using ringmaster::ReduceOp;
using ringmaster::Status;
using ringmaster::StatusOr;
using ringmaster::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

// Written over every output before a timed out-of-place call, so a result
// that was never written cannot pass for one.
constexpr unsigned char kPoison = 0xa5;
// Between packed tensors: random bytes the all-reduce must leave alone.
constexpr size_t kGap = 256;

class DeviceBuffer {
 public:
  DeviceBuffer(BenchDevice& dev, size_t bytes) : dev_(dev), p_(dev.Alloc(std::max<size_t>(bytes, 1))) {}
  ~DeviceBuffer() { dev_.Free(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  BenchDevice& dev_;
  void* p_;
};

void Fail(Row& r, const std::string& what) {
  r.check = r.check == "ok" ? what : r.check + "; " + what;
}

CommunicationOptions Options(Implementation impl, const Plan& plan) {
  CommunicationOptions o;
  o.implementation = impl;
  o.timeout_seconds = plan.timeout_seconds;
  return o;
}

// One call through the agent's public API, timed from the call until
// Wait() returns (the results are in place then). Seconds, or -1 with
// `st` set when it failed.
double AgentCall(Communicator& c, std::span<const Tensor> ts, ReduceOp op, const CommunicationOptions& o,
                 Status& st, bool async = true) {
  const auto t0 = Clock::now();
  st = async ? c.AllReduceAsync(ts, op, o).Wait() : c.AllReduce(ts, op, o);
  const auto t1 = Clock::now();
  return st.ok() ? std::chrono::duration<double>(t1 - t0).count() : -1;
}

// `warmups` untimed calls, then `iters` timed ones, each after before()
// (untimed); fn returns its own seconds, or < 0 when it failed (then stop:
// the timings so far are returned, and the caller reports the failure).
std::vector<double> Times(int warmups, int iters, const std::function<void()>& before,
                          const std::function<double()>& fn) {
  std::vector<double> t;
  for (int i = 0; i < warmups + iters; ++i) {
    if (before) before();
    const double s = fn();
    if (s < 0) return {};
    if (i >= warmups) t.push_back(s);
  }
  return t;
}

// Rounds of a collective on n threads: before(r) (untimed), then every
// member lined up by a barrier, then call(r) (seconds, < 0 on failure). A
// round's time is its slowest member's; warm-ups are left out. Empty when
// a member failed.
std::vector<double> RunMembers(int n, int warmups, int iters, const std::function<void(int)>& before,
                               const std::function<double(int)>& call) {
  std::barrier sync(n);
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> t(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < warmups + iters; ++i) {
        before(r);
        sync.arrive_and_wait();
        const double s = failed ? -1 : call(r);
        if (s < 0) {
          failed = true;
          sync.arrive_and_drop();
          return;
        }
        t[r].push_back(s);
      }
    });
  }
  for (auto& th : threads) th.join();
  if (failed) return {};
  std::vector<double> rounds;
  for (int i = warmups; i < warmups + iters; ++i) {
    double slowest = 0;
    for (int r = 0; r < n; ++r) slowest = std::max(slowest, t[r][static_cast<size_t>(i)]);
    rounds.push_back(slowest);
  }
  return rounds;
}

double GBps(size_t bytes, const std::vector<double>& t) {
  return static_cast<double>(bytes) / MedianSeconds(t) / 1e9;
}
double Micros(const std::vector<double>& t) {
  return MedianSeconds(t) * 1e6;
}

void Finish(Row& r, double ringmaster, double bound) {
  r.ringmaster = ringmaster;
  r.bound = bound;
  r.ratio = SpeedRatio(ringmaster, bound, r.unit);
}

std::vector<float> Download(BenchDevice& dev, const void* p, size_t floats, void* stream) {
  std::vector<float> out(floats);
  dev.CopyToHost(out.data(), p, floats * sizeof(float), stream);
  return out;
}

}  // namespace

StatusOr<std::vector<std::unique_ptr<Communicator>>> FormLocalGroup(int n) {
  CollectiveGroup group;
  // TF_CONFIG ports, then the agents' own control ports (as `ringmaster run` gives them).
  const auto ports = ringmaster::internal::FreeLocalPorts(2 * n);
  for (int r = 0; r < n; ++r)
    group.members.push_back(
        {r == 0 ? "chief" : "worker", r == 0 ? 0 : r - 1, "127.0.0.1:" + std::to_string(ports.at(r))});
  std::vector<std::unique_ptr<Communicator>> out(n);
  std::vector<Status> st(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      CommunicatorSettings s;
      s.group = group;
      s.group.rank = r;
      s.control_ports.assign(ports.begin() + n, ports.end());
      s.formation_timeout_seconds = 60;
      auto c = Communicator::Create(s);
      if (c.ok())
        out[r] = std::move(*c);
      else
        st[r] = c.status();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!st[r].ok())
      return ringmaster::UnavailableError("member " + std::to_string(r) + " of " + std::to_string(n) +
                                          " could not join: " + st[r].ToString());
  }
  return out;
}

void MeasurePacking(BenchDevice& dev, Communicator& one, const Plan& plan, const Emit& emit) {
  void* s = dev.NewStream();
  uint64_t seed = plan.seed * 1000 + 100;
  for (size_t tb : plan.pack_tensor_bytes) {
    const size_t n = tb ? plan.pack_total_bytes / tb : 0;
    const size_t payload = n * tb, stride = tb + kGap, span_bytes = n * stride;
    Row r;
    r.kind = "pack";
    r.bytes = tb;
    r.tensors = static_cast<int64_t>(n);
    r.unit = kGBps;
    r.name = "pack " + std::to_string(n) + " x " + SizeText(tb) + " (" + SizeText(payload) + ")";
    r.bound_what = "one " + SizeText(payload) + " device-to-device copy";
    if (n == 0 || tb % sizeof(float) != 0) {
      Fail(r, "bad plan: tensors of " + std::to_string(tb) + " bytes in " +
                  std::to_string(plan.pack_total_bytes));
      emit(r);
      continue;
    }

    // Ringmaster: n float32 tensors kGap bytes apart in one allocation; the
    // gaps hold random bytes too, which the call must leave as they are.
    // One member's SUM leaves every tensor as it was: the reference is the
    // input itself.
    const std::vector<float> host = RandomValues(span_bytes / sizeof(float), seed++);
    DeviceBuffer buf(dev, span_bytes);
    dev.CopyToDevice(buf.get(), host.data(), span_bytes, s);
    std::vector<Tensor> ts(n);
    for (size_t i = 0; i < n; ++i) {
      ts[i] = Tensor{buf.get() + i * stride, static_cast<int64_t>(tb / sizeof(float)), DataType::kFloat32,
                     MemoryKind::kDevice};
      ts[i].stream = s;
    }
    const auto o = Options(Implementation::kNccl, plan);
    Status st;
    const auto agent =
        Times(plan.warmups, plan.iters, nullptr, [&] { return AgentCall(one, ts, ReduceOp::kSum, o, st); });
    if (!st.ok()) {
      Fail(r, "ringmaster: " + st.ToString());
    } else {
      const std::string bad = CompareBytes(Bytes(Download(dev, buf.get(), host.size(), s)), Bytes(host),
                                           [&](size_t off) { return NameTensorByte(off, tb, stride); });
      if (!bad.empty()) Fail(r, "ringmaster: " + bad);
    }

    // The bound: the same number of bytes, fresh random ones, as one buffer
    // copied once on the same stream; the output poisoned before each copy.
    const std::vector<float> flat = RandomValues(payload / sizeof(float), seed++);
    DeviceBuffer src(dev, payload), dst(dev, payload);
    dev.CopyToDevice(src.get(), flat.data(), payload, s);
    const auto bound = Times(
        plan.warmups, plan.iters, [&] { dev.Fill(dst.get(), kPoison, payload, s); },
        [&] { return dev.TimedCopy(dst.get(), src.get(), payload, s); });
    const std::string bad = CompareBytes(Bytes(Download(dev, dst.get(), flat.size(), s)), Bytes(flat));
    if (!bad.empty()) Fail(r, "bound: " + bad);
    Finish(r, GBps(payload, agent), GBps(payload, bound));
    emit(r);
  }
}

void MeasureLatency(BenchDevice& dev, Communicator& one, const Plan& plan, const Emit& emit) {
  void* s = dev.NewStream();
  uint64_t seed = plan.seed * 1000 + 200;
  std::string bound_error;
  bool bound_ready = false;
  for (size_t want_bytes : plan.latency_bytes) {
    const size_t count = std::max<size_t>(1, want_bytes / sizeof(float)), bytes = count * sizeof(float);
    Row r;
    r.kind = "latency";
    r.bytes = bytes;
    r.unit = kMicros;
    r.name = "all-reduce " + SizeText(bytes) + ", one rank";
    r.bound_what = "ncclAllReduce, ncclAvg, out of place";

    // Ringmaster: MEAN (NCCL's ncclAvg, a kernel that reads and writes every
    // element even on one rank), in place; one rank's mean is its input.
    const std::vector<float> in = RandomValues(count, seed++);
    DeviceBuffer buf(dev, bytes);
    dev.CopyToDevice(buf.get(), in.data(), bytes, s);
    Tensor t{buf.get(), static_cast<int64_t>(count), DataType::kFloat32, MemoryKind::kDevice};
    t.stream = s;
    const auto o = Options(Implementation::kNccl, plan);
    // Both ways a caller waits: AllReduce (runs on the caller's thread when
    // the GPU's slot is idle) and AllReduceAsync(...).Wait() (handed to the
    // slot's thread and back), as the TensorFlow op calls it.
    Row ra = r;
    ra.kind = "latency-async";
    ra.name += ", async + Wait";
    Status st, st_async;
    const auto agent = Times(plan.warmups, plan.latency_iters, nullptr, [&] {
      return AgentCall(one, {&t, 1}, ReduceOp::kMean, o, st, false);
    });
    const auto agent_async = Times(plan.warmups, plan.latency_iters, nullptr, [&] {
      return AgentCall(one, {&t, 1}, ReduceOp::kMean, o, st_async, true);
    });
    for (auto [row, status] : {std::pair<Row*, Status*>{&r, &st}, {&ra, &st_async}}) {
      if (!status->ok()) {
        Fail(*row, "ringmaster: " + status->ToString());
      } else {
        const std::string bad = CompareBytes(Bytes(Download(dev, buf.get(), count, s)), Bytes(in));
        if (!bad.empty()) Fail(*row, "ringmaster: " + bad);
      }
    }

    // The bound: the NCCL the agent loaded (bound once the agent has used
    // it), out of place, so NCCL cannot skip the work; output poisoned.
    if (!bound_ready && bound_error.empty()) {
      bound_error = dev.StartAllReduceBound();
      bound_ready = bound_error.empty();
    }
    std::vector<double> bound;
    if (!bound_ready) {
      Fail(r, "bound: " + bound_error);
      Fail(ra, "bound: " + bound_error);
    } else {
      DeviceBuffer src(dev, bytes), dst(dev, bytes);
      dev.CopyToDevice(src.get(), in.data(), bytes, s);
      bound = Times(
          plan.warmups, plan.latency_iters, [&] { dev.Fill(dst.get(), kPoison, bytes, s); },
          [&] { return dev.TimedAllReduce(src.get(), dst.get(), count, s); });
      const std::string bad = CompareBytes(Bytes(Download(dev, dst.get(), count, s)), Bytes(in));
      if (!bad.empty()) {
        Fail(r, "bound: " + bad);
        Fail(ra, "bound: " + bad);
      }
    }
    Finish(r, Micros(agent), Micros(bound));
    emit(r);
    Finish(ra, Micros(agent_async), Micros(bound));
    emit(ra);

    // What a non-blocking communicator (the agent's kind) costs in NCCL
    // itself, against the blocking one of the bound, in the same run.
    if (bound_ready) {
      DeviceBuffer src(dev, bytes), dst(dev, bytes);
      dev.CopyToDevice(src.get(), in.data(), bytes, s);
      const auto nb = Times(
          plan.warmups, plan.latency_iters, [&] { dev.Fill(dst.get(), kPoison, bytes, s); },
          [&] { return dev.TimedAllReduceNonBlocking(src.get(), dst.get(), count, s); });
      if (!nb.empty()) {  // empty: the device has no non-blocking communicator
        Row m;
        m.kind = "nccl-mode";
        m.bytes = bytes;
        m.unit = kMicros;
        m.name = "bare NCCL " + SizeText(bytes) + ", non-blocking comm";
        m.bound_what = "the same on a blocking comm (the bound above)";
        const std::string bad = CompareBytes(Bytes(Download(dev, dst.get(), count, s)), Bytes(in));
        if (!bad.empty()) Fail(m, "non-blocking: " + bad);
        Finish(m, Micros(nb), Micros(bound));
        emit(m);
      }
    }
  }
}

void MeasureStaging(BenchDevice& dev, const Plan& plan, const Emit& emit) {
  const int n = plan.members;
  auto group = FormLocalGroup(n);
  if (!group.ok()) {
    Row r;
    r.kind = "staging";
    r.name = "staging: forming " + std::to_string(n) + " members";
    r.members = n;
    r.unit = kGBps;
    Fail(r, group.status().ToString());
    emit(r);
    return;
  }
  auto& comms = *group;
  std::vector<void*> streams(n);
  for (auto& s : streams) s = dev.NewStream();
  uint64_t seed = plan.seed * 1000 + 300;
  for (size_t want_bytes : plan.staging_bytes) {
    const size_t count = std::max<size_t>(1, want_bytes / sizeof(float)), bytes = count * sizeof(float);
    Row r;
    r.kind = "staging";
    r.bytes = bytes;
    r.members = n;
    r.unit = kGBps;
    r.name = "staging " + SizeText(bytes) + ", " + std::to_string(n) + " members";
    r.bound_what = "the CPU engine, host memory, same group";
    std::vector<std::vector<float>> inputs(n);
    for (auto& in : inputs) in = RandomValues(count, seed++);
    const std::vector<float> want = ReferenceSum(inputs);

    // Ringmaster: every member's device tensor on GPU 0, on its own stream,
    // reset from its untouched copy before each call (in place: the sum
    // overwrites the input).
    std::vector<std::unique_ptr<DeviceBuffer>> pristine, work;
    for (int m = 0; m < n; ++m) {
      pristine.push_back(std::make_unique<DeviceBuffer>(dev, bytes));
      work.push_back(std::make_unique<DeviceBuffer>(dev, bytes));
      dev.CopyToDevice(pristine[m]->get(), inputs[m].data(), bytes, streams[m]);
    }
    std::vector<Status> st(n);
    const auto ring = Implementation::kRing;
    const auto o = Options(ring, plan);
    auto on_device = RunMembers(
        n, plan.warmups, plan.iters,
        [&](int m) { dev.CopyOnDevice(work[m]->get(), pristine[m]->get(), bytes, streams[m]); },
        [&](int m) {
          Tensor t{work[m]->get(), static_cast<int64_t>(count), DataType::kFloat32, MemoryKind::kDevice};
          t.stream = streams[m];
          const double s = AgentCall(*comms[m], {&t, 1}, ReduceOp::kSum, o, st[m]);
          if (s < 0) comms[m]->Abort("rm-bench-gpu: member " + std::to_string(m) + " failed");
          return s;
        });
    for (int m = 0; m < n; ++m) {
      if (!st[m].ok()) {
        Fail(r, "ringmaster, member " + std::to_string(m) + ": " + st[m].ToString());
        continue;
      }
      const std::string bad =
          CompareBytes(Bytes(Download(dev, work[m]->get(), count, streams[m])), Bytes(want));
      if (!bad.empty()) Fail(r, "ringmaster, member " + std::to_string(m) + ": " + bad);
    }

    // The bound: the CPU engine's all-reduce of the same inputs in host
    // memory, in the same group, reset the same way.
    std::vector<std::vector<float>> host(n, std::vector<float>(count));
    std::vector<Status> hst(n);
    auto on_host = RunMembers(
        n, plan.warmups, plan.iters, [&](int m) { std::memcpy(host[m].data(), inputs[m].data(), bytes); },
        [&](int m) {
          Tensor t{host[m].data(), static_cast<int64_t>(count), DataType::kFloat32, MemoryKind::kHost};
          const double s = AgentCall(*comms[m], {&t, 1}, ReduceOp::kSum, o, hst[m]);
          if (s < 0) comms[m]->Abort("rm-bench-gpu: member " + std::to_string(m) + " failed");
          return s;
        });
    for (int m = 0; m < n; ++m) {
      if (!hst[m].ok()) {
        Fail(r, "bound, member " + std::to_string(m) + ": " + hst[m].ToString());
        continue;
      }
      const std::string bad = CompareBytes(Bytes(host[m]), Bytes(want));
      if (!bad.empty()) Fail(r, "bound, member " + std::to_string(m) + ": " + bad);
    }
    Finish(r, GBps(bytes, on_device), GBps(bytes, on_host));
    emit(r);
    if (!comms[0]->health().ok()) return;  // aborted: the later sizes would only fail the same way
  }
}

}  // namespace rmgpubench
