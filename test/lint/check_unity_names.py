#!/usr/bin/env python3
"""Unity-build safety: no two source files of one target define the same file-local name.

A unity build (-DCMAKE_UNITY_BUILD=ON: README's build, both builds of .ci/test)
compiles a target's files in batches, each batch one translation unit. Names a file means to
keep to itself then meet its neighbours': two `namespace { int error_of(...) }` with the same
signature stop the build, but with other signatures they become overloads and a call may
resolve, silently, to the other file's helper; a `#define` redefined only warns. So every name a
source file defines for itself must be unique within its target:
  - anything declared in an anonymous namespace (functions, variables, types, aliases),
  - `static` functions and variables, `constexpr`/`const` variables at namespace scope,
  - types and aliases defined at namespace scope of a .cpp file,
  - macros (#define).
The same type alias or macro, word for word, in several files is legal and allowed.
Targets and their files are read from the add_library / add_executable lists of the project's
CMakeLists.txt files. Prints each shared name with its files and exits 1; exit 0 when none.

Usage: python3 test/lint/check_unity_names.py PROJECT_DIR
Python 3 standard library only; a heuristic C++ reader (comments, strings and brace depth),
which is enough for this project's sources. It takes ALL_CAPS heads for macro invocations
(TEST_CASE, DOCTEST_...), so an ALL_CAPS constant or function is not checked (macros are,
from their #define).
"""
import collections
import os
import re
import sys

# Lists of sources, by the CMakeLists.txt that holds them (folder relative to the project).
CMAKE_FILES = ["", "test/unit", "test/engine"]
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "decltype",
            "operator", "namespace", "extern", "template", "typename", "alignas"}


def strip_code(text):
    """The text without comments, string and character literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            if m and end >= 0:
                out.append('""' + "\n" * text.count("\n", i, end))
                i = end + len(m.group(1)) + 2
            else:
                out.append(c)
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def declared_name(statement):
    """The name a namespace-scope declaration or definition head introduces, or None."""
    s = re.sub(r"\s+", " ", statement).strip()
    s = re.sub(r"^template ?<.*?> ?", "", s)
    if not s or s.startswith(("using namespace", "namespace", "friend ")):
        return None
    m = re.match(r"(?:struct|class|union|enum(?: class| struct)?) (?:\[\[.*?\]\] )?(\w+)", s)
    if m:
        return m.group(1)
    m = re.match(r"using (\w+) ?=", s)
    if m:
        return m.group(1)
    # A function or variable: the identifier before the first '(' / '=' / '[' / '{' / end.
    m = re.match(r"([^=(\[{]*?)(~?\w+) ?(?:\(|=|\[|\{|$)", s)
    if not m or m.group(2) in KEYWORDS or m.group(2).isupper():
        return None  # ALL_CAPS heads are macro invocations (TEST_CASE, DOCTEST_...)
    return m.group(2)


def local_names(path):
    """{name: (line, text)} of the names the file keeps to itself (module docstring); text is
    the declaration when re-declaring it is harmless (a type alias or a macro: the same text
    twice is legal, another text is a compile error or a redefinition warning), else None."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    names = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", raw, re.M):
        line_end = raw.find("\n", m.start())
        names.setdefault(m.group(1), (raw.count("\n", 0, m.start()) + 1,
                                      raw[m.start():line_end].strip()))
    text = strip_code(raw)
    text = re.sub(r"^[ \t]*#.*$", "", text, flags=re.M)  # preprocessor lines
    is_source = path.endswith((".cpp", ".cc"))
    stack = []  # per open brace: "" anonymous namespace, a name for a named one, None other
    head_start = 0
    for i, c in enumerate(text):
        if c not in "{};":
            continue
        head = text[head_start:i]
        head_start = i + 1
        at_namespace_scope = all(entry is not None for entry in stack)
        if c == "}":
            if stack:
                stack.pop()
            continue
        ns = re.search(r"(?:^|[\s;}])namespace\s*([\w:]*)\s*$", head)
        if c == "{" and ns:
            stack.append(ns.group(1))
            continue
        if c == "{":
            stack.append(None)
        if not at_namespace_scope:
            continue
        name = declared_name(head)
        if not name:
            continue
        s = re.sub(r"\s+", " ", head).strip()
        anonymous = "" in stack[:-1] if c == "{" else "" in stack
        internal = re.match(r"(?:template ?<.*?> ?)?(?:inline )?(static|constexpr|const) ", s)
        is_type = re.match(r"(?:template ?<.*?> ?)?(?:struct|class|union|enum|using \w+ ?=)", s)
        if anonymous or internal or (is_source and is_type):
            start = head_start - len(head) - 1 + (len(head) - len(head.lstrip()))
            alias = s if re.match(r"using \w+ ?=", s) else None
            names.setdefault(name, (text.count("\n", 0, start) + 1, alias))
    return names


def targets(root):
    """[(target, [source path])] from the CMakeLists.txt files of CMAKE_FILES."""
    out = []
    for folder in CMAKE_FILES:
        path = os.path.join(root, folder, "CMakeLists.txt")
        if folder and not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        for m in re.finditer(r"add_(?:library|executable)\((\w+)([^)]*)\)", text):
            files = [os.path.join(root, folder, t) for t in m.group(2).split()
                     if t.endswith((".cpp", ".cc")) and "$" not in t]
            if len(files) > 1:
                out.append((m.group(1), files))
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    problems = 0
    for target, files in targets(root):
        where = collections.defaultdict(list)
        texts = collections.defaultdict(set)
        for path in files:
            for name, (line, text) in local_names(path).items():
                where[name].append(f"{os.path.relpath(path, root)}:{line}")
                texts[name].add(text)
        for name, places in sorted(where.items()):
            same_alias = len(texts[name]) == 1 and None not in texts[name]
            if len(places) > 1 and not same_alias:
                problems += 1
                print(f"{target}: '{name}' is file-local in {len(places)} files: "
                      + ", ".join(places))
    if problems:
        print(f"{problems} name(s) shared by files of one target: rename so that each file's "
              "own helpers are unique within its target (a unity build compiles them together)")
        return 1
    print(f"ok: {sum(len(f) for _, f in targets(root))} sources, no file-local name shared "
          "within a target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
