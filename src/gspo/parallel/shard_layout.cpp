#include "gspo/parallel/shard_layout.h"

#include <torch/torch.h>

#include <algorithm>

namespace gspo::parallel {

int64_t shard_of(int64_t numel, int64_t world, int64_t align) {
  const int64_t blocks = (numel + world * align - 1) / (world * align);
  return blocks * align;
}

std::pair<int64_t, int64_t> range_of(int64_t numel, int64_t world, int64_t r, int64_t align) {
  const int64_t s = shard_of(numel, world, align);
  return {std::min(numel, r * s), std::min(numel, (r + 1) * s)};
}

at::Tensor active_mask(const std::vector<char>& used, const std::vector<int64_t>& numels, int64_t world, int64_t rank,
                       c10::Device device, int64_t align) {
  int64_t numel = 0;
  for (int64_t n : numels) numel += n;
  const int64_t shard = shard_of(numel, world, align);
  auto all = torch::zeros({shard * world}, torch::kBool);
  int64_t off = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    if (used[i]) all.narrow(0, off, numels[i]).fill_(true);
    off += numels[i];
  }
  return all.narrow(0, rank * shard, shard).to(device);
}

}  // namespace gspo::parallel
