"""What README.md and docs/*.md name exists: every `oramem ...` command line they show names
real commands and real options (the options of the root and of each command on the path),
and every repository path (and pytest node ``path::test``) they cite is there. A doc that
names a flag or a file that is gone tells a user something false (audit22: the new-user
trial page named `forget --name`, removed when forget stopped matching names, and a module
moved to another package)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from oramem.cli.app import cli

ROOT = Path(__file__).resolve().parents[2]
# the contract copies (docs/spec) are not project prose; bench results are measurements;
# the READMEs of plsql/, ddl/, docker/ and bench/ are (audit24), and plsql/VERIFY.md, whose rows
# cite the tests that pin each Oracle construct (audit25)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *(ROOT / d / "README.md" for d in ("plsql", "ddl", "docker", "bench")), ROOT / "plsql" / "VERIFY.md"]
#: paths the docs name that are not in the repository on purpose: generated, gitignored
NOT_COMMITTED = {"bench/results/raw"}

SH_BLOCK = re.compile(r"^```(?:sh|text|bash)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`(oramem [^`]+)`")


def _command_lines(text: str) -> list[str]:
    lines = []
    for block in SH_BLOCK.findall(text):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("oramem "):
                lines.append(line)
    lines.extend(INLINE.findall(text))
    return lines


def _pieces(line: str) -> list[list[str]]:
    """One shell line -> its oramem invocations (split at ; && |), as words."""
    out = []
    for part in re.split(r"\s*(?:;|&&|\|(?= ))\s*", line):
        part = part.strip()
        if not part.startswith("oramem "):
            continue
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        words = [w.strip("[]") for w in words[1:]]
        if words and words[0].endswith(":"):
            continue  # a message oramem prints ("oramem mcp: no token given; ..."), not a command
        out.append(words)
    return out


def _long_options(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}


def _check(words: list[str]) -> list[str]:
    """Problems of one invocation: an unknown command, or an option no command on its path has."""
    ctx = click.Context(cli)
    command: click.Command = cli
    allowed = _long_options(cli) | {"--help", "-h"}
    problems = []
    expects_value = False
    for word in words:
        if expects_value:
            expects_value = False
            continue
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            if name not in allowed:
                problems.append(f"no option {name} for `oramem {' '.join(words)}`")
            opt = next((p for c in (cli, command) for p in c.params
                        if isinstance(p, click.Option) and name in p.opts), None)
            expects_value = opt is not None and not opt.is_flag and "=" not in word
            continue
        if word.startswith("-"):
            continue
        if isinstance(command, click.Group):
            if "|" in word or word.isupper() or word in {"...", "…"}:
                break  # a placeholder such as `jobs status|list|retry` or COMMAND
            sub = command.get_command(ctx, word)
            if sub is None:
                problems.append(f"no command {word!r} in `oramem {' '.join(words)}`")
                break
            command = sub
            allowed |= _long_options(sub)
    return problems


def _all_invocations() -> list[tuple[str, list[str]]]:
    found = []
    for doc in DOCS:
        for line in _command_lines(doc.read_text(encoding="utf-8")):
            for words in _pieces(line):
                found.append((f"{doc.relative_to(ROOT)}: {line}", words))
    return found


def test_documented_command_lines_name_real_commands_and_options():
    invocations = _all_invocations()
    assert len(invocations) > 60, "the doc scan lost the README's command lines"
    problems = [f"{where}\n    {p}" for where, words in invocations for p in _check(words)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("words, bad", [
    (["forget", "--user", "ID", "--name", "NAME"], "--name"),
    (["search", "x", "--no-such-flag"], "--no-such-flag"),
    (["no-such-command"], "no-such-command"),
])
def test_the_scan_catches_a_flag_or_command_that_does_not_exist(words, bad):
    assert any(bad in p for p in _check(words))


PATH = re.compile(r"(?<![\w/.-])((?:oramem|tests|bench|plsql|ddl|docker|docs|\.ci|\.github)/[\w./-]*\w)(?:::(\w+))?")


def test_cited_repository_paths_and_tests_exist():
    problems = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for match in PATH.finditer(line):
                rel, test = match.groups()
                if "*" in line[match.start():match.end() + 1] or "NNN" in rel or rel in NOT_COMMITTED:
                    continue  # a pattern (`ddl/NNN_*.sql`) or a generated, gitignored directory
                path = ROOT / rel
                where = f"{doc.relative_to(ROOT)}:{number}"
                if not path.exists():
                    problems.append(f"{where}: {rel} does not exist")
                elif test and path.suffix == ".py" and not re.search(rf"\bdef {test}\b", path.read_text(encoding="utf-8")):
                    problems.append(f"{where}: {rel} has no {test}")
    assert not problems, "\n".join(problems)


def test_readme_grant_list_holds_every_grant_the_compose_script_gives():
    """README "Grants a DBA gives the schema user" says it is what docker/initdb/02_grants.sh
    runs; it lacked the HYBRID packages' EXECUTE grants the script gives (and doctor checks),
    so a DBA following the README could not create or search a HYBRID store. SELECT on the
    V$ views is left out: doctor only reads them for its report."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("**3. Grants a DBA gives the schema user.**", 1)[1].split("```sql\n", 1)[1].split("```", 1)[0]
    script = (ROOT / "docker" / "initdb" / "02_grants.sh").read_text(encoding="utf-8")
    wanted = []
    for privileges in re.findall(r"^GRANT (.+?) TO ", script, flags=re.M):
        if privileges.startswith("SELECT ON SYS.V_"):
            continue
        wanted.extend(p.strip() for p in privileges.split(","))
    loop = re.search(r"object_name IN \(([^)]*)\)", script)
    assert loop, "02_grants.sh no longer looks up the HYBRID packages' owner"
    wanted.extend(f"EXECUTE ON <owner>.{name.strip(chr(39) + ' ')}" for name in loop.group(1).split(","))
    assert len(wanted) >= 10
    missing = [w for w in wanted if not re.search(rf"^GRANT (?:[A-Z ,]*\b)?{re.escape(w)}\b", block, flags=re.M)]
    assert not missing, f"README grant list lacks {missing}"


