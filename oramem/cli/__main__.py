"""``python -m oramem.cli``: the ``oramem`` command."""

from . import main

main()
