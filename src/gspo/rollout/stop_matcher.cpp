#include "gspo/rollout/stop_matcher.h"

#include <algorithm>

#include <torch/torch.h>

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::rollout {

StopMatcher::StopMatcher(std::vector<std::string> stops, const tokenizer::Tokenizer& tok)
    : stops_(std::move(stops)), tok_(tok) {}

void StopMatcher::append(std::string& text, int64_t id) const { text += tok_.token_bytes(id, /*with_special=*/false); }

bool StopMatcher::append_and_match(std::string& text, int64_t id) const {
  const size_t before = text.size();
  append(text, id);
  for (const auto& s : stops_) {
    if (text.size() < s.size()) continue;
    const size_t from = before >= s.size() - 1 ? before - (s.size() - 1) : 0;
    if (text.find(s, from) != std::string::npos) return true;
  }
  return false;
}

at::Tensor StopMatcher::advance(const at::Tensor& tokens, const at::Tensor& active, const std::vector<int64_t>& eos_ids,
                                const std::vector<std::string*>& texts, const std::vector<bool>& check) const {
  // Tokens and flags in one read: an inactive row's token is -1 there.
  auto tok = torch::where(active, tokens, -1).to(torch::kCPU);
  const int64_t n = tok.numel();
  auto stopped = torch::zeros({n}, torch::kBool);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = tok.data_ptr<int64_t>()[i];
    if (id < 0 || std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) continue;
    if (check[i])
      stopped.data_ptr<bool>()[i] = append_and_match(*texts[i], id);
    else
      append(*texts[i], id);
  }
  return stopped;
}

}  // namespace gspo::rollout
