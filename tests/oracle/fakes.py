"""A recording fake of python-oracledb (sync and async), for tests that need no database.

The fakes subclass the real python-oracledb classes (without connecting), so the code under
test sees ``isinstance(x, oracledb.ConnectionPool)`` etc. exactly as with real objects.
Every call is appended to ``Recorder.calls`` as a :class:`Call`; answers come from
``Recorder.answers``: ``{qualified_name_or_sql_key: value | exception | callable(call)}``.

Binding rules enforced as the real driver does (python-oracledb 26.1 sources, the files named
are in github.com/oracle/python-oracledb, ``src/oracledb/``), so the fake fails where the driver
or the server would (issue 10, item 2):

- **DPY-2006** "positional and named binds cannot be intermixed": ``setinputsizes(**kw)`` sets the
  cursor's bind style to ``dict`` and ``setinputsizes(*args)`` to ``list``
  (``impl/base/cursor.pyx``, ``setinputsizes``); ``callfunc``/``callproc`` turn
  ``keyword_parameters`` into *positional* binds of a generated block
  (``cursor.py``, ``_call_get_execute_args``: ``begin :retval := f(a => :2, ...); end;`` with a
  list of values); ``_prepare_for_execute`` raises ``ERR_MIXED_POSITIONAL_AND_NAMED_BINDS`` when the
  style and the parameters disagree. The fake raises the driver's own error object
  (``oracledb.errors._raise_err``, DPY-2006 is a ProgrammingError).
- **LONG binds**: thin mode writes a non-PL/SQL ``str`` bind whose buffer exceeds the server's
  ``max_string_size`` as a LONG (``impl/thin/messages/base.pyx``, ``_write_bind_params_row``:
  ``not ..._is_plsql and metadata.buffer_size > buf._caps.max_string_size``), and that cap is 4000
  bytes unless the server runs with MAX_STRING_SIZE=EXTENDED (``impl/thin/capabilities.pyx``,
  ``_adjust_for_server_runtime_caps``: 32767 vs 4000). So a SQL (non-PL/SQL) ``str`` bind over
  4000 UTF-8 bytes must be typed CLOB (``setinputsizes(name=DB_TYPE_CLOB)``) or be a LOB; the fake
  raises an ORA-01461-shaped error otherwise. (The driver computes the bind's buffer as the
  UTF-8 length times 4, ``impl/base/metadata.pyx`` ``_finalize_init`` with ``DB_TYPE_VARCHAR``'s
  ``buffer_size_factor=4``, so it *sends* a str over 1000 bytes as LONG; the server accepts such a
  bind wherever the value fits a VARCHAR2, which is what the 4000-byte rule models. Whether a
  1000-4000-byte LONG bind into an expression such as ``JSON_TABLE(:x ...)`` is refused needs a
  live run: review D9(b), open in plsql/VERIFY.md.)
- **PL/SQL str binds over 32,767 bytes** become temporary CLOBs in thin mode
  (``impl/thin/var.pyx``, ``ThinVarImpl._bind``: "for PL/SQL blocks, if the size of a string ...
  exceeds 32,767 bytes it must be converted to a BLOB/CLOB", then ``conn.createlob``); the fake
  accepts them and records the ``createlob`` (review D9(a); it used to refuse them).
- **JSON columns** come back as Python objects with ``Decimal`` numbers, VECTOR columns as
  ``array.array('f')``, CLOB columns as LOBs unless an output type handler asks for strings:
  :class:`SQLBackend`, which runs the SQL our code and SQLAlchemy's Oracle dialect send on an
  in-memory SQLite database (``Recorder.backend``) and shapes the rows as the driver does
  (review D9(c); the rules and their driver sources are in its docstring).
- **Placeholders** (fidelity audit fake33): ``execute``/``executemany`` parse the statement as
  thin mode does (:func:`parse_statement`, a port of ``impl/thin/statement.pyx``) and raise the
  driver's DPY-4008 (a named bind or input size the SQL has no placeholder for; DDL has none),
  DPY-4009 (positional count) and DPY-4010 (a placeholder without a value), DPY-2005 (positional
  and keyword parameters together), DPY-2003/2004 (parameters of another shape), DPY-2066 (empty
  statement): :func:`check_placeholders`.
- **Closed objects**: a cursor closed by ``close()`` or by leaving its ``with`` is DPY-1006; a
  connection closed by ``close()`` or by leaving its ``with`` (a standalone one too: it is
  closed, not kept) or released to its pool is DPY-1001, for its cursors as well; fetching after
  a statement that is not a SELECT/WITH is DPY-1003 (all ``InterfaceError``: ``except
  oracledb.DatabaseError`` does not catch them). Closing or releasing a connection rolls back
  its uncommitted DML (:class:`_ConnectionState`).
- **Bind value types**: an untyped ``datetime`` is bound as DATE (``impl/base/metadata.pyx``
  ``from_value``) and so is one typed ``oracledb.DATETIME`` (an ApiType whose first type is
  DATE): the fake stores it without fractional seconds, as Oracle does; only a
  ``DB_TYPE_TIMESTAMP`` input size keeps them (:func:`_date_binds`). In ``executemany`` a
  later row's value the bind's variable does not take is DPY-3013 (:func:`_check_many_types`).
- **Sessions**: Oracle keeps each connection's transaction apart; :class:`SQLBackend` is one
  SQLite connection, so a statement, commit or rollback on one fake connection while another
  has uncommitted DML fails the test (``Recorder.check_isolation``) instead of answering with
  rows (or committing work) no Oracle session would.
- **READ ONLY transactions**: ``SET TRANSACTION READ ONLY`` after uncommitted DML on the
  connection is ORA-01453; until the transaction ends, DML, ``SELECT ... FOR UPDATE`` (fake40),
  calls of package subprograms that always write (:data:`WRITING_SUBPROGRAMS`) and
  ``get_json`` with ``in_lock = 1`` (its read is FOR UPDATE) are ORA-01456 (migrate's N5
  snapshots).
- **LOBs** (fake40): a LOB returned by a call or made by ``createlob`` is read over its
  connection: after that connection was closed the read is DPY-1001, after it was released
  to its pool the test fails (:func:`_lob_connected`, which cites the driver's source).
- **Pools**: ``close()`` with a connection still checked out is DPY-1005 unless ``force=True``;
  a closed pool's ``acquire()`` is DPY-1002 (:class:`_PoolState`; the fakes had no ``close``,
  so the real method ran on ``_impl = None`` and refused every close: stricter than the driver).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import oracledb
from oracledb import errors as _driver_errors


@dataclass
class Call:
    kind: str  # callfunc | callproc | execute | commit | rollback | createlob | acquire | release
    name: str = ""
    return_type: Any = None
    binds: dict = field(default_factory=dict)
    input_sizes: dict = field(default_factory=dict)
    #: serial number of the fake connection the call ran on (0: none)
    conn: int = 0


class Recorder:
    def __init__(self, answers: Optional[dict[str, Any]] = None) -> None:
        self.calls: list[Call] = []
        self.answers: dict[str, Any] = dict(answers or {})
        self.connections = 0
        #: serial numbers of fake connections with uncommitted DML on :attr:`backend`
        self.dirty: set[int] = set()
        #: real SQL for statements no answer matches (:class:`SQLBackend`), or None
        self.backend: Optional["SQLBackend"] = None

    def new_connection(self) -> int:
        self.connections += 1
        return self.connections

    def check_isolation(self, serial: int, what: str) -> None:
        """Oracle runs each session's transaction apart (read committed: another session does not
        see its uncommitted rows; its commit commits only its own). :class:`SQLBackend` is one
        SQLite connection for every fake connection, so a statement or commit on one connection
        while another has uncommitted DML would see (or commit) that other's rows, which Oracle
        would not: the fake fails the test (AssertionError) instead of answering as no server
        would. None of the tests did so when the rule came (fidelity audit fake33)."""
        others = self.dirty - {serial}
        assert not others, (f"fake: {what} on connection {serial} while connections {sorted(others)} have "
                            "uncommitted DML on the one SQLite backend; Oracle would keep their transactions apart")

    def has_answer(self, key: str) -> bool:
        return any(k == key or (k.startswith("sql:") and k[4:].lower() in key.lower()) for k in self.answers)

    def answer(self, key: str, call: Call) -> Any:
        for k, v in self.answers.items():
            if k == key or (k.startswith("sql:") and k[4:].lower() in key.lower()):
                if isinstance(v, BaseException):
                    raise v
                if callable(v):
                    return v(call)
                return v
        return None

    def of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]

    @property
    def plsql(self) -> list[Call]:
        return [c for c in self.calls if c.kind in ("callfunc", "callproc")]


def db_error(code: int, message: str, cls: type = oracledb.DatabaseError) -> BaseException:
    """An error shaped like python-oracledb's (``args[0]`` has code/message/full_code)."""
    err = type("_Error", (), {"__str__": lambda self: self.message})()
    err.code = code
    err.full_code = f"ORA-{code:05d}"
    err.message = f"ORA-{code:05d}: {message}\nORA-06512: at \"ORAMEM.ORAMEM_STORE\", line 42"
    return cls(err)


