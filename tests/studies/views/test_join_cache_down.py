"""Crowd joins while the cache (Redis) cannot be reached: the join rate limit lets the
join through with a warning (studies.views.common.join_rate_allows), and nothing else
on the way into the study needs the cache."""

import logging

import pytest
from django.core.cache import cache
from redis.exceptions import ConnectionError as RedisConnectionError

from studies.models import Annotator, CrowdEntry
from tests.studies.services.test_crowd_joins import prolific

# Port 1 on the loopback: nothing listens, connections are refused at once.
UNREACHABLE_REDIS = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
    }
}


@pytest.fixture
def cache_down(settings):
    settings.CACHES = UNREACHABLE_REDIS
    with pytest.raises(RedisConnectionError):
        cache.get("anything")


def test_a_prolific_join_goes_through_while_the_cache_is_down(
    client, crowd_study, cache_down, caplog
):
    with caplog.at_level(logging.WARNING, logger="studies.views.common"):
        response = client.get(prolific(crowd_study, 1, "abc123"))
    assert response.status_code == 302 and response["Location"] == f"/s/{crowd_study.slug}/"
    warnings = [r for r in caplog.records if r.name == "studies.views.common"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "Crowd join allowed without its rate limit" in warnings[0].getMessage()
    assert "Connection refused" in warnings[0].getMessage()
    annotator = Annotator.objects.get()
    assert annotator.platform_participant_id == "abc123" and CrowdEntry.objects.count() == 1
    # The study's pages (database sessions) do not need the cache either.
    assert client.get(response["Location"], follow=True).status_code == 200


@pytest.fixture
def silent_redis(settings):
    """A server that accepts connections and never answers (a Redis host that stopped
    responding), with the cache's timeouts as the settings give them, shortened."""
    import socket

    options = settings.CACHES["default"]["OPTIONS"]
    assert options == {
        "socket_connect_timeout": settings.CACHE_TIMEOUT_SECONDS,
        "socket_timeout": settings.CACHE_TIMEOUT_SECONDS,
    }
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    settings.CACHES = {
        "default": {
            **UNREACHABLE_REDIS["default"],
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {key: 0.5 for key in options},
        }
    }
    yield
    server.close()


def test_a_cache_that_stops_answering_delays_a_join_by_its_timeout_only(
    client, crowd_study, silent_redis
):
    import time

    started = time.monotonic()
    response = client.get(prolific(crowd_study, 1, "abc124"))
    assert response.status_code == 302
    assert time.monotonic() - started < 10  # without a timeout: minutes
    assert CrowdEntry.objects.count() == 1
