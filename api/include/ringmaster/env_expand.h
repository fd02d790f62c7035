// Kubernetes' $(VAR) expansion in a container's command, args and env values,
// so that `ringmaster run` starts a replica with the very argv a kubelet would.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ringmaster {

// Looks a variable up; nullopt when it is not defined.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The kubelet's rules: "$(NAME)" becomes NAME's value when NAME is defined
// and stays as written when it is not; "$$" is an escaped "$"; a "$" that
// starts neither (including an unclosed "$(") is kept literally.
std::string ExpandKubeVars(std::string_view input, const EnvLookup& lookup);

}  // namespace ringmaster
