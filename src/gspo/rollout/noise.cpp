#include "gspo/rollout/noise.h"

#include <torch/torch.h>

namespace gspo::rollout {
namespace {
uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t mix_seed(uint64_t a, uint64_t b) { return finalise(finalise(a + 0x9E3779B97F4A7C15ULL) ^ (b * 0xD1B54A32D192ED03ULL)); }

double uniform01(uint64_t seed, uint64_t row, uint64_t position) {
  const uint64_t h = mix_seed(mix_seed(seed, row), position);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

at::Tensor row_uniforms(const NoiseKey& key, const std::vector<int64_t>& rows, int64_t position) {
  auto u = torch::empty({static_cast<int64_t>(rows.size())}, torch::kDouble);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < rows.size(); ++i)
    p[i] = uniform01(key.seed, static_cast<uint64_t>(key.first_row + rows[i]), static_cast<uint64_t>(position));
  return u;
}

}  // namespace gspo::rollout
