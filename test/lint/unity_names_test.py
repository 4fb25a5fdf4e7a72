#!/usr/bin/env python3
"""check_unity_names.py finds what it must on its fixture (test/lint/unity_clash/): the five
file-local names first.cpp and second.cpp both define (a helper overloaded with another
signature, a type, a static function, a constant, a macro), and not the type alias the two
files declare word for word. Exit 0 when the lint's report is exactly that, else 1."""
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
run = subprocess.run([sys.executable, os.path.join(here, "check_unity_names.py"),
                      os.path.join(here, "unity_clash")], capture_output=True, text=True)
found = sorted(re.findall(r"^clash: '(\w+)' is file-local in 2 files: first\.cpp:\d+, "
                          r"second\.cpp:\d+$", run.stdout, re.M))
expected = ["Row", "SCALE", "gbps", "helper", "kLimit"]
if run.returncode != 1 or found != expected:
    print(f"check_unity_names.py on unity_clash/: exit {run.returncode}, names {found}, "
          f"expected exit 1 and {expected}\n{run.stdout}{run.stderr}")
    sys.exit(1)
print(f"ok: the lint names {', '.join(expected)} and lets the shared alias pass")
