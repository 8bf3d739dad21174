"""The dashboard in headless Chromium against the real waitress server: pages, live progress,
the replay viewer's controls and perspectives, and user text shown as text."""

from __future__ import annotations

import contextlib
import json
import os
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from arena.storage import open_database, repo
from arena.storage.repo import GameResult, RatingRow
from tests.dashboard.conftest import LiveServer
from tests.dashboard.fill import (
    FINISHED_TOURNAMENT,
    RULESET,
    RUNNING_TOURNAMENT,
    TIMEOUT_DETAIL,
    XSS_NAME,
    XSS_NOTE,
    play,
)
from tests.dashboard.oracle import hands_after_decisions

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
GAME = f"{FINISHED_TOURNAMENT}-set-00001-g0"  # greedy (seats 0, 2) against the XSS-named bot

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("ARENA_REQUIRE_BROWSER"),  # CI's: fail there
    reason=(
        "Debian's chromium is not installed at /usr/bin/chromium: install it with "
        "`sudo apt-get install chromium` (or run scripts/test as root, which installs it)"
    ),
)


@dataclass
class Tab:
    """A page, plus every dialog and script error it raised (there must be none)."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    found = Tab(context.new_page())

    def on_dialog(dialog: Any) -> None:
        found.dialogs.append(dialog.message)
        dialog.dismiss()

    found.page.on("dialog", on_dialog)
    found.page.on("pageerror", lambda exc: found.errors.append(str(exc)))
    yield found
    context.close()
    assert found.dialogs == [], "a dialog fired: user text ran as script"
    assert found.errors == []


def _replay_state(page: Any) -> dict[str, Any]:
    state: dict[str, Any] = page.evaluate(
        """() => {
            const root = document.getElementById('replay');
            return {
                frame: Number(root.dataset.frame),
                kind: root.dataset.kind,
                hand: Number(root.dataset.hand),
                decisions: Number(root.dataset.decisions),
                perspective: root.dataset.perspective,
                cards: Array.from(document.querySelectorAll('[data-card]'))
                    .filter(e => e.offsetParent !== null).map(e => e.dataset.card),
                backs: Array.from(document.querySelectorAll('.seat')).map(
                    s => s.querySelectorAll('.card.back').length),
                scores: [0, 1].map(t => document.getElementById('score-' + t).textContent),
                text: document.getElementById('replay').innerText,
            };
        }"""
    )
    return state


@contextlib.contextmanager
def _page(browser: Any, width: int, height: int) -> Iterator[Any]:
    """A page of its own browser context, `width` x `height` (a phone's, say), closed after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield context.new_page()
    finally:
        context.close()


def _open_replay(tab: Tab, base: str, game_id: str) -> None:
    tab.page.goto(f"{base}/games/{game_id}/replay")
    tab.page.wait_for_selector("#replay.ready")


def test_leaderboard_shows_bot_names_as_text(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    page.goto(live_server.base + "/")
    rows = page.locator("table.leaderboard tbody tr")
    assert rows.count() == 3
    link = page.get_by_role("link", name=XSS_NAME)
    assert link.is_visible()
    assert page.locator("img").count() == 0
    assert page.locator("svg.spark").count() == 3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "leaderboard.png"), full_page=True)
    link.click()
    page.wait_for_selector("h1 .bot")
    assert page.locator("h1 .bot").inner_text() == XSS_NAME
    assert page.locator("svg.chart").count() == 1
    assert page.locator("img").count() == 0


def test_the_ruleset_menu_changes_page_only_when_asked(tab: Tab, live_server: LiveServer) -> None:
    # Going through the options with the arrow keys used to leave the page at the first one.
    with open_database(live_server.site.url) as db, db.session() as s:
        rated = repo.get_ratings(s, RULESET)[0]  # a second ruleset, rated less: not the default
        repo.replace_ratings(s, "short-2", [RatingRow(rated.bot_version_id, 1500.0, games=1)])
    try:
        _ruleset_menu_waits_for_the_button(tab, live_server)
    finally:
        with open_database(live_server.site.url) as db, db.session() as s:
            repo.replace_ratings(s, "short-2", [])


