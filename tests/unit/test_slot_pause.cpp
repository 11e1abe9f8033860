// Pausing and resuming rows of the decode loop (rollout/slot_hook.h), the seam of multi-turn tools: a paused row
// keeps its slot and cache and neither samples nor advances; resumed, it goes on from where it stopped. Noise is keyed
// by (row, response position), so a run whose hook pauses rows samples what a run without one samples. The two runs
// decode in different pool arrangements (rows end at other steps, compaction comes later), so they are compared with
// sample_compare.h's rule, never bitwise.
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>

#include "contract_helpers.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/slot_hook.h"
#include "helpers.h"
#include "sample_compare.h"

using namespace gspo;

namespace {

// Pauses each chosen row once it has sampled `at` tokens and resumes it `hold` synchronisation points later; records
// what it saw.
class PauseRows : public rollout::SlotHook {
 public:
  PauseRows(std::vector<int64_t> rows, int64_t at, int64_t hold) : rows_(std::move(rows)), at_(at), hold_(hold) {}
  void at_sync(rollout::SlotControl& c) override {
    ++syncs_;
    for (int64_t s = 0; s < c.num_slots(); ++s) {
      const int64_t r = c.row(s);
      if (r == rollout::SlotControl::kFree || std::find(rows_.begin(), rows_.end(), r) == rows_.end()) continue;
      auto& st = state_[r];
      if (c.paused(s)) {
        CHECK(c.step(s) == st.step);  // a paused row does not advance
        if (++st.held == hold_) c.resume(s);
      } else if (st.held == 0 && c.step(s) >= at_) {
        st.step = c.step(s);
        c.pause(s);
      }
    }
    // When every running row is paused, resume them: a tool hook would wait here for its results.
    bool moving = false;
    for (int64_t s = 0; s < c.num_slots(); ++s) moving = moving || (c.row(s) != rollout::SlotControl::kFree && !c.paused(s));
    for (int64_t s = 0; s < c.num_slots() && !moving; ++s)
      if (c.row(s) != rollout::SlotControl::kFree) c.resume(s), state_[c.row(s)].held = hold_;
  }
  int64_t held(int64_t row) const { return state_.count(row) ? state_.at(row).held : 0; }
  int64_t syncs() const { return syncs_; }

 private:
  struct Row { int64_t step = 0, held = 0; };
  std::vector<int64_t> rows_;
  int64_t at_, hold_, syncs_ = 0;
  std::map<int64_t, Row> state_;
};

struct Fixture {
  model::Policy policy = test::load_tiny("tiny.pt");
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("Hello, w"),
                                            tok->encode_prompt("a")};
  rollout::SamplingParams params{1.0, 1.0, 0, 24, {}};
  const int64_t G = 4;
  const rollout::NoiseKey key{5, 0};

  int64_t row_bytes() {
    int64_t P = 0;
    for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
    return policy.init_cache(1, P + params.max_new_tokens).nbytes();
  }
  rollout::RolloutBatch run(const rollout::SamplingParams& p, rollout::SlotHook* hook,
                            rollout::SamplerStats* stats = nullptr) {
    rollout::Sampler s(policy, *tok, p);
    s.set_hook(hook);
    auto b = s.generate(prompts, G, key);
    if (stats) *stats = s.last_stats();
    return b;
  }
};

}  // namespace

TEST_CASE("a paused row keeps its slot and, resumed, samples what it would have sampled", "[rollout][kv][pause]") {
  Fixture f;
  for (int64_t every : {1, 3}) {
    INFO("host_sync_every " << every);
    auto p = f.params;
    p.kv_cache_bytes = 5 * f.row_bytes();  // 12 rows through 5 slots: refills happen while rows are paused
    p.host_sync_every = every;
    rollout::SamplerStats plain_st, paused_st;
    auto plain = f.run(p, nullptr, &plain_st);
    REQUIRE(plain_st.slots == 5);
    PauseRows hook({1, 6, 11}, 3, 4);
    auto paused = f.run(p, &hook, &paused_st);
    for (int64_t r : {1, 6, 11}) {
      INFO("row " << r);
      // A row that ended before its pause point was never paused; the tiny model's rows run long at 24 tokens.
      if (plain.response_lengths[r] > 4) CHECK(hook.held(r) >= 1);
    }
    CHECK(hook.syncs() > 0);
    auto margin = test::cdf_margins(f.policy, plain, f.key, 1.0, 0);
    int64_t agreed = 0;
    for (int64_t r = 0; r < plain.num_rows(); ++r) agreed += test::same_row(plain, r, paused, r, margin);
    CHECK(agreed * 4 > plain.num_rows() * 3);
    CHECK(paused_st.decode_steps > plain_st.decode_steps);  // the paused rows' slots waited
  }
}

