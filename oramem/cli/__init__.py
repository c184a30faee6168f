"""The ``oramem`` command line: the store API on the embedded SQLite engine.

Every command opens one store (``--db`` file, ``--store`` id), does one thing and closes
it. Human output is aligned text; ``--json`` prints one JSON document for machines. Bad
arguments print ``Error: ...`` and exit with status 2; store-state and service errors exit
with status 1; a database locked longer than the wait exits 3; no traceback unless
``ORAMEM_DEBUG=1``. The status is chosen by the error's class (``group.EXIT_CODES``).

Embedder: ``--embed-onnx`` selects a local ONNX model, ``--embed-url``/``--embed-model`` an
OpenAI-compatible service, ``--embed-dim`` alone a HashEmbedder of that dimension. With none
of them, an existing store uses the embedder its recorded identity names when it can be
rebuilt here (HashEmbedder, a local ONNX model; else none: reads, exports and keyword search
need none), and a new store the semantic default (``oramem.embedders.defaults``:
``$ORAMEM_ONNX_MODEL``, else the default model fetched once, else offline HashEmbedder(256)
with a one-line notice). A store refuses any other embedder. ``models`` (``cmd_models``)
pulls and lists the model cache.

Layout (one concern a module): ``group`` (the root group's error handling, lazy groups and
option hoisting), ``state`` (``State``: the per-invocation options and the store it opens),
``output`` (option parsing, tables, ``--json``), ``app`` (the root ``cli`` group and ``main``),
and the commands by group: ``cmd_records`` (add, get, list, update, delete, delete-thread,
forget), ``cmd_search``, ``cmd_backup`` (import, export, migrate), ``cmd_maintenance``
(purge, check, reembed), ``cmd_stores``, ``cmd_models`` (models pull, list), ``cmd_demo``, ``cmd_serve`` (mcp). The Oracle
(``db``: ``cmd_db``, ``selftest``) and knowledge (``knowledge``, ``kg``: ``cmd_knowledge``) groups
are imported only when used. All command-line code lives in this package (a layer rule that
``lint-imports`` checks, see pyproject.toml ``[tool.importlinter]``).
"""

from __future__ import annotations

# importing the command modules registers their commands on ``cli``; the names below are
# re-exported (``X as X``) so the import paths of the single-module CLI keep working
from . import cmd_backup as cmd_backup
from . import cmd_demo as cmd_demo
from . import cmd_firewall as cmd_firewall
from . import cmd_audit as cmd_audit
from . import cmd_maintenance as cmd_maintenance
from . import cmd_models as cmd_models
from . import cmd_records as cmd_records
from . import cmd_search as cmd_search
from . import cmd_serve as cmd_serve
from . import cmd_stores as cmd_stores
from .app import cli as cli
from .app import main as main
from .group import CLIError as CLIError
from .group import OramemGroup as OramemGroup
from .group import hoist_global_options as hoist_global_options
from .group import in_cli_words as in_cli_words
from .group import move_before_subcommand as move_before_subcommand
from .state import State as State
from .state import check_db_path as check_db_path
from .state import pass_state as pass_state

__all__ = ["main", "cli"]
