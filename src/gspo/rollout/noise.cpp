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

namespace {
// uint64 arithmetic on int64 tensors: multiplication wraps modulo 2^64 in two's complement, and a logical right
// shift is an arithmetic one with the sign-extended bits masked off.
at::Tensor shr(const at::Tensor& x, int k) {
  return x.__rshift__(k).bitwise_and(static_cast<int64_t>((~0ULL) >> k));
}
int64_t bits(uint64_t v) { return static_cast<int64_t>(v); }
at::Tensor finalise_t(at::Tensor z) {
  z = (z ^ shr(z, 30)) * bits(0xBF58476D1CE4E5B9ULL);
  z = (z ^ shr(z, 27)) * bits(0x94D049BB133111EBULL);
  return z ^ shr(z, 31);
}

// mix_seed(mix_seed(seed, row), position) with the position term `pos` = position * 0xD1B54A32D192ED03 (scalar or
// per row).
template <class Pos>
at::Tensor uniforms_t(const NoiseKey& key, const at::Tensor& rows, const Pos& pos) {
  const uint64_t a = finalise(key.seed + 0x9E3779B97F4A7C15ULL);        // mix_seed(seed, row), seed part
  auto row = rows + key.first_row;
  auto h = finalise_t(row * bits(0xD1B54A32D192ED03ULL) ^ bits(a));     // = mix_seed(seed, row)
  h = finalise_t(finalise_t(h + bits(0x9E3779B97F4A7C15ULL)) ^ pos);   // = mix_seed(h, position)
  return shr(h, 11).to(torch::kDouble) * 0x1.0p-53;
}
}  // namespace

at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, int64_t position) {
  return uniforms_t(key, rows, bits(static_cast<uint64_t>(position) * 0xD1B54A32D192ED03ULL));
}

at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, const at::Tensor& positions) {
  return uniforms_t(key, rows, positions * bits(0xD1B54A32D192ED03ULL));
}

at::Tensor row_uniforms(const NoiseKey& key, const std::vector<int64_t>& rows, const std::vector<int64_t>& positions) {
  auto u = torch::empty({static_cast<int64_t>(rows.size())}, torch::kDouble);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < rows.size(); ++i)
    p[i] = uniform01(key.seed, static_cast<uint64_t>(key.first_row + rows[i]), static_cast<uint64_t>(positions[i]));
  return u;
}

}  // namespace gspo::rollout
