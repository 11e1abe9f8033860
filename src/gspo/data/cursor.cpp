#include "gspo/data/cursor.h"

#include "gspo/core/error.h"
#include "gspo/data/rng.h"

namespace gspo::data {

Cursor::Cursor(int64_t size, bool shuffle, uint64_t seed) : size_(size), shuffle_(shuffle), seed_(seed) {
  if (size <= 0) throw DataError("dataset has no examples");
  build_order();
}

void Cursor::build_order() {
  if (shuffle_) {
    order_ = permutation(size_, seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
  } else {
    order_.resize(size_);
    for (int64_t i = 0; i < size_; ++i) order_[i] = i;
  }
}

std::vector<int64_t> Cursor::next(int64_t count) {
  std::vector<int64_t> out;
  out.reserve(count);
  while (static_cast<int64_t>(out.size()) < count) {
    if (pos_ == size_) {
      ++epoch_;
      pos_ = 0;
      build_order();
    }
    out.push_back(order_[pos_++]);
  }
  return out;
}

void Cursor::restore(int64_t epoch, int64_t position) {
  if (epoch < 0 || position < 0 || position > size_)
    throw DataError("checkpoint data position (epoch " + std::to_string(epoch) + ", position " +
                    std::to_string(position) + ") does not fit a dataset of " + std::to_string(size_) + " examples");
  epoch_ = epoch;
  pos_ = position;
  build_order();
}

}  // namespace gspo::data
