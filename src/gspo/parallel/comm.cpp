#include "gspo/parallel/comm.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <type_traits>

#include "gspo/core/error.h"
#include "gspo/core/log.h"

namespace gspo::parallel {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

Millis to_ms(double seconds) { return Millis(static_cast<int64_t>(seconds * 1000.0)); }

std::string reason(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return c10d::ReduceOp::MAX;
    case ReduceOp::kMin: return c10d::ReduceOp::MIN;
    default: return c10d::ReduceOp::SUM;
  }
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1"; }

}  // namespace

// The collectives of one concrete process group (ProcessGroupGloo / ProcessGroupNCCL derive from ProcessGroup in
// LibTorch 1.13 and from Backend in 2.x; both have these members).
struct Comm::Impl {
  virtual ~Impl() = default;
  virtual c10::intrusive_ptr<c10d::Work> all_reduce(std::vector<at::Tensor>& t, ReduceOp op) = 0;
  virtual c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t, int64_t root) = 0;
  virtual c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& t, int64_t root) = 0;
  virtual c10::intrusive_ptr<c10d::Work> all_gather(std::vector<std::vector<at::Tensor>>& out,
                                                    std::vector<at::Tensor>& in) = 0;
  virtual c10::intrusive_ptr<c10d::Work> barrier() = 0;
  virtual c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int peer, int tag) = 0;
  virtual c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int peer, int tag) = 0;
  virtual bool native_reduce_scatter() const = 0;
  virtual c10::intrusive_ptr<c10d::Work> reduce_scatter(at::Tensor& out, at::Tensor& in) = 0;
  // c10d moves the count vectors it is given: they are the caller's copies.
  virtual c10::intrusive_ptr<c10d::Work> all_to_all(at::Tensor& out, at::Tensor& in, std::vector<int64_t> out_counts,
                                                    std::vector<int64_t> in_counts) = 0;
  c10::intrusive_ptr<c10d::Store> store;
};

namespace {

template <class PG>
struct GroupImpl : Comm::Impl {
  c10::intrusive_ptr<PG> pg;
  c10::intrusive_ptr<c10d::Work> all_reduce(std::vector<at::Tensor>& t, ReduceOp op) override {
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    return pg->allreduce(t, o);
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t, int64_t root) override {
    c10d::BroadcastOptions o;
    o.rootRank = root;
    return pg->broadcast(t, o);
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& t, int64_t root) override {
    c10d::ReduceOptions o;
    o.rootRank = root;
    return pg->reduce(t, o);
  }
  c10::intrusive_ptr<c10d::Work> all_gather(std::vector<std::vector<at::Tensor>>& out,
                                            std::vector<at::Tensor>& in) override {
    return pg->allgather(out, in);
  }
  c10::intrusive_ptr<c10d::Work> barrier() override { return pg->barrier(); }
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int peer, int tag) override {
    return pg->send(t, peer, tag);
  }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int peer, int tag) override {
    return pg->recv(t, peer, tag);
  }
  bool native_reduce_scatter() const override {  // Gloo's reduce-scatter is not its own: NCCL only
#ifdef USE_C10D_NCCL
    return std::is_same_v<PG, c10d::ProcessGroupNCCL>;
#else
    return false;
#endif
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter(at::Tensor& out, at::Tensor& in) override {
    return pg->_reduce_scatter_base(out, in);
  }
  c10::intrusive_ptr<c10d::Work> all_to_all(at::Tensor& out, at::Tensor& in, std::vector<int64_t> out_counts,
                                            std::vector<int64_t> in_counts) override {
    return pg->alltoall_base(out, in, out_counts, in_counts);
  }
};

c10::intrusive_ptr<c10d::Store> rendezvous(const LaunchEnv& env, const config::DistributedOptions& o) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(env.master_port);
  so.isServer = env.rank == 0;
  so.numWorkers = static_cast<size_t>(env.world_size);
  so.waitWorkers = false;  // wait_for_all() below waits, with a message saying how many ranks came
  so.timeout = to_ms(o.init_timeout_s);
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  } catch (const std::exception& e) {
    const std::string why = reason(e);
    if (why.find("in use") != std::string::npos || why.find("failed to listen") != std::string::npos)
      throw DistributedError("rank 0 cannot listen on MASTER_ADDR:MASTER_PORT = " + where +
                             ": the port is in use (another job?); choose another MASTER_PORT. (" + why + ")");
    throw DistributedError("rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                           ": rendezvous at " + where + " failed within distributed.init_timeout_s = " +
                           seconds_text(o.init_timeout_s) + " s: not every rank started, or MASTER_ADDR is "
                           "unreachable. (" + why + ")");
  }
}

