"""left36 item 4: a logon message hides a password of any length.

``oramem.oracle_logon.redact`` replaced a password only when it had 4 characters or more, so
python-oracledb's DPY-4018, which quotes the whole connect string (``app/pw@db:1521/...``),
kept a password of 1 to 3 characters in the line oramem prints. The password field of a quoted
connect string is now redacted whatever its length; a short password is never replaced as a
substring (a one-letter one would blank that letter everywhere in the message)."""

from __future__ import annotations

import oracledb
import pytest

from oramem.oracle_logon import logon_failure, redact


@pytest.mark.parametrize("password", ["q", "q7z"])
def test_a_short_password_in_the_drivers_quote_of_the_connect_string_is_hidden(password):
    dsn = f"app/{password}@db:1521/FREEPDB1"
    with pytest.raises(oracledb.DatabaseError) as info:
        oracledb.connect(user="app", password=password, dsn=dsn)
    assert dsn in str(info.value)  # the driver's behaviour this guards against (DPY-4018)
    line = logon_failure(info.value, "app", dsn, password)
    assert dsn not in line and f"/{password}@" not in line
    assert line.count("app/***@db:1521/FREEPDB1") == 2, line   # oramem's "where" and the driver's quote
    assert "DPY-4018" in line and "host:port/service" in line
    # not a substring replacement: the rest of the message keeps its letters
    assert redact("query quietly", password) == "query quietly"


@pytest.mark.parametrize("password", ["q", "q7z", "Secr3t-pw"])
def test_an_oracle_location_keeps_its_user_host_and_service(password):
    assert redact(f"cannot connect to oracle://app:{password}@db:1521/FREEPDB1", password) == \
        "cannot connect to oracle://app:***@db:1521/FREEPDB1"


def test_a_connect_string_without_a_password_is_left_as_it_is():
    for text in ("cannot connect to db:1521/FREEPDB1 as app", "app@db:1521/FREEPDB1",
                 "(DESCRIPTION=(ADDRESS=(HOST=h)(PORT=1521))(CONNECT_DATA=(SERVICE_NAME=s)))"):
        assert redact(text, "p") == text
    # a long password is still hidden anywhere in the message (dba33)
    assert redact("ORA-01017 for Secr3t-pw", "Secr3t-pw") == "ORA-01017 for ***"
