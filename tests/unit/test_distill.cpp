// On-policy distillation (#69): the per-token advantage against the formula computed by hand, the teacher's and the
// student's log-probs and the terms against transformers (tests/golden/distill_reference.py: a random Qwen3 teacher
// and student with the real Qwen3 tokenizer, 1e-4), the rows the teacher cannot score, and the start-up refusals.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>

#include "gspo/algo/distill.h"
#include "gspo/config/options.h"
#include "gspo/io/model_load.h"
#include "gspo/tokenizer/byte_tokenizer.h"
#include "gspo/train/head_logprobs.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/metrics/metrics.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/setup/teacher.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/teacher_term.h"
#include "helpers.h"

using namespace gspo;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The formula of docs/algorithm.md, element by element in double.
double by_hand(double a_i, double t, double o, double m, const config::DistillOptions& d) {
  if (m == 0) return 0;
  double diff = t - o;
  if (d.clip > 0) diff = std::max(-d.clip, std::min(d.clip, diff));
  return d.reward_weight * a_i + d.coef * diff;
}

torch::Tensor rows_of(const nlohmann::json& j, torch::ScalarType type) {
  std::vector<torch::Tensor> rows;
  for (const auto& r : j) rows.push_back(torch::tensor(r.get<std::vector<double>>(), torch::kDouble));
  return torch::stack(rows).to(type);
}

// The Qwen3 models and their tokenizer come from ../shared: without it, the skip marker ctest counts (nothing else).
bool qwen3_or_skip() { return test::shared_data_or_skip(test::shared_path("data/tokenizers/qwen3/tokenizer.json")); }

// tests/golden/distill_reference.py's cases (make_distill_golden, run whenever ../shared has the Qwen3 tokenizer).
std::optional<nlohmann::json> distill_golden() {
  if (!qwen3_or_skip()) return std::nullopt;
  std::ifstream f(test::model_path("distill_cases.json"));
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

io::LoadedModel load(const std::string& name) {
  io::ModelLoad what;
  what.file = test::model_path(name);
  what.frozen = true;
  what.check_contract = false;
  return io::load_model(what);
}

}  // namespace

TEST_CASE("distill_advantages: reward_weight x A_i + coef x clip(teacher - old) on trained tokens, by hand",
          "[distill]") {
  torch::manual_seed(3);
  const int64_t n = 5, R = 7;
  auto t = torch::randn({n, R}) - 2, o = torch::randn({n, R}) - 2;
  auto mask = (torch::rand({n, R}) > 0.25).to(torch::kFloat);
  mask.index_put_({torch::indexing::Slice(), 0}, 1.0);
  t[2][3] = kNaN;  // a trained token: row 2 fails
  mask[4][6] = 0;
  t[4][6] = std::numeric_limits<float>::infinity();  // an untrained one: row 4 keeps its teacher term
  const auto seq = torch::tensor({0.5, -1.0, 2.0, 0.0, 1.5}, torch::kFloat);
  for (const auto& [coef, rw, clip] : {std::tuple{1.0, 0.0, 0.0}, {0.7, 0.4, 0.0}, {2.0, 1.0, 0.3}}) {
    config::DistillOptions d;
    d.coef = coef, d.reward_weight = rw, d.clip = clip;
    const auto got = algo::distill_advantages(seq, t, o, mask, d);
    auto ga = got.advantages.to(torch::kDouble);
    double kl = 0, tokens = 0, teacher_abs = 0, reward_abs = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < R; ++j) {
        const double m = mask[i][j].item<double>(), a = seq[i].item<double>();
        const double tt = t[i][j].item<double>(), oo = o[i][j].item<double>();
        const bool failed = i == 2;
        const double want = failed ? rw * a * m : by_hand(a, tt, oo, m, d);
        INFO("coef " << coef << " rw " << rw << " clip " << clip << " at " << i << "," << j);
        CHECK(ga[i][j].item<double>() == Approx(want).margin(1e-6));
        if (!failed && m > 0) {
          kl += oo - tt, tokens += 1, reward_abs += std::abs(rw * a);
          teacher_abs += std::abs(by_hand(0, tt, oo, m, d));
        } else if (m > 0) {
          reward_abs += std::abs(rw * a);
        }
      }
    CHECK(got.failed_rows == 1);
    CHECK(got.tokens == tokens);
    CHECK(got.kl_sum == Approx(kl).margin(1e-5));
    CHECK(got.teacher_abs == Approx(teacher_abs).margin(1e-5));
    CHECK(got.reward_abs == Approx(reward_abs).margin(1e-5));
  }
}

