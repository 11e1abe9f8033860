// Small filesystem helpers with errors that name the path. Writes that must survive crashes go through a
// temporary name and rename(2), which is atomic on POSIX filesystems.
#pragma once
#include <string>
#include <vector>

namespace gspo::core {

// mkdir -p; throws IoError "cannot create directory 'x': reason" (also when `path` is not writable).
void ensure_dir(const std::string& path);
// Writes `text` to `path` via path.tmp + fsync + rename.
void atomic_write(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
bool exists(const std::string& path);
// True when `path` is a file holding at least one byte.
bool non_empty_file(const std::string& path);
// FNV-1a 64 of a file's bytes as 16 hex digits (provenance: which dataset an eval ran on). Throws IoError.
std::string file_fnv1a64(const std::string& path);
// True when `pid_text` is a process id (all digits) that names no live process (kill(pid, 0) fails with ESRCH):
// its temporary files are leftovers. False for anything else, so a stray name is never taken for ours.
bool process_gone(const std::string& pid_text);
// Recursively removes `path` (no error when missing).
void remove_all(const std::string& path);
// Entries of a directory (names only), sorted.
std::vector<std::string> list_dir(const std::string& path);
// fsync on a directory so a rename inside it is durable.
void sync_dir(const std::string& path);

}  // namespace gspo::core
