"""The ``firewall`` group: show, set, off, scan (the write-time memory firewall, SC-15)."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import click

from ..trust.firewall import ACTIONS, CATEGORIES, FirewallPolicy, screen_record

from .app import cli
from .group import CLIError
from .output import emit_json
from .state import State, pass_state, read_catalog

_ACTION = click.Choice(ACTIONS, case_sensitive=False)


@cli.group(short_help="Show or set the store's write-time firewall (secrets, injected instructions, personal data).")
def firewall() -> None:
    """The write-time memory firewall: every record (and knowledge message) is screened
    before it is embedded or stored. Per category (secret, instruction, pii) the policy says
    reject, redact, flag or allow; it is kept with the store."""


def _describe(policy: Optional[FirewallPolicy]) -> dict[str, Any]:
    return {"enabled": policy is not None, "policy": None if policy is None else policy.to_json()}


def _print(policy: Optional[FirewallPolicy]) -> None:
    if policy is None:
        click.echo("firewall: off (records are stored as written; `oramem firewall set` turns it on)")
        return
    click.echo("firewall: on")
    for category in CATEGORIES:
        click.echo(f"  {category:<12} {policy.action(category)}")
    trust = ", ".join(f"{k}={v}" for k, v in sorted(policy.trust.items())) or "-"
    click.echo(f"  {'trust':<12} {trust} (other sources: {policy.default_trust})")
    if policy.detectors:
        click.echo(f"  {'detectors':<12} {', '.join(policy.detectors)}")


@firewall.command(name="show")
@pass_state
def firewall_show(state: State) -> None:
    """Show the store's firewall policy."""
    store = state.open(create=False, reading=True)
    policy = store.get_firewall()
    if state.json:
        emit_json(_describe(policy))
    else:
        _print(policy)


def _trust_pairs(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        source, sep, label = value.partition("=")
        if not sep or not source or not label:
            raise CLIError(f"--trust {value!r}: give SOURCE=LABEL, e.g. --trust web=low", 2)
        out[source] = label
    return out


@firewall.command(name="set")
@click.option("--secret", type=_ACTION, help="What to do with API keys, tokens, private keys, card numbers (default redact).")
@click.option("--instruction", type=_ACTION, help="What to do with text that tries to steer the agent (default flag).")
@click.option("--pii", type=_ACTION, help="What to do with e-mail addresses, phone numbers, SSNs, IBANs (default allow).")
@click.option("--trust", "trust", multiple=True, metavar="SOURCE=LABEL",
              help="Trust label of a source (metadata 'source', else the message role); repeat per source.")
@click.option("--clear-trust", is_flag=True, help="Forget the trust labels set before (then apply --trust).")
@click.option("--default-trust", help="Trust label of other sources (default 'unrated').")
@pass_state
def firewall_set(state: State, secret: Optional[str], instruction: Optional[str], pii: Optional[str],
                 trust: tuple[str, ...], clear_trust: bool, default_trust: Optional[str]) -> None:
    """Turn the firewall on, or change its policy; options not given keep their value (or
    the default when the firewall was off). Records already stored are not rescreened."""
    store = state.open(create=True)
    current = store.get_firewall() or FirewallPolicy()
    labels = {} if clear_trust else dict(current.trust)
    labels.update(_trust_pairs(trust))
    try:
        policy = FirewallPolicy(
            secret=(secret or current.secret).lower(),
            instruction=(instruction or current.instruction).lower(),
            pii=(pii or current.pii).lower(),
            detectors=current.detectors,
            trust=labels,
            default_trust=default_trust if default_trust is not None else current.default_trust,
        )
    except (TypeError, ValueError) as exc:
        raise CLIError(str(exc).replace("default_trust", "--default-trust"), 2) from None
    store.set_firewall(policy)
    if state.json:
        emit_json(_describe(policy))
    else:
        _print(policy)


@firewall.command(name="off")
@pass_state
def firewall_off(state: State) -> None:
    """Turn the firewall off: later records are stored as written (their verdicts stay)."""
    store = state.open(create=False)
    store.set_firewall(None)
    if state.json:
        emit_json(_describe(None))
    else:
        _print(None)


@firewall.command(name="scan")
@click.argument("texts", nargs=-1)
@click.option("--source", default="api", show_default=True, help="Source label to judge the text as.")
@pass_state
def firewall_scan(state: State, texts: tuple[str, ...], source: str) -> None:
    """Screen TEXT (or stdin) under the store's policy (the default policy when the store has
    none) without storing anything: what would be found, and what would be stored. Exits 1
    when the policy would reject it. Matched text is never printed."""
    items = list(texts)
    if not items or items == ["-"]:
        if sys.stdin is None or (sys.stdin.isatty() and not items):
            raise CLIError("give the text as arguments or pipe it on stdin", 2)
        items = [sys.stdin.read()]
    has_store = state.db != ":memory:" and os.path.exists(state.db) and state.store_key() in read_catalog(state.db)
    store = state.open(create=False, reading=True) if has_store else None
    policy = (store.get_firewall() if store is not None else None) or FirewallPolicy()
    detectors = policy.active_detectors()
    category = {d.name: d.category for d in detectors}
    results: list[dict[str, Any]] = []
    for text in items:
        s = screen_record(policy, detectors, [text], {"source": source}, None)
        results.append({
            "verdict": "rejected" if s.rejected else s.verdict,
            "findings": [{"detector": n, "category": category[n], "action": policy.action(category[n])} for n in s.findings],
            "stored_as": None if s.rejected else s.texts[0],
            "trust": None if s.rejected else (s.metadata or {})["oramem_firewall"]["trust"],
        })
    if state.json:
        emit_json({"results": results})
    else:
        for i, r in enumerate(results, 1):
            prefix = f"text {i}: " if len(results) > 1 else ""
            click.echo(f"{prefix}{r['verdict']}" + (f" (trust {r['trust']})" if r["trust"] else ""))
            for f in r["findings"]:
                click.echo(f"  {f['detector']:<28} {f['category']:<12} {f['action']}")
            if r["stored_as"] is not None and r["stored_as"] != items[i - 1]:
                click.echo(f"  stored as: {r['stored_as']}")
    if any(r["verdict"] == "rejected" for r in results):
        sys.exit(1)