TEST_CASE("teacher and student log-probs and the distillation terms equal transformers' (random Qwen3s, 1e-4)",
          "[distill]") {
  const auto golden = distill_golden();
  if (!golden) return;
  const auto& g = *golden;
  auto student = load("qwen3_tiny.pt");
  const int64_t P = g["prompt_len"];
  const double T = g["temperature"];
  train::Micro mi;
  mi.ids = rows_of(g["ids"], torch::kLong);
  mi.mask = rows_of(g["mask"], torch::kLong);
  mi.loss_mask = rows_of(g["loss_mask"], torch::kFloat);
  mi.real_tokens = mi.mask.sum().item<int64_t>();
  const auto want_t = rows_of(g["teacher_lp"], torch::kDouble), want_s = rows_of(g["student_lp"], torch::kDouble);
  const auto real = mi.mask.narrow(1, P, mi.mask.size(1) - P).to(torch::kDouble);
  for (bool layers : {true, false}) {  // the per-layer pass (chunked head) and the forward path
    train::LogprobPass pass{layers, false, layers};
    auto s = train::response_logprobs(*student.policy, mi.ids, mi.mask, P, T, train::Entropy::kSkip, 8, pass);
    CHECK(((s.logprobs.to(torch::kDouble) - want_s) * real).abs().max().item<double>() < 1e-4);
  }
  mi.old_lp = train::response_logprobs(*student.policy, mi.ids, mi.mask, P, T, train::Entropy::kSkip).logprobs;
  for (const auto& c : g["cases"]) {
    config::Config cfg;
    cfg.rollout.temperature = T;
    cfg.distill.teacher = test::model_path("qwen3_teacher.pt");
    cfg.distill.coef = c["coef"], cfg.distill.reward_weight = c["reward_weight"], cfg.distill.clip = c["clip"];
    cfg.distill.dtype = config::ScoreDtype::kFloat32;
    auto teacher = load("qwen3_teacher.pt");
    train::TeacherTerm term(cfg, *teacher.policy);
    mi.advantages = torch::tensor(g["seq_adv"].get<std::vector<double>>(), torch::kFloat);
    term.apply(mi, P);
    const auto want = rows_of(c["advantages"], torch::kDouble);
    INFO("coef " << c["coef"] << " reward_weight " << c["reward_weight"] << " clip " << c["clip"]);
    CHECK(mi.advantages.sizes() == want.sizes());
    CHECK((mi.advantages.to(torch::kDouble) - want).abs().max().item<double>() < 1e-4);
    train::StepMetrics m;
    term.take(m);
    CHECK(m.distill_kl.value() == Approx(c["kl_mean"].get<double>()).margin(1e-4));
    CHECK(m.distill_share.value() == Approx(c["teacher_share"].get<double>()).margin(1e-4));
    CHECK(m.distill_failed_rows == 0);
    CHECK(m.distill_long_rows == 0);
    CHECK(m.teacher_tokens == mi.real_tokens);
  }
}

