#include "collectives/algorithms.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives/kernels.h"

namespace ringmaster::internal {
namespace {

// Segment i of a count split in n near-equal parts (the first count % n get one more).
struct Split {
  size_t count;
  int n;
  size_t size(int i) const { return count / n + (static_cast<size_t>(i) < count % n ? 1 : 0); }
  size_t offset(int i) const {
    size_t base = count / n, rem = count % n, ui = static_cast<size_t>(i);
    return ui * base + std::min(ui, rem);
  }
};

int Mod(int a, int n) {
  return ((a % n) + n) % n;
}

constexpr uint32_t Tag(uint32_t phase, uint32_t step, uint32_t chunk) {
  return (phase << 30) | ((step & 0x3ffu) << 20) | (chunk & 0xfffffu);
}

}  // namespace

Status AllReduce(Transport& t, Algorithm algo, void* data, size_t count, DataType dtype, ReduceOp op,
                 const RingTuning& tuning) {
  if (t.size() == 1 || count == 0) return OkStatus();
  if (algo == Algorithm::kRing) return RingAllReduce(t, data, count, dtype, op, tuning);
  if (algo == Algorithm::kHalvingDoubling) return HalvingDoublingAllReduce(t, data, count, dtype, op);
  return RecursiveDoublingAllReduce(t, data, count, dtype, op);
}

Status RingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op,
                     const RingTuning& tuning) {
  return RingAllReduce(t, nullptr, data, count, dtype, op, tuning);
}

Status RingAllReduce(Transport& t, const void* src, void* data, size_t count, DataType dtype, ReduceOp op,
                     const RingTuning& tuning) {
  const int n = t.size(), rank = t.rank();
  const size_t esize = DataTypeSize(dtype);
  char* base = static_cast<char*>(data);
  const char* in = src != nullptr ? static_cast<const char*>(src) : base;
  if (n == 1 || count == 0) {
    if (in != base) std::memcpy(base, in, count * esize);
    return OkStatus();
  }
  const int right = Mod(rank + 1, n), left = Mod(rank - 1, n);
  const Split seg{count, n};
  size_t max_seg = seg.size(0);
  size_t chunk_elems = std::max<size_t>(1, tuning.chunk_bytes / esize);
  // Keep chunk indices within the tag's 20 bits.
  while (max_seg / chunk_elems >= (1u << 20) - 1) chunk_elems *= 2;
  auto chunks_of = [&](int s) {
    return seg.size(s) == 0 ? size_t{0} : (seg.size(s) + chunk_elems - 1) / chunk_elems;
  };
  auto chunk_off = [&](int s, size_t k) { return (seg.offset(s) + k * chunk_elems) * esize; };
  auto chunk_ptr = [&](int s, size_t k) { return base + chunk_off(s, k); };
  auto chunk_len = [&](int s, size_t k) { return std::min(chunk_elems, seg.size(s) - k * chunk_elems); };

  // Reduce-scatter: in step s we send segment (rank - s) and receive segment
  // (rank - s - 1), which we reduce and send on in step s + 1. Every chunk is
  // forwarded as soon as it is reduced, so the ring works as a pipeline.
  // Every segment but our own is received (and reduced) exactly once, so
  // that is where an out-of-place input is copied in; ours is sent from the
  // input and comes back reduced in the all-gather.
  const int steps = n - 1;
  struct RecvSlot {
    int step;
    size_t chunk;
  };
  std::vector<RecvSlot> order;  // every reduce-scatter receive, in wire order
  for (int s = 0; s < steps; ++s)
    for (size_t k = 0; k < chunks_of(Mod(rank - s - 1, n)); ++k) order.push_back({s, k});

  const int depth = std::max(1, tuning.staging_chunks);
  std::unique_ptr<char[]> staging(new char[chunk_elems * esize * static_cast<size_t>(depth)]);
  std::vector<int> recv_req(order.size(), -1);
  auto post_recv = [&](size_t i) {
    const auto& o = order[i];
    int sg = Mod(rank - o.step - 1, n);
    char* slot = staging.get() + (i % depth) * chunk_elems * esize;
    recv_req[i] = t.Irecv(left, Tag(0, o.step, o.chunk), slot, chunk_len(sg, o.chunk) * esize);
  };
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(depth); ++i) post_recv(i);
  {
    int sg = rank;
    for (size_t k = 0; k < chunks_of(sg); ++k)
      t.Isend(right, Tag(0, 0, k), in + chunk_off(sg, k), chunk_len(sg, k) * esize);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    RM_RETURN_IF_ERROR(t.Wait(recv_req[i]));
    const auto& o = order[i];
    int sg = Mod(rank - o.step - 1, n);
    char* slot = staging.get() + (i % depth) * chunk_elems * esize;
    if (in != base)
      std::memcpy(chunk_ptr(sg, o.chunk), in + chunk_off(sg, o.chunk), chunk_len(sg, o.chunk) * esize);
    ReduceInto(dtype, op, chunk_ptr(sg, o.chunk), slot, chunk_len(sg, o.chunk));
    if (i + depth < order.size()) post_recv(i + depth);
    // Forward: as step s+1's send, or (after the last step) as the first
    // all-gather send of this now fully reduced segment.
    uint32_t tag = o.step + 1 < steps ? Tag(0, o.step + 1, o.chunk) : Tag(1, 0, o.chunk);
    t.Isend(right, tag, chunk_ptr(sg, o.chunk), chunk_len(sg, o.chunk) * esize);
  }

  // All-gather: in step s we receive segment (rank - s) straight into place
  // and forward it in step s + 1.
  std::vector<RecvSlot> ag;
  std::vector<int> ag_req;
  for (int s = 0; s < steps; ++s) {
    int sg = Mod(rank - s, n);
    for (size_t k = 0; k < chunks_of(sg); ++k) {
      ag.push_back({s, k});
      ag_req.push_back(t.Irecv(left, Tag(1, s, k), chunk_ptr(sg, k), chunk_len(sg, k) * esize));
    }
  }
  for (size_t i = 0; i < ag.size(); ++i) {
    RM_RETURN_IF_ERROR(t.Wait(ag_req[i]));
    const auto& o = ag[i];
    if (o.step + 1 < steps) {
      int sg = Mod(rank - o.step, n);
      t.Isend(right, Tag(1, o.step + 1, o.chunk), chunk_ptr(sg, o.chunk), chunk_len(sg, o.chunk) * esize);
    }
  }
  return t.WaitAll();
}