// Every rank checks in under one counter and waits until all have, so a missing rank is reported after
// init_timeout_s with how many arrived (the process group's own connect would wait for the collective timeout).
void wait_for_all(c10d::Store& store, const LaunchEnv& env, const config::DistributedOptions& o) {
  const auto deadline = Clock::now() + to_ms(o.init_timeout_s);
  try {
    int64_t joined = store.add("gspo/joined", 1);
    while (joined < env.world_size) {
      if (Clock::now() > deadline)
        throw DistributedError("rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                               std::to_string(env.master_port) + " failed within distributed.init_timeout_s = " +
                               seconds_text(o.init_timeout_s) + " s: " + std::to_string(joined) + " of " +
                               std::to_string(env.world_size) + " ranks joined; start them all (same MASTER_ADDR, "
                               "MASTER_PORT and WORLD_SIZE)");
      std::this_thread::sleep_for(Millis(20));
      joined = store.add("gspo/joined", 0);
    }
  } catch (const gspo::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(env.rank) + ": lost the rendezvous store at " + env.master_addr +
                           ":" + std::to_string(env.master_port) + " (rank 0 exited?): " + reason(e));
  }
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const LaunchEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (is_loopback(env.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// `env` gives this rank's place in the group (rank, world size) and the address Gloo binds to; `prefix` keeps the
// group's rendezvous keys apart from other groups over the same store.
std::unique_ptr<Comm::Impl> make_gloo(const LaunchEnv& env, const config::DistributedOptions& o,
                                      c10::intrusive_ptr<c10d::Store> store, const std::string& prefix) {
  auto opts = c10d::ProcessGroupGloo::Options::create(to_ms(o.timeout_s));
  opts->devices.push_back(gloo_device(env));
  auto impl = std::make_unique<GroupImpl<c10d::ProcessGroupGloo>>();
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  impl->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, static_cast<int>(env.rank),
                                                         static_cast<int>(env.world_size), opts);
  return impl;
}

std::unique_ptr<Comm::Impl> make_nccl(const LaunchEnv& env, const config::DistributedOptions& o,
                                      c10::intrusive_ptr<c10d::Store> store, const std::string& prefix) {
#ifdef USE_C10D_NCCL
  // Without async error handling a dead peer leaves NCCL kernels spinning forever instead of timing out.
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 0);
  setenv("NCCL_ASYNC_ERROR_HANDLING", "1", 0);
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = to_ms(o.timeout_s);
  auto impl = std::make_unique<GroupImpl<c10d::ProcessGroupNCCL>>();
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  impl->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, static_cast<int>(env.rank),
                                                         static_cast<int>(env.world_size), opts);
  return impl;
#else
  (void)env, (void)o, (void)store, (void)prefix;
  throw ConfigError("distributed.backend is nccl but this gspo was built against a LibTorch without NCCL; use "
                    "gloo, or rebuild with the CUDA toolkit installed (scripts/build.sh turns CUDA on when it finds nvcc)");
#endif
}

}  // namespace

Comm::Comm(const LaunchEnv& env, const config::DistributedOptions& o, c10::Device device)
    : env_(env), opts_(o), device_(device) {
  if (env.world_size == 1) return;
  using config::Backend;
  backend_ = o.backend != Backend::kAuto ? o.backend : device.is_cuda() ? Backend::kNccl : Backend::kGloo;
  if (backend_ == Backend::kNccl && !device.is_cuda())
    throw ConfigError("distributed.backend is nccl but model.device is " + device.str() + "; NCCL needs CUDA");
  if (backend_ == Backend::kGloo && device.is_cuda())
    log::warn("distributed.backend gloo with CUDA tensors: every collective copies through the host");
  log::info("rank {}/{} ({}): rendezvous at {}:{} over {}", env.rank, env.world_size, env.source, env.master_addr,
            env.master_port, config::name_of(backend_));
  auto store = rendezvous(env, o);
  wait_for_all(*store, env, o);
  try {
    impl_ = backend_ == Backend::kNccl ? make_nccl(env, o, store, "gspo") : make_gloo(env, o, store, "gspo");
  } catch (const gspo::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(env.rank) + ": cannot create the " +
                           config::name_of(backend_) + " process group: " + reason(e));
  }
  impl_->store = store;
}