TEST_CASE("rows the teacher cannot score keep their reward term and are counted: past its context, NaN", "[distill]") {
  if (!qwen3_or_skip()) return;
  auto teacher = load("qwen3_teacher.pt");
  const int64_t context = teacher.policy->manifest().max_seq_len, P = 6, R = context;  // (row 1 reaches P + R)
  REQUIRE(context > 0);
  train::Micro mi;
  mi.ids = torch::randint(1000, 5000, {3, P + R}, torch::kLong);
  mi.mask = torch::ones({3, P + R}, torch::kLong);
  mi.mask.narrow(1, P + 20, R - 20).narrow(0, 0, 1).zero_();  // row 0: 20 response tokens
  mi.mask.narrow(1, P + 9, R - 9).narrow(0, 2, 1).zero_();    // row 2: 9
  mi.loss_mask = mi.mask.narrow(1, P, R).to(torch::kFloat);
  mi.real_tokens = mi.mask.sum().item<int64_t>();
  mi.old_lp = torch::randn({3, R}) - 10;  // (any student's: the terms are differences against it)
  const auto seq = torch::tensor({1.0, -2.0, 0.5}, torch::kFloat);
  config::Config cfg;
  cfg.distill.teacher = "teacher";
  cfg.distill.reward_weight = 0.25;
  for (bool nan_fault : {false, true}) {
    train::TeacherTerm term(cfg, *teacher.policy, nan_fault);
    mi.advantages = seq.clone();
    term.apply(mi, P);
    // Row 1 (P + R tokens, past the context) and with the fault row 0 (NaN): 0.25 x A_i on every trained token.
    for (int64_t i : nan_fault ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1}) {
      const auto want = 0.25 * seq[i].item<double>() * mi.loss_mask[i].to(torch::kDouble);
      CHECK((mi.advantages[i].to(torch::kDouble) - want).abs().max().item<double>() < 1e-7);
    }
    // Row 2 is scored as alone in a batch of its own width: the teacher's log-probs of its 9 tokens.
    const auto alone = train::response_logprobs(*teacher.policy, mi.ids.narrow(0, 2, 1).narrow(1, 0, P + 9),
                                                mi.mask.narrow(0, 2, 1).narrow(1, 0, P + 9), P, 1.0,
                                                train::Entropy::kSkip).logprobs[0];
    const auto want2 = 0.25 * 0.5 + (alone - mi.old_lp[2].narrow(0, 0, 9));
    CHECK((mi.advantages[2].narrow(0, 0, 9) - want2).abs().max().item<double>() < 1e-4);
    CHECK(torch::isfinite(mi.advantages).all().item<bool>());
    train::StepMetrics m;
    term.take(m);
    CHECK(m.distill_long_rows == 1);
    CHECK(m.distill_failed_rows == (nan_fault ? 1 : 0));
    CHECK(m.distill_kl.count == (nan_fault ? 9 : 29));
  }
}

TEST_CASE("the first id whose token differs between two tokenizers is found", "[distill]") {
  const tokenizer::ByteTokenizer a({{"<|eos|>", 256}, {"<|bos|>", 257}, {"<|pad|>", 258}}, false);
  const tokenizer::ByteTokenizer same({{"<|eos|>", 256}, {"<|bos|>", 257}, {"<|pad|>", 258}}, false);
  const tokenizer::ByteTokenizer swapped({{"<|bos|>", 256}, {"<|eos|>", 257}, {"<|pad|>", 258}}, false);
  const tokenizer::ByteTokenizer shorter({{"<|eos|>", 256}, {"<|bos|>", 257}}, false);
  CHECK(train::first_token_difference(a, same, 259) == -1);
  CHECK(train::first_token_difference(a, swapped, 259) == 256);
  CHECK(train::first_token_difference(a, shorter, 259) == 258);
  CHECK(train::first_token_difference(a, shorter, 258) == -1);
}

