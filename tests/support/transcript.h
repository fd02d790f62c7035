// Transcript tests, as etcd's raft tests its state machine (the datadriven
// format of cockroachdb/datadriven): a testdata/*.txt file is a list of
// cases, each a command line with its arguments, input lines, "----", and
// the expected output up to the next blank line:
//
//   # a comment
//   step t=5
//   worker-1 Failed exit=1
//   ----
//   actions: restart worker-1
//
// A harness turns each case into output text; the test fails on the first
// case whose output differs, naming its file and line. With
// RINGMASTER_REWRITE_TRANSCRIPTS=1 in the environment the files are
// rewritten with what the code now says instead, for review as a diff
// (`git diff tests/`); comments and inputs are kept as they are.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ringmaster::testing {

struct TranscriptCase {
  std::string file;
  int line = 0;                                           // the command's, 1-based
  std::string command;                                    // the first word
  std::vector<std::pair<std::string, std::string>> args;  // key=value (value "" for a bare key)
  std::vector<std::string> input;
  std::string expected;  // lines joined with '\n', no trailing newline

  bool Has(const std::string& key) const {
    return std::any_of(args.begin(), args.end(), [&](const auto& a) { return a.first == key; });
  }
  std::string Arg(const std::string& key, const std::string& fallback = "") const {
    for (const auto& [k, v] : args) {
      if (k == key) return v;
    }
    return fallback;
  }
  std::string Where() const { return file + ":" + std::to_string(line); }
};

inline bool RewriteTranscripts() {
  const char* v = std::getenv("RINGMASTER_REWRITE_TRANSCRIPTS");
  return v && std::string(v) == "1";
}

// The *.txt files of `dir`, sorted by name (parameters of a test suite).
inline std::vector<std::string> TranscriptFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".txt") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A file's name without directory or extension: the test's name.
inline std::string TranscriptName(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

namespace internal {

inline std::vector<std::string> SplitWords(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

inline std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace internal

// Runs every case of `path` through `run`. A case's output must not hold a
// blank line (it would end the case).
inline void RunTranscript(const std::string& path,
                          const std::function<std::string(const TranscriptCase&)>& run) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(internal::TrimRight(l));
  const bool rewrite = RewriteTranscripts();
  std::vector<std::string> out;  // the rewritten file
  size_t i = 0;
  while (i < lines.size()) {
    const std::string& l = lines[i];
    if (l.empty() || l[0] == '#') {
      out.push_back(l);
      ++i;
      continue;
    }
    TranscriptCase c;
    c.file = path;
    c.line = static_cast<int>(i + 1);
    auto words = internal::SplitWords(l);
    c.command = words[0];
    for (size_t w = 1; w < words.size(); ++w) {
      const auto eq = words[w].find('=');
      if (eq == std::string::npos) {
        c.args.emplace_back(words[w], "");
      } else {
        c.args.emplace_back(words[w].substr(0, eq), words[w].substr(eq + 1));
      }
    }
    out.push_back(l);
    ++i;
    while (i < lines.size() && lines[i] != "----") {
      ASSERT_FALSE(lines[i].empty()) << c.Where() << ": a blank line before ----";
      c.input.push_back(lines[i]);
      out.push_back(lines[i]);
      ++i;
    }
    ASSERT_LT(i, lines.size()) << c.Where() << ": no ---- after the command";
    out.push_back(lines[i]);
    ++i;
    std::vector<std::string> expected;
    while (i < lines.size() && !lines[i].empty()) expected.push_back(lines[i++]);
    for (size_t e = 0; e < expected.size(); ++e) c.expected += (e ? "\n" : "") + expected[e];

    std::string actual;
    {
      SCOPED_TRACE(c.Where());
      actual = run(c);
      if (::testing::Test::HasFatalFailure()) return;
    }
    while (!actual.empty() && actual.back() == '\n') actual.pop_back();
    EXPECT_EQ(actual.find("\n\n"), std::string::npos) << c.Where() << ": the output holds a blank line";
    if (rewrite) {
      std::istringstream a(actual);
      for (std::string al; std::getline(a, al);) out.push_back(internal::TrimRight(al));
      continue;
    }
    if (actual != c.expected) {
      ADD_FAILURE() << c.Where() << ": " << l << "\n--- expected\n"
                    << c.expected << "\n--- actual\n"
                    << actual
                    << "\n(RINGMASTER_REWRITE_TRANSCRIPTS=1 rewrites the file with the actual output)";
      return;  // later cases build on this one
    }
  }
  if (rewrite) {
    std::ofstream o(path, std::ios::trunc);
    for (const auto& ol : out) o << ol << "\n";
    ASSERT_TRUE(o.good()) << "cannot write " << path;
  }
}

}  // namespace ringmaster::testing
