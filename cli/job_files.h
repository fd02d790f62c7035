// `ringmaster`'s job files: read from a path or standard input, and loaded
// with every DistributedJob and TFJob they hold; the problems go to stderr,
// each as FILE:LINE:COLUMN: FIELD: MESSAGE.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/tfjob.h"

namespace ringmaster::cli {

// The file's bytes; "-" is standard input (`kubectl get djob x -o yaml |
// ringmaster run -`). nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path);

// How messages name FILE: "<stdin>" for "-".
std::string SourceName(const std::string& path);

// Reads and loads FILE's jobs of both kinds; prints why not and returns
// nullopt on failure. The jobs' own field errors are the caller's to print.
std::optional<std::vector<LoadedAnyJob>> LoadFile(const std::string& path);

// Loads FILE and picks one job (by `job_name` when there are several); a
// TFJob comes with its own form. Prints the problems and returns nullopt
// on failure.
std::optional<LoadedAnyJob> LoadOne(const std::string& path, const std::string& job_name);

}  // namespace ringmaster::cli
