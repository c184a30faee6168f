"""Logging on to Oracle from the command line: the checks made before connecting and the one
line said when the logon fails (``oramem db``, ``oramem migrate``/``reembed`` on
``oracle://``, the ``--dsn`` of ``oramem kg jobs``/``run-jobs``).

Two rules for a DBA's first day (dba33):

- **No secret is printed.** A connect string that carries a password (``app/pw@host/svc``,
  ``oracle://app:pw@host/svc``) is refused before connecting, with an error that does not
  repeat it; python-oracledb's own error for such a string quotes it whole (DPY-4018 "cannot
  parse connect string "app/pw@..."", python-oracledb 26.1), and oramem printed it twice.
  Any message built after a failed logon has the password replaced by ``***``: the password
  field of a quoted connect string whatever its length, and the password itself elsewhere
  when it has 4 characters or more (a shorter one is never replaced as a substring).
- **The error says what to do.** The driver's whole message is kept on one line (the first
  line of DPY-6005 is "cannot connect to database (CONNECTION_ID=...)"; the cause, such as
  "[Errno 111] Connection refused", is on the next one, which was dropped), followed by the
  fix for the usual logon failures (:data:`LOGON_HINTS`).

No import of python-oracledb here: errors are read by their ``full_code`` and text.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["LOGON_HINTS", "dsn_credentials_problem", "logon_failure", "redact"]

_UNREACHABLE = ("the database is not reachable: check the host and port in the connect string (e.g. "
                "localhost:1521/FREEPDB1) and that the database and its listener are up")

#: error code -> what to do (the ORA- texts: docs.oracle.com/error-help/db/ora-NNNNN;
#: plsql/VERIFY.md, "dba33"). DPY- codes are python-oracledb's (thin mode).
LOGON_HINTS: dict[str, str] = {
    "ORA-01017": "the user name or password is wrong: check the user and the password "
                 "(ORAMEM_PASSWORD, --password-stdin or the prompt)",
    "ORA-28000": "the account is locked: as a DBA, ALTER USER <user> ACCOUNT UNLOCK; (after too many "
                 "failed logons, check the password first)",
    "ORA-28001": "the password has expired: as a DBA, ALTER USER <user> IDENTIFIED BY <new password>; "
                 "then give the new one",
    "ORA-01045": "the user may not log on: as a DBA, GRANT CREATE SESSION TO <user>;",
    "ORA-12514": "the listener does not know this service: check the service name after the '/' in the "
                 "connect string (e.g. FREEPDB1; `lsnrctl services` on the database host lists them)",
    "ORA-12505": "the listener does not know this SID: give the service name (host:port/SERVICE), "
                 "not the SID",
    "ORA-12541": _UNREACHABLE,
    "ORA-12170": _UNREACHABLE,
    "ORA-12545": _UNREACHABLE,
    "DPY-6005": _UNREACHABLE,
    "DPY-6000": _UNREACHABLE,
    "DPY-4018": "the connect string is not valid: give host:port/service (Easy Connect), e.g. "
                "localhost:1521/FREEPDB1, or a TNS alias",
    "DPY-4017": "the connect string is not valid: give host:port/service (Easy Connect), e.g. "
                "localhost:1521/FREEPDB1, or a TNS alias",
}

_CODE = re.compile(r"\b(ORA-\d{5}|DPY-\d{4})\b")


def dsn_credentials_problem(dsn: str, option: str = "--dsn") -> Optional[str]:
    """The error for a connect string that carries a user name or password before ``@``
    (``app/pw@host:1521/svc``), else None. The message does not repeat the string. A TNS
    descriptor (``(DESCRIPTION=...)``) and Easy Connect parameters after ``?`` are not read."""
    head = dsn.split("?", 1)[0]
    if "@" not in head or "(" in head.split("@", 1)[0]:
        return None
    return (f"{option} holds a user name or password before '@' (USER/PASSWORD@HOST...): give only "
            "host:port/service there (e.g. localhost:1521/FREEPDB1), the user with --user, "
            "and the password in ORAMEM_PASSWORD or with --password-stdin (a password on the command line "
            "is visible to every user of this machine)")


#: the password field of a connect string quoted in a message: ``USER/PASSWORD@`` (Easy Connect,
#: as python-oracledb's DPY-4018 quotes it) or ``USER:PASSWORD@`` (an ``oracle://`` location)
_DSN_PASSWORD = re.compile(r"(?P<user>[^\s/:@'\"()]+[/:])(?P<password>[^\s/@'\"]*)@")


def redact(text: str, *secrets: Optional[str]) -> str:
    """``text`` with the password field of every connect string in it replaced by ``***``
    (``app/***@host/svc``, ``oracle://app:***@host/svc``), whatever the password's length, and
    every other occurrence of a secret of 4 characters or more. A shorter secret is redacted in
    those fields only, never as a substring: a one-letter password would otherwise blank that
    letter everywhere in the message (left36; before, a password of 1 to 3 characters was not
    redacted at all, so DPY-4018's quote of ``app/pw@host`` kept it)."""
    text = _DSN_PASSWORD.sub(lambda m: m.group("user") + "***@", text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def logon_failure(exc: BaseException, user: str, dsn: str, password: Optional[str],
                  where: Optional[str] = None) -> str:
    """One line for a failed logon: who, where (``where``, else "cannot connect to DSN as
    USER"), the driver's whole message (on one line, the password redacted) and what to do."""
    text = redact(" ".join(str(exc).split()), password) or type(exc).__name__
    codes = _CODE.findall(text)
    full = getattr(exc.args[0], "full_code", None) if getattr(exc, "args", None) else None
    if isinstance(full, str):
        codes.insert(0, full)
    hint = next((LOGON_HINTS[c] for c in codes if c in LOGON_HINTS), None)
    if hint is None and isinstance(exc, OSError):  # name resolution, refused, timed out
        hint = _UNREACHABLE
    where = redact(where or f"cannot connect to {dsn} as {user}", password)
    return f"{where}: {text}" + (f" ({hint})" if hint else "")
