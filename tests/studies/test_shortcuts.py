"""The item panel's keys: one single key per category, for as many categories as a
study can have, never one of the keys that mean something else."""

import pytest

from studies.models import MAX_CATEGORY_BIT
from studies.shortcuts import (
    CATEGORY_KEYS,
    MOST_EVIDENT_KEY,
    NO_KEY,
    YES_KEY,
    category_keys,
)


def test_every_category_a_study_can_have_gets_its_own_key():
    keys = category_keys(MAX_CATEGORY_BIT + 1)
    assert len(set(keys)) == MAX_CATEGORY_BIT + 1
    assert all(len(key) == 1 for key in keys)
    assert not {YES_KEY, NO_KEY, MOST_EVIDENT_KEY} & set(keys)


def test_digits_come_first_then_letters():
    assert category_keys(5) == ["1", "2", "3", "4", "5"]
    assert category_keys(12) == [*"123456789", "a", "b", "c"]
    assert category_keys(13)[-1] == "d"
    assert category_keys(0) == []


def test_more_categories_than_keys_are_refused():
    with pytest.raises(ValueError, match=f"At most {len(CATEGORY_KEYS)} categories"):
        category_keys(len(CATEGORY_KEYS) + 1)
