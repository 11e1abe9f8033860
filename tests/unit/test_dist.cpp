// Distributed pieces that run in one process: launcher environment parsing, Slurm node lists, the world-size-1
// communicator, asynchronous collectives on 2 Gloo ranks (threads), and the sharded AdamW's arithmetic against
// torch::optim::AdamW (the multi-process behaviour is tests/dist/test_dist.sh).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>

#include "gspo/core/error.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/launch_env.h"
#include "gspo/parallel/sharded_adamw.h"
#include "two_ranks.h"

using namespace gspo;

namespace {
parallel::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("no launcher variables: one process", "[dist]") {
  auto e = parallel::read_launch_env(env_of({}));
  CHECK(e.world_size == 1);
  CHECK(e.rank == 0);
  CHECK(e.source == "single");
}

TEST_CASE("torchrun variables", "[dist]") {
  auto e = parallel::read_launch_env(env_of({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                         {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29611"}}));
  CHECK(e.source == "torchrun");
  CHECK(e.rank == 5);
  CHECK(e.world_size == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "10.0.0.7");
  CHECK(e.master_port == 29611);
  CHECK_THROWS_WITH(parallel::read_launch_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                                                  {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})),
                    Catch::Contains("MASTER_PORT=70000 is not a TCP port"));
  CHECK_THROWS_WITH(parallel::read_launch_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2x"}})),
                    Catch::Contains("WORLD_SIZE='2x' is not an integer"));
  CHECK_THROWS_AS(parallel::read_launch_env(env_of({{"RANK", "1"}})), ConfigError);  // WORLD_SIZE missing
}

TEST_CASE("Slurm variables", "[dist]") {
  auto e = parallel::read_launch_env(env_of({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"},
                                         {"SLURM_JOB_NODELIST", "gpu[003-004,010],cpu1"}, {"SLURM_JOB_ID", "123456"}}));
  CHECK(e.source == "slurm");
  CHECK(e.rank == 9);
  CHECK(e.world_size == 16);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "gpu003");
  CHECK(e.master_port == 20000 + 123456 % 20000);
  // An explicit MASTER_ADDR / MASTER_PORT wins; torchrun variables win over Slurm ones.
  auto f = parallel::read_launch_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "head"},
                                         {"MASTER_PORT", "29000"}}));
  CHECK(f.master_addr == "head");
  CHECK(f.master_port == 29000);
  CHECK(parallel::read_launch_env(env_of({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"RANK", "0"},
                                      {"WORLD_SIZE", "1"}})).world_size == 1);
  CHECK_THROWS_WITH(parallel::read_launch_env(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})),
                    Catch::Contains("neither MASTER_ADDR nor SLURM_JOB_NODELIST"));
}

TEST_CASE("first host of a Slurm node list", "[dist]") {
  CHECK(parallel::first_slurm_host("node07") == "node07");
  CHECK(parallel::first_slurm_host("a1,a2") == "a1");
  CHECK(parallel::first_slurm_host("gpu[01-04,07]") == "gpu01");
  CHECK(parallel::first_slurm_host("gpu[7,1-3],x") == "gpu7");
  CHECK(parallel::first_slurm_host("rack[2-3]-n[10-12]") == "rack2-n10");
  CHECK_THROWS_AS(parallel::first_slurm_host("gpu[01-04"), ConfigError);
}

TEST_CASE("world size 1: collectives are the identity and open nothing", "[dist]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  CHECK(std::string(comm.backend()) == "none");
  auto t = torch::tensor({1.0, 2.0});
  // No arithmetic happens at world size 1, so bitwise.
  comm.all_reduce(t);
  CHECK(t.equal(torch::tensor({1.0, 2.0})));
  CHECK(comm.all_gather(t).equal(t));
  auto shard = torch::zeros({2}, torch::kDouble);
  comm.reduce_scatter(t, shard);
  CHECK(shard.equal(t));
  comm.barrier("test");
  CHECK(comm.take_counters().calls == 0);
}

