#include "flight_recorder.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ringmaster/join_list.h"
#include "ringmaster/verdict.h"

namespace ringmaster::cli {
namespace {

using nlohmann::json;

// Reads fields of one dump; the first problem names the file and the field.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  const Status& status() const { return status_; }

  const json* Field(const json& obj, const char* key, const std::string& path) {
    if (!status_.ok()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end()) {
      Fail(Join(path, key), "missing");
      return nullptr;
    }
    return &*it;
  }

  int64_t Int(const json& obj, const char* key, const std::string& path) {
    const json* v = Field(obj, key, path);
    if (!v) return 0;
    if (!v->is_number_integer()) return Fail(Join(path, key), "must be an integer, got " + v->dump()), 0;
    return v->get<int64_t>();
  }

  std::string String(const json& obj, const char* key, const std::string& path) {
    const json* v = Field(obj, key, path);
    if (!v) return "";
    if (!v->is_string()) return Fail(Join(path, key), "must be a string, got " + v->dump()), "";
    return v->get<std::string>();
  }

  void Fail(const std::string& path, const std::string& what) {
    if (status_.ok())
      status_ = InvalidArgumentError(source_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  static std::string Join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string source_;
  Status status_;
};

FlightEntry ReadEntry(Reader& r, const json& e, const std::string& path) {
  FlightEntry out;
  if (!e.is_object()) {
    r.Fail(path, "must be an object");
    return out;
  }
  out.seq = r.Int(e, "seq", path);
  out.kind = r.String(e, "kind", path);
  out.pack = static_cast<int>(r.Int(e, "pack", path));
  out.packs = static_cast<int>(r.Int(e, "packs", path));
  out.dtype = r.String(e, "dtype", path);
  out.bytes = r.Int(e, "bytes", path);
  out.algorithm = r.String(e, "algorithm", path);
  if (const json* heard = r.Field(e, "heard_from", path)) {
    if (!heard->is_array()) r.Fail(path + ".heard_from", "must be an array of ranks");
    for (const auto& h : *heard) {
      if (!h.is_number_integer()) {
        r.Fail(path + ".heard_from", "must be an array of ranks, got " + heard->dump());
        break;
      }
      out.heard_from.push_back(h.get<int>());
    }
  }
  if (e.contains("heard_from_more")) out.heard_from_more = r.Int(e, "heard_from_more", path);
  out.start_unix_us = r.Int(e, "start_unix_us", path);
  if (const json* end = r.Field(e, "end_unix_us", path)) {
    if (end->is_number_integer()) {
      out.end_unix_us = end->get<int64_t>();
    } else if (!end->is_null()) {
      r.Fail(path + ".end_unix_us", "must be an integer or null, got " + end->dump());
    }
  }
  out.outcome = r.String(e, "outcome", path);
  if (r.status().ok() && out.outcome.empty()) r.Fail(path + ".outcome", "must not be empty");
  return out;
}

std::string Bytes(int64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  if (u == 0 || v >= 100 || v == static_cast<double>(static_cast<int64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

std::string Describe(const FlightEntry& e) {
  std::string s = e.kind;
  if (e.packs > 1) s += " pack " + std::to_string(e.pack) + "/" + std::to_string(e.packs);
  if (!e.algorithm.empty()) s += " " + e.algorithm;
  if (e.bytes > 0) s += ", " + Bytes(e.bytes);
  if (!e.dtype.empty()) s += " " + e.dtype;
  return s;
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

StatusOr<FlightDump> ParseFlightDump(std::string_view text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(source + ": not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("ringmaster_flight_recorder")) {
    return InvalidArgumentError(source +
                                ": not a flight-recorder dump (no \"ringmaster_flight_recorder\" field)");
  }
  Reader r(source);
  FlightDump d;
  d.source = source;
  if (int64_t version = r.Int(doc, "ringmaster_flight_recorder", ""); r.status().ok() && version != 1) {
    return InvalidArgumentError(source + ": ringmaster_flight_recorder: format " + std::to_string(version) +
                                " is not known (this reader knows format 1)");
  }
  d.task = r.String(doc, "task", "");
  d.rank = static_cast<int>(r.Int(doc, "rank", ""));
  d.size = static_cast<int>(r.Int(doc, "size", ""));
  d.pid = r.Int(doc, "pid", "");
  if (const json* cause = r.Field(doc, "cause", "")) {
    if (!cause->is_object()) {
      r.Fail("cause", "must be an object with code and message");
    } else {
      d.cause_code = r.String(*cause, "code", "cause");
      d.cause_message = r.String(*cause, "message", "cause");
    }
  }
  d.dumped_unix_us = r.Int(doc, "dumped_unix_us", "");
  if (r.status().ok() && (d.size < 1 || d.rank < 0 || d.rank >= d.size)) {
    r.Fail("rank", std::to_string(d.rank) + " is not a rank of a group of size " + std::to_string(d.size));
  }
  if (const json* entries = r.Field(doc, "entries", "")) {
    if (!entries->is_array()) r.Fail("entries", "must be an array");
    for (size_t i = 0; r.status().ok() && entries->is_array() && i < entries->size(); ++i) {
      d.entries.push_back(ReadEntry(r, (*entries)[i], "entries[" + std::to_string(i) + "]"));
    }
  }
  if (!r.status().ok()) return r.status();
  return d;
}

StatusOr<std::string> RenderFlightDumps(std::vector<FlightDump> dumps, size_t last) {
  if (dumps.empty()) return InvalidArgumentError("no flight-recorder dumps");
  std::sort(dumps.begin(), dumps.end(),
            [](const FlightDump& a, const FlightDump& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < dumps.size(); ++i) {
    if (dumps[i].size != dumps[0].size) {
      return InvalidArgumentError(dumps[i].source + " is of a group of size " +
                                  std::to_string(dumps[i].size) + ", " + dumps[0].source + " of size " +
                                  std::to_string(dumps[0].size) + ": not the same group");
    }
    if (i > 0 && dumps[i].rank == dumps[i - 1].rank) {
      return InvalidArgumentError(dumps[i - 1].source + " and " + dumps[i].source + " are both rank " +
                                  std::to_string(dumps[i].rank));
    }
  }

  std::string out;
  for (const auto& d : dumps) {
    out += "rank " + std::to_string(d.rank) + " " + d.task + " (pid " + std::to_string(d.pid) +
           "): " + d.cause_code + (d.cause_message.empty() ? "" : ": " + OneLine(d.cause_message, 1024)) +
           "\n";
  }
  std::vector<int> absent;
  for (int rank = 0, i = 0; rank < dumps[0].size; ++rank) {
    if (i < static_cast<int>(dumps.size()) && dumps[i].rank == rank) {
      ++i;
    } else {
      absent.push_back(rank);
    }
  }

  // Per member: seq -> its entry (the newest for a seq), and its oldest seq.
  std::vector<std::map<int64_t, const FlightEntry*>> by_seq(dumps.size());
  std::set<int64_t> seqs;
  for (size_t m = 0; m < dumps.size(); ++m) {
    for (const auto& e : dumps[m].entries) {
      by_seq[m][e.seq] = &e;
      seqs.insert(e.seq);
    }
  }
  if (seqs.empty()) {
    out += "no collective recorded by any member\n";
    return out;
  }
  std::vector<int64_t> shown(seqs.begin(), seqs.end());
  if (last > 0 && shown.size() > last) shown.erase(shown.begin(), shown.end() - static_cast<ptrdiff_t>(last));

  // The table: seq, collective, one column per member.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"seq", "collective"};
  for (const auto& d : dumps) header.push_back("rank " + std::to_string(d.rank));
  rows.push_back(header);
  for (int64_t seq : shown) {
    std::vector<std::string> row = {"#" + std::to_string(seq), ""};
    for (size_t m = 0; m < dumps.size(); ++m) {
      auto it = by_seq[m].find(seq);
      if (it != by_seq[m].end()) {
        if (row[1].empty()) row[1] = Describe(*it->second);
        row.push_back(it->second->outcome);
      } else if (!by_seq[m].empty() && seq < by_seq[m].begin()->first) {
        row.push_back("?");  // older than what its recorder still holds
      } else {
        row.push_back("-");
      }
    }
    rows.push_back(row);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = PadLeft(row[0], width[0]);
    for (size_t c = 1; c < row.size(); ++c)
      line += "  " + (c + 1 < row.size() ? Pad(row[c], width[c]) : row[c]);
    out += line + "\n";
  }

  // Who never entered the newest collective.
  const int64_t top = *seqs.rbegin();
  std::string what;
  std::vector<std::string> missing;
  for (size_t m = 0; m < dumps.size(); ++m) {
    auto it = by_seq[m].find(top);
    if (it != by_seq[m].end()) {
      if (what.empty()) what = it->second->kind;
      continue;
    }
    std::string who = "rank " + std::to_string(dumps[m].rank) + " " + dumps[m].task;
    std::optional<int64_t> finished;
    for (const auto& [seq, e] : by_seq[m]) {
      if (e->end_unix_us) finished = seq;
    }
    who += finished ? " (its last finished collective is #" + std::to_string(*finished) + ")"
                    : " (no finished collective recorded)";
    missing.push_back(who);
  }
  std::string line = "#" + std::to_string(top) + " " + what + ": ";
  if (missing.empty()) {
    line += "entered by every member with a dump";
  } else {
    line += "never entered by " + JoinList(missing);
  }
  if (!absent.empty()) {
    line += "; no dump from rank";
    line += absent.size() > 1 ? "s " : " ";
    line += JoinList(absent, [](auto rank) { return std::to_string(rank); });
  }
  out += line + "\n";

  // Whom each member still in it had heard from there: a member waiting
  // on a peer it never heard from points at that peer.
  std::string heard;
  for (size_t m = 0; m < dumps.size(); ++m) {
    auto it = by_seq[m].find(top);
    if (it == by_seq[m].end() || it->second->end_unix_us) continue;
    const FlightEntry& e = *it->second;
    std::string from = JoinList(e.heard_from, [](auto rank) { return std::to_string(rank); });
    if (e.heard_from_more > 0) from += " and " + std::to_string(e.heard_from_more) + " more";
    heard += std::string(heard.empty() ? "" : "; ") + "rank " + std::to_string(dumps[m].rank) + " " +
             e.outcome + ", " + (from.empty() ? "heard from no one" : "heard from " + from);
  }
  if (!heard.empty()) out += "#" + std::to_string(top) + " in progress: " + heard + "\n";
  return out;
}

}  // namespace ringmaster::cli
