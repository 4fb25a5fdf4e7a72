// Durable files of a sweep's results folder (POSIX): a file replaced atomically (temp file in
// its folder, fsync, rename, fsync of the folder), a line appended with one write(), a file's
// whole text. Every failure is the environment's: EnvironmentError (exit 1). See
// sweep_results.hpp for the files a sweep keeps.
#pragma once

#include <filesystem>
#include <string>

namespace gradsync::sweep {

// A file replaced atomically: written to a temp file beside it, fsync'ed, renamed over it, and
// the folder fsync'ed. Destroyed without commit(), it leaves the old file and removes the temp.
// EnvironmentError "PATH: error: cannot WHAT: why" when the system refuses a step.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Buffered (written out by the MiB); commit() writes the rest.
  void write(const std::string& text);
  void commit();

 private:
  void flush();

  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
  std::string buffer_;
};

// Durable, atomic replacement of `path` (temp file in its folder, fsync, rename, fsync folder).
void write_file_atomically(const std::filesystem::path& path, const std::string& text);
// Appends `line` + "\n" with one write() on an O_APPEND descriptor.
void append_line(const std::filesystem::path& path, const std::string& line);
// A file's whole text; EnvironmentError when it cannot be read.
[[nodiscard]] std::string read_text(const std::filesystem::path& path);

}  // namespace gradsync::sweep
