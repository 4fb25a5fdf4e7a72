// The Python module `gradsync` (pybind11): the commands of the CLI as functions that return
// what their `--json` prints, parsed (dicts and lists), so that API and CLI give the same
// numbers by construction. SimGrid allows one simulation per process (its engine is a
// singleton), so each call runs the command line (run_cli, sim/cli/commands.hpp) in a forked
// child whose stdout and stderr come back over pipes; the Python process itself never starts
// a simulation and can call as often as it likes. Bad input raises ValueError with gradsync's
// one-line message (exit 2), a failing environment RuntimeError (exit 1).
//
//   import gradsync
//   r = gradsync.run("scenarios/default.yaml", set={"topology_overrides.nodes": 8})
//   rows = gradsync.bench("topologies/dgx-h100.yaml", algo="auto", min="1MiB", max="1GiB")
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../cli/commands.hpp"

namespace py = pybind11;

namespace {

struct Outcome {
  int code = 0;
  std::string out;
  std::string err;
};

// `gradsync ARGS...` in a forked child: its exit code, stdout and stderr.
Outcome call_cli(const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe(err_pipe) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: no Python from here on, only the command line, then _exit.
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    std::signal(SIGINT, SIG_DFL);  // Python's handler belongs to the parent
    std::vector<std::string> argv_text{"gradsync"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    int code = 1;
    try {
      code = gradsync::cli::run_cli(static_cast<int>(argv_text.size()), argv.data());
    } catch (...) {
      code = 1;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(code);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  Outcome result;
  {
    py::gil_scoped_release unlocked;  // the child may run for a while
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buffer[65536];
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
        if (n > 0) {
          sinks[i]->append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.code = WIFEXITED(status) ? WEXITSTATUS(status)
                  : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  }
  return result;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// Runs `gradsync ARGS...` and returns its JSON output parsed; raises on a non-zero exit.
py::object json_call(const std::vector<std::string>& args) {
  const Outcome r = call_cli(args);
  if (r.code == 2) throw py::value_error(trimmed(r.err));
  if (r.code != 0)
    throw std::runtime_error(trimmed(r.err.empty() ? "gradsync exited with code " +
                                                         std::to_string(r.code)
                                                   : r.err));
  return py::module_::import("json").attr("loads")(r.out);
}

// str(value) as gradsync reads it on its command line (True/False -> true/false).
std::string cli_text(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  return py::str(value).cast<std::string>();
}

// A path argument: str or os.PathLike.
std::string path_text(const py::handle& value) {
  return py::module_::import("os").attr("fspath")(value).cast<std::string>();
}

// `--set KEY=VALUE` for each item of `sets` (a mapping), in its order.
void add_sets(std::vector<std::string>& args, const py::object& sets) {
  if (sets.is_none()) return;
  for (const auto& item : py::cast<py::dict>(sets)) {
    args.push_back("--set");
    args.push_back(cli_text(item.first) + "=" + cli_text(item.second));
  }
}

// Keyword options as command-line options: min="1MiB" -> --min 1MiB, a True flag -> --best,
// False or None left out, a list -> the option once per item; '_' in a name becomes '-'.
void add_options(std::vector<std::string>& args, const py::kwargs& options) {
  for (const auto& item : options) {
    std::string name = item.first.cast<std::string>();
    for (char& c : name)
      if (c == '_') c = '-';
    const py::handle value = item.second;
    if (value.is_none()) continue;
    if (py::isinstance<py::bool_>(value)) {
      if (value.cast<bool>()) args.push_back("--" + name);
      continue;
    }
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      for (const auto& v : value) {
        args.push_back("--" + name);
        args.push_back(cli_text(v));
      }
      continue;
    }
    args.push_back("--" + name);
    args.push_back(cli_text(value));
  }
}

py::object run(const py::object& scenario, const py::object& sets, const py::kwargs& options) {
  // A mapping is written as a scenario file (JSON is YAML) in a temporary folder; a relative
  // topology path in it is taken from the current directory, as a user would mean it.
  py::object tmp_dir = py::none();
  std::string path;
  if (py::isinstance<py::dict>(scenario)) {
    py::module_ os = py::module_::import("os");
    py::dict copy = py::module_::import("copy").attr("deepcopy")(scenario);
    if (copy.contains("topology") && py::isinstance<py::str>(copy["topology"]))
      copy["topology"] = os.attr("path").attr("abspath")(copy["topology"]);
    tmp_dir = py::module_::import("tempfile").attr("TemporaryDirectory")("", "gradsync-");
    path = (os.attr("path").attr("join")(tmp_dir.attr("name"), "scenario.yaml")).cast<std::string>();
    py::object file = py::module_::import("builtins").attr("open")(path, "w");
    file.attr("write")(py::module_::import("json").attr("dumps")(copy));
    file.attr("close")();
  } else {
    path = path_text(scenario);
  }
  std::vector<std::string> args{"run", path, "--json"};
  add_sets(args, sets);
  add_options(args, options);
  py::object result = json_call(args);
  if (!tmp_dir.is_none()) tmp_dir.attr("cleanup")();
  return result;
}

py::object bench(const py::object& topology, const py::object& sets, const py::kwargs& options) {
  std::vector<std::string> args{"bench", path_text(topology), "--json"};
  add_sets(args, sets);
  add_options(args, options);
  return json_call(args);
}

py::object estimate(const py::kwargs& options) {
  std::vector<std::string> args{"estimate", "--json"};
  add_options(args, options);
  return json_call(args);
}

py::object topo(const py::object& topology) {
  return json_call({"topo", path_text(topology), "--json"});
}

py::object models() { return json_call({"models", "--json"}); }

// Every point of a sweep folder: the rows of DIR/results.jsonl (one dict per finished point,
// as `sweep` and `merge` write them), ready for pandas.DataFrame. No simulation.
py::object sweep_results(const py::object& directory) {
  py::module_ os = py::module_::import("os");
  const py::object file = os.attr("path").attr("join")(path_text(directory), "results.jsonl");
  if (!os.attr("path").attr("exists")(file).cast<bool>())
    throw py::value_error(file.cast<std::string>() +
                          ": error: no results.jsonl (not a gradsync sweep folder?)");
  py::list rows;
  py::object loads = py::module_::import("json").attr("loads");
  py::object handle = py::module_::import("builtins").attr("open")(file, "r", -1, "utf-8");
  for (const auto& line : handle) {
    const std::string text = py::str(line).cast<std::string>();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    rows.append(loads(text));
  }
  handle.attr("close")();
  return rows;
}

}  // namespace

PYBIND11_MODULE(gradsync, m) {
  m.doc() =
      "gradsync: how long a training step takes on a cluster, and why. Each function runs the "
      "gradsync command of the same name in a child process and returns what its --json "
      "prints; bad input raises ValueError (gradsync's file:line:col message).";
  m.def("run", &run, py::arg("scenario"), py::arg("set") = py::none(),
        "run(scenario, set=None, **options): `gradsync run SCENARIO --json` as a dict. "
        "scenario: a path, or a dict in the scenario format (a relative topology path is taken "
        "from the current directory); set: {key: value} for --set; options: other run options "
        "(fidelity='flow').");
  m.def("bench", &bench, py::arg("topology"), py::arg("set") = py::none(),
        "bench(topology, set=None, **options): `gradsync bench TOPOLOGY --json` as a list of "
        "rows; options as on the command line (op='allreduce', algo='auto', min='8B', "
        "max='1GiB', factor=2, gpus=16, best=True, ...); set: topology keys for --set.");
  m.def("estimate", &estimate,
        "estimate(**options): `gradsync estimate --json` as a dict (params='7B', dtype='fp16', "
        "bandwidth='10Gbps', latency='50us', gpus=8, ...).");
  m.def("topo", &topo, py::arg("topology"), "topo(topology): `gradsync topo --json` as a dict.");
  m.def("models", &models, "models(): `gradsync models --json`, the model presets.");
  m.def("sweep_results", &sweep_results, py::arg("directory"),
        "sweep_results(directory): the points of a sweep folder (results.jsonl) as dicts.");
  m.attr("__version__") = "0.1.0";
}
