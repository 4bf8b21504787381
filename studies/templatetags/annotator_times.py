"""``{{ moment|local_time }}``: a time as annotators see it (``studies.times``)."""

from django import template

from ..times import time_html

register = template.Library()


@register.filter
def local_time(moment):
    return time_html(moment) if moment else ""


@register.filter
def local_deadline(moment):
    """A deadline (rounded down: the time shown is never later than the real one)."""
    return time_html(moment, deadline=True) if moment else ""


@register.filter
def minutes(duration) -> int:
    """A duration in whole minutes, rounded up (an allowance is never understated)."""
    seconds = duration.total_seconds()
    return int(-(-seconds // 60))
