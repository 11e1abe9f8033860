// A share of a scored batch as bytes: what a rollout rank sends a trainer (asynchronous training, docs/async.md).
// The rows of whole groups with their scores and sampling versions, and the rollout rank's figures for the batch.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "gspo/train/sources/rollout_source.h"

namespace gspo::train {

struct Share {
  int64_t batch = 0;            // the rollout step that trains on it
  Scored scored;                // whole groups, in global row order
  std::vector<double> metrics;  // the sender's scalar_values (metrics.h) for the batch; empty: another share has them
};

// A uint8 tensor holding `s` (a torch archive); unpack_share reads it back, throwing DistributedError for bytes that
// are not one.
at::Tensor pack_share(const Share& s);
Share unpack_share(const at::Tensor& bytes);

// Groups [first, first + count) of `s` as a Scored of their own, padding cut to them: prompt columns to the longest
// of their prompts, response columns to the longest of their responses (the layout a rank sampling only them has).
Scored slice_groups(const Scored& s, int64_t first, int64_t count, int64_t pad_id);
// Pieces in order as one Scored (one piece: itself).
Scored join_groups(std::vector<Scored> pieces, int64_t pad_id);

}  // namespace gspo::train
