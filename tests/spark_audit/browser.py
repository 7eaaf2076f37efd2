"""Headless Chromium for the report tests: what a person sees on the page at a given window size.

The report has no scripts; the test loads a copy with one probe script appended, which writes the page's
visible text (``innerText``: what CSS shows) and the layout of its tables into the DOM, and Chromium dumps
the DOM once the page has settled. Chromium is Debian's ``chromium`` (``make browser``, part of ``make test``);
without it the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BINARIES = ("chromium", "chromium-browser", "google-chrome", "chrome")

PROBE = """
<script>
(() => {
  const doc = document.documentElement;
  const tables = [...document.querySelectorAll("div.scroll")].map((box) => {
    const section = box.closest("section");
    const heading = box.previousElementSibling && box.previousElementSibling.tagName === "H3" ? box.previousElementSibling.textContent : "";
    return {
      section: section ? section.id : "",
      heading,
      scrollWidth: box.scrollWidth,
      clientWidth: box.clientWidth,
      right: box.getBoundingClientRect().right,
      columns: [...box.querySelectorAll("thead th")].map((th) => th.textContent),
    };
  });
  const found = {
    text: document.body.innerText,
    viewportWidth: doc.clientWidth,
    pageWidth: doc.scrollWidth,
    tables,
  };
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
})();
</script>
"""


@dataclass(frozen=True)
class Seen:
    """What the browser showed: the page's visible text, and each table's box."""

    text: str
    viewport_width: int
    page_width: int
    tables: list[dict[str, Any]]


def chromium() -> str:
    """The Chromium binary, or a skip (a failure when CI=true)."""
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    reason = "headless Chromium is not installed (Debian package chromium: make browser)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)


def look(page: Path, workdir: Path, *, width: int = 1366, height: int = 768, screenshot: Path | None = None) -> Seen:
    """Load ``page`` in headless Chromium in a window of ``width`` x ``height`` and read what it shows."""
    binary = chromium()
    probe = workdir / "probe.html"
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    common = [
        binary,
        "--headless",
        "--no-sandbox",  # tests run as root in CI; a local file only
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={workdir / 'chromium-profile'}",
        f"--window-size={width},{height}",
        "--virtual-time-budget=3000",
    ]
    proc = subprocess.run([*common, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, flags=re.S)
    assert match is not None, f"the probe did not run: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    found = json.loads(html.unescape(match.group(1)))
    if screenshot is not None:
        subprocess.run([*common, f"--screenshot={screenshot}", page.as_uri()], capture_output=True, timeout=120, check=False)
    return Seen(found["text"], int(found["viewportWidth"]), int(found["pageWidth"]), list(found["tables"]))
