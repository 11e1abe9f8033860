// ZeRO-3's shard layout and parameter gate (zero3.h): units cut into shards at construction, decoder layers gathered
// and freed as they run, the whole model held for the passes that need it.
#include "gspo/parallel/zero3.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/zero3_unit.h"

namespace gspo::parallel {

Zero3::Zero3(model::Policy& policy, c10::ScalarType dtype, AdamWHyper hyper, bool keep_whole, bool overlap,
             c10::Device device, Comm& comm, bool frozen)
    : policy_(policy), dtype_(dtype), device_(device), h_(hyper), comm_(comm), keep_whole_(keep_whole), overlap_(overlap),
      frozen_(frozen) {
  if (!policy.has_layers())
    throw ConfigError("distributed.zero_stage 3 shards by decoder layer and needs a model with the per-layer methods "
                      "(docs/model-contract.md); '" + policy.path() + "' has none: use zero_stage 0 or 1");
  torch::NoGradGuard g;
  const int64_t W = comm_.world_size();
  // Unit by unit: this rank's shard copied out of the whole parameters, which are then freed (a decoder layer) or
  // cast and moved (unit 0), so the whole model and the shards never coexist beyond one unit.
  for (auto& ps : policy.parameter_units()) {
    Unit u;
    for (auto& p : ps) {
      if (!frozen_ && p.scalar_type() != torch::kFloat)
        throw ConfigError("distributed.zero_stage 3 takes a float32 policy to shard (model.dtype casts it); this "
                          "model has a " + std::string(c10::toString(p.scalar_type())) + " parameter");
      if (!frozen_) p.set_requires_grad(true);
      u.shapes.push_back(p.sizes().vec());
      u.numels.push_back(p.numel());
      u.numel += p.numel();
    }
    u.params = ps;
    u.shard = shard_of(u.numel, W, shard_align(h_.state_bits));
    // padding stays 0; frozen: the base's own values in the training dtype (no master to update); offload: host
    const auto here = torch::TensorOptions(device).dtype(frozen_ ? dtype_ : torch::kFloat);
    u.master = torch::zeros({u.shard}, !frozen_ && h_.offload ? host_options(torch::kFloat) : here);
    const auto [lo, hi] = range_of(u.numel, W, comm_.rank(), shard_align(h_.state_bits));
    int64_t off = 0;
    for (auto& p : ps) {  // the part of each parameter in [lo, hi)
      const int64_t n = p.numel(), a = std::max(off, lo), b = std::min(off + n, hi);
      if (a < b) u.master.narrow(0, a - lo, b - a).copy_(p.detach().reshape(-1).narrow(0, a - off, b - a));
      off += n;
    }
    // float32 [shard]; frozen: none
    u.grad = torch::zeros({frozen_ ? 0 : u.shard}, here.dtype(torch::kFloat));
    if (!frozen_) u.moments = make_shard_moments(h_.state_bits, u.shard, here, h_.offload, 0, hi - lo);
    u.used.assign(ps.size(), 0);
    u.local.assign(ps.size(), 0);
    u.active = torch::zeros({frozen_ ? 0 : u.shard}, here.dtype(torch::kBool));
    numel_ += u.numel;
    units_.push_back(std::move(u));
    auto& done = units_.back();
    if (units_.size() == 1) {  // unit 0 stays whole, in the training dtype
      for (auto& p : done.params) p.set_data(p.detach().to(device, dtype_));
      done.holds = 1;
      if (frozen_) done.master = torch::empty({0}, done.master.options());  // never stepped, so never gathered again
    } else {
      empty(done);
    }
  }
  core::release_free_host_memory();  // the whole model as loaded (host memory: freed, often not yet returned)
  policy_.move_to(device);  // buffers (rotary tables); every parameter is there already
  policy_.add_gate(this);
  if (keep_whole_) hold_whole(true);
}

Zero3::~Zero3() { policy_.remove_gate(this); }

std::vector<at::Tensor> Zero3::parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& u : units_) out.insert(out.end(), u.params.begin(), u.params.end());
  return out;
}

