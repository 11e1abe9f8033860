// The tools a model calls in a multi-turn rollout, and the running of one assistant turn's calls. A tool's failure
// (a crash, a timeout, an answer that is not one JSON line with an "output" string), an unknown name, a block that
// is not a call and a call past tools.max_calls_per_turn each become an observation the model sees, starting
// "tool error: ", and a counted error, never an exception: everything a model writes is hostile input. The episode
// hook (episode.h) calls them; the chat formats render their observations (tool_format.h, tokenizer/chat_tools.h).
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/env/tool_call.h"
#include "gspo/reward/external/line_process.h"
#include "gspo/reward/code/sandbox.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::env {

inline constexpr const char* kToolErrorPrefix = "tool error: ";

// One call's outcome. `output` is the observation before truncation.
struct ToolResult {
  std::string output;
  bool error = false;      // the tool failed to give an output (output then starts with kToolErrorPrefix)
  bool timed_out = false;  // ... because it ran past tools.timeout_s
  double seconds = 0;      // wall-clock time of the call
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const std::string& name() const = 0;
  using Clock = std::chrono::steady_clock;
  // Runs one call. `arguments` is a JSON object; `asked` is when the model made the call (its turn was submitted:
  // a call that waited behind others may fail fast, CommandTool). Thread-safe; never throws for what the call holds
  // or what the tool does (IoError only when the machinery itself, a pipe or the sandbox, cannot be set up).
  virtual ToolResult call(const nlohmann::json& arguments, Clock::time_point asked) = 0;
};

// kind python: the call's "code" argument (a string) run by `python -I main.py` in the code sandbox, a fresh process
// and directory per call. Observation: its stdout, then its stderr, then "[exit status N]" when not 0 (or how it was
// stopped). A program that fails is an observation, not a tool error; a missing "code" or a timeout is one.
class PythonTool : public Tool {
 public:
  PythonTool(std::string name, std::string python, reward::SandboxLimits limits);
  const std::string& name() const override { return name_; }
  ToolResult call(const nlohmann::json& arguments, Clock::time_point asked) override;

 private:
  std::string name_, python_;
  reward::SandboxLimits limits_;
};

// kind command: a user's program (started like reward.external_command, reused across calls) that reads one line
// {"name": ..., "arguments": {...}, "id": N} per call and answers one line {"output": "..."} (with "id": N when it
// echoes it, which must then be the call's). Calls to it are serialised. A failure (no answer within timeout_s, an
// exit, an answer that is not that one JSON line, a second line, output between calls) is the call's tool error, and
// the program is killed at once (no grace: a late answer could not be paired with its call); the next call starts a
// fresh one. Calls asked before a timeout that were still waiting for the program fail at once instead of each
// waiting out a timeout of their own: a hung tool costs about tools.timeout_s per wave of turns, not per call.
class CommandTool : public Tool {
 public:
  // Starts `command` now (IoError when it cannot be). `timeout_s` bounds each call.
  CommandTool(std::string name, std::string command, double timeout_s);
  const std::string& name() const override { return name_; }
  ToolResult call(const nlohmann::json& arguments, Clock::time_point asked) override;

  static constexpr size_t kMaxAnswerBytes = 16 << 20;  // an answer line longer than this is a tool error

 private:
  std::string name_, command_, who_;
  double timeout_s_;
  std::mutex mu_;
  std::unique_ptr<reward::LineProcess> process_;  // null after a failure until the next call; under mu_
  Clock::time_point timed_out_at_{};               // the last call that ran past timeout_s ended; under mu_
  int64_t next_id_ = 0;                            // the next call's "id"; under mu_

  ToolResult fail(std::string why, bool timed_out);  // kills the program; under mu_
};

// Counts over every turn a ToolSet ran; `errors` includes `timeouts`.
struct ToolCounters {
  int64_t calls = 0;     // <tool_call> blocks seen, well-formed or not
  int64_t errors = 0;    // observations that are tool errors
  int64_t timeouts = 0;  // calls stopped by tools.timeout_s
  double seconds = 0;    // wall-clock seconds the tools ran, summed over calls
};

struct ToolLimits {
  int64_t max_calls_per_turn = 4;     // calls run per turn; later ones get "tool error: too many calls"
  int64_t max_output_tokens = 1024;   // observation budget (truncate_observation)
  int64_t workers = 1;                // calls of a turn run on up to this many threads
};

class ToolSet {
 public:
  // `tok` tokenizes observations for truncation; it must outlive the set.
  ToolSet(std::vector<std::unique_ptr<Tool>> tools, ToolLimits limits, const tokenizer::Tokenizer& tok);
  // The tools of `cfg.tools.list` (python ones with reward.code_python and reward.code_memory_mb), started.
  static ToolSet from_config(const config::Config& cfg, const tokenizer::Tokenizer& tok);

  // One observation per call, in order, each valid UTF-8 and truncated (observation.h): plain text, to be tokenized
  // with Tokenizer::encode_text (tokenizer::tool_turn_ids does), never encode(). With this turn's counts (also added to
  // counters()). A call that is a parse failure becomes its error's observation. `asked`: when the turn was
  // submitted (Tool::call). Thread-safe.
  struct Turn {
    std::vector<std::string> observations;
    ToolCounters counts;
  };
  Turn run_calls(const std::vector<ToolCall>& calls, Tool::Clock::time_point asked);
  // run_calls on every <tool_call> block of `assistant_text` (parse_tool_calls), the observations.
  std::vector<std::string> run_turn(const std::string& assistant_text);
  ToolCounters counters() const;

 private:
  Tool* find(const std::string& name) const;  // null when no tool has that name

  std::vector<std::unique_ptr<Tool>> tools_;
  ToolLimits limits_;
  const tokenizer::Tokenizer* tok_;
  mutable std::mutex mu_;  // guards counters_
  ToolCounters counters_;
};

}  // namespace gspo::env
