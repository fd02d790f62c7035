// commands.h: `ringmaster`'s commands.
#include "commands.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "flight_recorder.h"
#include "job_files.h"
#include "ringmaster/join_list.h"
#include "ringmaster/tfjob.h"

namespace ringmaster::cli {
namespace {

// The directory of this executable (ringmaster-worker lives beside it).
std::string BinDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.find_last_of('/'));
}

// PATH's dump files: PATH itself, or a directory's *.json (sorted).
bool DumpFiles(const std::string& path, std::vector<std::string>& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    out.push_back(path);
    return true;
  }
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".json") found.push_back(e.path().string());
  }
  if (ec) {
    std::cerr << "ringmaster: cannot list " << path << ": " << ec.message() << "\n";
    return false;
  }
  if (found.empty()) {
    std::cerr << "ringmaster: " << path << ": no *.json flight-recorder dumps in this directory\n";
    return false;
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

}  // namespace

int Validate(const std::string& path) {
  const std::string source = SourceName(path);
  auto jobs = LoadFile(path);
  if (!jobs) return 1;
  int problems = 0;
  for (const auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    problems += static_cast<int>(j.loaded.errors.size());
    if (!j.loaded.job) continue;
    const std::string replicas = JoinList(j.loaded.job->replica_specs, [&](const auto& r) {
      const auto& [type, spec] = r;
      // A TFJob's Master keeps its name.
      const bool master = j.tfjob && j.tfjob->chief_is_master && type == ReplicaType::kChief;
      return std::string(master ? "Master" : ReplicaTypeName(type)) + " x" + std::to_string(spec.replicas);
    });
    std::cout << source << ": " << j.kind << " " << j.loaded.job->name << " is valid (" << replicas << ")\n";
  }
  if (problems) std::cerr << source << ": " << problems << (problems == 1 ? " problem" : " problems") << "\n";
  return problems ? 1 : 0;
}

std::string ParseReplica(const std::string& text, ReplicaType* type, int* index) {
  const auto colon = text.find(':');
  auto t = ParseReplicaType(text.substr(0, colon));
  char* end = nullptr;
  const long i = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
  if (!t || colon == std::string::npos || *end != '\0' || i < 0 || i > INT_MAX) {
    return "'" + text + "' is not TYPE:INDEX (e.g. worker:1)";
  }
  *type = *t;
  *index = static_cast<int>(i);
  return "";
}

int TfConfig(TfConfigArgs a) {
  auto& [file, job_name, ns, type, index, opts] = a;
  auto loaded = LoadOne(file, job_name);
  if (!loaded) return 1;
  const DistributedJob& job = *loaded->loaded.job;
  opts.namespace_ = ns.value_or(job.namespace_.empty() ? "default" : job.namespace_);
  if (loaded->tfjob && !TfJobSetsTfConfig(*loaded->tfjob)) {
    if (index >= job.Replicas(type)) {
      std::cerr << "ringmaster: replica " << ReplicaTypeName(type) << ":" << index << " does not exist\n";
      return 1;
    }
    std::cerr << "ringmaster: TFJob " << job.name
              << " has one replica: training-operator sets no TF_CONFIG for it\n";
    return 0;
  }
  auto out = loaded->tfjob ? GenerateTfJobTfConfig(*loaded->tfjob, type, index, opts)
                           : GenerateTfConfig(job, type, index, opts);
  if (!out.ok()) {
    std::cerr << "ringmaster: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out << "\n";
  return 0;
}

int Run(const std::string& file, const std::string& job_name, LocalRunOptions opts) {
  auto loaded = LoadOne(file, job_name);
  if (!loaded) return 1;
  opts.bin_dir = BinDir();
  opts.kind = loaded->kind;
  return RunLocally(*loaded->loaded.job, opts, std::cout);
}

int Convert(const std::string& path) {
  const std::string source = SourceName(path);
  auto jobs = LoadFile(path);
  if (!jobs) return 1;
  int problems = 0, converted = 0;
  std::string out;
  for (const auto& j : *jobs) {
    for (const auto& e : j.loaded.errors) std::cerr << FormatFieldError(e, source) << "\n";
    problems += static_cast<int>(j.loaded.errors.size());
    if (!j.tfjob) continue;
    if (converted++) out += "---\n";
    out += "# The DistributedJob of TFJob " + j.tfjob->job.name + " (ringmaster convert " + source + ")\n";
    if (!j.tfjob->notes.empty()) out += "# What changes meaning:\n";
    for (const auto& n : j.tfjob->notes) {
      FieldError at{n.path, n.message, n.line, n.column};
      out += "#   " + FormatFieldError(at, source) + "\n";
    }
    out += DistributedJobYaml(*j.tfjob);
  }
  if (problems) {
    std::cerr << source << ": " << problems << (problems == 1 ? " problem" : " problems") << "\n";
    return 1;
  }
  if (!converted) {
    std::cerr << "ringmaster: " << source << ": no TFJob to convert (it holds DistributedJobs already)\n";
    return 1;
  }
  std::cout << out;
  return 0;
}

int FlightRecorder(const std::vector<std::string>& paths, size_t last) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (!DumpFiles(p, files)) return 1;
  }
  std::vector<FlightDump> dumps;
  for (const auto& f : files) {
    auto text = ReadFile(f);
    if (!text) {
      std::cerr << "ringmaster: cannot read " << f << "\n";
      return 1;
    }
    auto dump = ParseFlightDump(*text, f);
    if (!dump.ok()) {
      std::cerr << "ringmaster: " << dump.status().message() << "\n";
      return 1;
    }
    dumps.push_back(std::move(*dump));
  }
  auto out = RenderFlightDumps(std::move(dumps), last);
  if (!out.ok()) {
    std::cerr << "ringmaster: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out;
  return 0;
}

}  // namespace ringmaster::cli