void Zero3::gather(Unit& u) { start_gather(u).wait(); }

// The parameters view the flat buffer at once; its values are there once the returned collective is waited for.
Comm::Pending Zero3::start_gather(Unit& u) {
  torch::NoGradGuard g;
  auto shard = u.master.to(device_, dtype_);  // (offloaded masters: the copy to the device)
  u.full = torch::empty({u.shard * comm_.world_size()}, shard.options());
  auto pending = comm_.all_gather_into_async(shard, u.full);
  int64_t off = 0;
  for (size_t i = 0; i < u.params.size(); ++i) {
    const auto& shape = u.shapes[i];
    const int64_t n = c10::multiply_integers(shape);
    u.params[i].set_data(u.full.narrow(0, off, n).view(shape));
    off += n;
  }
  return pending;
}

void Zero3::empty(Unit& u) {
  torch::NoGradGuard g;
  for (auto& p : u.params) p.set_data(torch::empty({0}, torch::TensorOptions(device_).dtype(dtype_)));
  u.full = at::Tensor();
}

Zero3::Unit& Zero3::layer_unit(int64_t layer) {
  if (layer < 0 || layer + 1 >= static_cast<int64_t>(units_.size()))
    throw Error("ZeRO-3: no decoder layer " + std::to_string(layer));
  return units_[layer + 1];
}

void Zero3::acquire(int64_t layer) {
  auto& u = layer_unit(layer);
  if (u.holds++ > 0) return;
  ++stats_.gathers;
  if (ahead_ == layer) {  // prefetched (the wait is a no-op once arrived) or kept since its release
    ahead_ = -1;
    ahead_fetch_.wait();
    ++stats_.prefetched;
    return;
  }
  drop_ahead();  // a wrong guess: freed before this layer's gather adds another
  gather(u);
}

void Zero3::release(int64_t layer) {
  auto& u = layer_unit(layer);
  if (u.holds > 0 && --u.holds == 0 && ahead_ != layer) empty(u);
}

void Zero3::prefetch(int64_t layer) {
  if (!overlap_ || whole_holds_ > 0 || ahead_ == layer || layer < 0 ||
      layer + 1 >= static_cast<int64_t>(units_.size()))
    return;
  drop_ahead();
  ahead_ = layer;
  auto& u = layer_unit(layer);
  if (u.holds == 0) ahead_fetch_ = start_gather(u);  // else held now: kept at its release
}

void Zero3::drop_ahead() {
  if (ahead_ < 0) return;
  auto& u = layer_unit(ahead_);
  ahead_ = -1;
  ahead_fetch_.wait();  // every rank started it: it completes before the buffer goes
  if (u.holds == 0) empty(u);
}

void Zero3::hold_whole(bool on) {
  if (on) {
    core::release_free_host_memory();  // what the update freed, before the whole copy is gathered (CPU runs)
    ++whole_holds_;
    for (size_t i = 1; i < units_.size(); ++i) acquire(static_cast<int64_t>(i) - 1);
  } else if (whole_holds_ > 0) {
    --whole_holds_;
    for (size_t i = 1; i < units_.size(); ++i) release(static_cast<int64_t>(i) - 1);
    core::release_free_host_memory();  // the gathered copy's pages (CPU runs)
  }
}

int64_t Zero3::shard_bytes() const {
  int64_t n = 0;
  for (const auto& u : units_) n += static_cast<int64_t>(u.master.nbytes());
  return n;
}

int64_t Zero3::model_state_bytes() const {
  int64_t n = state_bytes();
  for (const auto& u : units_) {
    n += static_cast<int64_t>(u.master.nbytes() + u.grad.nbytes());
    for (const auto& p : u.params) {
      n += static_cast<int64_t>(p.nbytes());
      if (p.grad().defined()) n += static_cast<int64_t>(p.grad().nbytes());
    }
  }
  return n;
}

}  // namespace gspo::parallel
