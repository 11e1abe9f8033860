#include "gspo/reward/scorers/model_scoring.h"

#include <algorithm>

#include "gspo/core/error.h"

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
