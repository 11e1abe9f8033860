#include "gspo/reward/external.h"

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cmath>
#include <cstring>

#include "gspo/core/error.h"

namespace gspo::reward {

ExternalVerifier::ExternalVerifier(std::string command) : command_(std::move(command)) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw IoError("reward.external_command: pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw IoError(std::string("reward.external_command: fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
  signal(SIGPIPE, SIG_IGN);
}

ExternalVerifier::~ExternalVerifier() {
  if (to_) fclose(to_);
  if (from_) fclose(from_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

Score ExternalVerifier::score(const std::string& response, const data::Example& ex) const {
  nlohmann::json req{{"prompt", ex.prompt}, {"response", response}, {"answer", ex.answer}, {"row", ex.row}};
  const std::string line = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  const std::string who = "reward.external_command '" + command_ + "'";
  if (fputs(line.c_str(), to_) < 0 || fflush(to_) != 0) throw TrainingError(who + " no longer reads its input (did it exit?)");
  std::string reply;
  char buf[256];
  while (fgets(buf, sizeof buf, from_)) {
    reply += buf;
    if (!reply.empty() && reply.back() == '\n') break;
  }
  if (reply.empty()) throw TrainingError(who + " closed its output without answering (did it exit?)");
  try {
    size_t pos = 0;
    const double v = std::stod(reply, &pos);
    if (reply.find_first_not_of(" \t\r\n", pos) != std::string::npos || !std::isfinite(v)) throw std::invalid_argument("");
    return {v, v > 0};
  } catch (const std::exception&) {
    throw TrainingError(who + " wrote '" + reply.substr(0, reply.size() - 1) + "', not one number per line");
  }
}

}  // namespace gspo::reward