def _lob_connected(connection: Any) -> None:
    """A LOB is read over the session of the connection it came from (python-oracledb
    ``impl/thin/lob.pyx``: ``ThinLobImpl._process_message`` sends on
    ``self._conn_impl._protocol``; the LOB keeps the connection's impl, not the
    ``Connection``, so closing its cursor changes nothing). After ``close()`` of a standalone
    connection the protocol is disconnected and the read is DPY-1001 "not connected to
    database" (``impl/thin/packet.pyx`` ``_check_connected``: ``errors.ERR_NOT_CONNECTED``
    when the transport is gone; thick mode's DPI-1010 maps to the same, ``errors.py``), an
    ``InterfaceError``. A connection released to its pool stays open: the real read then
    succeeds over a session the pool may already have handed to another caller, which the
    fake refuses as a test failure (AssertionError), as it does for two sessions' DML
    (:meth:`Recorder.check_isolation`), rather than answer."""
    if connection is None or not getattr(connection, "_fake_closed", False):
        return
    assert not getattr(connection, "pooled", False), (
        f"fake: a LOB of connection {connection.serial} is read after that connection was released to its pool; "
        "python-oracledb would read it over the pooled session, which may serve another caller by now: read "
        "the LOB before the connection goes back")
    _driver_errors._raise_err(_driver_errors.ERR_NOT_CONNECTED)


class FakeLOB(oracledb.LOB):
    def __init__(self, data: str, connection: Any = None) -> None:
        """``connection``: the fake connection the LOB came from (None: one built by a test,
        read without the connection rule)."""
        self._impl = None
        self.data = data
        self._fake_connection = connection

    def read(self, offset: int = 1, amount: Optional[int] = None) -> str:
        _lob_connected(self._fake_connection)
        return self.data

    def __del__(self) -> None:
        pass


class FakeAsyncLOB(oracledb.AsyncLOB):
    def __init__(self, data: str, connection: Any = None) -> None:
        self._impl = None
        self.data = data
        self._fake_connection = connection

    async def read(self, offset: int = 1, amount: Optional[int] = None) -> str:
        _lob_connected(self._fake_connection)
        return self.data

    def __del__(self) -> None:
        pass


#: the server's string bind caps seen by thin mode: SQL under MAX_STRING_SIZE=STANDARD (the
#: Oracle Database Free default) and PL/SQL
MAX_SQL_STRING_BIND = 4000
MAX_PLSQL_STRING_BIND = 32767


def _check_untyped(value: Any, key: Any, is_plsql: bool) -> None:
    """A bind with no input size takes its type from the value (impl/base/metadata.pyx
    ``OracleMetadata.from_value``): None, bool, str, bytes, int, float, Decimal, date/datetime,
    timedelta, LOBs, cursors, DB objects, ``array.array`` (VECTOR) and IntervalYM; anything
    else (a dict, a set, an object) raises DPY-3002. A list is an array bind
    (impl/base/bind_var.pyx ``_create_var_from_value``: ``is_array = True``), which the server
    refuses outside PL/SQL (ORA-01484 "arrays can only be bound to PL/SQL statements")."""
    import array as _array
    import datetime as _dt
    from decimal import Decimal

    if isinstance(value, list):
        if not is_plsql:
            raise db_error(1484, f"arrays can only be bound to PL/SQL statements (bind {key!r})")
        return
    if value is None or isinstance(value, (bool, str, bytes, int, float, Decimal, _dt.date, _dt.timedelta,
                                           _array.array, oracledb.LOB, oracledb.AsyncLOB, oracledb.Cursor,
                                           oracledb.AsyncCursor, oracledb.DbObject, oracledb.IntervalYM)):
        return
    _driver_errors._raise_err(_driver_errors.ERR_PYTHON_VALUE_NOT_SUPPORTED, type_name=type(value).__name__)


def _check_oson(value: Any, key: Any) -> None:
    """A ``DB_TYPE_JSON`` bind goes through the OSON encoder (impl/base/oson.pyx ``encode_node``):
    None, bool, int/float/Decimal, bytes, datetime/date, timedelta, str, list/tuple, dict,
    ``array.array``; any other type raises DPY-3003 (ERR_PYTHON_TYPE_NOT_SUPPORTED)."""
    import array as _array
    import datetime as _dt
    from decimal import Decimal

    if value is None or isinstance(value, (bool, int, float, Decimal, bytes, _dt.date, _dt.timedelta, str,
                                           _array.array)):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_oson(item, key)
        return
    if isinstance(value, dict):
        for item in value.values():
            _check_oson(item, key)
        return
    _driver_errors._raise_err(_driver_errors.ERR_PYTHON_TYPE_NOT_SUPPORTED, typ=type(value))


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def parse_statement(sql: str) -> tuple[str, list[str]]:
    """:func:`scan_statement` without the quoting of each name."""
    kind, binds = scan_statement(sql)
    return kind, [name for name, _ in binds]


def scan_statement(sql: str) -> tuple[str, list[tuple[str, bool]]]:
    """The statement kind and the bind placeholders thin mode finds in ``sql``, a port of
    ``impl/thin/statement.pyx`` (``StatementParser.parse``, ``_parse_bind_name``,
    ``Statement._add_bind`` and ``_determine_statement_type``): the first keyword makes it
    ``plsql`` (DECLARE, BEGIN, CALL), ``query`` (SELECT, WITH), ``dml`` (INSERT, UPDATE, DELETE,
    MERGE) or ``ddl`` (CREATE, ALTER, DROP, GRANT, REVOKE, ANALYZE, AUDIT, COMMENT, TRUNCATE:
    parsing stops, so a DDL statement has no placeholders), else ``""``. Placeholders are
    ``:name`` outside '...' and q'[...]' strings, "quoted identifiers", -- and /* */ comments,
    and not right after a string (JSON constant syntax); an unquoted name is upper-cased, a
    quoted one kept as written, digits-only names (``:1``) kept; in PL/SQL a repeated name is
    one placeholder, in SQL each occurrence is one."""
    kind = ""
    names: list[str] = []
    quoted: list[bool] = []
    n = len(sql)
    pos = 0
    keyword_found = last_was_alpha = last_was_string = False
    alpha_start = 0
    last_ch = ""

    def add(name: str, is_quoted: bool = False) -> None:
        if kind != "plsql" or name not in names:
            names.append(name)
            quoted.append(is_quoted)

    while pos < n:
        ch = sql[pos]
        is_alpha = ch.isalpha()
        if is_alpha and not last_was_alpha:
            alpha_start = pos
        elif not is_alpha and last_was_alpha and not keyword_found:
            word = sql[alpha_start:pos].upper()
            kind = ("plsql" if word in ("DECLARE", "BEGIN", "CALL") else
                    "query" if word in ("SELECT", "WITH") else
                    "dml" if word in ("INSERT", "UPDATE", "DELETE", "MERGE") else
                    "ddl" if word in ("CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "ANALYZE", "AUDIT",
                                      "COMMENT", "TRUNCATE") else "")
            if kind == "ddl":
                break
            keyword_found = True
        if ch == "'":
            last_was_string = True
            if last_ch in ("q", "Q"):
                if pos + 1 < n:
                    sep = {"[": "]", "{": "}", "<": ">", "(": ")"}.get(sql[pos + 1], sql[pos + 1])
                    end = sql.find(sep + "'", pos + 2)
                    pos = n if end < 0 else end + 1
            else:
                end = sql.find("'", pos + 1)
                pos = n if end < 0 else end
        elif not ch.isspace():
            if ch == "-" and sql.startswith("--", pos):
                while pos < n and sql[pos] not in _LINE_BREAKS:
                    pos += 1
            elif ch == "/" and sql.startswith("/*", pos):
                end = sql.find("*/", pos + 2)
                pos = n if end < 0 else end + 1
            elif ch == '"':
                end = sql.find('"', pos + 1)
                pos = n if end < 0 else end
            elif ch == ":" and not last_was_string:
                t = pos + 1
                while t < n and sql[t].isspace():
                    t += 1
                if t < n and sql[t] == '"':
                    end = sql.find('"', t + 1)
                    end = n if end < 0 else end
                    add(sql[t + 1:end], True)
                    pos = end
                elif t < n and sql[t].isdigit():
                    e = t
                    while e < n and sql[e].isdigit():
                        e += 1
                    add(sql[t:e])
                    pos = e - 1
                elif t < n and sql[t].isalpha():
                    e = t
                    while e < n and (sql[e].isalnum() or sql[e] in "_$#"):
                        e += 1
                    add(sql[t:e].upper())
                    pos = e - 1
            last_was_string = False
        pos += 1
        last_was_alpha = is_alpha
        last_ch = ch
    return kind, list(zip(names, quoted))


