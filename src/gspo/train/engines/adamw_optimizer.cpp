#include "gspo/train/engines/adamw_optimizer.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/train/engines/adamw8bit_optimizer.h"
#include "gspo/train/engines/fused_step.h"

namespace gspo::train {

namespace {

// state_bits 32: torch::optim::AdamW's state, stepped by the fused kernels (fused_step.h).
class TorchAdamW : public AdamWOptimizer {
 public:
  TorchAdamW(std::vector<at::Tensor> params, const config::OptimizerOptions& h) {
    torch::optim::AdamWOptions ao(h.lr);
    ao.betas({h.beta1, h.beta2}).eps(h.eps).weight_decay(h.weight_decay);
    opt_ = std::make_unique<torch::optim::AdamW>(std::move(params), ao);
  }
  void step(double lr) override {
    for (auto& group : opt_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    fused_adamw_step(*opt_, lr);
  }
  int64_t state_bytes() const override {
    int64_t bytes = 0;
    for (const auto& kv : opt_->state()) {
      const auto& st = static_cast<const torch::optim::AdamWParamState&>(*kv.second);
      for (const auto& t : {st.exp_avg(), st.exp_avg_sq(), st.max_exp_avg_sq()})
        if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
    }
    return bytes;
  }
  void save(const std::string& dir) override { io::save_optimizer(dir, *opt_); }
  void load(const std::string& dir) override {
    if (core::exists(dir + "/" + kAdamW8bitFile)) io::wrong_state_bits("checkpoint '" + dir + "'", "", 8);
    io::load_optimizer(dir, *opt_);
  }

 private:
  std::unique_ptr<torch::optim::AdamW> opt_;
};

// state_bits 8 (adamw8bit_optimizer.h).
class Bits8AdamW : public AdamWOptimizer {
 public:
  Bits8AdamW(std::vector<at::Tensor> params, const config::OptimizerOptions& h) : opt_(std::move(params), h) {}
  void step(double lr) override { opt_.step(lr); }
  int64_t state_bytes() const override { return opt_.state_bytes(); }
  void save(const std::string& dir) override {
    io::save_tensors(dir + "/" + kAdamW8bitFile, opt_.state(), "8-bit AdamW state");
  }
  void load(const std::string& dir) override {
    const std::string file = dir + "/" + kAdamW8bitFile;
    if (!core::exists(file)) {
      if (core::exists(dir + "/optimizer.pt")) io::wrong_state_bits("checkpoint '" + dir + "'", "", 32);
      throw IoError("checkpoint '" + dir + "' lacks " + kAdamW8bitFile + " (the AdamW moments of optimizer.state_bits "
                    "8)");
    }
    opt_.load_state(io::load_tensors(file, "8-bit AdamW state"), file);
  }

 private:
  AdamW8bit opt_;
};

}  // namespace

std::unique_ptr<AdamWOptimizer> make_adamw_optimizer(std::vector<at::Tensor> params, const config::OptimizerOptions& o) {
  if (o.state_bits == 8) return std::make_unique<Bits8AdamW>(std::move(params), o);
  if (o.state_bits != 32)
    throw ConfigError("optimizer.state_bits must be 8 or 32 (got " + std::to_string(o.state_bits) + ")");
  return std::make_unique<TorchAdamW>(std::move(params), o);
}

}  // namespace gspo::train
