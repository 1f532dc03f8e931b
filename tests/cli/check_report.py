#!/usr/bin/env python3
"""Opens a flashkm HTML report in headless Chromium and checks that its charts were drawn.

Usage: check_report.py REPORT.html [--points N] [--bars M] [--timeout S]

Fails (exit 1) when the page references network resources, its embedded JSON is not strict JSON,
a script error was reported (body[data-error]), or either chart lacks the marks the data calls
for: one polyline per run with one point per finite iteration of the kept run, one rect per bar.
--points / --bars add the counts the fit itself reported. A missing Chromium is a failure too
(`make deps` installs Debian's chromium); set CHROMIUM to choose the browser binary.
"""

import argparse
import html.parser
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CHART_IDS = ("inertia-chart", "sizes-chart")


class Failure(Exception):
    pass


def find_browser():
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(command, timeout):
    """Runs Chromium in its own process group: on timeout its helper processes (zygote, GPU,
    renderer) would otherwise keep the output pipe open and hang us."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise Failure(f"chromium did not finish within {timeout} s: {' '.join(command)}")
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def dump_dom(browser, page, timeout):
    """The DOM after the page's scripts ran, as Chromium serialises it."""
    last_error = ""
    # Older Chromium builds lack the new headless mode; fall back to the old one.
    for headless in ("--headless=new", "--headless"):
        with tempfile.TemporaryDirectory(prefix="flashkm-report-profile-") as profile:
            command = [browser, headless, "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                       "--no-first-run", f"--user-data-dir={profile}",
                       # Any network lookup fails at once instead of waiting on a resolver.
                       "--host-resolver-rules=MAP * ~NOTFOUND",
                       "--dump-dom", page.as_uri()]
            code, out, err = run_browser(command, timeout)
        if code == 0 and "<body" in out:
            return out
        last_error = f"exit status {code}; stderr ends with:\n{err[-2000:]}"
    raise Failure(f"chromium dumped no DOM ({last_error})")


