#include "gspo/train/engines/fused_step.h"

#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace gspo::train {

void fused_adamw_step(torch::optim::AdamW& opt, double lr) {
  torch::NoGradGuard no_grad;
  struct Lists {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    const torch::optim::AdamWOptions* options = nullptr;
  };
  // One kernel call a (group, device, dtype, step count): the kernel takes one step count per list.
  std::map<std::tuple<size_t, std::string, int, int64_t>, Lists> calls;
  auto& groups = opt.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(groups[g].options());
    if (options.amsgrad()) throw std::logic_error("fused_adamw_step: amsgrad is not supported");
    for (auto& p : groups[g].params()) {
      if (!p.grad().defined()) continue;
      auto& state = opt.state();
      auto it = state.find(p.unsafeGetTensorImpl());
      if (it == state.end()) {  // as torch::optim::AdamW::step creates it
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        it = state.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
      st.step(st.step() + 1);
      auto& l = calls[{g, p.device().str(), static_cast<int>(p.scalar_type()), st.step()}];
      l.options = &options;
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(st.exp_avg());
      l.exp_avg_sqs.push_back(st.exp_avg_sq());
    }
  }
  for (auto& [key, l] : calls) {
    const auto& o = *l.options;
    // The kernel reads each tensor's step count (float32, on the parameters' device) after the increment above.
    auto step = torch::full({}, static_cast<double>(std::get<3>(key)),
                            torch::TensorOptions().dtype(torch::kFloat).device(l.params.front().device()));
    std::vector<at::Tensor> steps(l.params.size(), step);
    at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, {}, steps, lr, std::get<0>(o.betas()),
                      std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false);
  }
}

double clip_grad_norm_fused(const std::vector<at::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  auto norms = at::_foreach_norm(grads, 2);
  auto total = norms.size() == 1 ? norms.front() : torch::linalg_vector_norm(torch::stack(norms), 2);
  auto coef = torch::clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  at::_foreach_mul_(grads, coef);
  return total.item<double>();
}

}  // namespace gspo::train
