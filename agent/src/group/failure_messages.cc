#include "group/failure_messages.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "clock.h"
#include "ringmaster/join_list.h"

namespace ringmaster::internal {

std::string DescribeCollective(uint64_t seq, const OpInfo& info) {
  std::string s = std::string(OpKindName(info.kind)) + " collective #" + std::to_string(seq);
  if (info.kind == OpKind::kAllReduce)
    s += " (pack " + std::to_string(info.pack) + " of " + std::to_string(info.packs) + ")";
  return s;
}

namespace {

std::string Shape(const OpInfo& i) {
  std::string s = std::string(OpKindName(i.kind));
  if (i.kind == OpKind::kAllReduce) s += " pack " + std::to_string(i.pack) + " of " + std::to_string(i.packs);
  if (i.kind != OpKind::kBarrier)
    s += ", " + std::to_string(i.bytes) + " bytes of " + std::string(DataTypeName(i.dtype));
  return s;
}

}  // namespace

std::string DescribeTimeout(uint64_t seq, const OpInfo& mine, const std::vector<std::string>& names,
                            const std::vector<ProgressReport>& reports) {
  std::string out = DescribeCollective(seq, mine) + " timed out";
  if (mine.timeout_s > 0) out += " after " + FormatSeconds(mine.timeout_s);
  std::vector<std::string> parts, waited, silent;
  for (size_t r = 0; r < reports.size() && r < names.size(); ++r) {
    const ProgressReport& p = reports[r];
    const std::string& who = names[r];
    switch (p.progress) {
      case Progress::kRunning:
      case Progress::kFailed:  // it waited too, and has given up already
        waited.push_back(who);
        break;
      case Progress::kNeverEntered:
        parts.push_back(who + " never entered it (" +
                        (p.last_finished
                             ? "its last finished collective is #" + std::to_string(p.last_finished)
                             : std::string("it has finished none")) +
                        ")");
        break;
      case Progress::kQueued:
        parts.push_back(who + " had it queued" +
                        (p.last_started > p.last_finished
                             ? " behind collective #" + std::to_string(p.last_started) + ", still running"
                             : std::string()));
        break;
      case Progress::kFinished:
        parts.push_back(who + " finished it");
        break;
      case Progress::kUnknown:
        silent.push_back(who);
        break;
    }
  }
  if (!silent.empty())
    parts.push_back(JoinListAnd(silent) + " did not answer" +
                    " (stopped, hung, or its control connection is stuck)");
  if (!waited.empty()) parts.push_back(JoinListAnd(waited) + " waited");
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : ": ") + parts[i];
  return out;
}

Status DescribeMismatch(uint64_t seq, int rank, const OpInfo& mine, const std::vector<std::string>& names,
                        const std::vector<ProgressReport>& reports) {
  for (size_t r = 0; r < reports.size() && r < names.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    const ProgressReport& p = reports[r];
    if (p.progress != Progress::kRunning && p.progress != Progress::kFailed &&
        p.progress != Progress::kQueued)
      continue;
    const OpInfo& o = p.info;
    // An all-to-all's bytes are each member's own (its send counts): only
    // its kind and dtype must agree.
    const bool same_bytes = o.bytes == mine.bytes || mine.kind == OpKind::kAllToAll;
    if (o.kind == mine.kind && same_bytes && o.dtype == mine.dtype && o.pack == mine.pack &&
        o.packs == mine.packs) {
      continue;
    }
    return InvalidArgumentError("collective #" + std::to_string(seq) +
                                " differs between members: " + names[static_cast<size_t>(rank)] + " has " +
                                Shape(mine) + "; " + names[r] + " has " + Shape(o) +
                                " (every member must issue the same collectives with the same shapes and "
                                "types, in the same order)");
  }
  return OkStatus();
}

}  // namespace ringmaster::internal
