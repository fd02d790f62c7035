#include "model.h"

#include <charconv>

namespace ringmaster::worker {

std::vector<int64_t> ResNet50() {
  std::vector<int64_t> t;
  auto conv = [&](int64_t k, int64_t in, int64_t out) {
    t.push_back(k * k * in * out);
    t.push_back(out);  // batch-norm gamma
    t.push_back(out);  // batch-norm beta
  };
  conv(7, 3, 64);
  int64_t in = 64;
  const int64_t blocks[4] = {3, 4, 6, 3}, widths[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    const int64_t w = widths[s];
    for (int64_t b = 0; b < blocks[s]; ++b) {
      if (b == 0) conv(1, in, 4 * w);  // projection shortcut
      conv(1, in, w);
      conv(3, w, w);
      conv(1, w, 4 * w);
      in = 4 * w;
    }
  }
  t.push_back(2048 * 1000);
  t.push_back(1000);
  return t;
}

StatusOr<std::vector<int64_t>> ModelByName(const std::string& name) {
  if (name == "resnet50") return ResNet50();
  if (name == "tiny") return std::vector<int64_t>{1, 7, 1000, 3, 4099, 0, 65537, 12};
  auto x = name.find('x');
  if (x != std::string::npos) {
    int64_t n = 0, m = 0;
    auto [e1, c1] = std::from_chars(name.data(), name.data() + x, n);
    auto [e2, c2] = std::from_chars(name.data() + x + 1, name.data() + name.size(), m);
    if (c1 == std::errc() && c2 == std::errc() && e1 == name.data() + x && e2 == name.data() + name.size() &&
        n > 0 && n <= 100000 && m >= 0 && m <= (int64_t{1} << 30)) {
      return std::vector<int64_t>(static_cast<size_t>(n), m);
    }
  }
  return InvalidArgumentError("--model: expected resnet50, tiny or NxM, got '" + name + "'");
}

}  // namespace ringmaster::worker
