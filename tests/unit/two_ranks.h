// Ranks of a process group on loopback (Gloo), as threads of the test process: for tests of what the ranks
// exchange (metrics reductions, sharded evaluation, collectives).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/parallel/comm.h"

namespace gspo::test {

// A TCP port nobody listens on now: bound to port 0, read back, released.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("no free TCP port on loopback");
  close(fd);
  return ntohs(addr.sin_port);
}

// Runs work(comm, rank) for ranks 0 .. n - 1 of an n-rank Gloo group, each in its own thread; returns each rank's
// exception message ("" when it finished).
inline std::vector<std::string> run_ranks(int n, const std::function<void(parallel::Comm&, int)>& work) {
  // c10d's flight recorder is one per process, and LibTorch 2.11 fills it from every process group's threads without
  // a lock that covers them all: n ranks as threads of one process crashed in it now and then (2 of 5 runs of the
  // ZeRO-3 two-rank test). Real ranks are processes, one recorder each; here it is off.
  setenv("TORCH_FR_BUFFER_SIZE", "0", 1);
  const int port = free_port();
  std::vector<std::string> errors(static_cast<size_t>(n));
  auto rank_main = [&](int rank) {
    try {
      parallel::LaunchEnv env;
      env.rank = rank;
      env.world_size = n;
      env.master_port = port;
      env.source = "test";
      config::DistributedOptions o;
      o.init_timeout_s = 30;
      o.timeout_s = 60;
      parallel::Comm comm(env, o, c10::kCPU);
      work(comm, rank);
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  return errors;
}

// Runs work(comm, rank) for ranks 0 and 1 of a 2-rank Gloo group (run_ranks with n = 2).
struct TwoRankErrors {
  std::string error[2];
};
inline TwoRankErrors run_two_ranks(const std::function<void(parallel::Comm&, int)>& work) {
  const auto e = run_ranks(2, work);
  return {{e[0], e[1]}};
}

}  // namespace gspo::test
