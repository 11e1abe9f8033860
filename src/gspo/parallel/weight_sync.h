// Weight sync of asynchronous training (distributed.rollout_ranks): one trainer sends the policy's weights to the
// rollout ranks, point to point over the job's process group, in buckets of the rollout's dtype.
//
// Both sides cut the same parameter list (same model file: same shapes, same order) into the same buckets: a bucket
// holds whole tensors up to `bucket_bytes` (one larger tensor alone), flattened and cast to `dtype`. The sender keeps
// its buckets (copies) until every peer took them, so training goes on while they travel: one rollout-dtype copy of
// the weights on the sending trainer's device until then (2 x N bytes in bf16; docs/async.md).
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "gspo/parallel/comm.h"

namespace gspo::parallel {

// Index ranges [first, last) of `params` that form each bucket.
std::vector<std::pair<size_t, size_t>> weight_buckets(const std::vector<at::Tensor>& params, c10::ScalarType dtype,
                                                      double bucket_bytes);

class WeightSender {
 public:
  WeightSender(Comm& comm, int tag) : comm_(comm), tag_(tag) {}
  // Waits for the previous send to complete, then starts sending `params` (cast to `dtype`) to each of `peers`.
  // Returns the bytes sent to one peer.
  double send(const std::vector<at::Tensor>& params, const std::vector<int64_t>& peers, c10::ScalarType dtype,
              double bucket_bytes);
  // Blocks until every peer has taken the last weights.
  void wait();

 private:
  Comm& comm_;
  int tag_;
  std::vector<at::Tensor> buckets_;      // kept alive until the sends complete
  std::vector<Comm::Pending> pending_;
};

// Receives the weights `WeightSender::send` sent from `src` into `params` (cast from `dtype` into their own dtype).
// Returns the bytes received.
double receive_weights(Comm& comm, int64_t src, int tag, const std::vector<at::Tensor>& params, c10::ScalarType dtype,
                       double bucket_bytes, double timeout_s);

}  // namespace gspo::parallel
