"""The HTML report of a real run, opened in a real browser: headless Chromium driven by selenium.

Uses the system Chromium and its matching chromedriver (Debian: ``apt-get install chromium chromium-driver``);
nothing is downloaded. Skipped, saying why, only where they are missing (``.ci/run`` installs them where it can:
apt-get as root or with password-less sudo, and prints a warning where it cannot).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)


def _browser_or_skip() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chromium), ("chromedriver (chromium-driver)", driver)) if path is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    if missing:
        reason = f"the report's browser test needs {', '.join(missing)}: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            reason += " (.ci/run could not install them on this machine: see its warning)"
        pytest.skip(reason)
    assert chromium is not None and driver is not None
    return chromium, driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def report(pytester: pytest.Pytester) -> Path:
    """The report of a real run: bm25, a bm25 that drops its best hit, and null, on the example scope."""
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        "--lens-adapter=drops=lens_fixtures.adapters.degraded:DropsBestBM25Adapter",
        "--lens-adapter=null",
        f"--lens-dataset={COLD_CHAIN_DEMO}",
        "--lens-html=report.html",
        "--lens-json=run.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 1  # null is gated: a FAIL verdict the page must show
    return pytester.path / "report.html"


def _severe(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _requests(driver: Any) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def _figures_drawn(driver: Any) -> dict[str, str]:
    """Each figure's drawing state once Vega has finished: ``true``, or ``failed`` (with a console error)."""
    from selenium.webdriver.support.ui import WebDriverWait

    script = "return Array.from(document.querySelectorAll('figure.plot')).map(f => [f.dataset.figure, f.dataset.drawn || null])"
    WebDriverWait(driver, 30).until(lambda d: all(state for _, state in d.execute_script(script)))
    return dict(driver.execute_script(script))


def test_report_renders_and_opens_transcripts(browser: Any, report: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    _requests(browser)  # drain what the browser loaded for itself at start-up (its new-tab page)
    browser.get(report.as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    assert _severe(browser) == []
    # Self-contained: the only thing loaded is the page itself.
    assert [url for url in _requests(browser) if not url.startswith(("file:", "data:"))] == []
    assert browser.find_element(By.CSS_SELECTOR, ".verdict.fail").text == "LENS verdict: FAIL"
    drawn = _figures_drawn(browser)
    assert drawn == {"headline": "true", "types": "true", "scopes": "true", "stream": "true", "pairs": "true"}
    # The headline figure is an SVG drawn from the run's numbers: a row per score, each adapter named in the legend.
    headline = browser.find_element(By.CSS_SELECTOR, '#overview figure[data-figure="headline"] svg')
    labels = {node.text for node in headline.find_elements(By.TAG_NAME, "text")}
    assert {"retrieval_score", "composite (tier-1 only)", "evidence_coverage", "bm25", "drops", "null"} <= labels
    assert _severe(browser) == []
    browser.save_screenshot(str(tmp_path / "overview.png"))

    # A transcript opens from the worst-questions table of the overview (null's first question, gated).
    group = next(g for g in browser.find_elements(By.CSS_SELECTOR, ".worst-group") if g.find_element(By.TAG_NAME, "h3").text == "null")
    worst = group.find_element(By.CSS_SELECTOR, "a.qlink")
    wanted = worst.get_attribute("title")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", worst)
    worst.click()
    transcript = browser.find_element(By.ID, "transcript")
    WebDriverWait(browser, 10).until(lambda d: transcript.is_displayed())
    assert transcript.find_element(By.CSS_SELECTOR, "h2.tid").text == wanted
    assert "gated" in transcript.find_element(By.CSS_SELECTOR, ".outcome-line").text

    # And from the questions table: a bm25 question with its tool calls, answer and cited episodes.
    Select(browser.find_element(By.CSS_SELECTOR, 'select[data-filter="adapter"]')).select_by_value("bm25")
    assert browser.find_element(By.ID, "shown-count").text == "8 of 24 shown"
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#question-table tbody tr") if r.is_displayed())
    link = row.find_element(By.CSS_SELECTOR, "a.qlink")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    WebDriverWait(browser, 10).until(lambda d: transcript.get_attribute("data-anchor") == row.get_attribute("id").removeprefix("row-"))
    assert transcript.find_element(By.CSS_SELECTOR, "h2.tid").text == link.get_attribute("title")
    calls = transcript.find_elements(By.CSS_SELECTOR, "li.call")
    assert len(calls) >= 2 and "memory_search(" in calls[1].text and "budget left" in calls[1].text
    assert transcript.find_elements(By.CSS_SELECTOR, "table.hits td.snippet")
    height = browser.execute_script("return arguments[0].getBoundingClientRect().height", transcript)
    browser.set_window_size(1400, int(height) + 200)
    transcript.screenshot(str(tmp_path / "transcript.png"))
    browser.set_window_size(1400, 1000)

    # A citation opens the cited episode's text beside the transcript.
    cite = transcript.find_element(By.CSS_SELECTOR, ".answer a.cite")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", cite)
    cite.click()
    panel = browser.find_element(By.ID, "episode-panel")
    WebDriverWait(browser, 10).until(lambda d: panel.is_displayed())
    ref = cite.get_attribute("data-ref")
    assert browser.find_element(By.ID, "episode-title").text.startswith(ref)
    run = read_artifact_json(report.parent / "run.json")
    episode = run["evidence"][cite.get_attribute("data-scope")]["texts"][ref]["text"]
    assert browser.find_element(By.ID, "episode-body").text.strip() == episode.strip()
    browser.save_screenshot(str(tmp_path / "episode.png"))

    assert _severe(browser) == []
    for name in ("overview.png", "transcript.png", "episode.png"):
        shot = tmp_path / name
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000


def test_every_kind_of_figure_draws(browser: Any, tmp_path: Path) -> None:
    """Several budgets add the last kind: a line per adapter across budgets (with a baseline, as every report can have)."""
    from selenium.webdriver.common.by import By

    from pytest_lens.reports.html.page import render_report
    from tests.support import run_lens_session

    adapters = {"bm25": "bm25", "drops": "lens_fixtures.adapters.degraded:DropsBestBM25Adapter"}
    baseline = run_lens_session(tmp_path / "base", adapters, budgets=("4k", "16k")).artifact()
    current = run_lens_session(tmp_path / "run", {"bm25": adapters["drops"], "drops": "bm25"}, budgets=("4k", "16k")).artifact()
    page = tmp_path / "report.html"
    page.write_text(render_report(current, baseline=baseline, baseline_name="main"), encoding="utf-8")
    browser.get(page.as_uri())
    drawn = _figures_drawn(browser)
    assert drawn == {name: "true" for name in ("headline", "types", "scopes", "stream", "budgets", "pairs")}
    assert _severe(browser) == []
    budgets = browser.find_element(By.CSS_SELECTOR, 'figure[data-figure="budgets"] svg')
    assert {"4k", "16k", "bm25", "drops"} <= {node.text for node in budgets.find_elements(By.TAG_NAME, "text")}
    browser.save_screenshot(str(tmp_path / "budgets.png"))