// Expert parallelism's exchange: rank r sends (r + q + 1) % 3 rows (some ranks 0 rows) to rank q, each row tagged
// with (sender, receiver, index, a value in its second column); every receiver finds exactly its rows, in sender
// order. Integers in float32: bitwise.
TEST_CASE("all_to_all with uneven splits exchanges exactly the rows each rank addressed, on 2 and 3 ranks", "[dist]") {
  for (int W : {2, 3}) {
    INFO(W << " ranks");
    auto count = [W](int from, int to) { return static_cast<int64_t>((from * 2 + to + 1) % (W + 1)); };  // 0 .. W
    const auto errors = test::run_ranks(W, [&](parallel::Comm& comm, int rank) {
      std::vector<int64_t> send(W), recv(W);
      std::vector<float> rows;
      for (int q = 0; q < W; ++q) {
        send[q] = count(rank, q);
        recv[q] = count(q, rank);
        for (int64_t i = 0; i < send[q]; ++i) rows.insert(rows.end(), {float(rank), float(q), float(i), float(7 * i)});
      }
      const auto input = torch::tensor(rows).view({-1, 4});
      const auto got = comm.all_to_all(input, send, recv);
      std::vector<float> expect;
      for (int q = 0; q < W; ++q)
        for (int64_t i = 0; i < recv[q]; ++i) expect.insert(expect.end(), {float(q), float(rank), float(i), float(7 * i)});
      CHECK(torch::equal(got, torch::tensor(expect).view({-1, 4})));
      CHECK(comm.take_counters().calls == 1);
      // Counts that do not add up to the input are refused before anything is sent, naming the rank.
      CHECK_THROWS_WITH(comm.all_to_all(input, std::vector<int64_t>(W, 0), recv),
                        Catch::Contains("all_to_all: rank " + std::to_string(rank)));
    });
    for (int r = 0; r < W; ++r) CHECK(errors[r] == "");
  }
}

TEST_CASE("world size 1: all_to_all is a copy", "[dist]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto t = torch::arange(6, torch::kFloat).view({3, 2});
  auto got = comm.all_to_all(t, {3}, {3});
  CHECK(torch::equal(got, t));
  CHECK_FALSE(got.data_ptr() == t.data_ptr());
  CHECK_THROWS(comm.all_to_all(t, {2}, {2}));
}

// Small integers in float32: every sum is exact, so the results compare bitwise.
TEST_CASE("asynchronous all-gathers and reduce-scatters in flight together complete with the blocking results", "[dist]") {
  auto errors = test::run_two_ranks([](parallel::Comm& comm, int rank) {
    const int64_t n = 5;
    auto shard = torch::arange(n, torch::kFloat) + 10.0 * rank;  // rank r: 10r .. 10r + 4
    auto full = torch::empty({2 * n});
    auto to_reduce = torch::arange(2 * n, torch::kFloat) * (rank + 1);
    auto mine = torch::empty({n});
    auto shard2 = shard * 2, full2 = torch::empty({2 * n});
    auto g1 = comm.all_gather_into_async(shard, full);
    auto rs = comm.reduce_scatter_async(to_reduce.clone(), mine);
    auto g2 = comm.all_gather_into_async(shard2, full2);
    CHECK(g1.active());
    CHECK(rs.active());
    g2.wait();  // out of order
    rs.wait();
    g1.wait();
    CHECK_FALSE(g1.active());
    auto expect_full = torch::cat({torch::arange(n, torch::kFloat), torch::arange(n, torch::kFloat) + 10.0});
    CHECK(torch::equal(full, expect_full));
    CHECK(torch::equal(full2, expect_full * 2));
    // sum over ranks of arange(10) x (r + 1) = 3 x arange(10); rank r keeps elements [5r, 5r + 5).
    CHECK(torch::equal(mine, torch::arange(n, torch::kFloat).add(n * rank) * 3));
    auto blocking = torch::empty({n});
    comm.reduce_scatter(to_reduce.clone(), blocking);
    CHECK(torch::equal(blocking, mine));
    CHECK(comm.take_counters().calls == 4);
  });
  CHECK(errors.error[0] == "");
  CHECK(errors.error[1] == "");
}

