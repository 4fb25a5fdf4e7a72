#!/usr/bin/env python3
"""docs/reference.md names every key the loaders accept and every key `run --json` prints.

Usage: reference_keys_test.py PROJECT_ROOT

Keys are read statically from the sources (no build needed):

- sim/config/{topology,scenario,sweep}_loader.cpp (the scenario's with scenario_keys.hpp,
  scenario_model.cpp and scenario_sync.cpp): every `const std::vector<std::string>
  k...Keys{...}` list, and every key list handed to a `MapReader` (the loaders' readers reject
  any key not in that list, so together they are every key a file may hold). Where the reader's
  label is a dotted path ("node.pcie", "sync.compression", fmt::format("model.layers.{}", i)),
  the key must appear fully qualified (`node.pcie.bandwidth`, `model.layers.N.tensors`; list
  entries are written N). Top-level keys must appear as themselves (`nodes`). Where the path is
  only known at run time (`parent.path(key)`), or a list is not used by a reader, a backticked
  name that ends in `.key` also counts.
- sim/report/run_report.cpp, run_result_json() (run_json::kX constants read from run_json.hpp): the
  top-level keys of `gradsync run --json` (exactly,
  `step_time_s`) and the keys of its nested objects written as out["x"] = {{"y", ...}}
  (`parallel.data`). Skipped with a note if run_result_json() cannot be found.

A key counts as documented when it appears in docs/reference.md in backticks. Exit status 1,
with the missing keys listed, when one does not; otherwise prints "N keys documented".
Python 3 standard library only.
"""

import os
import re
import sys

# Each loader with the files that hold its key lists and readers, read as one text.
LOADERS = [
    "sim/config/topology_keys.hpp+sim/config/topology_readers.cpp+sim/config/topology_loader.cpp",
    "sim/config/scenario_keys.hpp+sim/config/scenario_model.cpp+sim/config/scenario_sync.cpp"
    "+sim/config/scenario_loader.cpp",
    "sim/config/sweep_loader.cpp",
]
RUN_REPORT = "sim/report/run_report.cpp"
RUN_JSON_KEYS = "include/gradsync/report/run_json.hpp"  # run_json::kX constants, read as their strings
REFERENCE = "docs/reference.md"

# Readers whose label is a word for error messages rather than the dotted path of the keys.
LABEL_PATHS = {
    "device": "devices.N",
    "link": "links.N",
    "nccl.tuner rule": "nccl.tuner.N",
}

STRING_RE = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
NAMED_LIST_RE = re.compile(
    r"const\s+std::vector<std::string>\s+(k\w*Keys)\s*\{([^{}]*)\}\s*;", re.S)
MAPREADER_RE = re.compile(r"(?<![:\w&])MapReader\b\s*(?:\w+\s*)?\(")
FORMAT_RE = re.compile(r'^fmt::format\(\s*"((?:[^"\\]|\\.)*)"')


def strip_comments(text):
    """The C++ text with // and /* */ comments blanked, string and char literals kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def skip_literal(text, i):
    """Index just past the string or char literal starting at text[i]."""
    quote = text[i]
    j = i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def call_arguments(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the end index."""
    args, depth, start, i = [], 0, open_paren + 1, open_paren
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i].strip())
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return args, len(text)


