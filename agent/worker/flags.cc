#include "flags.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "c_api_check.h"
#include "ringmaster/enum_names.h"

namespace ringmaster::worker {
namespace {

// The names come from the tables (ringmaster/enums.h); bool cannot be reduced.
std::string Names(const EnumTable& table, std::string_view skip = {}) {
  std::string out;
  for (const auto& e : table.values) {
    if (e.name != skip) out += (out.empty() ? "" : "|") + std::string(e.name);
  }
  return out;
}

std::string Usage() {
  return "usage: ringmaster-worker [--steps N] [--model resnet50|tiny|NxM]\n"
         "                         [--dtype " +
         Names(DTypeTable(), DataTypeName(DataType::kBool)) + "]\n" + "                         [--op " +
         Names(ReduceOpTable()) + "] [--async]\n" +
         "                         [--quiet] [--check-c-api]\n"
         "                         [--stall-at-step K] [--crash-at-step K] [--drill-task TYPE:INDEX]\n"
         "                         [--print-env] [--recover] [--crash-in-recovery]\n"
         "Joins the collective group from TF_CONFIG and RINGMASTER_* and all-reduces synthetic gradients\n"
         "every step, verifying each element exactly. --stall-at-step K stops taking part at step K but\n"
         "stays alive; --crash-at-step K dies with SIGKILL in the middle of step K's all-reduce, only while\n"
         "RINGMASTER_RESTART_COUNT is 0. --drill-task worker:1 limits the drills to that task (every\n"
         "replica of a spec runs the same arguments). --print-env first prints TF_CONFIG and every\n"
         "RINGMASTER_* variable as 'env NAME=VALUE' lines, sorted (what the process was given).\n"
         "--recover (also when RINGMASTER_RECOVERY=InPlace: runPolicy.recovery): recovery in place. When\n"
         "a member fails, the survivors keep running, form the group again with its new incarnation\n"
         "(the same task restarted), agree on the last completed step,\n"
         "broadcast that step's result (the state) to whoever lacks it, verify it, and go on; a new\n"
         "incarnation joining a running group does the same from its first call. --crash-in-recovery\n"
         "(a drill, first start only) dies with SIGKILL in a recovery, right after the group re-formed.\n"
         "--check-c-api instead runs one all-gather-v, all-to-all, reduce-scatter, uint8 all-reduce and\n"
         "bool broadcast, and collectives on two process sets, through the C API (ringmaster.h), checks\n"
         "every element and exits.\n";
}

bool ParseInt(const char* s, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > 100000000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

std::optional<int> ParseFlags(int argc, char** argv, Flags* flags) {
  Flags& f = *flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::cerr << "ringmaster-worker: " << name << " needs a value\n" << Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << Usage();
      return 0;
    } else if (a == "--steps") {
      if (!ParseInt(next("--steps"), &f.steps)) return std::cerr << "ringmaster-worker: bad --steps\n", 2;
    } else if (a == "--model") {
      f.model = next("--model");
    } else if (a == "--dtype") {
      auto d = DTypeTable().Parse(next("--dtype"), "--dtype");
      if (!d.ok() || *d == static_cast<int>(DataType::kBool)) {  // bool cannot be reduced
        return std::cerr << "ringmaster-worker: "
                         << (d.ok() ? "--dtype: bool cannot be reduced" : d.status().message()) << "\n",
               2;
      }
      f.dtype = static_cast<DataType>(*d);
    } else if (a == "--op") {
      auto op = ReduceOpTable().Parse(next("--op"), "--op");
      if (!op.ok()) return std::cerr << "ringmaster-worker: " << op.status().message() << "\n", 2;
      f.op = static_cast<ReduceOp>(*op);
    } else if (a == "--stall-at-step") {
      if (!ParseInt(next("--stall-at-step"), &f.stall_at))
        return std::cerr << "ringmaster-worker: bad step\n", 2;
    } else if (a == "--crash-at-step") {
      if (!ParseInt(next("--crash-at-step"), &f.crash_at))
        return std::cerr << "ringmaster-worker: bad step\n", 2;
    } else if (a == "--drill-task") {
      f.drill_task = next("--drill-task");
    } else if (a == "--async") {
      f.async = true;
    } else if (a == "--quiet") {
      f.quiet = true;
    } else if (a == "--recover") {
      f.recover = true;
    } else if (a == "--crash-in-recovery") {
      f.crash_in_recovery = true;
    } else if (a == "--print-env") {
      f.print_env = true;
    } else if (a == "--check-c-api") {
      return CheckCApiCollectives();
    } else {
      std::cerr << "ringmaster-worker: unknown flag " << a << "\n" << Usage();
      return 2;
    }
  }
  return std::nullopt;
}

}  // namespace ringmaster::worker