TEST_CASE("pausing needs the slot layout, and a loop whose rows are all paused for good throws", "[rollout][kv][pause]") {
  Fixture f;
  struct PauseAll : rollout::SlotHook {
    void at_sync(rollout::SlotControl& c) override {
      for (int64_t s = 0; s < c.num_slots(); ++s)
        if (c.row(s) != rollout::SlotControl::kFree && !c.paused(s)) c.pause(s);
    }
  } all;
  SECTION("a static batch shares one column: no row can wait") {
    CHECK_THROWS_AS(f.run(f.params, &all), std::logic_error);
  }
  SECTION("continuous batching: nothing could resume them") {
    auto p = f.params;
    p.kv_cache_bytes = 5 * f.row_bytes();  // every slot paused while rows wait: none can get a slot
    CHECK_THROWS_WITH(f.run(p, &all), Catch::Contains("paused"));
  }
}

namespace {

// At its first sync with `at` tokens sampled, row `row` is paused and `tokens` written into its response; the next
// sync resumes it (a tool call and its result, in miniature).
class InsertTokens : public rollout::SlotHook {
 public:
  InsertTokens(int64_t row, int64_t at, std::vector<int64_t> tokens) : row_(row), at_(at), tokens_(std::move(tokens)) {}
  void at_sync(rollout::SlotControl& c) override {
    for (int64_t s = 0; s < c.num_slots(); ++s) {
      if (c.row(s) != row_) continue;
      if (c.paused(s)) {
        c.resume(s);
      } else if (taken_ < 0 && c.step(s) >= at_) {
        step_ = c.step(s);
        c.pause(s);
        taken_ = c.append(s, tokens_);
      }
    }
  }
  int64_t row_, at_;
  std::vector<int64_t> tokens_;
  int64_t step_ = -1, taken_ = -1;
};

}  // namespace

TEST_CASE("tokens a hook writes into a response are the model's context but not its own", "[rollout][kv][pause]") {
  Fixture f;
  auto p = f.params;
  p.kv_cache_bytes = 5 * f.row_bytes();
  p.insert_capacity = 8;
  auto inserted = f.tok->encode("<tool>7</tool>");
  REQUIRE(inserted.size() > 3);
  rollout::SamplerStats plain_st, st;
  auto plain = f.run(p, nullptr, &plain_st);
  REQUIRE(plain.response_lengths[6] > 4);  // the row runs past the insertion point without it
  InsertTokens hook(6, 3, inserted);
  auto b = f.run(p, &hook, &st);
  REQUIRE(hook.step_ >= 3);
  const int64_t k = hook.step_, taken = hook.taken_;
  // The room: positions 8 + 24 less the k + 1 sampled and one kept for the model's next token.
  CHECK(taken == std::min<int64_t>(static_cast<int64_t>(inserted.size()), 8 + 24 - 2 - k));
  CHECK(st.inserted_tokens == taken);
  CHECK(st.inserted_truncated == static_cast<int64_t>(inserted.size()) - taken);
  // The response: the model's tokens up to k, then the inserted ones, then the model's again.
  const auto& ids = b.response_ids[6];
  REQUIRE(static_cast<int64_t>(ids.size()) > k + 1 + taken);
  for (int64_t j = 0; j <= k; ++j) CHECK(ids[j] == plain.response_ids[6][j]);
  for (int64_t j = 0; j < taken; ++j) CHECK(ids[k + 1 + j] == inserted[j]);
  auto lm = b.loss_mask.accessor<float, 2>();
  auto bl = b.behaviour_logprobs.accessor<float, 2>();
  for (int64_t j = 0; j < static_cast<int64_t>(ids.size()); ++j) {
    const bool own = j <= k || j > k + taken;
    CHECK(lm[6][j] == (own ? 1.0f : 0.0f));
    if (!own) CHECK(bl[6][j] == 0.0f);
  }
  CHECK(b.trained_tokens()[6] == static_cast<int64_t>(ids.size()) - taken);
  // At most max_new_tokens of the model's own.
  CHECK(b.trained_tokens()[6] <= p.max_new_tokens);
  // Every token the model sampled, the ones after the insertion included, has the log-prob a full forward over the
  // finished sequences gives it: the inserted tokens sit in the cache at their columns and positions.
  auto lp = test::response_logprobs(f.policy, b.input_ids, b.attention_mask, b.prompt_len, 1.0);
  CHECK(((lp - b.behaviour_logprobs) * b.loss_mask).abs().max().item<double>() < 1e-4);
  // Other rows sample what they sample without the hook.
  auto margin = test::cdf_margins(f.policy, plain, f.key, 1.0, 0);
  int64_t agreed = 0;
  for (int64_t r = 0; r < plain.num_rows(); ++r)
    if (r != 6) agreed += test::same_row(plain, r, b, r, margin);
  CHECK(agreed * 4 > (plain.num_rows() - 1) * 3);
}

