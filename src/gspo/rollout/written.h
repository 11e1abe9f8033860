// What a sampling loop has written, per batch row: kept on the model's device while decoding (no host round trip
// per token) and brought to the host once at the end. Private to src/gspo/rollout.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "gspo/rollout/sampler_types.h"

namespace gspo::rollout {

// Unpadded responses of a call's rows, on the host.
struct SampledRows {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> logprobs;
  std::vector<std::vector<uint8_t>> own;  // per token: 1 sampled by the model, 0 written into the response for it
  std::vector<Finish> finish;
  explicit SampledRows(int64_t n = 0) : ids(n), logprobs(n), own(n), finish(n, Finish::kLength) {}
};

struct Written {
  at::Tensor tokens;    // [rows, R] int64, pad after the response
  at::Tensor logprobs;  // [rows, R] float32 (0 on inserted tokens)
  at::Tensor inserted;  // [rows, R] bool: written by a slot hook (slot_hook.h), not sampled
  at::Tensor length;    // [rows] int64
  at::Tensor finish;    // [rows] int64: Finish values (kLength until a row ends otherwise)

  // R: response positions (max_new_tokens + insert_capacity).
  Written(int64_t rows, int64_t R, int64_t pad, c10::Device dev);
  // Copies rows [0, n) to the host into out rows [first, first + n).
  void collect(int64_t n, SampledRows& out, int64_t first) const;
};

}  // namespace gspo::rollout
