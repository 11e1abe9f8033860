#include "gspo/core/file_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gspo/core/error.h"

namespace gspo::core {

FileSink::FileSink(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("cannot write '" + path_ + "': " + std::strerror(errno));
}

FileSink::~FileSink() {
  if (fd_ >= 0) ::close(fd_);
}

std::function<size_t(const void*, size_t)> FileSink::writer() {
  return [this](const void* data, size_t n) { return write(data, n); };
}

size_t FileSink::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (error_ == 0 && done < n) {
    const ssize_t w = ::write(fd_, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
    } else {
      done += static_cast<size_t>(w);
    }
  }
  return n;  // claim success: the serializer must not throw from its destructor; finish() reports the error
}

void FileSink::finish() {
  if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
  if (::close(fd_) != 0 && error_ == 0) error_ = errno;
  fd_ = -1;
  if (error_ != 0) throw IoError("cannot write '" + path_ + "': " + std::strerror(error_));
}

}  // namespace gspo::core