def test_readme_names_every_global_option_and_its_environment_variable():
    """docs/new-user-trial.md #25: `--help` shows every environment variable and the README
    lists them. --embed-max-tokens / ORAMEM_EMBED_MAX_TOKENS were in neither of the README's
    lists (audit22)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = []
    for param in cli.params:
        if not isinstance(param, click.Option) or param.opts == ["--version"]:
            continue
        missing.extend(o for o in param.opts
                       if o.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", readme))
        if param.envvar and f"`{param.envvar}`" not in readme:
            missing.append(str(param.envvar))
    assert not missing, f"README does not name {missing}"


def test_docker_readme_names_every_grant_the_compose_script_gives():
    """docker/README.md lists what docker/initdb/02_grants.sh grants; it named six of the
    script's grants and left out CREATE TABLE/VIEW/SEQUENCE/PROCEDURE/TYPE, SELECT on
    V$VECTOR_MEMORY_POOL and the HYBRID packages' EXECUTE grants (audit24)."""
    readme = " ".join((ROOT / "docker" / "README.md").read_text(encoding="utf-8").split())
    said = readme.split("`02_grants.sh` (", 1)[1].split("`03_install_oramem.sh`", 1)[0]
    script = (ROOT / "docker" / "initdb" / "02_grants.sh").read_text(encoding="utf-8")
    wanted = []
    for privileges in re.findall(r"^GRANT (.+?) TO ", script, flags=re.M):
        for privilege in (p.strip() for p in privileges.split(",")):
            # the object or the privilege's last word: V_$PARAMETER -> V$PARAMETER, CREATE TABLE -> TABLE
            wanted.append(privilege.replace("SYS.V_\\$", "V$").replace("CTXSYS.", "").replace("SYS.", "").split()[-1])
    loop = re.search(r"object_name IN \(([^)]*)\)", script)
    assert loop, "02_grants.sh no longer looks up the HYBRID packages' owner"
    wanted.extend(name.strip("' ") for name in loop.group(1).split(","))
    assert len(wanted) >= 14
    missing = [w for w in wanted if not re.search(rf"(?<![\w$]){re.escape(w)}(?!\w)", said)]
    assert not missing, f"docker/README.md's 02_grants.sh list lacks {missing}"