Comm::Comm(Comm& parent, const std::vector<int64_t>& ranks, const std::string& name)
    : env_(parent.env_), opts_(parent.opts_), device_(parent.device_), backend_(parent.backend_) {
  const auto me = std::find(ranks.begin(), ranks.end(), parent.rank());
  if (me == ranks.end() || !std::is_sorted(ranks.begin(), ranks.end()) || ranks.back() >= parent.world_size())
    throw std::invalid_argument("Comm: rank " + std::to_string(parent.rank()) + " opening subgroup '" + name +
                                "' is not among its ranks, or they are not ascending ranks of the parent");
  env_.rank = me - ranks.begin();
  env_.world_size = static_cast<int64_t>(ranks.size());
  if (env_.world_size == 1 || !parent.impl_) return;
  try {
    impl_ = backend_ == config::Backend::kNccl ? make_nccl(env_, opts_, parent.impl_->store, "gspo/" + name)
                                               : make_gloo(env_, opts_, parent.impl_->store, "gspo/" + name);
  } catch (const gspo::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("rank " + std::to_string(parent.rank()) + ": cannot create the " + name + " group (" +
                           std::to_string(ranks.size()) + " ranks): " + reason(e));
  }
  impl_->store = parent.impl_->store;
}

Comm::~Comm() = default;

const char* Comm::backend() const { return impl_ ? config::name_of(backend_) : "none"; }

namespace {
// `limit_s` > 0: the wait's own limit (point to point: every caller's is async.wait_timeout_s, named so the message
// says which key to raise), else the group's distributed.timeout_s.
[[noreturn]] void collective_failed(const Comm& comm, const char* what, Clock::time_point t0, const std::exception& e,
                                    double limit_s = 0) {
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string limit = limit_s > 0 ? "async.wait_timeout_s (" + seconds_text(limit_s) + " s)"
                                        : "distributed.timeout_s";
  throw DistributedError("rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.world_size()) + ": " +
                         what + " failed after " + seconds_text(std::round(waited * 10) / 10) + " s: another rank "
                         "died, hung past " + limit + ", or left the job early; see its log. (" + reason(e) + ")");
}

void count(Comm::Counters& c, Clock::time_point t0, double bytes) {
  c.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  c.bytes += bytes;
  ++c.calls;
}

template <class F>
void run_collective(Comm::Counters& c, const Comm& comm, const char* what, double bytes, F&& launch) {
  const auto t0 = Clock::now();
  try {
    auto work = launch();
    work->wait();
  } catch (const std::exception& e) {
    collective_failed(comm, what, t0, e);
  }
  count(c, t0, bytes);
}

double nbytes(const at::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }
}  // namespace

struct Comm::Pending::State {
  Comm* comm = nullptr;
  const char* what = "";
  double bytes = 0;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::function<void()> finish;  // after the works: copies a result into place
  double timeout_s = 0;          // > 0: the works' wait limit instead of the group's (point to point)
};

bool Comm::Pending::ready() const {
  if (!state_) return true;
  for (const auto& w : state_->works)
    if (!w->isCompleted()) return false;
  return true;
}

void Comm::Pending::wait() {
  if (!state_) return;
  auto st = std::move(state_);
  const auto t0 = Clock::now();
  try {
    for (auto& w : st->works)
      if (st->timeout_s > 0) {
        if (!w->wait(to_ms(st->timeout_s))) throw std::runtime_error("timed out");
      } else {
        w->wait();
      }
  } catch (const std::exception& e) {
    collective_failed(*st->comm, st->what, t0, e, st->timeout_s);
  }
  if (st->finish) st->finish();
  count(st->comm->counters_, t0, st->bytes);
}

