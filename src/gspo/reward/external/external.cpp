#include "gspo/reward/external/external.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <utility>

#include "gspo/core/error.h"

namespace gspo::reward {
namespace {

constexpr size_t kMaxAnswerBytes = 4096;  // an answer line longer than this is a protocol failure, not a number

nlohmann::json request(const std::string& response, const data::Example& ex) {
  return {{"prompt", ex.prompt}, {"response", response}, {"answer", ex.answer}, {"row", ex.row}};
}

}  // namespace

ExternalVerifier::ExternalVerifier(std::string command, double timeout_s)
    : who_("reward.external_command '" + command + "'"), timeout_s_(timeout_s) {
  if (!(timeout_s_ > 0) || !std::isfinite(timeout_s_))
    throw ConfigError(who_ + ": the answer timeout must be a positive number of seconds (got " +
                      seconds_text(timeout_s_) + ")");
  process_ = std::make_unique<LineProcess>(std::move(command), who_);
}

Score ExternalVerifier::score(const std::string& response, const data::Example& ex) const {
  return ask(request(response, ex));
}

Score ExternalVerifier::score_episode(const std::string& response, const data::Example& ex, const ToolUse& use) const {
  auto req = request(response, ex);
  req.update({{"tool_turns", use.turns}, {"tool_calls", use.calls}, {"tool_errors", use.errors},
              {"tool_timeouts", use.timeouts}});
  return ask(req);
}

Score ExternalVerifier::ask(const nlohmann::json& req) const {
  const std::string line = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_.empty()) throw VerifierError(failed_);
  auto answer = process_->ask(line, timeout_s_, kMaxAnswerBytes);
  if (!answer.ok()) {
    failed_ = who_ + " " + answer.error;  // the request/answer pairing is lost: every later request fails the same way
    throw VerifierError(failed_);
  }
  const std::string& reply = answer.line;
  try {
    size_t pos = 0;
    const double v = std::stod(reply, &pos);
    if (reply.find_first_not_of(" \t\r", pos) != std::string::npos || !std::isfinite(v)) throw std::invalid_argument("");
    return {v, v > 0, "", {}, ""};
  } catch (const std::exception&) {
    throw VerifierError(who_ + " wrote '" + reply.substr(0, 200) + "', not one number per line");
  }
}

}  // namespace gspo::reward
