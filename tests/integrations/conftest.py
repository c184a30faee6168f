"""Adapter tests: each module needs its framework's extra and is skipped, with the install
command printed in an ``integrations`` section of the summary, when the extra is missing.
CI installs the extras and runs this folder on its own (``.ci/run``)."""

from __future__ import annotations

from integrations.extras import MISSING


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if MISSING:
        terminalreporter.write_sep("-", "integrations")
        for reason in MISSING.values():
            terminalreporter.write_line(f"skipped: {reason}")
