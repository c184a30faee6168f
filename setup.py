"""Build hook: ship the database scripts (``ddl/``, ``plsql/``) inside the wheel as
``oramem/oracle/sql/`` so that ``oramem db install`` works from an installed package.
``MANIFEST.in`` puts them in the sdist, so a wheel built from the sdist has them too; a build
without them fails instead of producing a package whose ``oramem db install`` cannot work
(review D2; tests/packaging/test_sdist_wheel.py). All other metadata lives in pyproject.toml."""

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
            if not any(source.glob("*.sql")):
                raise SystemExit(
                    f"oramem build: {source} holds no SQL scripts; build from a source checkout or from an sdist "
                    "that carries ddl/ and plsql/ (MANIFEST.in grafts them)"
                )
            shutil.copytree(source, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithSQL})
