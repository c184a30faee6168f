"""Issue 23: Oracle's HYBRID fuses as the SQLite engine does (static checks of
plsql/oramem_search.pkb/.pks; static-checked, not run against Oracle)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from oramem.sqlite import keyword as K

REPO = Path(__file__).resolve().parents[2]
BODY = (REPO / "plsql" / "oramem_search.pkb").read_text()
SPEC = (REPO / "plsql" / "oramem_search.pks").read_text()


def _constant(name: str) -> str:
    m = re.search(rf"{name}\s+CONSTANT\s+[A-Z_0-9() ]+:=\s*([^;]+);", SPEC)
    assert m, name
    return m.group(1).strip()


def test_defaults_match_hybrid_config():
    cfg = K.HybridConfig()
    assert _constant("gc_fusion") == f"'{cfg.fusion}'"
    assert float(_constant("gc_vector_weight")) == cfg.vector_weight
    assert float(_constant("gc_keyword_weight_gated")) == cfg.keyword_weight == K.KEYWORD_WEIGHT_GATED
    assert float(_constant("gc_rrf_k_gated")) == cfg.rrf_k == K.RRF_K_GATED
    assert float(_constant("gc_keyword_weight")) == K.HybridConfig(fusion="score").keyword_weight == K.KEYWORD_WEIGHT_SCORE
    assert float(_constant("gc_rrf_k")) == K.HybridConfig(fusion="rrf").rrf_k
    assert float(_constant("gc_keyword_weight_rrf")) == K.HybridConfig(fusion="rrf").keyword_weight
    assert int(_constant("gc_vector_ref_rank")) == K.VECTOR_REFERENCE_RANK
    assert float(_constant("gc_keyword_z_floor")) == K.KEYWORD_Z_FLOOR
    assert float(_constant("gc_keyword_z_span")) == K.KEYWORD_Z_SPAN
    assert float(_constant("gc_gated_z_floor")) == K.GATED_Z_FLOOR
    assert float(_constant("gc_gated_z_span")) == K.GATED_Z_SPAN
    assert int(_constant("gc_gate_sample")) == K.GATE_SAMPLE
    assert int(_constant("gc_gated_coverage_full")) == K.GATED_COVERAGE_FULL


def test_legs_carry_their_distances():
    keys = BODY[BODY.index("FUNCTION keys_sql"):BODY.index("END keys_sql")]
    assert "JSON_ARRAY(b.record_type, b.record_id, b.dist)" in keys


def test_score_fusion_is_the_sqlite_rule():
    hybrid = BODY[BODY.index("a hybrid search needs query_text"):]
    # the fusion rule is validated, never silently replaced
    assert "IF l_fusion NOT IN ('gated-rrf', 'score', 'rrf') THEN" in hybrid
    # vector leg: (sim - ref) / (top - ref) clamped, ref at gc_vector_ref_rank or the last
    assert "GREATEST(0, LEAST(1, (sim - ref) / (top - ref)))" in hybrid
    assert "MAX(CASE WHEN rn = LEAST(:vref, cnt) THEN sim END) OVER () AS ref" in hybrid
    assert "add_bind(l_run_binds, 'vref', 'N', in_num => gc_vector_ref_rank);" in hybrid
    # keyword leg: s / s_top, and the strength gate from z = (max - mean) / stddev_pop
    assert "s / MAX(s) OVER ()" in hybrid
    assert "(MAX(s) - AVG(s)) / NULLIF(STDDEV_POP(s), 0) - l_zfloor) / l_zspan" in hybrid
    assert "l_zfloor := CASE l_fusion WHEN 'gated-rrf' THEN gc_gated_z_floor ELSE gc_keyword_z_floor END;" in hybrid
    assert "l_zspan  := CASE l_fusion WHEN 'gated-rrf' THEN gc_gated_z_span ELSE gc_keyword_z_span END;" in hybrid
    assert "add_bind(l_run_binds, 'wk', 'N', in_num => l_wk * l_gate);" in hybrid
    assert "add_bind(l_run_binds, 'wsum', 'N', in_num => l_wv + l_wk * l_gate);" in hybrid
    assert "ROUND(1 - (:wv * NVL(v.nv, 0) + :wk * NVL(t.nk, 0)) / :wsum, 12)" in hybrid
    # keyword only (vector weight 0): the keyword order as it is
    assert "IF l_wv = 0 OR (l_fusion = 'gated-rrf' AND l_vcount = 0) THEN\n               l_gate := 1;" in hybrid
    assert hybrid.count("ORDER BY 3, NLSSORT(NVL(v.record_type, t.record_type), ''NLS_SORT=BINARY'')") == 2


def test_gated_rrf_is_the_sqlite_rule():
    # issue 23: the default 'gated-rrf' = the rrf SQL with the keyword weight times the
    # strength gate, which is 1 with no vector weight or an empty vector leg (the guard)
    hybrid = BODY[BODY.index("a hybrid search needs query_text"):]
    assert "l_fusion     VARCHAR2(16 CHAR);" in BODY and "LOWER(SUBSTR(l_cfg.get_string('fusion'), 1, 16))" in hybrid
    assert "WHEN 'gated-rrf' THEN gc_keyword_weight_gated" in hybrid
    assert "hybrid_number(l_cfg, 'rrf_k', CASE l_fusion WHEN 'gated-rrf' THEN gc_rrf_k_gated ELSE gc_rrf_k END)" in hybrid
    gate = hybrid[hybrid.index("l_gate := 1;\n         l_zfloor"):hybrid.index("IF l_fusion IN ('rrf', 'gated-rrf') THEN")]
    assert "SELECT COUNT(*) INTO l_vcount" in gate and "JSON_TABLE(l_vkeys, '$[*]'" in gate
    rrf = hybrid[hybrid.index("IF l_fusion IN ('rrf', 'gated-rrf') THEN"):]
    assert "add_bind(l_run_binds, 'wk', 'N', in_num => l_wk * l_gate);" in rrf.split("ELSE\n            -- each leg")[0]
    assert ("add_bind(l_run_binds, 'top', 'N', in_num => (l_wv + l_wk * l_gate) / (l_rrf_k + 1));"
            in rrf.split("ELSE\n            -- each leg")[0])


def test_the_gate_reads_a_fixed_sample_of_the_keyword_leg():
    """The strength gate's z comes from the keyword leg's first gc_gate_sample matches (best
    first), as GATE_SAMPLE on SQLite: the leg is max(10 k, 200) deep, so a z over all of it
    changed the top ranks with k."""
    hybrid = BODY[BODY.index("a hybrid search needs query_text"):]
    assert "JSON_TABLE(l_tkeys, '$[*]' COLUMNS (rn FOR ORDINALITY, dist NUMBER PATH '$[2]')) j" in hybrid
    assert "WHERE  j.rn <= gc_gate_sample" in hybrid


def _plsql_coverage(score: float, terms: int) -> float:
    """oramem_search.coverage_factor transcribed (its text is checked below)."""
    if terms < 2:
        return 0.0
    held = min(terms, math.ceil(max(0.0, min(100.0, round(score, 6))) * terms / 100))
    if held < 2:
        return 0.0
    return min(1.0, (held - 1) / (min(int(_constant("gc_gated_coverage_full")), terms) - 1))


def test_the_coverage_gate_is_the_sqlite_rule_read_off_the_accum_bands():
    """Issue 23: gated-rrf's coverage gate. Oracle Text scores a row matching m of n equally
    weighted ACCUM operands in the m-th of n equal ranges of 1-100 (Oracle Text Reference 26,
    "ACCUMulate Scoring"); the keyword query has one operand per distinct word, so the first
    record's best score gives the words it holds, and the factor is coverage_factor's."""
    body = BODY[BODY.index("FUNCTION coverage_factor"):BODY.index("END coverage_factor")]
    assert "l_terms PLS_INTEGER := NVL(REGEXP_COUNT(in_query, ' ACCUM ', 1, 'c') + 1, 0);" in body
    assert "SELECT GREATEST(0, LEAST(100, ROUND(100 * (1 - j.dist), 6)))" in body and "WHERE  j.rn = 1;" in body
    assert "l_held := LEAST(l_terms, CEIL(l_score * l_terms / 100));" in body
    assert "RETURN LEAST(1, (l_held - 1) / (LEAST(gc_gated_coverage_full, l_terms) - 1));" in body
    assert body.count("RETURN 0;") == 3
    for terms in range(1, 9):
        for held in range(0, terms + 1):
            # every integer score of the band of `held` words (held 0: no match, score 0)
            band = [0] if held == 0 else range(math.floor((held - 1) * 100 / terms) + 1, math.floor(held * 100 / terms) + 1)
            for score in band:
                assert _plsql_coverage(score, terms) == K.coverage_factor(held, terms), (score, terms, held)
    # applied to the strength gate only for gated-rrf, both legs non-empty
    hybrid = BODY[BODY.index("a hybrid search needs query_text"):]
    assert ("IF l_fusion = 'gated-rrf' AND l_gate > 0 AND l_vcount > 0 THEN\n"
            "                  l_gate := l_gate * coverage_factor(l_tkeys, l_query);") in hybrid
    # the keyword query has one ACCUM operand per distinct lower-cased word
    query = BODY[BODY.index("FUNCTION keyword_query"):BODY.index("END keyword_query")]
    assert "l_piece := CASE WHEN l_count > 0 THEN ' ACCUM ' END" in query and "IF NOT l_seen.EXISTS(l_tok) THEN" in query
    assert "l_tok := LOWER(SUBSTR(REGEXP_SUBSTR(in_text, '[[:alnum:]]+', 1, l_pos), 1, 64));" in query
