// Multi-turn episodes (env/episode.h) through the real decode loop: rows that end a turn wait on their tool calls in
// worker threads while the others decode, get the observation appended and resume; the episode's tokens are the
// model's and the tools', the tools' masked out of the loss, every log-prob what a full forward gives.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "contract_helpers.h"
#include "gspo/env/episode.h"
#include "gspo/rollout/sampler.h"
#include "helpers.h"

using namespace gspo;

namespace {

// Every turn holds one call; observations are "<o>" + outputs + "</o>" encoded.
class EveryTurnCalls : public env::ToolFormat {
 public:
  EveryTurnCalls(const tokenizer::Tokenizer& tok, int64_t turn) : tok_(tok), turn_(turn) {}
  const char* name() const override { return "test"; }
  int64_t turn_token() const override { return turn_; }
  std::vector<env::ToolCall> calls(const std::string&, const std::string& question) const override {
    env::ToolCall c;
    c.name = "echo";
    c.arguments = {{"input", question}};
    return {c};
  }
  using env::ToolFormat::observation;
  std::vector<int64_t> observation(const std::vector<std::string>& outputs,
                                   const std::vector<env::ToolCall>&) const override {
    std::string t = "<o>";
    for (const auto& o : outputs) t += o;
    return tok_.encode(t + "</o>");
  }

 private:
  const tokenizer::Tokenizer& tok_;
  int64_t turn_;
};

// Answers its input after `ms` milliseconds; counts its calls and the most running at once. Until two calls have run
// at once, a call also waits (up to 10 s) for a second one to start: with calls on worker threads while rows decode,
// another row ends its turn meanwhile however slowly the machine decodes (a loaded CI run once took 600 ms a step, and
// fixed-length calls then never met); with calls run inline, no second call can start and the test sees 1.
class SlowEcho : public env::Tool {
 public:
  explicit SlowEcho(int ms) : ms_(ms) {}
  const std::string& name() const override { return name_; }
  env::ToolResult call(const nlohmann::json& a, Clock::time_point) override {
    const int now = ++running_;
    int seen = most_;
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {}
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (most_.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    --running_;
    ++calls_;
    return {a.value("input", std::string()), false, false, ms_ / 1000.0};
  }
  std::string name_ = "echo";
  int ms_;
  std::atomic<int> running_{0}, most_{0}, calls_{0};
};

}  // namespace

TEST_CASE("episodes: calls run on workers while rows decode, observations masked, log-probs exact", "[tools][episode]") {
  auto policy = test::load_tiny("tiny.pt");
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("Hello, w")};
  rollout::SamplingParams p{1.0, 1.0, 0, 96, {}};
  const int64_t G = 4;
  // The turn token: what the rows sample most, so that most rows end turns.
  rollout::Sampler plain_s(policy, *tok, p);
  auto plain = plain_s.generate(prompts, G, {3, 0});
  std::map<int64_t, int64_t> n;
  for (const auto& ids : plain.response_ids)
    for (auto id : ids) ++n[id];
  const int64_t turn = std::max_element(n.begin(), n.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;

  constexpr int kCallMs = 30;
  auto* echo = new SlowEcho(kCallMs);
  std::vector<std::unique_ptr<env::Tool>> tools;
  tools.emplace_back(echo);
  env::ToolSet set(std::move(tools), {4, 64, 1}, *tok);
  EveryTurnCalls format(*tok, turn);
  env::EpisodeHook hook(set, format, *tok, /*max_turns=*/2, /*workers=*/4);
  hook.begin({"A", "B"}, G);
  rollout::Sampler s(policy, *tok, p);
  s.set_hook(&hook);
  auto b = s.generate(prompts, G, {3, 0});

  const auto obs_a = format.observation({"A"}), obs_b = format.observation({"B"});
  int64_t calls = 0, max_turns = 0, answered = 0;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    INFO("row " << r << ", finish " << rollout::finish_name(b.finish[r]));
    const auto& e = hook.counts().at(r);
    const auto& ids = b.response_ids[r];
    const auto& obs = r / G == 0 ? obs_a : obs_b;  // each row's tool got its own question
    int64_t own_turns = 0, inserted = 0;
    for (size_t j = 0; j < ids.size(); ++j) {
      if (b.loss_mask[r][j].item<float>() == 0.0f) {
        ++inserted;
        continue;
      }
      if (ids[j] != turn) continue;
      ++own_turns;
      if (j + 1 < ids.size() && own_turns < 2)  // the observation follows, whole
        for (size_t k = 0; k < obs.size(); ++k) CHECK(ids[j + 1 + k] == obs[k]);
    }
    // Turns begun: each ended by the turn token, and a last one ended otherwise (EOS, the length cap) after an
    // observation or in a response without calls. (Counting turn tokens only, an episode that calls and then answers
    // with EOS, the compact format's "[]{0}0", had 1 turn.)
    const auto last = static_cast<int64_t>(ids.size()) - 1;
    const bool ends_on_turn = last >= 0 && ids[last] == turn && b.loss_mask[r][last].item<float>() != 0.0f;
    CHECK(e.turns == own_turns + (ends_on_turn ? 0 : 1));
    if (!ends_on_turn && e.observation_tokens > 0) ++answered;
    CHECK(inserted == e.observation_tokens);
    // One call per turn ended before the last; each one's observation written whole, but for one that did not fit
    // the room (the episode then ends at the length cap).
    CHECK(e.calls <= e.turns);
    const int64_t written = inserted / static_cast<int64_t>(obs.size());
    CHECK(inserted == written * static_cast<int64_t>(obs.size()));
    CHECK((written == e.calls || (written + 1 == e.calls && b.finish[r] == rollout::Finish::kLength)));
    if (b.finish[r] == rollout::Finish::kMaxTurns) {
      ++max_turns;
      CHECK(e.turns == 2);
      CHECK(e.calls == 1);  // the second turn's call is not run
      CHECK(inserted == static_cast<int64_t>(obs.size()));
    }
    calls += e.calls;
  }
  CHECK(max_turns > 0);
  CHECK(answered > 0);  // rows that wrote on after an observation and ended otherwise: their last turn counts
  CHECK(calls == echo->calls_.load());
  CHECK(echo->most_.load() > 1);  // several rows' calls ran at once
  CHECK(hook.tool_seconds() >= kCallMs / 1000.0 * static_cast<double>(calls));  // wall time of each call, summed
  auto lp = test::response_logprobs(policy, b.input_ids, b.attention_mask, b.prompt_len, 1.0);
  CHECK(((lp - b.behaviour_logprobs) * b.loss_mask).abs().max().item<double>() < 1e-4);
  // The final turn, what verifiers grade: the tokens after the last observation.
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const auto& e = hook.counts().at(r);
    if (e.observation_tokens == 0) CHECK(env::final_turn_text(b, r, *tok) == b.response_text[r]);
  }
}
