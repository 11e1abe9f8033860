// make_verifier(): the verifier (or weighted combination) config.reward describes.
#include "gspo/reward/factory.h"

#include <algorithm>
#include <map>
#include <regex>

#include "gspo/config/options.h"
#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/by_source.h"
#include "gspo/reward/code/code.h"
#include "gspo/reward/external/external.h"
#include "gspo/reward/math/math.h"
#include "gspo/reward/scorers/scorer_table.h"

namespace gspo::reward {
namespace {

class RegexVerifier : public Verifier {
 public:
  explicit RegexVerifier(std::string pattern) : pattern_(std::move(pattern)) {}
  Score score(const std::string& response, const data::Example& ex) const override {
    std::string p = pattern_;
    static const std::regex kSpecial(R"([.^$|()\[\]{}*+?\\])");
    const std::string escaped = std::regex_replace(ex.answer, kSpecial, R"(\$&)");
    for (size_t pos; (pos = p.find("{answer}")) != std::string::npos;) p.replace(pos, 8, escaped);
    const bool ok = std::regex_search(response, std::regex(p));
    return {ok ? 1.0 : 0.0, ok, "", {}, ""};
  }
  std::string name() const override { return "regex"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kRegex; }

 private:
  std::string pattern_;
};

class Weighted : public Verifier, public BatchScoring {
 public:
  void add(std::unique_ptr<Verifier> v, double w) { parts_.emplace_back(std::move(v), w); }
  Score score(const std::string& response, const data::Example& ex) const override {
    return combine([&](size_t i) { return parts_[i].first->score(response, ex); });
  }
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override {
    return combine([&](size_t i) { return parts_[i].first->score_episode(response, ex, use); });
  }
  std::string name() const override {
    std::string n;
    for (const auto& [v, w] : parts_) n += (n.empty() ? "" : "+") + v->name() + ":" + std::to_string(w).substr(0, 5);
    return n;
  }
  std::optional<config::RewardKind> kind() const override { return std::nullopt; }
  std::vector<WeightedPart> parts() const override {
    std::vector<WeightedPart> out;
    for (const auto& [v, w] : parts_) out.push_back({v.get(), w});
    return out;
  }
  // A part that batches (a model reward) makes the sum batch: each part over the whole batch (batched, or row by row
  // on threads), then combined row by row.
  const BatchScoring* scoring() const override {
    const bool any = std::any_of(parts_.begin(), parts_.end(), [](const auto& p) { return p.first->batches(); });
    return any ? this : nullptr;
  }
  std::vector<Score> score_batch(const std::vector<std::string>& responses,
                                 const std::vector<const data::Example*>& examples, const std::vector<ToolUse>* uses,
                                 int64_t workers) const override {
    std::vector<std::vector<Score>> per_part;
    for (const auto& part : parts_) per_part.push_back(score_all(*part.first, responses, examples, workers, uses));
    std::vector<Score> out;
    for (size_t r = 0; r < responses.size(); ++r) out.push_back(combine([&](size_t i) { return per_part[i][r]; }));
    return out;
  }
  ScoringTotals totals() const override {
    ScoringTotals t;
    for (const auto& part : parts_) {
      const auto p = part.first->scoring_totals();
      t.rows += p.rows, t.failed += p.failed, t.tokens += p.tokens, t.seconds += p.seconds;
      if (!p.last_failure.empty()) t.last_failure = p.last_failure;
    }
    return t;
  }

 private:
  // `one(i)`: part i's score of the row. Accuracy and the failure reason follow the first part that grades
  // correctness; with none that grades, the reason is the first part's that has one (a model part's failure). A part
  // that runs a model (it scores through the batch seam) does not grade: a learned reward model's score or a judge's
  // verdict does not say whether the answer is right.
  template <class Fn>
  Score combine(Fn&& one) const {
    Score total;
    bool graded = false;
    std::string any_failure;
    for (size_t i = 0; i < parts_.size(); ++i) {
      auto s = one(i);
      total.reward += parts_[i].second * s.reward;
      total.components.push_back(s.reward);
      if (!graded && !parts_[i].first->batches()) {
        total.correct = s.correct, total.failure = s.failure, graded = true;
      }
      if (any_failure.empty()) any_failure = s.failure;
      if (!s.detail.empty()) total.detail += (total.detail.empty() ? "" : "; ") + s.detail;
    }
    if (!graded) total.failure = any_failure;
    return total;
  }

