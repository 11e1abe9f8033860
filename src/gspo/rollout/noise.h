// Counter-based sampling noise: the uniform that chooses row r's token at response position t is a pure function
// of (seed, r, t). Which other rows share the batch, how prompts are split into batches, and which rank samples
// them therefore do not change any response: N data-parallel ranks sample exactly what one process samples on the
// same global batch, and eval results do not depend on the eval batch size.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gspo::rollout {

struct NoiseKey {
  uint64_t seed = 0;      // per call: e.g. a hash of (rollout.seed, training step)
  int64_t first_row = 0;  // global index of this call's row 0 (rank r's shard starts at r * rows_per_rank)
};

// Mixes several integers into one 64-bit seed (SplitMix64 finaliser over a running hash).
uint64_t mix_seed(uint64_t a, uint64_t b);

// Uniform in [0, 1) with 53 random bits, a pure function of its arguments.
double uniform01(uint64_t seed, uint64_t row, uint64_t position);

// [rows.size()] float64 on the CPU: uniform01(key.seed, key.first_row + rows[i], position).
at::Tensor row_uniforms(const NoiseKey& key, const std::vector<int64_t>& rows, int64_t position);

// The same values computed with tensor ops where `rows` ([n] int64) lives, so a GPU sampler needs no host-to-device
// copy per token. Bit-identical to row_uniforms (tested).
at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, int64_t position);

// Rows at different response positions (continuous batching): element i is uniform01(key.seed, key.first_row +
// rows[i], positions[i]). The vector form returns CPU float64, the tensor form computes where `rows` lives.
at::Tensor row_uniforms(const NoiseKey& key, const std::vector<int64_t>& rows, const std::vector<int64_t>& positions);
at::Tensor row_uniforms(const NoiseKey& key, const at::Tensor& rows, const at::Tensor& positions);

// A row's noise hash: uniform01(seed, row, t) is a function of mix_seed(seed, row) and t alone. A row carried from one
// call to a later one (partial rollouts) keeps its hash, and so draws the uniforms it would have drawn uninterrupted.
uint64_t row_hash(const NoiseKey& key, int64_t row);  // mix_seed(key.seed, key.first_row + row)
// The uniforms of rows with these hashes at these positions: element i of a row with hash h at position t is
// uniform01's value for (h, t). CPU float64, or computed where the tensors ([n] int64, the hashes' bits) live.
at::Tensor hash_uniforms(const std::vector<uint64_t>& hashes, const std::vector<int64_t>& positions);
at::Tensor hash_uniforms(const at::Tensor& hashes, const at::Tensor& positions);

}  // namespace gspo::rollout
