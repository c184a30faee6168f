CREATE OR REPLACE PACKAGE BODY oramem_search
AS
   e_json_syntax EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_json_syntax, -40441);
   e_text_query  EXCEPTION;                   -- error in ODCIIndexStart (bad Text query)
   PRAGMA EXCEPTION_INIT(e_text_query, -29902);
   -- bytes kept free for the SQL around the candidate filter (rank query + result_sql with
   -- oramem_registry.record_json_sql: about 2,500 bytes today)
   gc_sql_reserve  CONSTANT PLS_INTEGER := 6000;
   e_plsql_compile EXCEPTION;                 -- a dynamic block failed to compile (missing grant)
   PRAGMA EXCEPTION_INIT(e_plsql_compile, -6550);

   PROCEDURE bad_argument(
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_invalid_argument, in_message);
   END bad_argument;

   PROCEDURE add_bind(
      io_binds IN OUT NOCOPY oramem_filter.bind_list_t,
      in_name  IN VARCHAR2,
      in_kind  IN VARCHAR2,
      in_str   IN VARCHAR2 DEFAULT NULL,
      in_num   IN NUMBER   DEFAULT NULL,
      in_clob  IN CLOB     DEFAULT NULL
   )
   IS
      l_n PLS_INTEGER := io_binds.COUNT + 1;
   BEGIN
      io_binds(l_n).name     := in_name;
      io_binds(l_n).kind     := in_kind;
      io_binds(l_n).str_val  := in_str;
      io_binds(l_n).num_val  := in_num;
      io_binds(l_n).clob_val := in_clob;
   END add_bind;

   FUNCTION keyword_query(
      in_text IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_tok    VARCHAR2(4000 CHAR);
      l_piece  VARCHAR2(4000 CHAR);
      l_query  VARCHAR2(32767);
      l_count  PLS_INTEGER := 0;
      l_pos    PLS_INTEGER := 1;
   BEGIN
      IF in_text IS NULL THEN
         RETURN NULL;
      END IF;
      LOOP
         -- tokens = maximal runs of letters and digits (any script); all else separates.
         -- Cut to 64 characters in the same expression: a longer run must not reach l_tok.
         l_tok := SUBSTR(REGEXP_SUBSTR(in_text, '[[:alnum:]]+', 1, l_pos), 1, 64);
         EXIT WHEN l_tok IS NULL OR l_count >= gc_max_keyword_tokens;
         l_pos := l_pos + 1;
         -- {...} escapes the whole token; inside braces only '}' is special (written '}}')
         l_piece := CASE WHEN l_count > 0 THEN ' ACCUM ' END || '{' || REPLACE(l_tok, '}', '}}') || '}';
         -- whole tokens only, and at most gc_max_query_bytes BYTES: the query is bound as a
         -- VARCHAR2(4000 CHAR) (byte semantics), so a character cut could overflow it with
         -- multibyte text or split a {token} (review F11)
         EXIT WHEN NVL(LENGTHB(l_query), 0) + LENGTHB(l_piece) > gc_max_query_bytes;
         l_count := l_count + 1;
         l_query := l_query || l_piece;
      END LOOP;
      RETURN l_query;
   END keyword_query;

   -- The query vector as JSON array text, checked against the store dimension.
   FUNCTION query_vector(
      in_req   IN JSON_OBJECT_T,
      in_dim   IN NUMBER
   ) RETURN CLOB
   IS
      l_arr JSON_ARRAY_T;
   BEGIN
      IF NOT in_req.has('query_vector') OR in_req.get('query_vector').is_null THEN
         bad_argument('a vector search needs query_vector');
      END IF;
      IF NOT in_req.get('query_vector').is_array THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
            'query_vector must be a JSON array of numbers');
      END IF;
      l_arr := in_req.get_array('query_vector');
      IF l_arr.get_size <> in_dim THEN
         oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
            'query_vector has ' || l_arr.get_size || ' dimensions; the store''s vector_dim is '
            || in_dim);
      END IF;
      FOR i IN 0 .. l_arr.get_size - 1 LOOP
         IF NOT l_arr.get(i).is_number THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
               'query_vector must contain numbers only');
         END IF;
      END LOOP;
      RETURN l_arr.to_clob;
   END query_vector;

   -- Wrap a per-record ranking subquery (record_type, record_id, dist; at most k rows)
   -- into the result document {"n": <rows>, "results": [{"record", "distance"}...]}.
   FUNCTION result_sql(
      in_rank_sql IN VARCHAR2,
      in_rec_tab  IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN 'SELECT JSON_OBJECT(''n'' VALUE COUNT(*), ''results'' VALUE JSON_ARRAYAGG('
          || 'JSON_OBJECT(''record'' VALUE ' || oramem_registry.record_json_sql('r')
          || ' FORMAT JSON, ''distance'' VALUE b.dist RETURNING CLOB)'
          || ' ORDER BY b.dist, b.record_type, b.record_id RETURNING CLOB) RETURNING CLOB)'
          || ' FROM (' || in_rank_sql || ') b JOIN ' || in_rec_tab || ' r'
          || ' ON (r.record_type = b.record_type AND r.record_id = b.record_id)';
   END result_sql;

   FUNCTION search_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN CLOB
   IS
      l_store      oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_rec_tab    VARCHAR2(200 CHAR);
      l_chk_tab    VARCHAR2(200 CHAR);
      l_elem       JSON_ELEMENT_T;
      l_req        JSON_OBJECT_T;
      l_strategy   VARCHAR2(16 CHAR);
      l_k          NUMBER;
      l_exact      BOOLEAN := FALSE;
      l_types      JSON_ARRAY_T;
      l_type_list  VARCHAR2(4000 CHAR);
      l_scope      JSON_OBJECT_T;
      l_cond       VARCHAR2(32767);
      l_rec_where  VARCHAR2(32767);
      l_candidates VARCHAR2(32767);
      l_binds      oramem_filter.bind_list_t;
      l_run_binds  oramem_filter.bind_list_t;
      l_text       VARCHAR2(32767);
      l_query      VARCHAR2(32767);
      l_qv         CLOB;
      l_dim        VARCHAR2(10 CHAR);
      l_rank       VARCHAR2(32767);
      l_out        CLOB;
      l_doc        JSON_OBJECT_T;
      l_n          NUMBER;
      l_topn       PLS_INTEGER;
      l_hreq       JSON_OBJECT_T;
      l_hres       CLOB;
      l_raw        PLS_INTEGER;
      l_sub        JSON_OBJECT_T;
      l_values     JSON_ARRAY_T;
      l_supported  VARCHAR2(100 CHAR);
   BEGIN
      l_rec_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records);
      l_chk_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks);
      IF in_request IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'search request is empty');
      END IF;
      BEGIN
         l_elem := JSON_ELEMENT_T.parse(in_request);
      EXCEPTION
         WHEN e_json_syntax THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'search request is not valid JSON');
      END;
      IF NOT l_elem.is_object THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'search request must be a JSON object');
      END IF;
      l_req := TREAT(l_elem AS JSON_OBJECT_T);

      -- strategy (SC-6.4, SC-6.6)
      l_strategy := 'vector';
      IF l_req.has('strategy') AND l_req.get('strategy').is_string THEN
         l_strategy := LOWER(l_req.get_string('strategy'));
      END IF;
      l_supported := RTRIM(
            CASE WHEN l_store.vector_dim IS NOT NULL THEN 'vector, ' END
         || CASE WHEN l_store.has_text_index = 1 OR l_store.has_hybrid_index = 1 THEN 'keyword, ' END
         || CASE WHEN l_store.has_hybrid_index = 1 THEN 'hybrid, ' END, ', ');
      IF l_strategy NOT IN ('vector', 'keyword', 'hybrid')
         OR (l_strategy = 'vector' AND l_store.vector_dim IS NULL)
         OR (l_strategy = 'keyword' AND l_store.has_text_index = 0 AND l_store.has_hybrid_index = 0)
         OR (l_strategy = 'hybrid' AND l_store.has_hybrid_index = 0)
      THEN
         oramem_errors.raise_error(oramem_errors.gc_strategy_unsupported,
            'search strategy ' || SUBSTR(l_strategy, 1, 16) || ' is not supported by store '
            || l_store.memory_store_id || ' (supported: ' || NVL(l_supported, 'none')
            || '); open the store with that search_strategy under CREATE_IF_NECESSARY to add it');
      END IF;

      -- k
      IF NOT l_req.has('k') OR NOT l_req.get('k').is_number THEN
         bad_argument('k is required (an integer >= 1)');
      END IF;
      l_k := l_req.get_number('k');
      IF l_k < 1 OR l_k > gc_max_k OR l_k <> TRUNC(l_k) THEN
         bad_argument('k must be an integer between 1 and ' || gc_max_k);
      END IF;
      IF l_req.has('exact') AND l_req.get('exact').is_boolean THEN
         l_exact := l_req.get_boolean('exact');
      END IF;

      -- candidate records: types, expiry, scope, metadata filter (before the top-k cut)
      l_rec_where := '(r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))';
      IF l_req.has('record_types') AND l_req.get('record_types').is_array THEN
         l_types := l_req.get_array('record_types');
         FOR i IN 0 .. l_types.get_size - 1 LOOP
            IF NOT l_types.get(i).is_string THEN
               oramem_errors.raise_error(oramem_errors.gc_invalid_record_type,
                  'record_types must be a list of record type names');
            END IF;
            -- check_record_type returns one of eight fixed names: safe as literals
            l_type_list := l_type_list || CASE WHEN i > 0 THEN ', ' END || ''''
                           || oramem_registry.check_record_type(l_types.get_string(i), 'record_types')
                           || '''';
         END LOOP;
         IF l_type_list IS NOT NULL THEN
            l_rec_where := l_rec_where || ' AND r.record_type IN (' || l_type_list || ')';
         END IF;
      END IF;
      FOR d IN 1 .. 3 LOOP
         DECLARE
            l_dim_name VARCHAR2(10 CHAR) := CASE d WHEN 1 THEN 'thread' WHEN 2 THEN 'user' ELSE 'agent' END;
         BEGIN
            IF l_req.has(l_dim_name) AND l_req.get(l_dim_name).is_object THEN
               l_scope := l_req.get_object(l_dim_name);
               l_cond := oramem_filter.scope_condition(
                            l_dim_name,
                            CASE WHEN l_scope.has('match') AND l_scope.get('match').is_string
                                 THEN l_scope.get_string('match') END,
                            CASE WHEN l_scope.has('value') AND l_scope.get('value').is_string
                                 THEN l_scope.get_string('value') END,
                            'r', l_binds);
               IF l_cond IS NOT NULL THEN
                  l_rec_where := l_rec_where || ' AND ' || l_cond;
               END IF;
            END IF;
         END;
      END LOOP;
      IF l_req.has('metadata_filter') AND NOT l_req.get('metadata_filter').is_null THEN
         IF NOT l_req.get('metadata_filter').is_object THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_filter,
               'metadata_filter must be a JSON object or null');
         END IF;
         BEGIN
            l_rec_where := l_rec_where || ' AND '
                           || oramem_filter.compile_filter(l_req.get_object('metadata_filter').to_clob,
                                                           'r.metadata', l_binds);
         EXCEPTION
            WHEN VALUE_ERROR THEN   -- the statement is assembled in VARCHAR2(32767) (review F12)
               oramem_errors.raise_error(oramem_errors.gc_invalid_filter,
                  'metadata_filter is too large: the compiled search statement would exceed 32767 bytes; '
                  || 'use fewer or shorter conditions');
         END;
      END IF;
      -- the ranking and result wrappers around l_candidates take < gc_sql_reserve bytes
      IF LENGTHB(l_rec_where) + LENGTHB(l_rec_tab) + 100 > 32767 - gc_sql_reserve THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_filter,
            'metadata_filter is too large: the compiled search statement would exceed 32767 bytes; '
            || 'use fewer or shorter conditions');
      END IF;
      l_candidates := '(c.record_type, c.record_id) IN (SELECT r.record_type, r.record_id FROM '
                      || l_rec_tab || ' r WHERE ' || l_rec_where || ')';

      IF l_req.has('query_text') AND l_req.get('query_text').is_string THEN
         l_text := SUBSTR(l_req.get_string('query_text'), 1, 32767);
      END IF;

      IF l_strategy = 'vector' THEN
         l_qv  := query_vector(l_req, l_store.vector_dim);
         l_dim := TO_CHAR(TRUNC(l_store.vector_dim), 'FM99990');
         IF NOT l_exact THEN
            -- Approximate: chunk top-(k * overfetch) by the HNSW index (FETCH APPROX, the
            -- index metric, no aggregate over the distance), best chunk per record outside.
            l_rank := 'SELECT a.record_type, a.record_id, MIN(a.dist) AS dist FROM ('
                   || 'SELECT c.record_type, c.record_id, VECTOR_DISTANCE(c.embedding, '
                   || 'TO_VECTOR(:qv, ' || l_dim || ', FLOAT32), COSINE) AS dist FROM '
                   || l_chk_tab || ' c WHERE ' || l_candidates
                   || ' ORDER BY VECTOR_DISTANCE(c.embedding, TO_VECTOR(:qv, ' || l_dim
                   || ', FLOAT32), COSINE) FETCH APPROX FIRST :nfetch ROWS ONLY WITH TARGET ACCURACY '
                   || TO_CHAR(gc_target_accuracy) || ') a WHERE a.dist IS NOT NULL'
                   || ' GROUP BY a.record_type, a.record_id'
                   || ' ORDER BY MIN(a.dist), a.record_type, a.record_id FETCH FIRST :k ROWS ONLY';
            l_run_binds := l_binds;
            -- one bind name for both occurrences: DBMS_SQL binds by name (review F19)
            add_bind(l_run_binds, 'qv', 'C', in_clob => l_qv);
            add_bind(l_run_binds, 'nfetch', 'N', in_num => LEAST(l_k * gc_overfetch, gc_max_k * gc_overfetch));
            add_bind(l_run_binds, 'k', 'N', in_num => l_k);
            l_out := oramem_filter.query_clob(result_sql(l_rank, l_rec_tab), l_run_binds);
            l_doc := JSON_OBJECT_T.parse(l_out);
            l_n := l_doc.get_number('n');
         END IF;
         IF l_exact OR l_n < l_k THEN
            -- Exact: every candidate chunk; returns k records whenever k match (SC-6.5).
            l_rank := 'SELECT c.record_type, c.record_id, MIN(VECTOR_DISTANCE(c.embedding, '
                   || 'TO_VECTOR(:qv1, ' || l_dim || ', FLOAT32), COSINE)) AS dist FROM '
                   || l_chk_tab || ' c WHERE c.embedding IS NOT NULL AND ' || l_candidates
                   || ' GROUP BY c.record_type, c.record_id'
                   || ' ORDER BY 3, 1, 2 FETCH FIRST :k ROWS ONLY';
            l_run_binds := l_binds;
            add_bind(l_run_binds, 'qv1', 'C', in_clob => l_qv);
            add_bind(l_run_binds, 'k', 'N', in_num => l_k);
            l_out := oramem_filter.query_clob(result_sql(l_rank, l_rec_tab), l_run_binds);
            l_doc := JSON_OBJECT_T.parse(l_out);
         END IF;

      ELSIF l_strategy = 'keyword' THEN
         l_query := keyword_query(l_text);
         IF l_text IS NULL THEN
            bad_argument('a keyword search needs query_text');
         END IF;
         IF l_query IS NULL THEN
            RETURN TO_CLOB('[]');   -- no searchable word: never call CONTAINS (ORACLE_NOTES 4.4)
         END IF;
         l_rank := 'SELECT s.record_type, s.record_id,'
                || ' 1 - LEAST(MAX(s.sc), 100) / 100 AS dist FROM ('
                || 'SELECT c.record_type, c.record_id, SCORE(1) AS sc FROM ' || l_chk_tab || ' c'
                || ' WHERE CONTAINS(c.chunk_text, :q, 1) > 0 AND ' || l_candidates || ') s'
                || ' GROUP BY s.record_type, s.record_id'
                || ' ORDER BY 3, 1, 2 FETCH FIRST :k ROWS ONLY';
         l_run_binds := l_binds;
         add_bind(l_run_binds, 'q', 'S', in_str => l_query);   -- <= gc_max_query_bytes (keyword_query)
         add_bind(l_run_binds, 'k', 'N', in_num => l_k);
         BEGIN
            l_out := oramem_filter.query_clob(result_sql(l_rank, l_rec_tab), l_run_binds);
         EXCEPTION
            WHEN e_text_query THEN
               oramem_errors.log_error('oramem_search.search_json(keyword)', l_store.memory_store_id);
               oramem_errors.raise_error(oramem_errors.gc_invalid_keyword_query,
                  'Oracle Text rejected the keyword query; rephrase it with plain words');
         END;
         l_doc := JSON_OBJECT_T.parse(l_out);

      ELSE  -- hybrid
         IF l_text IS NULL THEN
            bad_argument('a hybrid search needs query_text');
         END IF;
         l_query := keyword_query(l_text);
         l_topn := LEAST(l_k * gc_overfetch, gc_max_hybrid_topn);
         LOOP
            -- Built with JSON_OBJECT_T so that user text is JSON-escaped (ORACLE_NOTES 5.2).
            l_hreq := JSON_OBJECT_T();
            l_hreq.put('hybrid_index_name',
                       oramem_registry.object_name(l_store.memory_store_id, oramem_registry.gc_obj_hybrid));
            -- One construct only: the vector/text sub-elements, never a top-level
            -- search_text as well ("You cannot use both of these search constructs in
            -- one query", 23/vecse/search.html; review F2).
            l_hreq.put('search_scorer', 'RSF');
            IF l_query IS NULL THEN
               l_hreq.put('search_fusion', 'VECTOR_ONLY');
            ELSE
               l_hreq.put('search_fusion', 'UNION');
               l_sub := JSON_OBJECT_T();
               l_sub.put('contains', l_query);
               l_hreq.put('text', l_sub);
            END IF;
            l_sub := JSON_OBJECT_T();
            l_sub.put('search_text', l_text);
            l_hreq.put('vector', l_sub);
            l_sub := JSON_OBJECT_T();
            l_values := JSON_ARRAY_T();
            l_values.append('rowid');
            l_values.append('score');
            l_sub.put('values', l_values);
            l_sub.put('topN', l_topn);
            l_hreq.put('return', l_sub);

            -- SEARCH runs once per round, its CLOB result (23/arpls DBMS_HYBRID_VECTOR:
            -- "fused into a unified result set as CLOB") is counted, then joined. Dynamic
            -- PL/SQL, so the package compiles without DBMS_HYBRID_VECTOR (vector-only DBs).
            BEGIN
               EXECUTE IMMEDIATE 'BEGIN :r := DBMS_HYBRID_VECTOR.SEARCH(JSON(:q)); END;'
                  USING OUT l_hres, IN l_hreq.to_clob;
            EXCEPTION
               WHEN e_plsql_compile THEN
                  oramem_errors.raise_error(oramem_errors.gc_privilege_missing,
                     'DBMS_HYBRID_VECTOR is not executable by the oramem owner; a DBA must run '
                     || 'GRANT EXECUTE ON <owner>.DBMS_HYBRID_VECTOR TO <owner> (a direct grant)');
            END;
            SELECT COUNT(*) INTO l_raw
            FROM   JSON_TABLE(l_hres, '$[*]' COLUMNS (rid VARCHAR2(4000 CHAR) PATH '$.rowid'));
            l_rank := 'SELECT c.record_type, c.record_id,'
                   || ' GREATEST(0, LEAST(1, 1 - MAX(h.score) / 100)) AS dist'
                   || ' FROM JSON_TABLE(:hres, ''$[*]'' COLUMNS ('
                   || 'rid VARCHAR2(4000 CHAR) PATH ''$.rowid'', score NUMBER PATH ''$.score'')) h'
                   || ' JOIN ' || l_chk_tab || ' c ON (c.rowid = CHARTOROWID(h.rid))'
                   || ' WHERE ' || l_candidates
                   || ' GROUP BY c.record_type, c.record_id'
                   || ' ORDER BY 3, 1, 2 FETCH FIRST :k ROWS ONLY';
            l_run_binds := l_binds;
            add_bind(l_run_binds, 'hres', 'C', in_clob => l_hres);
            add_bind(l_run_binds, 'k', 'N', in_num => l_k);
            l_out := oramem_filter.query_clob(result_sql(l_rank, l_rec_tab), l_run_binds);
            l_doc := JSON_OBJECT_T.parse(l_out);
            l_n := l_doc.get_number('n');
            -- Hybrid results are filtered after the index's topN: widen until k records
            -- pass the filters or the cap is reached (documented limitation), but not when
            -- the index already returned fewer than topN rows: a wider topN cannot find
            -- more (review F17).
            EXIT WHEN l_n >= l_k OR l_topn >= gc_max_hybrid_topn OR l_raw < l_topn;
            l_topn := LEAST(l_topn * 4, gc_max_hybrid_topn);
         END LOOP;
      END IF;

      IF l_doc IS NULL OR NOT l_doc.has('results') OR l_doc.get('results').is_null THEN
         RETURN TO_CLOB('[]');
      END IF;
      RETURN l_doc.get_array('results').to_clob;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_search.search_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END search_json;
END oramem_search;
/