#: Oracle SQL reserved words (SQL Language Reference, "Oracle SQL Reserved Words": they cannot
#: be nonquoted identifiers). The server refuses one as an unquoted bind name in SQL with
#: ORA-01745 "invalid host/bind variable name" (Database Error Messages, ORA-01745: "a colon in
#: a bind variable ... was followed by an inappropriate name, perhaps a reserved word"); thin
#: mode leaves this check to the server (impl/thin/statement.pyx ``_parse_bind_name``).
SQL_RESERVED_WORDS = frozenset("""
ACCESS ADD ALL ALTER AND ANY AS ASC AUDIT BETWEEN BY CHAR CHECK CLUSTER COLUMN COMMENT COMPRESS
CONNECT CREATE CURRENT DATE DECIMAL DEFAULT DELETE DESC DISTINCT DROP ELSE EXCLUSIVE EXISTS FILE
FLOAT FOR FROM GRANT GROUP HAVING IDENTIFIED IMMEDIATE IN INCREMENT INDEX INITIAL INSERT INTEGER
INTERSECT INTO IS LEVEL LIKE LOCK LONG MAXEXTENTS MINUS MLSLABEL MODE MODIFY NOAUDIT NOCOMPRESS
NOT NOWAIT NULL NUMBER OF OFFLINE ON ONLINE OPTION OR ORDER PCTFREE PRIOR PRIVILEGES PUBLIC RAW
RENAME RESOURCE REVOKE ROW ROWID ROWNUM ROWS SELECT SESSION SET SHARE SIZE SMALLINT START
SUCCESSFUL SYNONYM SYSDATE TABLE THEN TO TRIGGER UID UNION UNIQUE UPDATE USER VALIDATE VALUES
VARCHAR VARCHAR2 VIEW WHENEVER WHERE WITH""".split())


def _bind_key(name: Any) -> str:
    """A bind name as given to ``execute``/``setinputsizes`` the way ``impl/thin/var.pyx``
    (``ThinVarImpl._bind``) looks it up: "quoted" kept, else upper-cased, a leading ':' dropped."""
    text = str(name)
    key = text[1:-1] if len(text) > 1 and text.startswith('"') and text.endswith('"') else text.upper()
    return key[1:] if key.startswith(":") else key


def check_placeholders(sql: str, values: Any, sizes: dict, style: Optional[type]) -> str:
    """What thin mode raises when the binds do not fit the placeholders of ``sql`` (it returns
    the statement kind otherwise): by name, a value or input size for a name the SQL does not
    have is DPY-4008 (``impl/thin/var.pyx``, ``ThinVarImpl._bind``: ERR_INVALID_BIND_NAME; a DDL
    statement has none, :func:`parse_statement`), by position a count other than the
    placeholders' is DPY-4009 (ERR_WRONG_NUMBER_OF_POSITIONAL_BINDS, same place), and a
    placeholder left without a value is DPY-4010 (``impl/thin/cursor.pyx``,
    ``_preprocess_execute``: ERR_MISSING_BIND_VALUE)."""
    kind, binds = scan_statement(sql)
    names = [name for name, _ in binds]
    by_name = isinstance(values, dict) or (values is None and style is dict)
    if by_name:
        given = list(values or {}) + [k for k in sizes if k not in (values or {})]
        for name in given:
            if _bind_key(name) not in names:
                _driver_errors._raise_err(_driver_errors.ERR_INVALID_BIND_NAME, name=name)
        bound = {_bind_key(k) for k in given}
        missing = [n for n in names if n not in bound]
    else:
        count = max(len(values or ()), len(sizes))
        if count and count != len(names):
            _driver_errors._raise_err(_driver_errors.ERR_WRONG_NUMBER_OF_POSITIONAL_BINDS,
                                      expected_num=len(names), actual_num=count)
        missing = names[count:]
    if missing:
        _driver_errors._raise_err(_driver_errors.ERR_MISSING_BIND_VALUE, name=missing[0])
    if kind != "plsql":
        for name, is_quoted in binds:
            if not is_quoted and name in SQL_RESERVED_WORDS:
                raise db_error(1745, f"invalid host/bind variable name (:{name.lower()} is a reserved word: "
                                     f'quote it, :"{name.lower()}", or rename it)')
    return kind