def braced_entry_keys(text, open_brace):
    """Keys of the entries {"key", value} directly inside the braced list at open_brace."""
    keys, depth, i = [], 0, open_brace
    while i < len(text):
        c = text[i]
        if c in "\"'":
            if depth == 2 and text[i] == '"' and text[i - 1] == "{":
                m = STRING_RE.match(text, i)
                if m:
                    keys.append(m.group(1))
            i = skip_literal(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return keys, i + 1
        i += 1
    return keys, len(text)


def reader_path(label):
    """The dotted path of a MapReader label, or None when only known at run time."""
    m = STRING_RE.fullmatch(label)
    if m:
        text = m.group(1)
        return LABEL_PATHS.get(text, text)
    m = FORMAT_RE.match(label)
    if m:
        return m.group(1).replace("{}", "N")
    return None


def loader_requirements(root):
    """(token, exact, origin) for every key of the loaders."""
    reqs = []
    for rel in LOADERS:
        text = ""
        for part in rel.split("+"):
            with open(os.path.join(root, part), encoding="utf-8") as f:
                text += strip_comments(f.read()) + "\n"
        named = {}
        for m in NAMED_LIST_RE.finditer(text):
            named[m.group(1)] = STRING_RE.findall(m.group(2))
        if not named and "sweep" not in rel:
            raise SystemExit(f"{rel}: found no `const std::vector<std::string> k...Keys{{...}}` "
                             "list; the parser of this test needs updating")
        used = set()
        for m in MAPREADER_RE.finditer(text):
            args, _ = call_arguments(text, m.end() - 1)
            if len(args) < 4:
                continue
            label, key_list = args[2], args[3]
            if key_list.startswith("{"):
                keys = STRING_RE.findall(key_list)
                what = "a MapReader key list"
            elif key_list in named:
                keys = named[key_list]
                used.add(key_list)
                what = key_list
            else:
                continue  # a list built at run time (the union of the two topology forms)
            prefix = reader_path(label)
            for k in keys:
                if prefix is None:
                    reqs.append((k, False, f"{rel} {what}"))
                else:
                    token = f"{prefix}.{k}" if prefix else k
                    reqs.append((token, True, f"{rel} {what} ({prefix or 'top level'})"))
        for name, keys in named.items():
            if name not in used:
                reqs.extend((k, False, f"{rel} {name}") for k in keys)
    return reqs


def run_json_requirements(root):
    """(token, exact, origin) for the keys run_result_json() writes; [] with a note if not found."""
    path = os.path.join(root, RUN_REPORT)
    try:
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
    except OSError as e:
        print(f"note: {RUN_REPORT}: {e}; run --json keys not checked")
        return []
    try:
        with open(os.path.join(root, RUN_JSON_KEYS), encoding="utf-8") as f:
            for m in re.finditer(r'constexpr const char\* (k\w+) = "(\w+)";', f.read()):
                text = re.sub(rf"\brun_json::{m.group(1)}\b", f'"{m.group(2)}"', text)
    except OSError:
        pass
    start = text.find("run_result_json(const")
    body = text.find("{", text.find(")", start)) if start >= 0 else -1
    if body < 0:
        print(f"note: no run_result_json() in {RUN_REPORT}; run --json keys not checked")
        return []
    _, body_end = braced_entry_keys(text, body)
    fn = text[body:body_end]
    origin = f"{RUN_REPORT} run_result_json()"
    reqs = []
    m = re.search(r"\bout\s*=\s*\{", fn)
    if m:
        keys, _ = braced_entry_keys(fn, m.end() - 1)
        reqs.extend((k, True, origin) for k in keys)
    for m in re.finditer(r'\bout\["(\w+)"\]\s*=\s*', fn):
        reqs.append((m.group(1), True, origin))
        if fn[m.end():m.end() + 1] == "{":
            sub, _ = braced_entry_keys(fn, m.end())
            reqs.extend((f"{m.group(1)}.{k}", True, origin) for k in sub)
    if not reqs:
        print(f"note: found no keys in run_result_json() of {RUN_REPORT}")
    return reqs


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    with open(os.path.join(root, REFERENCE), encoding="utf-8") as f:
        doc = f.read()
    tokens = set(re.findall(r"`([^`\n]+)`", doc))

    reqs = loader_requirements(root) + run_json_requirements(root)
    seen, missing = set(), []
    for token, exact, origin in reqs:
        if (token, exact) in seen:
            continue
        seen.add((token, exact))
        found = token in tokens or (
            not exact and any(t.endswith("." + token) for t in tokens))
        if not found:
            missing.append((token, exact, origin))

    if missing:
        print(f"{REFERENCE} misses {len(missing)} key(s):", file=sys.stderr)
        for token, exact, origin in missing:
            how = f"`{token}`" if exact else f"`{token}` or `….{token}`"
            print(f"  {how}  (from {origin})", file=sys.stderr)
        return 1
    print(f"{len(seen)} keys documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
