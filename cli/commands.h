// `ringmaster`'s commands, each returning the process's exit code: validate,
// tfconfig, run, convert and flight-recorder (bench is bench.h). main.cc
// parses the command line and calls one of them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "local_runner.h"
#include "ringmaster/job.h"
#include "ringmaster/tf_config_gen.h"

namespace ringmaster::cli {

// Every job in FILE valid: 0, a line per job on stdout; else each problem on
// stderr and 1.
int Validate(const std::string& path);

struct TfConfigArgs {
  std::string file, job_name;
  std::optional<std::string> ns;
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
  TfConfigOptions opts;
};

// --replica's TYPE:INDEX into *type and *index; "" or what is wrong with it.
std::string ParseReplica(const std::string& text, ReplicaType* type, int* index);

// The TF_CONFIG the operator (or, for a TFJob, training-operator) injects.
int TfConfig(TfConfigArgs a);

// The job as local processes (local_runner.h).
int Run(const std::string& file, const std::string& job_name, LocalRunOptions opts);

// Each TFJob of FILE as its DistributedJob, `---` between them.
int Convert(const std::string& path);

// The flight-recorder dumps of PATHs (files, or directories of *.json) side
// by side, the last `last` collectives.
int FlightRecorder(const std::vector<std::string>& paths, size_t last);

}  // namespace ringmaster::cli
