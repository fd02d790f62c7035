#include "ringmaster/tf_config.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

namespace ringmaster {
namespace {

using json = nlohmann::json;

Status Invalid(const std::string& what) {
  return InvalidArgumentError("TF_CONFIG: " + what);
}

StatusOr<int> ParseIndexKey(const std::string& key, const std::string& type) {
  int idx = -1;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), idx);
  if (ec != std::errc() || end != key.data() + key.size() || idx < 0) {
    return Invalid("cluster." + type + ": sparse key '" + key + "' is not a task index");
  }
  return idx;
}

}  // namespace

std::string GroupMember::TaskName() const {
  return "/job:" + task_type + "/task:" + std::to_string(task_index);
}

StatusOr<TfConfig> ParseTfConfig(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return Invalid(std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object()) return Invalid("must be a JSON object");

  TfConfig out;
  if (auto it = doc.find("cluster"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid("cluster: must be an object");
    for (const auto& [type, tasks] : it->items()) {
      auto& slot = out.cluster[type];
      if (tasks.is_array()) {
        for (size_t i = 0; i < tasks.size(); ++i) {
          if (!tasks[i].is_string()) {
            return Invalid("cluster." + type + "[" + std::to_string(i) + "]: must be a \"host:port\" string");
          }
          slot[static_cast<int>(i)] = tasks[i].get<std::string>();
        }
      } else if (tasks.is_object()) {
        out.sparse_types.push_back(type);
        for (const auto& [key, addr] : tasks.items()) {
          auto idx = ParseIndexKey(key, type);
          if (!idx.ok()) return idx.status();
          if (!addr.is_string())
            return Invalid("cluster." + type + "." + key + ": must be a \"host:port\" string");
          slot[*idx] = addr.get<std::string>();
        }
      } else {
        return Invalid("cluster." + type + ": must be a list of addresses or an index -> address object");
      }
    }
  }

  if (auto it = doc.find("task"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid("task: must be an object");
    auto type = it->find("type");
    if (type == it->end() || !type->is_string()) return Invalid("task.type: must be a string");
    out.task_type = type->get<std::string>();
    if (auto idx = it->find("index"); idx != it->end()) {
      if (!idx->is_number_integer()) return Invalid("task.index: must be an integer");
      auto v = idx->get<int64_t>();
      if (v < 0 || v > (1 << 30)) return Invalid("task.index: out of range: " + std::to_string(v));
      out.task_index = static_cast<int>(v);
    }
    auto cluster_it = out.cluster.find(*out.task_type);
    if (cluster_it == out.cluster.end()) {
      // Kubeflow leaves the evaluator out of the training cluster.
      if (*out.task_type != "evaluator") {
        return Invalid("task.type: '" + *out.task_type + "' is not a job in cluster");
      }
    } else if (!cluster_it->second.count(out.task_index)) {
      return Invalid("task.index: " + std::to_string(out.task_index) + " is out of range for job '" +
                     *out.task_type + "' (" + std::to_string(cluster_it->second.size()) + " tasks)");
    }
  }

  for (const char* key : {"rpc_layer", "environment"}) {
    if (auto it = doc.find(key); it != doc.end() && !it->is_null()) {
      if (!it->is_string()) return Invalid(std::string(key) + ": must be a string");
      (std::string_view(key) == "rpc_layer" ? out.rpc_layer : out.environment) = it->get<std::string>();
    }
  }
  return out;
}

CollectiveGroup MakeCollectiveGroup(const TfConfig& config) {
  CollectiveGroup group;
  for (const char* type : {"chief", "master", "worker"}) {
    auto it = config.cluster.find(type);
    if (it == config.cluster.end()) continue;
    for (const auto& [index, address] : it->second) {
      if (config.task_type && *config.task_type == type && config.task_index == index) {
        group.rank = static_cast<int>(group.members.size());
      }
      group.members.push_back({type, index, address});
    }
  }
  return group;
}

}  // namespace ringmaster