TEST_CASE("a hook's tokens are truncated to the row's room and counted", "[rollout][kv][pause]") {
  Fixture f;
  auto p = f.params;
  p.kv_cache_bytes = 5 * f.row_bytes();
  p.insert_capacity = 4;
  std::vector<int64_t> flood(100, f.tok->encode("x").at(0));
  InsertTokens hook(6, 3, flood);  // row 6 runs past 3 tokens (the test above requires it)
  rollout::SamplerStats st;
  auto b = f.run(p, &hook, &st);
  REQUIRE(hook.step_ >= 3);
  const int64_t room = p.max_new_tokens + p.insert_capacity - 2 - hook.step_;
  CHECK(hook.taken_ == room);
  CHECK(st.inserted_tokens == room);
  CHECK(st.inserted_truncated == 100 - room);
  // Room for one more model token (which may be EOS), then the positions run out.
  CHECK(b.response_ids[6].size() == static_cast<size_t>(p.max_new_tokens + p.insert_capacity));
  CHECK(b.finish[6] != rollout::Finish::kStop);
}

namespace {

// A turn token in miniature: each row that samples `tok` has `obs` written after it and goes on, until its
// `max_turns`-th turn, which ends it (Finish::kMaxTurns). Records what tokens() gave at each turn end.
class Turns : public rollout::SlotHook {
 public:
  Turns(int64_t tok, std::vector<int64_t> obs, int64_t max_turns) : tok_(tok), obs_(std::move(obs)), max_(max_turns) {}
  int64_t turn_token() const override { return tok_; }
  void at_sync(rollout::SlotControl& c) override {
    for (int64_t s = 0; s < c.num_slots(); ++s) {
      const int64_t r = c.row(s);
      if (r == rollout::SlotControl::kFree || !c.turn_ended(s)) continue;
      CHECK(c.paused(s));
      seen_[r] = c.tokens(s);
      CHECK(seen_[r].back() == tok_);
      if (++turns_[r] >= max_) {
        c.end(s, rollout::Finish::kMaxTurns);
      } else {
        c.append(s, obs_);
        c.resume(s);
      }
    }
  }
  int64_t tok_;
  std::vector<int64_t> obs_;
  int64_t max_;
  std::map<int64_t, int64_t> turns_;
  std::map<int64_t, std::vector<int64_t>> seen_;
};

// The token the rows of `b` sample most often (EOS aside).
int64_t most_sampled(const rollout::RolloutBatch& b, int64_t eos) {
  std::map<int64_t, int64_t> n;
  for (const auto& ids : b.response_ids)
    for (auto id : ids)
      if (id != eos) ++n[id];
  return std::max_element(n.begin(), n.end(), [](auto& a, auto& c) { return a.second < c.second; })->first;
}

}  // namespace

