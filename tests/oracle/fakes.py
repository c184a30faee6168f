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
  raises an ORA-01461-shaped error otherwise. A PL/SQL ``str`` bind is limited to 32767 bytes
  (ORACLE_NOTES 11.2); over that it must be a LOB (the fake raises an ORA-06502-shaped error).
"""

from __future__ import annotations

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

    def new_connection(self) -> int:
        self.connections += 1
        return self.connections

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


class FakeLOB(oracledb.LOB):
    def __init__(self, data: str) -> None:
        self._impl = None
        self.data = data

    def read(self, offset: int = 1, amount: Optional[int] = None) -> str:
        return self.data

    def __del__(self) -> None:
        pass


class FakeAsyncLOB(oracledb.AsyncLOB):
    def __init__(self, data: str) -> None:
        self._impl = None
        self.data = data

    async def read(self, offset: int = 1, amount: Optional[int] = None) -> str:
        return self.data

    def __del__(self) -> None:
        pass


#: the server's string bind caps seen by thin mode: SQL under MAX_STRING_SIZE=STANDARD (the
#: Oracle Database Free default) and PL/SQL
MAX_SQL_STRING_BIND = 4000
MAX_PLSQL_STRING_BIND = 32767


class _CursorBase:
    def __init__(self, rec: Recorder, lob_cls: type, conn: int = 0) -> None:
        self.rec = rec
        self.conn = conn
        self.sizes: dict = {}
        self.bind_style: Optional[type] = None
        self.rows: list = []
        self.lob_cls = lob_cls

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def setinputsizes(self, *args, **kwargs):
        # impl/base/cursor.pyx setinputsizes: kwargs -> bind_style dict, args -> list
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
                if not isinstance(value, str) or self.sizes.get(key) in (oracledb.DB_TYPE_CLOB, oracledb.CLOB):
                    continue
                size = len(value.encode("utf-8"))
                if not is_plsql and size > MAX_SQL_STRING_BIND:
                    raise db_error(1461, f"can bind a LONG value only for insert into a LONG column "
                                         f"(bind {key!r} of {size} bytes in {what})")
                if is_plsql and size > MAX_PLSQL_STRING_BIND:
                    raise db_error(6502, f"PL/SQL: numeric or value error: character string buffer too "
                                         f"small (bind {key!r} of {size} bytes in {what})")
        finally:
            self.bind_style, self.sizes = None, {}  # input sizes apply to one execute

    def _func(self, name, return_type, keyword_parameters, parameters=None):
        call = Call("callfunc", name, return_type, dict(keyword_parameters or {}), dict(self.sizes), self.conn)
        self._check_plsql_call(parameters, keyword_parameters, name)
        self.rec.calls.append(call)
        value = self.rec.answer(name, call)
        if return_type is oracledb.DB_TYPE_CLOB and isinstance(value, str):
            return self.lob_cls(value)
        return value

    def _check_plsql_call(self, parameters, keyword_parameters, name):
        # cursor.py _call_get_execute_args: every argument, keyword ones included, becomes a
        # positional bind (a list) of the generated PL/SQL block
        values = list(parameters or ()) + list((keyword_parameters or {}).values())
        self._check_binds(values, True, name)

    def _proc(self, name, keyword_parameters, parameters=None):
        call = Call("callproc", name, None, dict(keyword_parameters or {}), dict(self.sizes), self.conn)
        self._check_plsql_call(parameters, keyword_parameters, name)
        self.rec.calls.append(call)
        self.rec.answer(name, call)
        return []

    def _exec(self, sql, parameters=None, **kw):
        binds = dict(parameters or {}) if isinstance(parameters, dict) else {}
        binds.update(kw)
        call = Call("execute", sql, None, binds, dict(self.sizes), self.conn)
        head = sql.lstrip().split(None, 1)[0].lower() if sql.strip() else ""
        self._check_binds(kw or parameters, head in ("begin", "declare", "call"), "SQL")
        self.rec.calls.append(call)
        value = self.rec.answer(sql, call)
        self.rows = list(value) if value is not None else []


class FakeCursor(_CursorBase):
    def __init__(self, rec: Recorder, conn: int = 0) -> None:
        super().__init__(rec, FakeLOB, conn)

    def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters, parameters)

    def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters, parameters)

    def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    def fetchall(self):
        rows, self.rows = self.rows, []
        return rows


class FakeAsyncCursor(_CursorBase):
    def __init__(self, rec: Recorder, conn: int = 0) -> None:
        super().__init__(rec, FakeAsyncLOB, conn)

    async def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters, parameters)

    async def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters, parameters)

    async def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    async def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    async def fetchall(self):
        rows, self.rows = self.rows, []
        return rows


class FakeConnection(oracledb.Connection):
    outputtypehandler: Any = None  # a plain attribute (the real one is a property over _impl)

    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled
        self.serial = rec.new_connection()

    def cursor(self, scrollable: bool = False):
        return FakeCursor(self.rec, self.serial)

    def commit(self):
        self.rec.calls.append(Call("commit", conn=self.serial))

    def rollback(self):
        self.rec.calls.append(Call("rollback", conn=self.serial))

    def createlob(self, lob_type, data=None):
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeLOB(data)

    def close(self):
        self.rec.calls.append(Call("close"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pooled:
            self.rec.calls.append(Call("release", conn=self.serial))

    def __del__(self):
        pass


class FakeAsyncConnection(oracledb.AsyncConnection):
    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled
        self.serial = rec.new_connection()

    def cursor(self, scrollable: bool = False):
        return FakeAsyncCursor(self.rec, self.serial)

    async def commit(self):
        self.rec.calls.append(Call("commit", conn=self.serial))

    async def rollback(self):
        self.rec.calls.append(Call("rollback", conn=self.serial))

    async def createlob(self, lob_type, data=None):
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeAsyncLOB(data)

    async def close(self):
        self.rec.calls.append(Call("close"))

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        if self.pooled:
            self.rec.calls.append(Call("release", conn=self.serial))

    def __del__(self):
        pass


class FakePool(oracledb.ConnectionPool):
    def __init__(self, rec: Recorder) -> None:
        self._impl = None
        self.rec = rec

    def acquire(self, *args, **kwargs):
        self.rec.calls.append(Call("acquire"))
        return FakeConnection(self.rec, pooled=True)

    def __del__(self):
        pass


class FakeAsyncPool(oracledb.AsyncConnectionPool):
    def __init__(self, rec: Recorder) -> None:
        self._impl = None
        self.rec = rec

    def acquire(self, *args, **kwargs):
        self.rec.calls.append(Call("acquire"))
        return FakeAsyncConnection(self.rec, pooled=True)

    def __del__(self):
        pass


Answer = Callable[[Call], Any]
