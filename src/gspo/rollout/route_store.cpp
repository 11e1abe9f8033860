#include "gspo/rollout/route_store.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace gspo::rollout {

RouteStore::RouteStore(int64_t prompts, int64_t rows, int64_t span, int64_t layers, int64_t top_k, int64_t experts,
                       c10::Device device)
    : rows_(rows), span_(span), layers_(layers), top_k_(top_k),
      type_(experts <= 256 ? torch::kUInt8 : torch::kShort), prompt_(static_cast<size_t>(prompts)) {
  if (layers < 1 || top_k < 1 || experts < top_k || experts > 32768)
    throw std::invalid_argument("RouteStore: " + std::to_string(layers) + " MoE layers of top-" +
                                std::to_string(top_k) + " of " + std::to_string(experts) + " experts");
  response_ = filler({rows + 1, span, layers, top_k}).to(device);
}

at::Tensor RouteStore::filler(at::IntArrayRef shape) const {
  return torch::arange(top_k_, torch::TensorOptions().dtype(type_)).expand(shape).contiguous();
}

void RouteStore::set_prompt(int64_t p, const at::Tensor& pass, int64_t offset, int64_t length) {
  prompt_.at(static_cast<size_t>(p)) = pass.narrow(0, offset, length).to(type_);
}

void RouteStore::put(const at::Tensor& rows, const at::Tensor& positions, const at::Tensor& pass) {
  response_.index_put_({rows, positions.clamp_max(span_ - 1)}, pass.to(type_));
}

at::Tensor RouteStore::layout(int64_t G, int64_t P, int64_t R) const {
  const auto prompts = static_cast<int64_t>(prompt_.size());
  auto out = filler({prompts * G, P + R, layers_, top_k_});
  out.narrow(1, P, R).copy_(response_.narrow(0, 0, prompts * G).narrow(1, 0, R));
  for (int64_t p = 0; p < prompts; ++p) {
    const auto& routes = prompt_[static_cast<size_t>(p)];
    if (!routes.defined()) throw std::logic_error("RouteStore: prompt " + std::to_string(p) + " was never prefilled");
    const int64_t len = routes.size(0);
    out.narrow(0, p * G, G).narrow(1, P - len, len).copy_(routes.unsqueeze(0).expand({G, len, layers_, top_k_}));
  }
  return out;
}

}  // namespace gspo::rollout
