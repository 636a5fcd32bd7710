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
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # what the page sends (request bodies)
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


def fill_queue(services) -> int:
    """Take every place for answers (the queue may refuse earlier, when the wait it expects is over its limit:
    then it answers 429 already); how many were taken, for release_queue."""
    from app.generation import QueueFullError

    taken = 0
    for _ in range(services.queue.capacity):
        try:
            services.queue.reserve()
        except QueueFullError:
            break
        taken += 1
    return taken


def release_queue(services, taken: int) -> None:
    for _ in range(taken):
        services.queue.cancel_reservation()


def test_errors_are_shown_as_such(browser, real_live_server) -> None:
    from selenium.webdriver.common.by import By

    base, services = real_live_server
    ask(browser, base, COVERED, jel="123")  # not a JEL code: the server refuses it (422)
    wait_for(browser, lambda d: "could not be sent" in d.find_element(By.ID, "status").text)
    assert "JEL code must be a letter" in browser.find_element(By.ID, "status").text  # in words, not field names
    taken = fill_queue(services)  # every generation slot taken: 429
    try:
        ask(browser, base, COVERED)
        wait_for(browser, lambda d: "busy" in d.find_element(By.ID, "status").text)
        assert "try again in" in browser.find_element(By.ID, "status").text
    finally:
        release_queue(services, taken)
        browser.get(base + "/")  # no automatic retry left running


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


# --- The conversation page on the tiny service (random generator: quick), in the same browser ---------------------

FOLLOW_UPS = ["Did employment fall after the minimum wage increase in fast food restaurants?",
              "How do banks change lending when the central bank raises interest rates?",
              "Which of those papers studied small banks?"]  # fmt: skip


def full_screenshot(driver, name: str) -> None:
    """The whole page, not only the window (docs/screenshots/ when AER_RAG_SCREENSHOT_DIR says so)."""
    import base64

    directory = os.environ.get("AER_RAG_SCREENSHOT_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        (Path(directory) / name).write_bytes(base64.b64decode(shot["data"]))


def type_question(driver, question: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element(By.ID, "query")
    box.clear()
    box.send_keys(question)
    box.send_keys(Keys.CONTROL, Keys.ENTER)


def answered(driver, question: str, earlier: int) -> bool:
    """The turn for `question` is finished and `earlier` turns are in the thread."""
    from selenium.webdriver.common.by import By

    status = driver.find_element(By.ID, "status").text
    return (driver.find_element(By.ID, "asked-text").text == question and len(
        driver.find_elements(By.CSS_SELECTOR, "#thread > li.turn")) == earlier
            and ("Answered in" in status or "Not covered" in status))  # fmt: skip


def sent_ask_bodies(driver) -> list[dict]:
    """The bodies the page POSTed to /v1/ask since the last call (Chrome's performance log)."""
    import json

    bodies = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        request = message.get("params", {}).get("request", {})
        if message["method"] == "Network.requestWillBeSent" and request.get("url", "").endswith("/v1/ask"):
            bodies.append(json.loads(request["postData"]))
    return bodies


def test_a_three_turn_thread_sends_the_earlier_turns(browser, live_server) -> None:
    from selenium.webdriver.common.by import By

    base, _ = live_server()
    takes_history = "history" in httpx.get(f"{base}/openapi.json").json()["components"]["schemas"]["AskRequest"][
        "properties"]  # fmt: skip
    browser.get(base + "/")
    browser.get_log("performance")  # start from here
    for turn, question in enumerate(FOLLOW_UPS):
        type_question(browser, question)
        wait_for(browser, lambda d, q=question, n=turn: answered(d, q, n))
        assert f"q={question.split()[0]}" in browser.current_url  # the address reopens the question
    turns = browser.find_elements(By.CSS_SELECTOR, "#thread > li.turn")
    assert [t.find_element(By.CSS_SELECTOR, ".asked q").text for t in turns] == FOLLOW_UPS[:2]  # oldest first
    assert turns[0].location["y"] < turns[1].location["y"] < browser.find_element(By.ID, "answer").location["y"]
    ids = browser.execute_script("return [...document.querySelectorAll('[id]')].map(e => e.id)")
    assert len(ids) == len(set(ids)), "an earlier turn keeps ids of its own"
    bodies = sent_ask_bodies(browser)
    assert [body["query"] for body in bodies] == FOLLOW_UPS
    if takes_history:
        cited = [t.get_attribute("data-doc-ids").split("\n") if t.get_attribute("data-doc-ids") else [] for t in turns]
        assert "history" not in bodies[0]
        assert [turn["question"] for turn in bodies[2]["history"]] == FOLLOW_UPS[:2]
        assert [turn["doc_ids"] for turn in bodies[2]["history"]] == cited
        assert all(turn["answer"] for turn in bodies[2]["history"])
    else:
        assert all("history" not in body for body in bodies)
    full_screenshot(browser, "thread.png")
    browser.find_element(By.ID, "new-conversation").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#thread > li") and browser.current_url == base + "/"
    assert not browser.find_element(By.ID, "answer-section").is_displayed()


def test_a_question_link_asks_on_load_and_citations_copy(browser, live_server) -> None:
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    base, _ = live_server()
    question = FOLLOW_UPS[0]
    browser.get(f"{base}/?q={quote(question)}")
    wait_for(browser, lambda d: answered(d, question, 0))
    cards = browser.find_elements(By.CSS_SELECTOR, "#findings li.finding")
    assert cards, "the test question is answered from at least one paper"
    copy = cards[0].find_element(By.CSS_SELECTOR, "[data-action=copy-bibtex]")
    copy.click()
    wait_for(browser, lambda d: (copy.get_attribute("data-copied") or "").startswith("@article{"), 30)
    assert f"doi = {{{copy.get_attribute('data-doc-id')}}}" in copy.get_attribute("data-copied")
    every = browser.find_element(By.CSS_SELECTOR, "#answer-actions [data-action=bibtex-all]")
    every.click()
    wait_for(browser, lambda d: (every.get_attribute("data-copied") or "").count("@article{") == len(cards), 30)
    answer = browser.find_element(By.CSS_SELECTOR, "#answer-actions [data-action=copy-answer]")
    answer.click()
    wait_for(browser, lambda d: answer.get_attribute("data-copied"), 30)
    related = cards[0].find_element(By.CSS_SELECTOR, "[data-action=related]")
    related.click()
    listing = browser.find_element(By.ID, related.get_attribute("aria-controls"))
    wait_for(browser, lambda d: len(listing.find_elements(By.CSS_SELECTOR, "li a")) == 5, 30)
    assert related.get_attribute("aria-expanded") == "true"
    related.click()
    assert not listing.is_displayed()


def test_errors_in_words_and_a_busy_service_is_retried(browser, live_server) -> None:
    from selenium.webdriver.common.by import By

    base, services = live_server(retry_after_s=2)
    browser.get(base + "/")
    browser.find_element(By.ID, "year-min").send_keys("2020")
    browser.find_element(By.ID, "year-max").send_keys("2010")
    type_question(browser, FOLLOW_UPS[0])
    wait_for(browser, lambda d: "start year is after the end year" in d.find_element(By.ID, "status").text, 30)
    for field in ("year-min", "year-max"):
        browser.find_element(By.ID, field).clear()
    taken = fill_queue(services)  # every generation slot taken: 429, then retried by itself
    try:
        type_question(browser, FOLLOW_UPS[0])
        wait_for(browser, lambda d: "try again in 2 s" in d.find_element(By.ID, "status").text, 30)
        wait_for(browser, lambda d: "try again in 1 s" in d.find_element(By.ID, "status").text, 30)  # counting down
    finally:
        release_queue(services, taken)
    wait_for(browser, lambda d: answered(d, FOLLOW_UPS[0], 0), 60)


def test_dark_mode_and_a_390_px_phone(browser, live_server) -> None:

    base, _ = live_server()
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme",
                                                                          "value": "dark"}]})  # fmt: skip
    try:
        browser.get(base + "/")
        for turn, question in enumerate(FOLLOW_UPS[:2]):
            type_question(browser, question)
            wait_for(browser, lambda d, q=question, n=turn: answered(d, q, n))
        background = browser.execute_script("return getComputedStyle(document.documentElement).backgroundColor")
        red, green, blue = (int(part) for part in background[background.index("(") + 1:-1].split(",")[:3])
        assert red + green + blue < 3 * 60, background  # dark
        full_screenshot(browser, "dark.png")
        browser.set_window_size(390, 844)
        wait_for(browser, lambda d: d.execute_script("return window.innerWidth") <= 390, 10)
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        outside = browser.execute_script("""const width = document.documentElement.clientWidth;
            return [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > width
                && e.id !== 'copied-text').map(e => e.tagName + '.' + e.className);""")  # fmt: skip
        assert outside == [], "every box fits the phone's width"
        screenshot(browser, "narrow.png")  # what the phone's screen shows (a full-page capture drops the scrollbar)
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        browser.set_window_size(1280, 1000)


