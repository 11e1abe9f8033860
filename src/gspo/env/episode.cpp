#include "gspo/env/episode.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/chat_tools.h"

namespace gspo::env {

std::string final_turn_text(const rollout::RolloutBatch& b, int64_t row, const tokenizer::Tokenizer& tok) {
  const auto& ids = b.response_ids.at(row);
  const auto own = b.loss_mask.accessor<float, 2>()[row];
  size_t from = ids.size();
  while (from > 0 && own[static_cast<int64_t>(from) - 1] != 0.0f) --from;
  return tok.decode(std::vector<int64_t>(ids.begin() + from, ids.end()));
}

EpisodeHook::EpisodeHook(ToolSet& tools, const ToolFormat& format, const tokenizer::Tokenizer& tok, int64_t max_turns,
                         int64_t workers)
    : tools_(tools), format_(format), tok_(tok), max_turns_(max_turns) {
  for (int64_t w = 0; w < std::max<int64_t>(workers, 1); ++w) threads_.emplace_back([this] { work(); });
}

EpisodeHook::~EpisodeHook() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void EpisodeHook::begin(std::vector<std::string> questions, int64_t group_size) {
  group_ = std::max<int64_t>(group_size, 1);
  rows_.assign(questions.size() * static_cast<size_t>(group_), {});
  for (auto& e : rows_) e.turns = 1;  // every episode begins with its first turn
  questions_ = std::move(questions);
  turn_start_.assign(rows_.size(), 0);
  waiting_.clear();
  tool_seconds_ = wait_seconds_ = 0;
}

// Worker threads: run the queued turns' calls, hand the results back.
void EpisodeHook::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job.result = tools_.run_calls(job.calls, job.asked);
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
}

// A row ended a turn (its number: counts.turns): its text since the turn began (the turn token left out) gives the
// calls. None ends the episode; calls past max_turns end it too; otherwise they go to the workers and the row stays
// paused.
void EpisodeHook::start_turn(rollout::SlotControl& c, int64_t slot) {
  const int64_t row = c.row(slot);
  const auto& counts = rows_.at(row);
  const auto ids = c.tokens(slot);
  const std::vector<int64_t> turn(ids.begin() + std::min<int64_t>(turn_start_.at(row), ids.size()), ids.end() - 1);
  auto calls = format_.calls(tok_.decode(turn, format_.reads_special()), questions_.at(row / group_));
  if (calls.empty()) return c.end(slot, rollout::Finish::kEos);
  if (counts.turns >= max_turns_) return c.end(slot, rollout::Finish::kMaxTurns);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({row, std::move(calls), Tool::Clock::now(), {}});
  }
  waiting_.insert(row);
  cv_.notify_all();
}

// A row's calls came back: its observation goes into its response, whole, and it resumes; one that does not fit ends
// the episode at the length cap.
void EpisodeHook::finish_turn(rollout::SlotControl& c, Job& job) {
  waiting_.erase(job.row);
  auto& counts = rows_.at(job.row);
  counts.calls += job.result.counts.calls;
  counts.errors += job.result.counts.errors;
  counts.timeouts += job.result.counts.timeouts;
  tool_seconds_ += job.result.counts.seconds;
  int64_t slot = -1;
  for (int64_t s = 0; s < c.num_slots() && slot < 0; ++s)
    if (c.row(s) == job.row) slot = s;
  if (slot < 0) return;  // (cannot happen: a row waiting on its tools keeps its slot)
  const auto ids = format_.observation(job.result.observations, job.calls);
  if (static_cast<int64_t>(ids.size()) > c.room(slot)) return c.end(slot, rollout::Finish::kLength);
  c.append(slot, ids);
  counts.observation_tokens += static_cast<int64_t>(ids.size());
  ++counts.turns;  // the turn after the observation, counted whether it ends with the turn token, EOS or the cap
  turn_start_.at(job.row) = c.step(slot) + 1 + static_cast<int64_t>(ids.size());
  c.resume(slot);
}

void EpisodeHook::at_sync(rollout::SlotControl& c) {
  for (int64_t s = 0; s < c.num_slots(); ++s)  // (a row waiting on its tools still shows turn_ended)
    if (c.row(s) != rollout::SlotControl::kFree && c.turn_ended(s) && !waiting_.count(c.row(s))) start_turn(c, s);
  // Results that are back; when every running row waits on a tool, wait for one.
  for (;;) {
    std::deque<Job> ready;
    bool idle = !waiting_.empty();
    for (int64_t s = 0; s < c.num_slots() && idle; ++s)
      idle = c.row(s) == rollout::SlotControl::kFree || c.paused(s);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (idle && done_.empty()) {
        const auto t0 = std::chrono::steady_clock::now();
        cv_.wait(lock, [&] { return !done_.empty(); });
        wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      ready.swap(done_);
    }
    for (auto& job : ready) finish_turn(c, job);
    if (ready.empty() || !idle) return;
  }
}

namespace {
std::vector<std::string> tool_names(const config::Config& cfg) {
  std::vector<std::string> names;
  for (const auto& t : cfg.tools.list) names.push_back(t.name);
  return names;
}
}  // namespace

ToolEnv::ToolEnv(const config::Config& cfg, const tokenizer::Tokenizer& tok)
    : tok(tok),
      shown(tokenizer::chat_tools(cfg.tools.list)),
      tools(ToolSet::from_config(cfg, tok)),
      format(make_tool_format(cfg, tok, tool_names(cfg))),
      hook(tools, *format, tok, cfg.tools.max_turns, cfg.tools.workers) {}

Sampled sample(ToolEnv* tools, rollout::Sampler& sampler, const std::vector<std::vector<int64_t>>& prompts,
               std::vector<std::string> questions, int64_t G, const rollout::NoiseKey& noise) {
  if (!tools) return {sampler.generate(prompts, G, noise), {}, {}};
  struct Unset {  // the sampler is shared: it runs without the hook again whatever happens here
    rollout::Sampler& s;
    ~Unset() { s.set_hook(nullptr); }
  } unset{sampler};
  tools->hook.begin(std::move(questions), G);
  sampler.set_hook(&tools->hook);
  Sampled out{sampler.generate(prompts, G, noise), {}, {}};
  for (int64_t r = 0; r < out.batch.num_rows(); ++r) out.final_turns.push_back(final_turn_text(out.batch, r, tools->tok));
  out.uses.assign(tools->hook.counts().begin(), tools->hook.counts().end());  // (the ToolUse part of each)
  return out;
}

const std::vector<tokenizer::ChatTool>& shown_tools(const ToolEnv* tools) {
  static const std::vector<tokenizer::ChatTool> none;
  return tools ? tools->shown : none;
}

std::unique_ptr<ToolEnv> make_tool_env(const config::Config& cfg, const tokenizer::Tokenizer& tok,
                                       const model::Policy& policy) {
  if (cfg.tools.list.empty()) return nullptr;
  if (!policy.has_append())
    throw ConfigError("tools.list: multi-turn rollouts write tool output into a running row, which needs a model "
                      "with the slot methods and append_slots (slot_api 2): '" + cfg.model.path + "' has none; "
                      "re-export it with scripts/gspo_model.py, or set tools.list: []");
  return std::make_unique<ToolEnv>(cfg, tok);
}

}  // namespace gspo::env
