#!/usr/bin/env python3
"""Every key of `gradsync run --json` that other commands read back (include/gradsync/report/run_json.hpp:
advise, sweep's regression gate, report) is in a real run's output, with the type its readers
expect.

Usage: GRADSYNC=/path/to/gradsync python3 test/cli/run_json_keys_test.py SOURCE_DIR
Python 3 standard library only.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

NESTED = {"kBottleneckLink": "kBottleneck", "kMemoryTotal": "kMemoryPerGpu"}  # key inside key
STRINGS = {"kVerdict", "kBottleneckLink"}
BOOLEANS = {"kFitsInMemory"}
OBJECTS = {"kBottleneck", "kMemoryPerGpu"}


def main():
    source = sys.argv[1]
    with open(os.path.join(source, "include", "gradsync", "report", "run_json.hpp"), encoding="utf-8") as f:
        keys = dict(re.findall(r'constexpr const char\* (k\w+) = "(\w+)";', f.read()))
    if len(keys) < 10:
        sys.exit(f"found only {len(keys)} keys in run_json.hpp")
    run = cli.run_json("run", os.path.join(source, "scenarios", "default.yaml"), "--json")
    failures = 0
    for name, key in keys.items():
        where = run
        if name in NESTED:
            where = run.get(keys[NESTED[name]], {})
        value = where.get(key) if isinstance(where, dict) else None
        kind = (str if name in STRINGS else bool if name in BOOLEANS else dict if name in OBJECTS
                else (int, float))
        if value is None or not isinstance(value, kind):
            failures += 1
            print(f"FAIL run_json::{name} = \"{key}\": {value!r} in run --json")
    print(f"{len(keys)} keys checked, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
