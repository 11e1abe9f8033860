// Gradient synchronisation for data-parallel training without sharded optimizer state: every parameter's .grad
// is summed over the ranks, bucket by bucket (the gradients of consecutive parameters flattened into one buffer of
// about `bucket_bytes`, one all-reduce per bucket). The trainer already weights each rank's loss by its share of
// the global mini-batch, so the sum is the gradient one process computes on the whole batch.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

namespace gspo::parallel {

class Comm;

// Which parameters have a gradient on at least one rank (collective: one small all-reduce). A parameter the loss
// never reaches has none anywhere and, as in one process, is left to the optimizer to skip.
std::vector<char> params_with_grad(Comm& comm, const std::vector<at::Tensor>& params);

// A parameter with a gradient on some rank but not this one (its share of the mini-batch was empty) gets a zero
// gradient here before the sum. Returns the number of buckets used.
int64_t all_reduce_gradients(Comm& comm, const std::vector<at::Tensor>& params, double bucket_bytes);

// Every rank's parameters become rank 0's (bucketed broadcasts).
void broadcast_parameters(Comm& comm, const std::vector<at::Tensor>& params, double bucket_bytes);

}  // namespace gspo::parallel