class _JSONBind:
    """A value the cursor bound as ``DB_TYPE_JSON`` (for :class:`SQLBackend`: stored as JSON text)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _json_binds(params: Any, sizes: dict) -> Any:
    json_keys = {k for k, t in sizes.items() if t is oracledb.DB_TYPE_JSON}
    if not json_keys:
        return params
    if isinstance(params, dict):
        return {k: _JSONBind(v) if k in json_keys and v is not None else v for k, v in params.items()}
    return [_JSONBind(v) if i in json_keys and v is not None else v for i, v in enumerate(params or ())]


def _value_type(value: Any) -> Any:
    """The type thin mode gives an untyped bind (``impl/base/metadata.pyx``,
    ``OracleMetadata.from_value``): bool -> BOOLEAN, str -> VARCHAR, bytes -> RAW, int/float/
    Decimal -> NUMBER, date and datetime -> **DATE**, timedelta -> INTERVAL DS, array -> VECTOR."""
    import array as _array
    import datetime as _dt
    from decimal import Decimal

    if isinstance(value, bool):
        return oracledb.DB_TYPE_BOOLEAN
    if isinstance(value, str):
        return oracledb.DB_TYPE_VARCHAR
    if isinstance(value, bytes):
        return oracledb.DB_TYPE_RAW
    if isinstance(value, (int, float, Decimal)):
        return oracledb.DB_TYPE_NUMBER
    if isinstance(value, _dt.date):
        return oracledb.DB_TYPE_DATE
    if isinstance(value, _dt.timedelta):
        return oracledb.DB_TYPE_INTERVAL_DS
    if isinstance(value, _array.array):
        return oracledb.DB_TYPE_VECTOR
    if isinstance(value, (oracledb.LOB, oracledb.AsyncLOB)):
        return getattr(value, "type", oracledb.DB_TYPE_CLOB) if getattr(value, "_impl", None) else oracledb.DB_TYPE_CLOB
    return None


def _db_type(typ: Any) -> Any:
    """The database type of an input size, as ``OracleMetadata.from_type``
    (``impl/base/metadata.pyx``) makes it: a ``DbType`` as is (``oracledb.TIMESTAMP`` is
    ``DB_TYPE_TIMESTAMP``), an ``ApiType`` its first database type (``impl/base/types.pyx``:
    ``DATETIME`` -> DATE, ``STRING`` -> VARCHAR, ``NUMBER`` -> NUMBER, ``BINARY`` -> RAW,
    ``ROWID`` -> ROWID), a Python type: str -> VARCHAR, int/float/Decimal -> NUMBER, bool ->
    BOOLEAN, bytes -> RAW, ``datetime.datetime`` -> **TIMESTAMP**, ``datetime.date`` -> DATE,
    timedelta -> INTERVAL DS."""
    import datetime as _dt
    from decimal import Decimal

    if isinstance(typ, _Var):
        typ = typ.type
    api = {"DATETIME": oracledb.DB_TYPE_DATE, "STRING": oracledb.DB_TYPE_VARCHAR, "NUMBER": oracledb.DB_TYPE_NUMBER,
           "BINARY": oracledb.DB_TYPE_RAW, "ROWID": oracledb.DB_TYPE_ROWID}
    if type(typ).__name__ == "ApiType":
        return api.get(typ.name, typ)
    if isinstance(typ, type):
        return {str: oracledb.DB_TYPE_VARCHAR, int: oracledb.DB_TYPE_NUMBER, float: oracledb.DB_TYPE_NUMBER,
                Decimal: oracledb.DB_TYPE_NUMBER, bool: oracledb.DB_TYPE_BOOLEAN, bytes: oracledb.DB_TYPE_RAW,
                _dt.datetime: oracledb.DB_TYPE_TIMESTAMP, _dt.date: oracledb.DB_TYPE_DATE,
                _dt.timedelta: oracledb.DB_TYPE_INTERVAL_DS}.get(typ, typ)
    return typ


def _accepts(db_type: Any, value: Any) -> bool:
    """Whether a variable of ``db_type`` takes ``value`` (``impl/base/connection.pyx``,
    ``BaseConnImpl._check_value``; None always)."""
    import array as _array
    import datetime as _dt
    from decimal import Decimal

    if value is None or db_type is None:
        return True
    if db_type in (oracledb.DB_TYPE_NUMBER, oracledb.DB_TYPE_BINARY_INTEGER, oracledb.DB_TYPE_BINARY_DOUBLE,
                   oracledb.DB_TYPE_BINARY_FLOAT):
        return isinstance(value, (bool, int, float, Decimal))
    if db_type in (oracledb.DB_TYPE_CHAR, oracledb.DB_TYPE_VARCHAR, oracledb.DB_TYPE_NCHAR,
                   oracledb.DB_TYPE_NVARCHAR, oracledb.DB_TYPE_LONG, oracledb.DB_TYPE_LONG_NVARCHAR,
                   oracledb.DB_TYPE_RAW, oracledb.DB_TYPE_LONG_RAW):
        return isinstance(value, (str, bytes))
    if db_type in (oracledb.DB_TYPE_DATE, oracledb.DB_TYPE_TIMESTAMP, oracledb.DB_TYPE_TIMESTAMP_LTZ,
                   oracledb.DB_TYPE_TIMESTAMP_TZ):
        return isinstance(value, _dt.date)
    if db_type is oracledb.DB_TYPE_INTERVAL_DS:
        return isinstance(value, _dt.timedelta)
    if db_type in (oracledb.DB_TYPE_CLOB, oracledb.DB_TYPE_NCLOB, oracledb.DB_TYPE_BLOB):
        return isinstance(value, (str, bytes, oracledb.LOB, oracledb.AsyncLOB))
    if db_type is oracledb.DB_TYPE_VECTOR:
        return isinstance(value, (list, _array.array))
    return True  # BOOLEAN, JSON, objects, cursors: not checked here


def _date_binds(params: Any, sizes: dict) -> Any:
    """A datetime bound as ``DB_TYPE_DATE`` (untyped: ``from_value``; or typed DATE /
    ``oracledb.DATETIME``, which SQLAlchemy uses for ``DateTime``) loses its fractional seconds:
    an Oracle DATE holds whole seconds (``impl/base/encoders.pyx`` writes 7 bytes for DATE,
    fractional seconds only for TIMESTAMP). Only a ``DB_TYPE_TIMESTAMP`` input size keeps them
    (review D12). The tzinfo is dropped either way (the fake's SQLite text never had it)."""
    import datetime as _dt

    def fix(key: Any, value: Any) -> Any:
        if not isinstance(value, _dt.datetime) or not value.microsecond:
            return value
        size = _db_type(sizes.get(key))
        typ = size if size is not None and _accepts(size, value) else _value_type(value)
        return value.replace(microsecond=0) if typ is oracledb.DB_TYPE_DATE else value

    if isinstance(params, dict):
        return {k: fix(k, v) for k, v in params.items()}
    if isinstance(params, (list, tuple)):
        return [fix(i, v) for i, v in enumerate(params)]
    return params


def _check_many_types(seq: list, sizes: dict) -> None:
    """``executemany``: the first row that gives a bind a value fixes its variable's type (its
    input size when that takes the value, else the value's own: ``impl/base/bind_var.pyx``
    ``_set_by_value``); a later row whose value that variable does not take is DPY-3013
    (``ERR_UNSUPPORTED_PYTHON_TYPE_FOR_DB_TYPE``, ``impl/base/connection.pyx`` ``_check_value``)."""
    types: dict = {}
    for params in seq:
        items = params.items() if isinstance(params, dict) else enumerate(params or ())
        for key, value in items:
            if value is None or isinstance(value, _Var):
                continue
            if key not in types:
                size = _db_type(sizes.get(key))
                types[key] = size if size is not None and _accepts(size, value) else _value_type(value)
            elif not _accepts(types[key], value):
                _driver_errors._raise_err(_driver_errors.ERR_UNSUPPORTED_PYTHON_TYPE_FOR_DB_TYPE,
                                          py_type_name=type(value).__name__,
                                          db_type_name=getattr(types[key], "name", str(types[key])))


class _CursorBase:
    def __init__(self, rec: Recorder, lob_cls: type, conn: int = 0, connection: Any = None) -> None:
        self.rec = rec
        self.conn = conn
        self.connection = connection
        self.sizes: dict = {}
        self.bind_style: Optional[type] = None
        self.rows: list = []
        self.lob_cls = lob_cls
        self.description: Any = None
        self.rowcount = 0
        self.arraysize = 100
        self.prefetchrows = 2
        self.outputtypehandler: Any = None
        self.inputtypehandler: Any = None
        #: open until close() / leaving ``with`` (cursor.py: ``_impl`` set to None)
        self.is_open = True
        #: the last statement executed was a SELECT/WITH (``impl/thin/statement.pyx``)
        self.is_query = False

    def _verify_open(self) -> None:
        """cursor.py ``BaseCursor._verify_open``: DPY-1006 once the cursor is closed (``close()``
        or leaving its ``with`` block), then DPY-1001 when its connection is closed or was
        released to its pool (``connection.py`` ``_verify_connected``). Both are
        ``InterfaceError``s, not ``DatabaseError``s."""
        if not self.is_open:
            _driver_errors._raise_err(_driver_errors.ERR_CURSOR_NOT_OPEN)
        verify = getattr(self.connection, "_fake_verify_connected", None)
        if verify is not None:
            verify()

    def _verify_fetch(self) -> None:
        """cursor.py ``_verify_fetch``: fetching after a statement that is not a query (DML,
        PL/SQL, DDL, SAVEPOINT, or nothing executed yet) is DPY-1003 (an ``InterfaceError``)."""
        self._verify_open()
        if not self.is_query:
            _driver_errors._raise_err(_driver_errors.ERR_NOT_A_QUERY)

    def var(self, typ, size=0, arraysize=1, inconverter=None, outconverter=None, **kw):
        return _Var(typ, size, arraysize, inconverter, outconverter, **kw)

    def close(self):
        self._verify_open()  # closing a closed cursor is DPY-1006 too (cursor.py close)
        self.is_open = False

    def __iter__(self):
        self._verify_fetch()
        while self.rows:
            yield self.rows.pop(0)

    def _fetch_var(self, name: str, db_type: Any, precision: int = 0, scale: int = 0) -> Optional["_Var"]:
        """The var the output type handler asks for, for one fetched column, or None.
        python-oracledb asks the cursor's handler, else the connection's
        (``impl/base/cursor.pyx``, ``_init_fetch_vars``), with ``(cursor, metadata)`` or the
        six-argument form (``_get_output_type_handler``)."""
        import inspect

        handler = self.outputtypehandler or getattr(self.connection, "outputtypehandler", None)
        if handler is None:
            return None
        try:
            n = len(inspect.signature(handler).parameters)
        except (TypeError, ValueError):
            n = 6
        if n == 2:
            info = _FetchInfo(name, db_type)
            info.precision, info.scale = precision, scale
            return handler(self, info)
        return handler(self, name, db_type, 0, precision, scale)

    def __enter__(self):
        self._verify_open()
        return self

    def __exit__(self, *exc):
        self._verify_open()  # cursor.py BaseCursor.__exit__
        self.is_open = False
        return None

    def setinputsizes(self, *args, **kwargs):
        self._verify_open()
        # impl/base/cursor.pyx setinputsizes: kwargs -> bind_style dict, args -> list; with
        # neither, cursor.py setinputsizes returns [] and changes nothing
        if not args and not kwargs:
            return []
        self.bind_style = dict if kwargs else list
        self.sizes = dict(kwargs) if kwargs else dict(enumerate(args))
        return kwargs

    def _check_binds(self, values: Any, is_plsql: bool, what: str) -> None:
        """python-oracledb's checks before a round trip (module docstring)."""
        style = getattr(self, "bind_style", None)
        try:
            if values is not None and style is not None and (
                (style is dict) != isinstance(values, dict)
            ):
                _driver_errors._raise_err(_driver_errors.ERR_MIXED_POSITIONAL_AND_NAMED_BINDS)
            items = values.items() if isinstance(values, dict) else enumerate(values or ())
            for key, value in items:
                size = self.sizes.get(key)
                if size is oracledb.DB_TYPE_JSON:
                    _check_oson(value, key)
                    continue
                if size is None and not isinstance(value, _Var):
                    _check_untyped(value, key, is_plsql)
                if isinstance(value, str) and size in (oracledb.DB_TYPE_CLOB, oracledb.CLOB) and not is_plsql:
                    # impl/thin/var.pyx ThinVarImpl._bind ("for variables containing LOBs, create
                    # temporary LOBs, if needed"): conn.createlob per value (review D13)
                    self.rec.calls.append(Call("createlob", binds={"data": value}, conn=self.conn))
                if not isinstance(value, str) or size in (oracledb.DB_TYPE_CLOB, oracledb.CLOB):
                    continue
                size = len(value.encode("utf-8"))
                if not is_plsql and size > MAX_SQL_STRING_BIND:
                    raise db_error(1461, f"can bind a LONG value only for insert into a LONG column "
                                         f"(bind {key!r} of {size} bytes in {what})")
                if is_plsql and size > MAX_PLSQL_STRING_BIND:
                    # D9: thin mode binds it as a temporary CLOB (impl/thin/var.pyx,
                    # ThinVarImpl._bind: "for PL/SQL blocks, if the size of a string ... exceeds
                    # 32,767 bytes it must be converted to a BLOB/CLOB", then conn.createlob)
                    self.rec.calls.append(Call("createlob", binds={"data": value}, conn=self.conn))
        finally:
            self.bind_style, self.sizes = None, {}  # input sizes apply to one execute

    def _func(self, name, return_type, keyword_parameters, parameters=None):
        self._verify_open()
        self.is_query = False
        call = Call("callfunc", name, return_type, dict(keyword_parameters or {}), dict(self.sizes), self.conn)
        self._check_plsql_call(parameters, keyword_parameters, name)
        self._plsql_rules(name, keyword_parameters)
        _settings_rule(name, keyword_parameters)
        self.rec.calls.append(call)
        value = self.rec.answer(name, call)
        if return_type is oracledb.DB_TYPE_CLOB and isinstance(value, str):
            return self.lob_cls(value, self.connection)
        return value

    def _check_plsql_call(self, parameters, keyword_parameters, name):
        # cursor.py _call_get_execute_args: every argument, keyword ones included, becomes a
        # positional bind (a list) of the generated PL/SQL block
        values = list(parameters or ()) + list((keyword_parameters or {}).values())
        self._check_binds(values, True, name)

    def _proc(self, name, keyword_parameters, parameters=None):
        self._verify_open()
        self.is_query = False
        call = Call("callproc", name, None, dict(keyword_parameters or {}), dict(self.sizes), self.conn)
        self._check_plsql_call(parameters, keyword_parameters, name)
        self._plsql_rules(name, keyword_parameters)
        self.rec.calls.append(call)
        self.rec.answer(name, call)
        return []

    def _statement(self, sql: Any, values: Any, many: bool = False) -> str:
        """``_prepare_for_execute`` / ``_prepare_for_executemany`` (``impl/base/cursor.pyx``): the
        statement stripped (``cursor.py`` ``_normalize_statement``; empty: DPY-2066), and the
        parameters' shape (DPY-2003 / DPY-2004)."""
        self._verify_open()
        stmt = sql.strip() if isinstance(sql, str) else sql
        if not stmt:
            _driver_errors._raise_err(_driver_errors.ERR_EMPTY_STATEMENT)
        if many:
            if not isinstance(values, (list, int)):
                _driver_errors._raise_err(_driver_errors.ERR_WRONG_EXECUTEMANY_PARAMETERS_TYPE)
        elif values is not None and not isinstance(values, (list, tuple, dict)):
            _driver_errors._raise_err(_driver_errors.ERR_WRONG_EXECUTE_PARAMETERS_TYPE)
        return str(stmt)

    def _exec(self, sql, parameters=None, **kw):
        if kw and parameters:
            _driver_errors._raise_err(_driver_errors.ERR_ARGS_AND_KEYWORD_ARGS)
        stmt = self._statement(sql, kw or parameters)
        binds = dict(parameters or {}) if isinstance(parameters, dict) else {}
        binds.update(kw)
        call = Call("execute", sql, None, binds, dict(self.sizes), self.conn)
        sizes, style = dict(self.sizes), self.bind_style
        kind = parse_statement(stmt)[0]
        self._check_binds(kw or parameters, kind == "plsql", "SQL")
        check_placeholders(stmt, kw or parameters, sizes, style)
        self.is_query = kind == "query"
        self._transaction_rules(stmt, kind)
        self.rec.calls.append(call)
        if self.rec.backend is not None and not self.rec.has_answer(sql):
            self.rec.check_isolation(self.conn, "a statement")
            params = dict(binds) if (kw or isinstance(parameters, dict)) else parameters
            self.rec.backend.run(self, sql, _json_binds(_date_binds(params, call.input_sizes), call.input_sizes))
            self._wrote(kind)
            return
        value = self.rec.answer(sql, call)
        self.rows = list(value) if value is not None else []

    def _exec_many(self, sql, seq):
        stmt = self._statement(sql, seq, many=True)
        seq = [None] * seq if isinstance(seq, int) else list(seq)
        sizes = dict(self.sizes)
        kind = parse_statement(stmt)[0]
        for params in seq:
            style = self.bind_style
            self._check_binds(params, kind == "plsql", "SQL")
            check_placeholders(stmt, params, sizes, style)
            self.sizes, self.bind_style = dict(sizes), style
        self.bind_style, self.sizes = None, {}
        _check_many_types(seq, sizes)
        self.is_query = False
        self._transaction_rules(stmt, kind)
        self.rec.calls.append(Call("executemany", sql, None, {"rows": len(seq)}, sizes, self.conn))
        if self.rec.backend is not None and not self.rec.has_answer(sql):
            self.rec.check_isolation(self.conn, "a statement")
            self.rec.backend.run(self, sql, [_json_binds(_date_binds(p, sizes), sizes) for p in seq], many=True)
            if seq:
                self._wrote(kind)

    def _transaction_rules(self, stmt: str, kind: str) -> None:
        """``SET TRANSACTION READ ONLY`` must be the first statement of a transaction
        (ORA-01453 after uncommitted DML) and makes it read-only until it ends: DML is ORA-01456
        (SQL Language Reference, SET TRANSACTION), as is a call of a package subprogram that
        writes (:data:`WRITING_SUBPROGRAMS`, in :meth:`_plsql_rules`)."""
        import re as _re

        conn = self.connection
        if not isinstance(conn, _ConnectionState):
            return
        if _re.match(r"SET\s+TRANSACTION\s+READ\s+ONLY\b", stmt, _re.I):
            if conn._fake_dirty:
                raise db_error(1453, "SET TRANSACTION must be first statement of transaction")
            conn._fake_read_only = True
        elif kind == "dml" and conn._fake_read_only:
            raise _read_only_refusal(stmt.split(None, 1)[0].upper())
        elif kind == "query" and conn._fake_read_only and _for_update(stmt):
            # fake40: "SELECT without the for_update_clause" only (SQL Language Reference,
            # SET TRANSACTION); ORA-01456's cause names "select for update" too
            raise _read_only_refusal("SELECT ... FOR UPDATE")

    def _plsql_rules(self, name: str, keyword_parameters: Any = None) -> None:
        conn = self.connection
        if not (isinstance(conn, _ConnectionState) and conn._fake_read_only):
            return
        if name.lower() in WRITING_SUBPROGRAMS:
            raise _read_only_refusal(name)
        # fake40: get_json with in_lock = 1 reads the record FOR UPDATE (oramem_store.pkb, SC-12.10)
        if name.lower() == "oramem_store.get_json" and (keyword_parameters or {}).get("in_lock") == 1:
            raise _read_only_refusal(f"{name} with in_lock = 1 (SELECT ... FOR UPDATE)")

    def _wrote(self, kind: str) -> None:
        """After DML ran on :class:`SQLBackend`: the connection has uncommitted work (a failed
        statement changes nothing: Oracle rolls back the statement, SQLite too)."""
        mark = getattr(self.connection, "_fake_mark_dirty", None)
        if kind == "dml" and mark is not None:
            mark()


class FakeCursor(_CursorBase):
    def __init__(self, rec: Recorder, conn: int = 0, connection: Any = None) -> None:
        super().__init__(rec, FakeLOB, conn, connection)

    def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters, parameters)

    def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters, parameters)

    def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    def executemany(self, sql, seq_of_parameters, **kw):
        self._exec_many(sql, seq_of_parameters)

    def fetchone(self):
        self._verify_fetch()
        return self.rows.pop(0) if self.rows else None

    def fetchmany(self, size=None):
        self._verify_fetch()
        size = self.arraysize if size is None else size
        rows, self.rows = self.rows[:size], self.rows[size:]
        return rows

    def fetchall(self):
        self._verify_fetch()
        rows, self.rows = self.rows, []
        return rows


