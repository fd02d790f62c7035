// A random non-zero id: the incarnations of formations and meshes, and the
// ids of processes. Every shell that mints one (the formation hub, the mesh,
// the communicator) calls this; the pure core is given it as a function.
#pragma once

#include <cstdint>

namespace ringmaster::internal {

uint64_t RandomId();

}  // namespace ringmaster::internal
