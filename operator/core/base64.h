// Standard base64 (RFC 4648 section 4): kubeconfig's *-data fields and a
// Secret's data. A header of its own so that what builds a Secret need not
// know of kubeconfig.
#pragma once

#include <string>
#include <string_view>

#include "ringmaster/status.h"

namespace ringmaster::op {

// Padding optional, whitespace ignored; the URL-safe alphabet's '-' and '_'
// are read too.
StatusOr<std::string> Base64Decode(const std::string& text);
// With padding (Secret data).
std::string Base64Encode(std::string_view bytes);

}  // namespace ringmaster::op
