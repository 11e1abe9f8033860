// A file written through a byte callback, the form LibTorch's serializers accept (torch::save(x, writer),
// torch::jit::ExportModule(module, writer)). The callback never throws: a failed write (a full disk, say) is
// remembered, later bytes are dropped, and finish() reports it as an IoError naming the path. Writing through the
// serializers' own file writers instead lets the failure escape from a destructor, which aborts the process and
// leaves a half-written checkpoint behind.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace gspo::core {

class FileSink {
 public:
  explicit FileSink(std::string path);  // creates/truncates; IoError when it cannot
  ~FileSink();                          // closes if finish() was not called; never throws
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  // The callback to hand to a serializer; valid while this object lives.
  std::function<size_t(const void*, size_t)> writer();
  // fsync + close; IoError "cannot write 'path': reason" when any write, the sync or the close failed.
  void finish();

 private:
  size_t write(const void* data, size_t n);
  std::string path_;
  int fd_ = -1;
  int error_ = 0;  // first errno seen
};

}  // namespace gspo::core
