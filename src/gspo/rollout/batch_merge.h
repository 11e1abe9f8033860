// Building one RolloutBatch from whole groups of several (DAPO's dynamic sampling keeps the groups with a learning
// signal from extra generation rounds). The result has the usual layout (sampler.h): prompts left-padded to the
// longest prompt among the chosen groups, responses right-padded to the longest response.
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/rollout/sampler.h"

namespace gspo::rollout {

struct GroupRef {
  int64_t batch = 0;  // index into the batches
  int64_t group = 0;  // group index within that batch (rows group * G .. group * G + G - 1)
};

// Every batch must have the same group size. `pad_id` fills padded token columns (the model's pad token).
RolloutBatch merge_groups(const std::vector<const RolloutBatch*>& batches, const std::vector<GroupRef>& groups,
                          int64_t pad_id);

}  // namespace gspo::rollout
