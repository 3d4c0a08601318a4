"""Cron expressions in a zone (`app.schedules.cron`): what the zone's rules say across
DST changes, a month's last days, and every bad expression or zone a 422's text names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.schedules.cron import CronError, parse

NY = "America/New_York"


def local_times(expression: str, zone: str, start: datetime, until: datetime) -> list[str]:
    cron = parse(expression, zone)
    return [cron.local(t).isoformat() for t in cron.between(start, until)]


def test_a_daily_0230_in_new_york_across_both_2027_dst_changes() -> None:
    # 2027-03-14 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day and fires
    # once, right after the jump; 2027-11-07 repeats 01:00-02:00, and 02:30 is after it.
    spring = local_times(
        "30 2 * * *", NY, datetime(2027, 3, 12, tzinfo=UTC), datetime(2027, 3, 16, 12, tzinfo=UTC)
    )
    assert spring == [
        "2027-03-12T02:30:00-05:00",
        "2027-03-13T02:30:00-05:00",
        "2027-03-14T03:00:00-04:00",
        "2027-03-15T02:30:00-04:00",
        "2027-03-16T02:30:00-04:00",
    ]
    autumn = local_times(
        "30 2 * * *", NY, datetime(2027, 11, 5, 12, tzinfo=UTC), datetime(2027, 11, 9, tzinfo=UTC)
    )
    assert autumn == [
        "2027-11-06T02:30:00-04:00",
        "2027-11-07T02:30:00-05:00",
        "2027-11-08T02:30:00-05:00",
    ]


def test_a_time_in_the_repeated_hour_fires_once_and_a_wildcard_in_both_passes() -> None:
    start, until = datetime(2027, 11, 7, 4, tzinfo=UTC), datetime(2027, 11, 7, 8, tzinfo=UTC)
    assert local_times("30 1 * * *", NY, start, until) == ["2027-11-07T01:30:00-04:00"]
    assert local_times("0 * * * *", NY, start, until) == [
        "2027-11-07T01:00:00-04:00",
        "2027-11-07T01:00:00-05:00",
        "2027-11-07T02:00:00-05:00",
        "2027-11-07T03:00:00-05:00",
    ]


def test_started_in_the_second_pass_of_a_repeated_hour_nothing_earlier_comes_back() -> None:
    cron = parse("30 1 * * *", NY)
    after = datetime(2027, 11, 7, 6, 10, tzinfo=UTC)  # 01:10 EST, the hour's second pass
    nxt = cron.after(after)
    assert nxt is not None and nxt > after
    assert cron.local(nxt).isoformat() == "2027-11-08T01:30:00-05:00"


def test_the_last_days_of_a_month() -> None:
    start, until = datetime(2027, 1, 1, tzinfo=UTC), datetime(2028, 12, 31, tzinfo=UTC)
    last = [t[:10] for t in local_times("0 9 L * *", "UTC", start, until)][:14]
    assert last == [
        "2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30",
        "2027-07-31", "2027-08-31", "2027-09-30", "2027-10-31", "2027-11-30", "2027-12-31",
        "2028-01-31", "2028-02-29",
    ]  # fmt: skip
    # The 31st fires only in months that have one; the 29th of February in leap years.
    on_31 = [
        t[:7] for t in local_times("0 0 31 * *", "UTC", start, datetime(2028, 1, 1, tzinfo=UTC))
    ]
    assert on_31 == ["2027-01", "2027-03", "2027-05", "2027-07", "2027-08", "2027-10", "2027-12"]
    leap = local_times("0 0 29 2 *", "UTC", start, until)
    assert leap == ["2028-02-29T00:00:00+00:00"]


@pytest.mark.parametrize(
    ("form", "fields"),
    [("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@weekly", "0 0 * * 0"),
     ("@monthly", "0 0 1 * *"), ("@yearly", "0 0 1 1 *"), ("@MIDNIGHT", "0 0 * * *")],
)  # fmt: skip
def test_the_at_forms_are_their_five_fields(form: str, fields: str) -> None:
    start = datetime(2027, 5, 5, 5, 5, tzinfo=UTC)
    until = datetime(2029, 1, 1, tzinfo=UTC)
    assert (
        list(parse(form).between(start, until))[:5] == list(parse(fields).between(start, until))[:5]
    )


@pytest.mark.parametrize(
    ("expression", "zone", "says"),
    [
        ("bad", "UTC", "cron: 'bad' has 1 fields"),
        ("* * * *", "UTC", "has 4 fields"),
        ("0 0 * * * *", "UTC", "has 6 fields"),
        ("@reboot", "UTC", "not one of the @ forms"),
        ("61 * * * *", "UTC", "cron: '61 * * * *' is not a valid expression"),
        ("0 0 30 2 *", "UTC", "is not a valid expression"),
        ("*/0 * * * *", "UTC", "is not a valid expression"),
        ("0 6 * * *", "Mars/Olympus", "timezone: unknown time zone 'Mars/Olympus'"),
        ("0 6 * * *", "../../etc/passwd", "timezone: unknown time zone"),
        ("0 6 * * *", "", "timezone: unknown time zone"),
    ],
)
def test_a_bad_expression_or_zone_names_its_field(expression: str, zone: str, says: str) -> None:
    with pytest.raises(CronError) as refused:
        parse(expression, zone)
    assert says in str(refused.value)


@given(st.text(max_size=40), st.sampled_from(["UTC", NY, "Asia/Kolkata", "Australia/Lord_Howe"]))
def test_any_text_parses_or_is_refused_and_times_only_go_forward(text: str, zone: str) -> None:
    try:
        cron = parse(text, zone)
    except CronError as refused:
        assert str(refused).startswith(("cron:", "timezone:"))
        return
    at = datetime(2027, 3, 1, tzinfo=UTC)
    times = list(cron.between(at, datetime(2027, 3, 3, tzinfo=UTC)))
    assert times == sorted(set(times)) and all(t > at for t in times)
