"""The loopback web's own account of what it received: arrivals per provider, gaps, requests open at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

pytestmark = pytest.mark.integration


def test_overlapping_requests_count_as_open_at_once_and_sequential_ones_do_not() -> None:
    all_three_in = threading.Barrier(3, timeout=10)

    def arxiv(_: RecordedRequest) -> Reply:
        all_three_in.wait()  # answered only once all three are being served
        return Reply.of("<feed/>", content_type="application/atom+xml")

    with ScholarlyWeb(seed=1) as web:
        web.set_handler(web.ARXIV_PATH, arxiv)
        web.set_response(web.CROSSREF_PATH, {"message": {"items": []}})
        web.set_latency(web.CROSSREF_PATH, (0.01, 0.02))
        with httpx.Client() as client:
            for _ in range(3):
                assert client.get(web.url(web.CROSSREF_PATH)).status_code == 200
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: httpx.get(web.url(web.ARXIV_PATH), timeout=20), range(3)))
        assert [answer.status_code for answer in answers] == [200, 200, 200]

        assert web.providers() == ["crossref", "arxiv"]
        assert web.max_open("crossref") == 1 and web.max_open("arxiv") == 3
        assert len(web.arrivals("arxiv")) == 3 and len(web.gaps("crossref")) == 2
        gap = web.smallest_gap("crossref")
        assert gap is not None and gap > 0
        assert web.smallest_gap("openalex") is None and web.max_open("openalex") == 0

        web.reset_requests()
        assert web.providers() == [] and web.max_open("arxiv") == 0
