"""Build hook: ship the database scripts (``ddl/``, ``plsql/``) inside the wheel as
``oramem/oracle/sql/`` so that ``oramem db install`` works from an installed package.
All other metadata lives in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SQL_DIRS = ("ddl", "plsql")


class BuildWithSQL(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "oramem" / "oracle" / "sql"
        for name in SQL_DIRS:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithSQL})
