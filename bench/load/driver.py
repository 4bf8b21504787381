"""Virtual annotators for the load benchmark: asyncio + httpx, one cookie jar each.

The **journey**: each follows the invitation link, consents (POST with the CSRF
token), completes the tutorial, claims a batch, then per item: the item page ("show
next item"), in ``htmx`` mode the draft the page keeps of the choices ("save draft"),
and the answer ("save judgement"), reviews and submits the batch, claims
the next. In ``htmx`` mode (a browser with JavaScript, what annotators use) the answer
is an htmx POST whose response is the next item's panel, so "show next item" is the
full item page that opens each batch; in ``plain`` mode (no JavaScript) the answer is
a form POST redirecting to the next item's page, fetched as "show next item". With a
think time, each annotator pauses that long (drawn uniformly) before each request.

The **save loops** (``save_until``): an annotator holding an open batch answers its
items one after the other, as fast as the server answers, going round the batch again
(revising its answers) after the last one. Either every request is a save alone (the
form POST without JavaScript, whose redirect to the next item is not followed: the
like-for-like comparison with the floor's INSERT), or every request is the htmx save
whose response renders the next item (two requests' work in one). The **floor**
(``floor_until``) sends the save's request to the bench-only INSERT view.

Every save sends the revision its page showed, as the browser form does; the
annotator counts the revisions acknowledged (HTTP 2xx) per item and checks the next
panel shows the count it expects, so a lost or doubled write is an error, and
``acknowledged`` lets the runner compare with the database afterwards.
"""

import asyncio
import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field

import httpx

from bench.common import percentile

CATEGORIES = (
    "malformed",
    "dialogue_contradicting",
    "parroting",
    "off_topic",
    "on_topic_but_unverifiable",
)
ITEM_URL = re.compile(r"/s/[\w-]+/b/(\d+)/(\d+)/")
OF_ITEMS = re.compile(rb"(?:Response candidate|Pair) (\d+) of (\d+)")
# A ranking stage's one item: its heading, and a rank field per candidate.
RANKING = re.compile(rb"Rank the \d+ responses")
RANK_FIELD = re.compile(rb'name="rank_(\d+)"')
VERSION = re.compile(rb'name="version" value="(\d+)"')
REVISION = re.compile(rb'name="revision" value="(\d+)"')
NO_WORK = b"<h1>No work available right now</h1>"

SAVE, SHOW = "save judgement", "show next item"
DRAFT = "save draft"
SAVE_LOOP = "save + next panel (loop)"
SAVE_ONLY = "save only (loop)"
FLOOR = "floor INSERT"


class Failed(Exception):
    """A response that is not what the page should answer (counted as an error)."""


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)

    def error(self, kind: str, message: str) -> None:
        self.errors[kind] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{kind}: {message}"[:500])

    def row(self, kind: str, seconds: float) -> dict:
        values = self.latencies.get(kind, [])
        return {
            "request": kind,
            "count": len(values),
            "errors": self.errors.get(kind, 0),
            "rps": len(values) / seconds if seconds else 0.0,
            "p50_ms": percentile(values, 50),
            "p95_ms": percentile(values, 95),
            "p99_ms": percentile(values, 99),
        }


def answer_body(
    rng: random.Random,
    *,
    mode: str,
    instrument: str = "coherence",
    candidates: list[str] = (),
) -> dict:
    """What the item form posts: Yes + rating, or No + categories (+ most evident); in
    a Likert study a rating per dimension of ``bench.generate.LIKERT_DIMENSIONS`` (now
    and then "cannot judge" on the slider); in a pairwise study A, B or Tie; in a
    ranking stage (``candidates``: the ids its page names) a rank per candidate, the
    candidates in a random order."""
    body: dict = {"seconds_spent": f"{rng.uniform(4, 40):.1f}" if mode == "htmx" else ""}
    body["form_mode"] = "js" if mode == "htmx" else "plain"
    if candidates:
        order = rng.sample(list(candidates), len(candidates))
        body.update({f"rank_{rid}": str(place) for place, rid in enumerate(order, start=1)})
        return body
    if instrument == "pairwise":
        body["choice"] = rng.choice(("A", "B", "A", "B", "Tie"))
        return body
    if instrument == "likert":
        body["rating_fluency"] = str(rng.randint(1, 5))
        if rng.random() < 0.03:
            body["cannot_judge_warmth"] = "on"
        else:
            body["rating_warmth"] = str(rng.randint(0, 100))
        return body
    if rng.random() < 0.6:
        body.update(coherent="yes", empathy=str(rng.randint(1, 5)))
    else:
        chosen = rng.sample(CATEGORIES, rng.choice((1, 1, 2, 3)))
        body.update(coherent="no", categories=chosen)
        if len(chosen) > 1:
            body["most_evident"] = rng.choice(chosen)
    return body


