// A user program started once and reused, spoken to one line at a time: gspo writes a request line to its stdin
// and reads one answer line from its stdout, within a timeout. The program runs via /bin/sh -c in its own process
// group; the destructor closes its pipes, gives it kExitGraceSeconds to exit, then SIGKILLs the group. What it (or
// its shell: "Segmentation fault") writes to stderr is logged as warnings prefixed with its name, never as gspo's own
// lines. Used by the
// external verifier (reward.external_command) and the command tools (tools.list, kind command).
// One answer line per request line: output that arrives with an answer after its newline, or between requests, is a
// protocol error of the program (the request that meets it fails), never the next request's answer.
// Non-goal: pairing a late answer with its request (after a failure a caller drops the process, kill_now()).
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>

namespace gspo::reward {

class LineProcess {
 public:
  // One request's outcome: the answer line (without '\n') or why there is none.
  struct Answer {
    std::string line;
    std::string error;       // "" when answered; else a phrase that follows the program's name ("did not answer ...")
    bool timed_out = false;  // the error is the timeout
    bool ok() const { return error.empty(); }
  };

  // Starts `command`. `who` names it in messages ("reward.external_command 'x'"). Throws IoError when the pipes or
  // the process cannot be made (a command that does not exist starts, and fails its first request).
  LineProcess(std::string command, std::string who);
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  // Writes `line` (ending in '\n') and reads one answer line, both within `timeout_s`. An error: an answer longer
  // than `max_answer_bytes` without a newline; output the program wrote since its last answer, before `line` was
  // written (a stray line); more output after the answer's newline in what was read with it. Not thread-safe:
  // callers serialise requests.
  Answer ask(const std::string& line, double timeout_s, size_t max_answer_bytes);
  // SIGKILLs the program's group now and reaps it: for a program that failed (hung, broke the protocol), which gets
  // no grace period. The object is then spent: ask() fails, the destructor does nothing more.
  void kill_now();
  const std::string& who() const { return who_; }

  static constexpr double kExitGraceSeconds = 2;  // destructor: time the program gets to exit after stdin closes

 private:
  std::string exit_note();  // " (it exited with status 3)" once it ended
  void log_stderr(int fd);  // the stderr thread: each line logged with who_ until EOF, or stop_ and a quiet pipe
  void stop_stderr();       // after the program ended: drains what is there, joins the thread

  std::string command_;
  std::string who_;
  pid_t pid_ = -1;    // also its process group
  int to_fd_ = -1;    // its stdin (non-blocking)
  int from_fd_ = -1;  // its stdout
  std::string pending_;  // bytes read past the last answer line
  bool reaped_ = false;  // exit_note() already collected the exit status
  std::atomic<bool> stop_{false};  // the stderr thread stops once its pipe is quiet
  std::thread err_thread_;         // reads the program's stderr (its read end is the thread's to close)
};

// Seconds as the shortest text ("0.5", "60"), for messages.
std::string seconds_text(double s);

}  // namespace gspo::reward
