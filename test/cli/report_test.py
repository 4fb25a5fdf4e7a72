#!/usr/bin/env python3
"""CLI contract of `gradsync report` (issue #6 item 3).

Usage: GRADSYNC=/path/to/gradsync python3 test/cli/report_test.py CASE [SOURCE_DIR]

Cases (each one CTest test):
  html       examples/sweeps/fabric-scaling.yaml (24 points, a few seconds) swept into a temp
             folder; `report` writes one self-contained HTML file: >= 2 inline <svg> charts
             without gnuplot's XML prolog, the table of all 24 points, no network reference,
             the cost section skipped with a note
  bad_input  a folder without results exits 2 with one line "DIR: error: ..."; without
             gnuplot the report holds its table (exit 0, one warning); a failing gnuplot
             exits 1 (the environment, not the input)
  chromium   headless Chromium screenshots the example's report and a 96-point one, each at
             1200x2000 and 800x1200 (charts scale to the window); every PNG (decoded here
             with zlib) is not blank and has colored chart pixels. Exit 77 (skipped) when
             chromium is not installed.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import gradsync_command as cli  # noqa: E402

SOURCE = cli.source_dir(2)
SWEEP = os.path.join(SOURCE, "examples", "sweeps", "fabric-scaling.yaml")
# Each message says what went wrong: only failures are printed.
check = cli.Checks(quiet=True)


# 96 points (16 series of 6 server counts): the report must stay readable at ~100 points.
SWEEP_96 = """name: report-96
base: {base}
grid:
  sync.algorithm: [ring, tree]
  topology_overrides.node.nic_bandwidth: [10Gbps, 25Gbps, 50Gbps, 100Gbps]
  training.accumulation: [1, 4]
  topology_overrides.nodes: [1, 2, 3, 4, 6, 8]
