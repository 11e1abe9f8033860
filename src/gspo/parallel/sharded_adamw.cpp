#include "gspo/parallel/sharded_adamw.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gspo/core/error.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/grad_sync.h"
#include "gspo/parallel/shard_layout.h"
#include "gspo/parallel/shard_moments.h"

namespace gspo::parallel {

ShardedAdamW::ShardedAdamW(std::vector<at::Tensor> params, AdamWHyper hyper, Comm& comm, int64_t chunk)
    : params_(std::move(params)), h_(hyper), comm_(comm) {
  offsets_.push_back(0);
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat)
      throw ConfigError("distributed.zero_stage 1 keeps float32 parameters; this model has a " +
                        std::string(c10::toString(p.scalar_type())) + " parameter");
    if (!p.is_contiguous()) throw std::invalid_argument("ShardedAdamW: a parameter is not contiguous");
    numel_ += p.numel();
    offsets_.push_back(numel_);
  }
  shard_ = shard_of(numel_, comm_.world_size(), shard_align(h_.state_bits));
  chunk_ = std::max<int64_t>(1, std::min(shard_, chunk > 0 ? chunk : default_chunk(comm_.world_size())));
  auto opts = params_.empty() ? torch::TensorOptions(torch::kFloat) : params_[0].options();
  grad_shard_ = torch::zeros({shard_}, opts);
  const auto [lo, hi] = range_of(numel_, comm_.world_size(), comm_.rank(), shard_align(h_.state_bits));
  moments_ = make_shard_moments(h_.state_bits, shard_, opts, h_.offload, 0, hi - lo);  // [hi - lo, shard_): padding
}

ShardedAdamW::~ShardedAdamW() = default;

int64_t ShardedAdamW::state_bytes() const { return moments_->bytes(); }
int64_t ShardedAdamW::grad_shard_bytes() const { return static_cast<int64_t>(grad_shard_.nbytes()); }

int64_t ShardedAdamW::default_chunk(int64_t world) { return std::max<int64_t>(int64_t{1} << 16, kChunkElements / world); }

// Elements [a, b) of the parameters flattened in order, `of(param)` giving each one's tensor (undefined: zeros), into
// `out`; the padding past the last parameter reads as zeros.
template <class F>
void ShardedAdamW::read_flat(int64_t a, int64_t b, F&& of, at::Tensor out) const {
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), a) - 1;
  for (int64_t at = a; at < b;) {
    if (at >= numel_) {
      out.narrow(0, at - a, b - at).zero_();
      return;
    }
    const auto i = static_cast<size_t>(it - offsets_.begin());
    const int64_t end = std::min(b, offsets_[i + 1]);
    const auto t = of(params_[i]);  // undefined: zeros (a parameter without a gradient)
    if (t.defined()) out.narrow(0, at - a, end - at).copy_(t.reshape({-1}).narrow(0, at - offsets_[i], end - at));
    else out.narrow(0, at - a, end - at).zero_();
    at = end;
    ++it;
  }
}

// `src` into the parameters' flat elements [a, a + src.numel()), clipped to the parameters (padding dropped).
void ShardedAdamW::write_flat(int64_t a, const at::Tensor& src) {
  const int64_t b = std::min(numel_, a + src.numel());
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), a) - 1;
  for (int64_t at = a; at < b; ++it) {
    const auto i = static_cast<size_t>(it - offsets_.begin());
    const int64_t end = std::min(b, offsets_[i + 1]);
    params_[i].detach().view({-1}).narrow(0, at - offsets_[i], end - at).copy_(src.narrow(0, at - a, end - at));
    at = end;
  }
}

double ShardedAdamW::reduce_gradients() {
  torch::NoGradGuard g;
  const auto used = params_with_grad(comm_, params_);
  if (used != used_) {  // which parameters take part changes rarely (typically once, at the first step)
    used_ = used;
    std::vector<int64_t> numels;
    for (const auto& p : params_) numels.push_back(p.numel());
    active_ = active_mask(used, numels, comm_.world_size(), comm_.rank(), grad_shard_.device(),
                          shard_align(h_.state_bits));
  }
  // chunk by chunk: rank q's piece of a chunk is its shard's elements [c0, c0 + c), so no whole flat copy exists
  const int64_t W = comm_.world_size();
  auto grad_or_zero = [](const at::Tensor& p) { return p.grad(); };
  for (int64_t c0 = 0; c0 < shard_; c0 += chunk_) {
    const int64_t c = std::min(chunk_, shard_ - c0);
    auto full = torch::empty({W * c}, grad_shard_.options());
    for (int64_t q = 0; q < W; ++q)
      read_flat(q * shard_ + c0, q * shard_ + c0 + c, grad_or_zero, full.narrow(0, q * c, c));
    auto mine = grad_shard_.narrow(0, c0, c);
    comm_.reduce_scatter(full, mine);
  }
  auto sq = grad_shard_.to(torch::kDouble).pow(2).sum().reshape({1});
  comm_.all_reduce(sq);
  return std::sqrt(sq.item<double>());
}

