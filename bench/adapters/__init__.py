"""One adapter per measured system, all with the interface of :class:`base.Adapter`.

Importing this package imports no peer library: each adapter imports its system in
``check()``, so a peer that is missing is reported as "not measured: <reason>".
"""

from .base import Adapter, NotMeasured, Unsupported
from .chroma import Chroma
from .lance import Lance
from .numpy_bf import NumpyBruteForce
from .oramem_ann import OramemAnn
from .oramem_sqlite import OramemSQLite, OramemSQLiteApprox, OramemSQLiteVector
from .sqlite_vec import SqliteVec

#: run order: the reference first, then oramem, then the peers
ADAPTERS: dict[str, type[Adapter]] = {
    cls.name: cls for cls in (NumpyBruteForce, OramemSQLite, OramemSQLiteVector, OramemAnn, OramemSQLiteApprox, SqliteVec, Lance, Chroma)
}

__all__ = ["ADAPTERS", "Adapter", "NotMeasured", "Unsupported"]
