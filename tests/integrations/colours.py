"""The comparison both adapter parity tests make (red32): the sync and the async colour of an
adapter, driven through the same Bob-against-Alice script on two fresh stores, answer every
step alike and leave the same records; the script reaches both kinds of answer."""

from __future__ import annotations

from typing import Any, Sequence


def assert_colours_agree(sync_out: Sequence[Any], async_out: Sequence[Any], script: Sequence[Any],
                         sync_records: Any, async_records: Any) -> None:
    for step, (s, a) in enumerate(zip(sync_out, async_out)):
        assert a == s, (step, script[step][:2])
    assert len(async_out) == len(sync_out)
    assert async_records == sync_records
    # Bob's own writes and reads succeed and Alice's are refused: a script of one kind of
    # answer would compare that kind only
    assert any(o[0] == "ok" for o in sync_out) and any(o[0] == "error" for o in sync_out)