void ShardedAdamW::step(double lr, double grad_scale) {
  torch::NoGradGuard g;
  ++step_;
  const int64_t W = comm_.world_size();
  auto p = torch::empty({shard_}, grad_shard_.options());
  read_flat(comm_.rank() * shard_, (comm_.rank() + 1) * shard_, [](const at::Tensor& t) { return t.detach(); }, p);
  moments_->step(p, grad_scale == 1.0 ? grad_shard_ : grad_shard_ * grad_scale, active_, lr, step_, h_);
  for (int64_t c0 = 0; c0 < shard_; c0 += chunk_) {
    const int64_t c = std::min(chunk_, shard_ - c0);
    auto full = torch::empty({W * c}, p.options());
    comm_.all_gather_into(p.narrow(0, c0, c), full);
    for (int64_t q = 0; q < W; ++q) write_flat(q * shard_ + c0, full.narrow(0, q * c, c));
  }
}

std::vector<at::Tensor> ShardedAdamW::gather_state() {
  constexpr int kTag = 41;
  const int64_t W = comm_.world_size();
  const auto held = moments_->tensors();
  const auto dev = grad_shard_.device();  // the collectives' device (offloaded moments are copied there to be sent)
  if (comm_.rank() != 0) {  // point to point to rank 0 alone: no rank but the writer holds the whole moments
    for (const auto& t : held) comm_.send(t.to(dev).contiguous(), 0, kTag, "ZeRO-1 moments for a checkpoint");
    return {};
  }
  // Shards are whole blocks: rank q's piece of every tensor (an absmax too) is q x its length on.
  std::vector<at::Tensor> full;
  for (const auto& t : held) {
    full.push_back(torch::empty({t.numel() * W}, t.options().device(torch::kCPU)));
    full.back().narrow(0, 0, t.numel()).copy_(t);
  }
  for (int64_t q = 1; q < W; ++q)
    for (size_t k = 0; k < held.size(); ++k) {
      auto piece = torch::empty(held[k].sizes(), torch::TensorOptions(dev).dtype(held[k].scalar_type()));
      comm_.recv(piece, q, kTag, "ZeRO-1 moments for a checkpoint");
      full[k].narrow(0, q * piece.numel(), piece.numel()).copy_(piece);
    }
  std::vector<at::Tensor> out{torch::tensor({step_}, torch::kLong)};
  for (size_t k = 0; k < full.size(); ++k) {
    const int64_t r = moments_->per(k);
    out.push_back(full[k].narrow(0, 0, (numel_ + r - 1) / r));
  }
  return out;
}

void ShardedAdamW::load_state(const std::vector<at::Tensor>& full, const std::string& from) {
  const std::vector<at::Tensor> held(full.begin() + (full.empty() ? 0 : 1), full.end());
  if (full.size() != 1 + moments_->tensors().size()) {
    if (full.size() == 3 || full.size() == 5)  // the other state_bits' moments
      io::wrong_state_bits("'" + from + "'", "ZeRO-1 ", full.size() == 5 ? 8 : 32);
  }
  if (full.size() != 1 + moments_->tensors().size() || !moments_->fits(held, numel_))
    throw IoError("'" + from + "' does not hold ZeRO-1 optimizer state for this model (" + std::to_string(numel_) +
                  " parameters)");
  io::require_finite(full[0], from, "the step count");
  step_ = full[0].item<int64_t>();
  io::require_step_count(step_, from, "the step count");
  for (size_t k = 0; k < held.size(); ++k) io::require_finite(held[k], from, io::moment_name(k, held.size()));
  const auto [lo, hi] = range_of(numel_, comm_.world_size(), comm_.rank(), shard_align(h_.state_bits));
  moments_->zero();
  moments_->copy_from(held, lo, 0, hi - lo);
}

}  // namespace gspo::parallel
