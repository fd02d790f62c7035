// The variable-size collectives over a Transport: all-gather-v, all-to-all
// and reduce-scatter with one block size per member (Horovod's allgather of
// unequal first dimensions, alltoall with splits, reducescatter).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/kernels.h"

namespace ringmaster::internal {
namespace {

int Mod(int a, int n) {
  return ((a % n) + n) % n;
}

// The same layout as algorithms.cc's tags; only a check, since messages
// between two members are ordered. Phase 3, chunk field 1..3 here, never
// used by the other algorithms' phase-3 messages (broadcast: chunk 0).
constexpr uint32_t Tag(uint32_t step, uint32_t variant) {
  return (3u << 30) | ((step & 0x3ffu) << 20) | (variant & 0xfffffu);
}
constexpr uint32_t kAllGatherV = 1, kAllToAll = 2, kReduceScatter = 3;

// Element offsets of the blocks: offsets[r] = sum(counts[0..r)), offsets[n] = total.
std::vector<size_t> Offsets(std::span<const int64_t> counts) {
  std::vector<size_t> off(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) off[r + 1] = off[r] + static_cast<size_t>(counts[r]);
  return off;
}

}  // namespace

Status RingAllGatherV(Transport& t, void* out, std::span<const int64_t> counts, DataType dtype) {
  const int n = t.size(), rank = t.rank();
  if (n == 1) return OkStatus();
  const size_t es = DataTypeSize(dtype);
  const auto off = Offsets(counts);
  char* base = static_cast<char*>(out);
  auto bytes = [&](int b) { return static_cast<size_t>(counts[b]) * es; };
  auto at = [&](int b) { return base + off[b] * es; };
  const int right = Mod(rank + 1, n), left = Mod(rank - 1, n);
  // Every receive goes to its own place: post them all, then forward each
  // block as it arrives. The left member sends block (left - s) = (rank - s - 1).
  std::vector<int> req(n - 1, -1);
  for (int s = 0; s < n - 1; ++s) {
    const int b = Mod(rank - s - 1, n);
    if (bytes(b)) req[s] = t.Irecv(left, Tag(s, kAllGatherV), at(b), bytes(b));
  }
  if (bytes(rank)) t.Isend(right, Tag(0, kAllGatherV), at(rank), bytes(rank));
  for (int s = 0; s < n - 1; ++s) {
    const int b = Mod(rank - s - 1, n);
    if (req[s] >= 0) RM_RETURN_IF_ERROR(t.Wait(req[s]));
    if (s + 1 < n - 1 && bytes(b)) t.Isend(right, Tag(s + 1, kAllGatherV), at(b), bytes(b));
  }
  return t.WaitAll();
}

Status PairwiseAllToAll(Transport& t, const void* in, std::span<const int64_t> send_counts, void* out,
                        std::span<const int64_t> recv_counts, DataType dtype) {
  const int n = t.size(), rank = t.rank();
  const size_t es = DataTypeSize(dtype);
  const auto soff = Offsets(send_counts), roff = Offsets(recv_counts);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (send_counts[rank] > 0) {
    std::memmove(dst + roff[rank] * es, src + soff[rank] * es, static_cast<size_t>(send_counts[rank]) * es);
  }
  for (int k = 1; k < n; ++k) {
    const int to = Mod(rank + k, n), from = Mod(rank - k, n);
    int rr = -1, sr = -1;
    if (recv_counts[from] > 0) {
      rr = t.Irecv(from, Tag(k, kAllToAll), dst + roff[from] * es,
                   static_cast<size_t>(recv_counts[from]) * es);
    }
    if (send_counts[to] > 0) {
      sr = t.Isend(to, Tag(k, kAllToAll), src + soff[to] * es, static_cast<size_t>(send_counts[to]) * es);
    }
    if (rr >= 0) RM_RETURN_IF_ERROR(t.Wait(rr));
    if (sr >= 0) RM_RETURN_IF_ERROR(t.Wait(sr));
  }
  return t.WaitAll();
}

Status RingReduceScatter(Transport& t, const void* in, std::span<const int64_t> counts, void* out,
                         DataType dtype, ReduceOp op) {
  const int n = t.size(), rank = t.rank();
  const size_t es = DataTypeSize(dtype);
  const auto off = Offsets(counts);
  const char* src = static_cast<const char*>(in);
  char* result = static_cast<char*>(out);
  auto bytes = [&](int b) { return static_cast<size_t>(counts[b]) * es; };
  if (n == 1) {
    if (bytes(0) && result != src) std::memmove(result, src, bytes(0));
    return OkStatus();
  }
  // Step s sends the partial reduction of block (rank - s - 1) right (at
  // step 0 our input's own block) and receives the left member's partial of
  // block (rank - s - 2), to which it adds our input's block. The last step
  // receives block rank straight into `out`. Two staging blocks alternate:
  // one on the wire to the right while the next partial arrives.
  const int right = Mod(rank + 1, n), left = Mod(rank - 1, n);
  const int64_t largest = *std::max_element(counts.begin(), counts.end());
  const size_t stage_bytes = n > 2 ? static_cast<size_t>(largest) * es : 0;
  std::unique_ptr<char[]> staging(new char[std::max<size_t>(2 * stage_bytes, 1)]);
  const char* sending = src + off[Mod(rank - 1, n)] * es;  // step 0: our own input's block
  for (int s = 0; s < n - 1; ++s) {
    const int sb = Mod(rank - s - 1, n), rb = Mod(rank - s - 2, n);
    const bool last = s == n - 2;
    char* into = last ? result : staging.get() + static_cast<size_t>(s % 2) * stage_bytes;
    int rr = -1, sr = -1;
    if (bytes(rb)) rr = t.Irecv(left, Tag(s, kReduceScatter), into, bytes(rb));
    if (bytes(sb)) sr = t.Isend(right, Tag(s, kReduceScatter), sending, bytes(sb));
    if (rr >= 0) {
      RM_RETURN_IF_ERROR(t.Wait(rr));
      ReduceInto(dtype, op, into, src + off[rb] * es, static_cast<size_t>(counts[rb]));
    }
    // The block just sent is the next step's receive buffer: done with it first.
    if (sr >= 0) RM_RETURN_IF_ERROR(t.Wait(sr));
    sending = into;
  }
  return t.WaitAll();
}

}  // namespace ringmaster::internal