  std::vector<std::pair<std::unique_ptr<Verifier>, double>> parts_;
};

// Kind auto on a dataset that mixes code rows and math rows: each row goes to the verifier that fits it.
class PerRow : public Verifier {
 public:
  PerRow(std::unique_ptr<Verifier> math, std::unique_ptr<Verifier> code) : math_(std::move(math)), code_(std::move(code)) {}
  Score score(const std::string& response, const data::Example& ex) const override {
    return data::row_has_code_tests(ex) ? code_->score(response, ex) : math_->score(response, ex);
  }
  Score score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const override {
    return (data::row_has_code_tests(ex) ? code_ : math_)->score_episode(response, ex, use);
  }
  std::string name() const override { return "auto(math|code)"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kAuto; }

 private:
  std::unique_ptr<Verifier> math_, code_;
};

std::unique_ptr<Verifier> make_one(config::RewardKind kind, const config::Config& cfg, const data::TestCoverage& rows,
                                   c10::Device device, const std::vector<data::Example>& examples);

bool any_source(const std::vector<data::Example>& examples) {
  return std::any_of(examples.begin(), examples.end(), [](const data::Example& ex) { return !ex.source.empty(); });
}

// Kind auto on rows that name data sources: one verifier per kind their sources map to (by_source.h), each built
// for its own rows (so its start-up checks name them), and auto's rule by shape for the rows without a source.
std::unique_ptr<Verifier> make_by_source(const config::Config& cfg, c10::Device device,
                                         const std::vector<data::Example>& examples) {
  using config::RewardKind;
  auto route = route_sources(cfg.reward.sources, examples);
  std::map<RewardKind, std::vector<data::Example>> rows_of;
  std::vector<data::Example> unsourced;
  for (const auto& ex : examples) (ex.source.empty() ? unsourced : rows_of[route.at(ex.source)]).push_back(ex);
  std::map<RewardKind, std::unique_ptr<Verifier>> verifiers;
  for (const auto& [kind, rows] : rows_of) {
    auto coverage = data::code_test_coverage(rows);
    if (kind == RewardKind::kCode) {  // tests in the row's fields, or in its answer as verl's prime_code reads them
      auto untested = [](const data::Example& ex) {
        return !data::row_has_code_tests(ex) && !answer_holds_tests(ex.answer);
      };
      const auto missing = std::count_if(rows.begin(), rows.end(), untested);
      const auto it = std::find_if(rows.begin(), rows.end(), untested);
      if (missing > 0)
        throw ConfigError(it->id + ": data source '" + it->source + "' is graded by the code verifier, but the row has "
                          "no tests ('tests', 'test', 'test_list', 'public_test_cases', or a reference answer "
                          "{\"inputs\", \"outputs\"}; " + std::to_string(missing) + (missing == 1 ? " row" : " rows") +
                          " without); map the source to another kind with reward.sources (\"" + it->source +
                          ":math\")");
      coverage.without_tests = 0;
    }
    verifiers.emplace(kind, make_one(kind, cfg, coverage, device, rows));
  }
  auto rest = unsourced.empty()
                  ? nullptr
                  : make_one(RewardKind::kAuto, cfg, data::code_test_coverage(unsourced), device, unsourced);
  auto v = std::make_unique<BySource>(std::move(verifiers), std::move(route), std::move(rest));
  log::info("reward: rows graded by their data source: {}", v->name());
  return v;
}

std::unique_ptr<Verifier> make_one(config::RewardKind kind, const config::Config& cfg, const data::TestCoverage& rows,
                                   c10::Device device, const std::vector<data::Example>& examples) {
  using config::RewardKind;
  const auto& r = cfg.reward;
  const bool arithmetic = cfg.data.task == config::Task::kArithmetic;
  if (kind == RewardKind::kAuto && !arithmetic && any_source(examples)) return make_by_source(cfg, device, examples);
  if (kind == RewardKind::kAuto && !arithmetic && rows.mixed()) {
    data::TestCoverage code_rows = rows;  // the code verifier only ever sees the rows with tests
    code_rows.without_tests = 0;
    data::TestCoverage math_rows = rows;  // ... and the math verifier the rows without (each has an answer)
    math_rows.without_answer = 0;
    return std::make_unique<PerRow>(make_one(RewardKind::kMath, cfg, math_rows, device, examples),
                                    make_one(RewardKind::kCode, cfg, code_rows, device, examples));
  }
  if (kind == RewardKind::kAuto)
    kind = arithmetic ? RewardKind::kLeadingInteger : rows.with_tests > 0 ? RewardKind::kCode : RewardKind::kMath;
  if (const ModelScorerRow* scorer = model_scorer(kind)) return scorer->make(cfg, device, examples);
  switch (kind) {
    case RewardKind::kExact: return std::make_unique<ExactMatch>();
    case RewardKind::kLeadingInteger: return std::make_unique<LeadingInteger>();
    case RewardKind::kMath:
      if (rows.without_answer > 0)  // graded against nothing, every sample would silently be wrong
        throw ConfigError("reward: the math verifier grades against each row's reference answer, but " +
                          rows.first_without_answer + " has none (" + std::to_string(rows.without_answer) +
                          (rows.without_answer == 1 ? " row" : " rows") + " without '" + cfg.data.answer_key + "'" +
                          (rows.with_tests > 0 ? ", rows with code tests: use reward.kind code or auto" : "") + ")");
      return std::make_unique<MathVerifier>(math_options(cfg));
    case RewardKind::kFormat: return std::make_unique<BoxedFormat>();
    case RewardKind::kToolFormat: return std::make_unique<ToolUseFormat>();
    case RewardKind::kRegex: return std::make_unique<RegexVerifier>(r.regex);
    case RewardKind::kExternal: return std::make_unique<ExternalVerifier>(r.external.command, r.external.timeout_s);
    case RewardKind::kCode: {
      if (rows.without_tests > 0)
        throw ConfigError("reward: the code verifier needs tests in every row, but " + rows.first_without + " has none (" +
                          std::to_string(rows.without_tests) + " rows without tests); use reward.kind auto to grade "
                          "rows without tests as math");
      CodeOptions o;
      o.partial = r.code.partial;
      o.python = r.code.python;
      o.limits.cpu_seconds = r.code.timeout_s;
      o.limits.wall_seconds = 2 * r.code.timeout_s + 1;
      o.limits.memory_mb = r.code.memory_mb;
      o.lcb_timeout_s = r.code.lcb_timeout_s;
      return std::make_unique<CodeVerifier>(o);
    }
    default: break;  // (auto: resolved above; the model scorers: built from their rows)
  }
  throw ConfigError(std::string("reward: no verifier for '") + config::name_of(kind) + "'");
}

// Says at start-up how many math references hold no answer (reward.math_gold extract/auto on solution text): each
// such row would give every sample reward 0, a group without a learning signal.
void warn_missing_references(const config::Config& cfg, const std::vector<data::Example>& examples) {
  const MathOptions o = math_options(cfg);
  int64_t missing = 0, math_rows = 0;
  std::string first;
  for (const auto& ex : examples) {
    if (data::row_has_code_tests(ex) || answer_holds_tests(ex.answer)) continue;  // (code rows)
    ++math_rows;
    if (reference_answer(ex.answer, o.gold)) continue;
    if (missing++ == 0) first = ex.id;
  }
  if (missing > 0)
    log::warn("{} of {} math references hold no answer that reward.math_gold={} can extract (first: {}); their "
              "samples are graded wrong", missing, math_rows, config::name_of(cfg.reward.math.gold), first);
}

// Whether `v` grades some rows as math: the math verifier, auto's choice row by row (math where a row has no tests),
// or a weighted sum holding either.
bool grades_math(const Verifier& v) {
  const auto k = v.kind();
  if (k == config::RewardKind::kMath || k == config::RewardKind::kAuto) return true;
  const auto parts = v.parts();
  return std::any_of(parts.begin(), parts.end(), [](const WeightedPart& p) { return grades_math(*p.verifier); });
}

}  // namespace

bool scores_with_models(const config::Config& cfg) {
  const auto& rows = model_scorers();
  return std::any_of(rows.begin(), rows.end(), [&](const auto& row) { return config::uses_reward(cfg, row.kind); });
}

std::unique_ptr<Verifier> make_verifier(const config::Config& cfg, const std::vector<data::Example>& examples,
                                        c10::Device device) {
  const auto rows = data::code_test_coverage(examples);
  std::unique_ptr<Verifier> v;
  if (cfg.reward.components.empty()) {
    v = make_one(cfg.reward.kind, cfg, rows, device, examples);
  } else {
    auto w = std::make_unique<Weighted>();
    for (const auto& c : cfg.reward.components) {
      const auto colon = c.rfind(':');
      const auto kind = config::parse_choice<config::RewardKind>(c.substr(0, colon));
      if (!kind) throw ConfigError("reward.components: unknown verifier in '" + c + "'");  // validate() refuses it first
      w->add(make_one(*kind, cfg, rows, device, examples), std::stod(c.substr(colon + 1)));
    }
    v = std::move(w);
  }
  if (grades_math(*v)) warn_missing_references(cfg, examples);
  return v;
}

}  // namespace gspo::reward
