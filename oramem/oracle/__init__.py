"""The Oracle engine of oramem.

- the engine, one class per colour as in python-oracledb (``connect`` / ``connect_async``):
  :class:`SyncOracleEngine` (:mod:`oramem.oracle.sync_engine`) for a pool or connection from
  ``oracledb.create_pool()`` / ``oracledb.connect()``, :class:`AsyncOracleEngine`
  (:mod:`oramem.oracle.async_engine`) for one from ``create_pool_async()`` / ``connect_async()``;
  both over the colour-free :class:`OracleEngine` (:mod:`oramem.oracle.base`) and the
  JSON codec (:mod:`oramem.oracle.codec`): a thin python-oracledb driver making one
  named-parameter PL/SQL call per operation;
- :class:`OracleDBEmbedder` (:mod:`oramem.oracle.embedder`): in-database ONNX embeddings;
- :mod:`oramem.oracle.calls`: the one table of PL/SQL calls, checked against ``plsql/*.pks``
  by ``tests/plsql``; :mod:`oramem.oracle.errors`: Oracle error code -> oramem exception;
- :mod:`oramem.cli.selftest`: ``oramem db selftest``; :mod:`oramem.oracle.models`: ``oramem db load-model``;
- :mod:`oramem.oracle.admin` / :mod:`oramem.cli.cmd_db`: ``oramem db install|upgrade|
  uninstall|status|doctor`` for DBAs.
"""

from .async_engine import AsyncOracleEngine
from .base import OracleEngine
from .embedder import OracleDBEmbedder
from .sync_engine import SyncOracleEngine

__all__ = ["OracleEngine", "SyncOracleEngine", "AsyncOracleEngine", "OracleDBEmbedder"]
