// ringmaster-worker: the program the example jobs run. It reads TF_CONFIG and
// the RINGMASTER_* options exactly as a training process linking the agent
// would, and reports its place in the collective group.
#include <cstdlib>
#include <iostream>
#include <string>

#include "ringmaster/comm_options.h"
#include "ringmaster/tf_config.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: ringmaster-worker\n"
                   "Reads TF_CONFIG and RINGMASTER_* from the environment and joins the\n"
                   "collective group. Exits non-zero on a malformed TF_CONFIG or option.\n";
      return 0;
    }
  }
  const char* tf_config = std::getenv("TF_CONFIG");
  if (!tf_config || !*tf_config) {
    std::cerr << "ringmaster-worker: TF_CONFIG is not set\n";
    return 2;
  }
  auto config = ringmaster::ParseTfConfig(tf_config);
  if (!config.ok()) {
    std::cerr << "ringmaster-worker: " << config.status().ToString() << "\n";
    return 2;
  }
  auto options = ringmaster::CommunicationOptions::FromEnv(&std::getenv);
  if (!options.ok()) {
    std::cerr << "ringmaster-worker: " << options.status().ToString() << "\n";
    return 2;
  }
  auto group = ringmaster::MakeCollectiveGroup(*config);
  std::cout << "task " << config->task_type.value_or("(none)") << ":" << config->task_index << " ";
  if (group.rank) {
    std::cout << "rank " << *group.rank << " of " << group.members.size();
  } else {
    std::cout << "not a member of the collective group (" << group.members.size() << " members)";
  }
  std::cout << "; implementation " << ringmaster::ImplementationName(options->implementation)
            << ", bytes_per_pack " << options->bytes_per_pack << ", timeout "
            << (options->EffectiveTimeout() ? std::to_string(*options->EffectiveTimeout()) + "s" : "none")
            << "\n  group:";
  for (const auto& m : group.members) std::cout << " " << m.TaskName() << "=" << m.address;
  std::cout << std::endl;
  return 0;
}
