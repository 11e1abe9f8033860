// ZeRO-3's checkpoint state (zero3.h): this rank's moments with a header, their re-cut from another world size, and
// the float32 masters gathered for the consolidated policy.pt.
#include "gspo/parallel/zero3.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/zero3_unit.h"

namespace gspo::parallel {
namespace {

// The header's first entry: 1, float32 moments (exp_avg, exp_avg_sq a unit); 2, 8-bit ones (their codes and absmax:
// four tensors a unit, shard_moments.h).
int64_t shard_format(int64_t state_bits) { return state_bits == 8 ? 2 : 1; }
int64_t bits_of_format(int64_t format) { return format == 2 ? 8 : 32; }

}  // namespace

std::vector<at::Tensor> Zero3::shard_state() const {
  std::vector<int64_t> header{shard_format(h_.state_bits), comm_.world_size(), comm_.rank(), step_,
                              static_cast<int64_t>(units_.size())};
  for (const auto& u : units_) header.push_back(u.numel);
  std::vector<at::Tensor> out{torch::tensor(header, torch::kLong)};
  for (const auto& u : units_)
    for (const auto& t : u.moments->tensors()) out.push_back(t.to(torch::kCPU));
  return out;
}

void Zero3::load_shards(int64_t old_world, const std::function<std::vector<at::Tensor>(int64_t)>& read,
                        const std::string& from) {
  torch::NoGradGuard g;
  const auto U = static_cast<int64_t>(units_.size());
  auto mismatch = [&](const std::string& why) {
    return IoError("'" + from + "' does not hold ZeRO-3 optimizer state for this model: " + why);
  };
  const int64_t W = comm_.world_size(), align = shard_align(h_.state_bits);
  const auto T = static_cast<int64_t>(units_.empty() ? 2 : units_[0].moments->tensors().size());  // tensors a unit
  for (auto& u : units_) u.moments->zero();
  for (int64_t r = 0; r < old_world; ++r) {
    const auto state = read(r);
    const int64_t format = state.empty() || state[0].numel() != 5 + U ? 0 : state[0].data_ptr<int64_t>()[0];
    if (format != 0 && format != shard_format(h_.state_bits))
      io::wrong_state_bits("'" + from + "'", "ZeRO-3 ", bits_of_format(format));
    if (state.empty() || state[0].numel() != 5 + U || state.size() != static_cast<size_t>(1 + T * U))
      throw mismatch("rank " + std::to_string(r) + "'s file has " + std::to_string(state.size()) + " tensors for " +
                     std::to_string(U) + " units");
    auto h = state[0].accessor<int64_t, 1>();
    if (h[0] != shard_format(h_.state_bits) || h[1] != old_world || h[2] != r)
      throw mismatch("rank " + std::to_string(r) + "'s file says format " + std::to_string(h[0]) + ", rank " +
                     std::to_string(h[2]) + " of " + std::to_string(h[1]));
    step_ = h[3];
    for (int64_t k = 0; k < U; ++k) {
      auto& u = units_[k];
      if (h[5 + k] != u.numel)
        throw mismatch("unit " + std::to_string(k) + " has " + std::to_string(h[5 + k]) + " elements, the model " +
                       std::to_string(u.numel));
      // The old rank's elements [olo, ohi) of the unit that fall in this rank's [lo, hi).
      const auto [olo, ohi] = range_of(u.numel, old_world, r, align);
      const auto [lo, hi] = range_of(u.numel, W, comm_.rank(), align);
      const int64_t a = std::max(olo, lo), b = std::min(ohi, hi);
      if (a >= b) continue;  // (8 bits: a is on a block boundary of both layouts, so the codes copy as they are)
      const std::vector<at::Tensor> held(state.begin() + 1 + T * k, state.begin() + 1 + T * (k + 1));
      u.moments->copy_from(held, a - olo, a - lo, b - a);
    }
  }
  // Which parameters take part starts afresh, as in one process after a resume (torch's AdamW skips a parameter
  // until its .grad exists again).
}

std::vector<at::Tensor> Zero3::gather_float32() {
  torch::NoGradGuard g;
  std::vector<at::Tensor> out;
  for (const auto& u : units_) {
    auto full = torch::empty({u.shard * comm_.world_size()}, u.grad.options());
    comm_.all_gather_into(u.master.to(device_), full);  // (offloaded masters: copied to the device first)
    int64_t off = 0;
    for (const auto& shape : u.shapes) {
      const int64_t n = c10::multiply_integers(shape);
      out.push_back(comm_.is_main() ? full.narrow(0, off, n).view(shape).to(torch::Device(torch::kCPU), torch::kFloat, false, true) : at::Tensor());
      off += n;
    }
  }
  return out;
}

}  // namespace gspo::parallel