class Dom(html.parser.HTMLParser):
    """Collects what the checks need: body attributes, the title, and every element inside each
    chart SVG (tag and attributes)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body = None
        self.title = ""
        self.in_title = False
        self.charts = {}
        self.open_chart = None
        self.svg_depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "title" and self.open_chart is None:
            self.in_title = True
        if self.open_chart is not None:
            self.charts[self.open_chart]["elements"].append((tag, attrs))
            self.svg_depth += tag == "svg"
        elif tag == "svg" and attrs.get("id") in CHART_IDS:
            self.open_chart = attrs["id"]
            self.charts[self.open_chart] = {"attrs": attrs, "elements": []}
            self.svg_depth = 1

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if self.open_chart is not None and tag == "svg":
            self.svg_depth -= 1
            if self.svg_depth == 0:
                self.open_chart = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data


def check_self_contained(text, where):
    found = re.search(r"https?://", text, re.IGNORECASE)
    if found:
        raise Failure(f"{where} references the network: ...{text[max(0, found.start() - 60):found.end() + 60]}...")
    # Scheme-relative URLs ("//cdn...") in attributes or CSS load from the network too.
    found = re.search(r"""(?:\b(?:src|href|srcset|action|poster)\s*=\s*["']?|url\(\s*["']?)\s*//""", text,
                      re.IGNORECASE)
    if found:
        raise Failure(f"{where} references the network: {found.group(0)}")


def embedded_json(text):
    blocks = re.findall(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.DOTALL)
    if len(blocks) != 1:
        raise Failure(f"expected one <script id=\"report-data\"> JSON block, found {len(blocks)}")

    def reject(constant):
        raise Failure(f"embedded JSON holds {constant}, which is not JSON (non-finite numbers must be null)")

    try:
        return json.loads(blocks[0], parse_constant=reject)
    except json.JSONDecodeError as e:
        raise Failure(f"embedded JSON does not parse: {e}")


def drawn_count(chart, name):
    value = chart["attrs"].get("data-drawn")
    if value is None:
        raise Failure(f"#{name} has no data-drawn: the drawing script did not finish")
    if not value.isdigit() or int(value) <= 0:
        raise Failure(f"#{name} has data-drawn=\"{value}\": nothing was drawn")
    return int(value)


def check(page, expected_points, expected_bars, timeout):
    text = page.read_text(encoding="utf-8")
    check_self_contained(text, "the report file")
    data = embedded_json(text)

    browser = find_browser()
    if browser is None:
        print("check_report: FAIL: no chromium found (install Debian's chromium or set CHROMIUM)")
        sys.exit(1)
    started = time.monotonic()
    dom_text = dump_dom(browser, page, timeout)
    elapsed = time.monotonic() - started
    check_self_contained(dom_text, "the page after its scripts ran")

    dom = Dom()
    dom.feed(dom_text)
    dom.close()
    if dom.body is None:
        raise Failure("the dumped DOM has no <body>")
    if "data-error" in dom.body:
        raise Failure(f"the page reported a script error: {dom.body['data-error']}")
    # The browser's reading of the HTML-escaped title must give back the JSON-escaped name.
    if dom.title != "flashkm report: " + data["summary"]["input"]:
        raise Failure(f"the <title> reads {dom.title!r}, the JSON input is {data['summary']['input']!r}")
    for name in CHART_IDS:
        if name not in dom.charts:
            raise Failure(f"no <svg id=\"{name}\"> in the page")

    inertia = dom.charts["inertia-chart"]
    drawn = drawn_count(inertia, "inertia-chart")
    lines = [attrs for tag, attrs in inertia["elements"] if tag == "polyline"]
    if drawn != len(lines) or len(lines) != len(data["inertia"]["runs"]):
        raise Failure(f"#inertia-chart: data-drawn={drawn}, {len(lines)} polylines, "
                      f"{len(data['inertia']['runs'])} runs in the data")
    best = [attrs for attrs in lines if "best" in attrs.get("class", "").split()]
    if len(best) != 1:
        raise Failure(f"#inertia-chart: {len(best)} polylines marked as the kept run, expected 1")
    points = len(best[0].get("points", "").split())
    best_run = [run for run in data["inertia"]["runs"] if run["best"]][0]
    finite = sum(v is not None for v in best_run["inertia"])
    if points != finite:
        raise Failure(f"#inertia-chart: the kept run's line has {points} points, its data {finite} iterations")
    if expected_points is not None and points != expected_points:
        raise Failure(f"#inertia-chart: the kept run's line has {points} points, expected {expected_points}")

    sizes = dom.charts["sizes-chart"]
    drawn = drawn_count(sizes, "sizes-chart")
    bars = [attrs for tag, attrs in sizes["elements"]
            if tag == "rect" and "bar" in attrs.get("class", "").split()]
    if drawn != len(bars) or len(bars) != len(data["sizes"]["bars"]):
        raise Failure(f"#sizes-chart: data-drawn={drawn}, {len(bars)} bars, {len(data['sizes']['bars'])} in the data")
    if expected_bars is not None and len(bars) != expected_bars:
        raise Failure(f"#sizes-chart: {len(bars)} bars, expected {expected_bars}")

    print(f"check_report: OK: {page.name}: {len(lines)} inertia lines (kept run: {points} points), "
          f"{len(bars)} size bars; chromium took {elapsed:.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=pathlib.Path)
    parser.add_argument("--points", type=int, help="iterations of the kept run")
    parser.add_argument("--bars", type=int, help="bars of the cluster-size chart")
    parser.add_argument("--timeout", type=float, default=60, help="seconds Chromium may take")
    args = parser.parse_args()
    try:
        check(args.report.resolve(), args.points, args.bars, args.timeout)
    except (Failure, OSError) as e:
        print(f"check_report: FAIL: {args.report}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
