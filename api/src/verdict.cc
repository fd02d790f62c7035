#include "ringmaster/verdict.h"

namespace ringmaster {
namespace {

bool Space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// An exit known to have ended before `b` (unknown times sort last).
bool Before(const ReplicaExit& a, const ReplicaExit& b) {
  if (a.finished == 0) return false;
  return b.finished == 0 || a.finished < b.finished;
}

bool Blank(std::string_view s) {
  for (char c : s) {
    if (!Space(c)) return false;
  }
  return true;
}

}  // namespace

std::optional<size_t> ChooseVerdict(const std::vector<ReplicaExit>& exits) {
  std::optional<size_t> best;
  for (size_t i = 0; i < exits.size(); ++i) {
    const ReplicaExit& e = exits[i];
    if (e.exit_code == 0 || Blank(e.message)) continue;
    if (!best || Before(e, exits[*best])) best = i;
  }
  return best;
}

std::string OneLine(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    while (!line.empty() && Space(line.front())) line.remove_prefix(1);
    while (!line.empty() && Space(line.back())) line.remove_suffix(1);
    if (!line.empty()) {
      if (!out.empty()) out += "; ";
      out += line;
    }
    start = nl + 1;
  }
  if (out.size() <= max_bytes) return out;
  const std::string_view dots = "...";
  size_t keep = max_bytes > dots.size() ? max_bytes - dots.size() : 0;
  // Back up to the first byte of a UTF-8 character.
  while (keep > 0 && (static_cast<unsigned char>(out[keep]) & 0xC0) == 0x80) --keep;
  out.resize(keep);
  if (max_bytes >= dots.size()) out += dots;
  return out;
}

std::string FormatVerdict(const ReplicaExit& exit, size_t max_bytes) {
  std::string head = exit.replica + " failed (exit code " + std::to_string(exit.exit_code) + "): ";
  if (head.size() >= max_bytes) return OneLine(head, max_bytes);
  return head + OneLine(exit.message, max_bytes - head.size());
}

}  // namespace ringmaster
