"""A recording fake of python-oracledb (sync and async), for tests that need no database.

The fakes subclass the real python-oracledb classes (without connecting), so the code under
test sees ``isinstance(x, oracledb.ConnectionPool)`` etc. exactly as with real objects.
Every call is appended to ``Recorder.calls`` as a :class:`Call`; answers come from
``Recorder.answers``: ``{qualified_name_or_sql_key: value | exception | callable(call)}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import oracledb


@dataclass
class Call:
    kind: str  # callfunc | callproc | execute | commit | rollback | createlob | acquire | release
    name: str = ""
    return_type: Any = None
    binds: dict = field(default_factory=dict)
    input_sizes: dict = field(default_factory=dict)


class Recorder:
    def __init__(self, answers: Optional[dict[str, Any]] = None) -> None:
        self.calls: list[Call] = []
        self.answers: dict[str, Any] = dict(answers or {})

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


class _CursorBase:
    def __init__(self, rec: Recorder, lob_cls: type) -> None:
        self.rec = rec
        self.sizes: dict = {}
        self.rows: list = []
        self.lob_cls = lob_cls

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def setinputsizes(self, *args, **kwargs):
        self.sizes.update(kwargs)
        return kwargs

    def _func(self, name, return_type, keyword_parameters):
        call = Call("callfunc", name, return_type, dict(keyword_parameters or {}), dict(self.sizes))
        self.rec.calls.append(call)
        value = self.rec.answer(name, call)
        if return_type is oracledb.DB_TYPE_CLOB and isinstance(value, str):
            return self.lob_cls(value)
        return value

    def _proc(self, name, keyword_parameters):
        call = Call("callproc", name, None, dict(keyword_parameters or {}), dict(self.sizes))
        self.rec.calls.append(call)
        self.rec.answer(name, call)
        return []

    def _exec(self, sql, parameters=None, **kw):
        binds = dict(parameters or {}) if isinstance(parameters, dict) else {}
        binds.update(kw)
        call = Call("execute", sql, None, binds, dict(self.sizes))
        self.rec.calls.append(call)
        value = self.rec.answer(sql, call)
        self.rows = list(value) if value is not None else []


class FakeCursor(_CursorBase):
    def __init__(self, rec: Recorder) -> None:
        super().__init__(rec, FakeLOB)

    def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters)

    def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters)

    def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    def fetchall(self):
        rows, self.rows = self.rows, []
        return rows


class FakeAsyncCursor(_CursorBase):
    def __init__(self, rec: Recorder) -> None:
        super().__init__(rec, FakeAsyncLOB)

    async def callfunc(self, name, return_type, parameters=None, keyword_parameters=None):
        return self._func(name, return_type, keyword_parameters)

    async def callproc(self, name, parameters=None, keyword_parameters=None):
        return self._proc(name, keyword_parameters)

    async def execute(self, sql, parameters=None, **kw):
        self._exec(sql, parameters, **kw)

    async def fetchone(self):
        return self.rows.pop(0) if self.rows else None

    async def fetchall(self):
        rows, self.rows = self.rows, []
        return rows


class FakeConnection(oracledb.Connection):
    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled

    def cursor(self, scrollable: bool = False):
        return FakeCursor(self.rec)

    def commit(self):
        self.rec.calls.append(Call("commit"))

    def rollback(self):
        self.rec.calls.append(Call("rollback"))

    def createlob(self, lob_type, data=None):
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeLOB(data)

    def close(self):
        self.rec.calls.append(Call("close"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pooled:
            self.rec.calls.append(Call("release"))

    def __del__(self):
        pass


class FakeAsyncConnection(oracledb.AsyncConnection):
    def __init__(self, rec: Recorder, pooled: bool = False) -> None:
        self._impl = None
        self.rec = rec
        self.pooled = pooled

    def cursor(self, scrollable: bool = False):
        return FakeAsyncCursor(self.rec)

    async def commit(self):
        self.rec.calls.append(Call("commit"))

    async def rollback(self):
        self.rec.calls.append(Call("rollback"))

    async def createlob(self, lob_type, data=None):
        self.rec.calls.append(Call("createlob", binds={"data": data}))
        return FakeAsyncLOB(data)

    async def close(self):
        self.rec.calls.append(Call("close"))

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        if self.pooled:
            self.rec.calls.append(Call("release"))

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