def marked_passage(driver, base: str, text: str, supporting: list[str]) -> list[list]:
    """Passage 1 with `text`, its `supporting` sentences highlighted: each of its card's texts as [marks, text]."""
    driver.get(f"{base}/")
    return driver.execute_script("""
        const [text, supporting] = arguments;
        renderPassages([{number: 1, text,
                         document: {title: "A paper", date: null, year: 2001, authors: [], doi: null}}]);
        highlightSupport(supporting.map((sentence) => ({passage: 1, supporting_sentence: sentence})));
        return Array.from(document.querySelectorAll("#passage-1 .passage-text"),
                          (shown) => [Array.from(shown.querySelectorAll("mark"), (mark) => mark.textContent),
                                      shown.textContent]);
    """, text, supporting)


def test_every_supporting_sentence_of_a_passage_is_marked_whatever_the_answers_order(browser, live_server) -> None:
    # A finding's second sentence can come before its first in the abstract; both are marked, in the passage.
    base, _ = live_server()
    marked = marked_passage(browser, base, "Prices fell. Wages rose by 4 percent. Rents were flat.",
                            ["Rents were flat.", "Wages rose by 4 percent."])
    assert marked == [[["Wages rose by 4 percent.", "Rents were flat."],
                       "Prices fell. Wages rose by 4 percent. Rents were flat."]]


def test_a_supporting_sentence_outside_the_retrieved_chunk_is_shown_marked_after_it(browser, live_server) -> None:
    # Findings come from the whole abstract; the passage card shows only the retrieved chunk.
    base, _ = live_server()
    shown = marked_passage(browser, base, "Prices fell. Wages rose by 4 percent.",
                           ["Wages rose by 4 percent.", "Rents doubled in 12 cities."])
    assert shown == [[["Wages rose by 4 percent."], "Prices fell. Wages rose by 4 percent."],
                     [["Rents doubled in 12 cities."], "Elsewhere in its abstract: Rents doubled in 12 cities."]]