TEST_CASE("sharded AdamW moved a chunk at a time equals one chunk, and one process's AdamW on the summed gradients",
          "[dist][optim]") {
  // 3 ranks, parameters of 35, 3 and 1 elements (39: shards of 13, no padding) and of 35 + 3 (38: one padding
  // element); chunks of 4 and 5 elements (pieces that cross parameters and the shard's end) against the default (one
  // chunk), and against torch's AdamW over the gradients summed over the ranks.
  for (const std::vector<std::vector<int64_t>>& shapes :
       {std::vector<std::vector<int64_t>>{{7, 5}, {3}, {1}}, std::vector<std::vector<int64_t>>{{7, 5}, {3}}}) {
    for (int64_t chunk : {4, 5}) {
      INFO("chunk " << chunk << ", " << shapes.size() << " parameters");
      torch::manual_seed(11);
      std::vector<torch::Tensor> init, ref;
      for (const auto& sh : shapes) init.push_back(torch::randn(sh));
      for (auto& p : init) ref.push_back(p.clone().set_requires_grad(true));
      torch::optim::AdamW adamw(ref, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
      std::vector<std::vector<torch::Tensor>> rank_grads(3 * 3);  // [step * 3 + rank]
      for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < ref.size(); ++i) ref[i].mutable_grad() = torch::zeros(shapes[i]);
        for (int r = 0; r < 3; ++r)
          for (size_t i = 0; i < ref.size(); ++i) {
            rank_grads[step * 3 + r].push_back(torch::randn(shapes[i]));
            ref[i].mutable_grad() += rank_grads[step * 3 + r].back();
          }
        adamw.step();
      }
      std::vector<std::vector<torch::Tensor>> chunked(3), whole(3), state(3);
      std::vector<std::vector<double>> norms(3);
      const auto errors = test::run_ranks(3, [&](parallel::Comm& comm, int rank) {
        for (auto* out : {&chunked[rank], &whole[rank]}) {
          for (const auto& p : init) out->push_back(p.clone());
          parallel::ShardedAdamW opt(*out, {0.9, 0.95, 1e-8, 0.1}, comm, out == &chunked[rank] ? chunk : 0);
          for (int step = 0; step < 3; ++step) {
            for (size_t i = 0; i < out->size(); ++i) (*out)[i].mutable_grad() = rank_grads[step * 3 + rank][i].clone();
            norms[rank].push_back(opt.reduce_gradients());
            opt.step(1e-2, 1.0);
          }
          if (out == &chunked[rank]) state[rank] = opt.gather_state();  // rank 0 alone receives the moments
        }
      });
      for (int r = 0; r < 3; ++r) REQUIRE(errors[r] == "");
      for (int r = 0; r < 3; ++r)
        for (size_t i = 0; i < init.size(); ++i) {
          CHECK((chunked[r][i] - whole[r][i]).abs().max().item<double>() < 1e-7);
          CHECK((chunked[r][i] - ref[i].detach()).abs().max().item<double>() < 1e-6);
        }
      for (int r = 0; r < 3; ++r)
        for (int step = 0; step < 3; ++step) CHECK(norms[r][step] == Approx(norms[r][3 + step]).epsilon(1e-6));
      // the gathered moments are torch's exp_avg and exp_avg_sq of every parameter, in order, at rank 0 only
      CHECK(state[1].empty());
      CHECK(state[2].empty());
      REQUIRE(state[0].size() == 3);
      CHECK(state[0][0].item<int64_t>() == 3);
      std::vector<torch::Tensor> m, v;
      for (const auto& p : ref) {
        const auto& st = static_cast<const torch::optim::AdamWParamState&>(
            *adamw.state().at(p.unsafeGetTensorImpl()));
        m.push_back(st.exp_avg().reshape({-1}));
        v.push_back(st.exp_avg_sq().reshape({-1}));
      }
      CHECK((state[0][1] - torch::cat(m)).abs().max().item<double>() < 1e-6);
      CHECK((state[0][2] - torch::cat(v)).abs().max().item<double>() < 1e-6);
    }
  }
}

TEST_CASE("sharded AdamW (1 shard) follows torch::optim::AdamW step for step", "[dist][optim]") {
  // Same gradients into both; clipping applied through grad_scale on one side and by hand on the other.
  torch::manual_seed(3);
  std::vector<torch::Tensor> a{torch::randn({7, 5}), torch::randn({3})}, b;
  for (auto& p : a) b.push_back(p.clone());
  for (auto& p : a) p.set_requires_grad(true);
  for (auto& p : b) p.set_requires_grad(true);
  torch::optim::AdamW ref(a, torch::optim::AdamWOptions(2e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  parallel::ShardedAdamW mine(b, {0.9, 0.95, 1e-8, 0.1}, comm);
  CHECK(mine.numel() == 38);
  for (int step = 0; step < 6; ++step) {
    const double scale = step % 2 ? 0.5 : 1.0;
    for (size_t i = 0; i < a.size(); ++i) {
      auto g = torch::randn(a[i].sizes());
      a[i].mutable_grad() = g * scale;
      b[i].mutable_grad() = g.clone();
    }
    const double lr = 2e-2 * (step + 1) / 6;
    for (auto& group : ref.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    ref.step();
    double expect_norm = 0;
    for (auto& p : b) expect_norm += p.grad().pow(2).sum().item<double>();
    CHECK(mine.reduce_gradients() == Approx(std::sqrt(expect_norm)).epsilon(1e-6));
    mine.step(lr, scale);
  }
  for (size_t i = 0; i < a.size(); ++i) CHECK((a[i] - b[i]).abs().max().item<double>() < 1e-6);
  // Its state survives a save/load round trip.
  auto state = mine.gather_state();
  CHECK(state[0].item<int64_t>() == 6);
  parallel::ShardedAdamW again(b, {0.9, 0.95, 1e-8, 0.1}, comm);
  again.load_state(state, "test");
  CHECK(again.gather_state()[1].equal(state[1]));  // a copy: bitwise
  CHECK_THROWS_WITH(again.load_state({state[0], state[1].narrow(0, 0, 5), state[2]}, "x.pt"),
                    Catch::Contains("does not hold ZeRO-1 optimizer state"));
}
