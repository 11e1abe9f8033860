// Multi-turn episodes in the decode loop: the slot hook (rollout/slot_hook.h) that runs tools. When a row ends an
// assistant turn (samples the format's turn token) and the turn holds calls, the row stays paused in its slot while
// its calls run on a worker thread; the other rows keep decoding. At a later synchronisation point the observation
// tokens (tool_format.h) are appended to the row's cache and it resumes. A turn without calls ends the episode
// (Finish::kEos); a turn with calls past tools.max_turns ends it with Finish::kMaxTurns, its calls not run; an
// observation that does not fit the episode's room (rollout.max_new_tokens for model and tool tokens together) ends it
// with Finish::kLength, nothing of it written. The loop waits inside the hook only when every running row waits on
// a tool.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gspo/env/tool_format.h"
#include "gspo/env/tools.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/slot_hook.h"
#include "gspo/tokenizer/chat_template.h"

namespace gspo::env {

// One episode's tool use (what rewards see; its turns: 1, and 1 per observation written, the turn after it however
// ended) and the tokens the tools' results put into the response.
struct EpisodeCounts : reward::ToolUse {
  int64_t observation_tokens = 0;
};

// The episode's last assistant turn in `batch` row `row`: its tokens after the last tool-written one, decoded without
// special tokens (what verifiers grade when tools are on).
std::string final_turn_text(const rollout::RolloutBatch& batch, int64_t row, const tokenizer::Tokenizer& tok);

class EpisodeHook final : public rollout::SlotHook {
 public:
  // `tools` and `format` must outlive the hook. `workers` >= 1 threads run turns' calls.
  EpisodeHook(ToolSet& tools, const ToolFormat& format, const tokenizer::Tokenizer& tok, int64_t max_turns,
              int64_t workers);
  ~EpisodeHook() override;

  // Before a Sampler::generate call of `questions.size()` prompts x `group_size` rows: row r's question is
  // questions[r / group_size].
  void begin(std::vector<std::string> questions, int64_t group_size);
  // After it: per row of the call.
  const std::vector<EpisodeCounts>& counts() const { return rows_; }
  double tool_seconds() const { return tool_seconds_; }  // summed over calls
  double wait_seconds() const { return wait_seconds_; }  // the loop stood still waiting on tools

  int64_t turn_token() const override { return format_.turn_token(); }
  void at_sync(rollout::SlotControl& slots) override;

 private:
  struct Job {
    int64_t row;
    std::vector<ToolCall> calls;
    Tool::Clock::time_point asked;  // when the turn was submitted (Tool::call)
    ToolSet::Turn result;
  };
  void start_turn(rollout::SlotControl& c, int64_t slot);
  void finish_turn(rollout::SlotControl& c, Job& job);
  void work();

  ToolSet& tools_;
  const ToolFormat& format_;
  const tokenizer::Tokenizer& tok_;
  const int64_t max_turns_;
  std::vector<std::string> questions_;
  int64_t group_ = 1;
  std::vector<EpisodeCounts> rows_;
  std::vector<int64_t> turn_start_;        // per row: the response position its current turn starts at
  std::set<int64_t> waiting_;              // rows whose calls were submitted and not yet finished here
  double tool_seconds_ = 0, wait_seconds_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_, done_;  // under mu_
  bool stop_ = false;             // under mu_
  std::vector<std::thread> threads_;
};

// A run's tools, their format and the hook, from the config (tools.list not empty; the tools are started). One per
// sampler that runs episodes (training, validation, the end-of-run greedy eval, gspo eval); not thread-safe.
struct ToolEnv {
  ToolEnv(const config::Config& cfg, const tokenizer::Tokenizer& tok);

  const tokenizer::Tokenizer& tok;
  std::vector<tokenizer::ChatTool> shown;  // what the prompts' system message lists (chat formats)
  ToolSet tools;
  std::unique_ptr<ToolFormat> format;
  EpisodeHook hook;
};

// One sampling call and what its verifiers grade: the responses themselves, or with tools each episode's final
// assistant turn and its tool use.
struct Sampled {
  rollout::RolloutBatch batch;
  std::vector<std::string> final_turns;  // with tools, per row; empty without
  std::vector<reward::ToolUse> uses;     // with tools, per row; empty without
  const std::vector<std::string>& graded() const { return uses.empty() ? batch.response_text : final_turns; }
  const std::vector<reward::ToolUse>* tool_use() const { return uses.empty() ? nullptr : &uses; }  // for score_all
};

// prompts.size() x G responses through `sampler`: with `tools`, episodes (the prompts formatted with `tools->shown`
// listed; row r's question, what an empty compact call passes, is questions[r / G]; the hook set for this call only).
// The one sampling path of training, validation, the greedy eval and gspo eval.
Sampled sample(ToolEnv* tools, rollout::Sampler& sampler, const std::vector<std::vector<int64_t>>& prompts,
               std::vector<std::string> questions, int64_t G, const rollout::NoiseKey& noise);

// What prompts list as tools: `tools->shown`, or none without tools.
const std::vector<tokenizer::ChatTool>& shown_tools(const ToolEnv* tools);

// The tools of `cfg` for a sampler running `policy`, or nullptr when tools.list is empty. ConfigError, naming
// tools.list, when the policy cannot run episodes (no append_slots: docs/model-contract.md).
std::unique_ptr<ToolEnv> make_tool_env(const config::Config& cfg, const tokenizer::Tokenizer& tok,
                                       const model::Policy& policy);

}  // namespace gspo::env
