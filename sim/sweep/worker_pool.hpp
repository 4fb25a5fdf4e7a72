// Worker processes of a sweep: at most N at once, each a fresh `gradsync run ... --json`
// (SimGrid allows one simulation per process: s4u::Engine is a singleton). Their stdout and stderr are captured
// through pipes, each has a wall-clock limit, and they die with the sweep (Linux
// PR_SET_PDEATHSIG): a sweep killed with SIGKILL leaves no simulation running behind it.
// A program that cannot be executed exits 127 with one line on stderr.
// Part of gradsync_io (POSIX processes): the model, engine and report libraries never fork.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace gradsync::sweep {

struct WorkerResult {
  std::size_t tag = 0;     // what the caller passed to start()
  int exit_code = -1;      // when it exited
  int signal = 0;          // when it was killed by a signal
  bool timed_out = false;  // killed by us after the time limit
  std::string out;         // stdout
  std::string err;         // stderr
  double wall_s = 0.0;
};

// The worker was stopped by an interrupt (SIGINT, SIGTERM, SIGHUP, or exited 128 + one of them,
// as gradsync does on SIGINT): what Ctrl-C, Slurm's time limit, scancel and Kubernetes'
// eviction send to a whole process group. Such a point did not fail; it did not finish.
[[nodiscard]] bool worker_interrupted(const WorkerResult& w);

// CPUs this process may run on (its affinity mask), at least 1: the default number of workers.
[[nodiscard]] unsigned available_cpus();

// A --timeout value ("600s", "10min") as a wall-time limit per worker, 1 ms to 7 days;
// ConfigError at "--timeout TEXT" otherwise.
[[nodiscard]] std::chrono::milliseconds parse_worker_limit(const std::string& text);

// Why a finished worker failed: killed after the time limit `limit`, killed by a signal, or a
// non-zero exit (its stderr, trailing space trimmed and cut at 4000 characters); nothing when
// it exited 0. Sweep records and advise lines use the same words.
[[nodiscard]] std::optional<std::string> worker_failure(const WorkerResult& w,
                                                        std::chrono::milliseconds limit);

// Runs `program args...` (argv[0] is `name`) to completion as one worker — stdout and stderr
// captured, stdin /dev/null, killed after `limit`, dying with this process — and returns how it
// ended. The one way gradsync starts another program: sweep and advise workers, calibrate's
// candidate benches, report's gnuplot.
[[nodiscard]] WorkerResult run_process(const std::string& program, const std::string& name,
                                       const std::vector<std::string>& args,
                                       std::chrono::milliseconds limit);

class WorkerPool {
 public:
  // `program`: the executable to run (e.g. /proc/self/exe); `limit`: wall time per worker.
  WorkerPool(std::string program, std::chrono::milliseconds limit);
  ~WorkerPool();  // kills what still runs
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts `program args...` (argv[0] is `name`). Throws std::system_error when the system
  // cannot (no processes or pipes left).
  void start(std::size_t tag, const std::string& name, const std::vector<std::string>& args);
  [[nodiscard]] std::size_t running() const { return workers_.size(); }

  // Waits at most `wait` for workers to finish (returns early on a signal) and returns those
  // that did; enforces the time limit.
  [[nodiscard]] std::vector<WorkerResult> collect(std::chrono::milliseconds wait);

  // SIGKILLs every worker and reaps it.
  void kill_all();

 private:
  struct Worker {
    std::size_t tag = 0;
    pid_t pid = -1;
    int out_fd = -1;
    int err_fd = -1;
    std::string out, err;
    std::chrono::steady_clock::time_point started;
    bool timed_out = false;
  };
  std::string program_;
  std::chrono::milliseconds limit_;
  std::vector<Worker> workers_;
};

}  // namespace gradsync::sweep
