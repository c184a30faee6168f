"""The Oracle engine of oramem.

- :class:`OracleEngine` (:mod:`oramem.oracle.driver`): ``OracleEngine(connection_or_pool)``,
  a thin python-oracledb driver making one named-parameter PL/SQL call per operation;
- :class:`OracleDBEmbedder` (:mod:`oramem.oracle.embedder`): in-database ONNX embeddings;
- :mod:`oramem.oracle.calls`: the one table of PL/SQL calls, checked against ``plsql/*.pks``
  by ``tests/plsql``; :mod:`oramem.oracle.errors`: Oracle error code -> oramem exception;
- :mod:`oramem.oracle.selftest`: ``oramem db selftest``; :mod:`oramem.oracle.models`: ``oramem db load-model``;
- :mod:`oramem.oracle.admin` / :mod:`oramem.oracle.cli`: ``oramem db install|upgrade|
  uninstall|status|doctor`` for DBAs.
"""

from .driver import OracleEngine
from .embedder import OracleDBEmbedder

__all__ = ["OracleEngine", "OracleDBEmbedder"]
