// Resumable position in a dataset: epochs of (optionally shuffled) order. The order of epoch e is a pure
// function of (seed, e), so the state to save is just {epoch, position}.
#pragma once
#include <cstdint>
#include <vector>

namespace gspo::data {

class Cursor {
 public:
  Cursor(int64_t size, bool shuffle, uint64_t seed);
  // The next `count` example indices, wrapping into new epochs as needed.
  std::vector<int64_t> next(int64_t count);
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return pos_; }
  void restore(int64_t epoch, int64_t position);

 private:
  void build_order();
  int64_t size_;
  bool shuffle_;
  uint64_t seed_;
  int64_t epoch_ = 0, pos_ = 0;
  std::vector<int64_t> order_;
};

}  // namespace gspo::data