"""


def make_report(tmp, sweep=SWEEP):
    out = os.path.join(tmp, "sweep")
    p = cli.run("sweep", sweep, "-o", out, "-j", "2")
    if p.returncode != 0:
        sys.exit(f"sweep failed ({p.returncode}): {p.stderr}")
    report = os.path.join(tmp, "report.html")
    p = cli.run("report", out, "-o", report)
    check(p.returncode == 0, f"report exited {p.returncode}: {p.stderr}")
    return report


def case_html():
    with tempfile.TemporaryDirectory() as tmp:
        report = make_report(tmp)
        if not check(os.path.isfile(report), "no report.html"):
            return
        text = open(report, encoding="utf-8").read()
        check(text.startswith("<!DOCTYPE html>"), "not an HTML document")
        check(text.count("<svg") >= 2, f"{text.count('<svg')} <svg> elements, want >= 2")
        check("<?xml" not in text and "<!DOCTYPE svg" not in text, "gnuplot's XML prolog left in")
        check('<table class="sortable">' in text, "no sortable table")
        rows = re.findall(r"<tr[ >]", text.split("<tbody>", 1)[-1])
        check(len(rows) == 24, f"{len(rows)} table rows, want 24")
        check("samples/s" in text and "exposed comm" in text, "chart or column titles missing")
        check("carry no cost" in text, "the cost section is not skipped with a note")
        # Self-contained: nothing fetched (xmlns URIs are names, not requests).
        check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "a network reference")
        check("<link" not in text, "an external stylesheet")


def run_err(args, env=None):
    p = cli.run("report", *args, env=env)
    return p.returncode, p.stderr


def case_bad_input():
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        for d in (empty, os.path.join(tmp, "missing")):
            rc, err = run_err([d])
            check(rc == 2, f"report {d} exited {rc}, want 2")
            check(len(err.splitlines()) == 1 and err.startswith(d + ": error: "),
                  f"report {d}: want one line '{d}: error: ...', got {err!r}")
        # An empty results.jsonl: no results.
        jsonl = os.path.join(tmp, "nothing")
        os.mkdir(jsonl)
        open(os.path.join(jsonl, "results.jsonl"), "w").close()
        rc, err = run_err([jsonl])
        check(rc == 2 and err.startswith(jsonl + ": error: "), f"empty results.jsonl: {rc} {err!r}")
        # gnuplot missing: a real result folder, no gnuplot on PATH.
        report = make_report(tmp)
        sweep = os.path.join(tmp, "sweep")
        env = dict(os.environ, PATH=os.path.join(tmp, "no-bin"))
        env.pop("GRADSYNC_GNUPLOT", None)
        rc, err = run_err([sweep, "-o", report + ".2"], env)
        check(rc == 0 and "warning: gnuplot not found" in err and len(err.splitlines()) == 1,
              f"without gnuplot: want exit 0 and one warning, got {rc} {err!r}")
        if rc == 0:
            text = open(report + ".2").read()
            check("<svg" not in text and "no chart: gnuplot not found" in text and "<table" in text,
                  "without gnuplot the report holds its table and says why there is no chart")
        env = dict(os.environ, GRADSYNC_GNUPLOT=os.path.join(tmp, "no-gnuplot"))
        rc, err = run_err([sweep, "-o", report + ".3"], env)
        check(rc == 0 and "GRADSYNC_GNUPLOT" in err, f"GRADSYNC_GNUPLOT missing: {rc} {err!r}")
        # gnuplot that fails: the environment, exit 1 (not bad input).
        failing = os.path.join(tmp, "failing-gnuplot")
        with open(failing, "w") as f:
            f.write("#!/bin/sh\necho 'broken' >&2\nexit 3\n")
        os.chmod(failing, 0o755)
        env = dict(os.environ, GRADSYNC_GNUPLOT=failing)
        rc, err = run_err([sweep, "-o", report + ".4"], env)
        check(rc == 1 and "gnuplot failed" in err and "internal error" not in err,
              f"a failing gnuplot exits 1: {rc} {err!r}")


def png_pixels(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = ihdr
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, color type {color}, interlace {interlace})")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def screenshot(browser, tmp, report, size):
    """Checks a headless Chromium screenshot of `report` at `size` (width, height) is drawn."""
    png = os.path.join(tmp, f"report-{size[0]}x{size[1]}.png")
    profile = tempfile.mkdtemp(dir=tmp)
    start = time.monotonic()
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                        f"--screenshot={png}", f"--window-size={size[0]},{size[1]}",
                        "file://" + report],
                       capture_output=True, text=True, timeout=120)
    name = f"{os.path.basename(os.path.dirname(report))} at {size[0]}x{size[1]}"
    print(f"chromium took {time.monotonic() - start:.2f} s ({name})")
    if not check(os.path.isfile(png), f"{name}: no screenshot (chromium exited {p.returncode}): "
                                      f"{p.stderr[-2000:]}"):
        return
    width, height, bpp, rows = png_pixels(png)
    check((width, height) == size, f"{name}: screenshot is {width}x{height}")
    nonwhite = colored = 0
    for row in rows:
        for i in range(0, len(row), bpp):
            r, g, b = row[i], row[i + 1], row[i + 2]
            if r < 240 or g < 240 or b < 240:
                nonwhite += 1
                if max(r, g, b) - min(r, g, b) > 60:
                    colored += 1  # chart lines and bars; text and grid are grey
    print(f"{name}: {nonwhite} non-white pixels, {colored} colored")
    check(nonwhite > 0.02 * width * height, f"{name}: nearly blank ({nonwhite} non-white pixels)")
    # The first screen shows charts, at either width (charts scale to the window).
    check(colored > 0.004 * width * height, f"{name}: only {colored} colored pixels: the charts did not draw")


def case_chromium():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("SKIP: chromium is not installed")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "24-points")
        large = os.path.join(tmp, "96-points")
        os.mkdir(small)
        os.mkdir(large)
        sweep = os.path.join(large, "sweep.yaml")
        with open(sweep, "w", encoding="utf-8") as f:
            f.write(SWEEP_96.format(base=os.path.join(SOURCE, "scenarios", "bert-large-allreduce-25gbe.yaml")))
        reports = [make_report(small), make_report(large, sweep)]
        text = open(reports[1], encoding="utf-8").read()
        rows = re.findall(r"<tr[ >]", text.split("<tbody>", 1)[-1])
        check(len(rows) == 96, f"{len(rows)} table rows in the 96-point report")
        for report in reports:
            for size in ((1200, 2000), (800, 1200)):  # a desktop window, a laptop half-screen
                screenshot(browser, tmp, report, size)


def main():
    cli.executable()
    case = sys.argv[1]
    {"html": case_html, "bad_input": case_bad_input, "chromium": case_chromium}[case]()
    if check.failures:
        print(f"{len(check.failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
