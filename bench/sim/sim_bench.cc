// rm-bench-mesh-sim [N...] [--repeat K] [--json FILE]: runs the simulation of
// tests/agent/mesh_sim.h at each N (default 256 1024 4096), K times each,
// and prints one JSON line per run: the time of formation, of the link probe
// and of the first 4-byte ring all-reduce, and each member's connections and
// messages (the followers' largest and mean, and the leader's).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mesh_sim.h"

int main(int argc, char** argv) {
  std::vector<int> ns;
  int repeat = 1;
  FILE* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = std::fopen(argv[++i], "a");
      if (!json) {
        std::perror(argv[i]);
        return 2;
      }
    } else if (std::atoi(argv[i]) > 0) {
      ns.push_back(std::atoi(argv[i]));
    } else {
      std::fprintf(stderr, "usage: %s [N...] [--repeat K] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (ns.empty()) ns = {256, 1024, 4096};
  int failed = 0;
  for (int n : ns) {
    for (int k = 0; k < repeat; ++k) {
      ringmaster::testing::MeshSimConfig c;
      c.n = n;
      const auto r = ringmaster::testing::RunMeshSim(c);
      const auto& m = r.max_follower;
      const auto& l = r.bills[0];
      std::string error = r.error;  // a JSON string: no quotes or backslashes inside
      for (char& ch : error)
        if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = '\'';
      char line[1024];
      std::snprintf(
          line, sizeof line,
          "{\"n\":%d,\"streams\":%d,\"formed\":%s,\"correct\":%s,\"error\":\"%s\",\"formation_s\":%.3f,"
          "\"probe_s\":%.3f,\"allreduce_s\":%.3f,\"wall_s\":%.3f,\"total_messages\":%llu,"
          "\"follower_max\":{\"connections\":%d,\"control\":%d,\"data\":%d,\"messages\":%d,\"formation\":%d,"
          "\"heartbeat\":%d,\"data_messages\":%d,\"formation_entries\":%llu},\"follower_mean\":{"
          "\"connections\":%.2f,"
          "\"messages\":%.2f},\"leader\":{\"connections\":%d,\"formation_messages\":%d,\"other_messages\":%d,"
          "\"formation_entries\":%llu},\"log2n\":%.0f}",
          n, c.streams, r.formed ? "true" : "false", r.correct ? "true" : "false", error.c_str(),
          r.formation_s, r.probe_s, r.allreduce_s, r.wall_s,
          static_cast<unsigned long long>(r.total_messages), m.connections(), m.control_connections,
          m.data_connections, m.messages(), m.formation_messages, m.heartbeat_messages, m.data_messages,
          static_cast<unsigned long long>(m.formation_entries), r.mean_follower_connections,
          r.mean_follower_messages, l.connections() + (n - 1), l.formation_messages,
          l.heartbeat_messages + l.data_messages, static_cast<unsigned long long>(l.formation_entries),
          std::log2(static_cast<double>(n)));
      std::printf("%s\n", line);
      std::fflush(stdout);
      if (json) std::fprintf(json, "%s\n", line);
      if (!r.formed || !r.correct || !r.error.empty()) ++failed;
    }
  }
  if (json) std::fclose(json);
  return failed ? 1 : 0;
}