namespace {

// Non-power-of-two groups: the first 2*rem ranks fold pairwise (the even one
// hands its vector to the odd one, which reduces) so that p2 = n - rem ranks
// take part; they get the result back at the end. Both sides of the fold use
// tag chunk field `variant`, so the algorithms' tags never collide.
struct Fold {
  int p2 = 1, rem = 0;
  explicit Fold(int n) {
    while (p2 * 2 <= n) p2 *= 2;
    rem = n - p2;
  }
  // The rank's place among the p2 (-1: folded away).
  int VRank(int rank) const {
    if (rank < 2 * rem) return rank % 2 == 0 ? -1 : rank / 2;
    return rank - rem;
  }
  int Real(int vrank) const { return vrank < rem ? vrank * 2 + 1 : vrank + rem; }

  Status In(Transport& t, char* data, char* staging, size_t count, DataType dtype, ReduceOp op,
            uint32_t variant) const {
    const int rank = t.rank();
    const size_t bytes = count * DataTypeSize(dtype);
    if (rank >= 2 * rem) return OkStatus();
    if (rank % 2 == 0) return t.Wait(t.Isend(rank + 1, Tag(2, 0, variant), data, bytes));
    RM_RETURN_IF_ERROR(t.Wait(t.Irecv(rank - 1, Tag(2, 0, variant), staging, bytes)));
    ReduceInto(dtype, op, data, staging, count);
    return OkStatus();
  }
  Status Out(Transport& t, char* data, size_t bytes, uint32_t variant) const {
    const int rank = t.rank();
    if (rank >= 2 * rem) return OkStatus();
    if (rank % 2 == 0) return t.Wait(t.Irecv(rank + 1, Tag(2, 0x3ff, variant), data, bytes));
    return t.Wait(t.Isend(rank - 1, Tag(2, 0x3ff, variant), data, bytes));
  }
};

}  // namespace

Status RecursiveDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op) {
  const int n = t.size(), rank = t.rank();
  if (n == 1 || count == 0) return OkStatus();
  const size_t bytes = count * DataTypeSize(dtype);
  std::unique_ptr<char[]> staging(new char[bytes]);
  char* buf = static_cast<char*>(data);
  const Fold fold(n);
  RM_RETURN_IF_ERROR(fold.In(t, buf, staging.get(), count, dtype, op, 0));
  if (const int vrank = fold.VRank(rank); vrank >= 0) {
    uint32_t step = 1;
    for (int mask = 1; mask < fold.p2; mask <<= 1, ++step) {
      const int peer = fold.Real(vrank ^ mask);
      int rr = t.Irecv(peer, Tag(2, step, 0), staging.get(), bytes);
      int sr = t.Isend(peer, Tag(2, step, 0), data, bytes);
      RM_RETURN_IF_ERROR(t.Wait(rr));
      RM_RETURN_IF_ERROR(t.Wait(sr));
      ReduceInto(dtype, op, data, staging.get(), count);
    }
  }
  RM_RETURN_IF_ERROR(fold.Out(t, buf, bytes, 0));
  return t.WaitAll();
}

