CREATE OR REPLACE PACKAGE oramem_search
AUTHID DEFINER
AS
   /*
    * oramem_search: top-k retrieval over one store - VECTOR (HNSW, FETCH APPROX, with an
    * exact fallback), KEYWORD (Oracle Text: CONTAINS over escaped words on a keyword
    * store's CONTEXT index; DBMS_HYBRID_VECTOR.SEARCH in pure keyword mode on a hybrid
    * store's hybrid vector index) and HYBRID (gated reciprocal-rank fusion - or, on request,
    * relative score fusion or plain reciprocal-rank fusion - of the VECTOR and KEYWORD legs,
    * the SQLite engine's algorithms and parameters; gc_fusion).
    *
    * Scope, record types, expiry and the metadata filter are evaluated in the SAME query
    * as the ranking, before the top-k cut (SC-6.5). VECTOR runs the approximate query
    * first (chunk top-(k * gc_overfetch) by the HNSW index, best chunk per record); when
    * it yields fewer than k records it counts the candidate chunks (bounded) and runs one
    * wider approximate round or, when that round would fetch about all of them, the exact
    * query. KEYWORD on a hybrid store over-fetches and widens topN (x4, up to
    * gc_max_hybrid_topn) until k records pass the filters.
    *
    * Results are returned as one JSON CLOB: python-oracledb thin mode reads it in one
    * round trip (callfunc with DB_TYPE_CLOB, or fetch_lobs=False) and PL/SQL callers can
    * JSON_TABLE it; a SYS_REFCURSOR would need a fetch round trip plus LOB reads.
    *
    * Distances: VECTOR = cosine distance (0..2, ascending); KEYWORD = 1 - score/100;
    * HYBRID = 1 - fused score / its best possible value (gated-rrf by default, score or rrf on
    * request; docs/oracle-search.md), clamped to [0, 1]. Ties by record_type, then id.
    * Commit: never; read-only.
    */

   gc_overfetch          CONSTANT PLS_INTEGER := 4;
   gc_target_accuracy    CONSTANT PLS_INTEGER := 95;
   gc_max_k              CONSTANT PLS_INTEGER := 10000;
   gc_max_hybrid_topn    CONSTANT PLS_INTEGER := 10000;
   gc_max_keyword_tokens CONSTANT PLS_INTEGER := 64;
   gc_max_query_bytes    CONSTANT PLS_INTEGER := 4000;   -- keyword_query result, in bytes
   -- HYBRID fusion defaults (= oramem.sqlite.keyword.HybridConfig) and the depth cap
   gc_fusion             CONSTANT VARCHAR2(16 CHAR) := 'gated-rrf';
   gc_vector_weight      CONSTANT NUMBER      := 1.0;
   gc_keyword_weight     CONSTANT NUMBER      := 3.0;    -- fusion 'score', at full strength
   gc_keyword_weight_gated CONSTANT NUMBER    := 3.0;    -- fusion 'gated-rrf', at full strength
   gc_keyword_weight_rrf CONSTANT NUMBER      := 0.7;    -- fusion 'rrf'
   gc_rrf_k              CONSTANT NUMBER      := 10;     -- fusion 'rrf'
   gc_rrf_k_gated        CONSTANT NUMBER      := 1;      -- fusion 'gated-rrf'
   gc_vector_ref_rank    CONSTANT PLS_INTEGER := 20;     -- score fusion: sim there maps to 0
   gc_keyword_z_floor    CONSTANT NUMBER      := 1.5;    -- score fusion: keyword strength gate
   gc_keyword_z_span     CONSTANT NUMBER      := 2.0;
   gc_gated_z_floor      CONSTANT NUMBER      := 1.5;    -- gated-rrf: its keyword strength gate
   gc_gated_z_span       CONSTANT NUMBER      := 4.0;
   gc_gate_sample        CONSTANT PLS_INTEGER := 200;    -- the gate reads the keyword leg's first 200 matches
   gc_gated_coverage_full CONSTANT PLS_INTEGER := 4;     -- gated-rrf: query words its first record holds, in full
   gc_max_fusion_depth   CONSTANT PLS_INTEGER := 10000;
   -- VECTOR: the request's tail_handicap (cosine distance added to a record's later chunks,
   -- chunk_no > 1; a record ranks by its first chunk, or a later chunk plus it, whichever is
   -- nearer; SC-6.4, issue 28) that Python sends for a store whose chunk policy has tail
   -- windows (= oramem.chunking.TAIL_HANDICAP); a request without it ranks by the best chunk
   gc_tail_handicap      CONSTANT NUMBER      := 0.10;

   /*
    * search_json: run the search request JSON (README "Search request"; maps
    * oramem.requests.SearchRequest) and return a JSON array
    *   [{"record": <Record object>, "distance": <number>}, ...]
    * with at most k elements, ascending distance, ties by record_type then id, each
    * record once (its best chunk).
    * KEYWORD and HYBRID compile the query with the store's keyword_language (ORAMEM_STORES;
    * see keyword_query); an optional request "keyword_language" must equal it (-20001 else). HYBRID reads an optional "hybrid" object {"fusion": "gated-rrf" (or "score", "rrf"),
    * "vector_weight": 1.0, "keyword_weight": 3.0 (0.7 for fusion "rrf"), "rrf_k": 1 (10 for "rrf"), "depth": null} (absent keys = these defaults; depth null =
    * max(10 k, 200) capped at gc_max_fusion_depth, else max(k, depth)) and uses
    * query_vector when given, else query_text embedded with the store's embedding_model.
    * Errors: -20002 bad JSON, a scope dimension that is not {"match": ..., "value": ...}
    *  (match / value a string or null; README "Scope"); -20001 k < 1 or > gc_max_k, missing query_text /
    *  query_vector for the strategy, a bad "hybrid" value; -20003 unknown record type; -20004 bad filter;
    *  -20006 query_vector dimension; -20009 strategy not supported by this store
    *  (SC-6.6); -20012 Oracle Text rejected the query; -20301 Oracle Text / hybrid
    *  missing; store errors (-20101/-20104/-20106).
    * Commit: never.
    */
   FUNCTION search_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN CLOB;

   /*
    * keyword_query: the Oracle Text query compiled from free text (ORACLE_NOTES 4.4):
    * words = runs of letters and digits (any script), lower-cased, each once, at most
    * gc_max_keyword_tokens of <= 64 characters, joined with ' ACCUM '.
    *   in_language 'english' (the default, as a new SQLite store): English stopwords (the
    *     SQLite engine's list) are dropped unless nothing else remains; a word of letters
    *     only that is not an Oracle Text reserved word goes through the stem operator
    *     ($word: the words of the same stem); any other word is escaped as {word}.
    *   in_language 'none': every word, each escaped as {word} ('}' doubled).
    * Whole words only up to gc_max_query_bytes bytes (later words are dropped). Returns
    * NULL when no word remains (the caller then returns no results).
    * Errors: -20001 in_language not english or none.
    * Commit: never (pure function).
    */
   FUNCTION keyword_query(
      in_text     IN VARCHAR2,
      in_language IN VARCHAR2 DEFAULT 'english'
   ) RETURN VARCHAR2;
END oramem_search;
/