class FakeAsyncCursor(_CursorBase):
    def __init__(self, rec: Recorder, conn: int = 0, connection: Any = None) -> None:
        super().__init__(rec, FakeAsyncLOB, conn, connection)

    async def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters, parameters)

    async def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters, parameters)

    async def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    async def executemany(self, sql, seq_of_parameters, **kw):
        self._exec_many(sql, seq_of_parameters)

    async def fetchone(self):
        self._verify_fetch()
        return self.rows.pop(0) if self.rows else None

    async def fetchmany(self, size=None):
        self._verify_fetch()
        size = self.arraysize if size is None else size
        rows, self.rows = self.rows[:size], self.rows[size:]
        return rows

    async def fetchall(self):
        self._verify_fetch()
        rows, self.rows = self.rows, []
        return rows


#: the settings oramem_admin.open_store / create_store read (parse_settings), and the members of
#: its "retention" object; any other is -20002 there (oramem_filter.check_keys, left36).
#: "embedder" is an identity recorded and compared whole, so its members are not listed.
SETTINGS_KEYS = frozenset({"memory_store_id", "vector_dim", "search_strategy", "search_index_sync", "retention",
                           "embedding_model", "deletion_hook", "keyword_language", "embedder"})
RETENTION_KEYS = frozenset({"default_ttl_days", "max_ttl_days"})


