// env_vars.h: the one table of the agent's environment variables, the page
// rendered from it, and no variable read beside it.
#include "ringmaster/env_vars.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace ringmaster {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = RINGMASTER_SOURCE_DIR;
constexpr std::string_view kBegin =
    "<!-- The table below is generated from api/include/ringmaster/env_vars.h by scripts/gen-env-doc. -->\n";
constexpr std::string_view kEnd = "<!-- End of the generated table. -->\n";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The production C++ that reads the environment: the agent and the api.
std::vector<fs::path> Readers() {
  std::vector<fs::path> out;
  for (const char* dir : {"agent/src", "agent/worker", "agent/include", "api/src", "api/include"}) {
    for (const auto& e : fs::recursive_directory_iterator(kSource / dir)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".cc" || ext == ".h")) out.push_back(e.path());
    }
  }
  return out;
}

TEST(EnvVars, NamesAreUniqueAndWellFormed) {
  std::set<std::string_view> names, constants;
  const std::regex form("TF_CONFIG|RINGMASTER_[A-Z0-9_]+");
  for (const EnvVar& v : kAgentEnvironment) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " is in the table twice";
    EXPECT_TRUE(constants.insert(v.constant).second) << v.constant << " is in the table twice";
    EXPECT_TRUE(std::regex_match(std::string(v.name), form)) << v.name;
    EXPECT_FALSE(v.meaning.empty()) << v.name << " has no meaning";
    EXPECT_EQ(v.meaning.find('|'), std::string_view::npos) << v.name << ": a '|' would break the table";
  }
  EXPECT_EQ(std::string_view(kEnvTfConfig), "TF_CONFIG");
  EXPECT_EQ(std::string_view(kEnvAgentPort), "RINGMASTER_PORT");
}

TEST(EnvVars, RenderedTableHasOneRowPerVariableInOrder) {
  const std::string table = RenderEnvironmentTable();
  std::istringstream in(table);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "| variable | meaning |");
  std::getline(in, line);
  EXPECT_EQ(line, "| --- | --- |");
  for (const EnvVar& v : kAgentEnvironment) {
    ASSERT_TRUE(std::getline(in, line)) << "no row for " << v.name;
    EXPECT_EQ(line.rfind("| `" + std::string(v.name) + "` | ", 0), 0u) << line;
  }
  EXPECT_FALSE(std::getline(in, line)) << "a row too many: " << line;
}

// RINGMASTER_REWRITE_DOCS=1 (scripts/gen-env-doc) writes the table instead.
TEST(EnvVars, DocsAgentPageHasTheRenderedTable) {
  const fs::path page = kSource / "docs/agent.md";
  std::string text = ReadFile(page);
  const size_t begin = text.find(kBegin);
  ASSERT_NE(begin, std::string::npos) << page << ": no line '" << kBegin.substr(0, kBegin.size() - 1) << "'";
  const size_t body = begin + kBegin.size();
  const size_t end = text.find(kEnd, body);
  ASSERT_NE(end, std::string::npos) << page << ": no line '" << kEnd.substr(0, kEnd.size() - 1) << "'";
  const std::string want = RenderEnvironmentTable();
  if (const char* w = std::getenv("RINGMASTER_REWRITE_DOCS"); w && std::string(w) == "1") {
    text.replace(body, end - body, want);
    std::ofstream(page) << text;
    return;
  }
  EXPECT_EQ(text.substr(body, end - body), want)
      << page << "'s Environment table differs from env_vars.h's: run scripts/gen-env-doc";
}

// A variable read beside the table (getenv("NAME")) would be missing from
// the page; a row no code reads documents nothing.
TEST(EnvVars, EveryVariableReadIsInTheTableAndEveryRowIsRead) {
  const std::regex literal_read(R"(getenv\(\s*")");
  std::set<std::string_view> unread;
  for (const EnvVar& v : kAgentEnvironment) unread.insert(v.constant);
  for (const fs::path& p : Readers()) {
    const std::string text = ReadFile(p);
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      EXPECT_FALSE(std::regex_search(line, literal_read))
          << p.lexically_relative(kSource).string() << ":" << n
          << " reads a variable by its literal name: add it to env_vars.h's table and use its constant";
    }
    if (p.filename() == "env_vars.h") continue;
    for (auto it = unread.begin(); it != unread.end();) {
      it = text.find(*it) == std::string::npos ? std::next(it) : unread.erase(it);
    }
  }
  for (std::string_view c : unread) ADD_FAILURE() << c << " is in env_vars.h's table but no code reads it";
}

}  // namespace
}  // namespace ringmaster
