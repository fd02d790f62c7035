#include "c_api_check.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ringmaster/ringmaster.h"

namespace ringmaster::worker {
namespace {

int failures = 0;

void Fail(const std::string& what) {
  std::fprintf(stderr, "ringmaster-worker: check failed: %s\n", what.c_str());
  ++failures;
}

bool Ok(int code, const char* call) {
  if (code == RM_OK) return true;
  Fail(std::string(call) + " returned " + std::to_string(code) + ": " + rm_last_error());
  return false;
}

// Member `r`'s all-gather-v block: r + 2 elements, none for rank 1.
int64_t GatherCount(int r) {
  return r == 1 ? 0 : r + 2;
}
int16_t GatherValue(int r, int64_t j) {
  return static_cast<int16_t>(r * 100 + j - 300);
}
// The all-to-all block from `src` to `dst` (symmetric counts, some empty).
int64_t PairCount(int src, int dst) {
  return (src + dst) % 3;
}
uint8_t PairValue(int src, int dst, int64_t j) {
  return static_cast<uint8_t>(src * 31 + dst * 7 + j * 13);
}
int64_t ScatterCount(int r) {
  return r % 3 == 2 ? 0 : r + 2;
}

void AllGatherV(rm_communicator* c, int me, int n) {
  std::vector<int64_t> counts(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) total += counts[r] = GatherCount(r);
  std::vector<int16_t> in(static_cast<size_t>(counts[me])), out(static_cast<size_t>(total), -1);
  for (size_t j = 0; j < in.size(); ++j) in[j] = GatherValue(me, static_cast<int64_t>(j));
  rm_tensor ti{in.data(), counts[me], RM_INT16}, to{out.data(), total, RM_INT16};
  if (!Ok(rm_allgatherv(c, &ti, counts.data(), &to, nullptr), "rm_allgatherv")) return;
  size_t k = 0;
  for (int r = 0; r < n; ++r)
    for (int64_t j = 0; j < counts[r]; ++j, ++k)
      if (out[k] != GatherValue(r, j)) return Fail("all-gather-v element " + std::to_string(k));
}

void AllToAll(rm_communicator* c, int me, int n) {
  std::vector<int64_t> send(n), recv(n);
  std::vector<uint8_t> in, out;
  for (int r = 0; r < n; ++r) {
    send[r] = PairCount(me, r);
    recv[r] = PairCount(r, me);
    for (int64_t j = 0; j < send[r]; ++j) in.push_back(PairValue(me, r, j));
    out.resize(out.size() + static_cast<size_t>(recv[r]), 0);
  }
  rm_tensor ti{in.data(), static_cast<int64_t>(in.size()), RM_UINT8};
  rm_tensor to{out.data(), static_cast<int64_t>(out.size()), RM_UINT8};
  if (!Ok(rm_alltoallv(c, &ti, send.data(), &to, recv.data(), nullptr), "rm_alltoallv")) return;
  size_t k = 0;
  for (int r = 0; r < n; ++r)
    for (int64_t j = 0; j < recv[r]; ++j, ++k)
      if (out[k] != PairValue(r, me, j)) return Fail("all-to-all element " + std::to_string(k));
}

void ReduceScatter(rm_communicator* c, int me, int n) {
  std::vector<int64_t> counts(n);
  int64_t total = 0, before = 0;
  for (int r = 0; r < n; ++r) {
    if (r < me) before += ScatterCount(r);
    total += counts[r] = ScatterCount(r);
  }
  std::vector<int32_t> in(static_cast<size_t>(total)), out(static_cast<size_t>(counts[me]), -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i) * (me + 1) - 7;
  rm_tensor ti{in.data(), total, RM_INT32}, to{out.data(), counts[me], RM_INT32};
  if (!Ok(rm_reducescatter(c, &ti, counts.data(), &to, RM_SUM, nullptr), "rm_reducescatter")) return;
  for (size_t j = 0; j < out.size(); ++j) {
    int64_t want = 0;
    for (int r = 0; r < n; ++r) want += (before + static_cast<int64_t>(j)) * (r + 1) - 7;
    if (out[j] != want) return Fail("reduce-scatter element " + std::to_string(j));
  }
}

void NewDtypes(rm_communicator* c, int me, int n) {
  std::vector<uint8_t> v(37);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(200 + i + me);
  rm_tensor t{v.data(), static_cast<int64_t>(v.size()), RM_UINT8};
  if (Ok(rm_allreduce(c, &t, 1, RM_SUM, nullptr), "rm_allreduce uint8")) {
    for (size_t i = 0; i < v.size(); ++i) {
      unsigned want = 0;
      for (int r = 0; r < n; ++r) want += static_cast<uint8_t>(200 + i + r);
      if (v[i] != static_cast<uint8_t>(want)) return Fail("uint8 all-reduce element " + std::to_string(i));
    }
  }
  std::vector<uint8_t> b(19, 0);  // bool: one byte, 0 or 1
  if (me == n - 1)
    for (size_t i = 0; i < b.size(); ++i) b[i] = i % 3 == 0;
  rm_tensor tb{b.data(), static_cast<int64_t>(b.size()), RM_BOOL};
  if (Ok(rm_broadcast(c, &tb, 1, n - 1, nullptr), "rm_broadcast bool")) {
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i] != (i % 3 == 0)) return Fail("bool broadcast element " + std::to_string(i));
  }
  // Every member refuses alike, before anything is sent.
  if (rm_allreduce(c, &tb, 1, RM_MAX, nullptr) != RM_INVALID_ARGUMENT ||
      std::strstr(rm_last_error(), "dtype bool cannot be reduced") == nullptr) {
    Fail(std::string("a bool all-reduce was not refused: ") + rm_last_error());
  }
}

