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

namespace {
double from_hash(uint64_t row_hash, uint64_t position) {
  return static_cast<double>(mix_seed(row_hash, position) >> 11) * 0x1.0p-53;
}
}  // namespace

double uniform01(uint64_t seed, uint64_t row, uint64_t position) { return from_hash(mix_seed(seed, row), position); }

uint64_t row_hash(const NoiseKey& key, int64_t row) {
  return mix_seed(key.seed, static_cast<uint64_t>(key.first_row + row));
}

at::Tensor hash_uniforms(const std::vector<uint64_t>& hashes, const std::vector<int64_t>& positions) {
  auto u = torch::empty({static_cast<int64_t>(hashes.size())}, torch::kDouble);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < hashes.size(); ++i) p[i] = from_hash(hashes[i], static_cast<uint64_t>(positions[i]));
  return u;
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

// The uniform of row hash `h` (mix_seed(seed, row)) at the position term `pos` = position * 0xD1B54A32D192ED03
// (scalar or per row): mix_seed(h, position)'s top 53 bits.
template <class Pos>
at::Tensor from_hash_t(const at::Tensor& h, const Pos& pos) {
  auto m = finalise_t(finalise_t(h + bits(0x9E3779B97F4A7C15ULL)) ^ pos);
  return shr(m, 11).to(torch::kDouble) * 0x1.0p-53;
}

// mix_seed(mix_seed(seed, row), position).
template <class Pos>
at::Tensor uniforms_t(const NoiseKey& key, const at::Tensor& rows, const Pos& pos) {
  const uint64_t a = finalise(key.seed + 0x9E3779B97F4A7C15ULL);        // mix_seed(seed, row), seed part
  auto row = rows + key.first_row;
  return from_hash_t(finalise_t(row * bits(0xD1B54A32D192ED03ULL) ^ bits(a)), pos);  // h = mix_seed(seed, row)
}
}  // namespace

at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, int64_t position) {
  return uniforms_t(key, rows, bits(static_cast<uint64_t>(position) * 0xD1B54A32D192ED03ULL));
}

at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, const at::Tensor& positions) {
  return uniforms_t(key, rows, positions * bits(0xD1B54A32D192ED03ULL));
}

at::Tensor hash_uniforms(const at::Tensor& hashes, const at::Tensor& positions) {
  return from_hash_t(hashes, positions * bits(0xD1B54A32D192ED03ULL));
}

at::Tensor row_uniforms(const NoiseKey& key, const std::vector<int64_t>& rows, const std::vector<int64_t>& positions) {
  auto u = torch::empty({static_cast<int64_t>(rows.size())}, torch::kDouble);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < rows.size(); ++i)
    p[i] = uniform01(key.seed, static_cast<uint64_t>(key.first_row + rows[i]), static_cast<uint64_t>(positions[i]));
  return u;
}

}  // namespace gspo::rollout
