// Gloo's all-reduce algorithms over its TCP transport, rendezvous through its
// file store: one process per rank, started by bench/allreduce/run.py (on
// 127.0.0.1) and bench/network/run.py (each rank in a network namespace of
// its own, on the address in RMBENCH_HOST; the store's directory is shared,
// as the file system is).
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "rmbench/bench_common.h"

namespace {

// Set once this rank is past the last size's barrier: every rank has then
// printed and checked everything. A rank that exits first closes its
// connections, and Gloo's I/O thread throws "Connection closed by peer" on
// a rank still in the closing barrier; that is no failure then.
std::atomic<bool> g_finished{false};

std::unique_ptr<gloo::Algorithm> Make(const std::string& algo, const std::shared_ptr<gloo::Context>& ctx,
                                      float* data, int count) {
  std::vector<float*> ptrs{data};
  if (algo == "ring") return std::make_unique<gloo::AllreduceRing<float>>(ctx, ptrs, count);
  if (algo == "ring_chunked") return std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, ptrs, count);
  if (algo == "halving_doubling")
    return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx, ptrs, count);
  if (algo == "bcube") return std::make_unique<gloo::AllreduceBcube<float>>(ctx, ptrs, count);
  std::fprintf(stderr, "unknown Gloo algorithm %s\n", algo.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  auto a = rmbench::ParseArgs(argc, argv);
  a.peer = "gloo";
  std::set_terminate([] {
    if (g_finished.load()) std::_Exit(0);
    std::abort();
  });
  gloo::transport::tcp::attr attr;
  const char* host = std::getenv("RMBENCH_HOST");
  attr.hostname = host && *host ? host : "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(a.store);
  gloo::rendezvous::PrefixStore store(a.algo, file_store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(a.rank, a.size);
  ctx->setTimeout(std::chrono::seconds(120));
  ctx->connectFullMesh(store, dev);
  gloo::BarrierAllToAll barrier(ctx);

  for (int64_t bytes : rmbench::Sizes(a)) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    std::vector<float> data(static_cast<size_t>(count));
    auto algo = Make(a.algo, ctx, data.data(), static_cast<int>(count));
    rmbench::Measure(
        a, bytes,
        [&](bool pattern) {
          for (int64_t i = 0; i < count; ++i) data[i] = pattern ? rmbench::Pattern(a.rank, i) : 0.f;
        },
        [&] { algo->run(); }, [&] { barrier.run(); },
        [&] { return rmbench::CheckAll(data.data(), count, a.size); });
    // No rank frees this size's buffers while a peer may still write to them.
    barrier.run();
  }
  g_finished.store(true);
  barrier.run();  // no rank leaves before every rank is past the last size
  std::fflush(stdout);
  std::_Exit(0);  // no teardown: the peers may already be gone
}
