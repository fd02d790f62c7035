// A CLI11 check for numeric flags, shared by `ringmaster` and
// `ringmaster-operator` so both say a bad number the way the agent's
// RINGMASTER_* checks do: "--workers: must be an integer in [1, 256], got
// '0'" (CLI11's own Range prints its bounds with six decimals and says
// nothing of integers). Header-only, like CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <sstream>
#include <string>

namespace ringmaster::flags {

// `what` names the kind of number ("an integer", "a number of seconds");
// `integer` also refuses fractions and exponents.
inline CLI::Validator NumberIn(double lo, double hi, const std::string& what, bool integer) {
  const auto text = [](double v) {
    std::ostringstream s;
    if (v == static_cast<double>(static_cast<long long>(v))) {
      s << static_cast<long long>(v);  // 1000000, not 1e+06
    } else {
      s << v;
    }
    return s.str();
  };
  const std::string expected = what + " in [" + text(lo) + ", " + text(hi) + "]";
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        const bool whole = !integer || value.find_first_not_of("+-0123456789") == std::string::npos;
        if (value.empty() || *end != '\0' || !whole || !(v >= lo && v <= hi)) {
          return "must be " + expected + ", got '" + value + "'";
        }
        return "";
      },
      expected);
}

inline CLI::Validator IntegerIn(double lo, double hi) {
  return NumberIn(lo, hi, "an integer", true);
}

}  // namespace ringmaster::flags
