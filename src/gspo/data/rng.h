// A small portable PRNG (SplitMix64) for data order and synthetic tasks: same seed, same sequence on every
// platform and standard library (std::shuffle and std::uniform_int_distribution are implementation-defined).
#pragma once
#include <cstdint>
#include <vector>

namespace gspo::data {

class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0, without modulo bias.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next(); while (x >= limit);
    return x % n;
  }

 private:
  uint64_t state_;
};

// Fisher-Yates permutation of [0, n).
inline std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  SplitMix rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[rng.below(i + 1)]);
  return p;
}

}  // namespace gspo::data