def test_ddl_readme_names_every_ddl_file():
    """ddl/README.md describes the DDL files; ddl/knowledge/ (three generated files) was in
    none of its words, and its rule "every CREATE is IF NOT EXISTS" ignored the upgrade
    scripts' guarded EXECUTE IMMEDIATE (audit24)."""
    readme = (ROOT / "ddl" / "README.md").read_text(encoding="utf-8")
    files = sorted(p.relative_to(ROOT / "ddl").as_posix() for p in (ROOT / "ddl").rglob("*.sql"))
    assert len(files) >= 8
    missing = [f for f in files if f"`{f}`" not in readme and f"`{f.rsplit('/', 1)[-1]}`" not in readme]
    assert not missing, f"ddl/README.md does not name {missing}"
    for upgrade in (ROOT / "ddl" / "upgrades").glob("*.sql"):
        if "EXECUTE IMMEDIATE 'CREATE" in upgrade.read_text(encoding="utf-8"):
            assert "EXECUTE IMMEDIATE" in readme, f"{upgrade.name} creates with EXECUTE IMMEDIATE; the rules do not say so"


def _environment_variables_read() -> dict[str, str]:
    """Every environment variable the package reads -> the first file reading it: os.environ
    .get/[]/getenv/pop/setdefault with a literal name, click's envvar=, oramem's env= (API
    keys) and module constants named *_ENV."""
    import ast

    found: dict[str, str] = {}
    for path in sorted((ROOT / "oramem").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                if func.endswith(("environ.get", "getenv", "environ.pop", "environ.setdefault")) and node.args:
                    names.append(node.args[0])
                names.extend(kw.value for kw in node.keywords if kw.arg in ("envvar", "env"))
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
                names.append(node.slice)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and node.targets[0].id.endswith("_ENV")):
                names.append(node.value)
            for name in names:
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    found.setdefault(name.value, str(path.relative_to(ROOT)))
    return found


def test_readme_names_every_environment_variable_oramem_reads():
    """docs/new-user-trial.md #25: the README lists the environment variables. ORAMEM_ONNX_THREADS,
    ORAMEM_SQL_DIR and XDG_CACHE_HOME (where the model cache is without ORAMEM_MODEL_CACHE) were
    read by the code and named nowhere in it (audit24)."""
    found = _environment_variables_read()
    assert {"ORAMEM_DB", "ORAMEM_EMBED_API_KEY", "ORAMEM_MCP_TOKEN", "HF_ENDPOINT"} <= set(found), found
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = {name: where for name, where in found.items() if name not in readme}
    assert not missing, f"README.md does not name {missing}"


def _commands_in_code() -> list[tuple[str, list[str]]]:
    """Every `oramem ...` command a string of the package names (help texts, error messages,
    hints, docstrings), as (where, words). An f-string's placeholders become PLACEHOLDER (an
    option built from one is not checked), and `--a/--b/--c` is three options."""
    import ast

    found = []
    for path in sorted((ROOT / "oramem").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "PLACEHOLDER" for v in node.values)
            else:
                continue
            for command in INLINE.findall(text):
                for words in _pieces(command):
                    words = [w for word in words for w in (word.split("/") if word.startswith("--") else [word])
                             if "PLACEHOLDER" not in w]
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", words))
    return found