class VirtualAnnotator:
    def __init__(
        self,
        base_url: str,
        slug: str,
        tokens: list[str],
        stats_ref,
        mode: str,
        seed,
        think: tuple[float, float] | None = None,
        instrument: str = "coherence",
    ):
        self.base, self.slug, self.tokens, self.mode = base_url, slug, tokens, mode
        self.instrument = instrument  # what the study's stages ask
        self.stats_ref = stats_ref  # a one-item list: the current level's Stats
        self.rng = random.Random(seed)
        self.think = think  # seconds before each request, drawn uniformly; None: no pause
        self.client: httpx.AsyncClient | None = None
        self.assignment: int | None = None
        self.number = 0
        self.n_items = 0
        self.candidates: list[str] = []  # a ranking's candidates (its rank fields)
        self.ready = False  # signed in, consented, tutorial done
        self.drafted = False  # the current item's draft sent (the journey, htmx mode)
        # (assignment id, item number) -> revisions acknowledged (HTTP 2xx) so far
        self.acknowledged: dict[tuple[int, int], int] = defaultdict(int)

    @property
    def stats(self) -> Stats:
        return self.stats_ref[0]

    def csrf(self) -> str:
        return self.client.cookies.get("csrftoken", "")

    async def request(self, kind, method, url, *, expect=(200,), **kwargs) -> httpx.Response:
        started = time.perf_counter()
        try:
            response = await self.client.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            self.stats.error(kind, f"{method} {url}: {exc!r}")
            raise Failed(kind) from exc
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code not in expect:
            self.stats.error(kind, f"{method} {url}: HTTP {response.status_code}")
            raise Failed(kind)
        self.stats.latencies[kind].append(elapsed)
        return response

    async def sign_up(self) -> None:
        self.drafted = False
        if self.client is not None:
            await self.client.aclose()
        self.client = httpx.AsyncClient(base_url=self.base, timeout=30)
        self.assignment = None
        token = self.tokens.pop()
        await self.request("sign-up", "GET", f"/i/{token}/", expect=(302,))
        page = await self.request("sign-up", "GET", f"/s/{self.slug}/consent/")
        version = VERSION.search(page.content)
        if not version:
            self.stats.error("sign-up", "consent page without a version")
            raise Failed("sign-up")
        data = {"csrfmiddlewaretoken": self.csrf(), "version": version[1].decode(), "agree": "on"}
        await self.request("sign-up", "POST", f"/s/{self.slug}/consent/", data=data, expect=(302,))
        await self.request("sign-up", "GET", f"/s/{self.slug}/tutorial/")
        data = {"csrfmiddlewaretoken": self.csrf()}
        await self.request("sign-up", "POST", f"/s/{self.slug}/tutorial/", data=data, expect=(302,))
        self.ready = True

    async def claim(self) -> None:
        home = await self.request("home", "GET", f"/s/{self.slug}/", expect=(200, 302))
        if home.status_code == 302 and home.headers.get("location", "").endswith("/tutorial/"):
            # A stage with a tutorial of its own (a later Likert stage): read it first.
            data = {"csrfmiddlewaretoken": self.csrf()}
            await self.request(
                "home", "POST", f"/s/{self.slug}/tutorial/", data=data, expect=(302,)
            )
            home = await self.request("home", "GET", f"/s/{self.slug}/", expect=(200, 302))
        if home.status_code == 302:
            if home.headers.get("location", "").endswith("/done/"):
                self.ready = False  # finished every stage: the next one signs up
                return
            self.stats.error("home", f"GET home: redirected to {home.headers.get('location')}")
            raise Failed("home")
        data = {"csrfmiddlewaretoken": self.csrf()}
        response = await self.request(
            "claim batch", "POST", f"/s/{self.slug}/start/", data=data, expect=(200, 302)
        )
        location = response.headers.get("location", "")
        if location.endswith("/tutorial/"):
            # The next stage opened between the home page and the claim: its tutorial
            # first, then the claim again.
            data = {"csrfmiddlewaretoken": self.csrf()}
            await self.request(
                "claim batch", "POST", f"/s/{self.slug}/tutorial/", data=data, expect=(302,)
            )
            response = await self.request(
                "claim batch", "POST", f"/s/{self.slug}/start/", data=data, expect=(200, 302)
            )
            location = response.headers.get("location", "")
        if location.endswith("/done/"):
            self.ready = False  # finished every stage: the next one signs up
            return
        if response.status_code == 200 and NO_WORK in response.content:
            # Every batch this annotator may take is held by others or done (a small
            # study runs out): a normal answer, and the next annotator signs up.
            self.ready = False
            return
        match = re.search(r"/b/(\d+)/$", location)
        if response.status_code != 302 or not match:
            self.stats.error("claim batch", f"no batch: HTTP {response.status_code} {location}")
            raise Failed("claim batch")
        self.assignment = int(match[1])
        response = await self.request("open batch", "GET", location, expect=(302,))
        item = ITEM_URL.search(response.headers["location"])
        self.number = int(item[2])
        await self.show()

    async def show(self) -> None:
        url = f"/s/{self.slug}/b/{self.assignment}/{self.number}/"
        response = await self.request(SHOW, "GET", url)
        self.candidates = []
        if RANKING.search(response.content) and self.number == 1:  # one item, ranked whole
            self.candidates = [m.decode() for m in RANK_FIELD.findall(response.content)]
            self.n_items = 1
            self.check_revision(SHOW, response.content, self.number)
            return
        found = OF_ITEMS.search(response.content)
        if not found or int(found[1]) != self.number:
            self.stats.error(SHOW, f"{url}: not the item page")
            raise Failed(SHOW)
        self.n_items = int(found[2])
        self.check_revision(SHOW, response.content, self.number)

    def check_revision(self, kind: str, page: bytes, number: int) -> None:
        """The page's form must carry the revision of every acknowledged save."""
        shown = REVISION.search(page)
        expected = self.acknowledged[(self.assignment, number)]
        if not shown or int(shown[1]) != expected:
            self.stats.error(
                kind, f"item {number}: page shows revision {shown and shown[1]}, {expected} acked"
            )
            raise Failed(kind)

    async def save(self, kind: str = SAVE, mode: str | None = None, follow: bool = True) -> None:
        """Answer the current item. ``mode`` overrides the annotator's; in plain mode
        ``follow=False`` leaves the redirect to the next item unfollowed."""
        mode = mode or self.mode
        url = f"/s/{self.slug}/b/{self.assignment}/{self.number}/"
        body = answer_body(
            self.rng,
            mode=mode,
            instrument=self.instrument,
            candidates=self.candidates,
        )
        body["csrfmiddlewaretoken"] = self.csrf()
        body["revision"] = str(self.acknowledged[(self.assignment, self.number)])
        last = self.number == self.n_items
        if mode == "htmx":
            headers = {
                "HX-Request": "true",
                "HX-Target": "item-panel",
                "HX-Current-URL": self.base + url,
                "X-CSRFToken": self.csrf(),
            }
            response = await self.request(
                kind, "POST", url, data=body, headers=headers, expect=(204,) if last else (200,)
            )
            self.acknowledged[(self.assignment, self.number)] += 1
            if last:
                if "review/" not in response.headers.get("HX-Redirect", ""):
                    self.stats.error(kind, f"{url}: no HX-Redirect to the review")
                    raise Failed(kind)
                self.number = 0
                return
            found = OF_ITEMS.search(response.content)
            if not found or int(found[1]) != self.number + 1:
                self.stats.error(kind, f"{url}: the answer did not lead to the next item")
                raise Failed(kind)
            self.number += 1
            self.check_revision(kind, response.content, self.number)
            return
        response = await self.request(kind, "POST", url, data=body, expect=(302,))
        self.acknowledged[(self.assignment, self.number)] += 1
        location = response.headers["location"]
        if last:
            self.number = 0
            return
        if f"/{self.number + 1}/?saved=1" not in location:
            self.stats.error(kind, f"{url}: redirected to {location}")
            raise Failed(kind)
        self.number += 1
        if follow:
            await self.show()

    async def draft(self) -> None:
        """What the page sends a moment after the annotator's choices on the current
        item (annotate.js, debounced): the form's fields to the draft endpoint."""
        url = f"/s/{self.slug}/b/{self.assignment}/{self.number}/draft/"
        body = answer_body(
            self.rng, mode="htmx", instrument=self.instrument, candidates=self.candidates
        )
        body["csrfmiddlewaretoken"] = self.csrf()
        body["revision"] = str(self.acknowledged[(self.assignment, self.number)])
        await self.request(DRAFT, "POST", url, data=body, expect=(204,))

    async def submit(self) -> None:
        url = f"/s/{self.slug}/b/{self.assignment}/review/"
        await self.request("review + submit", "GET", url)
        data = {"csrfmiddlewaretoken": self.csrf()}
        await self.request("review + submit", "POST", url, data=data, expect=(302,))
        self.assignment = None

    async def step(self) -> None:
        """One request-ful step of the annotator's life."""
        if not self.ready:
            await self.sign_up()
        elif self.assignment is None:
            await self.claim()
        elif self.number == 0:
            await self.submit()
        elif self.mode == "htmx" and not self.drafted:
            # A browser with JavaScript keeps a draft of the choices before the save.
            await self.draft()
            self.drafted = True
        else:
            await self.save()
            self.drafted = False

    async def run_until(self, deadline: float) -> None:
        while time.perf_counter() < deadline:
            if self.think:
                await asyncio.sleep(self.rng.uniform(*self.think))
                if time.perf_counter() >= deadline:
                    return
            try:
                await self.step()
            except Failed:
                # Start over cleanly with a new identity after an error.
                self.ready = False
            except IndexError:
                self.stats.error("sign-up", "no invitation tokens left")
                return

    async def hold_a_batch(self) -> None:
        """Sign up and claim until this annotator has an open batch at an item (the
        save loop's warm-up; the requests count in the current Stats)."""
        for _ in range(5):
            try:
                if not self.ready:
                    await self.sign_up()
                if self.assignment is None:
                    await self.claim()
                if self.assignment is not None and self.number:
                    return
                if self.assignment is not None:  # between the last save and the submit
                    await self.submit()
            except Failed:
                self.ready = False
        raise RuntimeError("could not get a batch to save into (see the error samples)")

    async def save_until(self, deadline: float, mode: str = "htmx") -> None:
        """Answer this batch's items one after the other until ``deadline``, revising
        them from the first again after the last. ``htmx``: each answer's response is
        the next item's panel; ``plain``: the form POST without JavaScript, whose
        response is a redirect to the next item, not followed (the save alone)."""
        kind = SAVE_LOOP if mode == "htmx" else SAVE_ONLY
        while time.perf_counter() < deadline:
            try:
                await self.save(kind, mode=mode, follow=False)
            except Failed:
                return  # counted; this annotator's revisions are no longer known
            if self.number == 0:
                self.number = 1

    async def floor_until(self, deadline: float) -> None:
        """POST what the save alone posts (``mode`` plain: the form's body, CSRF token
        and revision, with this annotator's cookies) to the floor view, until
        ``deadline``: the client's side of each request is the save's, the server's
        is one INSERT."""
        while time.perf_counter() < deadline:
            body = answer_body(
                self.rng,
                mode="plain",
                instrument=self.instrument,
                candidates=self.candidates,
            )
            body["csrfmiddlewaretoken"] = self.csrf()
            body["revision"] = str(self.acknowledged[(self.assignment, self.number or 1)])
            try:
                await self.request(FLOOR, "POST", "/bench/floor/", data=body, expect=(302,))
            except Failed:
                continue

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()