// NCCL takes CUDA tensors only: small host tensors (flags, metrics) are staged through the rank's GPU.
at::Tensor Comm::staged(const at::Tensor& t) const {
  return backend_ == config::Backend::kNccl && !t.is_cuda() ? t.to(device_) : t.contiguous();
}

void Comm::all_reduce(at::Tensor& t, ReduceOp op) {
  if (!impl_) return;
  std::vector<at::Tensor> v{staged(t)};
  run_collective(counters_, *this, "all_reduce", nbytes(t), [&] { return impl_->all_reduce(v, op); });
  if (!v[0].is_same(t)) t.copy_(v[0]);
}

double Comm::max(double v) {
  if (!impl_) return v;
  auto t = torch::tensor({v}, torch::kDouble);
  all_reduce(t, ReduceOp::kMax);
  return t.item<double>();
}

void Comm::broadcast(at::Tensor& t, int64_t root) {
  if (!impl_) return;
  std::vector<at::Tensor> v{staged(t)};
  run_collective(counters_, *this, "broadcast", nbytes(t), [&] { return impl_->broadcast(v, root); });
  if (!v[0].is_same(t)) t.copy_(v[0]);
}

at::Tensor Comm::all_gather(const at::Tensor& t) {
  if (!impl_) return t.clone();
  if (backend_ == config::Backend::kNccl && !t.is_cuda()) return all_gather(t.to(device_)).to(t.device());
  auto in = t.contiguous();
  std::vector<at::Tensor> inputs{in};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int64_t r = 0; r < world_size(); ++r) outputs[0].push_back(torch::empty_like(in));
  run_collective(counters_, *this, "all_gather", nbytes(in) * static_cast<double>(world_size()),
                 [&] { return impl_->all_gather(outputs, inputs); });
  return torch::cat(outputs[0], 0);
}

void Comm::all_gather_into(const at::Tensor& shard, at::Tensor& full) { all_gather_into_async(shard, full).wait(); }

Comm::Pending Comm::all_gather_into_async(const at::Tensor& shard, at::Tensor& full) {
  const int64_t n = shard.numel();
  if (full.numel() != n * world_size() || !full.is_contiguous())
    throw DistributedError("all_gather_into: output has " + std::to_string(full.numel()) + " elements, expected " +
                           std::to_string(n * world_size()) + " contiguous");
  Pending p;
  if (!impl_) {
    full.copy_(shard.reshape(-1));
    return p;
  }
  if (backend_ == config::Backend::kNccl && !shard.is_cuda()) {  // host tensors: staged through the GPU, blocking
    auto f = full.to(device_);
    all_gather_into(shard.to(device_), f);
    full.copy_(f);
    return p;
  }
  std::vector<at::Tensor> inputs{shard.contiguous().view({n})};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int64_t r = 0; r < world_size(); ++r) outputs[0].push_back(full.narrow(0, r * n, n));  // views: no copy
  p.state_ = std::make_shared<Pending::State>();
  *p.state_ = {this, "all_gather", nbytes(inputs[0]) * static_cast<double>(world_size()), {}, nullptr};
  try {
    p.state_->works.push_back(impl_->all_gather(outputs, inputs));
  } catch (const std::exception& e) {
    collective_failed(*this, "all_gather", Clock::now(), e);
  }
  return p;
}

void Comm::reduce_scatter(at::Tensor full, at::Tensor& shard) { reduce_scatter_async(std::move(full), shard).wait(); }

Comm::Pending Comm::reduce_scatter_async(at::Tensor full, at::Tensor& shard) {
  const int64_t n = shard.numel();
  if (full.numel() != n * world_size())
    throw DistributedError("reduce_scatter: input has " + std::to_string(full.numel()) + " elements, expected " +
                           std::to_string(n * world_size()));
  Pending p;
  if (!impl_) {
    shard.copy_(full.view_as(shard));
    return p;
  }
  p.state_ = std::make_shared<Pending::State>();
  *p.state_ = {this, "reduce_scatter", nbytes(full), {}, nullptr};
  try {
    if (impl_->native_reduce_scatter()) {
      auto in = staged(full);
      p.state_->works.push_back(impl_->reduce_scatter(shard, in));
      return p;
    }
    // Gloo in LibTorch 1.13 has no reduce_scatter: one reduce per owner, in place on `full`'s chunks, moves the same
    // bytes; the owner's chunk holds the sum.
    full = full.contiguous().view({-1});
    for (int64_t r = 0; r < world_size(); ++r) {
      std::vector<at::Tensor> v{full.narrow(0, r * n, n)};
      p.state_->works.push_back(impl_->reduce(v, r));
    }
  } catch (const std::exception& e) {
    collective_failed(*this, "reduce_scatter", Clock::now(), e);
  }
  const int64_t me = rank();
  p.state_->finish = [full, shard, n, me] { shard.copy_(full.narrow(0, me * n, n)); };
  return p;
}

