CREATE OR REPLACE PACKAGE BODY oramem_search
AS
   e_json_syntax EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_json_syntax, -40441);
   e_text_query  EXCEPTION;                   -- error in ODCIIndexStart (bad Text query)
   PRAGMA EXCEPTION_INIT(e_text_query, -29902);
   -- The record WHERE, the candidate subquery and every ranking statement around them are
   -- CLOBs, parsed by DBMS_SQL.PARSE's CLOB overload (review S4; F12's 32,767-byte bound on
   -- a VARCHAR2 statement refused filters SQLite accepts); a filter is bounded by
   -- oramem_filter.gc_max_nodes.
   -- query_text characters kept: at most 4 bytes a character in AL32UTF8, so 8191 characters
   -- always fit the VARCHAR2(32767) that holds them (a character SUBSTR of 32767 did not)
   gc_text_chars   CONSTANT PLS_INTEGER := 8191;
   -- VECTOR_EMBEDDING takes VARCHAR2 (SQL Language Reference 23, VECTOR_EMBEDDING): a bind
   -- of at most 4000 bytes under MAX_STRING_SIZE = STANDARD
   gc_embed_bytes  CONSTANT PLS_INTEGER := 4000;
   e_plsql_compile EXCEPTION;                 -- a dynamic block failed to compile (missing grant)
   PRAGMA EXCEPTION_INIT(e_plsql_compile, -6550);

   -- English query stopwords: the SQLite engine's list (oramem.sqlite.keyword, a test keeps
   -- them equal), blank-delimited for INSTR
   gc_english_stopwords CONSTANT VARCHAR2(1000 CHAR) := ' a about above after again against all also am an and any anything are aren as at be because been before being below between both but by can cannot could couldn d did didn do does doesn doing don down during each ever few for from further get got had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself just know let ll m me might more most mustn my myself no nor not now o of off on once only or other ought our ours ourselves out over own please re remember s same shan she should shouldn so some something such t tell than that the their theirs them themselves then there these they thing things this those through to told too under until up ve very was wasn we were weren what when where which while who whom why will with won would wouldn y you your yours yourself yourselves ';
   -- Oracle Text reserved words (Oracle Text Reference 23, Reserved Words and Characters):
   -- never written after the stem operator, always escaped in braces
   gc_text_reserved CONSTANT VARCHAR2(400 CHAR) := ' about accum and bt btg bti btp equiv fuzzy haspath inpath mdata minus near not nt ntg nti ntp or pattern pt rt sqe syn tr trsyn tt within ';

   /*
    * A ranking run (review F19): its row count and its JSON array text - the results
    * [{"record", "distance"}...] or, for a HYBRID leg, the keys [[record_type, record_id]...]
    * - as two columns of one row, so PL/SQL reads the count as a NUMBER and passes the
    * array on as SQL wrote it: no JSON_OBJECT_T parse and to_clob re-serialisation.
    * doc is NULL when nothing ranked (an aggregate over no rows).
    */
   TYPE ranking_t IS RECORD (
      n   NUMBER,
      doc CLOB
   );

   -- F10: ORA-06550 from a dynamic block means a missing grant only when the compile error
   -- is PLS-00201 ("identifier must be declared": an object the definer cannot see, also
   -- for a grant through a role, docs.oracle.com/error-help/db/pls-00201) or PLS-00904
   -- (insufficient privilege to access object); any other PLS- error (a signature or type
   -- change) is re-raised as it is, not reported as a grant problem.
   FUNCTION missing_grant RETURN BOOLEAN
   IS
      l_stack VARCHAR2(4000 CHAR) := DBMS_UTILITY.FORMAT_ERROR_STACK;
   BEGIN
      RETURN INSTR(l_stack, 'PLS-00201') > 0 OR INSTR(l_stack, 'PLS-00904') > 0;
   END missing_grant;

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
      in_text     IN VARCHAR2,
      in_language IN VARCHAR2 DEFAULT 'english'
   ) RETURN VARCHAR2
   IS
      TYPE tok_list_t IS TABLE OF VARCHAR2(64 CHAR) INDEX BY PLS_INTEGER;
      TYPE seen_t IS TABLE OF BOOLEAN INDEX BY VARCHAR2(64 CHAR);
      l_toks    tok_list_t;
      l_seen    seen_t;
      l_tok     VARCHAR2(4000 CHAR);
      l_piece   VARCHAR2(4000 CHAR);
      l_query   VARCHAR2(32767);
      l_count   PLS_INTEGER := 0;
      l_pos     PLS_INTEGER := 1;
      l_english BOOLEAN;
      l_content BOOLEAN := FALSE;
   BEGIN
      IF in_language IS NULL OR in_language NOT IN ('english', 'none') THEN
         bad_argument('keyword_language must be english or none');
      END IF;
      l_english := in_language = 'english';
      IF in_text IS NULL THEN
         RETURN NULL;
      END IF;
      -- words = maximal runs of letters and digits (any script); all else separates. Cut to
      -- 64 characters in the same expression: a longer run must not reach l_tok. Lower-cased
      -- and each word once (as the SQLite engine), at most gc_max_keyword_tokens words.
      LOOP
         l_tok := LOWER(SUBSTR(REGEXP_SUBSTR(in_text, '[[:alnum:]]+', 1, l_pos), 1, 64));
         EXIT WHEN l_tok IS NULL OR l_toks.COUNT >= gc_max_keyword_tokens;
         l_pos := l_pos + 1;
         IF NOT l_seen.EXISTS(l_tok) THEN
            l_seen(l_tok) := TRUE;
            l_toks(l_toks.COUNT + 1) := l_tok;
            l_content := l_content OR INSTR(gc_english_stopwords, ' ' || l_tok || ' ') = 0;
         END IF;
      END LOOP;
      FOR i IN 1 .. l_toks.COUNT LOOP
         l_tok := l_toks(i);
         -- english: stopwords are dropped unless the query has nothing else (so "and" still
         -- finds "and so on" where the index has it)
         IF NOT (l_english AND l_content AND INSTR(gc_english_stopwords, ' ' || l_tok || ' ') > 0) THEN
            -- english: a plain word goes through the stem operator ($word matches the words
            -- of the same stem, Oracle Text Reference, stem ($)); anything else, and every
            -- word of 'none', is escaped whole: {...}, inside which only '}' is special ('}}')
            l_piece := CASE WHEN l_count > 0 THEN ' ACCUM ' END
                       || CASE WHEN l_english AND REGEXP_LIKE(l_tok, '^[[:alpha:]]+$', 'c')
                                    AND INSTR(gc_text_reserved, ' ' || l_tok || ' ') = 0
                               THEN '$' || l_tok
                               ELSE '{' || REPLACE(l_tok, '}', '}}') || '}' END;
            -- whole words only, and at most gc_max_query_bytes BYTES: the query is bound as a
            -- VARCHAR2(4000 CHAR) (byte semantics), so a character cut could overflow it with
            -- multibyte text or split a {word} (review F11)
            EXIT WHEN NVL(LENGTHB(l_query), 0) + LENGTHB(l_piece) > gc_max_query_bytes;
            l_count := l_count + 1;
            -- bounded: gc_max_query_bytes bytes, checked by the EXIT just above
            l_query := l_query || l_piece;
         END IF;
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

   -- A ranking subquery (record_type, record_id, dist; at most k rows) as the result rows:
   -- COUNT(*) and the results array in rank order (distance, record_type, record_id).
   -- N7: ties compare the ids byte-wise (NLSSORT ... BINARY: the value itself as RAW, SQL
   -- Language Reference 23, NLSSORT), not by the session's NLS_SORT, as SQLite does (SC-6.1).
   FUNCTION result_sql(
      in_rank_sql IN CLOB,
      in_rec_tab  IN VARCHAR2
   ) RETURN CLOB
   IS
   BEGIN
      RETURN 'SELECT COUNT(*), JSON_ARRAYAGG('
          || 'JSON_OBJECT(''record'' VALUE ' || oramem_registry.record_json_sql('r')
          || ' FORMAT JSON, ''distance'' VALUE b.dist RETURNING CLOB)'
          || ' ORDER BY b.dist, NLSSORT(b.record_type, ''NLS_SORT=BINARY''), NLSSORT(b.record_id, ''NLS_SORT=BINARY'') RETURNING CLOB)'
          || ' FROM (' || in_rank_sql || ') b JOIN ' || in_rec_tab || ' r'
          || ' ON (r.record_type = b.record_type AND r.record_id = b.record_id)';
   END result_sql;

   -- The same ranking as keys only: COUNT(*) and [[record_type, record_id, distance], ...] in
   -- rank order (distance, then the ids byte-wise, N7); the legs of a HYBRID search (score
   -- fusion reads the distances, rank fusion the order).
   FUNCTION keys_sql(
      in_rank_sql IN CLOB
   ) RETURN CLOB
   IS
   BEGIN
      RETURN 'SELECT COUNT(*), JSON_ARRAYAGG('
          || 'JSON_ARRAY(b.record_type, b.record_id, b.dist)'
          || ' ORDER BY b.dist, NLSSORT(b.record_type, ''NLS_SORT=BINARY''), NLSSORT(b.record_id, ''NLS_SORT=BINARY'')'
          || ' RETURNING CLOB)'
          || ' FROM (' || in_rank_sql || ') b';
   END keys_sql;

   -- Run in_sql (one row: a NUMBER, then, when in_with_doc, a CLOB) with DBMS_SQL, binding
   -- in_binds by name (oramem_filter.bind_all); DEFINE_COLUMN / COLUMN_VALUE have NUMBER and
   -- CLOB overloads (Supplied PL/SQL Packages, DBMS_SQL). The cursor is closed on every path.
   FUNCTION count_and_doc(
      in_sql      IN CLOB,
      in_binds    IN oramem_filter.bind_list_t,
      in_with_doc IN BOOLEAN
   ) RETURN ranking_t
   IS
      l_cursor INTEGER;
      l_rows   INTEGER;
      l_out    ranking_t;
   BEGIN
      l_cursor := DBMS_SQL.OPEN_CURSOR;
      DBMS_SQL.PARSE(l_cursor, in_sql, DBMS_SQL.NATIVE);
      oramem_filter.bind_all(l_cursor, in_binds);
      DBMS_SQL.DEFINE_COLUMN(l_cursor, 1, l_out.n);
      IF in_with_doc THEN
         DBMS_SQL.DEFINE_COLUMN(l_cursor, 2, l_out.doc);
      END IF;
      l_rows := DBMS_SQL.EXECUTE_AND_FETCH(l_cursor);
      IF l_rows > 0 THEN
         DBMS_SQL.COLUMN_VALUE(l_cursor, 1, l_out.n);
         IF in_with_doc THEN
            DBMS_SQL.COLUMN_VALUE(l_cursor, 2, l_out.doc);
         END IF;
      END IF;
      DBMS_SQL.CLOSE_CURSOR(l_cursor);
      l_out.n := NVL(l_out.n, 0);
      RETURN l_out;
   EXCEPTION
      WHEN OTHERS THEN
         -- release the cursor, then re-raise unchanged (callers map and log)
         IF DBMS_SQL.IS_OPEN(l_cursor) THEN
            DBMS_SQL.CLOSE_CURSOR(l_cursor);
         END IF;
         RAISE;
   END count_and_doc;

   -- Run a ranking subquery: the results (result_sql) or, for a HYBRID leg, the keys.
   FUNCTION ranked(
      in_rank_sql  IN CLOB,
      in_rec_tab   IN VARCHAR2,
      in_binds     IN oramem_filter.bind_list_t,
      in_keys_only IN BOOLEAN
   ) RETURN ranking_t
   IS
   BEGIN
      RETURN count_and_doc(
                CASE WHEN in_keys_only THEN keys_sql(in_rank_sql) ELSE result_sql(in_rank_sql, in_rec_tab) END,
                in_binds, TRUE);
   END ranked;

   -- A ranking's array text as returned ('[]' when nothing ranked).
   FUNCTION array_or_empty(
      in_doc IN CLOB
   ) RETURN CLOB
   IS
   BEGIN
      IF in_doc IS NULL OR DBMS_LOB.GETLENGTH(in_doc) = 0 THEN
         RETURN TO_CLOB('[]');
      END IF;
      RETURN in_doc;
   END array_or_empty;

   -- The record WHERE grows only here, as a CLOB (review S4: no byte cap; F12's
   -- ORA-06502 cannot happen on a CLOB).
   PROCEDURE append_where(
      io_where IN OUT NOCOPY CLOB,
      in_piece IN CLOB
   )
   IS
   BEGIN
      io_where := io_where || in_piece;
   END append_where;

   -- The longest prefix of in_text of at most in_max_bytes bytes, whole characters only.
   FUNCTION text_prefix(
      in_text      IN VARCHAR2,
      in_max_bytes IN PLS_INTEGER
   ) RETURN VARCHAR2
   IS
      l_n PLS_INTEGER := LEAST(NVL(LENGTH(in_text), 0), in_max_bytes);
   BEGIN
      WHILE l_n > 0 AND LENGTHB(SUBSTR(in_text, 1, l_n)) > in_max_bytes LOOP
         -- a character has at most 4 bytes: drop at least the excess / 4 characters
         l_n := l_n - GREATEST(1, TRUNC((LENGTHB(SUBSTR(in_text, 1, l_n)) - in_max_bytes) / 4));
      END LOOP;
      RETURN SUBSTR(in_text, 1, l_n);
   END text_prefix;

   -- The query vector of a HYBRID search that has no query_vector (a PL/SQL caller): the
   -- query text embedded with the store's in-database model (the model the hybrid index
   -- vectorizes with), VECTOR_EMBEDDING(model USING expr AS data) serialized with
   -- VECTOR_SERIALIZE(... RETURNING CLOB) (SQL Language Reference 23), checked against vector_dim.
   FUNCTION embed_query(
      in_store IN oramem_registry.store_t,
      in_text  IN VARCHAR2
   ) RETURN CLOB
   IS
      l_qv CLOB;
      l_n  NUMBER;
   BEGIN
      IF in_store.embedding_model IS NULL THEN
         bad_argument('a hybrid search needs query_vector (this store has no embedding_model to embed query_text)');
      END IF;
      -- the model is an identifier (oramem_admin accepted it as an unquoted name); the text is bound
      EXECUTE IMMEDIATE 'SELECT VECTOR_SERIALIZE(e.v RETURNING CLOB), VECTOR_DIMENSION_COUNT(e.v) FROM ('
                        || 'SELECT VECTOR_EMBEDDING(' || DBMS_ASSERT.SIMPLE_SQL_NAME(in_store.embedding_model)
                        || ' USING :t AS data) AS v FROM dual) e'
         INTO l_qv, l_n
         USING text_prefix(in_text, gc_embed_bytes);
      IF l_n <> in_store.vector_dim THEN
         oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
            'embedding_model ' || in_store.embedding_model || ' returns ' || l_n
            || ' dimensions; the store''s vector_dim is ' || in_store.vector_dim);
      END IF;
      RETURN l_qv;
   END embed_query;

   /*
    * VECTOR ranking of the in_k nearest records (every filter inside the query, SC-6.5).
    * Approximate first: chunk top-(k * gc_overfetch) by the HNSW index (FETCH APPROX, the
    * index metric, no aggregate over the distance), best chunk per record outside. An
    * approximate search may return fewer rows than asked (SQL Language Reference, SELECT,
    * row_limiting_clause APPROX), and many-chunk records or filters make it return fewer
    * than k records. Then (review F18) the candidate chunks are counted, bounded: when the
    * wider round (x gc_overfetch) would fetch about all of them anyway, the exact search
    * runs at once; otherwise one wider approximate round runs before the exact one. The
    * exact search scans every candidate chunk and returns k records whenever k match.
    * A record's distance is its first chunk's, or a later chunk's plus in_handicap (the
    * request's tail_handicap), whichever is smaller, capped at 2 (the cosine distance's
    * upper bound; SC-6.4): the approximate round fetches chunks by their own distance and
    * adds the handicap outside.
    */
   FUNCTION vector_ranking(
      in_chk_tab    IN VARCHAR2,
      in_rec_tab    IN VARCHAR2,
      in_candidates IN CLOB,
      in_binds      IN oramem_filter.bind_list_t,
      in_qv         IN CLOB,
      in_dim        IN VARCHAR2,
      in_k          IN NUMBER,
      in_exact      IN BOOLEAN,
      in_keys_only  IN BOOLEAN,
      in_handicap   IN NUMBER
   ) RETURN ranking_t
   IS
      l_binds  oramem_filter.bind_list_t;
      l_doc    ranking_t;
      l_rank   CLOB;
      l_nfetch NUMBER := LEAST(in_k * gc_overfetch, gc_max_k * gc_overfetch);
      l_count  NUMBER;
   BEGIN
      IF NOT in_exact THEN
         l_rank := 'SELECT a.record_type, a.record_id, '
                || 'MIN(LEAST(2, a.dist + CASE WHEN a.chunk_no > 1 THEN :h ELSE 0 END)) AS dist FROM ('
                || 'SELECT c.record_type, c.record_id, c.chunk_no, VECTOR_DISTANCE(c.embedding, '
                || 'TO_VECTOR(:qv, ' || in_dim || ', FLOAT32), COSINE) AS dist FROM '
                || in_chk_tab || ' c WHERE ' || in_candidates
                || ' ORDER BY VECTOR_DISTANCE(c.embedding, TO_VECTOR(:qv, ' || in_dim
                || ', FLOAT32), COSINE) FETCH APPROX FIRST :nfetch ROWS ONLY WITH TARGET ACCURACY '
                || TO_CHAR(gc_target_accuracy) || ') a WHERE a.dist IS NOT NULL'
                || ' GROUP BY a.record_type, a.record_id'
                || ' ORDER BY 3, NLSSORT(a.record_type, ''NLS_SORT=BINARY''), NLSSORT(a.record_id, ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
         FOR l_round IN 1 .. 2 LOOP
            l_binds := in_binds;
            -- one bind name for both occurrences: DBMS_SQL binds by name (review F19)
            add_bind(l_binds, 'qv', 'C', in_clob => in_qv);
            add_bind(l_binds, 'nfetch', 'N', in_num => l_nfetch);
            add_bind(l_binds, 'h', 'N', in_num => in_handicap);
            add_bind(l_binds, 'k', 'N', in_num => in_k);
            l_doc := ranked(l_rank, in_rec_tab, l_binds, in_keys_only);
            IF l_doc.n >= in_k THEN
               RETURN l_doc;
            END IF;
            EXIT WHEN l_round = 2;
            -- fewer than k records: count the candidate chunks, at most one more than the
            -- wider round would fetch (a row-limited count stops there)
            l_binds := in_binds;
            add_bind(l_binds, 'lim', 'N', in_num => l_nfetch * gc_overfetch + 1);
            l_count := count_and_doc(
                          'SELECT COUNT(*) FROM (SELECT 1 FROM '
                          || in_chk_tab || ' c WHERE c.embedding IS NOT NULL AND ' || in_candidates
                          || ' FETCH FIRST :lim ROWS ONLY)', l_binds, FALSE).n;
            EXIT WHEN l_count <= l_nfetch * gc_overfetch;   -- a wider round would fetch them all: go exact
            l_nfetch := l_nfetch * gc_overfetch;
         END LOOP;
      END IF;
      -- Exact: every candidate chunk; returns k records whenever k match (SC-6.5).
      l_rank := 'SELECT c.record_type, c.record_id, MIN(LEAST(2, VECTOR_DISTANCE(c.embedding, '
             || 'TO_VECTOR(:qv1, ' || in_dim || ', FLOAT32), COSINE)'
             || ' + CASE WHEN c.chunk_no > 1 THEN :h ELSE 0 END)) AS dist FROM '
             || in_chk_tab || ' c WHERE c.embedding IS NOT NULL AND ' || in_candidates
             || ' GROUP BY c.record_type, c.record_id'
             || ' ORDER BY 3, NLSSORT(c.record_type, ''NLS_SORT=BINARY''), NLSSORT(c.record_id, ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
      l_binds := in_binds;
      add_bind(l_binds, 'qv1', 'C', in_clob => in_qv);
      add_bind(l_binds, 'h', 'N', in_num => in_handicap);
      add_bind(l_binds, 'k', 'N', in_num => in_k);
      RETURN ranked(l_rank, in_rec_tab, l_binds, in_keys_only);
   END vector_ranking;

   /*
    * KEYWORD ranking of the in_k best records. A keyword store's CONTEXT index answers
    * CONTAINS inside the filtered query (SC-6.5). A hybrid store has no CONTEXT index (one
    * text index per column), and the documented keyword search over a hybrid vector index
    * is DBMS_HYBRID_VECTOR.SEARCH in pure keyword mode, the `text` sub-element only
    * (23/vecse/understand-hybrid-search.html; 23/arpls/dbms_hybrid_vector1.html), not
    * CONTAINS (review F8). SEARCH returns its topN before our filters, so topN widens (x4,
    * up to gc_max_hybrid_topn) until k records pass, or the index returned fewer rows than
    * asked (review F17): a very selective filter can return fewer than k (documented).
    * A HYBRID store that groups (store_t.keyword_passages, issue 23) ranks its keyword
    * passages instead: the CONTEXT index OM_<ID>_KTX of its table OM_<ID>_KWP answers
    * CONTAINS inside the filtered query, as a keyword store's (no post-filter widening);
    * a passage maps to its record as a row does (best score, SC-6.1).
    */
   FUNCTION keyword_ranking(
      in_store      IN oramem_registry.store_t,
      in_chk_tab    IN VARCHAR2,
      in_rec_tab    IN VARCHAR2,
      in_candidates IN CLOB,
      in_binds      IN oramem_filter.bind_list_t,
      in_query      IN VARCHAR2,
      in_k          IN NUMBER,
      in_keys_only  IN BOOLEAN
   ) RETURN ranking_t
   IS
      l_binds  oramem_filter.bind_list_t;
      l_doc    ranking_t;
      l_rank   CLOB;
      l_topn   PLS_INTEGER;
      l_hreq   JSON_OBJECT_T;
      l_hres   CLOB;
      l_raw    PLS_INTEGER;
      l_sub    JSON_OBJECT_T;
      l_values JSON_ARRAY_T;
   BEGIN
      IF in_store.has_text_index = 1 OR in_store.keyword_passages = 1 THEN
         l_rank := 'SELECT s.record_type, s.record_id,'
                || ' 1 - LEAST(MAX(s.sc), 100) / 100 AS dist FROM ('
                || 'SELECT c.record_type, c.record_id, SCORE(1) AS sc FROM '
                || CASE WHEN in_store.keyword_passages = 1
                        THEN oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_passages)
                             || ' c WHERE CONTAINS(c.passage_text, :q, 1) > 0 AND '
                        ELSE in_chk_tab || ' c WHERE CONTAINS(c.chunk_text, :q, 1) > 0 AND ' END
                || in_candidates || ') s'
                || ' GROUP BY s.record_type, s.record_id'
                || ' ORDER BY 3, NLSSORT(s.record_type, ''NLS_SORT=BINARY''), NLSSORT(s.record_id, ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
         l_binds := in_binds;
         add_bind(l_binds, 'q', 'S', in_str => in_query);   -- <= gc_max_query_bytes (keyword_query)
         add_bind(l_binds, 'k', 'N', in_num => in_k);
         BEGIN
            RETURN ranked(l_rank, in_rec_tab, l_binds, in_keys_only);
         EXCEPTION
            WHEN e_text_query THEN
               oramem_errors.log_error('oramem_search.search_json(keyword)', in_store.memory_store_id);
               oramem_errors.raise_error(oramem_errors.gc_invalid_keyword_query,
                  'Oracle Text rejected the keyword query; rephrase it with plain words');
         END;
      END IF;
      l_topn := LEAST(in_k * gc_overfetch, gc_max_hybrid_topn);
      LOOP
         -- Built with JSON_OBJECT_T so that user text is JSON-escaped (ORACLE_NOTES 5.2).
         -- One construct only (23/vecse/search.html, review F2): the text sub-element,
         -- no top-level search_text and no vector part (no query embedding for keywords).
         l_hreq := JSON_OBJECT_T();
         l_hreq.put('hybrid_index_name',
                    oramem_registry.object_name(in_store.memory_store_id, oramem_registry.gc_obj_hybrid));
         l_hreq.put('search_fusion', 'TEXT_ONLY');
         l_sub := JSON_OBJECT_T();
         l_sub.put('contains', in_query);
         l_hreq.put('text', l_sub);
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
               IF NOT missing_grant THEN
                  RAISE;
               END IF;
               oramem_errors.raise_error(oramem_errors.gc_privilege_missing,
                  'DBMS_HYBRID_VECTOR is not executable by the oramem owner; a DBA must run '
                  || 'GRANT EXECUTE ON <owner>.DBMS_HYBRID_VECTOR TO <owner> (a direct grant)');
            WHEN e_text_query THEN
               oramem_errors.log_error('oramem_search.search_json(keyword)', in_store.memory_store_id);
               oramem_errors.raise_error(oramem_errors.gc_invalid_keyword_query,
                  'Oracle Text rejected the keyword query; rephrase it with plain words');
         END;
         SELECT COUNT(*) INTO l_raw
         FROM   JSON_TABLE(l_hres, '$[*]' COLUMNS (rid VARCHAR2(4000 CHAR) PATH '$.rowid'));
         -- scores range from 100 (best) to 0 (23/vecse/search.html, return values)
         l_rank := 'SELECT c.record_type, c.record_id,'
                || ' GREATEST(0, LEAST(1, 1 - MAX(h.score) / 100)) AS dist'
                || ' FROM JSON_TABLE(:hres, ''$[*]'' COLUMNS ('
                || 'rid VARCHAR2(4000 CHAR) PATH ''$.rowid'', score NUMBER PATH ''$.score'')) h'
                || ' JOIN ' || in_chk_tab || ' c ON (c.rowid = CHARTOROWID(h.rid))'
                || ' WHERE ' || in_candidates
                || ' GROUP BY c.record_type, c.record_id'
                || ' ORDER BY 3, NLSSORT(c.record_type, ''NLS_SORT=BINARY''), NLSSORT(c.record_id, ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
         l_binds := in_binds;
         add_bind(l_binds, 'hres', 'C', in_clob => l_hres);
         add_bind(l_binds, 'k', 'N', in_num => in_k);
         l_doc := ranked(l_rank, in_rec_tab, l_binds, in_keys_only);
         -- widen until k records pass the filters or the cap is reached, but not when the
         -- index already returned fewer than topN rows: a wider topN cannot find more (F17)
         EXIT WHEN l_doc.n >= in_k OR l_topn >= gc_max_hybrid_topn OR l_raw < l_topn;
         l_topn := LEAST(l_topn * 4, gc_max_hybrid_topn);
      END LOOP;
      RETURN l_doc;
   END keyword_ranking;

   /*
    * gated-rrf's coverage gate (= oramem.sqlite.keyword.coverage_factor, issue 23): how far
    * the keyword leg's first record is trusted for how many of the query's words it holds.
    * The keyword query (keyword_query) ACCUMulates one operand per distinct word, and Oracle
    * Text scores a row matching m of n equally weighted ACCUM operands in the m-th of n equal
    * ranges of 1-100 ("ACCUMulate Scoring", Oracle Text Reference 26: two terms 1-50 and
    * 51-100, three terms 1-33, 34-66, 67-100), so the first record's best score s gives
    * m = CEIL(s * n / 100). One word held counts 0; each further word an equal share, in
    * full from gc_gated_coverage_full words or all of a shorter query's. The SQLite engine
    * counts the words with its index over all of the record's keyword rows; here the best
    * row's band counts them (the same for a record of one row).
    */
   FUNCTION coverage_factor(
      in_tkeys IN CLOB,
      in_query IN VARCHAR2
   ) RETURN NUMBER
   IS
      -- the words are lower-cased ({...} or $word), so the upper-case separator is only ever one
      l_terms PLS_INTEGER := NVL(REGEXP_COUNT(in_query, ' ACCUM ', 1, 'c') + 1, 0);   -- no query: 0
      l_score NUMBER;
      l_held  PLS_INTEGER;
   BEGIN
      IF l_terms < 2 THEN
         RETURN 0;
      END IF;
      SELECT GREATEST(0, LEAST(100, ROUND(100 * (1 - j.dist), 6)))
      INTO   l_score
      FROM   JSON_TABLE(in_tkeys, '$[*]' COLUMNS (rn FOR ORDINALITY, dist NUMBER PATH '$[2]')) j
      WHERE  j.rn = 1;
      l_held := LEAST(l_terms, CEIL(l_score * l_terms / 100));
      IF l_held < 2 THEN
         RETURN 0;
      END IF;
      RETURN LEAST(1, (l_held - 1) / (LEAST(gc_gated_coverage_full, l_terms) - 1));
   EXCEPTION
      WHEN NO_DATA_FOUND THEN
         RETURN 0;   -- no keyword record (the caller asks only when there is one)
   END coverage_factor;

   -- A number of the request's "hybrid" object, else in_default; -20001 when not a number.
   FUNCTION hybrid_number(
      in_cfg     IN JSON_OBJECT_T,
      in_key     IN VARCHAR2,
      in_default IN NUMBER
   ) RETURN NUMBER
   IS
   BEGIN
      IF in_cfg IS NULL OR NOT in_cfg.has(in_key) OR in_cfg.get(in_key).is_null THEN
         RETURN in_default;
      END IF;
      IF NOT in_cfg.get(in_key).is_number THEN
         bad_argument('hybrid.' || in_key || ' must be a number');
      END IF;
      RETURN in_cfg.get_number(in_key);
   END hybrid_number;

   FUNCTION search_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN CLOB
   IS
      TYPE seen_t IS TABLE OF BOOLEAN INDEX BY VARCHAR2(32 CHAR);
      l_store      oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_rec_tab    VARCHAR2(200 CHAR);
      l_chk_tab    VARCHAR2(200 CHAR);
      l_elem       JSON_ELEMENT_T;
      l_req        JSON_OBJECT_T;
      l_strategy   VARCHAR2(16 CHAR);
      l_k          NUMBER;
      l_exact      BOOLEAN := FALSE;
      l_handicap   NUMBER := 0;
      l_types      JSON_ARRAY_T;
      l_type       oramem_registry.record_type_t;
      l_seen       seen_t;
      l_type_list  VARCHAR2(4000 CHAR);
      l_scope      JSON_OBJECT_T;
      l_cond       VARCHAR2(32767);
      l_filter     CLOB;
      l_rec_where  CLOB;
      l_candidates CLOB;
      l_binds      oramem_filter.bind_list_t;
      l_run_binds  oramem_filter.bind_list_t;
      l_text       VARCHAR2(32767);
      l_query      VARCHAR2(32767);
      l_qv         CLOB;
      l_dim        VARCHAR2(10 CHAR);
      l_rank       CLOB;
      l_doc        ranking_t;
      l_cfg        JSON_OBJECT_T;
      l_wv         NUMBER;
      l_wk         NUMBER;
      l_rrf_k      NUMBER;
      l_fusion     VARCHAR2(16 CHAR);
      l_gate       NUMBER;
      l_vcount     PLS_INTEGER;
      l_zfloor     NUMBER;
      l_zspan      NUMBER;
      l_depth      NUMBER;
      l_vkeys      CLOB := TO_CLOB('[]');
      l_tkeys      CLOB := TO_CLOB('[]');
      l_supported  VARCHAR2(100 CHAR);
      -- the store's persisted keyword_language (schema version 3; ready_store refuses older)
      l_language   VARCHAR2(16 CHAR) := NVL(l_store.keyword_language, oramem_registry.gc_default_language);
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
      -- every member the search reads, and no other (red32): an unknown one was ignored, so
      -- "user_id": ... (the add batch's and the record's spelling) searched every user's records
      oramem_filter.check_keys(l_req, 'strategy,k,query_text,query_vector,thread,user,agent,record_types,'
                               || 'metadata_filter,exact,tail_handicap,keyword_language,hybrid,embedder',
                               'search request');
      -- ora44: "embedder" names the embedder that made query_vector (the driver sends it
      -- when its store object's embedder embedded query_text); refused, before anything is
      -- read, when another session moved the store to another embedder since that open
      IF l_req.has('embedder') THEN
         IF NOT l_req.get('embedder').is_null THEN
            IF NOT l_req.get('embedder').is_object THEN
               oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
                  'search request.embedder must be a JSON object (an oramem embedder identity) or null');
            END IF;
            oramem_admin.check_embedder(l_store.memory_store_id, l_req.get_object('embedder').to_clob,
                                        'nothing was searched');
         END IF;
      END IF;

      -- strategy (SC-6.4, SC-6.6)
      l_strategy := 'vector';
      -- a strategy that is not a string was ignored (a vector search ran; red32): refused, as the
      -- Python store refuses it; nested IFs: no short-circuit evaluation assumed
      IF l_req.has('strategy') THEN
         IF NOT l_req.get('strategy').is_null THEN
            IF NOT l_req.get('strategy').is_string THEN
               bad_argument('strategy must be vector, keyword or hybrid');
            END IF;
            l_strategy := LOWER(SUBSTR(l_req.get_string('strategy'), 1, 16));
         END IF;
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
            'search strategy ' || l_strategy || ' is not supported by store '
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
      IF l_req.has('exact') THEN
         IF NOT l_req.get('exact').is_null THEN
            IF NOT l_req.get('exact').is_boolean THEN
               bad_argument('exact must be true or false');   -- was ignored (red32)
            END IF;
            l_exact := l_req.get_boolean('exact');
         END IF;
      END IF;
      -- VECTOR: distance added to a record's later chunks (SC-6.4; Python sends its chunk
      -- policy's value, gc_tail_handicap for tail-window stores; absent: 0, best chunk)
      IF l_req.has('tail_handicap') THEN
         IF NOT l_req.get('tail_handicap').is_number THEN
            bad_argument('tail_handicap must be a number between 0 and 2');
         END IF;
         l_handicap := l_req.get_number('tail_handicap');
         IF l_handicap < 0 OR l_handicap > 2 THEN
            bad_argument('tail_handicap must be a number between 0 and 2');
         END IF;
      END IF;

      -- candidate records: types, expiry, scope, metadata filter (before the top-k cut)
      l_rec_where := '(r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))';
      -- record_types that is not a list ("record_types": "memory") was ignored and every type
      -- searched (red32): refused, as the Python store refuses it
      IF l_req.has('record_types') THEN
         IF NOT l_req.get('record_types').is_null AND NOT l_req.get('record_types').is_array THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_record_type,
               'record_types must be a list of record type names (or null for every type)');
         END IF;
      END IF;
      IF l_req.has('record_types') AND l_req.get('record_types').is_array THEN
         l_types := l_req.get_array('record_types');
         FOR i IN 0 .. l_types.get_size - 1 LOOP
            IF NOT l_types.get(i).is_string THEN
               oramem_errors.raise_error(oramem_errors.gc_invalid_record_type,
                  'record_types must be a list of record type names');
            END IF;
            -- check_record_type returns one of eight fixed names: safe as literals
            l_type := oramem_registry.check_record_type(l_types.get_string(i), 'record_types');
            IF NOT l_seen.EXISTS(l_type) THEN
               l_seen(l_type) := TRUE;
               -- bounded: each of the eight record type names at most once (l_seen)
               l_type_list := l_type_list || CASE WHEN l_type_list IS NOT NULL THEN ', ' END || '''' || l_type || '''';
            END IF;
         END LOOP;
         IF l_type_list IS NOT NULL THEN
            append_where(l_rec_where, ' AND r.record_type IN (' || l_type_list || ')');
         END IF;
      END IF;
      FOR d IN 1 .. 3 LOOP
         DECLARE
            l_dim_name VARCHAR2(10 CHAR) := CASE d WHEN 1 THEN 'thread' WHEN 2 THEN 'user' ELSE 'agent' END;
         BEGIN
            -- absent or null = any (README "Scope"); anything else is the scope object, as
            -- list_json refuses it otherwise (-20002): a bare id ("user": "u1") or a match that
            -- is not a string was taken as no scope, and the search ran over every user's records
            IF l_req.has(l_dim_name) AND NOT l_req.get(l_dim_name).is_null THEN
               IF NOT l_req.get(l_dim_name).is_object THEN
                  oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
                     l_dim_name || ' must be {"match": ..., "value": ...}');
               END IF;
               l_scope := l_req.get_object(l_dim_name);
               oramem_filter.check_keys(l_scope, 'match,value', l_dim_name);
               IF l_scope.has('match') AND NOT l_scope.get('match').is_null
                  AND NOT l_scope.get('match').is_string
               THEN
                  oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
                     l_dim_name || '.match must be a string or null');
               END IF;
               IF l_scope.has('value') AND NOT l_scope.get('value').is_null
                  AND NOT l_scope.get('value').is_string
               THEN
                  oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
                     l_dim_name || '.value must be a string or null');
               END IF;
               -- N9: an id is at most 255 characters (as list_json's get_text), checked before
               -- the value is copied into a VARCHAR2 bind
               IF l_scope.has('value') AND l_scope.get('value').is_string
                  AND DBMS_LOB.GETLENGTH(l_scope.get_clob('value')) > 255
               THEN
                  bad_argument(l_dim_name || '.value is longer than 255 characters');
               END IF;
               l_cond := oramem_filter.scope_condition(
                            l_dim_name,
                            CASE WHEN l_scope.has('match') AND l_scope.get('match').is_string
                                 THEN l_scope.get_string('match') END,
                            CASE WHEN l_scope.has('value') AND l_scope.get('value').is_string
                                 THEN l_scope.get_string('value') END,
                            'r', l_binds);
               IF l_cond IS NOT NULL THEN
                  append_where(l_rec_where, ' AND ' || l_cond);
               END IF;
            END IF;
         END;
      END LOOP;
      IF l_req.has('metadata_filter') AND NOT l_req.get('metadata_filter').is_null THEN
         IF NOT l_req.get('metadata_filter').is_object THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_filter,
               'metadata_filter must be a JSON object or null');
         END IF;
         -- a CLOB condition (S4): no byte cap; bounded by oramem_filter.gc_max_nodes
         l_filter := oramem_filter.compile_filter(l_req.get_object('metadata_filter').to_clob, 'r.metadata', l_binds);
         append_where(l_rec_where, ' AND ' || l_filter);
      END IF;
      l_candidates := '(c.record_type, c.record_id) IN (SELECT r.record_type, r.record_id FROM '
                      || l_rec_tab || ' r WHERE ' || l_rec_where || ')';

      -- keyword_language is the store's (its text index was built for it, issue 11 item 5); a
      -- request may repeat it (the Python driver sends the one open returned), never change it
      IF l_req.has('keyword_language') AND NOT l_req.get('keyword_language').is_null THEN
         IF NOT l_req.get('keyword_language').is_string THEN
            bad_argument('keyword_language must be english or none');
         END IF;
         IF oramem_registry.check_language(SUBSTR(l_req.get_string('keyword_language'), 1, 64))
            <> l_language
         THEN
            bad_argument('keyword_language ' || LOWER(SUBSTR(l_req.get_string('keyword_language'), 1, 16))
                         || ' differs from store ' || l_store.memory_store_id || '''s ' || l_language
                         || ' (fixed when the store was created); leave keyword_language out of the request');
         END IF;
      END IF;
      IF l_req.has('query_text') AND l_req.get('query_text').is_string THEN
         -- a character prefix that fits VARCHAR2(32767) in bytes whatever the text (gc_text_chars)
         l_text := DBMS_LOB.SUBSTR(l_req.get_clob('query_text'), gc_text_chars, 1);
      END IF;
      IF l_store.vector_dim IS NOT NULL THEN
         l_dim := TO_CHAR(TRUNC(l_store.vector_dim), 'FM99990');
      END IF;

      IF l_strategy = 'vector' THEN
         l_qv  := query_vector(l_req, l_store.vector_dim);
         l_doc := vector_ranking(l_chk_tab, l_rec_tab, l_candidates, l_binds, l_qv, l_dim, l_k, l_exact, FALSE,
                                 l_handicap);

      ELSIF l_strategy = 'keyword' THEN
         l_query := keyword_query(l_text, l_language);
         IF l_text IS NULL THEN
            bad_argument('a keyword search needs query_text');
         END IF;
         IF l_query IS NULL THEN
            RETURN TO_CLOB('[]');   -- no searchable word: never call CONTAINS (ORACLE_NOTES 4.4)
         END IF;
         l_doc := keyword_ranking(l_store, l_chk_tab, l_rec_tab, l_candidates, l_binds, l_query, l_k, FALSE);

      ELSE
         /*
          * HYBRID, as the SQLite engine fuses (oramem.sqlite.keyword.fuse, HybridConfig), each
          * leg of `depth` records with every filter applied; a leg of weight 0 is not run.
          * fusion 'gated-rrf' (default, issue 23): as 'rrf' below with the keyword weight times
          * the keyword leg's strength gate g (see l_gate; its own constants gc_gated_z_floor,
          * gc_gated_z_span) times its coverage gate (coverage_factor); g = 1 when wv = 0 or the
          * vector leg returned nothing.
          * fusion 'score' (relative score fusion, issue 23): each leg on [0, 1] for
          * the query - vector: (sim - sim_ref) / (sim_top - sim_ref) clamped, sim = 1 -
          * cosine distance, sim_ref the similarity at rank gc_vector_ref_rank (or the last);
          * keyword: s / s_top, s = 1 - distance (the text score / 100); the keyword weight
          * times the leg's strength gate g (z of its best score, see l_gate) - score = wv * v
          * + g * wk * t (a leg that did not return a record adds 0), distance = 1 - score /
          * (wv + g * wk); with wv = 0, g = 1.
          * fusion 'rrf': score = wv / (rrf_k + vector rank) + wk / (rrf_k + keyword rank),
          * distance = 1 - score / ((wv + wk) / (rrf_k + 1)).
          * Both rounded to 12 places and clamped to [0, 1]; ties by record_type, then id,
          * byte-wise (NLSSORT ... BINARY, N7).
          */
         IF l_text IS NULL THEN
            bad_argument('a hybrid search needs query_text');
         END IF;
         IF l_req.has('hybrid') AND NOT l_req.get('hybrid').is_null THEN
            IF NOT l_req.get('hybrid').is_object THEN
               bad_argument('hybrid must be a JSON object (fusion, vector_weight, keyword_weight, rrf_k, depth)');
            END IF;
            l_cfg := l_req.get_object('hybrid');
            oramem_filter.check_keys(l_cfg, 'fusion,vector_weight,keyword_weight,rrf_k,depth', 'hybrid');
         END IF;
         l_fusion := gc_fusion;
         IF l_cfg IS NOT NULL AND l_cfg.has('fusion') AND NOT l_cfg.get('fusion').is_null THEN
            IF NOT l_cfg.get('fusion').is_string THEN
               bad_argument('hybrid.fusion must be gated-rrf, score or rrf');
            END IF;
            l_fusion := LOWER(SUBSTR(l_cfg.get_string('fusion'), 1, 16));
            IF l_fusion NOT IN ('gated-rrf', 'score', 'rrf') THEN
               bad_argument('hybrid.fusion must be gated-rrf, score or rrf');
            END IF;
         END IF;
         l_wv    := hybrid_number(l_cfg, 'vector_weight', gc_vector_weight);
         l_wk    := hybrid_number(l_cfg, 'keyword_weight',
                                  CASE l_fusion WHEN 'rrf' THEN gc_keyword_weight_rrf
                                                WHEN 'gated-rrf' THEN gc_keyword_weight_gated
                                                ELSE gc_keyword_weight END);
         l_rrf_k := hybrid_number(l_cfg, 'rrf_k', CASE l_fusion WHEN 'gated-rrf' THEN gc_rrf_k_gated ELSE gc_rrf_k END);
         l_depth := hybrid_number(l_cfg, 'depth', NULL);
         IF l_wv < 0 OR l_wk < 0 OR l_wv + l_wk = 0 THEN
            bad_argument('hybrid weights must be >= 0 and not both 0 (use strategy vector or keyword)');
         END IF;
         IF l_rrf_k <= 0 THEN
            bad_argument('hybrid.rrf_k must be > 0');
         END IF;
         IF l_depth IS NOT NULL AND (l_depth < 1 OR l_depth <> TRUNC(l_depth) OR l_depth > gc_max_fusion_depth) THEN
            bad_argument('hybrid.depth must be an integer between 1 and ' || gc_max_fusion_depth);
         END IF;
         -- how many candidates each leg contributes: never fewer than k; the default
         -- max(10 k, 200) is capped at gc_max_fusion_depth
         l_depth := CASE WHEN l_depth IS NULL THEN LEAST(GREATEST(10 * l_k, 200), gc_max_fusion_depth)
                         ELSE GREATEST(l_k, l_depth) END;
         IF l_wv > 0 THEN
            IF l_store.vector_dim IS NULL THEN
               bad_argument('a hybrid search with vector_weight > 0 needs a store with vector_dim');
            END IF;
            IF l_req.has('query_vector') AND NOT l_req.get('query_vector').is_null THEN
               l_qv := query_vector(l_req, l_store.vector_dim);
            ELSE
               l_qv := embed_query(l_store, l_text);
            END IF;
            l_vkeys := array_or_empty(vector_ranking(l_chk_tab, l_rec_tab, l_candidates, l_binds, l_qv, l_dim,
                                                     l_depth, l_exact, TRUE, l_handicap).doc);
         END IF;
         l_query := keyword_query(l_text, l_language);
         IF l_wk > 0 AND l_query IS NOT NULL THEN
            l_tkeys := array_or_empty(keyword_ranking(l_store, l_chk_tab, l_rec_tab, l_candidates, l_binds,
                                                      l_query, l_depth, TRUE).doc);
         END IF;
         -- the keyword leg's strength gate (fusion 'score' and 'gated-rrf'): how far its best
         -- score stands out from its scores, z = (max - mean) / population standard
         -- deviation, over the leg's first gc_gate_sample matches (best first: the gate does
         -- not change with k), mapped to [0, 1] from l_zfloor over l_zspan (gc_keyword_z_* for
         -- 'score', gc_gated_z_* for 'gated-rrf'); fewer than two matches: 0.
         -- 'gated-rrf' only: a vector leg that returned nothing gives 1
         l_gate := 1;
         l_zfloor := CASE l_fusion WHEN 'gated-rrf' THEN gc_gated_z_floor ELSE gc_keyword_z_floor END;
         l_zspan  := CASE l_fusion WHEN 'gated-rrf' THEN gc_gated_z_span ELSE gc_keyword_z_span END;
         IF l_fusion <> 'rrf' THEN
            SELECT COUNT(*) INTO l_vcount
            FROM   JSON_TABLE(l_vkeys, '$[*]' COLUMNS (record_id VARCHAR2(512 CHAR) PATH '$[1]')) j;
            l_gate := 0;
            IF l_wv = 0 OR (l_fusion = 'gated-rrf' AND l_vcount = 0) THEN
               l_gate := 1;
            ELSIF l_wk > 0 THEN
               SELECT NVL(LEAST(1, GREATEST(0,
                         ((MAX(s) - AVG(s)) / NULLIF(STDDEV_POP(s), 0) - l_zfloor) / l_zspan)), 0)
               INTO   l_gate
               FROM   (SELECT GREATEST(0, 1 - j.dist) AS s
                       FROM   JSON_TABLE(l_tkeys, '$[*]' COLUMNS (rn FOR ORDINALITY, dist NUMBER PATH '$[2]')) j
                       WHERE  j.rn <= gc_gate_sample);
               -- gated-rrf: times the coverage gate of the keyword leg's first record (asked
               -- only when the strength gate is open and both legs have records)
               IF l_fusion = 'gated-rrf' AND l_gate > 0 AND l_vcount > 0 THEN
                  l_gate := l_gate * coverage_factor(l_tkeys, l_query);
               END IF;
            END IF;
         END IF;
         IF l_fusion IN ('rrf', 'gated-rrf') THEN
            l_rank := 'SELECT NVL(v.record_type, t.record_type) AS record_type,'
                   || ' NVL(v.record_id, t.record_id) AS record_id,'
                   || ' GREATEST(0, LEAST(1, ROUND(1 - (NVL(:wv / (:rk + v.rn), 0) + NVL(:wk / (:rk + t.rn), 0))'
                   || ' / :top, 12))) AS dist'
                   || ' FROM JSON_TABLE(:vkeys, ''$[*]'' COLUMNS (rn FOR ORDINALITY,'
                   || ' record_type VARCHAR2(32 CHAR) PATH ''$[0]'', record_id VARCHAR2(512 CHAR) PATH ''$[1]'')) v'
                   || ' FULL OUTER JOIN JSON_TABLE(:tkeys, ''$[*]'' COLUMNS (rn FOR ORDINALITY,'
                   || ' record_type VARCHAR2(32 CHAR) PATH ''$[0]'', record_id VARCHAR2(512 CHAR) PATH ''$[1]'')) t'
                   || ' ON (t.record_type = v.record_type AND t.record_id = v.record_id)'
                   || ' ORDER BY 3, NLSSORT(NVL(v.record_type, t.record_type), ''NLS_SORT=BINARY''),'
                   || ' NLSSORT(NVL(v.record_id, t.record_id), ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
            add_bind(l_run_binds, 'wv', 'N', in_num => l_wv);
            add_bind(l_run_binds, 'rk', 'N', in_num => l_rrf_k);
            IF l_fusion = 'rrf' THEN
               add_bind(l_run_binds, 'wk', 'N', in_num => l_wk);
               add_bind(l_run_binds, 'top', 'N', in_num => (l_wv + l_wk) / (l_rrf_k + 1));
            ELSE
               add_bind(l_run_binds, 'wk', 'N', in_num => l_wk * l_gate);
               add_bind(l_run_binds, 'top', 'N', in_num => (l_wv + l_wk * l_gate) / (l_rrf_k + 1));
            END IF;
         ELSE
            -- each leg's scores on [0, 1] with analytic functions over the leg (vs: the
            -- vector leg with its best and reference similarity; ts: the keyword leg with
            -- its best score), then the weighted sum over the FULL OUTER JOIN of the legs
            l_rank := 'SELECT NVL(v.record_type, t.record_type) AS record_type,'
                   || ' NVL(v.record_id, t.record_id) AS record_id,'
                   || ' GREATEST(0, LEAST(1, ROUND(1 - (:wv * NVL(v.nv, 0) + :wk * NVL(t.nk, 0)) / :wsum, 12))) AS dist'
                   || ' FROM (SELECT record_type, record_id,'
                   || ' CASE WHEN top - ref <= 1E-9 THEN CASE WHEN sim >= top - 1E-12 THEN 1 ELSE 0 END'
                   || ' ELSE GREATEST(0, LEAST(1, (sim - ref) / (top - ref))) END AS nv'
                   || ' FROM (SELECT record_type, record_id, sim, MAX(sim) OVER () AS top,'
                   || ' MAX(CASE WHEN rn = LEAST(:vref, cnt) THEN sim END) OVER () AS ref'
                   || ' FROM (SELECT j.record_type, j.record_id, j.rn, 1 - j.dist AS sim, COUNT(*) OVER () AS cnt'
                   || ' FROM JSON_TABLE(:vkeys, ''$[*]'' COLUMNS (rn FOR ORDINALITY,'
                   || ' record_type VARCHAR2(32 CHAR) PATH ''$[0]'', record_id VARCHAR2(512 CHAR) PATH ''$[1]'','
                   || ' dist NUMBER PATH ''$[2]'')) j))) v'
                   || ' FULL OUTER JOIN (SELECT record_type, record_id,'
                   || ' CASE WHEN MAX(s) OVER () > 0 THEN s / MAX(s) OVER () ELSE 0 END AS nk'
                   || ' FROM (SELECT j.record_type, j.record_id, GREATEST(0, 1 - j.dist) AS s'
                   || ' FROM JSON_TABLE(:tkeys, ''$[*]'' COLUMNS (rn FOR ORDINALITY,'
                   || ' record_type VARCHAR2(32 CHAR) PATH ''$[0]'', record_id VARCHAR2(512 CHAR) PATH ''$[1]'','
                   || ' dist NUMBER PATH ''$[2]'')) j)) t'
                   || ' ON (t.record_type = v.record_type AND t.record_id = v.record_id)'
                   || ' ORDER BY 3, NLSSORT(NVL(v.record_type, t.record_type), ''NLS_SORT=BINARY''),'
                   || ' NLSSORT(NVL(v.record_id, t.record_id), ''NLS_SORT=BINARY'') FETCH FIRST :k ROWS ONLY';
            add_bind(l_run_binds, 'wv', 'N', in_num => l_wv);
            add_bind(l_run_binds, 'wk', 'N', in_num => l_wk * l_gate);
            add_bind(l_run_binds, 'wsum', 'N', in_num => l_wv + l_wk * l_gate);
            add_bind(l_run_binds, 'vref', 'N', in_num => gc_vector_ref_rank);
         END IF;
         add_bind(l_run_binds, 'vkeys', 'C', in_clob => l_vkeys);
         add_bind(l_run_binds, 'tkeys', 'C', in_clob => l_tkeys);
         add_bind(l_run_binds, 'k', 'N', in_num => l_k);
         l_doc := ranked(l_rank, l_rec_tab, l_run_binds, FALSE);
      END IF;

      -- the results array as SQL built it, appended once (F19)
      RETURN array_or_empty(l_doc.doc);
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_search.search_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END search_json;
END oramem_search;
/
