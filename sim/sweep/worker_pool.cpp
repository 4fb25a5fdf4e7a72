// fork/exec workers with captured output, a time limit, and death with the parent.
// fork + exec rather than posix_spawn: the child must set PR_SET_PDEATHSIG before exec, which
// posix_spawn cannot do. The sweep is single-threaded, so fork is safe; only async-signal-safe
// calls run in the child between fork and exec.
#include "worker_pool.hpp"

#include <fmt/format.h>

#include "gradsync/units/config_error.hpp"
#include "gradsync/units/units.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>
#include <thread>

#include <sched.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gradsync::sweep {

namespace {

// Output kept per worker; beyond it, output is read and dropped (a runaway worker must not
// exhaust the sweep's memory). `run --json` prints tens of KiB.
constexpr std::size_t kMaxStdout = 64u << 20;
constexpr std::size_t kMaxStderr = 64u << 10;

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Reads what is available; returns false at end of file.
bool drain(int fd, std::string& into, std::size_t cap) {
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      const auto room = cap > into.size() ? cap - into.size() : 0;
      into.append(buffer, std::min(room, static_cast<std::size_t>(n)));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;  // other errors: treat as closed
  }
}

}  // namespace

unsigned available_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::chrono::milliseconds parse_worker_limit(const std::string& text) {
  try {
    const double seconds = parse_time(text).seconds();
    if (!(seconds >= 1e-3) || seconds > 7 * 86400.0)
      throw UnitError("must be between 1ms and 7 days");
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
  } catch (const UnitError& e) {
    throw ConfigError(SourceMark{"--timeout " + text, 0, 0}, e.what());
  }
}

bool worker_interrupted(const WorkerResult& w) {
  for (int s : {SIGINT, SIGTERM, SIGHUP})
    if (w.signal == s || (!w.timed_out && w.signal == 0 && w.exit_code == 128 + s)) return true;
  return false;
}

std::optional<std::string> worker_failure(const WorkerResult& w, std::chrono::milliseconds limit) {
  std::string err = w.err;
  while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
  constexpr std::size_t kMaxError = 4000;
  if (err.size() > kMaxError) err = err.substr(0, kMaxError) + " …";
  if (w.timed_out)
    return fmt::format("timed out after {} (killed; raise --timeout)",
                       format_time(Seconds(static_cast<double>(limit.count()) / 1000.0)));
  if (w.signal != 0)
    return fmt::format("killed by signal {} ({}){}", w.signal, ::strsignal(w.signal),
                       err.empty() ? "" : ": " + err);
  if (w.exit_code != 0) return err.empty() ? fmt::format("exit code {}", w.exit_code) : err;
  return std::nullopt;
}

WorkerPool::WorkerPool(std::string program, std::chrono::milliseconds limit)
    : program_(std::move(program)), limit_(limit) {}

WorkerPool::~WorkerPool() { kill_all(); }

void WorkerPool::start(std::size_t tag, const std::string& name,
                       const std::vector<std::string>& args) {
  // Everything the child needs is prepared before fork: no allocation after it.
  std::vector<std::string> argv_storage;
  argv_storage.push_back(name);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* program = program_.c_str();
  static const char kExecFailed[] = "gradsync: cannot execute the program\n";

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw_errno("pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int saved = errno;
    ::close(out[0]);
    ::close(out[1]);
    errno = saved;
    throw_errno("pipe");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int saved = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    errno = saved;
    throw_errno("fork");
  }
  if (pid == 0) {
    // Child: die with the sweep, even when it is SIGKILLed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) ::sigaction(s, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(program, argv.data());
    (void)!::write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  Worker w;
  w.tag = tag;
  w.pid = pid;
  w.out_fd = out[0];
  w.err_fd = err[0];
  w.started = std::chrono::steady_clock::now();
  workers_.push_back(std::move(w));
}

std::vector<WorkerResult> WorkerPool::collect(std::chrono::milliseconds wait) {
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  auto timeout = wait;
  std::vector<pollfd> fds;
  std::vector<std::pair<std::size_t, bool>> owner;  // worker, is stdout
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    if (!w.timed_out) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(w.started + limit_ - now);
      timeout = std::min(timeout, std::max(left, std::chrono::milliseconds(0)));
    }
    if (w.out_fd < 0 && w.err_fd < 0)  // output closed, not reaped yet: look again soon
      timeout = std::min(timeout, std::chrono::milliseconds(2));
    if (w.out_fd >= 0) {
      fds.push_back({w.out_fd, POLLIN, 0});
      owner.emplace_back(i, true);
    }
    if (w.err_fd >= 0) {
      fds.push_back({w.err_fd, POLLIN, 0});
      owner.emplace_back(i, false);
    }
  }
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready < 0 && errno != EINTR) throw_errno("poll");
  if (ready > 0)
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Worker& w = workers_[owner[k].first];
      int& fd = owner[k].second ? w.out_fd : w.err_fd;
      std::string& into = owner[k].second ? w.out : w.err;
      if (!drain(fd, into, owner[k].second ? kMaxStdout : kMaxStderr)) close_fd(fd);
    }

  std::vector<WorkerResult> done;
  const auto after = Clock::now();
  for (auto it = workers_.begin(); it != workers_.end();) {
    Worker& w = *it;
    if (!w.timed_out && after - w.started >= limit_) {
      ::kill(w.pid, SIGKILL);
      w.timed_out = true;
    }
    if (w.out_fd >= 0 || w.err_fd >= 0) {
      ++it;
      continue;
    }
    int status = 0;
    const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) {
      ++it;
      continue;
    }
    WorkerResult result;
    result.tag = w.tag;
    result.timed_out = w.timed_out;
    result.out = std::move(w.out);
    result.err = std::move(w.err);
    result.wall_s = std::chrono::duration<double>(after - w.started).count();
    if (r > 0 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (r > 0 && WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    done.push_back(std::move(result));
    it = workers_.erase(it);
  }
  return done;
}

void WorkerPool::kill_all() {
  for (Worker& w : workers_) {
    ::kill(w.pid, SIGKILL);
    close_fd(w.out_fd);
    close_fd(w.err_fd);
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  workers_.clear();
}

WorkerResult run_process(const std::string& program, const std::string& name,
                         const std::vector<std::string>& args, std::chrono::milliseconds limit) {
  WorkerPool pool(program, limit);
  pool.start(0, name, args);
  while (true) {
    std::vector<WorkerResult> done = pool.collect(std::chrono::milliseconds(1000));
    if (!done.empty()) return std::move(done.front());
  }
}

}  // namespace gradsync::sweep
