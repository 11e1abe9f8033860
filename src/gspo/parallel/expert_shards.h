// Which experts a rank keeps under expert parallelism (distributed.expert_parallel E, #37; docs/distributed.md,
// "Expert parallelism"). The job's ranks form groups of E consecutive ranks; rank g of a group keeps experts
// [g n/E, (g+1) n/E) of every MoE layer (n experts) and frees the others' weights (each such parameter left an empty
// tensor of its dtype: the module still names it, nothing holds its values). The ranks at the same place g of every
// group hold the same experts: the replicas, over which those experts' gradients are summed.
//
// A ParamGate of the policy: whole() only while hold_whole(true) has gathered every expert (the whole-model methods
// refuse otherwise); layers run one by one never need the freed experts (parallel/expert_layer.h runs an MoE layer's
// experts where they are kept in training, parallel/expert_rollout.h in sampling, so no training path gathers them).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gspo/model/param_gate.h"

namespace gspo::model { class Policy; }

namespace gspo::parallel {

class Comm;

// The group and the replicas of this rank (members only open each; world size 1 groups are identities).
struct ExpertGroups {
  std::unique_ptr<Comm> group;     // ranks [E floor(rank / E), + E): the exchange of every MoE layer
  std::unique_ptr<Comm> replicas;  // ranks rank mod E, + E, + 2E, ...: the same experts (gradients summed over them)
};
// Collective over `world`. std::invalid_argument when E does not divide the world size.
ExpertGroups open_expert_groups(Comm& world, int64_t E);

class ExpertShards : public model::ParamGate {
 public:
  // Frees every expert this rank does not keep and adds itself to the policy's gates. The policy needs the
  // expert-parallel methods and MoE layers whose experts `group` divides (std::invalid_argument otherwise; the
  // trainer checks with named config keys first). Both must outlive this object.
  ExpertShards(model::Policy& policy, Comm& group);
  ~ExpertShards() override;
  ExpertShards(const ExpertShards&) = delete;
  ExpertShards& operator=(const ExpertShards&) = delete;

  Comm& group() const { return group_; }
  int64_t per_rank(int64_t layer) const;  // experts of MoE layer `layer` this rank keeps

  // The parameters of every expert, in a fixed order (MoE layer, then gate/up/down, then expert): the ones kept here,
  // and the freed ones.
  const std::vector<at::Tensor>& local() const { return local_; }
  const std::vector<at::Tensor>& remote() const { return remote_; }
  // For a parameter of the policy: -1 when it is no expert's; else its index in local() or remote(), and the group
  // rank that keeps it with its index in that rank's local() (every rank's local() has the same shapes in order).
  struct Place {
    bool kept = false;
    int64_t index = -1;  // in local() when kept, else in remote()
    int64_t owner = 0, owner_index = 0;
  };
  const Place* place(const at::Tensor& param) const;
  // The full size of a parameter of the policy (a freed expert's as it was).
  int64_t full_numel(const at::Tensor& param) const;

  // Collective over the group: the freed experts' values (remote() order) from each rank's `local_values` (local()
  // order, the same shapes; any floating dtype, e.g. float32 masters).
  std::vector<at::Tensor> gather_remote(const std::vector<at::Tensor>& local_values) const;
  // Collective over the group, point to point: gather_remote()'s values at group rank 0 only (the others send theirs
  // and get an empty vector), one block of experts in flight at a time: what a consolidated checkpoint needs.
  std::vector<at::Tensor> gather_remote_at_root(const std::vector<at::Tensor>& local_values) const;
  // The freed parameters take `values` (remote() order), or give their values back (empty tensors again).
  void set_remote(const std::vector<at::Tensor>& values);
  void free_remote();
  // Collective: every expert gathered from the policy's own weights (on), or freed again (off). The trainer no longer
  // calls it (its sampling runs through RolloutExperts); what a one-off whole-model pass of a sharded policy would use.
  void hold_whole(bool on);

  // ParamGate: nothing to fetch per layer; whole only while hold_whole(true).
  void acquire(int64_t) override {}
  void release(int64_t) override {}
  void backward_done(int64_t) override {}
  bool whole() const override { return whole_; }
  bool frees_weights() const override { return false; }

 private:
  // f(this rank's values of one block: one MoE layer's gate, up or down of its kept experts), in local() order.
  void for_each_block(const std::vector<at::Tensor>& local_values, const char* caller,
                      const std::function<void(const std::vector<at::Tensor>&)>& f) const;

  model::Policy& policy_;
  Comm& group_;
  std::vector<int64_t> per_rank_;  // by decoder layer (0: dense)
  std::vector<at::Tensor> local_, remote_;
  std::vector<std::vector<int64_t>> remote_shape_;
  std::unordered_map<const void*, Place> places_;
  bool whole_ = false;
};

}  // namespace gspo::parallel