def _ruleset_menu_waits_for_the_button(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    page.goto(live_server.base + "/")
    menu = page.locator("select[name=ruleset]")
    assert menu.locator("option").all_inner_texts() == [RULESET, "short-2"]
    shown = menu.input_value()
    menu.focus()
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert page.url == live_server.base + "/"
    chosen = menu.input_value()
    assert chosen != shown
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    assert page.locator("select[name=ruleset]").input_value() == chosen
    assert "ruleset=" in page.url


def test_the_games_list_filters_from_its_form(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    page.goto(live_server.base + "/games")
    page.locator("select[name=bot]").select_option("random")
    page.locator("select[name=fault]").focus()
    page.keyboard.press("ArrowDown")  # the first kind, timeout: and the page stays
    page.wait_for_timeout(300)
    assert page.url == live_server.base + "/games"
    page.get_by_role("button", name="Show").click()
    page.wait_for_load_state()
    assert page.url.endswith("/games?bot=random&fault=timeout")
    assert page.locator("h1").inner_text() == "Games in which random faulted: timeout"
    faulted = {f"{t}-set-00000-g0" for t in live_server.site.filled.tournaments}
    listed = page.locator("table.data tbody tr td:first-child a").all_inner_texts()
    assert set(listed) == faulted


def test_tournament_page_has_a_shaded_crosstable(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    page.goto(live_server.base + "/tournaments")
    page.get_by_role("link", name=FINISHED_TOURNAMENT).click()
    page.wait_for_selector("#crosstable")
    cells = page.locator("table.cross td.los")
    assert cells.count() == 6
    styles = [cells.nth(i).get_attribute("style") or "" for i in range(6)]
    assert all("background-color" in s for s in styles)
    assert page.locator("#games a[href$='/replay']").count() == 6
    assert page.locator("#state").inner_text() == "finished"
    # What each cell's tooltip says is also read out: a column was "1", "2", "3" and a cell
    # "1/2" to a screen reader, the bots and W–D–L in `title` only.
    heads = page.locator("table.cross thead th.col")
    column = heads.first.get_attribute("title")
    assert page.get_by_role("columnheader", name=column, exact=True).count() == 1
    first = cells.first
    assert re.fullmatch(r"[\d.½]+/\d+ \(\d+–\d+–\d+, LOS [\d.]+%\)", first.text_content() or "")
    hidden = first.locator(".sr-only").bounding_box()
    assert hidden is not None and hidden["width"] <= 1 and hidden["height"] <= 1  # not shown


def test_replay_steps_to_the_recorded_result(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    record = live_server.site.filled.records[GAME]
    lines = [json.loads(line) for line in record.splitlines()]
    _open_replay(tab, live_server.base, GAME)
    assert _replay_state(page)["frame"] == 0
    page.keyboard.press("End")
    end = _replay_state(page)
    assert end["kind"] == "game_end"
    assert [int(s) for s in end["scores"]] == lines[-1]["scores"]
    won = lines[-1]["winner"]
    first = lines[-1]["scores"][won] if won is not None else lines[-1]["scores"][0]
    assert f" {first} to " in page.locator("#result").inner_text()  # the winner's first
    page.keyboard.press("ArrowLeft")
    assert _replay_state(page)["frame"] == end["frame"] - 1
    page.keyboard.press("Home")
    assert _replay_state(page)["frame"] == 0
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert _replay_state(page)["frame"] == 2
    page.select_option("#hand-select", label="2")
    assert _replay_state(page)["hand"] == 2 and _replay_state(page)["kind"] == "deal"
    page.keyboard.press(" ")
    page.wait_for_function(
        "Number(document.getElementById('replay').dataset.frame) > 1 + "
        + str(_replay_state(page)["frame"])
    )
    page.keyboard.press(" ")
    assert page.locator("#btn-play").inner_text() == "Play"
    # A moment in the middle of play, drawn in full, for the screenshot.
    page.keyboard.press("Home")
    for _ in range(14):
        page.keyboard.press("ArrowRight")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "replay.png"), full_page=True)


@pytest.mark.parametrize(
    ("address", "frame"),
    [("#hand=%&frame=%E0%A4%A", 0), ("#frame=2.5&perspective=1", 2)],
    ids=["malformed", "fractional frame"],
)
def test_an_odd_address_hash_does_not_stop_the_replay(
    tab: Tab, live_server: LiveServer, address: str, frame: int
) -> None:
    tab.page.goto(f"{live_server.base}/games/{GAME}/replay{address}")
    tab.page.wait_for_selector("#replay.ready")  # and the tab fixture saw no script error
    assert _replay_state(tab.page)["frame"] == frame
    tab.page.keyboard.press("ArrowRight")
    assert _replay_state(tab.page)["frame"] == frame + 1


def test_space_presses_the_focused_button_and_buttons_have_names(
    tab: Tab, live_server: LiveServer
) -> None:
    page = tab.page
    _open_replay(tab, live_server.base, GAME)
    page.focus("#btn-next")
    page.keyboard.press(" ")
    page.keyboard.press(" ")
    state = _replay_state(page)
    assert state["frame"] == 2 and page.locator("#btn-play").inner_text() == "Play"
    names = [page.get_attribute(f"#btn-{b}", "aria-label") for b in ("start", "prev", "end")]
    assert names == ["First frame", "Back one decision", "Last frame"]
    page.keyboard.press("1")  # seat 0's view: the other hands face down
    page.wait_for_function("document.getElementById('replay').dataset.perspective === '0'")
    labels = set(page.locator(".card.back").evaluate_all("e => e.map(c => c.ariaLabel)"))
    assert labels == {"face-down card"}
    pressed = page.locator(".perspectives button").evaluate_all(
        "bs => bs.map(b => [b.dataset.perspective, b.getAttribute('aria-pressed')])"
    )
    assert [p for p, on in pressed if on == "true"] == ["0"] and len(pressed) == 5
    # The hand menu keeps its keys: Space there does not start playing.
    page.focus("#hand-select")
    page.keyboard.press(" ")
    assert page.locator("#btn-play").inner_text() == "Play"


def test_an_edited_address_moves_the_replay_and_the_auction_shows_the_high_bid(
    tab: Tab, live_server: LiveServer
) -> None:
    page = tab.page
    _open_replay(tab, live_server.base, GAME)
    page.evaluate("window.location.hash = '#frame=5&perspective=2'")  # as a user edits it
    page.wait_for_function(
        "document.getElementById('replay').dataset.frame === '5' && "
        "document.getElementById('replay').dataset.perspective === '2'"
    )
    page.evaluate("window.location.hash = '#frame=1&perspective=2'")
    page.wait_for_function("document.getElementById('replay').dataset.frame === '1'")
    tags = page.locator(".tag.bidder").all_inner_texts()
    assert tags and all(t.startswith("high bid ") for t in tags), tags  # was "bidder null"
    assert "null" not in _replay_state(page)["text"]
    # The latest bid is in view however long the auction (its box showed the first 7 only).
    page.eval_on_selector("#auction", "a => { a.style.maxHeight = '1.2rem'; }")
    page.keyboard.press("End")
    last_in_view = page.eval_on_selector(
        "#auction",
        """a => { const last = a.lastElementChild.getBoundingClientRect(),
                         box = a.getBoundingClientRect();
                  return a.children.length > 1 && last.bottom <= box.bottom + 1; }""",
    )
    assert last_in_view


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_seat_perspective_shows_no_card_of_another_hand(
    tab: Tab, live_server: LiveServer, seat: int
) -> None:
    page = tab.page
    record = live_server.site.filled.records[GAME]
    oracle = hands_after_decisions(record)
    _open_replay(tab, live_server.base, GAME)
    page.keyboard.press(str(seat + 1))
    page.wait_for_function(f"document.getElementById('replay').dataset.perspective === '{seat}'")
    page.keyboard.press("Home")
    checked = 0
    while True:
        state = _replay_state(page)
        if state["kind"] in ("deal", "decision"):
            hands = oracle[state["decisions"]]
            others = set().union(*(hands[s] for s in range(4) if s != seat))
            leaked = others & set(state["cards"])
            assert not leaked, (state["frame"], leaked)
            assert hands[seat] <= set(state["cards"])
            # Other hands are drawn as backs, one per card; the viewer's own as faces.
            assert state["backs"] == [0 if s == seat else len(hands[s]) for s in range(4)]
            checked += 1
        if state["kind"] == "game_end":
            break
        page.keyboard.press("ArrowRight")
    assert checked > 20
    page.keyboard.press("0")
    page.wait_for_function("document.getElementById('replay').dataset.perspective === 'full'")
    full = _replay_state(page)
    assert full["frame"] == state["frame"]


def test_notes_and_names_in_the_replay_are_text(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    _open_replay(tab, live_server.base, GAME)
    for _ in range(6):
        page.keyboard.press("ArrowRight")
        if XSS_NOTE in _replay_state(page)["text"]:
            break
    else:
        pytest.fail("the XSS bot's bid note never showed")
    # As text, in a <bdi>: direction controls in a note cannot reorder what is around it.
    assert page.locator(".seat-decision .note bdi").filter(has_text="<script>").count() == 1
    assert page.get_by_role("link", name=XSS_NAME).count() == 2
    assert page.locator("img").count() == 0
    # Seat 0 did not know seat 1's note.
    page.keyboard.press("1")
    page.wait_for_function("document.getElementById('replay').dataset.perspective === '0'")
    assert XSS_NOTE not in _replay_state(page)["text"]


def test_a_fault_shows_its_detail_where_the_seat_may_see_it(
    tab: Tab, live_server: LiveServer
) -> None:
    # The replay showed a fault's kind without its detail; as a note, a seat sees only its own.
    game_id = f"{FINISHED_TOURNAMENT}-set-00000-g0"  # seat 1 times out once
    url = f"{live_server.base}/api/games/{game_id}/replay"
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - local server
        frames = json.load(response)["frames"]
    frame = next(f["i"] for f in frames if f["decision"] and f["decision"].get("fault"))
    page = tab.page
    for perspective, shown in (("full", True), ("0", False), ("1", True)):
        page.goto(f"{url.replace('/api', '')}#frame={frame}&perspective={perspective}")
        page.wait_for_function(
            f"document.querySelector('#replay.ready')?.dataset.perspective === '{perspective}'"
        )
        assert _replay_state(page)["frame"] == frame
        bubble = page.locator("#seat-1 .seat-decision")
        assert bubble.locator(".tag.fault").inner_text() == "timeout"
        details = [bubble.locator(".fault-detail"), page.locator("#log .fault-detail")]
        for detail in details:
            assert detail.all_inner_texts() == ([TIMEOUT_DETAIL] if shown else []), perspective


def test_record_download_through_waitress_is_byte_identical(live_server: LiveServer) -> None:
    for game_id, record in list(live_server.site.filled.records.items())[:3]:
        url = f"{live_server.base}/games/{game_id}/record.jsonl"
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - local server
            assert response.read() == record


def test_tournament_progress_updates_without_reload(tab: Tab, live_server: LiveServer) -> None:
    page = tab.page
    page.goto(f"{live_server.base}/tournaments/{RUNNING_TOURNAMENT}")
    assert page.locator("#progress-done").inner_text() == "3"
    page.evaluate("window.__sameDocument = true")
    before = page.locator("#standings tbody tr").first.inner_text()
    _finish_a_pending_set(live_server.site.url)
    page.wait_for_function(
        "document.getElementById('progress-done').textContent === '4'", timeout=20_000
    )
    page.wait_for_function(
        "document.querySelectorAll('#games a[href$=\"/replay\"]').length === 8", timeout=10_000
    )
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert page.locator("#progress-queued").inner_text() == "1"
    # In UTC like every other time on the site, not the browser's local "11:22:33 AM".
    assert re.fullmatch(r"· updated \d\d:\d\d:\d\d UTC", page.locator("#live").inner_text())
    page.evaluate("document.getElementById('pace').textContent = 'stale'")
    page.wait_for_function("document.getElementById('pace').textContent !== 'stale'")
    # No set is being played (the next waits for a worker): the time so far, and no ETA.
    assert re.fullmatch(r"· elapsed \d+(s|m\d\ds)", page.locator("#pace").inner_text())
    assert before  # the standings table was there before and is there after
    assert page.locator("#standings tbody tr").count() == 3
    assert "shown once every set is played" in page.locator("#summary").inner_text()
    _finish_a_pending_set(live_server.site.url)  # the last: the seed may be shown now
    page.wait_for_function("document.querySelector('#summary .mono') !== null", timeout=20_000)
    assert page.evaluate("window.__sameDocument") is True
    with open_database(live_server.site.url) as db, db.session() as s:
        seed = repo.get_tournament(s, RUNNING_TOURNAMENT).seed
    assert page.locator("#summary .mono").inner_text() == str(seed)


def _finish_a_pending_set(url: str) -> None:
    """Play and store the first queued set of the running tournament, as a worker would."""
    db = open_database(url)
    try:
        with db.session() as s:
            queued = repo.list_game_sets(s, RUNNING_TOURNAMENT, state="queued")[0]
            a, b = queued.bot_a.ref, queued.bot_b.ref
            set_id, seed, dealer = queued.id, queued.seed, queued.first_dealer
        results = []
        for index, seats in enumerate(((a, b, a, b), (b, a, b, a))):
            names = [s.rsplit("@", 1)[0] for s in seats]
            game, record, think, decisions = play(
                names, seed, dealer, repo.game_id(set_id, index), fault_seat=None
            )
            results.append(
                GameResult(
                    game_index=index,
                    seats=seats,
                    scores=(game.scores[0], game.scores[1]),
                    winner=game.winner,
                    reason=game.end_reason or "max_hands",
                    hands=game.hand_number,
                    record=record,
                    decisions=decisions,
                    think_ms=think,
                )
            )
        with db.session() as s:
            repo.mark_set_running(s, set_id)
            assert repo.record_game_set_result(s, set_id, results)
    finally:
        db.dispose()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/bots",
        "/bots/greedy",
        "/tournaments",
        f"/tournaments/{FINISHED_TOURNAMENT}",
        "/games",
        f"/games/{GAME}",
        f"/games/{GAME}/replay",
    ],
)
def test_pages_fit_a_phone_screen(browser: Any, live_server: LiveServer, path: str) -> None:
    # At 375 px the tables made pages up to 1,700 px wide, and the menu's last links fell off
    # the header (white on grey): now wide tables scroll in their own box and the menu wraps.
    with _page(browser, 375, 800) as page:
        page.goto(live_server.base + path)
        if path.endswith("/replay"):
            page.wait_for_selector("#replay.ready")
        wide = page.evaluate(
            """() => Array.from(document.querySelectorAll('body *')).filter(e => {
                const right = e.getBoundingClientRect().right, up = e.parentElement;
                return right > 376 && up.getBoundingClientRect().right <= 376;
            }).map(e => e.tagName + '.' + e.className + ' ' + e.textContent.slice(0, 40))"""
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, wide
        if path.endswith("/replay"):  # the side seats were some 50 px wide, a letter a line
            sides = [page.locator(f".seat.{s}").bounding_box() for s in ("left", "right")]
            assert all(box["width"] > 140 for box in sides), sides
        header = page.locator("header.top").bounding_box()
        for link in page.locator("header.top nav a").all():
            box = link.bounding_box()
            assert box["x"] + box["width"] <= 375 and box["y"] + box["height"] <= (
                header["y"] + header["height"]
            ), link.inner_text()


@pytest.mark.parametrize("path", ["/tournaments", f"/games/{GAME}", "/bots/greedy", "/games"])
def test_words_in_tables_stay_whole_at_desktop_width(
    browser: Any, live_server: LiveServer, path: str
) -> None:
    # With every cell free to break anywhere, the table's layout squeezed short columns to a
    # few letters while the row had room: "standar d", "finishe d", "repla y".
    with _page(browser, 1366, 900) as page:
        page.goto(live_server.base + path)
        split = page.evaluate(
            """() => Array.from(document.querySelectorAll('table.data td')).filter(td => {
                const text = td.textContent.trim();
                if (!text || /\\s/.test(text)) return false;  // one word: one line
                const wrapped = td.getBoundingClientRect().height;
                td.style.whiteSpace = "nowrap";
                const whole = td.getBoundingClientRect().height;
                td.style.whiteSpace = "";
                return wrapped > whole;
            }).map(td => td.textContent.trim())"""
        )
        assert split == [], split


def test_a_long_address_in_an_error_wraps_rather_than_widen_the_page(
    browser: Any, live_server: LiveServer
) -> None:
    # The 404 quoting a 3,000-character game id was 29,812 px wide on a phone.
    with _page(browser, 375, 800) as page:
        assert page.goto(f"{live_server.base}/games/{'x' * 3000}").status == 404
        assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_long_names_wrap_rather_than_widen_the_page(browser: Any, live_server: LiveServer) -> None:
    # A bot may be named with 64 characters and versioned with 64 more: its page was 678 px
    # wide at 375, and in a crosstable its name made the row heads 1,176 px wide at 1920.
    from tests.dashboard.fill import add_bot

    name, version = "n" * 64, "9" * 64
    with open_database(live_server.site.url) as db:
        add_bot(db, name, version)
    with _page(browser, 375, 800) as page:
        page.goto(f"{live_server.base}/bots/{name}/{version}")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        page.set_viewport_size({"width": 1920, "height": 1000})
        page.goto(f"{live_server.base}/tournaments/{FINISHED_TOURNAMENT}")
        head = page.locator("table.cross th.rowhead").first
        head.evaluate(
            f"h => {{ h.querySelector('a.bot').textContent = '{name}';"
            f" h.querySelector('.ver').textContent = '@{version}'; }}"
        )
        box = page.locator("table.cross").locator("xpath=..")  # its .scroll box
        assert box.evaluate("b => b.scrollWidth <= b.clientWidth")  # every column in view


def test_a_long_bot_name_in_the_games_filter_stays_on_a_phone_screen(
    browser: Any, live_server: LiveServer
) -> None:
    # The bot menu is as wide as its longest name: with a 64-character one the form pushed the
    # /games page to 436 px at 375, the menu's end and the whole list's right side off-screen.
    from tests.dashboard.fill import add_bot

    with open_database(live_server.site.url) as db:
        add_bot(db, "n" * 64, "9" * 64)
    with _page(browser, 375, 800) as page:
        page.goto(f"{live_server.base}/games")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        for control in ("select[name=bot]", "select[name=fault]", "button:text('Show')"):
            box = page.locator(control).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 375, control
        page.locator("select[name=bot]").select_option("n" * 64)  # and the menu still works
        page.get_by_role("button", name="Show").click()
        page.wait_for_load_state()
        assert page.url.endswith("/games?bot=" + "n" * 64 + "&fault=")


def test_the_replay_perspective_buttons_wrap_on_a_narrow_phone(
    browser: Any, live_server: LiveServer
) -> None:
    # The five buttons stayed on one line: at 320 px "Seat 3" ended 23 px off-screen (and the
    # page scrolled sideways), and at 375 "Full deal" broke over two lines.
    with _page(browser, 320, 700) as page:
        page.goto(f"{live_server.base}/games/{GAME}/replay")
        page.wait_for_selector("#replay.ready")
        assert page.evaluate("document.documentElement.scrollWidth") <= 320
        buttons = page.locator(".perspectives button")
        boxes = [buttons.nth(i).bounding_box() for i in range(buttons.count())]
        assert all(b["x"] >= 0 and b["x"] + b["width"] <= 320 for b in boxes), boxes
        assert len({round(b["height"]) for b in boxes}) == 1, boxes  # each on one line
        page.get_by_role("button", name="Seat 3").click()
        page.wait_for_function("document.getElementById('replay').dataset.perspective === '3'")


@pytest.mark.parametrize("width", [768, 1024])
@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/bots/greedy",
        "/tournaments",
        f"/tournaments/{FINISHED_TOURNAMENT}",
        "/games",
        f"/games/{GAME}",
    ],
)
def test_wide_tables_scroll_in_their_box_on_a_tablet(
    browser: Any, live_server: LiveServer, path: str, width: int
) -> None:
    # Tables scrolled in their own box only below 700 px: from there to some 1,100 px they
    # widened the page (the leaderboard to 818 px at 768) or spilled out of their panel (the
    # game's seats table, in half the page's width, by 190 px at 901).
    with _page(browser, width, 900) as page:
        page.goto(live_server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        spilled = page.evaluate(
            """() => Array.from(document.querySelectorAll('table.data')).filter(t => {
                const box = t.closest('.scroll, .panel, main').getBoundingClientRect();
                return t.getBoundingClientRect().right > box.right + 1
                    && getComputedStyle(t.closest('.scroll, .panel, main')).overflowX
                       === 'visible';
            }).map(t => t.querySelector('th').textContent)"""
        )
        assert spilled == [], spilled


def test_each_page_title_says_which_page_it_is(tab: Tab, live_server: LiveServer) -> None:
    # A game's and a tournament's tab said their id alone ("t-…-g0 · Sixty-three Arena"), and
    # every list of games "Games", whichever bot and fault it listed: among several tabs, or in
    # a screen reader's list of windows, one could not tell which page was which.
    query = urlencode({"bot": XSS_NAME, "fault": "timeout"})
    site = " · Sixty-three Arena"
    expected = {
        f"/games/{GAME}": f"Game {GAME}",
        f"/games/{GAME}/replay": f"Replay {GAME}",
        f"/tournaments/{FINISHED_TOURNAMENT}": f"Tournament {FINISHED_TOURNAMENT}",
        "/bots/greedy": "Bot greedy@1.0",
        "/games": "Games",
        "/games?fault=any": "Games with a fault",
        "/games?bot=greedy&version=1.0": "Games of greedy@1.0",
        f"/games?{query}": f"Games in which {XSS_NAME} faulted: timeout",  # as text
    }
    for path, title in expected.items():
        tab.page.goto(live_server.base + path)
        assert tab.page.title() == title + site, path


def test_a_screen_reader_hears_what_each_step_of_the_replay_did(
    tab: Tab, live_server: LiveServer
) -> None:
    # Stepping through a replay by keyboard, a screen reader said "frame 5 / 96 · hand 1 ·
    # decision" and no more: the decision made ("Seat 1: bid 40") was in no live region, and
    # the slider said a bare number.
    page = tab.page
    _open_replay(tab, live_server.base, GAME)
    page.focus("#slider")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    state = _replay_state(page)
    assert state["kind"] == "decision"
    step = page.locator("#log li.decision").inner_text()
    assert re.match(r"Seat \d: ", step), step
    heard = page.locator("[aria-live]:not([aria-live=off])").all_inner_texts()
    assert any(step in text for text in heard), heard
    frames = page.get_attribute("#slider", "max")
    valuetext = page.get_attribute("#slider", "aria-valuetext")
    assert valuetext == f"frame {state['frame'] + 1} of {int(frames or 0) + 1}"


@pytest.mark.parametrize("path", ["/api", f"/api/games/{GAME}"])
def test_json_opened_in_the_browser_logs_no_error(
    tab: Tab, live_server: LiveServer, path: str
) -> None:
    # A page that is not HTML names no icon, so the browser asks for /favicon.ico: it was a
    # 404, an error in the console of every JSON route (the dashboard says each page has one).
    logged: list[str] = []
    tab.page.on("console", lambda m: logged.append(m.text) if m.type == "error" else None)
    assert tab.page.goto(live_server.base + path).ok
    tab.page.wait_for_timeout(500)  # the icon is asked for after the page loads
    assert logged == []
    with urllib.request.urlopen(live_server.base + "/favicon.ico", timeout=10) as icon:  # noqa: S310 - local server
        assert icon.headers["Content-Type"].startswith("image/svg+xml")


_LOW_CONTRAST = r"""() => {
    // Text whose contrast with what is behind it is under WCAG AA's 4.5:1 (3:1 when large);
    // text over a gradient (the replay's felt, a card's back) is left out: no one colour.
    const rgb = s => s.match(/[\d.]+/g).map(Number);
    const lum = c => c.slice(0, 3).map(v => (v /= 255) <= 0.03928
        ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4))
        .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const behind = e => {
        for (; e; e = e.parentElement) {
            const style = getComputedStyle(e);
            if (style.backgroundImage !== "none") return null;
            const c = rgb(style.backgroundColor);
            if (c.length < 4 || c[3] > 0.9) return c;
        }
        return [255, 255, 255];
    };
    const low = [];
    for (const e of document.querySelectorAll("body *")) {
        const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
        const back = own && e.offsetParent && behind(e);
        if (!back) continue;
        let opacity = 1;
        for (let up = e; up; up = up.parentElement) opacity *= Number(getComputedStyle(up).opacity);
        const ink = rgb(getComputedStyle(e).color).slice(0, 3)
            .map((v, i) => v * opacity + back[i] * (1 - opacity));
        const [a, b] = [lum(ink), lum(back)].sort((x, y) => y - x);
        const style = getComputedStyle(e), size = parseFloat(style.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
        const ratio = (a + 0.05) / (b + 0.05);
        if (ratio < (large ? 3 : 4.5)) low.push(`${e.className || e.tagName} ${ratio.toFixed(2)}`);
    }
    return [...new Set(low)];
}"""


@pytest.mark.parametrize(
    "path", ["/", "/bots", f"/tournaments/{FINISHED_TOURNAMENT}", f"/games/{GAME}", "/games"]
)
def test_text_is_dark_enough_to_read(tab: Tab, live_server: LiveServer, path: str) -> None:
    # The muted grey was 4.42:1 on the page's background (the footer, a tournament's summary,
    # the leaderboard's explanation) and the green of "made" 3.30:1 on white: under the 4.5:1
    # that text needs to be read by those who see less contrast.
    tab.page.goto(live_server.base + path)
    if path.startswith("/games/"):  # the fixture's short games make no contract: show one made
        tab.page.eval_on_selector("table.hands span.bad", "s => { s.className = 'ok'; }")
    assert tab.page.evaluate(_LOW_CONTRAST) == []


@pytest.mark.parametrize(
    "path", ["/", "/bots/greedy", f"/tournaments/{FINISHED_TOURNAMENT}", f"/games/{GAME}"]
)
def test_numbers_in_tables_stay_on_one_line_on_a_phone(
    browser: Any, live_server: LiveServer, path: str
) -> None:
    # At 375 px a standings row's W–D–L broke at its dashes, "3–" over "0–" over "3", which
    # reads as three numbers: the table scrolls in its box, so a number need not wrap.
    with _page(browser, 375, 800) as page:
        page.goto(live_server.base + path)
        split = page.evaluate(
            """() => Array.from(document.querySelectorAll('table.data td.num')).filter(cell => {
                const wrapped = cell.getBoundingClientRect().height;
                cell.style.whiteSpace = "nowrap";
                const whole = cell.getBoundingClientRect().height;
                cell.style.whiteSpace = "";
                return wrapped > whole;
            }).map(cell => cell.textContent.trim())"""
        )
        assert split == [], split


def test_a_disabled_bot_is_greyed_but_readable(tab: Tab, live_server: LiveServer) -> None:
    # Its row was drawn at 55% opacity: its name and author fell to 2.3:1 and 3.6:1.
    from tests.dashboard.fill import add_bot

    name = "n" * 64
    with open_database(live_server.site.url) as db:
        add_bot(db, name, "9" * 64)
        with db.session() as s:
            repo.set_bot_disabled(s, name)
    tab.page.goto(live_server.base + "/bots")
    row = tab.page.locator("table.data tr.disabled")
    assert row.count() == 1 and row.locator(".tag").inner_text() == "disabled"
    assert tab.page.evaluate(_LOW_CONTRAST) == []


def test_the_elo_chart_labels_are_legible_on_a_phone(browser: Any, live_server: LiveServer) -> None:
    # The chart is drawn 720 units wide and scaled to its panel: at 375 px, to some 320 px,
    # its 11-unit labels (the Elo scale, the games, the latest Elo) were 5 px high.
    with _page(browser, 375, 800) as page:
        page.goto(f"{live_server.base}/bots/greedy")
        labels = page.locator("svg.chart text.tick")
        assert labels.count() > 3
        sizes = labels.evaluate_all(
            """ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize)
                              * t.getScreenCTM().a)"""
        )
        assert min(sizes) >= 9, sizes
        boxes = [labels.nth(i).bounding_box() for i in range(labels.count())]
        assert all(b["x"] >= 0 and b["x"] + b["width"] <= 375 for b in boxes), boxes


@pytest.mark.parametrize(
    ("path", "section"),
    [
        ("/", "Leaderboard"),
        ("/bots/greedy", "Bots"),
        (f"/tournaments/{FINISHED_TOURNAMENT}", "Tournaments"),
        ("/games?fault=any", "Games"),
        (f"/games/{GAME}/replay", "Games"),
    ],
)
def test_the_menu_marks_the_section_the_page_is_in(
    tab: Tab, live_server: LiveServer, path: str, section: str
) -> None:
    # Nothing in the menu said where one was: to a screen reader (aria-current) and to the eye.
    tab.page.goto(live_server.base + path)
    if path.endswith("/replay"):
        tab.page.wait_for_selector("#replay.ready")
    current = tab.page.locator("header.top nav a[aria-current=page]")
    assert current.all_inner_texts() == [section]
    other = tab.page.locator("header.top nav a:not([aria-current])").first
    looks = "e => [getComputedStyle(e).fontWeight, getComputedStyle(e).textDecorationLine]"
    assert current.evaluate(looks) != other.evaluate(looks)  # not by colour alone


def test_a_seats_face_down_discards_are_drawn_solid(tab: Tab, live_server: LiveServer) -> None:
    # They were drawn at 70% opacity over the felt: their ranks fell to some 2.9:1, too faint
    # to read. Their own row tells them from the hand.
    url = f"{live_server.base}/api/games/{GAME}/replay"
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - local server
        frames = json.load(response)["frames"]
    frame = next(f["i"] for f in frames if any(f["discards"]))
    page = tab.page
    page.goto(f"{url.replace('/api', '')}#frame={frame}&perspective=full")
    page.wait_for_function("document.querySelector('#replay.ready')?.dataset.frame")
    faint = page.evaluate(
        """() => Array.from(document.querySelectorAll('.discards .card')).map(card => {
            let opacity = 1;
            for (let e = card; e; e = e.parentElement) {
                opacity *= Number(getComputedStyle(e).opacity);
            }
            return opacity;
        })"""
    )
    assert faint and all(opacity == 1 for opacity in faint), faint