def _settings_rule(name: str, keyword_parameters: Any) -> None:
    """open_store / create_store refuse a setting they do not read (-20002, before anything is
    read or written), as plsql/oramem_admin.pkb parse_settings does."""
    if name.lower() not in ("oramem_admin.open_store", "oramem_admin.create_store"):
        return
    text = (keyword_parameters or {}).get("in_settings")
    text = getattr(text, "data", text)
    if not isinstance(text, str) or not text.strip():
        return
    try:
        settings = json.loads(text)
    except ValueError:
        return
    if not isinstance(settings, dict):
        return
    for obj, known, what in ((settings, SETTINGS_KEYS, "settings"),
                             (settings.get("retention"), RETENTION_KEYS, "settings.retention")):
        for key in obj if isinstance(obj, dict) else ():
            if key not in known:
                raise db_error(20002, f"{what}: unknown key \"{key}\" (accepted: {', '.join(sorted(known))}); "
                                      "an unknown key is refused, never ignored")


#: the package subprograms that always write (DML inside), which a READ ONLY transaction refuses
#: (not ``open_store``: a ready store at the code's version opens on a lock-free path that may
#: only read, oramem_admin.pkb)
WRITING_SUBPROGRAMS = frozenset({
    "oramem_admin.set_deletion_hook", "oramem_admin.set_option",
    "oramem_admin.log_erasure", "oramem_store.add_json", "oramem_store.update_json",
    "oramem_store.delete_record_json", "oramem_store.delete_keys_json", "oramem_store.delete_thread_json",
    "oramem_store.purge_expired_json",
})


def _for_update(stmt: str) -> bool:
    """The statement has a for_update_clause (``FOR UPDATE`` outside strings and comments)."""
    from oramem.oracle.scripts import significant, tokenize

    words = [t.upper for t in significant(tokenize(stmt)) if t.kind == "name"]
    return any(a == "FOR" and b == "UPDATE" for a, b in zip(words, words[1:]))


def _read_only_refusal(what: str) -> BaseException:
    """ORA-01456 (SQL Language Reference, SET TRANSACTION: in a READ ONLY transaction "only the
    following statements are permitted": SELECT without the for_update_clause, LOCK TABLE, SET
    ROLE, ALTER SESSION, ALTER SYSTEM)."""
    return db_error(1456, f"may not perform insert/delete/update operation inside a READ ONLY transaction ({what})")


class _ConnectionState:
    """What both fake connection colours share: python-oracledb's connected/closed state and
    the roll back of uncommitted work when a connection is closed or released.

    - ``close()`` and leaving ``with conn:`` close the connection, a standalone one as well as
      one acquired from a pool (``connection.py``: ``Connection.__exit__`` "will close the
      connection and roll back any uncommitted transaction"; a pooled one goes back to its
      pool); every later use (``cursor()``, ``commit()``, ``rollback()``, ``createlob()``,
      ``close()`` again, a cursor of it) is DPY-1001 (``_verify_connected``), an
      ``InterfaceError``.
    - Uncommitted DML run through :class:`SQLBackend` on this connection is rolled back when
      it is closed or released, as the server does for the session's open transaction. The
      backend is one SQLite connection shared by every fake connection, so two connections
      with uncommitted DML at once cannot be told apart: the fake then fails the test
      (AssertionError) instead of guessing."""

    _fake_closed = False
    _fake_dirty = False
    #: SET TRANSACTION READ ONLY began the current transaction (ended by commit/rollback/close)
    _fake_read_only = False

    def _fake_verify_connected(self) -> None:
        if self._fake_closed:
            _driver_errors._raise_err(_driver_errors.ERR_NOT_CONNECTED)

    def _fake_mark_dirty(self) -> None:
        if self.rec.backend is not None:
            self._fake_dirty = True
            self.rec.dirty.add(self.serial)

    def _fake_ended(self) -> None:
        self._fake_read_only = False
        self._fake_dirty = False
        self.rec.dirty.discard(self.serial)

    def _fake_close(self, kind: str) -> None:
        self.rec.calls.append(Call(kind, conn=self.serial))
        self._fake_closed = True
        pool = getattr(self, "_fake_pool", None)
        if pool is not None:
            pool._fake_checked_out().discard(self.serial)
        if self._fake_dirty:
            others = self.rec.dirty - {self.serial}
            assert not others, (f"fake: connection {self.serial} closes with uncommitted DML while connections "
                                f"{sorted(others)} have some too; the one SQLite backend cannot roll back only its own")
            self.rec.calls.append(Call("rollback", name=f"on {kind}", conn=self.serial))
            self.rec.backend.rollback()  # type: ignore[union-attr]
        self._fake_ended()


class FakeConnection(_ConnectionState, oracledb.Connection):
    outputtypehandler: Any = None  # a plain attribute (the real one is a property over _impl)
    inputtypehandler: Any = None
    autocommit: bool = False
    #: what SQLAlchemy's dialect reads when it connects (plain attributes here)
    version = "23.4.0.25.4"
    max_identifier_length = 128
    thin = True
    stmtcachesize = 20

    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled
        self.serial = rec.new_connection()

    def cursor(self, scrollable: bool = False):
        self._fake_verify_connected()
        return FakeCursor(self.rec, self.serial, self)

    def ping(self):
        self._fake_verify_connected()
        return None

    def commit(self):
        self._fake_verify_connected()
        self.rec.calls.append(Call("commit", conn=self.serial))
        if self.rec.backend is not None:
            self.rec.check_isolation(self.serial, "a commit")
            self.rec.backend.commit()
        self._fake_ended()

    def rollback(self):
        self._fake_verify_connected()
        self.rec.calls.append(Call("rollback", conn=self.serial))
        if self.rec.backend is not None:
            self.rec.check_isolation(self.serial, "a rollback")
            self.rec.backend.rollback()
        self._fake_ended()

    def createlob(self, lob_type, data=None):
        self._fake_verify_connected()
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeLOB(data, self)

    def close(self):
        self._fake_verify_connected()
        self._fake_close("close")

    def __enter__(self):
        self._fake_verify_connected()
        return self

    def __exit__(self, *exc):
        if not self._fake_closed:  # connection.py Connection.__exit__: closes (releases) it
            self._fake_close("release" if self.pooled else "close")

    def __del__(self):
        pass


class FakeAsyncConnection(_ConnectionState, oracledb.AsyncConnection):
    outputtypehandler: Any = None  # plain attributes, as on FakeConnection (real: properties over _impl)
    inputtypehandler: Any = None
    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled
        self.serial = rec.new_connection()

    def cursor(self, scrollable: bool = False):
        self._fake_verify_connected()
        return FakeAsyncCursor(self.rec, self.serial, self)

    async def commit(self):
        self._fake_verify_connected()
        self.rec.calls.append(Call("commit", conn=self.serial))
        if self.rec.backend is not None:
            self.rec.check_isolation(self.serial, "a commit")
            self.rec.backend.commit()
        self._fake_ended()

    async def rollback(self):
        self._fake_verify_connected()
        self.rec.calls.append(Call("rollback", conn=self.serial))
        if self.rec.backend is not None:
            self.rec.check_isolation(self.serial, "a rollback")
            self.rec.backend.rollback()
        self._fake_ended()

    async def createlob(self, lob_type, data=None):
        self._fake_verify_connected()
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeAsyncLOB(data, self)

    async def close(self):
        self._fake_verify_connected()
        self._fake_close("close")

    async def __aenter__(self):
        self._fake_verify_connected()
        return self

    async def __aexit__(self, *exc):
        if not self._fake_closed:  # connection.py AsyncConnection.__aexit__: closes (releases) it
            self._fake_close("release" if self.pooled else "close")

    def __del__(self):
        pass


class _PoolState:
    """``pool.py``: ``acquire()`` on a closed pool is DPY-1002 (``_verify_open``); ``close()``
    while connections are checked out is DPY-1005 unless ``force=True``
    (``ERR_POOL_HAS_BUSY_CONNECTIONS``, the pool's busy count); a connection goes back when it
    is closed or its ``with`` ends (:class:`_ConnectionState`)."""

    _fake_closed = False

    def _fake_verify_open(self) -> None:
        if self._fake_closed:
            _driver_errors._raise_err(_driver_errors.ERR_POOL_NOT_OPEN)

    def _fake_checked_out(self) -> set:
        if "_fake_busy" not in self.__dict__:
            self._fake_busy: set = set()
        return self._fake_busy

    def _fake_lend(self, conn: Any) -> Any:
        self._fake_verify_open()
        self.rec.calls.append(Call("acquire"))  # type: ignore[attr-defined]
        self._fake_checked_out().add(conn.serial)
        conn._fake_pool = self
        return conn

    def _fake_close_pool(self, force: bool) -> None:
        self._fake_verify_open()
        if self._fake_checked_out() and not force:
            _driver_errors._raise_err(_driver_errors.ERR_POOL_HAS_BUSY_CONNECTIONS)
        self._fake_closed = True
        self.rec.calls.append(Call("pool_close"))  # type: ignore[attr-defined]


