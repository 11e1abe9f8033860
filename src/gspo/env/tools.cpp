#include "gspo/env/tools.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "gspo/core/error.h"
#include "gspo/env/observation.h"
#include "gspo/env/tool_call.h"

namespace gspo::env {
namespace {

ToolResult tool_error(std::string why, bool timed_out = false) {
  return {kToolErrorPrefix + std::move(why), true, timed_out, 0};
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The observation of a sandboxed run: what it wrote, then how it ended when that was not exit status 0.
std::string run_observation(const reward::RunResult& r, const reward::SandboxLimits& l) {
  std::string out = r.out;
  if (!r.err.empty()) out += (out.empty() || out.back() == '\n' ? "" : "\n") + r.err;
  std::string end;
  if (r.output_overflow) end = "[stopped: more than " + std::to_string(l.output_bytes) + " bytes of output]";
  else if (r.term_signal) end = "[killed by signal " + std::to_string(r.term_signal) + "]";
  else if (r.exit_code != 0) end = "[exit status " + std::to_string(r.exit_code) + "]";
  if (!end.empty()) out += (out.empty() || out.back() == '\n' ? "" : "\n") + end;
  return out;
}

}  // namespace

PythonTool::PythonTool(std::string name, std::string python, reward::SandboxLimits limits)
    : name_(std::move(name)), python_(std::move(python)), limits_(limits) {}

ToolResult PythonTool::call(const nlohmann::json& arguments, Clock::time_point) {
  const auto code = arguments.find("code");
  if (code == arguments.end() || !code->is_string())
    return tool_error("tool '" + name_ + "' needs a string argument \"code\"");
  const auto r = reward::run_sandboxed({python_, "-I", "main.py"}, {{"main.py", code->get<std::string>()}}, "",
                                       limits_);
  if (r.timed_out || r.term_signal == SIGXCPU) {
    ToolResult t = tool_error("tool '" + name_ + "' ran past its " + reward::seconds_text(limits_.wall_seconds) +
                              " s limit", true);
    t.output += "\n" + run_observation(r, limits_);
    t.seconds = r.seconds;
    return t;
  }
  return {run_observation(r, limits_), false, false, r.seconds};
}

CommandTool::CommandTool(std::string name, std::string command, double timeout_s)
    : name_(std::move(name)), command_(std::move(command)), who_("tool '" + name_ + "'"), timeout_s_(timeout_s) {
  process_ = std::make_unique<reward::LineProcess>(command_, who_ + " (command '" + command_ + "')");
}

ToolResult CommandTool::fail(std::string why, bool timed_out) {
  if (process_) process_->kill_now();
  process_.reset();
  if (timed_out) timed_out_at_ = Clock::now();
  return tool_error(who_ + " " + why, timed_out);
}

ToolResult CommandTool::call(const nlohmann::json& arguments, Clock::time_point asked) {
  std::lock_guard<std::mutex> lock(mu_);
  if (asked < timed_out_at_)  // it hung while this call waited for it: fail fast rather than wait out another timeout
    return tool_error(who_ + " was not run for this call: it ran past tools.timeout_s (" +
                      reward::seconds_text(timeout_s_) + " s) on an earlier call while this one waited; it restarts "
                      "for later calls");
  const int64_t id = next_id_++;
  const std::string line = json_text({{"name", name_}, {"arguments", arguments}, {"id", id}}) + "\n";
  if (!process_) process_ = std::make_unique<reward::LineProcess>(command_, who_ + " (command '" + command_ + "')");
  auto answer = process_->ask(line, timeout_s_, kMaxAnswerBytes);
  if (!answer.ok()) return fail(answer.error, answer.timed_out);
  const auto reply = nlohmann::json::parse(answer.line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("output") || !reply["output"].is_string())
    return fail("answered '" + config::clip_for_message(answer.line) + "', not one JSON line {\"output\": \"...\"}",
                false);
  if (reply.contains("id") && reply["id"] != id)  // an answer to another call: the pairing is lost
    return fail("answered call " + config::clip_for_message(reply["id"].dump()) + " when asked call " +
                std::to_string(id), false);
  return {reply["output"].get<std::string>(), false, false, 0};
}

ToolSet::ToolSet(std::vector<std::unique_ptr<Tool>> tools, ToolLimits limits, const tokenizer::Tokenizer& tok)
    : tools_(std::move(tools)), limits_(limits), tok_(&tok) {}

ToolSet ToolSet::from_config(const config::Config& cfg, const tokenizer::Tokenizer& tok) {
  const auto& t = cfg.tools;
  std::vector<std::unique_ptr<Tool>> tools;
  for (const auto& spec : t.list) {
    if (spec.kind == config::ToolKind::kCommand) {
      tools.push_back(std::make_unique<CommandTool>(spec.name, spec.command, t.timeout_s));
    } else {
      reward::SandboxLimits limits;
      limits.cpu_seconds = t.timeout_s;
      limits.wall_seconds = t.timeout_s;
      limits.memory_mb = cfg.reward.code.memory_mb;
      tools.push_back(std::make_unique<PythonTool>(spec.name, cfg.reward.code.python, limits));
    }
  }
  return ToolSet(std::move(tools), {t.max_calls_per_turn, t.max_output_tokens, t.workers}, tok);
}

Tool* ToolSet::find(const std::string& name) const {
  for (const auto& t : tools_)
    if (t->name() == name) return t.get();
  return nullptr;
}

std::vector<std::string> ToolSet::run_turn(const std::string& assistant_text) {
  return run_calls(parse_tool_calls(assistant_text), Tool::Clock::now()).observations;
}

ToolSet::Turn ToolSet::run_calls(const std::vector<ToolCall>& calls, Tool::Clock::time_point asked) {
  std::vector<ToolResult> results(calls.size());
  auto run_one = [&](size_t i) {
    const auto& c = calls[i];
    if (!c.ok()) {
      results[i] = tool_error(c.error);
    } else if (static_cast<int64_t>(i) >= limits_.max_calls_per_turn) {
      results[i] = tool_error("too many calls (at most " + std::to_string(limits_.max_calls_per_turn) +
                              " per turn; this was call " + std::to_string(i + 1) + ")");
    } else if (Tool* tool = find(c.name); !tool) {
      results[i] = tool_error("unknown tool '" + c.name + "'");
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        results[i] = tool->call(c.arguments, asked);
      } catch (const std::exception& e) {  // the machinery failed (no pipe, no sandbox): the call's error all the same
        results[i] = tool_error("tool '" + c.name + "' could not run (" + e.what() + ")");
      }
      results[i].seconds = seconds_since(t0);
    }
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(std::max<int64_t>(limits_.workers, 1)), calls.size());
  if (threads <= 1) {
    for (size_t i = 0; i < calls.size(); ++i) run_one(i);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (size_t w = 0; w < threads; ++w)
      pool.emplace_back([&] {
        for (size_t i; (i = next++) < calls.size();) run_one(i);
      });
    for (auto& t : pool) t.join();
  }
  Turn turn;
  auto& add = turn.counts;
  for (const auto& r : results) {
    turn.observations.push_back(truncate_observation(r.output, limits_.max_output_tokens, *tok_));
    add.calls += 1;
    add.errors += r.error;
    add.timeouts += r.timed_out;
    add.seconds += r.seconds;
  }
  std::lock_guard<std::mutex> lock(mu_);
  counters_.calls += add.calls;
  counters_.errors += add.errors;
  counters_.timeouts += add.timeouts;
  counters_.seconds += add.seconds;
  return turn;
}

ToolCounters ToolSet::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace gspo::env
