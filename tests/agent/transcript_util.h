// What the agent's transcript harnesses share (tests/support/transcript.h
// reads the files): the group's names, times in seconds, status codes and
// statuses as text.
#pragma once

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "clock.h"
#include "ringmaster/status.h"
#include "transcript.h"

namespace ringmaster::internal {

// The chief and then workers: "/job:chief/task:0", "/job:worker/task:0", ...
inline std::vector<std::string> TranscriptNames(int members) {
  std::vector<std::string> names = {"/job:chief/task:0"};
  for (int w = 0; w + 1 < members; ++w) names.push_back("/job:worker/task:" + std::to_string(w));
  return names;
}

// t=SECONDS on a made-up clock.
inline Clock::time_point TranscriptTime(const ringmaster::testing::TranscriptCase& c, const char* key = "t") {
  return Clock::time_point{} + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(std::stod(c.Arg(key, "0"))));
}

inline std::string SecondsText(Clock::time_point t) {
  if (t == Clock::time_point::max()) return "never";
  std::ostringstream out;
  out << std::chrono::duration<double>(t.time_since_epoch()).count() << " s";
  return out.str();
}

// "DeadlineExceeded" -> the code; anything else fails the case.
inline StatusCode TranscriptCode(const std::string& name) {
  for (int c = 0; c <= 16; ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == name) return static_cast<StatusCode>(c);
  }
  ADD_FAILURE() << "unknown status code " << name;
  return StatusCode::kUnknown;
}

// The case's input lines as one text (the words of an abort, a reason).
inline std::string InputText(const ringmaster::testing::TranscriptCase& c) {
  std::string text;
  for (const auto& l : c.input) text += (text.empty() ? "" : "\n") + l;
  return text;
}

// A status as text; words that end in a space end with a "|" here, since
// the transcript's lines are trimmed.
inline std::string StatusText(const Status& s) {
  if (s.ok()) return "OK";
  std::string text = s.ToString();
  if (!text.empty() && text.back() == ' ') text += "|";
  return text;
}

}  // namespace ringmaster::internal
