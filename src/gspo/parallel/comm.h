// The process group of a data-parallel run: PyTorch's c10d (Gloo on CPU, NCCL on CUDA when LibTorch has it) with
// a TCPStore rendezvous at MASTER_ADDR:MASTER_PORT. With world size 1 nothing is opened and every collective is
// the identity, so the training loop has one code path. Every failure (rendezvous timeout, a port in use, a
// collective that timed out or lost a peer) is a DistributedError naming the rank, the operation and the cause.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/parallel/launch_env.h"

namespace gspo::parallel {

enum class ReduceOp { kSum, kMax, kMin };

class Comm {
 public:
  // `device`: where the tensors passed to collectives live (cuda:LOCAL_RANK with NCCL, cpu with Gloo).
  Comm(const LaunchEnv& env, const config::DistributedOptions& opts, c10::Device device);
  // A process group over `ranks` of `parent` (its ranks, ascending, this rank among them), opened by the members only
  // (the others must not call it) over the parent's rendezvous store under `name`. rank() and world_size() are
  // within the subgroup; one member: no group, collectives are identities. Asynchronous training's trainer and
  // rollout groups (distributed.rollout_ranks).
  Comm(Comm& parent, const std::vector<int64_t>& ranks, const std::string& name);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  bool is_main() const { return env_.rank == 0; }
  const char* backend() const;  // "none" (world size 1), "gloo" or "nccl"
  const LaunchEnv& env() const { return env_; }

  // In place, on every rank.
  void all_reduce(at::Tensor& t, ReduceOp op = ReduceOp::kSum);
  // Scalar agreements: the largest `v` over the ranks; whether `flag` holds on any rank.
  double max(double v);
  bool any(bool flag) { return max(flag ? 1.0 : 0.0) > 0; }
  void broadcast(at::Tensor& t, int64_t root = 0);
  // Concatenation along dim 0 of every rank's `t` (same shape on every rank), in rank order.
  at::Tensor all_gather(const at::Tensor& t);
  // shard [n] of every rank into full [world_size * n], rank r's at [r * n, (r + 1) * n); no concatenation copy.
  void all_gather_into(const at::Tensor& shard, at::Tensor& full);
  // full: [world_size * n] on every rank; shard <- sum over ranks of full[rank * n, (rank + 1) * n). `full` is used
  // as scratch (Gloo reduces in place): its values are lost.
  void reduce_scatter(at::Tensor full, at::Tensor& shard);

  // Uneven exchange along dim 0 (expert parallelism's token dispatch): this rank sends rows
  // [sum(send_counts[0, q)), + send_counts[q]) of `input` to rank q, and receives recv_counts[q] rows from rank q;
  // the result holds them in rank order ([sum(recv_counts), ...] with input's other dimensions). Both count lists
  // have world_size entries; send_counts sum to input.size(0); what rank q sends here must be what recv_counts[q]
  // says (agree on the counts first, e.g. with a fixed-size all_to_all of the counts themselves). Counts may be 0.
  // World size 1: a copy of input.
  at::Tensor all_to_all(const at::Tensor& input, const std::vector<int64_t>& send_counts,
                        const std::vector<int64_t>& recv_counts);

  // A collective started by an *_async call. wait() blocks until it is done (a DistributedError as the blocking
  // calls'); its output is valid only after that. The counters take the seconds wait() blocked: the part of the
  // collective the caller did not overlap with its own work. Dropping one without wait() leaves it to complete on
  // its own (c10d's work keeps its tensors alive). Every rank must start the same collectives in the same order.
  class Pending {
   public:
    bool active() const { return state_ != nullptr; }
    void wait();
    bool ready() const;  // done (or failed: wait() then throws) without blocking; true when not active
    struct State;

   private:
    friend class Comm;
    std::shared_ptr<State> state_;
  };
  // all_gather_into, returning before the data has arrived (world size 1: done at once).
  Pending all_gather_into_async(const at::Tensor& shard, at::Tensor& full);
  // reduce_scatter, returning before the sum has arrived in `shard`.
  Pending reduce_scatter_async(at::Tensor full, at::Tensor& shard);
  // Point to point with rank `peer` of this group. Messages of one `tag` from one rank arrive in the order sent;
  // the receiver's tensor has the sender's shape and dtype. A send's tensor must stay unchanged until its wait()
  // (the Pending keeps it alive). A peer that died fails the wait at once, one that hangs after
  // distributed.timeout_s, or `timeout_s` when > 0 (a DistributedError naming `what` and the limit's key: the callers'
  // `timeout_s` is async.wait_timeout_s).
  Pending send_async(const at::Tensor& t, int64_t peer, int tag, const char* what, double timeout_s = 0);
  Pending recv_async(at::Tensor& t, int64_t peer, int tag, const char* what, double timeout_s = 0);
  void send(const at::Tensor& t, int64_t peer, int tag, const char* what) { send_async(t, peer, tag, what).wait(); }
  void recv(at::Tensor& t, int64_t peer, int tag, const char* what) { recv_async(t, peer, tag, what).wait(); }
  // `what` names the point in the run for the error message.
  void barrier(const std::string& what);

  // Time and payload bytes of the collectives since the last call (waiting for slower ranks included).
  struct Counters {
    double seconds = 0;
    double bytes = 0;
    int64_t calls = 0;
  };
  Counters take_counters();

  struct Impl;

 private:
  at::Tensor staged(const at::Tensor& t) const;
  Pending point_to_point(at::Tensor t, int64_t peer, int tag, const char* what, double timeout_s, bool send);
  LaunchEnv env_;
  config::DistributedOptions opts_;
  c10::Device device_;
  config::Backend backend_ = config::Backend::kAuto;  // resolved to gloo or nccl when a group is opened
  std::unique_ptr<Impl> impl_;
  Counters counters_;
};

}  // namespace gspo::parallel
