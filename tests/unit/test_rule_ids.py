"""Every contract rule id the project cites (SC-x.y, KC-x.y, or a bare section SC-n / KC-n)
is defined in docs/spec/store.md or docs/spec/knowledge.md, so an error message, a help text
or a test that names a rule points at something a user can read."""
from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec"
CITED = re.compile(r"\b(SC|KC)-(\d+)(?:\.(\d+))?\b")
# a rule is defined by a list item that starts with its id; a section by its "## n." heading
RULE_LINE = re.compile(r"^\s*[-*]\s+\**((?:SC|KC)-\d+\.\d+)\b", re.MULTILINE)
SECTION = re.compile(r"^##\s+(\d+)\.", re.MULTILINE)
SCANNED = ("oramem", "plsql", "ddl", "docs", "tests", "bench", "docker", "README.md")
SUFFIXES = {".py", ".sql", ".pks", ".pkb", ".md", ".txt", ".yml", ".yaml", ".toml"}


def _defined() -> set[str]:
    ids: set[str] = set()
    for prefix, name in (("SC", "store.md"), ("KC", "knowledge.md")):
        text = (SPEC / name).read_text(encoding="utf-8")
        ids.update(m.group(1) for m in RULE_LINE.finditer(text) if m.group(1).startswith(prefix))
        ids.update(f"{prefix}-{m.group(1)}" for m in SECTION.finditer(text))
    return ids


def _sources() -> list[Path]:
    out: list[Path] = []
    for entry in SCANNED:
        path = ROOT / entry
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out.extend(
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix in SUFFIXES and SPEC not in p.parents and p != Path(__file__).resolve()
            )
    return out


def test_spec_defines_rules() -> None:
    defined = _defined()
    assert {"SC-4.2", "SC-11", "KC-4.11", "KC-0"} <= defined, sorted(defined)[:20]


def _undefined(text: str, defined: set[str]) -> list[str]:
    return [m.group(0) for m in CITED.finditer(text) if m.group(0) not in defined]


def test_every_cited_rule_id_is_defined() -> None:
    defined = _defined()
    missing: dict[str, list[str]] = {}
    for path in _sources():
        for rule in _undefined(path.read_text(encoding="utf-8", errors="replace"), defined):
            missing.setdefault(rule, []).append(str(path.relative_to(ROOT)))
    assert not missing, "rule ids cited but defined nowhere in docs/spec/: " + "; ".join(
        f"{rule} in {', '.join(sorted(set(paths))[:3])}" for rule, paths in sorted(missing.items())
    )


def test_an_undefined_id_is_reported_and_a_defined_one_is_not() -> None:
    defined = _defined()
    text = "raise ValueError('see SC-4.2 and KC-4.11, SC-11'); # SC-99.1, KC-4.999 and SC-42 do not exist"
    assert _undefined(text, defined) == ["SC-99.1", "KC-4.999", "SC-42"]
