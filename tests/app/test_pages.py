"""Slow: the service's pages in a real headless browser (Debian's chromium and chromium-driver, via Selenium),
served with the real index and models: Swagger UI and ReDoc render from local assets, the question page streams
an answer with citation links, says when the corpus does not cover a question, and shows errors as such.

With AER_RAG_SCREENSHOT_DIR set, the question page and /docs are saved there as PNG (the README's pictures).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
COVERED = "What happened to employment when firms faced a minimum wage in the online labor market?"
OFF_TOPIC = "How long should sourdough bread bake, and at what oven temperature?"
WAIT_S = 120


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("These tests need Debian's chromium and chromium-driver: apt-get install chromium chromium-driver.")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, condition, timeout: float = WAIT_S):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def loaded_hosts(driver) -> set[str]:
    """Every host the page loaded a resource from."""
    urls = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return {urlparse(url).netloc for url in [driver.current_url, *urls]}


def screenshot(driver, name: str) -> None:
    directory = os.environ.get("AER_RAG_SCREENSHOT_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")  # the question and the answer, not where a link led
        driver.save_screenshot(str(Path(directory) / name))


def test_swagger_ui_renders_every_operation_from_local_assets(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = real_live_server
    operations = sum(len(methods) for methods in httpx.get(f"{base}/openapi.json").json()["paths"].values())
    browser.get(f"{base}/docs")
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= operations)
    assert "/v1/ask" in browser.page_source and "/v1/chat/completions" in browser.page_source
    assert loaded_hosts(browser) == {urlparse(base).netloc}
    screenshot(browser, "docs.png")


def test_redoc_renders_from_local_assets(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = real_live_server
    browser.get(f"{base}/redoc")
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "h1") and "aer-rag" in d.find_element(
        By.CSS_SELECTOR, "h1").text)  # fmt: skip
    assert loaded_hosts(browser) == {urlparse(base).netloc}


def test_no_page_loads_anything_from_another_host(real_live_server) -> None:
    base, _ = real_live_server
    for path in ("/", "/docs", "/redoc"):
        response = httpx.get(f"{base}{path}")
        assert response.status_code == 200
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        for attribute in ('src="http', "src='http", 'href="http', "href='http", "@import"):
            assert attribute not in response.text, (path, attribute)
    # ReDoc's script as served carries no address of Redocly's CDN (its sidebar logo).
    assert b"cdn.redoc.ly" not in httpx.get(f"{base}/static/docs/redoc.standalone.js").content


def ask(driver, base: str, question: str, jel: str = "") -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(base + "/")
    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(question)
    jel_box = driver.find_element(By.ID, "jel")
    jel_box.clear()
    jel_box.send_keys(jel)
    box.send_keys(Keys.CONTROL, Keys.ENTER)  # keyboard only


def test_the_question_page_streams_a_cited_answer(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = real_live_server
    ask(browser, base, COVERED)
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#passages li"))
    wait_for(browser, lambda d: "Answered in" in d.find_element(By.ID, "status").text)
    answer = browser.find_element(By.ID, "answer").text
    assert len(answer.split()) >= 5 and "do not answer" not in answer
    links = browser.find_elements(By.CSS_SELECTOR, "#answer a.marker")
    assert links, answer
    target = links[0].get_attribute("href").split("#")[1]
    cited = browser.find_element(By.ID, target)
    assert cited.find_elements(By.CSS_SELECTOR, "mark"), "the supporting sentence is highlighted"
    assert cited.find_element(By.CSS_SELECTOR, ".meta a").get_attribute("href").startswith("https://doi.org/10.1257/")
    # Each paper's finding is a card under the answer, linked to its passage.
    cards = browser.find_elements(By.CSS_SELECTOR, "#findings li.finding")
    assert cards and browser.find_element(By.ID, "findings-section").is_displayed()
    for card in cards:
        assert card.find_element(By.CSS_SELECTOR, "a.finding-paper").get_attribute("href").split("#")[1] in {
            item.get_attribute("id") for item in browser.find_elements(By.CSS_SELECTOR, "#passages li")}  # fmt: skip
    links[0].click()
    assert browser.current_url.endswith(f"#{target}")
    screenshot(browser, "question-page.png")


def test_the_question_page_says_when_the_corpus_is_silent(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = real_live_server
    ask(browser, base, OFF_TOPIC)
    wait_for(browser, lambda d: "Not covered" in d.find_element(By.ID, "status").text)
    note = browser.find_element(By.ID, "coverage-note")
    assert note.is_displayed() and "do not cover" in note.text


def test_errors_are_shown_as_such(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, services = real_live_server
    ask(browser, base, COVERED, jel="123")  # not a JEL code: the server refuses it (422)
    wait_for(browser, lambda d: "could not be sent" in d.find_element(By.ID, "status").text)
    assert "jel_prefix" in browser.find_element(By.ID, "status").text
    for _ in range(services.queue.capacity):  # every generation slot taken: 429
        services.queue.reserve()
    try:
        ask(browser, base, COVERED)
        wait_for(browser, lambda d: "busy" in d.find_element(By.ID, "status").text)
        assert "try again in" in browser.find_element(By.ID, "status").text
    finally:
        for _ in range(services.queue.capacity):
            services.queue.cancel_reservation()


def test_the_question_page_fits_a_phone(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = real_live_server
    browser.set_window_size(390, 844)
    try:
        browser.get(base + "/")
        wait_for(browser, lambda d: d.find_element(By.ID, "ask-button").is_displayed())
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        screenshot(browser, "question-page-phone.png")
    finally:
        browser.set_window_size(1280, 1000)
