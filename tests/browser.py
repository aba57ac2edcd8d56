"""A real browser for the tests: headless Chromium driven by Playwright, screenshots, and axe-core's verdict.

Chromium is the Debian package's binary, never one Playwright downloads. axe-core comes from the root
``package.json`` (``make test-deps`` runs ``npm ci``); the tests inject it into the page they check, which
never loads it itself.
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
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# The rules axe-core files under WCAG 2.0 levels A and AA (the 2.1 and 2.2 additions have tags of their own).
WCAG_2_A_AA = ["wcag2a", "wcag2aa"]
# How long a page's action or wait may take before the test fails (a busy CI machine runs two tests at once).
TIMEOUT_MS = 20_000
# The window a test's page opens at, unless its module sets ``VIEWPORT``: a laptop screen.
VIEWPORT = {"width": 1440, "height": 900}


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
        _tools_bypass_the_policy(browser)
        try:
            yield browser
        finally:
            browser.close()


def _tools_bypass_the_policy(browser) -> None:
    """Pages opened for a test let the test's own tools in (axe-core's script tag, Playwright's string predicates),
    which the console's Content-Security-Policy refuses as it should; ``new_page(bypass_csp=False)`` opens a page
    exactly as a person's browser does (``csp_violations`` checks the console's own scripts under the policy)."""
    for name in ("new_page", "new_context"):
        opener = getattr(browser, name)

        def opened(*args, _opener=opener, **kwargs):
            return _opener(*args, **{"bypass_csp": True, **kwargs})

        setattr(browser, name, opened)


def csp_violations(page, url: str) -> list[str]:
    """Open ``url`` in ``page`` (opened with ``bypass_csp=False``) and return what the policy refused while it loaded
    and ran its scripts: the browser reports each refusal on its console."""
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return refused


def sign_in(page, base_url: str, username: str) -> None:
    """Sign ``username`` in with the password form and wait for the overview (``people.PASSWORD``)."""
    from people import PASSWORD

    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form[action*='login'] [type=submit]")
    page.wait_for_url(f"{base_url}/")


def shoot(page, name: str) -> None:
    """Save the whole page as ``var/screenshots/<name>.png``, for people to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def accessibility_violations(page) -> list[str]:
    """axe-core's WCAG 2 A and AA violations on the page as it is now, one line per rule.

    Each line names the rule, its impact, what it asks for and the selectors of the elements that break it.
    """
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed ({AXE.relative_to(ROOT)}): npm ci, or make test-deps")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("values => axe.run(document, {runOnly: {type: 'tag', values}})", WCAG_2_A_AA)
    return [describe_violation(rule) for rule in result["violations"]]


def describe_violation(rule: dict, shown: int = 12) -> str:
    """``color-contrast (serious): <help>; 3 elements: td.num, ...``: an axe-core violation as one line."""
    targets = [" >>> ".join(map(str, node["target"])) for node in rule["nodes"]]
    more = f" and {len(targets) - shown} more" if len(targets) > shown else ""
    elements = f"{len(targets)} elements: {', '.join(targets[:shown])}{more}"
    return f"{rule['id']} ({rule['impact']}): {rule['help']}; {elements}"


def accessibility_report(found: dict[str, list[str]]) -> str:
    """The violations of every page that has some, page by page; empty when there is none."""
    return "\n".join(
        f"{page}:\n" + "\n".join(f"  - {line}" for line in lines) for page, lines in found.items() if lines
    )
