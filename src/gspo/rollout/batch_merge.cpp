#include "gspo/rollout/batch_merge.h"

#include <torch/torch.h>

#include <stdexcept>

namespace gspo::rollout {

RolloutBatch merge_groups(const std::vector<const RolloutBatch*>& batches, const std::vector<GroupRef>& groups,
                          int64_t pad_id) {
  if (batches.empty() || groups.empty()) throw std::invalid_argument("merge_groups: nothing to merge");
  const int64_t G = batches.front()->group_size;
  int64_t P = 0, R = 0;
  for (const auto* b : batches) {
    if (b->group_size != G) throw std::invalid_argument("merge_groups: batches with different group sizes");
    P = std::max(P, b->prompt_len);
    R = std::max(R, b->response_mask.size(1));
  }
  const int64_t N = static_cast<int64_t>(groups.size()) * G;
  RolloutBatch out;
  out.prompt_len = P;
  out.group_size = G;
  out.input_ids = torch::full({N, P + R}, pad_id, torch::kLong);
  out.attention_mask = torch::zeros({N, P + R}, torch::kLong);
  out.response_mask = torch::zeros({N, R}, torch::kFloat);
  out.loss_mask = torch::zeros({N, R}, torch::kFloat);
  out.behaviour_logprobs = torch::zeros({N, R}, torch::kFloat);
  int64_t with_routes = 0;  // (the rollout's experts, RolloutBatch::routes: every batch or none)
  for (const auto* b : batches) with_routes += b->routes.defined();
  if (with_routes != 0 && with_routes != static_cast<int64_t>(batches.size()))
    throw std::invalid_argument("merge_groups: batches with and without the rollout's routes");
  if (with_routes) {
    const auto& f = batches.front()->routes;  // padding: experts 0..top_k-1, as route_store.h fills it
    out.routes = torch::arange(f.size(3), f.options()).expand({N, P + R, f.size(2), f.size(3)}).contiguous();
  }
  int64_t row = 0;
  for (const auto& g : groups) {
    const auto& b = *batches.at(static_cast<size_t>(g.batch));
    const int64_t Pb = b.prompt_len, Rb = b.response_mask.size(1);
    for (int64_t s = 0; s < G; ++s, ++row) {
      const int64_t r = g.group * G + s;
      // Prompt columns keep their right alignment; response columns start at P.
      out.input_ids[row].narrow(0, P - Pb, Pb).copy_(b.input_ids[r].narrow(0, 0, Pb));
      out.attention_mask[row].narrow(0, P - Pb, Pb).copy_(b.attention_mask[r].narrow(0, 0, Pb));
      out.input_ids[row].narrow(0, P, Rb).copy_(b.input_ids[r].narrow(0, Pb, Rb));
      out.attention_mask[row].narrow(0, P, Rb).copy_(b.attention_mask[r].narrow(0, Pb, Rb));
      out.response_mask[row].narrow(0, 0, Rb).copy_(b.response_mask[r]);
      out.loss_mask[row].narrow(0, 0, Rb).copy_(b.loss_mask[r]);
      out.behaviour_logprobs[row].narrow(0, 0, Rb).copy_(b.behaviour_logprobs[r]);
      if (with_routes) {
        out.routes[row].narrow(0, P - Pb, Pb).copy_(b.routes[r].narrow(0, 0, Pb));
        out.routes[row].narrow(0, P, Rb).copy_(b.routes[r].narrow(0, Pb, Rb));
      }
      out.response_lengths.push_back(b.response_lengths[r]);
      out.finish.push_back(b.finish[r]);
      out.response_ids.push_back(b.response_ids[r]);
      out.response_text.push_back(b.response_text[r]);
    }
  }
  return out;
}

}  // namespace gspo::rollout