class FakePool(_PoolState, oracledb.ConnectionPool):
    def __init__(self, rec: Recorder) -> None:
        self._impl = None
        self.rec = rec

    def acquire(self, *args, **kwargs):
        self._fake_verify_open()
        return self._fake_lend(FakeConnection(self.rec, pooled=True))

    def close(self, force=False):
        self._fake_close_pool(force)

    def __del__(self):
        pass


class FakeAsyncPool(_PoolState, oracledb.AsyncConnectionPool):
    def __init__(self, rec: Recorder) -> None:
        self._impl = None
        self.rec = rec

    def acquire(self, *args, **kwargs):
        self._fake_verify_open()
        return self._fake_lend(FakeAsyncConnection(self.rec, pooled=True))

    async def close(self, force=False):
        self._fake_close_pool(force)

    def __del__(self):
        pass


Answer = Callable[[Call], Any]


# ----------------------------------------------------------------------------- a SQL backend
class _Var:
    """What ``cursor.var()`` returns, as far as our code and SQLAlchemy's handlers use it."""

    def __init__(self, typ: Any, size: int = 0, arraysize: int = 1, inconverter: Any = None,
                 outconverter: Any = None, **_: Any) -> None:
        self.type, self.size, self.outconverter = typ, size, outconverter
        self.value: Any = None

    def getvalue(self, pos: int = 0) -> Any:
        return self.value

    def setvalue(self, pos: int, value: Any) -> None:
        self.value = value


class _FetchInfo:
    def __init__(self, name: str, type_code: Any) -> None:
        self.name, self.type_code, self.type = name, type_code, type_code
        self.display_size = self.internal_size = None
        self.precision, self.scale, self.null_ok = 0, 0, True
        self.is_json = type_code is oracledb.DB_TYPE_JSON
        self.is_oson = False
        self.vector_dimensions = self.vector_format = None


_STRING_TYPES = (str, oracledb.DB_TYPE_LONG, oracledb.DB_TYPE_VARCHAR, oracledb.DB_TYPE_NVARCHAR,
                 oracledb.DB_TYPE_LONG_NVARCHAR, oracledb.DB_TYPE_CHAR, oracledb.STRING)


def _shape(value: Any, kind: Optional[str], var: Optional[_Var], lob_cls: type, connection: Any = None) -> Any:
    """A fetched value as the driver hands it over: through the output type handler's var
    (type and ``outconverter``), else a CLOB column as a LOB object (of ``connection``, read
    over it: :func:`_lob_connected`)."""
    from decimal import Decimal

    if var is None:
        return lob_cls(value, connection) if kind == "clob" else value
    if var.type in _STRING_TYPES:
        value = str(value)
    elif var.type in (oracledb.NATIVE_FLOAT, oracledb.DB_TYPE_BINARY_DOUBLE, float):
        value = float(value)
    elif var.type in (Decimal,):
        value = Decimal(str(value))
    elif var.type is int:
        value = int(value)
    elif kind == "clob":
        value = lob_cls(value, connection)
    if var.outconverter is not None:
        value = var.outconverter(value)
    return value


def _decimal_json(text: str) -> Any:
    """A JSON column's value as python-oracledb returns it: the server sends the JSON type as
    OSON and ``impl/base/oson.pyx`` (``OsonDecoder._decode_node``) turns it into Python objects:
    objects -> dict, arrays -> list, strings -> str, true/false -> bool, null -> None, and every
    JSON number -> ``decimal.Decimal`` (``convert_number_to_python_decimal``; the JSON constructor
    stores numbers as NUMBER). Scalars at the top are returned as such (``"Talho"`` -> ``'Talho'``)."""
    from decimal import Decimal
    import json as _json

    return _json.loads(text, parse_float=Decimal, parse_int=Decimal)


