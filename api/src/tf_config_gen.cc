#include "ringmaster/tf_config_gen.h"

#include <algorithm>

namespace ringmaster {
namespace {

// The length of the valid UTF-8 sequence at the start of `s`, or 0 when it
// is not one (Go's utf8.DecodeRuneInString then returns RuneError, size 1):
// no overlong forms, no surrogates, nothing above U+10FFFF.
size_t Utf8Length(std::string_view s, uint32_t* rune) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  }
  uint32_t r = c & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) r = (r << 6) | (b(i) & 0x3F);
  *rune = r;
  return n;
}

void AppendStrings(std::string& out, const std::vector<std::string>& list) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i) out += ',';
    out += GoJsonString(list[i]);
  }
  out += ']';
}

}  // namespace

std::string GoJsonString(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
        case '\\':
          out += '\\';
          out += static_cast<char>(c);
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          // Other control bytes, and <, > and & (Go escapes HTML by default).
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    const size_t n = Utf8Length(text.substr(i), &rune);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else if (rune == 0x2028 || rune == 0x2029) {
      out += rune == 0x2028 ? "\\u2028" : "\\u2029";
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out + "\"";
}

std::string RenderTfConfig(std::vector<TfClusterJob> cluster, std::string_view task_type, int task_index,
                           bool sparse) {
  // Go writes a map's keys sorted (by bytes); a struct's fields in order.
  std::stable_sort(cluster.begin(), cluster.end(),
                   [](const TfClusterJob& a, const TfClusterJob& b) { return a.name < b.name; });
  const auto find = [&](std::string_view name) -> const TfClusterJob* {
    for (const auto& j : cluster) {
      if (j.name == name) return &j;
    }
    return nullptr;
  };
  const std::string task =
      "\"task\":{\"type\":" + GoJsonString(task_type) + ",\"index\":" + std::to_string(task_index) + "}";
  std::string out = "{\"cluster\":{";
  if (sparse) {
    // SparseClusterSpec{Worker map[int32]string; PS []string}.
    const TfClusterJob* mine = find(task_type);
    const bool in_range = mine && task_index >= 0 && static_cast<size_t>(task_index) < mine->addresses.size();
    out += "\"worker\":{";
    if (task_type == "worker" && in_range) {
      out += "\"" + std::to_string(task_index) + "\":" + GoJsonString(mine->addresses[task_index]);
    }
    out += "},\"ps\":";
    std::vector<std::string> ps;
    if (task_type == "ps") {
      if (in_range) ps.push_back(mine->addresses[task_index]);
    } else if (task_type == "worker") {
      if (const TfClusterJob* all = find("ps")) ps = all->addresses;
    }
    AppendStrings(out, ps);
    return out + "}," + task + "}";
  }
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (i) out += ',';
    out += GoJsonString(cluster[i].name) + ":";
    AppendStrings(out, cluster[i].addresses);
  }
  return out + "}," + task + ",\"environment\":\"cloud\"}";
}

std::string ReplicaAddress(const DistributedJob& job, ReplicaType type, int index,
                           const TfConfigOptions& opts) {
  std::string host = job.name + "-" + std::string(ReplicaTypeLower(type)) + "-" + std::to_string(index) +
                     "." + job.name + "." + opts.namespace_ + ".svc";
  if (!opts.cluster_domain.empty()) host += "." + opts.cluster_domain;
  return host + ":" + std::to_string(job.port);
}

StatusOr<std::string> GenerateTfConfig(const DistributedJob& job, ReplicaType type, int index,
                                       const TfConfigOptions& opts, const AddressFn& address) {
  if (index < 0 || index >= job.Replicas(type)) {
    return InvalidArgumentError("replica " + std::string(ReplicaTypeName(type)) + ":" +
                                std::to_string(index) + " does not exist: the job has " +
                                std::to_string(job.Replicas(type)) + " " +
                                std::string(ReplicaTypeName(type)) + " replicas");
  }
  auto addr = [&](ReplicaType t, int i) { return address ? address(t, i) : ReplicaAddress(job, t, i, opts); };
  // The Evaluator is left out of the cluster: it is not part of training.
  std::vector<TfClusterJob> cluster;
  for (ReplicaType t : kAllReplicaTypes) {
    if (t == ReplicaType::kEvaluator || !job.Find(t)) continue;
    TfClusterJob j{std::string(ReplicaTypeLower(t)), {}};
    // In sparse form only this task's and the PS tasks' addresses are used.
    if (!opts.sparse || t == type || t == ReplicaType::kPS) {
      for (int i = 0; i < job.Replicas(t); ++i) j.addresses.push_back(addr(t, i));
    }
    cluster.push_back(std::move(j));
  }
  return RenderTfConfig(std::move(cluster), ReplicaTypeLower(type), index, opts.sparse);
}

}  // namespace ringmaster
