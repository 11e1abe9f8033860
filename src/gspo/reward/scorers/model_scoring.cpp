#include "gspo/reward/scorers/model_scoring.h"

#include <algorithm>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/model/reward_model.h"
#include "gspo/tokenizer/chat_template.h"
#include "gspo/tokenizer/jinja.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::reward {

c10::ScalarType score_dtype(config::ScoreDtype d, c10::Device device) {
  switch (d) {
    case config::ScoreDtype::kFloat32: return c10::kFloat;
    case config::ScoreDtype::kBFloat16: return c10::kBFloat16;
    case config::ScoreDtype::kAuto: break;
  }
  return device.is_cuda() ? c10::kBFloat16 : c10::kFloat;
}

io::LoadedModel load_scorer(const std::string& path, io::ModelLoad::Head head, config::ScoreDtype dtype,
                            c10::Device device) {
  io::ModelLoad what;
  what.file = path;
  what.head = head;
  what.device = device;
  what.frozen = true;
  what.dtype = score_dtype(dtype, device);
  return io::load_model(what);
}

ScorerChat::ScorerChat(config::ChatTemplate chat, const io::LoadedModel& loaded, const std::string& key,
                       const std::string& path)
    : chat_(chat) {
  if (chat != config::ChatTemplate::kAuto) return;
  if (loaded.chat_template.empty())
    throw ConfigError(key + " auto: '" + path + "' carries no chat template (chat_template.jinja, or " +
                      "tokenizer_config.json's chat_template, which scripts/export_hf.py keeps from the model " +
                      "directory); name its family (chatml, qwen2.5, deepseek_r1) or none");
  own_ = std::make_unique<tokenizer::jinja::ChatJinja>(loaded.chat_template, loaded.chat_template_origin);
  const auto& tok = *loaded.tok;
  const int64_t eos = loaded.reward ? loaded.reward->manifest().eos_token_id
                                    : (loaded.policy ? loaded.policy->manifest().eos_token_id : tok.eos_id());
  auto text = [&](int64_t id) { return id >= 0 ? tok.decode({id}, true) : std::string(); };
  vars_ = {{"bos_token", text(tok.bos_id())}, {"eos_token", text(eos >= 0 ? eos : tok.eos_id())}};
}

ScorerChat::ScorerChat(ScorerChat&&) noexcept = default;
ScorerChat::~ScorerChat() = default;

std::string ScorerChat::render(const std::vector<tokenizer::ChatMessage>& messages,
                               const tokenizer::ChatOptions& o) const {
  if (!own_) return tokenizer::render_chat(chat_, messages, o);
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  auto vars = vars_;
  vars["enable_thinking"] = o.enable_thinking;
  return tokenizer::jinja::apply_chat_template(*own_, msgs, o.add_generation_prompt, nullptr, vars);
}

std::vector<Pending> rows_to_score(size_t n, int64_t max_tokens, const ScoringNames& names,
                                   const std::function<std::vector<int64_t>(size_t)>& encode,
                                   const std::function<void(size_t, const std::string&)>& fail) {
  std::vector<Pending> rows;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> ids;
    try {
      ids = encode(i);
    } catch (const std::exception& e) {  // (a DataError of the template or the tokenizer: this row only)
      fail(i, names.cannot_encode + " (" + std::string(e.what()).substr(0, 120) + ")");
      continue;
    }
    if (ids.empty()) {
      fail(i, "the conversation encodes to no tokens");
    } else if (static_cast<int64_t>(ids.size()) > max_tokens) {
      fail(i, "longer than " + names.model + "'s context (" + std::to_string(ids.size()) + " > " +
                  std::to_string(max_tokens) + " tokens)");
    } else {
      rows.push_back({i, std::move(ids)});
    }
  }
  return rows;
}

std::vector<std::vector<const Pending*>> passes_of(std::vector<Pending>& rows, int64_t budget, int64_t extra) {
  std::stable_sort(rows.begin(), rows.end(), [](const Pending& a, const Pending& b) { return a.ids.size() > b.ids.size(); });
  std::vector<std::vector<const Pending*>> passes;
  for (const auto& r : rows) {
    if (passes.empty() ||
        static_cast<int64_t>(passes.back().size() + 1) * (static_cast<int64_t>(passes.back().front()->ids.size()) + extra) >
            budget)
      passes.emplace_back();
    passes.back().push_back(&r);
  }
  return passes;
}

void check_some_row_fits(const std::vector<data::Example>& rows, int64_t max_tokens, const std::string& who,
                         const std::string& key, const std::function<std::vector<int64_t>(const data::Example&)>& ids_of) {
  if (rows.empty()) return;
  size_t shortest = SIZE_MAX;
  std::string why;
  for (const auto& ex : rows) {
    try {
      const auto n = ids_of(ex).size();
      if (n > 0 && static_cast<int64_t>(n) <= max_tokens) return;
      shortest = std::min(shortest, n);
    } catch (const std::exception& e) {
      if (why.empty()) why = ex.id + ": " + std::string(e.what()).substr(0, 160);
    }
  }
  throw ConfigError(key + ": no row of the data can be scored by " + who + ": " +
                    (shortest != SIZE_MAX ? "the shortest conversation, with an empty response, is " +
                                                std::to_string(shortest) + " tokens, over the limit of " +
                                                std::to_string(max_tokens)
                                          : "no row can be put to it (" + why + ")") +
                    "; every sample would get reward 0");
}

Score ModelScorer::score(const std::string& response, const data::Example& ex) const {
  return score_batch({response}, {&ex}, nullptr, 1).front();
}

ScoringTotals ModelScorer::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

void note_failure(ScoringTotals& totals, const std::string& why) {
  ++totals.failed;
  totals.last_failure = why;
}

}  // namespace gspo::reward
