#include "gspo/parallel/weight_sync.h"

#include <torch/torch.h>

namespace gspo::parallel {

std::vector<std::pair<size_t, size_t>> weight_buckets(const std::vector<at::Tensor>& params, c10::ScalarType dtype,
                                                      double bucket_bytes) {
  const double elem = static_cast<double>(c10::elementSize(dtype));
  std::vector<std::pair<size_t, size_t>> out;
  size_t first = 0;
  double bytes = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double b = static_cast<double>(params[i].numel()) * elem;
    if (i > first && bytes + b > bucket_bytes) {
      out.emplace_back(first, i);
      first = i;
      bytes = 0;
    }
    bytes += b;
  }
  if (first < params.size()) out.emplace_back(first, params.size());
  return out;
}

double WeightSender::send(const std::vector<at::Tensor>& params, const std::vector<int64_t>& peers,
                          c10::ScalarType dtype, double bucket_bytes) {
  wait();
  torch::NoGradGuard g;
  double bytes = 0;
  for (const auto& [first, last] : weight_buckets(params, dtype, bucket_bytes)) {
    std::vector<at::Tensor> flat;
    for (size_t i = first; i < last; ++i) flat.push_back(params[i].detach().reshape(-1));
    buckets_.push_back(torch::cat(flat).to(dtype));
    bytes += static_cast<double>(buckets_.back().nbytes());
  }
  for (int64_t peer : peers)
    for (const auto& b : buckets_) pending_.push_back(comm_.send_async(b, peer, tag_, "weight sync (send)"));
  return bytes;
}

void WeightSender::wait() {
  for (auto& p : pending_) p.wait();
  pending_.clear();
  buckets_.clear();
}

double receive_weights(Comm& comm, int64_t src, int tag, const std::vector<at::Tensor>& params, c10::ScalarType dtype,
                       double bucket_bytes, double timeout_s) {
  torch::NoGradGuard g;
  double bytes = 0;
  for (const auto& [first, last] : weight_buckets(params, dtype, bucket_bytes)) {
    int64_t n = 0;
    for (size_t i = first; i < last; ++i) n += params[i].numel();
    auto flat = torch::empty({n}, torch::TensorOptions().dtype(dtype).device(params[first].device()));
    comm.recv_async(flat, src, tag, "weight sync (receive)", timeout_s).wait();
    int64_t at = 0;
    for (size_t i = first; i < last; ++i) {
      const int64_t k = params[i].numel();
      params[i].copy_(flat.narrow(0, at, k).view(params[i].sizes()));
      at += k;
    }
    bytes += static_cast<double>(flat.nbytes());
  }
  return bytes;
}

}  // namespace gspo::parallel