async def run_level(annotators: list[VirtualAnnotator], stats_ref, duration: float) -> float:
    """The journey for ``duration`` seconds (think time as each annotator has it)."""
    stats_ref[0] = Stats()
    started = time.perf_counter()
    await asyncio.gather(*(a.run_until(started + duration) for a in annotators))
    return time.perf_counter() - started


async def warm_up(annotators: list[VirtualAnnotator], stats_ref) -> Stats:
    """Every annotator signs up if needed and gets an open batch (not timed)."""
    stats_ref[0] = stats = Stats()
    await asyncio.gather(*(a.hold_a_batch() for a in annotators))
    return stats


async def run_save_loop(
    annotators: list[VirtualAnnotator],
    stats_ref,
    duration: float,
    mode: str = "htmx",
    stats: Stats | None = None,
) -> float:
    """The save loop for ``duration`` seconds (after ``warm_up``); its Stats (``stats``,
    to add to an earlier slice's, or new ones) are left in ``stats_ref``."""
    stats_ref[0] = stats if stats is not None else Stats()
    started = time.perf_counter()
    await asyncio.gather(*(a.save_until(started + duration, mode) for a in annotators))
    return time.perf_counter() - started


async def run_floor(
    annotators: list[VirtualAnnotator], stats_ref, duration: float, stats: Stats | None = None
) -> tuple[Stats, float]:
    """The floor for ``duration`` seconds: the same annotators send the same request
    as the save alone (body, CSRF token, cookies) to the floor view instead (adding to
    ``stats`` when given)."""
    stats_ref[0] = stats = stats if stats is not None else Stats()
    started = time.perf_counter()
    await asyncio.gather(*(a.floor_until(started + duration) for a in annotators))
    return stats, time.perf_counter() - started