at::Tensor Comm::all_to_all(const at::Tensor& input, const std::vector<int64_t>& send_counts,
                            const std::vector<int64_t>& recv_counts) {
  const auto W = static_cast<size_t>(world_size());
  int64_t sent = 0, received = 0;
  for (auto c : send_counts) sent += c;
  for (auto c : recv_counts) received += c;
  const bool negative = std::any_of(send_counts.begin(), send_counts.end(), [](int64_t c) { return c < 0; }) ||
                        std::any_of(recv_counts.begin(), recv_counts.end(), [](int64_t c) { return c < 0; });
  if (send_counts.size() != W || recv_counts.size() != W || negative || input.dim() == 0 || sent != input.size(0))
    throw DistributedError("all_to_all: rank " + std::to_string(rank()) + " has " + std::to_string(send_counts.size()) +
                           " send and " + std::to_string(recv_counts.size()) + " receive counts for " +
                           std::to_string(W) + " ranks, sending " + std::to_string(sent) + " rows of an input of " +
                           std::to_string(input.dim() ? input.size(0) : 0) + " (counts must be >= 0)");
  if (!impl_) return input.clone();
  auto shape = input.sizes().vec();
  shape[0] = received;
  auto in = staged(input);
  auto out = torch::empty(shape, in.options());
  run_collective(counters_, *this, "all_to_all", nbytes(in) + nbytes(out),
                 [&] { return impl_->all_to_all(out, in, recv_counts, send_counts); });
  return out.device() == input.device() ? out : out.to(input.device());
}

// One point-to-point transfer: a send of `t`, or a receive into it (copied into place from the staged tensor).
Comm::Pending Comm::point_to_point(at::Tensor t, int64_t peer, int tag, const char* what, double timeout_s, bool send) {
  if (!impl_ || peer == rank() || peer < 0 || peer >= world_size())
    throw std::invalid_argument(std::string(what) + ": " + (send ? "send from" : "receive on") + " rank " +
                                std::to_string(rank()) + (send ? " to" : " from") + " rank " + std::to_string(peer) +
                                " of a group of " + std::to_string(world_size()));
  Pending p;
  p.state_ = std::make_shared<Pending::State>();
  *p.state_ = {this, what, nbytes(t), {}, nullptr, timeout_s};
  std::vector<at::Tensor> v{staged(t)};
  if (!send && !v[0].is_same(t)) p.state_->finish = [dst = t, src = v[0]]() mutable { dst.copy_(src); };
  try {
    p.state_->works.push_back(send ? impl_->send(v, static_cast<int>(peer), tag)
                                   : impl_->recv(v, static_cast<int>(peer), tag));
  } catch (const std::exception& e) {
    collective_failed(*this, what, Clock::now(), e);
  }
  return p;
}

Comm::Pending Comm::send_async(const at::Tensor& t, int64_t peer, int tag, const char* what, double timeout_s) {
  return point_to_point(t, peer, tag, what, timeout_s, true);
}

Comm::Pending Comm::recv_async(at::Tensor& t, int64_t peer, int tag, const char* what, double timeout_s) {
  return point_to_point(t, peer, tag, what, timeout_s, false);
}

void Comm::barrier(const std::string& what) {
  if (!impl_) return;
  const std::string name = "barrier (" + what + ")";
  run_collective(counters_, *this, name.c_str(), 0, [&] { return impl_->barrier(); });
}

Comm::Counters Comm::take_counters() {
  Counters c = counters_;
  counters_ = {};
  return c;
}

}  // namespace gspo::parallel
