// job_files.h: reading and loading `ringmaster`'s job files.
#include "job_files.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace ringmaster::cli {

std::optional<std::string> ReadFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    if (std::cin.bad()) return std::nullopt;
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string SourceName(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

std::optional<std::vector<LoadedAnyJob>> LoadFile(const std::string& path) {
  const std::string source = SourceName(path);
  auto text = ReadFile(path);
  if (!text) {
    std::cerr << "ringmaster: cannot read " << source << "\n";
    return std::nullopt;
  }
  auto jobs = LoadAnyJobs(*text, source);
  if (!jobs.ok()) {
    std::cerr << jobs.status().message() << "\n";
    return std::nullopt;
  }
  return std::move(*jobs);
}

std::optional<LoadedAnyJob> LoadOne(const std::string& path, const std::string& job_name) {
  const std::string source = SourceName(path);
  auto jobs = LoadFile(path);
  if (!jobs) return std::nullopt;
  std::vector<LoadedAnyJob> valid;
  bool errors = false;
  for (auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    errors |= !j.loaded.errors.empty();
    if (j.loaded.job && (job_name.empty() || j.loaded.job->name == job_name)) valid.push_back(std::move(j));
  }
  if (errors) return std::nullopt;
  if (valid.size() != 1) {
    std::cerr << "ringmaster: " << source << ": "
              << (valid.empty()
                      ? "no DistributedJob or TFJob named '" + job_name + "'"
                      : "holds " + std::to_string(valid.size()) + " jobs: choose one with --job NAME")
              << "\n";
    return std::nullopt;
  }
  return std::move(valid.front());
}

}  // namespace ringmaster::cli