// Process sets: the odd ranks and {0, n-1}, through every C call that
// takes a communicator; members outside a set get NULL; the registry the
// TensorFlow op reads finds them by id.
void ProcessSets(rm_communicator* c, int me, int n) {
  std::vector<int> odd, ends = {n - 1, 0};
  for (int r = 1; r < n; r += 2) odd.push_back(r);
  rm_communicator *s_odd = nullptr, *s_ends = nullptr;
  if (!Ok(rm_process_set_add(c, 1, odd.data(), odd.size(), &s_odd), "rm_process_set_add odd")) return;
  if (!Ok(rm_process_set_add(c, 2, ends.data(), ends.size(), &s_ends), "rm_process_set_add ends")) return;
  if ((s_odd != nullptr) != (me % 2 == 1)) Fail("odd set membership");
  if ((s_ends != nullptr) != (me == 0 || me == n - 1)) Fail("ends set membership");
  rm_set_process_set_communicator(2, s_ends);
  if (rm_process_set_communicator(2) != s_ends) Fail("process set registry");
  if (s_odd) {
    if (rm_process_set_id(s_odd) != 1 || rm_rank(s_odd) != me / 2 || rm_size(s_odd) != n / 2)
      Fail("odd set rank/size/id");
    std::vector<int16_t> in(3, static_cast<int16_t>(me)), out(3 * static_cast<size_t>(n / 2), -1);
    rm_tensor ti{in.data(), 3, RM_INT16}, to{out.data(), static_cast<int64_t>(out.size()), RM_INT16};
    if (Ok(rm_allgather(s_odd, &ti, &to, nullptr), "rm_allgather on a set")) {
      for (size_t k = 0; k < out.size(); ++k)
        if (out[k] != static_cast<int16_t>(2 * (k / 3) + 1))
          Fail("odd set all-gather element " + std::to_string(k));
    }
  }
  if (s_ends) {
    double v = me;
    rm_tensor t{&v, 1, RM_FLOAT64};
    if (Ok(rm_allreduce(rm_process_set_communicator(2), &t, 1, RM_SUM, nullptr), "rm_allreduce on a set") &&
        v != n - 1) {
      Fail("ends set sum " + std::to_string(v));
    }
    if (std::strcmp(rm_task_name(s_ends, 1), rm_task_name(c, n - 1)) != 0) Fail("ends set task name");
  }
  // The whole group still counts its own collectives.
  if (!Ok(rm_barrier(c, nullptr), "rm_barrier after process sets")) return;
  rm_communicator_destroy(s_odd);
  rm_communicator_destroy(s_ends);
  if (rm_process_set_communicator(2) != nullptr) Fail("a destroyed set stayed in the registry");
}

// GPU memory through the stream-aware call: host memory passed as GPU memory
// is refused on every member alike, before anything is sent, naming it.
void DeviceCallRefusesHostMemory(rm_communicator* c) {
  float v[4] = {1, 2, 3, 4};
  rm_tensor t{v, 4, RM_FLOAT32};
  rm_handle* h = nullptr;
  if (!Ok(rm_allreduce_async_on_stream(c, &t, 1, RM_SUM, nullptr, nullptr, &h),
          "rm_allreduce_async_on_stream"))
    return;
  if (rm_handle_wait(h) == RM_OK) return Fail("rm_allreduce_async_on_stream took host memory as GPU memory");
  std::printf("device call on host memory refused: %s\n", rm_last_error());
}

}  // namespace

int CheckCApiCollectives() {
  rm_communicator* c = nullptr;
  if (!Ok(rm_communicator_create_from_env(&c), "rm_communicator_create_from_env")) return 1;
  const int me = rm_rank(c), n = rm_size(c);
  AllGatherV(c, me, n);
  AllToAll(c, me, n);
  ReduceScatter(c, me, n);
  NewDtypes(c, me, n);
  ProcessSets(c, me, n);
  DeviceCallRefusesHostMemory(c);
  rm_communicator_destroy(c);
  if (failures) return 1;
  std::printf("c-api collectives verified (%d members)\n", n);
  return 0;
}

}  // namespace ringmaster::worker