class SQLBackend:
    """Real SQL for the fake: the statements SQLAlchemy's Oracle dialect (and our raw SQL) sends
    run on an in-memory SQLite database after a few spelling changes (``FETCH FIRST`` ->
    ``LIMIT``, ``FROM DUAL``, ``FOR UPDATE ...``); rows come back **shaped as python-oracledb
    returns them**, per column kind (``kinds``: lower-case column name -> kind):

    - ``json``: Python objects with Decimal numbers (:func:`_decimal_json`, OSON decoding);
    - ``vector``: ``array.array('f')`` (``impl/base/vector.pyx``, ``VectorDecoder.decode``:
      FLOAT32 vectors are returned as ``array.array`` of typecode ``'f'``);
    - ``datetime``: naive ``datetime`` (TIMESTAMP columns, ``convert_date_to_python``);
    - ``bool``: ``bool`` (23ai BOOLEAN, ``DB_TYPE_BOOLEAN``);
    - ``clob``: a LOB object unless the output type handler (the cursor's, else the
      connection's) asks for a string/LONG var, which is what SQLAlchemy's handler does
      (``dialects/oracle/cx_oracle.py``, ``_generate_connection_outputtype_handler``); python-
      oracledb calls the handler per column (``impl/base/cursor.pyx``, ``_init_fetch_var``).

    Transactions: one SQLite connection shared by every fake connection (commit/rollback act on
    it); enough for the single-threaded runs that use it.
    """

    KIND_TYPES = {"json": oracledb.DB_TYPE_JSON, "vector": oracledb.DB_TYPE_VECTOR,
                  "datetime": oracledb.DB_TYPE_TIMESTAMP, "bool": oracledb.DB_TYPE_BOOLEAN,
                  "clob": oracledb.DB_TYPE_CLOB, "float": oracledb.DB_TYPE_NUMBER, "int": oracledb.DB_TYPE_NUMBER}
    #: (precision, scale) the server describes for a NUMBER column (FLOAT: 126 binary digits,
    #: scale -127; INTEGER: NUMBER(38, 0)); an expression's NUMBER is (0, -127)
    NUMBER_SHAPES = {"float": (126, -127), "int": (38, 0), None: (0, -127)}

    def __init__(self, kinds: Optional[dict[str, str]] = None) -> None:
        import sqlite3  # noqa: TID251 (the fake's own in-memory database, never a store's file)

        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.kinds: dict[str, str] = dict(kinds or {})
        self.statements: list[str] = []

    @classmethod
    def for_tables(cls, metadata: Any) -> "SQLBackend":
        """A backend with ``metadata``'s tables created (SQLite spelling) and its column kinds."""
        import sqlalchemy as sa

        kinds: dict[str, str] = {}
        for table in metadata.sorted_tables:
            for col in table.columns:
                tname = type(col.type).__name__
                kind = {"JSONValue": "json", "Vector": "vector", "UTCDateTime": "datetime",
                        "Bool": "bool"}.get(tname)
                if kind is None and isinstance(col.type, sa.Text):
                    kind = "clob"
                if kind is None and isinstance(col.type, sa.Float):
                    kind = "float"   # Oracle FLOAT: NUMBER with binary precision 126
                if kind is None and isinstance(col.type, sa.Integer):
                    kind = "int"     # Oracle INTEGER: NUMBER(38)
                if kind is None:
                    continue
                old = kinds.setdefault(col.name.lower(), kind)
                assert old == kind, f"column name {col.name} has two kinds ({old}, {kind})"
        kinds.setdefault("value", "clob")  # ORAMEM_STORE_OPTIONS.VALUE (the catalog below)
        assert kinds["value"] == "clob", "a knowledge column named value is not a CLOB"
        backend = cls(kinds)
        engine = sa.create_engine("sqlite://", creator=lambda: backend.db, poolclass=sa.pool.StaticPool)
        metadata.create_all(engine)
        backend.create_catalog()
        return backend

    #: the catalog tables the knowledge layer reads with SQL (the erasure log and the store
    #: options, SC-14.3), as ddl/upgrades/002_to_003.sql and 003_to_004.sql create them on
    #: Oracle (column names and keys; SQLite spelling). An installed catalog has both.
    CATALOG_DDL = (
        "CREATE TABLE oramem_store_options (memory_store_id VARCHAR(16) NOT NULL, name VARCHAR(64) NOT NULL, "
        "value TEXT NOT NULL, PRIMARY KEY (memory_store_id, name))",
        "CREATE TABLE oramem_erasure_log (memory_store_id VARCHAR(16) NOT NULL, receipt_id VARCHAR(64) NOT NULL, "
        "erased_at VARCHAR(64) NOT NULL, subject_hash VARCHAR(64) NOT NULL, receipt TEXT NOT NULL, "
        "PRIMARY KEY (memory_store_id, receipt_id))",
    )

    def create_catalog(self) -> None:
        for ddl in self.CATALOG_DDL:
            self.db.execute(ddl)

    # spelling -------------------------------------------------------------------------------
    @staticmethod
    def translate(sql: str) -> str:
        import re as _re

        s = sql
        s = _re.sub(r"\bOFFSET\s+(\S+)\s+ROWS\s+FETCH\s+FIRST\s+(\S+)\s+ROWS\s+ONLY", r"LIMIT \2 OFFSET \1", s, flags=_re.I)
        s = _re.sub(r"\bFETCH\s+FIRST\s+(\S+)\s+ROWS\s+ONLY", r"LIMIT \1", s, flags=_re.I)
        s = _re.sub(r"\bOFFSET\s+(\S+)\s+ROWS\b", r"LIMIT -1 OFFSET \1", s, flags=_re.I)
        s = _re.sub(r"\s+FROM\s+DUAL\b", "", s, flags=_re.I)
        s = _re.sub(r"\b(N?VARCHAR2?|N?CHAR)\s*\(\s*(\d+)\s+(CHAR|BYTE)\s*\)", r"VARCHAR(\2)", s, flags=_re.I)
        s = _re.sub(r"\s+FOR\s+UPDATE(\s+OF\s+[^\s]+)?(\s+(SKIP\s+LOCKED|NOWAIT|WAIT\s+\d+))?\s*$", "", s, flags=_re.I)
        return s

    @staticmethod
    def to_sqlite(value: Any) -> Any:
        import array as _array
        import datetime as _dt
        import json as _json
        from decimal import Decimal

        if isinstance(value, _JSONBind):
            return _json.dumps(value.value, default=lambda d: float(d) if isinstance(d, Decimal) else str(d))
        if isinstance(value, _Var):
            value = value.value
        if isinstance(value, (FakeLOB, FakeAsyncLOB)):
            value = value.data
        if isinstance(value, str) and value == "":
            # Oracle treats a zero-length character value as NULL (SQL Language Reference,
            # "Nulls"): a bound '' stores NULL, matches no row in `col = :x`, and is refused
            # by a NOT NULL column (ORA-01400; :meth:`run` maps SQLite's refusal to it)
            return None
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, _dt.datetime):
            return value.strftime("%Y-%m-%d %H:%M:%S.%f")
        if isinstance(value, Decimal):
            return float(value)
        if isinstance(value, _array.array):
            return _json.dumps(list(value))
        if isinstance(value, (dict, list)):
            return _json.dumps(value)
        return value

    def from_sqlite(self, kind: Optional[str], value: Any) -> Any:
        import array as _array
        import datetime as _dt
        import json as _json

        if value is None or kind is None:
            return value
        if kind == "json":
            return _decimal_json(value)
        if kind == "vector":
            if isinstance(value, (bytes, memoryview)):
                return _array.array("f", bytes(value))
            return _array.array("f", _json.loads(value))
        if kind == "datetime":
            return _dt.datetime.fromisoformat(value) if isinstance(value, str) else value
        if kind == "bool":
            return bool(value)
        return value

    # running ----------------------------------------------------------------------------------
    #: SQLite's constraint messages -> the ORA- code Oracle raises for the same refusal
    #: (python-oracledb makes each an ``oracledb.IntegrityError``: ``errors.py``,
    #: ``ERR_INTEGRITY_ERROR_CODES`` = 1, 1400, 2290, 2291, 2292, ...)
    INTEGRITY_CODES = (("NOT NULL constraint failed", 1400, "cannot insert NULL into ({})"),
                       ("UNIQUE constraint failed", 1, "unique constraint ({}) violated"),
                       ("FOREIGN KEY constraint failed", 2291, "integrity constraint ({}) violated - parent key not found"),
                       ("CHECK constraint failed", 2290, "check constraint ({}) violated"))

    @classmethod
    def integrity_error(cls, exc: BaseException) -> BaseException:
        """The python-oracledb error Oracle gives where SQLite refused a row (an empty string is
        NULL here, :meth:`to_sqlite`, so a NOT NULL column refuses it as Oracle does)."""
        text = str(exc)
        for prefix, code, message in cls.INTEGRITY_CODES:
            if text.startswith(prefix):
                return db_error(code, message.format(text[len(prefix):].lstrip(": ")), oracledb.IntegrityError)
        return db_error(1, text, oracledb.IntegrityError)

    def run(self, cursor: "_CursorBase", sql: str, params: Any, many: bool = False) -> None:
        import re as _re
        import sqlite3  # noqa: TID251 (the fake's own in-memory database)

        head = sql.lstrip().split(None, 1)[0].lower() if sql.strip() else ""
        cursor.description = None
        cursor.rowcount = 0
        if head in ("begin", "declare"):
            # SQLAlchemy's get_isolation_level asks for the local transaction id
            if isinstance(params, dict):
                for v in params.values():
                    if isinstance(v, _Var):
                        v.value = "1.2.3"
            return
        if head == "set":  # SET TRANSACTION READ ONLY: one SQLite connection reads consistently anyway
            cursor.rows = []
            return
        if head == "alter" or _re.search(r"\bv\$transaction\b", sql, _re.I):
            cursor.rows = [("READ COMMITTED",)] if head != "alter" else []
            cursor.description = [("ISOLATION_LEVEL", oracledb.DB_TYPE_VARCHAR) + (None,) * 5]
            return
        if _re.search(r"\bv\$parameter\b", sql, _re.I):
            cursor.rows, cursor.description = [("23.0.0",)], [("VALUE", oracledb.DB_TYPE_VARCHAR) + (None,) * 5]
            return
        if "sys_context" in sql.lower():
            cursor.rows, cursor.description = [("ORAMEM",)], [("SC", oracledb.DB_TYPE_VARCHAR) + (None,) * 5]
            return
        if head == "lock":
            self.lock_table(sql)
            cursor.rows = []
            return
        text = self.translate(sql)
        self.statements.append(text)
        def conv(p: Any) -> Any:
            if isinstance(p, dict):
                return {k: self.to_sqlite(v) for k, v in p.items()}
            return [self.to_sqlite(v) for v in (p or ())]
        try:
            if many:
                cur = self.db.executemany(text, [conv(p) for p in params])
            else:
                cur = self.db.execute(text, conv(params))
        except sqlite3.IntegrityError as exc:
            raise self.integrity_error(exc) from None
        cursor.rowcount = cur.rowcount
        if cur.description is None:
            cursor.rows = []
            return
        names = [d[0] for d in cur.description]
        kinds = [self.kinds.get(n.lower()) for n in names]
        raw_rows = cur.fetchall()
        types = []
        for pos, (n, k) in enumerate(zip(names, kinds)):
            if k is not None:
                types.append(self.KIND_TYPES[k])
                continue
            sample = next((r[pos] for r in raw_rows if r[pos] is not None), None)
            types.append(oracledb.DB_TYPE_NUMBER if isinstance(sample, (int, float)) else oracledb.DB_TYPE_VARCHAR)
        cursor.description = [(n.upper(), t) + (None,) * 5 for n, t in zip(names, types)]
        fetch_vars = [cursor._fetch_var(n, t, *(self.NUMBER_SHAPES.get(k, (0, 0)) if t is oracledb.DB_TYPE_NUMBER
                                                  else (0, 0)))
                      for n, t, k in zip(names, types, kinds)]
        rows = []
        for raw in raw_rows:
            row = []
            for v, k, var in zip(raw, kinds, fetch_vars):
                v = self.from_sqlite(k, v)
                if v is not None:
                    v = _shape(v, k, var, cursor.lob_cls, cursor.connection)
                row.append(v)
            rows.append(tuple(row))
        cursor.rows = rows

    _LOCK_TABLE = r"""\s*LOCK\s+TABLE\s+(?:"([^"]+)"|([A-Za-z][A-Za-z0-9_$#]*))\s+IN\s+(ROW\s+SHARE|ROW\s+EXCLUSIVE|SHARE\s+UPDATE|SHARE\s+ROW\s+EXCLUSIVE|SHARE|EXCLUSIVE)\s+MODE(?:\s+NOWAIT|\s+WAIT\s+\d+)?\s*$"""

    def lock_table(self, sql: str) -> None:
        """``LOCK TABLE t IN <lockmode> MODE [NOWAIT | WAIT n]`` (SQL Language Reference,
        LOCK TABLE: the lock modes ROW SHARE, ROW EXCLUSIVE, SHARE UPDATE, SHARE, SHARE ROW
        EXCLUSIVE, EXCLUSIVE). The fake has one session, so the lock is always granted at
        once, as Oracle grants it when no other transaction holds a conflicting one; what it
        checks is what Oracle refuses: another statement shape (ORA-00900 here; Oracle's
        parser names the token) and a table that does not exist (ORA-00942; a quoted name
        is matched exactly, an unquoted one in upper case). The statement is recorded in
        ``statements`` as sent, so tests see where it falls among the others."""
        import re as _re

        m = _re.match(self._LOCK_TABLE, sql, _re.I)
        if m is None:
            raise db_error(900, "invalid SQL statement")
        name = m.group(1) if m.group(1) is not None else m.group(2).upper()
        found = self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if name not in {str(r[0]) for r in found}:
            raise db_error(942, "table or view does not exist")
        self.statements.append(sql.strip())

    def commit(self) -> None:
        self.db.commit()

    def rollback(self) -> None:
        self.db.rollback()
