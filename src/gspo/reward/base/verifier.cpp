#include "gspo/reward/base/verifier.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gspo/core/error.h"

namespace gspo::reward {
std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

namespace {
// Canonical integer text: sign kept only for non-zero, leading zeros removed.
std::string canonical_int(const std::string& s) {
  if (s.empty()) return s;
  bool neg = s[0] == '-';
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  while (i + 1 < s.size() && s[i] == '0') ++i;
  std::string digits = s.substr(i);
  if (digits == "0") neg = false;
  return (neg ? "-" : "") + digits;
}
}  // namespace

std::string leading_integer(const std::string& text) {
  size_t i = text.find_first_not_of(" \t");
  if (i == std::string::npos) return "";
  size_t start = i;
  if (text[i] == '-' || text[i] == '+') ++i;
  size_t digits = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == digits) return "";
  return text.substr(start, i - start);
}

Score ExactMatch::score(const std::string& response, const data::Example& ex) const {
  const bool ok = trim(response) == trim(ex.answer);
  return {ok ? 1.0 : 0.0, ok, "", {}, ok ? "" : "wrong answer"};
}

Score ToolUseFormat::score(const std::string&, const data::Example&) const {
  return {0.0, false, "", {}, "no tool use (graded without tools)"};
}

Score ToolUseFormat::score_episode(const std::string&, const data::Example&, const ToolUse& use) const {
  const bool ok = use.calls > 0 && use.errors == 0;  // (errors count the timeouts)
  return {ok ? 1.0 : 0.0, ok, "", {}, ok ? "" : use.calls == 0 ? "no tool call" : "a tool call failed"};
}

Score LeadingInteger::score(const std::string& response, const data::Example& ex) const {
  const std::string got = leading_integer(response);
  const bool ok = !got.empty() && canonical_int(got) == canonical_int(trim(ex.answer));
  return {ok ? 1.0 : 0.0, ok, "", {}, ok ? "" : got.empty() ? "no answer found" : "wrong answer"};
}

std::vector<double> Verifier::component_weights() const {
  std::vector<double> w;
  for (const auto& part : parts()) w.push_back(part.weight);
  return w;
}

ScoringTotals Verifier::scoring_totals() const {
  const BatchScoring* s = scoring();
  return s ? s->totals() : ScoringTotals{};
}

std::vector<Score> score_all(const Verifier& v, const std::vector<std::string>& responses,
                             const std::vector<const data::Example*>& examples, int64_t workers,
                             const std::vector<ToolUse>* uses) {
  if (const BatchScoring* batch = v.scoring()) return batch->score_batch(responses, examples, uses, workers);
  std::vector<Score> out(responses.size());
  if (workers <= 0) workers = std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<int64_t>(workers, static_cast<int64_t>(responses.size()));
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex mu;
  auto work = [&] {
    for (size_t i; (i = next++) < responses.size();) {
      try {
        out[i] = uses ? v.score_episode(responses[i], *examples[i], uses->at(i)) : v.score(responses[i], *examples[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        next = responses.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace gspo::reward
