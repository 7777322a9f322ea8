"""Dates and timestamps in table configs mean the same on EMR's Python 3.9 as on 3.11."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from contracts.timestamps import parse_date, parse_datetime, parse_timestamp
from tests.test_import_rules import REPO, _python39

UTC = UTC
ACCEPTED = {
    "2026-01-31": date(2026, 1, 31),
    "2026-01-31T10:15": datetime(2026, 1, 31, 10, 15),
    "2026-01-31 10:15:30": datetime(2026, 1, 31, 10, 15, 30),
    "2026-01-31T10:15:30Z": datetime(2026, 1, 31, 10, 15, 30, tzinfo=UTC),
    "2026-01-31T10:15:30.5Z": datetime(2026, 1, 31, 10, 15, 30, 500000, tzinfo=UTC),
    "2026-01-31T10:15:30.123456789+01:00": datetime(
        2026, 1, 31, 10, 15, 30, 123456, tzinfo=timezone(timedelta(hours=1))
    ),
    "2026-01-31T10:15:30-0530": datetime(
        2026, 1, 31, 10, 15, 30, tzinfo=timezone(-timedelta(hours=5, minutes=30))
    ),
}
REFUSED = [
    "",
    "2026-1-31",
    "31/01/2026",
    "2026-02-30",
    "2026-01-31T25:00",
    "2026-01-31T10:15+24:00",
    "yesterday",
    "2026-01-31Z",
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED.items())
def test_iso_forms_parse_to_the_same_value(text, expected):
    assert parse_timestamp(text) == expected
    assert type(parse_timestamp(text)) is type(expected)


@pytest.mark.parametrize("text", REFUSED)
def test_other_forms_are_refused_with_the_form_named(text):
    with pytest.raises(ValueError, match=r"not|offset"):
        parse_timestamp(text)


def test_a_date_bound_refuses_a_timestamp_and_a_timestamp_bound_takes_a_date():
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_date("2026-01-31T00:00:00Z")
    assert parse_datetime("2026-01-31") == datetime(2026, 1, 31)


def test_python_3_9_parses_every_form_as_this_python_does(tmp_path):
    """EMR Serverless runs the job on Python 3.9, whose `fromisoformat` refuses `...Z`."""
    python = _python39()
    if python is None:
        pytest.skip("no Python 3.9 on this machine")
    texts = [*ACCEPTED, *REFUSED]
    code = (
        f"import json, sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from contracts.timestamps import parse_timestamp\n"
        "out = []\n"
        "for t in json.loads(sys.argv[1]):\n"
        "    try: out.append(repr(parse_timestamp(t)))\n"
        "    except ValueError: out.append('refused')\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run(
        [python, "-I", "-c", code, json.dumps(texts)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    here = []
    for text in texts:
        try:
            here.append(repr(parse_timestamp(text)))
        except ValueError:
            here.append("refused")
    assert json.loads(result.stdout) == here
    assert here.count("refused") == len(REFUSED)
