#include "gspo/reward/external/line_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <sstream>
#include <thread>
#include <utility>

#include "gspo/core/error.h"
#include "gspo/core/log.h"

namespace gspo::reward {
namespace {

using Clock = std::chrono::steady_clock;

// Both ends of a pipe, closed unless taken: the constructor may throw between pipe2 and fork.
struct Pipe {
  int fd[2] = {-1, -1};
  explicit Pipe(const std::string& who) {
    if (pipe2(fd, O_CLOEXEC) != 0) throw IoError(who + ": pipe: " + std::strerror(errno));
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int take(int end) { return std::exchange(fd[end], -1); }
};

// Milliseconds left until `deadline`, rounded up (a poll timeout); <= 0 once it has passed.
int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

LineProcess::LineProcess(std::string command, std::string who) : command_(std::move(command)), who_(std::move(who)) {
  Pipe in(who_), out(who_), err(who_);  // in: we write, it reads; out and err: it writes, we read
  signal(SIGPIPE, SIG_IGN);  // a program that exits must not kill us when we write to it
  pid_ = fork();
  if (pid_ < 0) throw IoError(who_ + ": fork: " + std::strerror(errno));
  if (pid_ == 0) {  // async-signal-safe calls only until exec
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);  // ignored dispositions survive exec
    dup2(in.fd[0], 0);
    dup2(out.fd[1], 1);
    dup2(err.fd[1], 2);
    execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here, so the group exists before the destructor can signal it
  to_fd_ = in.take(1);
  from_fd_ = out.take(0);
  fcntl(to_fd_, F_SETFL, O_NONBLOCK);  // a program that stops reading must not block a write past the deadline
  err_thread_ = std::thread([this, fd = err.take(0)] { log_stderr(fd); });
}

void LineProcess::log_stderr(int fd) {
  std::string line;
  auto emit = [&] {
    if (line.size() > 500) line = line.substr(0, 500) + "...";
    try {
      log::warn("{} (stderr): {}", who_, line);
    } catch (...) {
    }
    line.clear();
  };
  for (;;) {
    struct pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, 50);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      if (stop_) break;
      continue;
    }
    char buf[4096];
    const ssize_t got = n > 0 ? read(fd, buf, sizeof buf) : -1;
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] == '\n') emit();
      else if (line.size() <= 500) line += buf[i];
    }
  }
  if (!line.empty()) emit();
  close(fd);
}

void LineProcess::stop_stderr() {
  stop_ = true;
  if (err_thread_.joinable()) err_thread_.join();
}

LineProcess::~LineProcess() {
  if (to_fd_ >= 0) close(std::exchange(to_fd_, -1));
  if (from_fd_ >= 0) close(std::exchange(from_fd_, -1));
  if (pid_ <= 0 || reaped_) {
    stop_stderr();
    return;
  }
  const auto deadline = after(kExitGraceSeconds);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      stop_stderr();
      return;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill_now();  // the whole group: `sh -c 'a | b'` leaves children of its own
  try {
    log::debug("{} did not exit within {} s of its input closing; killed", who_, seconds_text(kExitGraceSeconds));
  } catch (...) {
  }
}

void LineProcess::kill_now() {
  if (to_fd_ >= 0) close(std::exchange(to_fd_, -1));
  if (from_fd_ >= 0) close(std::exchange(from_fd_, -1));
  if (pid_ <= 0 || reaped_) return;
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  stop_stderr();
}

std::string LineProcess::exit_note() {
  if (reaped_) return "";
  for (int i = 0; i < 20; ++i) {  // up to 200 ms: a program that closed its pipes is usually on its way out
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      if (WIFEXITED(status)) return " (it exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
      if (WIFSIGNALED(status)) return " (it was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
      return "";
    }
    if (r < 0 && errno != EINTR) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return " (it is still running)";
}

LineProcess::Answer LineProcess::ask(const std::string& line, double timeout_s, size_t max_answer_bytes) {
  const auto deadline = after(timeout_s);
  size_t written = 0;
  auto fail = [](std::string why, bool timed_out = false) { return Answer{"", std::move(why), timed_out}; };
  auto quote = [](const std::string& s) {
    return "'" + (s.size() > 120 ? s.substr(0, 120) + "..." : s) + "'";
  };
  if (from_fd_ < 0) return fail("was stopped after an earlier failure");
  // Whatever the program wrote since its last answer answers no request: a stray line, never this request's answer.
  for (struct pollfd p{from_fd_, POLLIN, 0}; poll(&p, 1, 0) > 0 && (p.revents & POLLIN);) {
    char buf[4096];
    const ssize_t got = read(from_fd_, buf, sizeof buf);
    if (got <= 0) break;
    pending_.append(buf, static_cast<size_t>(got));
    if (pending_.size() > max_answer_bytes) break;
  }
  if (!pending_.empty())
    return fail("wrote output that answers no request, before this one was sent (" +
                quote(pending_.substr(0, pending_.find('\n'))) + "): it must write exactly one line per request");
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (written == line.size() && nl != std::string::npos) {
      std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (!pending_.empty())  // more than one line for one request: which one answers it is anyone's guess
        return fail("wrote more than one line for one request (" + quote(reply) + ", then " +
                    quote(pending_.substr(0, pending_.find('\n'))) + "): it must write exactly one line per request");
      return {std::move(reply), "", false};
    }
    const int left = ms_until(deadline);
    if (left <= 0) return fail("did not answer within " + seconds_text(timeout_s) + " s", true);
    struct pollfd fds[2] = {{from_fd_, POLLIN, 0}, {to_fd_, POLLOUT, 0}};
    const int n = written < line.size() ? 2 : 1;
    if (poll(fds, n, left) < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("could not be polled: ") + std::strerror(errno));
    }
    if (n == 2 && fds[1].revents) {
      const ssize_t w = write(to_fd_, line.data() + written, line.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      else if (w < 0 && errno != EAGAIN && errno != EINTR) return fail("no longer reads its input" + exit_note());
    }
    if (!fds[0].revents) continue;
    char buf[4096];
    const ssize_t got = read(from_fd_, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(std::string("could not be read: ") + std::strerror(errno));
    }
    if (got == 0) {
      if (written == line.size() && !pending_.empty()) return {std::exchange(pending_, ""), "", false};  // no '\n'
      return fail("closed its output without answering" + exit_note());
    }
    pending_.append(buf, static_cast<size_t>(got));
    if (pending_.find('\n') == std::string::npos && pending_.size() > max_answer_bytes)
      return fail("wrote " + std::to_string(pending_.size()) + " bytes without a newline, more than an answer line "
                  "may hold (" + std::to_string(max_answer_bytes) + ")");
  }
}

}  // namespace gspo::reward
