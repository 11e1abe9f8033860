#include "gspo/rollout/route_store.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace gspo::rollout {

RouteStore::RouteStore(int64_t prompts, int64_t rows, int64_t span, int64_t layers, int64_t top_k, int64_t experts,
                       c10::Device device)
    : rows_(rows), span_(span), layers_(layers), top_k_(top_k), experts_(experts),
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

void RouteStore::set_so_far(int64_t row, const at::Tensor& pass, int64_t offset, int64_t length) {
  response_[row].narrow(0, 0, std::min(length, span_)).copy_(pass.narrow(0, offset, std::min(length, span_)).to(type_));
}

namespace {

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "] " + std::string(c10::toString(t.scalar_type()));
}

}  // namespace

void RouteStore::check_carried(const CallPlan& plan, const std::vector<std::vector<int64_t>>& prompts,
                               int64_t G) const {
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    const auto& row = plan.rows[r];
    if (row.ids.empty()) continue;
    const int64_t run = static_cast<int64_t>(prompts.at(r / static_cast<size_t>(G)).size() + row.ids.size()) - 1;
    const std::string want = "[" + std::to_string(run) + ", " + std::to_string(layers_) + ", " +
                             std::to_string(top_k_) + "] " + c10::toString(type_);
    const std::string head = "CallPlan: row " + std::to_string(r) + " carries ";
    if (!row.routes.defined())
      throw std::invalid_argument(head + std::to_string(row.ids.size()) + " tokens without their routes, where " +
                                  "this call records them (" + want + ")");
    const auto& t = row.routes;
    if (t.dim() != 3 || t.size(0) != run || t.size(1) != layers_ || t.size(2) != top_k_ || t.scalar_type() != type_)
      throw std::invalid_argument(head + "routes " + shape_of(t) + " where this model records " + want +
                                  " (its prompt and tokens so far but the last, its MoE layers of top-" +
                                  std::to_string(top_k_) + "): another model's, or another row's");
    const int64_t most = t.numel() ? t.max().item<int64_t>() : 0;
    if (most >= experts_)
      throw std::invalid_argument(head + "routes that name expert " + std::to_string(most) + ", where this model has " +
                                  std::to_string(experts_) + " a layer");
  }
}

at::Tensor RouteStore::layout(int64_t G, int64_t P, int64_t R, const CallPlan* plan) const {
  const auto prompts = static_cast<int64_t>(prompt_.size());
  auto out = filler({prompts * G, P + R, layers_, top_k_});
  out.narrow(1, P, R).copy_(response_.narrow(0, 0, prompts * G).narrow(1, 0, R));
  for (int64_t p = 0; p < prompts; ++p) {
    const auto& routes = prompt_[static_cast<size_t>(p)];
    if (!routes.defined()) continue;  // (a plan's rows: carried, or never given a slot)
    const int64_t len = routes.size(0);
    out.narrow(0, p * G, G).narrow(1, P - len, len).copy_(routes.unsqueeze(0).expand({G, len, layers_, top_k_}));
  }
  for (int64_t r = 0; r < prompts * G; ++r) {
    const auto* row = plan ? &plan->rows[static_cast<size_t>(r)] : nullptr;
    if (row && row->routes.defined()) {
      const int64_t n = row->routes.size(0), end = P + static_cast<int64_t>(row->ids.size()) - 1;
      out[r].narrow(0, end - n, n).copy_(row->routes);
    } else if (!prompt_[static_cast<size_t>(r / G)].defined() && (!row || !row->ids.empty())) {
      throw std::logic_error("RouteStore: row " + std::to_string(r) + "'s prompt was never prefilled");
    }
  }
  return out;
}

}  // namespace gspo::rollout
