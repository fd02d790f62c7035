// The agreement every member reaches before a collective moves data.
//
// Why an agreement: the engine matches messages by order and size, so two
// members calling different collectives, or the same one with different
// shapes, would otherwise abort the whole group (a protocol error). Horovod's
// users expect such a mistake to fail that one call with
// FailedPreconditionError on every member and leave the group usable. So each
// kernel first all-gathers one fixed-size record (what it is about to do);
// every member sees the same records, reaches the same verdict, and either
// all go on or all fail with the same message, naming the members and their
// shapes. A member whose own arguments are wrong (InvalidArgument) still
// takes part, so the others fail with FailedPrecondition instead of waiting.
//
// What it costs: one all-gather of a fixed-size record per call, run on the
// kernel's thread. A host all-reduce of at most Proposal::kInlineBytes (a
// loss, a metric, a 4-byte call) sends its data in that same record, and
// every member reduces the gathered values itself in rank order (the
// engine's loops, rm_reduce_local): the agreement is the collective, with
// no round trip of its own. Every record has the same size, whatever the
// call, so members that called different collectives still agree to fail.
//
// Whose errors: Horovod's API raises FailedPrecondition for a mismatch;
// TensorFlow's strategy raises InvalidArgument matching "Shape mismatch" for
// a mismatch of shapes. Each op's "errors" attribute says whose contract the
// call keeps (ErrorStyle, common.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"

namespace ringmaster_tf {

// Which collective a proposal is for: the engine's one list of collectives
// (rm_collective, ringmaster/enums.h), join included.
inline const char* KindName(int64_t k) {
  const char* name = rm_collective_name(static_cast<int>(k));
  return name ? name : "unknown collective";
}

// One member's record, all int64 so one all-gather carries it.
struct Proposal {
  static constexpr int kMaxDims = 8;
  static constexpr int kWords = 16 + kMaxDims;
  // The data a small all-reduce sends in its record (see the top), and the
  // record's size on the wire: the same for every call and every member.
  static constexpr int kInlineBytes = 256;
  static constexpr int kWireWords = kWords + kInlineBytes / 8;
  int64_t kind = 0;
  int64_t reduce_op = -1;
  int64_t root = -1;
  int64_t tensors = 0;
  int64_t digest = 0;       // dtypes and shapes of every tensor
  int64_t tail_digest = 0;  // the same without each first dimension
  int64_t prescale_bits = 0, postscale_bits = 0;
  int64_t local_error = 0;         // this member's own InvalidArgument etc.: its code
  int64_t dtype0 = 0, ndims0 = 0;  // tensor 0, for the message
  int64_t joined_rounds = 0;       // kJoin: agreements this member has stood in since it joined
  int64_t stands_in = 0;           // 1: joined members may stand in for this call (join.cc)
  int64_t dims0[kMaxDims] = {};

