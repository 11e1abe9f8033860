// The flat layout of the sharded optimizers (ZeRO-1's one vector of every parameter, each ZeRO-3 unit): parameters
// flattened in order, zero-padded to a multiple of W x `align` (W the world size) and cut into W equal contiguous
// shards, rank r keeping shard r. `align` is 1, or 256 with 8-bit moments (shard_moments.h shard_align): every shard a
// whole number of quantisation blocks, so no block straddles two ranks. Used by sharded_adamw.cpp and zero3*.cpp.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace gspo::parallel {

// Elements of one shard: numel / world, rounded up to a multiple of `align`.
int64_t shard_of(int64_t numel, int64_t world, int64_t align = 1);

// [lo, hi) of the flat elements rank `r` of `world` holds, clipped to numel (the padding holds none).
std::pair<int64_t, int64_t> range_of(int64_t numel, int64_t world, int64_t r, int64_t align = 1);

// bool [shard_of(sum of numels, world, align)] on `device`: true at the elements of rank `rank`'s shard that belong to a
// parameter `used` marks (numels[i]: parameter i's elements), false elsewhere and in the padding. AdamW steps only
// those (adamw_shard_step's `active`), as torch's AdamW skips a parameter without a gradient.
at::Tensor active_mask(const std::vector<char>& used, const std::vector<int64_t>& numels, int64_t world, int64_t rank,
                       c10::Device device, int64_t align = 1);

}  // namespace gspo::parallel