TEST_CASE("a teacher with another vocabulary, or no policy at all, is refused at start-up naming it", "[distill]") {
  if (!qwen3_or_skip()) return;

  auto student = load("qwen3_tiny.pt");
  config::Config cfg;
  cfg.model.path = test::model_path("qwen3_tiny.pt");
  const auto error_of = [&](const std::string& teacher) {
    cfg.distill.teacher = teacher;
    try {
      train::load_teacher(cfg, c10::Device(c10::kCPU), *student.tok, *student.policy);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(error_of(test::model_path("qwen3_teacher.pt")) == "<no error>");
  const auto narrow = error_of(test::model_path("tiny.pt"));
  CHECK_THAT(narrow, Catch::Contains("distill.teacher") && Catch::Contains("259 token ids, fewer than the 151936"));
  const auto not_model = error_of(test::model_path("not_torchscript.pt"));
  CHECK_THAT(not_model, Catch::Contains("not_torchscript.pt"));
  const auto reward = error_of(test::model_path("reward/reward_qwen3.pt"));
  CHECK_THAT(reward, Catch::Contains("reward_qwen3.pt"));
}

TEST_CASE("distill.teacher needs a token-level loss", "[distill][config]") {
  const std::string yaml = "model: {path: m.pt}\ndistill: {teacher: t.pt}\n";
  CHECK_THAT(test::config_error_of(yaml), Catch::Contains("distill.teacher") && Catch::Contains("gspo_token"));
  CHECK(test::config_error_of(yaml, {"algorithm.loss=gspo_token"}) == "<no error>");
  CHECK(test::config_error_of(yaml, {"algorithm.loss=grpo", "distill.coef=0"}).find("distill.coef") !=
        std::string::npos);
}

TEST_CASE("log-probs of K targets a row from one head pass equal autograd's, forward and backward", "[distill]") {
  torch::manual_seed(5);
  const double T = 0.8;
  auto h = torch::randn({7, 5}, torch::dtype(torch::kFloat).requires_grad(true));
  auto w = torch::randn({11, 5}, torch::dtype(torch::kFloat).requires_grad(true));
  auto b = torch::randn({11}, torch::dtype(torch::kFloat).requires_grad(true));
  const auto targets = torch::randint(0, 11, {7, 3}, torch::kLong);
  const auto c = torch::randn({7, 3});
  auto got = train::head_logprobs(h, w, b, targets, T, 3).logprobs;  // chunks of 3 rows
  auto want = torch::log_softmax(at::linear(h, w, b) / T, -1).gather(-1, targets);
  CHECK((got - want).abs().max().item<double>() < 1e-5);
  const auto g_got = torch::autograd::grad({(got * c).sum()}, {h, w, b});
  const auto g_want = torch::autograd::grad({(want * c).sum()}, {h, w, b});
  for (size_t i = 0; i < 3; ++i) CHECK((g_got[i] - g_want[i]).abs().max().item<double>() < 1e-5);
  // The rollout-layout form: pred [n, R, V], targets [n, R, K], a chunk of rows at a time.
  auto pred = torch::randn({3, 4, 11}, torch::dtype(torch::kFloat).requires_grad(true));
  const auto t3 = torch::randint(0, 11, {3, 4, 2}, torch::kLong);
  const auto c3 = torch::randn({3, 4, 2});
  auto lp = train::token_logprobs(pred, t3, T, 4);
  auto ref = torch::log_softmax(pred / T, -1).gather(-1, t3);
  CHECK((lp - ref).abs().max().item<double>() < 1e-5);
  const auto gp = torch::autograd::grad({(lp * c3).sum()}, {pred})[0];
  const auto gr = torch::autograd::grad({(ref * c3).sum()}, {pred})[0];
  CHECK((gp - gr).abs().max().item<double>() < 1e-5);
}

TEST_CASE("the top-k divergences over the whole vocabulary are the exact ones, with autograd's gradient",
          "[distill]") {
  torch::manual_seed(9);
  const int64_t n = 2, R = 3, V = 6;
  auto logits = torch::randn({n, R, V}, torch::dtype(torch::kDouble).requires_grad(true));
  const auto t_logits = torch::randn({n, R, V}, torch::kDouble) * 2;
  const auto mask = torch::tensor({1.0, 0.0, 1.0, 1.0, 1.0, 0.0}, torch::kDouble).view({n, R});
  const auto p_t = torch::log_softmax(t_logits, -1);
  const auto ids = std::get<1>(p_t.topk(V, -1));  // S = every id, in the teacher's order
  for (const auto obj : {config::DistillObjective::kForwardKl, config::DistillObjective::kJsd}) {
    for (double beta : {0.5, 0.2}) {
      const auto p_s = torch::log_softmax(logits, -1);
      auto got = algo::topk_divergence(p_s.gather(-1, ids), p_t.gather(-1, ids), mask, obj, beta);
      at::Tensor d;  // directly over the vocabulary
      if (obj == config::DistillObjective::kForwardKl) {
        d = (p_t.exp() * (p_t - p_s)).sum(-1);
      } else {
        const auto mix = (beta * p_t.exp() + (1 - beta) * p_s.exp()).log();
        d = beta * (p_t.exp() * (p_t - mix)).sum(-1) + (1 - beta) * (p_s.exp() * (p_s - mix)).sum(-1);
      }
      const auto want = (d * mask).sum(1) / mask.sum(1);
      INFO("objective " << static_cast<int>(obj) << " beta " << beta);
      CHECK((got - want).abs().max().item<double>() < 1e-10);
      const auto c = torch::tensor({0.7, -1.3}, torch::kDouble);
      const auto g_got = torch::autograd::grad({(got * c).sum()}, {logits}, {}, /*retain_graph=*/true)[0];
      const auto g_want = torch::autograd::grad({(want * c).sum()}, {logits})[0];
      CHECK((g_got - g_want).abs().max().item<double>() < 1e-10);
    }
  }
}

TEST_CASE("the teacher's top-k and the student's divergence over it equal transformers' (random Qwen3s, 1e-4)",
          "[distill]") {
  const auto golden = distill_golden();
  if (!golden) return;
  const auto& g = *golden;
  auto student = load("qwen3_tiny.pt");
  auto teacher = load("qwen3_teacher.pt");
  const int64_t P = g["prompt_len"], K = g["top_k"];
  const double T = g["temperature"];
  train::Micro base;
  base.ids = rows_of(g["ids"], torch::kLong);
  base.mask = rows_of(g["mask"], torch::kLong);
  base.loss_mask = rows_of(g["loss_mask"], torch::kFloat);
  base.real_tokens = base.mask.sum().item<int64_t>();
  base.old_lp = train::response_logprobs(*student.policy, base.ids, base.mask, P, T, train::Entropy::kSkip).logprobs;
  const auto real = base.mask.narrow(1, P, base.mask.size(1) - P) > 0;
  for (const auto& c : g["topk_cases"]) {
    const int64_t k = c["top_k"].get<int64_t>() > 0 ? c["top_k"].get<int64_t>() : 151936;  // 0: the whole vocabulary
    config::Config cfg;
    cfg.rollout.temperature = T;
    cfg.distill.teacher = "teacher";
    cfg.distill.objective =
        c["objective"] == "jsd" ? config::DistillObjective::kJsd : config::DistillObjective::kForwardKl;
    cfg.distill.jsd_beta = c["jsd_beta"];
    cfg.distill.top_k = k;
    cfg.distill.reward_weight = 0.5;
    train::TeacherTerm term(cfg, *teacher.policy);
    auto mi = base;
    mi.advantages = torch::tensor(g["seq_adv"].get<std::vector<double>>(), torch::kFloat);
    term.apply(mi, P);
    INFO(c["objective"] << " beta " << c["jsd_beta"] << " top_k " << k);
    CHECK((mi.advantages - 0.5 * torch::tensor(g["seq_adv"].get<std::vector<double>>(), torch::kFloat))
              .abs().max().item<double>() < 1e-7);
    REQUIRE(mi.teacher_ids.size(2) == k);
    if (k == K) {  // the top-k against transformers' (ids exactly, log-probs 1e-4), on the real positions
      std::vector<torch::Tensor> lp_rows, id_rows;
      for (const auto& r : g["teacher_top_lp"]) lp_rows.push_back(rows_of(r, torch::kDouble));
      for (const auto& r : g["teacher_top_ids"]) id_rows.push_back(rows_of(r, torch::kLong));
      const auto want_lp = torch::stack(lp_rows);
      CHECK(((mi.teacher_lp.to(torch::kDouble) - want_lp).abs() * real.unsqueeze(-1)).max().item<double>() < 1e-4);
      CHECK((torch::stack(id_rows) != mi.teacher_ids).logical_and(real.unsqueeze(-1)).sum().item<int64_t>() == 0);
    }
    for (bool layers : {true, false}) {
      train::LogprobPass pass{layers, false, layers};
      auto tl = train::response_logprobs(*student.policy, mi.ids, mi.mask, P, T, train::Entropy::kSkip, 64, pass, {},
                                         {}, mi.teacher_ids);
      CHECK(((tl.logprobs - base.old_lp) * real).abs().max().item<double>() < 1e-5);  // the sampled column as before
      const auto d = term.loss_term(tl.extra, mi);  // coef 1
      const auto want = torch::tensor(c["per_sequence"].get<std::vector<double>>(), torch::kDouble);
      const double scale = std::max(1.0, want.abs().max().item<double>());  // (forward KL over top-8: ~10)
      CHECK((d.to(torch::kDouble) - want).abs().max().item<double>() < 1e-4 * scale);
    }
  }
}

TEST_CASE("distill.clip is reverse_kl's, and forward_kl and jsd take any loss", "[distill][config]") {
  const std::string yaml = "model: {path: m.pt}\ndistill: {teacher: t.pt, objective: jsd}\n";
  CHECK(test::config_error_of(yaml) == "<no error>");  // (algorithm.loss gspo: the divergence is a loss of its own)
  CHECK_THAT(test::config_error_of(yaml, {"distill.clip=1"}), Catch::Contains("distill.clip clips reverse_kl"));
  CHECK_THAT(test::config_error_of(yaml, {"distill.jsd_beta=1"}), Catch::Contains("in (0, 1)"));
}

namespace {

// Two groups of two rows in the rollout layout (raw prompts, left-padded; responses of 5, 3, 7 and 1 tokens), their
// examples 0 and 1: what a step's Scored holds.
train::Scored two_groups(const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples) {
  const std::vector<std::vector<int64_t>> prompts{tok.encode_prompt(examples[0].prompt),
                                                  tok.encode_prompt(examples[1].prompt)};
  const std::vector<std::vector<int64_t>> responses{{51, 52, 53, 54, 258}, {55, 56, 258}, {57, 58, 59, 60, 61, 62, 258},
                                                    {258}};
  const int64_t P = static_cast<int64_t>(std::max(prompts[0].size(), prompts[1].size())), R = 7, n = 4;
  train::Scored s;
  auto& b = s.batch;
  b.input_ids = torch::full({n, P + R}, 256, torch::kLong);
  b.attention_mask = torch::zeros({n, P + R}, torch::kLong);
  b.loss_mask = torch::zeros({n, R});
  for (int64_t r = 0; r < n; ++r) {
    const auto& p = prompts[static_cast<size_t>(r / 2)];
    const auto& y = responses[static_cast<size_t>(r)];
    const auto q = static_cast<int64_t>(p.size()), len = static_cast<int64_t>(y.size());
    b.input_ids[r].narrow(0, P - q, q).copy_(torch::tensor(p, torch::kLong));
    b.input_ids[r].narrow(0, P, len).copy_(torch::tensor(y, torch::kLong));
    b.attention_mask[r].narrow(0, P - q, q + len).fill_(1);
    b.loss_mask[r].narrow(0, 0, len).fill_(1);
    b.response_lengths.push_back(len);
    b.finish.push_back(rollout::Finish::kEos);
    s.examples.push_back(r / 2);
  }
  b.response_mask = b.loss_mask.clone();
  b.behaviour_logprobs = torch::zeros({n, R});
  b.prompt_len = P;
  b.group_size = 2;
  return s;
}

}  // namespace

TEST_CASE("a teacher reading its own chat format scores the policy's responses after its own prompts", "[distill]") {
  // The policy reads raw prompts (data.chat_template none); the teacher the same conversations in chatml, with the
  // run's system prompt. Each row's teacher log-probs equal the teacher's over [its chatml prompt, the response]
  // computed alone, row by row (1e-5: other batch shapes).
  auto student = load("tiny.pt");
  config::Config cfg;
  cfg.model.path = test::model_path("tiny.pt");
  cfg.distill.teacher = test::model_path("tiny.pt");
  cfg.distill.chat_template = config::TeacherChat::kChatml;
  cfg.data.system_prompt = "Answer briefly.";
  const std::vector<data::Example> examples{{"a", "What is 2+3?", "5"}, {"b", "And 10*4, twice?", "80"}};
  auto teacher = train::load_teacher(cfg, c10::Device(c10::kCPU), *student.tok, *student.policy);
  REQUIRE(teacher.format.chat_template == config::ChatTemplate::kChatml);
  train::TeacherPrompts prompts(teacher.format, std::move(teacher.tok), examples, {});
  CHECK_THAT(prompts.text(1), Catch::Contains("<|im_start|>system\nAnswer briefly.<|im_end|>") &&
                                  Catch::Contains("And 10*4, twice?"));
  CHECK_THROWS_AS(prompts.ids(2), std::out_of_range);
  auto s = two_groups(*student.tok, examples);
  const auto& b = s.batch;
  const int64_t P = b.prompt_len;
  for (const auto objective : {config::DistillObjective::kReverseKl, config::DistillObjective::kForwardKl}) {
    cfg.distill.objective = objective;
    cfg.rollout.temperature = 1.0;
    train::TeacherTerm term(cfg, teacher.policy, false, &prompts);
    CHECK_THROWS_AS(term.logprobs(b.input_ids, b.attention_mask, P, {0, 1, 2, 3}), std::out_of_range);
    term.begin_step(s);
    const auto mine = term.logprobs(b.input_ids, b.attention_mask, P, {0, 1, 2, 3});
    const auto same_format = train::response_logprobs(teacher.policy, b.input_ids, b.attention_mask, P, 1.0,
                                                      train::Entropy::kSkip).logprobs;
    // The micro-batch path: rows 3, 0 and 2 (out of order), old log-probs 0, so reverse_kl's advantage is the
    // teacher's log-prob; forward_kl keeps the sampled token's among the teacher's top k only where it is there.
    auto mi = train::slice_rows(b, {3, 0, 2}, torch::zeros({4}));
    mi.old_lp = torch::zeros_like(mi.loss_mask);
    term.apply(mi, P);
    double differs = 0;
    for (int64_t r = 0; r < 4; ++r) {
      const int64_t len = b.response_lengths[static_cast<size_t>(r)];
      auto ids = prompts.ids(r / 2);
      const auto q = static_cast<int64_t>(ids.size());
      for (int64_t j = 0; j < len; ++j) ids.push_back(b.input_ids[r][P + j].item<int64_t>());
      const auto t = torch::tensor(ids, torch::kLong).unsqueeze(0);
      const auto want = train::response_logprobs(teacher.policy, t, torch::ones_like(t), q, 1.0,
                                                 train::Entropy::kSkip).logprobs[0];
      INFO("row " << r);
      CHECK((mine[r].narrow(0, 0, len) - want).abs().max().item<double>() < 1e-5);
      differs = std::max(differs, (same_format[r].narrow(0, 0, len) - want).abs().max().item<double>());
      if (objective == config::DistillObjective::kReverseKl) {
        const std::vector<int64_t> order{3, 0, 2};
        const auto at = std::find(order.begin(), order.end(), r);
        if (at != order.end())
          CHECK((mi.advantages[at - order.begin()].narrow(0, 0, len) - want).abs().max().item<double>() < 1e-5);
      }
    }
    CHECK(differs > 1e-3);  // (the format matters: the raw prompts give other log-probs)
    train::StepMetrics m;
    term.take(m);
    const auto q0 = static_cast<int64_t>(prompts.ids(0).size()), q1 = static_cast<int64_t>(prompts.ids(1).size());
    CHECK(m.teacher_tokens == (q1 + 1) + (q0 + 5) + (q1 + 7));  // (its own prompts counted, not the policy's)
    CHECK(m.distill_failed_rows == 0);
    CHECK(m.distill_long_rows == 0);
  }
}

TEST_CASE("a teacher prompt past its context fails that row only, auto needs a template, student needs no teacher",
          "[distill]") {
  auto student = load("tiny.pt");
  config::Config cfg;
  cfg.model.path = test::model_path("tiny.pt");
  cfg.distill.teacher = test::model_path("tiny.pt");
  cfg.distill.chat_template = config::TeacherChat::kChatml;
  const std::vector<data::Example> examples{{"a", "What is 2+3?", "5"}, {"b", "And 10*4, twice?", "80"}};
  auto teacher = train::load_teacher(cfg, c10::Device(c10::kCPU), *student.tok, *student.policy);
  // A system prompt that leaves example 1's teacher prompt 252 of the teacher's 256 positions (byte tokens): row 2's
  // 7 response tokens do not fit after it, rows 3 (1 token), 0 and 1 (example 0's 4 bytes shorter) do.
  teacher.format.system_prompt = "s";
  const auto base = static_cast<int64_t>(student.tok->encode_prompt(data::format_prompt(teacher.format, examples[1])).size());
  teacher.format.system_prompt = std::string(static_cast<size_t>(252 - base + 1), 's');
  train::TeacherPrompts prompts(teacher.format, std::move(teacher.tok), examples, {});
  REQUIRE(prompts.ids(1).size() == 252);
  REQUIRE(prompts.ids(0).size() == 248);
  auto s = two_groups(*student.tok, examples);
  train::TeacherTerm term(cfg, teacher.policy, false, &prompts);
  term.begin_step(s);
  auto mi = train::slice_rows(s.batch, {0, 1, 2, 3}, torch::tensor({1.0, -1.0, 0.5, -0.5}));
  mi.old_lp = torch::zeros_like(mi.loss_mask);
  term.apply(mi, s.batch.prompt_len);
  train::StepMetrics m;
  term.take(m);
  CHECK(m.distill_long_rows == 1);
  CHECK(torch::isfinite(mi.advantages).all().item<bool>());
  CHECK((mi.advantages[2] == 0).all().item<bool>());  // (reward_weight 0: nothing from the failed row)

  cfg.distill.chat_template = config::TeacherChat::kAuto;  // tiny.pt carries no template
  try {
    train::load_teacher(cfg, c10::Device(c10::kCPU), *student.tok, *student.policy);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("distill.chat_template auto") &&
                                          Catch::Contains("carries no chat template"));
  }
  const std::string yaml = "model: {path: m.pt}\ndistill: {chat_template: chatml}\n";
  CHECK_THAT(test::config_error_of(yaml), Catch::Contains("distill.chat_template chatml") &&
                                              Catch::Contains("distill.teacher is not set"));
}
