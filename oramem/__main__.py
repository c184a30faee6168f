"""``python -m oramem``: the ``oramem`` command (what ``python -m oramem.cli`` and the console
script run), for an environment whose scripts directory is not on ``PATH``."""

from .cli import main

main()
