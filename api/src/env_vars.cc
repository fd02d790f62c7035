// docs/agent.md's "Environment" table, rendered from env_vars.h's table.
#include "ringmaster/env_vars.h"

namespace ringmaster {

std::string RenderEnvironmentTable() {
  std::string out = "| variable | meaning |\n| --- | --- |\n";
  for (const EnvVar& v : kAgentEnvironment) {
    out += "| `";
    out += v.name;
    out += "` | ";
    out += v.meaning;
    out += " |\n";
  }
  return out;
}

}  // namespace ringmaster
