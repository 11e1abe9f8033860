// The ZeRO-3 update engine: parallel::Zero3 behind the UpdateEngine interface, and its checkpoint files.
#include "gspo/train/engines/zero3_engine.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <regex>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/zero3.h"
#include "gspo/train/engines/grad_clip.h"
#include "gspo/train/engines/optimizer_files.h"

namespace gspo::train {
namespace {

std::string shard_file(int64_t rank) { return zero3_file(rank); }

// The ranks whose shard files `dir` holds (0 .. n-1 expected).
std::vector<int64_t> shard_ranks(const std::string& dir) {
  static const std::regex kName(R"(optimizer_zero3_rank(\d+)\.pt)");
  std::vector<int64_t> ranks;
  for (const auto& name : core::list_dir(dir)) {
    std::smatch m;
    if (std::regex_match(name, m, kName)) ranks.push_back(std::stoll(m[1].str()));
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Rank r's shard file of the `n` in checkpoint `dir`, its values checked (Zero3::load_shards checks the layout):
// IoError naming the file of a rank the header counts that is not there (the last ones: the ranks before it are
// checked by name), or the file and tensor holding NaN or Inf or a negative step count.
// File: [header {format, world size, rank, step, units U, each unit's numel}, then T moment tensors a unit].
std::vector<at::Tensor> read_shard(const std::string& dir, int64_t r, int64_t n) {
  const std::string file = dir + "/" + shard_file(r);
  auto state = io::load_tensors(file, "ZeRO-3 optimizer shard");
  if (state.empty() || state[0].scalar_type() != torch::kLong || state[0].dim() != 1 || state[0].numel() < 5)
    return state;  // (load_shards names the mismatch)
  const auto h = state[0].accessor<int64_t, 1>();
  if (h[1] > n)
    throw IoError("checkpoint '" + dir + "' lacks " + shard_file(n) + ": its " + shard_file(r) + " was written by " +
                  std::to_string(h[1]) + " ranks, and only " + std::to_string(n) + " shard files are there");
  io::require_step_count(h[3], file, "the step count");
  const int64_t units = h[4];
  const size_t T = units > 0 ? (state.size() - 1) / static_cast<size_t>(units) : 0;  // tensors a unit
  for (size_t j = 1; j < state.size(); ++j)
    io::require_finite(state[j], file, "unit " + std::to_string((j - 1) / std::max<size_t>(T, 1)) + "'s " +
                                           io::moment_name((j - 1) % std::max<size_t>(T, 1), T));
  return state;
}

class Zero3Engine : public UpdateEngine {
 public:
  Zero3Engine(model::Policy& policy, const EngineOptions& o, parallel::Comm& comm)
      : comm_(comm), max_norm_(max_grad_norm(o.optimizer)) {
    const auto& h = o.optimizer;
    const auto dtype = o.dtype == config::Dtype::kBFloat16 ? torch::kBFloat16 : torch::kFloat;
    const parallel::AdamWHyper hyper{h.beta1, h.beta2, h.eps, h.weight_decay, h.state_bits, o.offload};
    z_ = std::make_unique<parallel::Zero3>(policy, dtype, hyper, o.keep_whole, o.overlap, o.device, comm);
  }
  void zero_grad() override { z_->zero_grad(); }
  void after_backward() override { z_->reduce_ends(); }
  double reduce() override { return norm_ = z_->reduce_gradients(); }
  void step(double lr) override {
    z_->step(lr, clip_scale(norm_, max_norm_));
  }
  int64_t state_bytes() const override { return z_->state_bytes(); }
  int64_t model_state_bytes() const override { return z_->model_state_bytes(); }
  bool weights_finite() override { return z_->finite(); }

  // Every rank writes its moments into `staging`; rank 0 gathers the float32 weights for the consolidated policy.pt.
  void gather_for_save(const std::string& staging) override {
    core::ensure_dir(staging);
    io::save_tensors(staging + "/" + shard_file(comm_.rank()), z_->shard_state(), "ZeRO-3 optimizer shard");
    full_ = z_->gather_float32();
    staging_ = staging;
    comm_.barrier("ZeRO-3 shards of a checkpoint written");
  }
  void save(const std::string& dir) override {
    for (int64_t r = 0; r < comm_.world_size(); ++r) {
      const std::string from = staging_ + "/" + shard_file(r), to = dir + "/" + shard_file(r);
      if (std::rename(from.c_str(), to.c_str()) != 0)
        throw IoError("cannot move the ZeRO-3 shard '" + from + "' into checkpoint '" + dir + "'");
    }
    core::remove_all(staging_);
  }
  void load(const std::string& dir) override {
    const auto ranks = shard_ranks(dir);
    if (ranks.empty()) missing_state(dir, shard_file(0));
    const auto n = static_cast<int64_t>(ranks.size());
    for (int64_t r = 0; r < n; ++r)
      if (ranks[r] != r)
        throw IoError("checkpoint '" + dir + "' lacks " + shard_file(r) + " (it has " + std::to_string(n) +
                      " ZeRO-3 shard files)");
    z_->load_shards(n, [&](int64_t r) { return read_shard(dir, r, n); }, dir);
  }
  // Rank 0, after gather_for_save(): the policy's parameters hold the float32 values (host memory) while `f` runs.
  void with_float32_policy(const std::function<void()>& f) override {
    torch::NoGradGuard g;
    auto params = z_->parameters();
    if (full_.size() != params.size()) throw Error("ZeRO-3: the float32 weights were not gathered before saving");
    std::vector<at::Tensor> before;
    for (size_t i = 0; i < params.size(); ++i) {
      before.push_back(params[i].variable_data());
      params[i].set_data(full_[i]);
    }
    auto restore = [&] {
      for (size_t i = 0; i < params.size(); ++i) params[i].set_data(before[i]);
      full_.clear();
    };
    try {
      f();
    } catch (...) {
      restore();
      throw;
    }
    restore();
  }
  void hold_whole(bool on) override { z_->hold_whole(on); }
  bool lockstep() const override { return true; }
  void set_idle(bool idle) override { z_->set_idle(idle); }
  model::GateStats take_gather_counts() override { return z_->take_gather_stats(); }

 private:
  parallel::Comm& comm_;
  double max_norm_, norm_ = 0;
  std::unique_ptr<parallel::Zero3> z_;
  std::vector<at::Tensor> full_;
  std::string staging_;
};

}  // namespace

bool written_by_zero3(const std::string& dir) { return !shard_ranks(dir).empty(); }

std::unique_ptr<UpdateEngine> make_zero3_engine(model::Policy& policy, const EngineOptions& opts,
                                                parallel::Comm& comm) {
  return std::make_unique<Zero3Engine>(policy, opts, comm);
}

}  // namespace gspo::train
