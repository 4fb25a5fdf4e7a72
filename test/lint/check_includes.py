#!/usr/bin/env python3
"""Layering of gradsync's own headers: a file includes only headers of its library or of the
libraries below it, model < config, trace < engine < report < io < cli < python, and public
headers mirror the sources.

Usage: python3 test/lint/check_includes.py PROJECT_DIR

Each source's library is read from CMakeLists.txt's add_library lists; a public header
include/gradsync/M/X.hpp belongs to the library of its source sim/M/X.cpp (one header, one
source), and a header with no source (types and inline code only) to the model. Public headers
live in a module's folder (include/gradsync/M/ mirrors sim/M/): a header at the top of
include/gradsync/, or one whose source is in another module's folder, is a violation.
A header in sim/ (internal to a folder) belongs to the library of its source, else to the
highest library among that folder's sources. So
the model never includes a config or engine header, config never an engine header, and a
public header never one of a library above its own. Prints every violation and exits 1; the
build runs it (target check_layers) and so does ctest. Python 3 standard library only.
"""
import os
import re
import sys

LEVEL = {"gradsync_model": 0, "gradsync_config": 1, "gradsync_trace": 1,
         "gradsync_engine": 2, "gradsync_report": 3, "gradsync_io": 4, "gradsync_cli": 5,
         "gradsync_python": 6, "gradsync": 6}
ALLOWED = {  # what each library may include besides itself and the model
    "gradsync_model": set(),
    "gradsync_config": set(),
    "gradsync_trace": set(),
    "gradsync_engine": {"gradsync_config"},
    "gradsync_report": {"gradsync_config", "gradsync_trace", "gradsync_engine"},
    "gradsync_io": {"gradsync_config", "gradsync_trace", "gradsync_engine", "gradsync_report"},
    "gradsync_cli": {"gradsync_config", "gradsync_trace", "gradsync_engine", "gradsync_report",
                     "gradsync_io"},
    "gradsync_python": {"gradsync_config", "gradsync_trace", "gradsync_engine", "gradsync_report",
                        "gradsync_io", "gradsync_cli"},
    "gradsync": {"gradsync_config", "gradsync_trace", "gradsync_engine", "gradsync_report",
                 "gradsync_io", "gradsync_cli"},
}


def library_sources(cmake_text):
    """{relative source path: library} from add_library / add_executable / pybind11 lists."""
    out = {}
    for m in re.finditer(r"(?:add_library|add_executable|pybind11_add_module)\((\w+)([^)]*)\)",
                         cmake_text):
        name, body = m.group(1), m.group(2)
        if name not in LEVEL:
            continue
        for token in body.split():
            if token.endswith(".cpp"):
                out[token] = "gradsync_python" if name == "gradsync_python" else name
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        sources = library_sources(f.read())
    by_stem, by_folder = {}, {}
    for path, lib in sources.items():
        by_stem.setdefault(os.path.splitext(os.path.basename(path))[0], lib)
        if lib in ("gradsync", "gradsync_python"):
            continue  # main.cpp and the module: their folder's headers are the CLI's
        folder = os.path.dirname(path)
        by_folder[folder] = max(by_folder.get(folder, lib), lib, key=lambda l: LEVEL[l])

    def header_library(path):
        """The library of a header given by its path relative to root."""
        stem = os.path.splitext(os.path.basename(path))[0]
        if path.startswith("include/gradsync/"):
            module = os.path.dirname(path)[len("include/gradsync/"):]
            return sources.get(f"sim/{module}/{stem}.cpp", "gradsync_model")
        return by_stem.get(stem) or by_folder.get(os.path.dirname(path), "gradsync_model")

    files = dict(sources)
    for folder in ("include/gradsync", "sim"):
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in names:
                if n.endswith(".hpp"):
                    rel = os.path.relpath(os.path.join(dirpath, n), root)
                    files[rel] = header_library(rel)
    violations = []
    for rel in sorted(files):
        if not rel.startswith("include/gradsync/"):
            continue
        module = os.path.dirname(rel)[len("include/gradsync/"):]
        stem = os.path.splitext(os.path.basename(rel))[0]
        if not module:
            violations.append(f"{rel}: a public header belongs in include/gradsync/MODULE/")
        elif f"sim/{module}/{stem}.cpp" not in sources and stem in by_stem:
            elsewhere = [s for s in sources if os.path.basename(s) == stem + ".cpp"]
            violations.append(f"{rel}: its source is {', '.join(sorted(elsewhere))}; "
                              f"include/gradsync/ mirrors sim/")
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for rel, lib in sorted(files.items()):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in include.finditer(text):
            name = m.group(1)
            if name.startswith("gradsync/"):
                target = "include/" + name
            else:
                target = os.path.normpath(os.path.join(os.path.dirname(rel), name))
            if not os.path.isfile(os.path.join(root, target)):
                continue
            tlib = header_library(target)
            if tlib != lib and tlib != "gradsync_model" and tlib not in ALLOWED[lib]:
                line = text.count("\n", 0, m.start()) + 1
                violations.append(f"{rel}:{line}: {lib} includes {name} ({tlib})")
    for v in violations:
        print(v)
    print(f"{len(files)} files checked, {len(violations)} include(s) against the layering")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