def test_commands_named_in_the_code_exist():
    """A hint or help text that names a command the CLI does not have sends the user nowhere:
    `oramem audit check` said "run `oramem purge-expired`" and `audit enable --ttl-days` said
    entries go "on purge-expired"; the command is `oramem purge` (audit24)."""
    found = _commands_in_code()
    assert len(found) > 40, "the scan lost the package's command hints"
    problems = [f"{where}: {p}" for where, words in found for p in _check(words)]
    assert not problems, "\n".join(problems)


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def test_the_purge_bullet_names_every_adapter_that_sets_an_expiry():
    """docs/store-decisions.md "Maintenance operations against erasure": the TTL bullet said the
    MCP server and the adapters offer "no expiry change", while MCP's add_memory takes ttl_days
    and the LangGraph OramemStore writes and refreshes its items' TTL (audit25). Every
    integration module that passes ttl_days is named there, with the scope limit."""
    import ast

    bullet = _flat(ROOT / "docs" / "store-decisions.md").split("- **TTL purge**", 1)[1].split(" - **", 1)[0]
    purge = cli.get_command(click.Context(cli), "purge")
    assert purge is not None and "--user" not in _long_options(purge) and "`oramem purge` takes no `--user`" in bullet
    named = {"mcp": "`add_memory` takes `ttl_days`", "langgraph": "LangGraph `OramemStore` writes and refreshes",
             "langchain": "LangChain", "openai_agents": "OpenAI"}
    setters = sorted(p.stem for p in (ROOT / "oramem" / "integrations").glob("*.py")
                     if "ttl_days" in p.read_text(encoding="utf-8"))
    assert setters == ["langgraph", "mcp"], setters
    missing = [m for m in setters if named[m] not in bullet]
    assert not missing, f"the TTL bullet does not say that {missing} set an expiry"
    # MCP's update_memory changes text and metadata only, as the bullet says
    tree = ast.parse((ROOT / "oramem" / "integrations" / "mcp.py").read_text(encoding="utf-8"))
    update = next(n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef) and n.name == "update_memory")
    params = {a.arg for a in update.args.args + update.args.kwonlyargs}
    assert params == {"record_id", "text", "metadata", "record_type", "user_id", "agent_id"}
    assert "`update_memory` changes text and metadata only" in bullet


def test_the_docs_name_every_erasure_that_closes_the_stale_snapshot_window():
    """A reader of an older snapshot can write a sidecar after a delete; the erasures whose
    TRUNCATE checkpoint waits for it close that window (`_after_erasure`: forget and a
    profile cascade outside a block). docs/sqlite-vector-sidecar.md named forget only, while
    docs/store-decisions.md named forget and a cascade (audit25)."""
    import ast

    tree = ast.parse((ROOT / "oramem" / "sqlite" / "engine.py").read_text(encoding="utf-8"))
    callers = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and any(isinstance(n, ast.Attribute) and n.attr == "_after_erasure" for n in ast.walk(f))}
    assert callers == {"forget", "erase_profile"}, callers
    sidecar = _flat(ROOT / "docs" / "sqlite-vector-sidecar.md").split("A reader still loading a snapshot", 1)[1]
    sidecar = sidecar.split("- It has the database file", 1)[0]
    decisions = _flat(ROOT / "docs" / "store-decisions.md").split("Not done: closing the window", 1)[1].split(" - **", 1)[0]
    words = {"forget": "`forget`", "erase_profile": "cascade"}
    for where, text in (("docs/sqlite-vector-sidecar.md", sidecar), ("docs/store-decisions.md", decisions)):
        missing = [c for c in sorted(callers) if words[c] not in text]
        assert not missing, f"{where} does not name {missing} as closing the window"


def _comment_flags() -> list[tuple[str, list[str]]]:
    """Each documented command line whose comment names options (`# -k or --limit`), as
    (where, the line's words + those options): the comment speaks of the same command."""
    found = []
    for doc in DOCS:
        for block in SH_BLOCK.findall(doc.read_text(encoding="utf-8")):
            for line in block.splitlines():
                if " #" not in line or not line.strip().startswith("oramem "):
                    continue
                command, comment = line.split(" #", 1)
                flags = re.findall(r"(?<![\w-])(--[a-z][\w-]*)", comment)
                pieces = _pieces(command.strip())
                if flags and pieces:
                    found.append((f"{doc.relative_to(ROOT)}: {line.strip()}", pieces[-1] + flags))
    return found


def test_options_a_command_lines_comment_names_exist_on_that_command():
    """The scan above drops a line's comment, so `oramem search ... -k 5   # -k or --limit`
    could name an alias the command lost (audit25: the comment was added with --limit)."""
    found = _comment_flags()
    assert any("--limit" in words for _, words in found), "the scan lost the README's `# -k or --limit`"
    problems = [f"{where}\n    {p}" for where, words in found for p in _check(words)]
    assert not problems, "\n".join(problems)
