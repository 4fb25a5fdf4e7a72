#!/usr/bin/env python3
"""README.md's examples hold: every `./build/gradsync …` command in a ```sh block runs (exit 0)
and prints the lines quoted below it, and every topology written out in a ```yaml block loads.

Usage: GRADSYNC=/path/to/gradsync python3 test/cli/readme_examples_test.py SOURCE_DIR

A quoted line is a comment after the command ("# verdict: …"): it must match one line of the
command's output, where "…" stands for any text and runs of spaces for any spaces; a line that
is only "…" skips output. A figure the model changes on purpose is updated in README.md with
the change. Output files a command writes (`-o FILE`) go to a temporary folder. Python 3
standard library only.
"""
import os
import re
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

checks = cli.Checks(quiet=True)


def fail(what):
    checks(False, what)


def blocks(text):
    """(language, first line number, lines) of every fenced block."""
    out, lang, start, lines = [], None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, lines = line[3:].strip(), n + 1, []
            else:
                out.append((lang, start, lines))
                lang = None
        elif lang is not None:
            lines.append(line)
    return out


def examples(lines):
    """(command, quoted lines) for each ./build/gradsync command of a sh block."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("./build/gradsync "):
            i += 1
            continue
        cmd = line
        while cmd.endswith("\\"):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        quoted = []
        while i < len(lines) and lines[i].startswith("#"):
            quoted.append(lines[i][1:].strip())
            i += 1
        out.append((cmd, quoted))
    return out


def pattern(quoted):
    parts = [re.escape(p.strip()) for p in quoted.split("…")]
    regex = ".*".join(re.sub(r"(\\ )+", r"\\s+", p) for p in parts)
    return re.compile(regex)


def main():
    if not os.environ.get("GRADSYNC") or len(sys.argv) < 2:
        sys.exit("usage: GRADSYNC=/path/to/gradsync readme_examples_test.py SOURCE_DIR")
    source = os.path.abspath(sys.argv[1])
    text = open(os.path.join(source, "README.md"), encoding="utf-8").read()
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for lang, start, lines in blocks(text):
            if lang == "sh":
                for cmd, quoted in examples(lines):
                    args = shlex.split(cmd)[1:]
                    for k, a in enumerate(args[:-1]):
                        if a == "-o":
                            args[k + 1] = os.path.join(tmp, os.path.basename(args[k + 1]))
                    p = cli.run(*args, cwd=source, timeout=600)
                    name = f"README.md:{start}: {' '.join(args[:2])}"
                    if p.returncode != 0:
                        fail(f"{name}: exit {p.returncode}: {p.stderr.strip()[-500:]}")
                        continue
                    output = (p.stdout + p.stderr).splitlines()
                    for q in quoted:
                        if q.strip("… ") == "":
                            continue
                        checked += 1
                        if not any(pattern(q).search(o) for o in output):
                            fail(f"{name}: no output line matches \"{q}\"")
            elif lang == "yaml" and lines and lines[0].startswith("name:") and \
                    any(l.startswith(("nodes:", "devices:")) for l in lines):
                path = os.path.join(tmp, f"readme-{start}.yaml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                p = cli.run("topo", path)
                checked += 1
                if p.returncode != 0:
                    fail(f"README.md:{start}: the topology does not load: {p.stderr.strip()}")
    failures = len(checks.failures)
    print(f"{checked} README lines and topologies checked, {failures} failed")
    sys.exit(1 if failures or checked == 0 else 0)


if __name__ == "__main__":
    main()