Status HalvingDoublingAllReduce(Transport& t, void* data, size_t count, DataType dtype, ReduceOp op) {
  const int n = t.size(), rank = t.rank();
  if (n == 1 || count == 0) return OkStatus();
  const size_t esize = DataTypeSize(dtype);
  char* base = static_cast<char*>(data);
  const Fold fold(n);
  const int vrank = fold.VRank(rank);
  // Blocks: the count split in p2 near-equal parts; block b ends up reduced on vrank b.
  const Split blocks{count, fold.p2};
  auto off = [&](int b) { return blocks.offset(b); };  // element offset of block b; off(p2) == count
  // Staging: the whole vector for a rank that folds one in, else the largest
  // half it keeps (the first round's; earlier blocks are the larger ones).
  const bool folds_in = rank < 2 * fold.rem && rank % 2 == 1;
  std::unique_ptr<char[]> staging(new char[(folds_in ? count : off(fold.p2 / 2)) * esize]);
  RM_RETURN_IF_ERROR(fold.In(t, base, staging.get(), count, dtype, op, 1));
  if (vrank >= 0) {
    // Reduce-scatter by recursive halving: each round keeps half of the
    // blocks still ours (the half on our side of the partner's bit), sends
    // the other half and reduces what the partner sends of ours.
    int lo = 0, hi = fold.p2;
    uint32_t step = 1;
    for (int mask = fold.p2 / 2; mask >= 1; mask >>= 1, ++step) {
      const int peer = fold.Real(vrank ^ mask);
      const int mid = lo + (hi - lo) / 2;
      const bool lower = (vrank & mask) == 0;
      const int klo = lower ? lo : mid, khi = lower ? mid : hi;
      const int slo = lower ? mid : lo, shi = lower ? hi : mid;
      const size_t keep = off(khi) - off(klo), send = off(shi) - off(slo);
      int rr = t.Irecv(peer, Tag(2, step, 1), staging.get(), keep * esize);
      int sr = t.Isend(peer, Tag(2, step, 1), base + off(slo) * esize, send * esize);
      RM_RETURN_IF_ERROR(t.Wait(rr));
      ReduceInto(dtype, op, base + off(klo) * esize, staging.get(), keep);
      RM_RETURN_IF_ERROR(t.Wait(sr));
      lo = klo;
      hi = khi;
    }
    // All-gather by recursive doubling: the partner's blocks arrive in place.
    for (int mask = 1; mask < fold.p2; mask <<= 1, ++step) {
      const int peer = fold.Real(vrank ^ mask);
      const bool lower = (vrank & mask) == 0;
      const int plo = lower ? hi : lo - mask, phi = lower ? hi + mask : lo;
      int rr = t.Irecv(peer, Tag(2, step, 1), base + off(plo) * esize, (off(phi) - off(plo)) * esize);
      int sr = t.Isend(peer, Tag(2, step, 1), base + off(lo) * esize, (off(hi) - off(lo)) * esize);
      RM_RETURN_IF_ERROR(t.Wait(rr));
      RM_RETURN_IF_ERROR(t.Wait(sr));
      lo = std::min(lo, plo);
      hi = std::max(hi, phi);
    }
  }
  RM_RETURN_IF_ERROR(fold.Out(t, base, count * esize, 1));
  return t.WaitAll();
}

Status BroadcastBytes(Transport& t, void* data, size_t bytes, int root) {
  const int n = t.size();
  if (n == 1) return OkStatus();
  const int vrank = Mod(t.rank() - root, n);
  int mask = 1;
  while (mask < n) {
    if (vrank & mask) {
      int r = t.Irecv(Mod(vrank - mask + root, n), Tag(3, 0, 0), data, bytes);
      RM_RETURN_IF_ERROR(t.Wait(r));
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  while (mask > 0) {
    if (vrank + mask < n) t.Isend(Mod(vrank + mask + root, n), Tag(3, 0, 0), data, bytes);
    mask >>= 1;
  }
  return t.WaitAll();
}

Status RingAllGatherBytes(Transport& t, void* out, size_t block_bytes) {
  const int n = t.size(), rank = t.rank();
  if (n == 1 || block_bytes == 0) return OkStatus();
  char* base = static_cast<char*>(out);
  const int right = Mod(rank + 1, n), left = Mod(rank - 1, n);
  std::vector<int> req;
  for (int s = 0; s < n - 1; ++s) {
    req.push_back(t.Irecv(left, Tag(1, s, 0), base + Mod(rank - s - 1, n) * block_bytes, block_bytes));
  }
  t.Isend(right, Tag(1, 0, 0), base + rank * block_bytes, block_bytes);
  for (int s = 0; s < n - 1; ++s) {
    RM_RETURN_IF_ERROR(t.Wait(req[s]));
    if (s + 1 < n - 1)
      t.Isend(right, Tag(1, s + 1, 0), base + Mod(rank - s - 1, n) * block_bytes, block_bytes);
  }
  return t.WaitAll();
}

}  // namespace ringmaster::internal
