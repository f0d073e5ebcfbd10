#!/usr/bin/env python3
"""docs/reproductions.html checked in a real browser: loads the page from disk in headless
Chromium (Debian's chromium and chromium-driver, driven by python3-selenium), and checks that
every claim row of the page's data is rendered (one visible table row each, with its verdict),
that every picture decoded and has a size, and that a full-page screenshot has a sensible size
and is not blank. Exits 77 (CTest's skip) naming what is missing where Chromium, its driver or
selenium is absent, never a silent pass; 1 naming each failure.

    scripts/check-reproductions-html.py [--page docs/reproductions.html] [--screenshot OUT.png]
"""
import argparse
import os
import re
import shutil
import struct
import sys
import tempfile
import zlib

SKIP = 77


def png_size_and_colours(path):
    """Width, height and the number of distinct pixel rows in a PNG (8-bit RGB/RGBA, as Chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * (4 if ctype == 6 else 3) + 1
    rows = {raw[i * stride + 1:(i + 1) * stride] for i in range(0, height, max(1, height // 200))}
    return width, height, len(rows)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", default=os.path.join(root, "docs", "reproductions.html"))
    parser.add_argument("--screenshot", help="keep the full-page screenshot here")
    args = parser.parse_args()

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    missing = [p for p in (chromium, driver) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("python3-selenium")
    if missing:
        print(f"SKIPPED: no headless browser here ({', '.join(missing)} missing; scripts/setup.sh installs "
              "chromium, chromium-driver and python3-selenium)")
        return SKIP

    html = open(args.page, encoding="utf-8").read()
    expected_rows = len(re.findall(r'<tr class="claim"', html))
    expected_images = len(re.findall(r'<img class="plot"', html))
    if expected_rows == 0:
        print(f"FAILED: {args.page} has no claim rows")
        return 1

    options = Options()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="lengen-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = chromium
    failures = []
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        browser.get("file://" + os.path.abspath(args.page))
        rows = browser.execute_script(
            "return [...document.querySelectorAll('tr.claim')].map(r => {"
            " const b = r.getBoundingClientRect();"
            " return [r.id, b.width, b.height, r.cells.length, r.cells[8] ? r.cells[8].innerText : ''];})")
        images = browser.execute_script(
            "return [...document.images].map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight,"
            " i.getBoundingClientRect().width])")
        if len(rows) != expected_rows:
            failures.append(f"{len(rows)} claim rows rendered, the page has {expected_rows}")
        verdicts = ("reproduces", "direction only", "does not", "no paper figure", "not recorded")
        for rid, width, height, cells, verdict in rows:
            if width <= 0 or height <= 0 or cells != 12:
                failures.append(f"row {rid}: not rendered as a 12-cell row ({cells} cells, {width} x {height})")
            if verdict.split(" (versus ")[0] not in verdicts:
                failures.append(f"row {rid}: verdict cell reads '{verdict}'")
        if len(images) != expected_images:
            failures.append(f"{len(images)} images in the DOM, the page has {expected_images}")
        for alt, complete, nw, nh, shown in images:
            if not complete or nw <= 0 or nh <= 0 or shown <= 0:
                failures.append(f"image {alt}: not decoded or not shown (complete {complete}, {nw} x {nh}, shown {shown})")
        # A full-page screenshot: the window as tall as the document.
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1400, min(max(height, 1000), 30000))
        shot = args.screenshot or os.path.join(profile, "page.png")
        browser.save_screenshot(shot)
    finally:
        browser.quit()
    width, height, distinct = png_size_and_colours(shot)
    if width < 800 or height < 1000:
        failures.append(f"screenshot {width} x {height}: smaller than the page should be")
    if distinct < 20:
        failures.append(f"screenshot looks blank ({distinct} distinct pixel rows of 200 sampled)")
    shutil.rmtree(profile, ignore_errors=True)
    for f in failures:
        print("FAILED:", f)
    if failures:
        return 1
    print(f"reproductions.html in Chromium: {len(rows)} claim rows and {len(images)} pictures rendered; "
          f"screenshot {width} x {height}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
