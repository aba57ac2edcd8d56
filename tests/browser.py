"""A real browser for the tests: headless Chromium driven by Playwright, and screenshots of what it shows.

Chromium is the Debian package's binary, never one Playwright downloads.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service_checks import service_unavailable

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "var" / "screenshots"


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium; skipped locally (failed in CI) when Playwright or Chromium is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        service_unavailable("playwright is not installed (pip install -r requirements.txt)")
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not executable:
        service_unavailable("chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def shoot(page, name: str) -> None:
    """Save the whole page as ``var/screenshots/<name>.png``, for people to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
