#include "gspo/parallel/zero3.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/shard_layout.h"

namespace gspo::parallel {

struct Zero3::Unit {
  std::vector<at::Tensor> params;            // the policy's parameters (their data swapped in and out)
  std::vector<std::vector<int64_t>> shapes;  // their whole shapes
  std::vector<int64_t> numels;               // their element counts
  int64_t numel = 0, shard = 0;
  at::Tensor master, exp_avg, exp_avg_sq, grad;  // float32 [shard]
  at::Tensor full;                              // the gathered flat buffer (training dtype) while held
  int64_t holds = 0;                            // acquire()s not yet released, plus the whole-model holds
  std::vector<char> used;                       // per parameter: had a gradient on some rank (kept)
  std::vector<char> local;                      // per parameter: had one on this rank since the last reduce
  at::Tensor active;                            // bool [shard]: elements of used parameters (active_mask)
};

namespace {

constexpr int64_t kShardFormat = 1;

}  // namespace

Zero3::Zero3(model::Policy& policy, c10::ScalarType dtype, AdamWHyper hyper, bool keep_whole, bool overlap,
             c10::Device device, Comm& comm)
    : policy_(policy), dtype_(dtype), h_(hyper), comm_(comm), keep_whole_(keep_whole), overlap_(overlap) {
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
      if (p.scalar_type() != torch::kFloat)
        throw ConfigError("distributed.zero_stage 3 takes a float32 policy to shard (model.dtype casts it); this "
                          "model has a " + std::string(c10::toString(p.scalar_type())) + " parameter");
      p.set_requires_grad(true);
      u.shapes.push_back(p.sizes().vec());
      u.numels.push_back(p.numel());
      u.numel += p.numel();
    }
    u.params = ps;
    u.shard = shard_of(u.numel, W);
    u.master = torch::zeros({u.shard}, torch::TensorOptions(device).dtype(torch::kFloat));  // padding stays 0
    const auto [lo, hi] = range_of(u.numel, W, comm_.rank());
    int64_t off = 0;
    for (auto& p : ps) {  // the part of each parameter in [lo, hi)
      const int64_t n = p.numel(), a = std::max(off, lo), b = std::min(off + n, hi);
      if (a < b) u.master.narrow(0, a - lo, b - a).copy_(p.detach().reshape(-1).narrow(0, a - off, b - a));
      off += n;
    }
    u.exp_avg = torch::zeros_like(u.master);
    u.exp_avg_sq = torch::zeros_like(u.master);
    u.grad = torch::zeros_like(u.master);
    u.used.assign(ps.size(), 0);
    u.local.assign(ps.size(), 0);
    u.active = torch::zeros({u.shard}, u.master.options().dtype(torch::kBool));
    numel_ += u.numel;
    units_.push_back(std::move(u));
    auto& done = units_.back();
    if (units_.size() == 1) {  // unit 0 stays whole, in the training dtype
      for (auto& p : done.params) p.set_data(p.detach().to(device, dtype_));
      done.holds = 1;
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
  auto shard = u.master.to(dtype_);
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
  for (auto& p : u.params) p.set_data(torch::empty({0}, u.master.options().dtype(dtype_)));
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

// The unit's .grad (float32, zeros for parameters without one) reduce-scattered into its gradient shard; with
// overlap, completed by the next settle_grads() (the next unit's reduce, or anything that reads the shards).
void Zero3::reduce_unit(Unit& u) {
  torch::NoGradGuard g;
  settle_grads();
  const int64_t W = comm_.world_size();
  auto flat = torch::zeros({u.shard * W}, u.master.options());
  int64_t off = 0;
  for (size_t i = 0; i < u.params.size(); ++i) {
    auto& p = u.params[i];
    const int64_t n = c10::multiply_integers(u.shapes[i]);
    if (p.grad().defined()) {
      if (!idle_) {
        flat.narrow(0, off, n).copy_(p.grad().reshape(-1));
        u.local[i] = 1;
      }
      p.mutable_grad() = at::Tensor();
    }
    off += n;
  }
  auto mine = torch::empty({u.shard}, u.master.options());
  rs_ = {comm_.reduce_scatter_async(std::move(flat), mine), &u, mine};
  if (!overlap_) settle_grads();
}

void Zero3::settle_grads() {
  if (!rs_.unit) return;
  Unit* u = rs_.unit;
  rs_.unit = nullptr;
  rs_.pending.wait();
  u->grad.add_(rs_.shard);
  rs_.shard = at::Tensor();
}

void Zero3::backward_done(int64_t layer) { reduce_unit(layer_unit(layer)); }

void Zero3::reduce_ends() { reduce_unit(units_[0]); }

void Zero3::zero_grad() {
  settle_grads();
  for (auto& u : units_) {
    u.grad.zero_();
    for (auto& p : u.params)
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

double Zero3::reduce_gradients() {
  torch::NoGradGuard g;
  settle_grads();
  // One small all-reduce: which parameters had a gradient on any rank since the last reduce.
  std::vector<double> flags;
  for (const auto& u : units_) flags.insert(flags.end(), u.local.begin(), u.local.end());
  auto t = torch::tensor(flags, torch::kDouble);
  comm_.all_reduce(t, ReduceOp::kMax);
  auto f = t.accessor<double, 1>();
  int64_t k = 0;
  std::vector<at::Tensor> sq;  // each unit's sum of squares, where its gradient lives: read once, summed below
  for (auto& u : units_) {
    bool changed = false;
    for (size_t i = 0; i < u.params.size(); ++i, ++k) {
      u.local[i] = 0;
      if (f[k] > 0 && !u.used[i]) u.used[i] = changed = true;
    }
    if (changed) u.active = active_mask(u.used, u.numels, comm_.world_size(), comm_.rank(), u.master.device());
    sq.push_back(u.grad.to(torch::kDouble).pow(2).sum());
  }
  // One copy for every unit (a read per unit would stall a GPU once per decoder layer), summed on the host in unit
  // order as before, then the all-reduce.
  const auto each = torch::stack(sq).to(torch::kCPU);
  double local = 0;
  for (int64_t i = 0; i < each.numel(); ++i) local += each.data_ptr<double>()[i];
  auto total = torch::tensor({local}, torch::kDouble);
  comm_.all_reduce(total);
  return std::sqrt(total.item<double>());
}

void Zero3::step(double lr, double grad_scale) {
  torch::NoGradGuard g;
  settle_grads();
  drop_ahead();  // gathered from the masters this step changes
  ++step_;
  for (auto& u : units_) {
    adamw_shard_step(u.master, u.exp_avg, u.exp_avg_sq, grad_scale == 1.0 ? u.grad : u.grad * grad_scale, u.active,
                     lr, step_, h_);
    if (u.holds > 0) gather(u);  // unit 0, and the layers kept whole
  }
}

int64_t Zero3::state_bytes() const {
  int64_t n = 0;
  for (const auto& u : units_) n += static_cast<int64_t>(u.exp_avg.nbytes() + u.exp_avg_sq.nbytes());
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

std::vector<at::Tensor> Zero3::shard_state() const {
  std::vector<int64_t> header{kShardFormat, comm_.world_size(), comm_.rank(), step_,
                              static_cast<int64_t>(units_.size())};
  for (const auto& u : units_) header.push_back(u.numel);
  std::vector<at::Tensor> out{torch::tensor(header, torch::kLong)};
  for (const auto& u : units_) {
    out.push_back(u.exp_avg.to(torch::kCPU));
    out.push_back(u.exp_avg_sq.to(torch::kCPU));
  }
  return out;
}

void Zero3::load_shards(int64_t old_world, const std::function<std::vector<at::Tensor>(int64_t)>& read,
                        const std::string& from) {
  torch::NoGradGuard g;
  const auto U = static_cast<int64_t>(units_.size());
  auto mismatch = [&](const std::string& why) {
    return IoError("'" + from + "' does not hold ZeRO-3 optimizer state for this model: " + why);
  };
  const int64_t W = comm_.world_size();
  for (auto& u : units_) {
    u.exp_avg.zero_();
    u.exp_avg_sq.zero_();
  }
  for (int64_t r = 0; r < old_world; ++r) {
    const auto state = read(r);
    if (state.empty() || state[0].numel() != 5 + U || state.size() != static_cast<size_t>(1 + 2 * U))
      throw mismatch("rank " + std::to_string(r) + "'s file has " + std::to_string(state.size()) + " tensors for " +
                     std::to_string(U) + " units");
    auto h = state[0].accessor<int64_t, 1>();
    if (h[0] != kShardFormat || h[1] != old_world || h[2] != r)
      throw mismatch("rank " + std::to_string(r) + "'s file says format " + std::to_string(h[0]) + ", rank " +
                     std::to_string(h[2]) + " of " + std::to_string(h[1]));
    step_ = h[3];
    for (int64_t k = 0; k < U; ++k) {
      auto& u = units_[k];
      if (h[5 + k] != u.numel)
        throw mismatch("unit " + std::to_string(k) + " has " + std::to_string(h[5 + k]) + " elements, the model " +
                       std::to_string(u.numel));
      // The old rank's elements [olo, ohi) of the unit that fall in this rank's [lo, hi).
      const auto [olo, ohi] = range_of(u.numel, old_world, r);
      const auto [lo, hi] = range_of(u.numel, W, comm_.rank());
      const int64_t a = std::max(olo, lo), b = std::min(ohi, hi);
      if (a >= b) continue;
      u.exp_avg.narrow(0, a - lo, b - a).copy_(state[1 + 2 * k].narrow(0, a - olo, b - a));
      u.exp_avg_sq.narrow(0, a - lo, b - a).copy_(state[2 + 2 * k].narrow(0, a - olo, b - a));
    }
  }
  // Which parameters take part starts afresh, as in one process after a resume (torch's AdamW skips a parameter
  // until its .grad exists again).
}

bool Zero3::finite() {
  std::vector<at::Tensor> each;  // one flag per unit, read in one copy
  for (const auto& u : units_) each.push_back(torch::isfinite(u.master).all());
  const bool ok = torch::stack(each).all().item<bool>();
  return !comm_.any(!ok);
}

std::vector<at::Tensor> Zero3::gather_float32() {
  torch::NoGradGuard g;
  std::vector<at::Tensor> out;
  for (const auto& u : units_) {
    auto full = torch::empty({u.shard * comm_.world_size()}, u.master.options());
    comm_.all_gather_into(u.master, full);
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
