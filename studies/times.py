"""Times shown to annotators: an unlock time never earlier than the real moment
(rounded up to the minute, never truncated), a deadline never later (rounded down),
in UTC on the server; the browser shows
them in the annotator's own time zone (``static/js/times.js`` rewrites every
``<time data-local>``; without JavaScript the UTC text stays)."""

from datetime import UTC, datetime, timedelta

from django.utils.html import format_html

TIME_FORMAT = "%A %-d %B %Y, %H:%M UTC"


def time_rounded_up(moment: datetime) -> datetime:
    """``moment`` rounded up to the whole minute, in UTC (12:00:01 → 12:01)."""
    moment = moment.astimezone(UTC)
    whole = moment.replace(second=0, microsecond=0)
    return whole if whole == moment else whole + timedelta(minutes=1)


def time_day(moment: datetime) -> datetime:
    """The UTC day of ``moment``, as its midnight (12 May 14:05 → 12 May 00:00): when
    only the day is kept."""
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def time_display(moment: datetime) -> str:
    """ "Monday 7 December 2026, 14:05 UTC", rounded up to the minute."""
    return time_rounded_up(moment).strftime(TIME_FORMAT)


def time_rounded_down(moment: datetime) -> datetime:
    """``moment`` truncated to the whole minute, in UTC (12:00:59 → 12:00)."""
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


def time_html(moment: datetime, *, deadline: bool = False) -> str:
    """A ``<time>`` element the browser shows in the annotator's time zone; a
    ``deadline`` is rounded down, any other time up."""
    rounded = time_rounded_down(moment) if deadline else time_rounded_up(moment)
    return format_html(
        '<time datetime="{}" data-local>{}</time>',
        rounded.strftime("%Y-%m-%dT%H:%M:%SZ"),
        rounded.strftime(TIME_FORMAT),
    )
