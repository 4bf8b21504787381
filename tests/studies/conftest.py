"""Fixtures shared by the crowd-entry tests."""

import pytest
from django.core.cache import cache

from studies.models import Study


@pytest.fixture
def empty_cache():
    """Join rate limits count in the cache: each test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def client_factory():
    from django.test import Client

    return Client


@pytest.fixture
def crowd_study(loaded_study):
    """The loaded study, open, one batch per stage, its Layperson group the crowd group."""
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN,
        batches_per_stage=1,
        crowd_group=loaded_study.groups.get(name="Layperson"),
    )
    loaded_study.refresh_from_db()
    return loaded_study
