// Gradient shapes for ringmaster-worker: element counts per tensor, in the
// order a model's trainable variables come in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/status.h"

namespace ringmaster::worker {

// ResNet-50 as tf_cnn_benchmarks trains it: 53 convolutions (no bias), a
// batch-norm gamma and beta after each, and the 2048x1000 classifier with its
// bias: 161 tensors, 25,557,032 parameters.
std::vector<int64_t> ResNet50();

// "resnet50", "tiny" (a few small odd-sized tensors) or "NxM" (N tensors of
// M elements each).
StatusOr<std::vector<int64_t>> ModelByName(const std::string& name);

}  // namespace ringmaster::worker