  void Pack(int64_t* w) const {
    int64_t head[16] = {kind,
                        reduce_op,
                        root,
                        tensors,
                        digest,
                        tail_digest,
                        prescale_bits,
                        postscale_bits,
                        local_error,
                        dtype0,
                        ndims0,
                        joined_rounds,
                        stands_in,
                        0,
                        0,
                        0};
    std::memcpy(w, head, sizeof(head));
    std::memcpy(w + 16, dims0, sizeof(dims0));
  }
  static Proposal Unpack(const int64_t* w) {
    Proposal p;
    p.kind = w[0], p.reduce_op = w[1], p.root = w[2], p.tensors = w[3], p.digest = w[4];
    p.tail_digest = w[5], p.prescale_bits = w[6], p.postscale_bits = w[7], p.local_error = w[8];
    p.dtype0 = w[9], p.ndims0 = w[10], p.joined_rounds = w[11], p.stands_in = w[12];
    std::memcpy(p.dims0, w + 16, sizeof(p.dims0));
    return p;
  }
};

inline uint64_t Mix(uint64_t h, int64_t v) {  // FNV-1a over the value's bytes
  for (int i = 0; i < 8; ++i) {
    h ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

inline int64_t Bits(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// A proposal for `tensors` (their dtypes and shapes).
inline Proposal Propose(rm_collective kind, const std::vector<const Tensor*>& tensors) {
  Proposal p;
  p.kind = static_cast<int64_t>(kind);
  p.tensors = static_cast<int64_t>(tensors.size());
  uint64_t full = 14695981039346656037ull, tail = full;
  for (const Tensor* t : tensors) {
    full = Mix(Mix(full, t->dtype()), t->dims());
    tail = Mix(Mix(tail, t->dtype()), t->dims());
    for (int d = 0; d < t->dims(); ++d) {
      full = Mix(full, t->dim_size(d));
      if (d > 0) tail = Mix(tail, t->dim_size(d));
    }
  }
  p.digest = static_cast<int64_t>(full);
  p.tail_digest = static_cast<int64_t>(tail);
  if (!tensors.empty()) {
    p.dtype0 = tensors[0]->dtype();
    p.ndims0 = tensors[0]->dims();
    for (int d = 0; d < tensors[0]->dims() && d < Proposal::kMaxDims; ++d)
      p.dims0[d] = tensors[0]->dim_size(d);
  }
  return p;
}

inline std::string Member(rm_communicator* comm, int r) {
  const char* task = rm_task_name(comm, r);
  return "rank " + std::to_string(r) + (task ? std::string(" (") + task + ")" : std::string());
}

inline std::string Describe(const Proposal& p) {
  if (p.tensors == 0) return "no tensor";
  std::string s = tensorflow::DataTypeString(static_cast<DataType>(p.dtype0)) + "[";
  for (int64_t d = 0; d < p.ndims0; ++d) {
    if (d) s += ",";
    s += d < Proposal::kMaxDims ? std::to_string(p.dims0[d]) : std::string("...");
  }
  s += "]";
  if (p.tensors > 1) s += " (tensor 0 of " + std::to_string(p.tensors) + ")";
  return s;
}

inline bool Joined(const Proposal& p) {
  return p.kind == RM_COLLECTIVE_JOIN;
}

// Why the members cannot go on, or OK. `me` is this member's rank (not a
// joined one). Joined members (join.cc) are not judged: they stand in.
// A mismatch of tensors (their number, dtypes or shapes) is
// FailedPrecondition in Horovod's style, InvalidArgument starting "Shape
// mismatch" in TensorFlow's.
inline absl::Status Judge(rm_communicator* comm, const std::vector<Proposal>& all, int me,
                          ErrorStyle style = ErrorStyle::kHorovod) {
  const Proposal& mine = all[me];
  const char* what = KindName(mine.kind);
  auto tensors_differ = [style](const std::string& message) {
    return style == ErrorStyle::kTensorFlow ? absl::InvalidArgumentError("Shape mismatch: " + message)
                                            : absl::FailedPreconditionError(message);
  };
  auto list = [&](auto describe) {
    std::string s;
    for (size_t r = 0; r < all.size(); ++r)
      s += (r ? ", " : "") + Member(comm, int(r)) + " " + describe(all[r]);
    return s;
  };
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].local_error != 0 && int(r) != me) {
      return absl::FailedPreconditionError(std::string("ringmaster ") + what + ": " + Member(comm, int(r)) +
                                           " refused its own arguments (" +
                                           absl::StatusCodeToString(absl::StatusCode(all[r].local_error)) +
                                           "); the call failed on every member");
    }
  }
  for (const auto& p : all) {
    if (p.kind != mine.kind && !Joined(p)) {
      return absl::FailedPreconditionError(
          std::string("ringmaster: the members called different collectives: ") +
          list([](const Proposal& q) { return std::string(KindName(q.kind)); }) +
          " (every member must issue the same collectives in the same order)");
    }
  }
  const bool tail_only = mine.kind == RM_COLLECTIVE_ALL_GATHER || mine.kind == RM_COLLECTIVE_ALL_TO_ALL;
  for (const auto& p : all) {
    if (Joined(p)) continue;
    if (p.tensors != mine.tensors) {
      return tensors_differ(std::string("ringmaster ") + what +
                            ": the members passed different numbers of tensors: " +
                            list([](const Proposal& q) { return std::to_string(q.tensors); }));
    }
    if (p.dtype0 != mine.dtype0) {
      return tensors_differ(std::string("ringmaster ") + what +
                            ": mismatched data types across members: " + list(Describe));
    }
    if (tail_only ? p.tail_digest != mine.tail_digest : p.digest != mine.digest) {
      return tensors_differ(
          std::string("ringmaster ") + what + ": mismatched " +
          (tail_only ? "shapes (beyond the first dimension) or ranks" : "shapes or data types") +
          " across members: " + list(Describe));
    }
    if (p.reduce_op != mine.reduce_op) {
      return absl::FailedPreconditionError(
          std::string("ringmaster ") + what + ": mismatched reduce ops across members: " +
          list([](const Proposal& q) { return std::to_string(q.reduce_op); }));
    }
    if (p.root != mine.root) {
      return absl::FailedPreconditionError(std::string("ringmaster ") + what +
                                           ": mismatched root ranks across members: " +
                                           list([](const Proposal& q) { return std::to_string(q.root); }));
    }
    if (p.prescale_bits != mine.prescale_bits || p.postscale_bits != mine.postscale_bits) {
      return absl::FailedPreconditionError(std::string("ringmaster ") + what +
                                           ": mismatched prescale or postscale factors across members");
    }
  }
  return absl::OkStatus();
}

// All-gathers `words` int64 per member (the same count on every member).
inline absl::Status GatherWords(rm_communicator* comm, const int64_t* mine, size_t words,
                                const rm_options& options, std::vector<int64_t>* all) {
  const int n = rm_size(comm);
  all->assign(words * n, 0);
  if (words == 0) return absl::OkStatus();
  rm_tensor in{const_cast<int64_t*>(mine), static_cast<int64_t>(words), RM_INT64};
  rm_tensor out{all->data(), static_cast<int64_t>(words * n), RM_INT64};
  return LastError(rm_allgather(comm, &in, &out, &options));
}

// Every member's record: its proposal, and `bytes` (at most kInlineBytes)
// of data from `payload` after it. *records holds them all, rank after
// rank, kWireWords each; a member's data is at InlineData(*records, r).
inline absl::Status GatherProposals(rm_communicator* comm, const Proposal& mine, const void* payload,
                                    size_t bytes, const rm_options& options, std::vector<Proposal>* all,
                                    std::vector<int64_t>* records) {
  if (bytes > static_cast<size_t>(Proposal::kInlineBytes))
    return absl::InternalError("ringmaster: " + std::to_string(bytes) +
                               " bytes do not fit in an agreement's record");
  int64_t words[Proposal::kWireWords] = {};
  mine.Pack(words);
  if (bytes > 0) std::memcpy(words + Proposal::kWords, payload, bytes);
  TF_RETURN_IF_ERROR(GatherWords(comm, words, Proposal::kWireWords, options, records));
  all->clear();
  for (int r = 0; r < rm_size(comm); ++r)
    all->push_back(Proposal::Unpack(records->data() + r * Proposal::kWireWords));
  return absl::OkStatus();
}

inline const char* InlineData(const std::vector<int64_t>& records, int r) {
  return reinterpret_cast<const char*>(records.data() + r * Proposal::kWireWords + Proposal::kWords);
}

// With members that have joined (Horovod's join(): they stand in with zeros
// until every member has joined): OK when the call may go on with them,
// else why not. Every member reaches the same verdict from the proposals.
absl::Status JoinedVerdict(rm_communicator* comm, const std::vector<Proposal>& all);

// The active members' half of a call with joined members: sends them what
// to stand in for (`tensors`, `options`), then the call goes on (join.cc).
absl::Status ServeJoined(rm_communicator* comm, const std::vector<Proposal>& all,
                         const std::vector<const Tensor*>& tensors, const rm_options& options);

// What a small all-reduce sends with its proposal (Agree): `bytes` of
// `data`; after the call, *records holds every member's record, and
// *joined_stood_in says that members who have joined stood in (the call
// then goes on as an ordinary all-reduce, which they take part in).
struct Inline {
  const void* data = nullptr;
  size_t bytes = 0;
  std::vector<int64_t>* records = nullptr;
  bool* joined_stood_in = nullptr;
};

// Exchanges proposals and judges them. `local` is this member's own verdict
// on its arguments: it is returned as it is (after the exchange), the others
// get FailedPrecondition naming this member. `for_joined`: the tensors that
// members who have joined stand in for with zeros (only a host all-reduce
// passes them; any other call fails while a member has joined). `style`:
// whose error types a mismatch gets (Judge). `with`: data sent in the same
// record (a small all-reduce).
inline absl::Status Agree(rm_communicator* comm, Proposal mine, const absl::Status& local,
                          const rm_options& options, const std::vector<const Tensor*>* for_joined = nullptr,
                          ErrorStyle style = ErrorStyle::kHorovod, const Inline& with = {}) {
  mine.local_error = local.ok() ? 0 : static_cast<int64_t>(local.code());
  mine.stands_in = for_joined != nullptr;
  std::vector<Proposal> all;
  std::vector<int64_t> own_records;
  std::vector<int64_t>* records = with.records ? with.records : &own_records;
  TF_RETURN_IF_ERROR(
      GatherProposals(comm, mine, with.data, local.ok() ? with.bytes : 0, options, &all, records));
  if (!local.ok()) return local;
  TF_RETURN_IF_ERROR(Judge(comm, all, rm_rank(comm), style));
  for (const Proposal& p : all) {
    if (Joined(p)) {
      if (with.joined_stood_in) *with.joined_stood_in = true;
      TF_RETURN_IF_ERROR(JoinedVerdict(comm, all));
      return ServeJoined(comm, all, *for_joined, options);  // the verdict needs for_joined on every member
    }
  }
  return absl::OkStatus();
}

}  // namespace ringmaster_tf
