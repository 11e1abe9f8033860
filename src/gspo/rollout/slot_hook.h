// The seam where something outside the model takes part in a rollout (multi-turn tools): at every synchronisation
// point of the decode loop a hook sees each slot's row and response position on the host and may pause a running row
// (it then neither samples nor advances, its cache kept) and resume it later. Pausing needs a model with the slot
// methods: in a static batch every row shares one cache column, so a row cannot wait while the others go on.
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/rollout/sampler_types.h"

namespace gspo::rollout {

// The loop's slots as a hook sees them. Valid only during SlotHook::at_sync.
class SlotControl {
 public:
  static constexpr int64_t kFree = -1;
  virtual ~SlotControl() = default;
  virtual int64_t num_slots() const = 0;
  virtual int64_t row(int64_t slot) const = 0;   // the call's row running in `slot`, kFree when none
  virtual int64_t step(int64_t slot) const = 0;  // tokens the row has sampled (its next response position)
  virtual bool paused(int64_t slot) const = 0;
  // A paused row's last sampled token is written into its cache when it resumes, not before. Throws std::logic_error
  // for a free slot, or for a layout that cannot pause.
  virtual void pause(int64_t slot) = 0;
  virtual void resume(int64_t slot) = 0;
  // Writes `tokens` into the running row's response after its last sampled token (a tool's output), as the model's
  // context from then on: the row samples next at its position after them. They are not the model's own: the loss mask
  // leaves them out (sampler.h) and they carry no log-prob. Truncated to the row's room (max_new_tokens plus
  // SamplingParams::insert_capacity positions, one kept for the model's next token); returns how many were taken.
  // Done with the slot methods' append_slots after at_sync returns, before the next decode; a paused row stays
  // paused. Throws std::logic_error for a free slot, a layout that cannot pause, or a model without append_slots.
  virtual int64_t append(int64_t slot, const std::vector<int64_t>& tokens) = 0;
  // Tokens append() would take from `slot` now (its room, less what this sync already appended).
  virtual int64_t room(int64_t slot) const = 0;
  // Whether the running row in `slot` ended an assistant turn (sampled SlotHook::turn_token()) and waits paused for
  // the hook to resume or end it. Cleared by resume() and end().
  virtual bool turn_ended(int64_t slot) const = 0;
  // The row's response so far (its sampled and inserted tokens, the last sampled one included): one read from the
  // model's device. Throws std::logic_error for a free slot.
  virtual std::vector<int64_t> tokens(int64_t slot) = 0;
  // Ends the running row now with `why` (its response is what it has); its slot is freed at once. Throws
  // std::logic_error for a free slot.
  virtual void end(int64_t slot, Finish why) = 0;
};

class SlotHook {
 public:
  virtual ~SlotHook() = default;
  // Called at each synchronisation point with at least one running row, after ended rows left their slots (and every
  // step while every running row is paused). When it returns with every running row paused and no waiting row able
  // to take a slot (none waits, or every slot is held), nothing could ever resume them: the loop throws
  // std::logic_error. A hook that waits on something (a tool's result) waits inside at_sync.
  virtual void at_sync(SlotControl& slots) = 0;
  // A token that ends an assistant turn rather than the response (-1: none). When a row samples it, the token is the
  // model's own (recorded with its log-prob, counted by the loss) and the row pauses at once, on the device; the hook
  // sees turn_ended() at the next synchronisation point and resumes the row (after appending, say, a tool's output)
  // or ends it. A row that reaches the length cap with it ends there (Finish::kLength). Read once per call.
  virtual int64_t turn_token() const { return -1; }
};

}  // namespace gspo::rollout
