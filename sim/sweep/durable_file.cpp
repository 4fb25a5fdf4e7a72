// Durable files of a sweep's results folder (durable_file.hpp).
#include "durable_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"

namespace gradsync::sweep {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_io(const fs::path& path, const std::string& what) {
  throw EnvironmentError(path.string(), fmt::format("cannot {}: {}", what, std::strerror(errno)));
}

void write_all(int fd, const std::string& text, const fs::path& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail_io(path, "write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some filesystems do not open folders
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(fs::path path)
    : path_(std::move(path)),
      temp_(path_.parent_path() /
            fmt::format(".{}.tmp-{}", path_.filename().string(), static_cast<long>(::getpid()))) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_io(temp_, "create file");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::write(const std::string& text) {
  buffer_ += text;
  if (buffer_.size() >= (1u << 20)) flush();
}

void AtomicFile::commit() {
  flush();
  if (::fsync(fd_) != 0) fail_io(temp_, "fsync");
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    errno = saved;
    fail_io(path_, "rename " + temp_.string() + " to");
  }
  fsync_dir(path_.parent_path());
}

void AtomicFile::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_io(temp_, "write");
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

void write_file_atomically(const fs::path& path, const std::string& text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

void append_line(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail_io(path, "open for appending");
  write_all(fd, line + "\n", path);
  ::close(fd);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EnvironmentError(path.string(), "cannot read file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace gradsync::sweep
