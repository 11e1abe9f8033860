#include "gspo/core/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/core/parse.h"

namespace gspo::core {
namespace fs = std::filesystem;

void ensure_dir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw IoError("cannot create directory '" + path + "': " + ec.message());
  const std::string probe = path + "/.gspo_write_probe";
  std::ofstream out(probe);
  if (!out) throw IoError("directory '" + path + "' is not writable: " + std::strerror(errno));
  out.close();
  std::remove(probe.c_str());
}

void atomic_write(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw IoError("cannot write '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw IoError("cannot write '" + tmp + "': " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_err = errno;
  if (::close(fd) != 0 || !synced) {
    const int err = synced ? errno : sync_err;
    ::unlink(tmp.c_str());
    throw IoError("cannot write '" + tmp + "': " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw IoError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
}

std::string file_fnv1a64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read '" + path + "'");
  uint64_t h = 0xcbf29ce484222325ULL;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 0x100000001b3ULL;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

bool non_empty_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > 0 && !ec;
}

bool process_gone(const std::string& pid_text) {
  if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto pid = parse_int(pid_text);
  if (!pid || *pid <= 0 || *pid > INT32_MAX) return false;
  return ::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

void remove_all(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void sync_dir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace gspo::core
