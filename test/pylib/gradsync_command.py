"""How the Python tests and benchmarks of test/ find and run the gradsync executable.

ctest passes the executable in the GRADSYNC environment variable (test/*/CMakeLists.txt); run
by hand, set it the same way (GRADSYNC=build/gradsync python3 test/cli/sweep_test.py ...).
Each script imports this module from its own folder, whatever its depth under test/:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
    import gradsync_command as cli

Python 3 standard library only; nothing here prints except Checks.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

# The repository's root: test/pylib/../.. (the default SOURCE_DIR of every script).
SOURCE_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class CommandFailed(RuntimeError):
    """A gradsync command that had to succeed exited with another status."""


def executable(default=None):
    """The gradsync executable: $GRADSYNC, else `default`; with neither, exits with a usage line."""
    exe = os.environ.get("GRADSYNC") or default
    if not exe:
        sys.exit("set GRADSYNC to the gradsync executable")
    return exe


def source_dir(argv_index):
    """sys.argv[argv_index] as an absolute path when given, else the repository's root."""
    if len(sys.argv) > argv_index:
        return os.path.abspath(sys.argv[argv_index])
    return SOURCE_DIR


def command(*args, exe=None):
    """The argument list of `gradsync ARGS...` (for Popen and for messages)."""
    return [exe or executable(), *[str(a) for a in args]]


def run(*args, exe=None, timeout=None, env=None, cwd=None):
    """Runs `gradsync ARGS...` to completion with its output captured as text; any exit status."""
    return subprocess.run(command(*args, exe=exe), capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def status(*args, **kwargs):
    """(exit status, stdout, stderr) of `gradsync ARGS...` (keywords as for run())."""
    p = run(*args, **kwargs)
    return p.returncode, p.stdout, p.stderr


def run_ok(*args, **kwargs):
    """stdout of `gradsync ARGS...`; CommandFailed (with the end of stderr) unless it exits 0."""
    p = run(*args, **kwargs)
    if p.returncode != 0:
        raise CommandFailed(f"{' '.join(p.args)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def run_json(*args, **kwargs):
    """The JSON document `gradsync ARGS...` prints (ARGS include --json); it must exit 0."""
    return json.loads(run_ok(*args, **kwargs))


def bench_rows(topology, *args, **kwargs):
    """The rows of `gradsync bench TOPOLOGY ARGS... --json`, one per message size."""
    return run_json("bench", topology, *args, "--json", **kwargs)


def bench_text(topology_text, *args, **kwargs):
    """bench_rows() of a topology given as YAML text, written to a temporary file."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(topology_text)
        path = f.name
    try:
        return bench_rows(path, *args, **kwargs)
    finally:
        os.unlink(path)


def wall_time(*args, exe=None, **kwargs):
    """Wall seconds of `gradsync ARGS...`, its output discarded, whatever its exit status
    (keywords go to subprocess.run: cwd, env)."""
    start = time.perf_counter()
    subprocess.run(command(*args, exe=exe), check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, **kwargs)
    return time.perf_counter() - start


def run_measured(*args, exe=None, env=None):
    """Runs `gradsync ARGS...` once, for a benchmark: (exit status, stdout, stderr, wall seconds,
    peak RSS in bytes of that process alone, from wait4's rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command(*args, exe=exe), stdout=out, stderr=err, text=True, env=env)
        _, wait_status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(wait_status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), wall, usage.ru_maxrss * 1024


def stderr_lines(p):
    """The non-empty lines a finished process printed on stderr (a bad input's error is one)."""
    return p.stderr.strip().splitlines()


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write_text(path, text):
    """Writes text to path and returns path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def read_jsonl(path):
    """The records of a JSON Lines file (a sweep's results.jsonl), blank lines skipped."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Checks:
    """Named checks of one test script: each prints one line ("ok    WHAT" or "FAIL  WHAT";
    quiet=True prints failures only) and a failure is remembered, so a script reports every
    failed check before it exits 1 (exit_status())."""

    def __init__(self, quiet=False):
        self.quiet = quiet
        self.failures = []
        self.passed = 0

    def __call__(self, ok, what):
        ok = bool(ok)
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
        if not ok or not self.quiet:
            print(("ok    " if ok else "FAIL  ") + what, flush=True)
        return ok

    def require(self, ok, what):
        """A check the rest of the script depends on: exits 1 at once when it fails."""
        if not self(ok, what):
            sys.exit(1)
        return ok

    def exit_status(self):
        """0 when every check passed, else 1 (after a line counting the failures)."""
        if self.failures:
            print(f"{len(self.failures)} check(s) failed", flush=True)
            return 1
        return 0