TEST_CASE("a turn token pauses its row on the device, the hook appends and resumes or ends it", "[rollout][kv][pause]") {
  Fixture f;
  auto plain = f.run(f.params, nullptr);
  const int64_t tok = most_sampled(plain, f.tok->eos_id());
  const auto obs = f.tok->encode("<r>42</r>");
  for (int64_t every : {1, 3}) {  // 3: rows pause on the device between syncs; the host learns at the next one
    for (int64_t budget_rows : {0, 5}) {
      INFO("host_sync_every " << every << ", budget rows " << budget_rows);
      auto p = f.params;
      p.host_sync_every = every;
      p.kv_cache_bytes = budget_rows * f.row_bytes();  // 0: no budget, still the slot layout (rows must wait)
      p.insert_capacity = 2 * static_cast<int64_t>(obs.size());
      Turns hook(tok, obs, 2);
      rollout::SamplerStats st;
      auto b = f.run(p, &hook, &st);
      int64_t ended_by_turns = 0;
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        INFO("row " << r);
        const auto& ids = b.response_ids[r];
        auto lm = b.loss_mask[r];
        // Walk the response: every own turn token is followed by the observation (cut only by the room) or ends it.
        int64_t turns = 0;
        for (size_t j = 0; j < ids.size(); ++j) {
          if (lm[j].item<float>() == 0.0f || ids[j] != tok) continue;
          ++turns;
          if (turns == 2 || j + 1 == ids.size()) break;
          for (size_t k = 0; k < obs.size() && j + 1 + k < ids.size(); ++k) {
            CHECK(ids[j + 1 + k] == obs[k]);
            CHECK(lm[j + 1 + k].item<float>() == 0.0f);
          }
        }
        CHECK(turns == (hook.turns_.count(r) ? hook.turns_.at(r) : 0));
        if (b.finish[r] == rollout::Finish::kMaxTurns) {
          ++ended_by_turns;
          CHECK(turns == 2);
          CHECK(ids.back() == tok);
          CHECK(hook.seen_.at(r) == ids);  // tokens() gave the whole response at its last turn end
        }
      }
      CHECK(ended_by_turns > 0);
      CHECK(st.inserted_tokens > 0);
      // Every sampled token's log-prob is what a full forward over the finished sequences gives: the paused rows'
      // cache columns and positions stayed right while the device paused them ahead of the host.
      auto lp = test::response_logprobs(f.policy, b.input_ids, b.attention_mask, b.prompt_len, 1.0);
      CHECK(((lp - b.behaviour_logprobs) * b.loss_mask).abs().max().item<double>() < 1e-4);
    }
  }
}

namespace {

// Writes into the rows: an even row, at step 2, as many tokens as its room takes (long); an odd row one token at every
// sync from step 8 on. Rows that start late (under a budget) are at step 2 while earlier ones are past step 8: both
// in one sync. Counts the rows whose columns left would not hold the sync's longest append (one append_slots call
// pads every row to it).
class Uneven : public rollout::SlotHook {
 public:
  Uneven(int64_t fill, int64_t span) : fill_(fill), span_(span) {}
  void at_sync(rollout::SlotControl& c) override {
    std::vector<std::pair<int64_t, int64_t>> step_len;
    for (int64_t s = 0; s < c.num_slots(); ++s) {
      const int64_t r = c.row(s);
      if (r == rollout::SlotControl::kFree) continue;
      const bool even = r % 2 == 0;
      if (even ? c.step(s) != 2 : c.step(s) < 8 || c.room(s) == 0) continue;
      const int64_t n = even ? c.room(s) : 1;
      c.append(s, std::vector<int64_t>(n, fill_));
      step_len.push_back({c.step(s), n});
      inserted_[r] += n;
    }
    int64_t longest = 0;
    for (auto [step, n] : step_len) longest = std::max(longest, n);
    for (auto [step, n] : step_len) mixed_ += longest > span_ - step;
  }
  int64_t fill_, span_, mixed_ = 0;
  std::map<int64_t, int64_t> inserted_;
};

}  // namespace

TEST_CASE("appends of different lengths in one sync stay inside each row's cache", "[rollout][kv][pause]") {
  Fixture f;
  auto p = f.params;
  p.insert_capacity = 0;  // the cache holds prompt + max_new_tokens columns: no slack for padding
  p.kv_cache_bytes = 5 * f.row_bytes();
  p.host_sync_every = 1;
  Uneven hook(f.tok->encode("x").at(0), p.max_new_tokens);
  auto b = f.run(p, &hook);
  CHECK(hook.mixed_ > 0);  // the case occurred: under one padded call, a row's write would pass its last column
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const int64_t inserted = static_cast<int64_t>(b.response_ids[r].size()) - b.trained_tokens()[r];
    CHECK(inserted == (hook.inserted_.count(r) ? hook.inserted_.at(r) : 0));
  }
  auto lp = test::response_logprobs(f.policy, b.input_ids, b.attention_mask, b.prompt_len, 1.0);
  CHECK(((lp - b.behaviour_logprobs) * b.loss_mask).abs().max().item<double>() < 1e-4);
}
