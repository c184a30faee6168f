CREATE OR REPLACE PACKAGE BODY oramem_store
AS
   TYPE vc_tab_t   IS TABLE OF VARCHAR2(512 CHAR)  INDEX BY PLS_INTEGER;
   TYPE clob_tab_t IS TABLE OF CLOB           INDEX BY PLS_INTEGER;
   TYPE ts_tab_t   IS TABLE OF TIMESTAMP(6)   INDEX BY PLS_INTEGER;
   TYPE num_tab_t  IS TABLE OF NUMBER         INDEX BY PLS_INTEGER;
   TYPE seen_t     IS TABLE OF PLS_INTEGER    INDEX BY VARCHAR2(600 CHAR);

   -- Ids (record, thread, user, agent) are 1..255 characters, as oramem.normalize.MAX_ID_LENGTH;
   -- every buffer and column that holds one uses CHAR length semantics (S8).
   gc_max_id_chars CONSTANT PLS_INTEGER := 255;

   e_json_syntax EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_json_syntax, -40441);
   -- > 0 while a deletion hook runs (S18): a hook runs inside the caller's transaction,
   -- so a nested oramem_store write would reuse the fixed savepoint names and break the
   -- outer call's all-or-nothing rollback; such calls are refused.
   g_hook_depth PLS_INTEGER := 0;

   e_plsql_compile EXCEPTION;   -- ORA-06550: a dynamic PL/SQL block did not compile
   PRAGMA EXCEPTION_INIT(e_plsql_compile, -6550);
   -- D5/F16: the knowledge layer's deletion hook (oramem_kg_jobs, compiled after this package,
   -- hence a dynamic call). It runs for every store that has knowledge tables, next to the
   -- store's registered hook, as the SQLite engine runs every registered hook: the one
   -- registration slot stays the application's, and neither displaces the other.
   gc_kg_hook CONSTANT VARCHAR2(64 CHAR) := 'ORAMEM_KG_JOBS.ON_STORE_DELETE';

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

   -- red40: the same id value, NULL (no user / no agent) equal only to NULL; always TRUE or
   -- FALSE (a comparison with NULL is NULL, which IF would read as "not different").
   FUNCTION same_id(
      in_a IN VARCHAR2,
      in_b IN VARCHAR2
   ) RETURN BOOLEAN
   IS
   BEGIN
      IF in_a IS NULL OR in_b IS NULL THEN
         RETURN in_a IS NULL AND in_b IS NULL;
      END IF;
      RETURN in_a = in_b;
   END same_id;

   -- ora44: a request's "embedder" member (in_embedder; NULL or JSON null = absent) names the
   -- embedder that made its vectors (the driver sends it when its store object's embedder
   -- made some); oramem_admin.check_embedder refuses it when the store now records another
   -- one (a reembed by another session since the caller's open), before anything is written.
   PROCEDURE check_embedder(
      in_store    IN oramem_registry.store_t,
      in_embedder IN JSON_ELEMENT_T,
      in_where    IN VARCHAR2,
      in_what     IN VARCHAR2
   )
   IS
   BEGIN
      IF in_embedder IS NULL THEN
         RETURN;
      END IF;
      IF in_embedder.is_null THEN
         RETURN;
      END IF;
      IF NOT in_embedder.is_object THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
            in_where || '.embedder must be a JSON object (an oramem embedder identity) or null');
      END IF;
      oramem_admin.check_embedder(in_store.memory_store_id, in_embedder.to_clob, in_what);
   END check_embedder;

   ---------------------------------------------------------------------------------------
   -- small helpers
   ---------------------------------------------------------------------------------------
   PROCEDURE bad_payload(
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_invalid_payload, in_message);
   END bad_payload;

   PROCEDURE bad_argument(
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_invalid_argument, in_message);
   END bad_argument;

   FUNCTION parse_object(
      in_json IN CLOB,
      in_what IN VARCHAR2
   ) RETURN JSON_OBJECT_T
   IS
      l_elem JSON_ELEMENT_T;
   BEGIN
      IF in_json IS NULL OR DBMS_LOB.GETLENGTH(in_json) = 0 THEN
         bad_payload(in_what || ' is empty; pass a JSON object');
      END IF;
      BEGIN
         l_elem := JSON_ELEMENT_T.parse(in_json);
      EXCEPTION
         WHEN e_json_syntax THEN
            bad_payload(in_what || ' is not valid JSON');
      END;
      IF NOT l_elem.is_object THEN
         bad_payload(in_what || ' must be a JSON object');
      END IF;
      RETURN TREAT(l_elem AS JSON_OBJECT_T);
   END parse_object;

   -- TRUE when in_obj has in_key with a non-null value.
   FUNCTION has_value(
      in_obj IN JSON_OBJECT_T,
      in_key IN VARCHAR2
   ) RETURN BOOLEAN
   IS
   BEGIN
      -- nested, so get() is never called for an absent member (no short-circuit assumed)
      IF NOT in_obj.has(in_key) THEN
         RETURN FALSE;
      END IF;
      RETURN NOT in_obj.get(in_key).is_null;
   END has_value;

   -- Optional string member (NULL when absent or null); -20002 when not a string.
   FUNCTION get_text(
      in_obj     IN JSON_OBJECT_T,
      in_key     IN VARCHAR2,
      in_where   IN VARCHAR2,
      in_max_len IN PLS_INTEGER DEFAULT gc_max_id_chars
   ) RETURN VARCHAR2
   IS
      l_val VARCHAR2(32767);
   BEGIN
      IF NOT has_value(in_obj, in_key) THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_string THEN
         bad_payload(in_where || '.' || in_key || ' must be a string or null');
      END IF;
      -- N9: measured on the CLOB form first: get_string returns a VARCHAR2, and a value over
      -- 32,767 bytes would fail there with a raw ORA-06502 instead of this error
      IF DBMS_LOB.GETLENGTH(in_obj.get_clob(in_key)) > in_max_len THEN
         bad_argument(in_where || '.' || in_key || ' is longer than ' || in_max_len || ' characters');
      END IF;
      l_val := in_obj.get_string(in_key);
      IF LENGTH(l_val) > in_max_len THEN
         bad_argument(in_where || '.' || in_key || ' is longer than ' || in_max_len || ' characters');
      END IF;
      RETURN l_val;
   END get_text;

   -- Optional scope id member (thread_id, user_id, agent_id): get_text, and "" refused.
   -- Oracle treats a character value of length zero as null (SQL Language Reference, Nulls;
   -- PL/SQL's '' is the null string), so "user_id": "" would be stored as no user: a record
   -- shared with every user (and, in a thread, counted as the agent's). A scope id is 1..255
   -- characters (SC-2.1, as the Python store's check_id); null or absent is "none".
   FUNCTION get_id(
      in_obj   IN JSON_OBJECT_T,
      in_key   IN VARCHAR2,
      in_where IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_val VARCHAR2(32767) := get_text(in_obj, in_key, in_where);
   BEGIN
      -- get_text returned NULL for a member that is a string (it refuses any other): ""
      IF l_val IS NULL AND has_value(in_obj, in_key) THEN
         bad_argument(in_where || '.' || in_key || ' must not be empty (null or absent for none)');
      END IF;
      oramem_registry.check_id(l_val, in_where || '.' || in_key);
      RETURN l_val;
   END get_id;

   -- Optional string member as CLOB (record content, chunk text).
   FUNCTION get_long_text(
      in_obj   IN JSON_OBJECT_T,
      in_key   IN VARCHAR2,
      in_where IN VARCHAR2
   ) RETURN CLOB
   IS
      l_val CLOB;
   BEGIN
      IF NOT has_value(in_obj, in_key) THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_string THEN
         bad_payload(in_where || '.' || in_key || ' must be a string or null');
      END IF;
      l_val := in_obj.get_clob(in_key);
      IF l_val IS NULL THEN
         -- S16: the member is a string, so this is "" (kept, SC-4.1), which must not turn
         -- into NULL under Oracle's '' = NULL rule. An empty LOB is not NULL (SQL Language
         -- Reference, EMPTY_BLOB/EMPTY_CLOB); it is only bound, never passed to DBMS_LOB.
         RETURN EMPTY_CLOB();
      END IF;
      RETURN l_val;
   END get_long_text;

   -- Optional non-negative integer member.
   FUNCTION get_count(
      in_obj   IN JSON_OBJECT_T,
      in_key   IN VARCHAR2,
      in_where IN VARCHAR2
   ) RETURN NUMBER
   IS
      l_num NUMBER;
   BEGIN
      IF NOT has_value(in_obj, in_key) THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_number THEN
         bad_payload(in_where || '.' || in_key || ' must be an integer or null');
      END IF;
      l_num := in_obj.get_number(in_key);
      IF l_num < 0 OR l_num <> TRUNC(l_num) THEN
         bad_argument(in_where || '.' || in_key || ' must be an integer >= 0');
      END IF;
      RETURN l_num;
   END get_count;

   -- Metadata member as JSON text: NULL for absent/null, -20002 when not an object.
   FUNCTION get_metadata(
      in_obj   IN JSON_OBJECT_T,
      in_where IN VARCHAR2
   ) RETURN CLOB
   IS
   BEGIN
      IF NOT has_value(in_obj, 'metadata') THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get('metadata').is_object THEN
         bad_payload(in_where || '.metadata must be a JSON object or null');
      END IF;
      RETURN in_obj.get_object('metadata').to_clob;
   END get_metadata;

   -- Vector member as JSON array text checked against the store dimension; NULL when absent.
   FUNCTION get_vector(
      in_elem  IN JSON_ELEMENT_T,
      in_dim   IN NUMBER,
      in_where IN VARCHAR2
   ) RETURN CLOB
   IS
      l_arr JSON_ARRAY_T;
   BEGIN
      IF in_elem IS NULL OR in_elem.is_null THEN
         RETURN NULL;
      END IF;
      IF NOT in_elem.is_array THEN
         bad_payload(in_where || ' must be a JSON array of numbers or null');
      END IF;
      IF in_dim IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
            in_where || ': this store has no vector_dim, so it stores no vectors; '
            || 'open it with vector_dim set (CREATE_IF_NECESSARY) first');
      END IF;
      l_arr := TREAT(in_elem AS JSON_ARRAY_T);
      IF l_arr.get_size <> in_dim THEN
         oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
            in_where || ' has ' || l_arr.get_size || ' dimensions; the store''s vector_dim is '
            || in_dim);
      END IF;
      FOR i IN 0 .. l_arr.get_size - 1 LOOP
         IF NOT l_arr.get(i).is_number THEN
            bad_payload(in_where || ' must contain numbers only');
         END IF;
      END LOOP;
      RETURN l_arr.to_clob;
   END get_vector;

   -- A ttl member's own checks, which need no record ({"days": n|null, "anchor": ...}): its
   -- members, days (an integer >= 0 or null) and anchor. update_json runs it before the record
   -- is looked up (fake39, after left36): a bad ttl is refused whether or not the record exists,
   -- where before an unknown member on a missing record answered 0 instead of -20002.
   PROCEDURE check_ttl(
      in_ttl     IN  JSON_OBJECT_T,
      in_where   IN  VARCHAR2,
      out_days   OUT NUMBER,
      out_anchor OUT VARCHAR2
   )
   IS
   BEGIN
      -- the two members the ttl reads, and no other (left36, after red32): an unknown one was
      -- ignored, so {"days": 3, "anchor_at": "timestamp"} counted from created_at and
      -- {"ttl_days": 3} stored a record that never expires
      oramem_filter.check_keys(in_ttl, 'days,anchor', in_where);
      out_days   := get_count(in_ttl, 'days', in_where);
      out_anchor := LOWER(NVL(get_text(in_ttl, 'anchor', in_where, 32), 'created_at'));
      IF out_anchor NOT IN ('created_at', 'timestamp') THEN
         bad_argument(in_where || '.anchor must be created_at or timestamp');
      END IF;
   END check_ttl;

   -- expires_at from a ttl member ({"days": n|null, "anchor": "created_at"|"timestamp"}).
   FUNCTION ttl_expiry(
      in_ttl        IN JSON_OBJECT_T,
      in_created_at IN TIMESTAMP,
      in_event_ts   IN TIMESTAMP,
      in_where      IN VARCHAR2
   ) RETURN TIMESTAMP
   IS
      l_days   NUMBER;
      l_anchor VARCHAR2(32 CHAR);
      l_base   TIMESTAMP(6);
   BEGIN
      check_ttl(in_ttl, in_where, l_days, l_anchor);
      IF l_days IS NULL THEN
         RETURN NULL;
      END IF;
      IF l_anchor = 'timestamp' THEN
         IF in_event_ts IS NULL THEN
            oramem_errors.raise_error(oramem_errors.gc_ttl_anchor_missing,
               in_where || ': ttl anchor TIMESTAMP needs the record''s timestamp; '
               || 'pass a timestamp or use the CREATED_AT anchor');
         END IF;
         l_base := in_event_ts;
      ELSE
         l_base := in_created_at;
      END IF;
      -- S10: past year 9999 the arithmetic raises ORA-01841 / ORA-01873; say so first (-20001).
      IF l_days > DATE '9999-12-31' - CAST(l_base AS DATE) THEN
         bad_argument(in_where || '.days = ' || TO_CHAR(l_days) || ' puts the expiry after 9999-12-31; '
                      || 'use fewer days, or null for a record that never expires');
      END IF;
      RETURN l_base + NUMTODSINTERVAL(l_days, 'DAY');
   END ttl_expiry;

   FUNCTION dim_text(
      in_dim IN NUMBER
   ) RETURN VARCHAR2
   IS
   BEGIN
      -- vector_dim comes from the registry (CHECK 1..65535), never from caller input.
      RETURN TO_CHAR(TRUNC(in_dim), 'FM99990');
   END dim_text;

   FUNCTION chunk_insert_sql(
      in_store IN oramem_registry.store_t
   ) RETURN VARCHAR2
   IS
      l_chk VARCHAR2(200 CHAR) := oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_chunks);
   BEGIN
      IF in_store.vector_dim IS NULL THEN
         RETURN 'INSERT INTO ' || l_chk || ' (record_type, record_id, chunk_no, chunk_text) '
                || 'VALUES (:1, :2, :3, :4)';
      END IF;
      RETURN 'INSERT INTO ' || l_chk || ' (record_type, record_id, chunk_no, chunk_text, embedding) '
             || 'VALUES (:1, :2, :3, :4, TO_VECTOR(:5, ' || dim_text(in_store.vector_dim) || ', FLOAT32))';
   END chunk_insert_sql;

   -- S23: the retrieval rows of one record from a "chunks" JSON array (chunk_no 1..n),
   -- validated and appended to the io_* collections (dense, 1..COUNT); flush_chunks inserts
   -- them with one FORALL, instead of one EXECUTE IMMEDIATE per chunk.
   PROCEDURE collect_chunks(
      in_store       IN oramem_registry.store_t,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_chunks      IN JSON_ARRAY_T,
      in_where       IN VARCHAR2,
      io_types       IN OUT NOCOPY vc_tab_t,
      io_ids         IN OUT NOCOPY vc_tab_t,
      io_nos         IN OUT NOCOPY num_tab_t,
      io_texts       IN OUT NOCOPY clob_tab_t,
      io_vecs        IN OUT NOCOPY clob_tab_t
   )
   IS
      l_obj JSON_OBJECT_T;
      l_n   PLS_INTEGER;
   BEGIN
      IF in_chunks IS NULL THEN
         RETURN;
      END IF;
      FOR i IN 0 .. in_chunks.get_size - 1 LOOP
         IF NOT in_chunks.get(i).is_object THEN
            bad_payload(in_where || '[' || i || '] must be an object {"text", "vector"}');
         END IF;
         l_obj := TREAT(in_chunks.get(i) AS JSON_OBJECT_T);
         l_n   := io_types.COUNT + 1;
         io_types(l_n) := in_record_type;
         io_ids(l_n)   := in_record_id;
         io_nos(l_n)   := i + 1;
         io_texts(l_n) := NVL(get_long_text(l_obj, 'text', in_where || '[' || i || ']'), TO_CLOB(''));
         IF l_obj.has('vector') THEN
            io_vecs(l_n) := get_vector(l_obj.get('vector'), in_store.vector_dim,
                                       in_where || '[' || i || '].vector');
         ELSE
            io_vecs(l_n) := NULL;
         END IF;
      END LOOP;
   END collect_chunks;

   -- S23: insert the collected retrieval rows with one FORALL (PL/SQL Language Reference,
   -- FORALL: "EXECUTE IMMEDIATE ... USING collection(i)"), then empty the collections.
   PROCEDURE flush_chunks(
      in_store IN oramem_registry.store_t,
      io_types IN OUT NOCOPY vc_tab_t,
      io_ids   IN OUT NOCOPY vc_tab_t,
      io_nos   IN OUT NOCOPY num_tab_t,
      io_texts IN OUT NOCOPY clob_tab_t,
      io_vecs  IN OUT NOCOPY clob_tab_t
   )
   IS
      l_sql VARCHAR2(1000 CHAR) := chunk_insert_sql(in_store);
   BEGIN
      IF io_types.COUNT > 0 THEN
         IF in_store.vector_dim IS NULL THEN
            FORALL i IN 1 .. io_types.COUNT
               EXECUTE IMMEDIATE l_sql USING io_types(i), io_ids(i), io_nos(i), io_texts(i);
         ELSE
            FORALL i IN 1 .. io_types.COUNT
               EXECUTE IMMEDIATE l_sql USING io_types(i), io_ids(i), io_nos(i), io_texts(i), io_vecs(i);
         END IF;
      END IF;
      io_types.DELETE;
      io_ids.DELETE;
      io_nos.DELETE;
      io_texts.DELETE;
      io_vecs.DELETE;
   END flush_chunks;

   -- Issue 23: the keyword passages of one record from its "chunks" array, appended to the
   -- io_* collections (in_collect TRUE; FALSE: validate only, before anything is written).
   -- A store that groups (store_t.keyword_passages = 1, a HYBRID store whose recorded chunk
   -- policy counts tokens) takes "keyword_text" on every chunk of the record or on none:
   -- with it, the first chunk's is a non-empty string (the passage it starts), the others'
   -- a string (a passage starting there) or null (the row belongs to the passage before);
   -- without it (a PL/SQL caller) each row's own text is its passage. A passage is keyed by
   -- the chunk_no of its first row. A store that does not group refuses the member: the
   -- package never groups itself (one implementation, oramem.chunking.keyword_passages,
   -- which a test holds equal to the SQLite engine's). -20002 (gc_invalid_payload).
   PROCEDURE collect_passages(
      in_store       IN oramem_registry.store_t,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_chunks      IN JSON_ARRAY_T,
      in_where       IN VARCHAR2,
      in_collect     IN BOOLEAN,
      io_types       IN OUT NOCOPY vc_tab_t,
      io_ids         IN OUT NOCOPY vc_tab_t,
      io_nos         IN OUT NOCOPY num_tab_t,
      io_texts       IN OUT NOCOPY clob_tab_t
   )
   IS
      l_obj  JSON_OBJECT_T;
      l_with PLS_INTEGER := 0;
      l_text CLOB;
      l_n    PLS_INTEGER;
   BEGIN
      IF in_chunks IS NULL OR in_chunks.get_size = 0 THEN
         RETURN;
      END IF;
      FOR i IN 0 .. in_chunks.get_size - 1 LOOP
         IF NOT in_chunks.get(i).is_object THEN
            bad_payload(in_where || '[' || i || '] must be an object {"text", "vector"}');
         END IF;
         l_obj := TREAT(in_chunks.get(i) AS JSON_OBJECT_T);
         -- the members a retrieval row reads (here and in collect_chunks), and no other
         -- (left36): {"text": ..., "embedding": [...]} stored a row without its vector, and
         -- this pass runs before anything of the call is written
         oramem_filter.check_keys(l_obj, 'text,vector,keyword_text', in_where || '[' || i || ']');
         IF l_obj.has('keyword_text') THEN
            l_with := l_with + 1;
         END IF;
      END LOOP;
      IF l_with > 0 AND in_store.keyword_passages <> 1 THEN
         bad_payload(in_where || ': keyword_text is accepted only by a HYBRID store whose chunk policy '
                     || 'counts tokens, and store ' || in_store.memory_store_id || ' does not group its '
                     || 'keyword rows; send the chunks without it');
      END IF;
      IF l_with > 0 AND l_with < in_chunks.get_size THEN
         bad_payload(in_where || ': give keyword_text on every chunk of a record or on none ('
                     || l_with || ' of ' || in_chunks.get_size || ' chunks have it)');
      END IF;
      IF in_store.keyword_passages <> 1 THEN
         RETURN;
      END IF;
      FOR i IN 0 .. in_chunks.get_size - 1 LOOP
         l_obj := TREAT(in_chunks.get(i) AS JSON_OBJECT_T);
         IF l_with = 0 THEN
            l_text := NVL(get_long_text(l_obj, 'text', in_where || '[' || i || ']'), TO_CLOB(''));
         ELSIF l_obj.get('keyword_text').is_null THEN
            IF i = 0 THEN
               bad_payload(in_where || '[0].keyword_text must be a non-empty string (the first row starts a passage)');
            END IF;
            l_text := NULL;
         ELSE
            l_text := get_long_text(l_obj, 'keyword_text', in_where || '[' || i || ']');
            -- "" reads back as a NULL CLOB from get_clob (S16, get_long_text)
            IF i = 0 AND l_obj.get_clob('keyword_text') IS NULL THEN
               bad_payload(in_where || '[0].keyword_text must be a non-empty string (the first row starts a passage)');
            END IF;
         END IF;
         IF in_collect AND l_text IS NOT NULL THEN
            l_n := io_types.COUNT + 1;
            io_types(l_n) := in_record_type;
            io_ids(l_n)   := in_record_id;
            io_nos(l_n)   := i + 1;
            io_texts(l_n) := l_text;
         END IF;
      END LOOP;
   END collect_passages;

   -- Issue 23: insert the collected passages with one FORALL (as flush_chunks), then empty
   -- the collections. Only a store that groups collects any.
   PROCEDURE flush_passages(
      in_store IN oramem_registry.store_t,
      io_types IN OUT NOCOPY vc_tab_t,
      io_ids   IN OUT NOCOPY vc_tab_t,
      io_nos   IN OUT NOCOPY num_tab_t,
      io_texts IN OUT NOCOPY clob_tab_t
   )
   IS
      l_sql VARCHAR2(1000 CHAR);
   BEGIN
      IF io_types.COUNT > 0 THEN
         l_sql := 'INSERT INTO '
                  || oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_passages)
                  || ' (record_type, record_id, chunk_no, passage_text) VALUES (:1, :2, :3, :4)';
         FORALL i IN 1 .. io_types.COUNT
            EXECUTE IMMEDIATE l_sql USING io_types(i), io_ids(i), io_nos(i), io_texts(i);
      END IF;
      io_types.DELETE;
      io_ids.DELETE;
      io_nos.DELETE;
      io_texts.DELETE;
   END flush_passages;

   FUNCTION get_chunks(
      in_obj   IN JSON_OBJECT_T,
      in_key   IN VARCHAR2,
      in_where IN VARCHAR2
   ) RETURN JSON_ARRAY_T
   IS
   BEGIN
      IF NOT has_value(in_obj, in_key) THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_array THEN
         bad_payload(in_where || '.' || in_key || ' must be a JSON array');
      END IF;
      RETURN in_obj.get_array(in_key);
   END get_chunks;

   ---------------------------------------------------------------------------------------
   -- deletion events and hooks
   ---------------------------------------------------------------------------------------
   -- The values of in_vals as a JSON array of strings, in order (the deletion event's id lists).
   FUNCTION json_array_of(
      in_vals IN vc_tab_t
   ) RETURN JSON_ARRAY_T
   IS
      l_arr JSON_ARRAY_T := JSON_ARRAY_T();
   BEGIN
      FOR i IN 1 .. in_vals.COUNT LOOP
         l_arr.append(in_vals(i));
      END LOOP;
      RETURN l_arr;
   END json_array_of;

   FUNCTION make_event(
      in_store_id IN VARCHAR2,
      in_types    IN vc_tab_t,
      in_ids      IN vc_tab_t,
      in_threads  IN vc_tab_t,
      in_users    IN vc_tab_t,
      in_agents   IN vc_tab_t,
      in_rec_agents IN vc_tab_t,   -- agent_id of record i (NULL: none)
      in_rec_users  IN vc_tab_t,   -- user_id of record i (NULL: none)
      in_reason   IN VARCHAR2
   ) RETURN JSON_OBJECT_T
   IS
      l_event  JSON_OBJECT_T := JSON_OBJECT_T();
      l_recs   JSON_ARRAY_T  := JSON_ARRAY_T();
      l_pair   JSON_ARRAY_T;
      l_arr    JSON_ARRAY_T;
      l_scope  JSON_OBJECT_T;
   BEGIN
      l_event.put('memory_store_id', in_store_id);
      FOR i IN 1 .. in_types.COUNT LOOP
         l_pair := JSON_ARRAY_T();
         l_pair.append(in_types(i));
         l_pair.append(in_ids(i));
         l_recs.append(l_pair);
      END LOOP;
      l_event.put('records', l_recs);
      -- who each deleted record belonged to (DeletionEvent.scopes), a key left out for NULL:
      -- ids are unique per record type only, so the knowledge hook takes a row only with its
      -- own record (oramem_kg_jobs.on_store_delete)
      l_arr := JSON_ARRAY_T();
      FOR i IN 1 .. in_rec_agents.COUNT LOOP
         l_scope := JSON_OBJECT_T();
         IF in_rec_agents(i) IS NOT NULL THEN
            l_scope.put('agent_id', in_rec_agents(i));
         END IF;
         IF in_rec_users(i) IS NOT NULL THEN
            l_scope.put('user_id', in_rec_users(i));
         END IF;
         l_arr.append(l_scope);
      END LOOP;
      l_event.put('scopes', l_arr);
      l_event.put('thread_ids', json_array_of(in_threads));
      l_event.put('user_ids', json_array_of(in_users));
      l_event.put('agent_ids', json_array_of(in_agents));
      l_event.put('reason', in_reason);
      RETURN l_event;
   END make_event;

   -- Call the store's deletion hook (SC-8.5) in the current transaction.
   PROCEDURE call_hook(
      in_store IN oramem_registry.store_t,
      in_event IN JSON_OBJECT_T
   )
   IS
      l_hook  VARCHAR2(400 CHAR);
      l_clob  CLOB;
      l_kg    PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_kg FROM user_tables
      WHERE  table_name = in_store.memory_store_id || '_KG_EVENT';
      IF in_store.deletion_hook IS NULL AND l_kg = 0 THEN
         RETURN;
      END IF;
      l_clob := in_event.to_clob;
      g_hook_depth := g_hook_depth + 1;
      IF l_kg > 0 THEN
         EXECUTE IMMEDIATE 'BEGIN ' || gc_kg_hook || '(:1); END;' USING l_clob;
      END IF;
      -- a store registered with the knowledge hook itself (before D5) runs it once
      IF in_store.deletion_hook IS NOT NULL AND UPPER(in_store.deletion_hook) <> gc_kg_hook THEN
         -- Validated by oramem_admin.set_deletion_hook; re-checked because it enters code text.
         l_hook := DBMS_ASSERT.QUALIFIED_SQL_NAME(in_store.deletion_hook);
         EXECUTE IMMEDIATE 'BEGIN ' || l_hook || '(:1); END;' USING l_clob;
      END IF;
      g_hook_depth := g_hook_depth - 1;
   EXCEPTION
      WHEN OTHERS THEN
         g_hook_depth := GREATEST(g_hook_depth - 1, 0);
         RAISE;
   END call_hook;

   -- KC-3.10, the erasure lock order (plsql/VERIFY.md, "One lock order for an erasure and
   -- the writes it races"): an actor's cascade is an erasure, and its first statement on the
   -- store's tables is the knowledge layer's LOCK TABLE <ID>_KG_AGENT IN EXCLUSIVE MODE when
   -- the store has knowledge tables. Every knowledge commit first takes its agent's row of
   -- that table (INSERT or SELECT ... FOR UPDATE; lock_agent in oramem_kg_jobs), so a commit
   -- in flight ends before the cascade reads or deletes (each later statement sees its rows)
   -- and one that starts later waits until the caller's transaction ends. The Python driver
   -- takes the same lock first in its erasure transactions; a PL/SQL caller of
   -- delete_record_json / delete_record with in_cascade = 1 gets it here. Held until the
   -- caller commits or rolls back (a rollback to the savepoint oramem_delete, taken before
   -- it, releases it too). The name is built from the validated store id only.
   PROCEDURE lock_erasers(
      in_store IN oramem_registry.store_t
   )
   IS
      l_kg PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_kg FROM user_tables
      WHERE  table_name = in_store.memory_store_id || '_KG_AGENT';
      IF l_kg > 0 THEN
         EXECUTE IMMEDIATE 'LOCK TABLE '
            || DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(in_store.memory_store_id || '_KG_AGENT'),
                                        capitalize => TRUE)
            || ' IN EXCLUSIVE MODE';
      END IF;
   END lock_erasers;

   -- Refuse an oramem_store write made from inside a deletion hook (S18). Called to
   -- initialise the first declaration of each writing call: an exception raised while a
   -- declaration is elaborated skips that block's own handler (PL/SQL Language Reference,
   -- 23, "Propagation of Exceptions Raised in Declarations"), so the refused call rolls
   -- nothing back and the outer call's savepoint is untouched.
   FUNCTION not_in_hook(
      in_what IN VARCHAR2
   ) RETURN PLS_INTEGER
   IS
   BEGIN
      IF g_hook_depth > 0 THEN
         bad_argument(in_what || ' was called from a deletion hook: a hook runs inside the '
                      || 'deleting call''s transaction and must not write through oramem_store '
                      || 'or commit; queue the work and do it after the call returns');
      END IF;
      RETURN 0;
   END not_in_hook;

   ---------------------------------------------------------------------------------------
   -- add
   ---------------------------------------------------------------------------------------
   FUNCTION add_json(
      in_store_id   IN VARCHAR2,
      in_batch      IN CLOB,
      in_batch_size IN PLS_INTEGER DEFAULT 256
   ) RETURN CLOB
   IS
      l_guard     PLS_INTEGER := not_in_hook('oramem_store.add_json');  -- first (S18)
      l_store     oramem_registry.store_t;
      l_rec_tab   VARCHAR2(200 CHAR);
      l_doc       JSON_OBJECT_T;
      l_records   JSON_ARRAY_T;
      l_r         JSON_OBJECT_T;
      l_where     VARCHAR2(100 CHAR);
      l_now       TIMESTAMP(6) := oramem_registry.utc_now;
      l_types     vc_tab_t;
      l_ids       vc_tab_t;
      l_threads   vc_tab_t;
      l_users     vc_tab_t;
      l_agents    vc_tab_t;
      l_roles     vc_tab_t;
      l_contents  clob_tab_t;
      l_metas     clob_tab_t;
      l_ts        ts_tab_t;
      l_exp       ts_tab_t;
      l_chunks    JSON_ARRAY_T;
      l_seen      seen_t;
      l_new_thr   seen_t;           -- thread id -> index of the first record naming it
      l_thr_order vc_tab_t;         -- the same thread ids in first-use order (S21)
      l_thr_id    VARCHAR2(600 CHAR);
      l_key       VARCHAR2(600 CHAR);
      l_dup       VARCHAR2(512 CHAR);
      l_n         PLS_INTEGER;
      l_lo        PLS_INTEGER;
      l_hi        PLS_INTEGER;
      l_ins       VARCHAR2(1000 CHAR);
      l_result    JSON_ARRAY_T := JSON_ARRAY_T();
      l_keys      JSON_ARRAY_T := JSON_ARRAY_T();   -- [[record_type, id], ...] (S23)
      l_pair      JSON_ARRAY_T;
      l_key_doc   CLOB;
      l_c_types   vc_tab_t;                         -- retrieval rows of one slice (S23)
      l_c_ids     vc_tab_t;
      l_c_nos     num_tab_t;
      l_c_texts   clob_tab_t;
      l_c_vecs    clob_tab_t;
      l_p_types   vc_tab_t;                         -- keyword passages of one slice (issue 23)
      l_p_ids     vc_tab_t;
      l_p_nos     num_tab_t;
      l_p_texts   clob_tab_t;
      l_mode      VARCHAR2(16 CHAR);                -- on_conflict: fail | skip | replace
      l_created   ts_tab_t;
      l_pos       num_tab_t;                        -- record i's position in l_records
      l_kept      JSON_OBJECT_T;
      l_st_types  vc_tab_t;                         -- (record_type, id) already stored
      l_st_ids    vc_tab_t;
      l_st_agents vc_tab_t;                         -- their agent_id / user_id (the event's scopes)
      l_st_users  vc_tab_t;
      l_foreign   PLS_INTEGER;                      -- replace: stored records of another scope (red40)
      l_listed    VARCHAR2(2000 CHAR);              -- the first 5 of them, for the message
      l_thr_foreign BOOLEAN;                        -- one of them is a thread row (imp47)
      l_message   VARCHAR2(2600 CHAR);              -- the refusal: the 2000 of l_listed and 500 more at most
      l_skip      seen_t;
      l_j         PLS_INTEGER;
      l_empty     vc_tab_t;
      l_event     JSON_OBJECT_T;
   BEGIN
      SAVEPOINT oramem_add;
      l_store   := oramem_registry.ready_store(in_store_id);
      l_rec_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records);
      IF in_batch_size IS NULL OR in_batch_size NOT BETWEEN 1 AND 10000 THEN
         bad_argument('batch_size must be between 1 and 10000');
      END IF;
      l_doc := parse_object(in_batch, 'add batch');
      -- every member add reads, and no other (red32): an unknown one was ignored, so a record
      -- written with the list request's spelling ("user": "bob") was stored as no user's, which
      -- his erasure leaves behind and every reader of unscoped records gets
      oramem_filter.check_keys(l_doc, 'records,on_conflict,embedder', 'add batch');
      IF NOT l_doc.has('records') OR NOT l_doc.get('records').is_array THEN
         bad_payload('add batch must be {"records": [...]}');
      END IF;
      l_records := l_doc.get_array('records');
      l_n := l_records.get_size;
      l_mode := LOWER(NVL(get_text(l_doc, 'on_conflict', 'add batch', 16), 'fail'));
      IF l_mode NOT IN ('fail', 'skip', 'replace') THEN
         bad_argument('add batch.on_conflict must be fail, skip or replace');
      END IF;
      IF l_doc.has('embedder') THEN
         check_embedder(l_store, l_doc.get('embedder'), 'add batch', 'nothing was written');
      END IF;

      -- 1. validate every record and compute its stored values
      FOR i IN 0 .. l_n - 1 LOOP
         l_where := 'records[' || i || ']';
         IF NOT l_records.get(i).is_object THEN
            bad_payload(l_where || ' must be a JSON object');
         END IF;
         l_r := TREAT(l_records.get(i) AS JSON_OBJECT_T);
         oramem_filter.check_keys(l_r, 'id,record_type,content,thread_id,user_id,agent_id,role,timestamp,'
                                  || 'metadata,restored_times,ttl,chunks', l_where);
         l_ids(i + 1)   := get_text(l_r, 'id', l_where);
         IF l_ids(i + 1) IS NULL THEN
            bad_argument(l_where || '.id is required');
         END IF;
         oramem_registry.check_id(l_ids(i + 1), l_where || '.id');
         l_types(i + 1) := oramem_registry.check_record_type(get_text(l_r, 'record_type', l_where, 64),
                                                             l_where || '.record_type');
         l_key := l_types(i + 1) || '|' || l_ids(i + 1);
         IF l_seen.EXISTS(l_key) THEN
            oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id,
               'record id ' || l_ids(i + 1) || ' appears twice in this call; nothing was stored');
         END IF;
         l_seen(l_key) := i + 1;
         l_pair := JSON_ARRAY_T();
         l_pair.append(l_types(i + 1));
         l_pair.append(l_ids(i + 1));
         l_keys.append(l_pair);
         l_contents(i + 1) := get_long_text(l_r, 'content', l_where);
         l_threads(i + 1)  := get_id(l_r, 'thread_id', l_where);
         l_users(i + 1)    := get_id(l_r, 'user_id', l_where);
         l_agents(i + 1)   := get_id(l_r, 'agent_id', l_where);
         l_roles(i + 1)    := get_text(l_r, 'role', l_where, 64);
         IF NOT oramem_registry.is_scoped_type(l_types(i + 1))
            AND (l_threads(i + 1) IS NOT NULL OR l_users(i + 1) IS NOT NULL OR l_agents(i + 1) IS NOT NULL)
            AND l_types(i + 1) <> 'thread'
         THEN
            bad_argument(l_where || ': ' || l_types(i + 1) || ' records take no thread_id, user_id or agent_id');
         END IF;
         IF l_roles(i + 1) IS NOT NULL AND l_types(i + 1) <> 'message' THEN
            bad_argument(l_where || ': role is accepted only for message records');
         END IF;
         l_ts(i + 1)    := oramem_registry.parse_utc(get_text(l_r, 'timestamp', l_where, 64),
                                                     l_where || '.timestamp');
         l_metas(i + 1) := get_metadata(l_r, l_where);
         l_pos(i + 1)     := i;
         l_created(i + 1) := l_now;
         l_exp(i + 1)     := NULL;
         IF has_value(l_r, 'restored_times') THEN
            -- a backup's kept times (restore_batches): created_at as stored, expires_at as stored
            -- (null = never expires), instead of this call's time and the ttl
            IF has_value(l_r, 'ttl') THEN
               bad_argument(l_where || ': give restored_times or ttl, not both');
            END IF;
            IF NOT l_r.get('restored_times').is_object THEN
               bad_payload(l_where || '.restored_times must be {"created_at": "...", "expires_at": "..." | null}');
            END IF;
            l_kept := l_r.get_object('restored_times');
            -- the two kept times, and no other member (left36): {"created_at": ..., "expires": ...}
            -- stored a record that never expires
            oramem_filter.check_keys(l_kept, 'created_at,expires_at', l_where || '.restored_times');
            l_created(i + 1) := oramem_registry.parse_utc(
               get_text(l_kept, 'created_at', l_where || '.restored_times', 64), l_where || '.restored_times.created_at');
            IF l_created(i + 1) IS NULL THEN
               bad_argument(l_where || '.restored_times.created_at is required');
            END IF;
            l_exp(i + 1) := oramem_registry.parse_utc(
               get_text(l_kept, 'expires_at', l_where || '.restored_times', 64), l_where || '.restored_times.expires_at');
            IF l_exp(i + 1) IS NOT NULL AND NOT oramem_registry.is_scoped_type(l_types(i + 1)) THEN
               bad_argument(l_where || ': a ' || l_types(i + 1) || ' record never expires; '
                            || 'its restored_times.expires_at must be null');
            END IF;
         ELSIF has_value(l_r, 'ttl') THEN
            IF NOT oramem_registry.is_scoped_type(l_types(i + 1)) THEN
               bad_argument(l_where || ': ttl applies only to message, memory, guideline, fact '
                            || 'and preference records');
            END IF;
            IF NOT l_r.get('ttl').is_object THEN
               bad_payload(l_where || '.ttl must be {"days": n|null, "anchor": ...} or null');
            END IF;
            l_exp(i + 1) := ttl_expiry(l_r.get_object('ttl'), l_now, l_ts(i + 1), l_where || '.ttl');
         END IF;
         IF l_types(i + 1) = 'thread' THEN
            l_threads(i + 1) := l_ids(i + 1);
         END IF;
         -- issue 23: keyword_text on every chunk or none, only where the store groups;
         -- checked here, before anything of the call is written
         collect_passages(l_store, l_types(i + 1), l_ids(i + 1), get_chunks(l_r, 'chunks', l_where),
                          l_where || '.chunks', FALSE, l_p_types, l_p_ids, l_p_nos, l_p_texts);
      END LOOP;

      -- 2. ids already stored (SC-4.3, SC-2.4), one statement for the batch, then
      --    on_conflict: fail = refuse the call; skip = leave those records out (the stored
      --    ones stay); replace = delete the stored ones (their retrieval rows go by FK
      --    ON DELETE CASCADE) in this transaction, through the deletion hook (reason
      --    "replace", as the SQLite engine)
      IF l_n > 0 THEN
         -- S23: over the batch's (record_type, id) pairs, not a second parse of the whole
         -- batch (vectors included): the DOM above is the only parse of in_batch
         l_key_doc := l_keys.to_clob;
         EXECUTE IMMEDIATE
            'SELECT r.record_type, r.record_id, r.agent_id, r.user_id FROM JSON_TABLE(:1, ''$[*]'' COLUMNS ('
            || 'rt VARCHAR2(64 CHAR) PATH ''$[0]'', id VARCHAR2(512 CHAR) PATH ''$[1]'')) jt '
            || 'JOIN ' || l_rec_tab || ' r ON r.record_type = jt.rt AND r.record_id = jt.id '
            || 'ORDER BY r.record_id, r.record_type'
            BULK COLLECT INTO l_st_types, l_st_ids, l_st_agents, l_st_users USING l_key_doc;
         IF l_st_ids.COUNT > 0 AND l_mode = 'fail' THEN
            l_dup := l_st_ids(1);
            oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id,
               'record id ' || l_dup || ' already exists in store ' || l_store.memory_store_id
               || '; nothing of this call was stored');
         ELSIF l_st_ids.COUNT > 0 AND l_mode = 'skip' THEN
            FOR s IN 1 .. l_st_ids.COUNT LOOP
               l_skip(l_st_types(s) || '|' || l_st_ids(s)) := 1;
            END LOOP;
            -- keep the other records, in batch order, at 1 .. l_j
            l_j := 0;
            FOR i IN 1 .. l_n LOOP
               IF NOT l_skip.EXISTS(l_types(i) || '|' || l_ids(i)) THEN
                  l_j := l_j + 1;
                  IF l_j < i THEN
                     l_types(l_j)    := l_types(i);
                     l_ids(l_j)      := l_ids(i);
                     l_contents(l_j) := l_contents(i);
                     l_threads(l_j)  := l_threads(i);
                     l_users(l_j)    := l_users(i);
                     l_agents(l_j)   := l_agents(i);
                     l_roles(l_j)    := l_roles(i);
                     l_ts(l_j)       := l_ts(i);
                     l_metas(l_j)    := l_metas(i);
                     l_created(l_j)  := l_created(i);
                     l_exp(l_j)      := l_exp(i);
                     l_pos(l_j)      := l_pos(i);
                  END IF;
               END IF;
            END LOOP;
            l_n := l_j;
         ELSIF l_st_ids.COUNT > 0 THEN
            -- red40: replace restores a record over the same record. A stored record of
            -- another user or agent under the id (ids are the application's: Alice's and
            -- Bob's 'note-1') is another actor's record, never deleted for this line:
            -- refused, naming the ids (never whose), before anything is written, as the
            -- SQLite engine (mutations._refuse_foreign_replace). A thread row (restore_threads,
            -- SC-13.6) says who opened the thread (SC-13.2): one of another opener, or of no
            -- user where the line names one and the reverse, is refused the same way (imp47):
            -- Bob's line would otherwise make him the opener of Alice's private thread or of
            -- the agent's shared one.
            l_foreign := 0;
            l_listed := NULL;
            l_thr_foreign := FALSE;
            FOR s IN 1 .. l_st_ids.COUNT LOOP
               l_j := l_seen(l_st_types(s) || '|' || l_st_ids(s));
               IF NOT (same_id(l_agents(l_j), l_st_agents(s)) AND same_id(l_users(l_j), l_st_users(s))) THEN
                  l_foreign := l_foreign + 1;
                  IF l_st_types(s) = 'thread' THEN
                     l_thr_foreign := TRUE;
                  END IF;
                  -- no operand of these concatenations is NULL (record_id and record_type are
                  -- NOT NULL): nothing rests on how || treats a NULL
                  IF l_foreign = 1 THEN
                     l_listed := '''' || l_st_ids(s) || ''' (' || l_st_types(s) || ')';
                  ELSIF l_foreign <= 5 THEN
                     -- bounded: 5 x (id <= 255 chars, gc_max_id_chars; type <= 64; 7 more) < 2000
                     l_listed := l_listed || ', ''' || l_st_ids(s) || ''' (' || l_st_types(s) || ')';
                  END IF;
               END IF;
            END LOOP;
            IF l_foreign > 5 THEN
               -- bounded: the 1630 chars above and at most 18 more < 2000
               l_listed := l_listed || ' and ' || TO_CHAR(l_foreign - 5) || ' more';
            END IF;
            IF l_foreign > 0 THEN
               l_message := 'record_ids stored for another user or agent than the new records name: '
                  || l_listed
                  || '; replace only replaces a record of the same user and agent (the same record, '
                  || 'restored), so nothing was added: give these records other ids, or delete the '
                  || 'stored ones first if they are to go';
               IF l_thr_foreign THEN
                  -- bounded: 71 + 1648 (l_listed) + 190 + 112 = 2021 chars < 2600; appended only when set (no NULL operand)
                  l_message := l_message || '; a thread row says who opened the thread, which replace '
                     || 'never changes (on_conflict "skip" keeps the stored row)';
               END IF;
               oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id, l_message);
            END IF;
            EXECUTE IMMEDIATE
               'DELETE FROM ' || l_rec_tab || ' r WHERE (r.record_type, r.record_id) IN ('
               || 'SELECT jt.rt, jt.id FROM JSON_TABLE(:1, ''$[*]'' COLUMNS ('
               || 'rt VARCHAR2(64 CHAR) PATH ''$[0]'', id VARCHAR2(512 CHAR) PATH ''$[1]'')) jt) '
               || 'RETURNING r.record_type, r.record_id, r.agent_id, r.user_id INTO :2, :3, :4, :5'
               USING l_key_doc RETURNING BULK COLLECT INTO l_st_types, l_st_ids, l_st_agents, l_st_users;
            l_event := make_event(l_store.memory_store_id, l_st_types, l_st_ids, l_empty, l_empty,
                                  l_empty, l_st_agents, l_st_users, 'replace');
            call_hook(l_store, l_event);
         END IF;
      END IF;

      -- implicit threads of the records that are written, in first-use order (S21)
      FOR i IN 1 .. l_n LOOP
         IF l_threads(i) IS NOT NULL AND NOT l_new_thr.EXISTS(l_threads(i)) AND l_types(i) <> 'thread' THEN
            l_new_thr(l_threads(i)) := i;
            l_thr_order(l_thr_order.COUNT + 1) := l_threads(i);
         END IF;
      END LOOP;

      -- 3. records, in batch order (seq_no is an identity column), in slices of batch_size;
      --    each slice's retrieval rows follow with one FORALL (S23)
      l_ins := 'INSERT INTO ' || l_rec_tab
            || ' (record_type, record_id, content, thread_id, user_id, agent_id, role, event_ts,'
            || ' metadata, created_at, expires_at) VALUES (:1, :2, :3, :4, :5, :6, :7, :8,'
            || ' CASE WHEN :9 IS NULL THEN NULL ELSE JSON(:10) END, :11, :12)';
      l_lo := 1;
      WHILE l_lo <= l_n LOOP
         l_hi := LEAST(l_lo + in_batch_size - 1, l_n);
         FORALL i IN l_lo .. l_hi
            EXECUTE IMMEDIATE l_ins
               USING l_types(i), l_ids(i), l_contents(i), l_threads(i), l_users(i), l_agents(i),
                     l_roles(i), l_ts(i), l_metas(i), l_metas(i), l_created(i), l_exp(i);
         FOR i IN l_lo .. l_hi LOOP
            l_r := TREAT(l_records.get(l_pos(i)) AS JSON_OBJECT_T);
            l_chunks := get_chunks(l_r, 'chunks', 'records[' || l_pos(i) || ']');
            collect_chunks(l_store, l_types(i), l_ids(i), l_chunks, 'records[' || l_pos(i) || '].chunks',
                           l_c_types, l_c_ids, l_c_nos, l_c_texts, l_c_vecs);
            collect_passages(l_store, l_types(i), l_ids(i), l_chunks, 'records[' || l_pos(i) || '].chunks',
                             TRUE, l_p_types, l_p_ids, l_p_nos, l_p_texts);
         END LOOP;
         flush_chunks(l_store, l_c_types, l_c_ids, l_c_nos, l_c_texts, l_c_vecs);
         flush_passages(l_store, l_p_types, l_p_ids, l_p_nos, l_p_texts);
         l_lo := l_hi + 1;
      END LOOP;

      -- 4. implicit threads (SC-2.3), owned by the first record naming them, in first-use
      --    order like the SQLite engine (seq_no order = list('thread') order, S21)
      FOR t IN 1 .. l_thr_order.COUNT LOOP
         l_thr_id := l_thr_order(t);
         BEGIN
            EXECUTE IMMEDIATE
               'INSERT INTO ' || l_rec_tab
               || ' (record_type, record_id, thread_id, user_id, agent_id, created_at) '
               || 'SELECT ''thread'', :1, :2, :3, :4, :5 FROM dual WHERE NOT EXISTS ('
               || 'SELECT 1 FROM ' || l_rec_tab || ' t WHERE t.record_type = ''thread'''
               || ' AND t.record_id = :6)'
               USING l_thr_id, l_thr_id, l_users(l_new_thr(l_thr_id)),
                     l_agents(l_new_thr(l_thr_id)), l_now, l_thr_id;
         EXCEPTION
            WHEN DUP_VAL_ON_INDEX THEN
               NULL;  -- created concurrently by another session: it exists, which is all we need
         END;
      END LOOP;

      FOR i IN 1 .. l_n LOOP
         l_result.append(l_ids(i));
      END LOOP;
      RETURN l_result.to_clob;
   EXCEPTION
      WHEN DUP_VAL_ON_INDEX THEN
         ROLLBACK TO SAVEPOINT oramem_add;
         oramem_errors.raise_error(oramem_errors.gc_duplicate_record_id,
            'a record id of this call was stored concurrently by another session; '
            || 'nothing of this call was stored');
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_add;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.add_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END add_json;

   ---------------------------------------------------------------------------------------
   -- reads
   ---------------------------------------------------------------------------------------
   FUNCTION get_json(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_lock        IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB
   IS
      l_store  oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_type   VARCHAR2(32 CHAR) := oramem_registry.check_record_type(in_record_type);
      l_out    CLOB;
   BEGIN
      IF in_record_id IS NULL THEN
         bad_argument('record_id is required');
      END IF;
      oramem_registry.check_id(in_record_id, 'record_id');
      IF in_lock IS NULL OR in_lock NOT IN (0, 1) THEN
         bad_argument('lock must be 0 or 1');
      END IF;
      -- SC-12.10: in a caller's block (in_lock = 1) the row read is locked until the block
      -- ends, so a scope check made on it holds for the write it guards (one table, no
      -- DISTINCT, aggregate or set operator: FOR UPDATE is allowed; an absent or expired
      -- record returns no row and locks nothing)
      EXECUTE IMMEDIATE
         'SELECT ' || oramem_registry.record_json_sql('r') || ' FROM '
         || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records)
         || ' r WHERE r.record_type = :1 AND r.record_id = :2'
         || ' AND (r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))'
         || CASE WHEN in_lock = 1 THEN ' FOR UPDATE' END
         INTO l_out USING l_type, in_record_id;
      RETURN l_out;
   EXCEPTION
      WHEN NO_DATA_FOUND THEN
         RETURN NULL;
   END get_json;

   FUNCTION list_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN CLOB
   IS
      l_store   oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_req     JSON_OBJECT_T := parse_object(in_request, 'list request');
      l_type    VARCHAR2(32 CHAR);
      l_limit   NUMBER;
      l_binds   oramem_filter.bind_list_t;
      l_rwhere  CLOB;           -- S4: the statement is a CLOB (DBMS_SQL.PARSE takes one)
      l_cond    VARCHAR2(32767);
      l_scope   JSON_OBJECT_T;
      l_sql     CLOB;
      l_out     CLOB;
      l_n       PLS_INTEGER;
   BEGIN
      -- every member the listing reads, and no other (red32): an unknown one was ignored, so
      -- "user_id": ... (the add batch's and the record's spelling) listed every user's records
      oramem_filter.check_keys(l_req, 'record_type,limit,thread,user,agent,metadata_filter', 'list request');
      l_type := oramem_registry.check_record_type(get_text(l_req, 'record_type', 'list request', 64));
      IF NOT l_req.has('limit') THEN
         l_limit := gc_max_list_limit;
      ELSE
         l_limit := get_count(l_req, 'limit', 'list request');
         IF l_limit = 0 THEN
            bad_argument('limit must be >= 1 or null');
         END IF;
      END IF;
      l_n := l_binds.COUNT + 1;
      l_binds(l_n).name := 'rt';
      l_binds(l_n).kind := 'S';
      l_binds(l_n).str_val := l_type;
      l_rwhere := 'r.record_type = :rt AND (r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))';
      FOR d IN 1 .. 3 LOOP
         DECLARE
            l_dim VARCHAR2(10 CHAR) := CASE d WHEN 1 THEN 'thread' WHEN 2 THEN 'user' ELSE 'agent' END;
         BEGIN
            IF has_value(l_req, l_dim) THEN
               IF NOT l_req.get(l_dim).is_object THEN
                  bad_payload(l_dim || ' must be {"match": ..., "value": ...}');
               END IF;
               l_scope := l_req.get_object(l_dim);
               oramem_filter.check_keys(l_scope, 'match,value', l_dim);
               -- N6: list reads the raw scope columns, as the SQLite engine's list
               l_cond := oramem_filter.scope_condition(l_dim, get_text(l_scope, 'match', l_dim, 16),
                                                       get_text(l_scope, 'value', l_dim, 255), 'r', l_binds,
                                                       in_raw => 1);
               -- left36: profiles and threads are unscoped types, whose scope the Python list
               -- ignores (SC-3.3, the vendor's rule); reading their raw columns here listed
               -- none of Bob's profiles, ignoring would list Alice's to Bob's request: refused
               -- (-20001) instead, after the same checks as any scope and before anything is read
               IF l_cond IS NOT NULL AND NOT oramem_registry.is_scoped_type(l_type) THEN
                  bad_argument('list request.' || l_dim || ': ' || l_type || ' records are not listed by '
                               || l_dim || ' (SC-3.3: the store''s list ignores a scope for them, so it '
                               || 'would list them all, every user''s); leave '
                               || l_dim || ' out or give {"match": "any"}, and read one '
                               || l_type || ' by its id with get_json');
               END IF;
               IF l_cond IS NOT NULL THEN
                  -- bounded: a scope condition is fixed text (< 200 bytes), its value is bound
                  l_rwhere := l_rwhere || ' AND ' || l_cond;
               END IF;
            END IF;
         END;
      END LOOP;
      IF l_req.has('metadata_filter') THEN
         IF l_req.get('metadata_filter').is_null THEN
            l_rwhere := l_rwhere || ' AND r.metadata IS NULL';  -- bounded: fixed text
         ELSIF l_req.get('metadata_filter').is_object THEN
            -- l_rwhere is a CLOB (S4): the compiled filter has no byte cap
            l_rwhere := l_rwhere || ' AND '
                       || oramem_filter.compile_filter(l_req.get_object('metadata_filter').to_clob,
                                                       'r.metadata', l_binds);
         ELSE
            oramem_errors.raise_error(oramem_errors.gc_invalid_filter,
               'metadata_filter must be a JSON object or null');
         END IF;
      END IF;
      l_sql := 'SELECT JSON_ARRAYAGG(x.j FORMAT JSON ORDER BY x.seq_no RETURNING CLOB) FROM ('
            || 'SELECT ' || oramem_registry.record_json_sql('r') || ' AS j, r.seq_no FROM '
            || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records)
            || ' r WHERE ' || l_rwhere || ' ORDER BY r.seq_no DESC';
      IF l_limit IS NOT NULL THEN
         l_n := l_binds.COUNT + 1;
         l_binds(l_n).name := 'lim';
         l_binds(l_n).kind := 'N';
         l_binds(l_n).num_val := l_limit;
         l_sql := l_sql || ' FETCH FIRST :lim ROWS ONLY';  -- bounded: fixed text
      END IF;
      l_sql := l_sql || ') x';  -- bounded: fixed text
      l_out := oramem_filter.query_clob(l_sql, l_binds);
      RETURN NVL(l_out, TO_CLOB('[]'));
   END list_json;

   FUNCTION list_thread_messages_json(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2,
      in_last_n    IN PLS_INTEGER DEFAULT NULL
   ) RETURN CLOB
   IS
      l_store  oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_sql    VARCHAR2(4000 CHAR);
      l_out    CLOB;
   BEGIN
      IF in_thread_id IS NULL THEN
         bad_argument('thread_id is required');
      END IF;
      oramem_registry.check_id(in_thread_id, 'thread_id');
      IF in_last_n IS NOT NULL AND in_last_n < 1 THEN
         bad_argument('last_n must be >= 1 or null');
      END IF;
      l_sql := 'SELECT JSON_ARRAYAGG(x.j FORMAT JSON ORDER BY x.seq_no RETURNING CLOB) FROM ('
            || 'SELECT ' || oramem_registry.record_json_sql('r') || ' AS j, r.seq_no FROM '
            || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records)
            || ' r WHERE r.record_type = ''message'' AND r.thread_id = :1'
            || ' AND (r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))'
            || ' ORDER BY r.seq_no DESC';
      IF in_last_n IS NULL THEN
         EXECUTE IMMEDIATE l_sql || ') x' INTO l_out USING in_thread_id;
      ELSE
         EXECUTE IMMEDIATE l_sql || ' FETCH FIRST :2 ROWS ONLY) x' INTO l_out USING in_thread_id, in_last_n;
      END IF;
      RETURN NVL(l_out, TO_CLOB('[]'));
   END list_thread_messages_json;

   -- export_json: one page of the store's live records with their retrieval rows, for
   -- oramem migrate (Oracle as the source) and its checksum comparison.
   FUNCTION export_json(
      in_store_id  IN VARCHAR2,
      in_after_seq IN NUMBER DEFAULT 0,
      in_limit     IN PLS_INTEGER DEFAULT 500
   ) RETURN CLOB
   IS
      l_store  oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_vector VARCHAR2(200 CHAR);
      l_sql    VARCHAR2(32767);
      l_out    CLOB;
   BEGIN
      IF in_after_seq IS NULL OR in_after_seq < 0 OR in_after_seq <> TRUNC(in_after_seq) THEN
         bad_argument('after_seq must be an integer >= 0 (0 = from the first record)');
      END IF;
      IF in_limit IS NULL OR in_limit NOT BETWEEN 1 AND 10000 THEN
         bad_argument('limit must be between 1 and 10000');
      END IF;
      -- FROM_VECTOR in SQL (its output format cannot be chosen in PL/SQL): the dense text
      -- form, a JSON array of numbers; a store without vector_dim has no embedding column
      IF l_store.vector_dim IS NULL THEN
         l_vector := 'NULL';
      ELSE
         l_vector := 'FROM_VECTOR(c.embedding RETURNING CLOB) FORMAT JSON';
      END IF;
      -- bounded: fixed text, two quoted object names (< 100 bytes each) and record_json_sql (< 1,000 bytes)
      l_sql := 'SELECT JSON_ARRAYAGG(x.j FORMAT JSON ORDER BY x.seq_no RETURNING CLOB) FROM ('
            || 'SELECT JSON_OBJECT(''record'' VALUE ' || oramem_registry.record_json_sql('r') || ' FORMAT JSON, '
            || '''chunks'' VALUE (SELECT JSON_ARRAYAGG(JSON_OBJECT(''text'' VALUE c.chunk_text, '
            || '''vector'' VALUE ' || l_vector || ' NULL ON NULL RETURNING CLOB) FORMAT JSON '
            || 'ORDER BY c.chunk_no RETURNING CLOB) FROM '
            || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks)
            || ' c WHERE c.record_type = r.record_type AND c.record_id = r.record_id) FORMAT JSON '
            || 'NULL ON NULL RETURNING CLOB) AS j, r.seq_no FROM '
            || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records)
            || ' r WHERE r.seq_no > :1 AND (r.expires_at IS NULL OR r.expires_at > SYS_EXTRACT_UTC(SYSTIMESTAMP))'
            || ' ORDER BY r.seq_no FETCH FIRST :2 ROWS ONLY) x';
      EXECUTE IMMEDIATE l_sql INTO l_out USING in_after_seq, in_limit;
      RETURN NVL(l_out, TO_CLOB('[]'));
   END export_json;

   ---------------------------------------------------------------------------------------
   -- update
   ---------------------------------------------------------------------------------------
   FUNCTION update_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN PLS_INTEGER
   IS
      l_guard     PLS_INTEGER := not_in_hook('oramem_store.update_json');  -- first (S18)
      l_store      oramem_registry.store_t;
      l_rec_tab    VARCHAR2(200 CHAR);
      l_chk_tab    VARCHAR2(200 CHAR);
      l_rec_upd    VARCHAR2(1000 CHAR);   -- N11: the UPDATE of the set columns
      l_req        JSON_OBJECT_T;
      l_type       VARCHAR2(32 CHAR);
      l_id         VARCHAR2(512 CHAR);
      l_event_ts   TIMESTAMP(6);
      l_created    TIMESTAMP(6);
      l_set_c      PLS_INTEGER := 0;
      l_content    CLOB;
      l_set_m      PLS_INTEGER := 0;
      l_meta       CLOB;
      l_set_t      PLS_INTEGER := 0;
      l_ts         TIMESTAMP(6);
      l_set_e      PLS_INTEGER := 0;
      l_exp        TIMESTAMP(6);
      l_old_exp    TIMESTAMP(6);
      l_ttl_days   NUMBER;               -- check_ttl's reads, before the lookup (fake39)
      l_ttl_anchor VARCHAR2(32 CHAR);
      l_retrieval  VARCHAR2(32 CHAR);
      l_vectors    JSON_ARRAY_T;
      l_chunks     JSON_ARRAY_T;        -- the replacement rows, read once before the lookup (fake40)
      l_rows       PLS_INTEGER;
      l_vec        CLOB;
      l_c_types    vc_tab_t;        -- retrieval rows to insert or re-vector (S23)
      l_c_ids      vc_tab_t;
      l_c_nos      num_tab_t;
      l_c_texts    clob_tab_t;
      l_c_vecs     clob_tab_t;
      l_p_types    vc_tab_t;        -- keyword passages of the replacement rows (issue 23)
      l_p_ids      vc_tab_t;
      l_p_nos      num_tab_t;
      l_p_texts    clob_tab_t;
      l_kwp_tab    VARCHAR2(200 CHAR);   -- NULL: the store has no passage table (not HYBRID)
      l_upd        VARCHAR2(1000 CHAR);
   BEGIN
      SAVEPOINT oramem_update;
      l_store   := oramem_registry.ready_store(in_store_id);
      l_rec_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records);
      l_chk_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks);
      IF l_store.search_strategy = 'hybrid' THEN
         -- every HYBRID store of schema version 4 has it (oramem_admin.ensure_passages)
         l_kwp_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_passages);
      END IF;
      l_req  := parse_object(in_request, 'update request');
      -- every member update reads, and no other (red32): an ignored one ("text" for "content")
      -- was not applied while the call answered 1 for the members it did read
      oramem_filter.check_keys(l_req, 'record_type,record_id,retrieval,content,chunks,vectors,metadata,'
                               || 'timestamp,ttl,embedder', 'update request');
      IF l_req.has('embedder') THEN
         check_embedder(l_store, l_req.get('embedder'), 'update request', 'nothing was written');
      END IF;
      l_type := oramem_registry.check_record_type(get_text(l_req, 'record_type', 'update request', 64));
      l_id   := get_text(l_req, 'record_id', 'update request');
      IF l_id IS NULL THEN
         bad_argument('record_id is required');
      END IF;
      oramem_registry.check_id(l_id, 'record_id');
      l_retrieval := LOWER(NVL(get_text(l_req, 'retrieval', 'update request', 32), 'keep'));
      IF l_retrieval NOT IN ('keep', 'clear', 'replace', 'revector', 'strip_vectors') THEN
         bad_argument('retrieval must be keep, clear, replace, revector or strip_vectors');
      END IF;
      -- chunks are read by retrieval replace only, vectors by revector only (left36): with
      -- another retrieval either was ignored while the call answered 1, so
      -- {"retrieval": "keep", "chunks": [...]} changed no retrieval row
      IF l_req.has('chunks') AND l_retrieval <> 'replace' THEN
         bad_payload('update request.chunks is read with "retrieval": "replace" only (retrieval is '
                     || l_retrieval || ', so it would be ignored); send "retrieval": "replace" or drop chunks');
      END IF;
      IF l_req.has('vectors') AND l_retrieval <> 'revector' THEN
         bad_payload('update request.vectors is read with "retrieval": "revector" only (retrieval is '
                     || l_retrieval || ', so it would be ignored); send "retrieval": "revector" or drop vectors');
      END IF;
      IF NOT (l_req.has('content') OR l_req.has('metadata') OR l_req.has('timestamp')
              OR l_req.has('ttl') OR l_retrieval <> 'keep')
      THEN
         bad_argument('update needs at least one of text, index_text, embedding, metadata, '
                      || 'timestamp, ttl_days, ttl_anchor');
      END IF;
      -- the ttl's own checks before the record is looked up (fake39, after left36): a bad ttl
      -- is refused whatever the record's state; the expiry itself needs the record's times
      -- (ttl_expiry, below)
      IF l_req.has('ttl') THEN
         IF NOT oramem_registry.is_scoped_type(l_type) THEN
            bad_argument('ttl applies only to message, memory, guideline, fact and preference records');
         END IF;
         IF NOT l_req.get('ttl').is_object THEN
            bad_payload('update request.ttl must be {"days": n|null, "anchor": ...}');
         END IF;
         check_ttl(l_req.get_object('ttl'), 'update request.ttl', l_ttl_days, l_ttl_anchor);
      END IF;
      -- every other member's own checks before the record is looked up too (fake40, after
      -- fake39): a malformed content, metadata, timestamp, chunks or vectors is refused
      -- whatever the record's state, where before it was read after the lookup and a missing
      -- (or expired) record answered 0 for it. What needs the record (the ttl's expiry, the
      -- timestamp as its event time, the count of its retrieval rows) stays after the lookup.
      IF l_req.has('content') THEN
         l_set_c := 1;
         l_content := get_long_text(l_req, 'content', 'update request');
         IF l_content IS NULL AND oramem_registry.is_profile_type(l_type) THEN
            bad_argument('text=None is not allowed for ' || l_type || ' records');
         END IF;
      END IF;
      IF l_req.has('metadata') THEN
         l_set_m := 1;
         l_meta := get_metadata(l_req, 'update request');
      END IF;
      IF l_req.has('timestamp') THEN
         l_set_t := 1;
         l_ts := oramem_registry.parse_utc(get_text(l_req, 'timestamp', 'update request', 64), 'timestamp');
      END IF;
      IF l_retrieval = 'replace' THEN
         -- issue 23: the replacement rows' keyword_text, checked before anything is written;
         -- the rows themselves (text, vector) are checked and collected here and inserted
         -- after the record's old rows are deleted (flush_chunks below)
         l_chunks := get_chunks(l_req, 'chunks', 'update request');
         collect_passages(l_store, l_type, l_id, l_chunks,
                          'update request.chunks', FALSE, l_p_types, l_p_ids, l_p_nos, l_p_texts);
         collect_chunks(l_store, l_type, l_id, l_chunks,
                        'update request.chunks', l_c_types, l_c_ids, l_c_nos, l_c_texts, l_c_vecs);
      ELSIF l_retrieval = 'revector' THEN
         -- every vector is validated before the lookup; their count against the record's
         -- rows needs the record (below)
         l_vectors := get_chunks(l_req, 'vectors', 'update request');
         IF l_vectors IS NULL THEN
            l_vectors := JSON_ARRAY_T();
         END IF;
         FOR i IN 0 .. l_vectors.get_size - 1 LOOP
            -- raises -20006 for a non-null vector on a store without vector_dim
            l_vec := get_vector(l_vectors.get(i), l_store.vector_dim, 'vectors[' || i || ']');
            -- S17: such a store has no embedding column and all its vectors are null
            CONTINUE WHEN l_store.vector_dim IS NULL;
            l_c_types(i + 1) := l_type;
            l_c_ids(i + 1)   := l_id;
            l_c_nos(i + 1)   := i + 1;
            l_c_vecs(i + 1)  := l_vec;
         END LOOP;
      END IF;

      BEGIN
         EXECUTE IMMEDIATE
            'SELECT r.event_ts, r.created_at, r.expires_at FROM ' || l_rec_tab || ' r'
            || ' WHERE r.record_type = :1 AND r.record_id = :2'
            || ' FOR UPDATE'
            INTO l_event_ts, l_created, l_old_exp USING l_type, l_id;
      EXCEPTION
         WHEN NO_DATA_FOUND THEN
            RETURN 0;
      END;
      -- SC-5.6: an expired, not yet purged record is invisible, and only a new ttl revives it.
      IF l_old_exp IS NOT NULL AND l_old_exp <= oramem_registry.utc_now AND NOT l_req.has('ttl') THEN
         RETURN 0;
      END IF;

      IF l_set_t = 1 THEN
         l_event_ts := l_ts;   -- checked before the lookup; the ttl's TIMESTAMP anchor reads it
      END IF;
      IF l_req.has('ttl') THEN
         -- checked before the lookup (check_ttl above)
         l_set_e := 1;
         l_exp := ttl_expiry(l_req.get_object('ttl'), l_created, l_event_ts, 'update request.ttl');
      END IF;

      -- N11: the CLOB content and the JSON metadata are assigned only when the request sets
      -- them (a ttl- or timestamp-only update must not rewrite a large LOB onto itself; the
      -- docs found do not say a self-assignment is skipped). The SET list comes from the flags
      -- (fixed column names, no caller text); positional binds follow the text, hence one
      -- USING list per shape. The two TIMESTAMP columns keep the CASE form (cheap).
      l_rec_upd := 'UPDATE ' || l_rec_tab || ' r SET'
         || CASE WHEN l_set_c = 1 THEN ' r.content = :c,' END
         || CASE WHEN l_set_m = 1 THEN ' r.metadata = CASE WHEN :m IS NULL THEN NULL ELSE JSON(:mj) END,' END
         || ' r.event_ts   = CASE WHEN :st = 1 THEN :ts ELSE r.event_ts END,'
         || ' r.expires_at = CASE WHEN :se = 1 THEN :ex ELSE r.expires_at END'
         || ' WHERE r.record_type = :rt AND r.record_id = :ri';
      IF l_set_c = 1 AND l_set_m = 1 THEN
         EXECUTE IMMEDIATE l_rec_upd
            USING l_content, l_meta, l_meta, l_set_t, l_ts, l_set_e, l_exp, l_type, l_id;
      ELSIF l_set_c = 1 THEN
         EXECUTE IMMEDIATE l_rec_upd USING l_content, l_set_t, l_ts, l_set_e, l_exp, l_type, l_id;
      ELSIF l_set_m = 1 THEN
         EXECUTE IMMEDIATE l_rec_upd USING l_meta, l_meta, l_set_t, l_ts, l_set_e, l_exp, l_type, l_id;
      ELSE
         EXECUTE IMMEDIATE l_rec_upd USING l_set_t, l_ts, l_set_e, l_exp, l_type, l_id;
      END IF;

      CASE l_retrieval
         WHEN 'keep' THEN
            NULL;
         WHEN 'clear' THEN
            EXECUTE IMMEDIATE 'DELETE FROM ' || l_chk_tab || ' WHERE record_type = :1 AND record_id = :2'
               USING l_type, l_id;
            -- a record's passages are those of its current rows (issue 23)
            IF l_kwp_tab IS NOT NULL THEN
               EXECUTE IMMEDIATE 'DELETE FROM ' || l_kwp_tab || ' WHERE record_type = :1 AND record_id = :2'
                  USING l_type, l_id;
            END IF;
         WHEN 'replace' THEN
            EXECUTE IMMEDIATE 'DELETE FROM ' || l_chk_tab || ' WHERE record_type = :1 AND record_id = :2'
               USING l_type, l_id;
            IF l_kwp_tab IS NOT NULL THEN
               EXECUTE IMMEDIATE 'DELETE FROM ' || l_kwp_tab || ' WHERE record_type = :1 AND record_id = :2'
                  USING l_type, l_id;
            END IF;
            -- the rows collected (and checked) before the lookup
            flush_chunks(l_store, l_c_types, l_c_ids, l_c_nos, l_c_texts, l_c_vecs);
            collect_passages(l_store, l_type, l_id, l_chunks,
                             'update request.chunks', TRUE, l_p_types, l_p_ids, l_p_nos, l_p_texts);
            flush_passages(l_store, l_p_types, l_p_ids, l_p_nos, l_p_texts);
         WHEN 'revector' THEN
            -- l_vectors was read and every vector checked before the lookup
            EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ' || l_chk_tab || ' WHERE record_type = :1 AND record_id = :2'
               INTO l_rows USING l_type, l_id;
            IF l_vectors.get_size <> l_rows THEN
               oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
                  'embedding has ' || l_vectors.get_size || ' vector(s) but the record has '
                  || l_rows || ' retrieval row(s); pass one vector per row');
            END IF;
            -- S23: one FORALL for all of the record's rows (none without vector_dim)
            IF l_c_vecs.COUNT > 0 THEN
               l_upd := 'UPDATE ' || l_chk_tab || ' SET embedding = TO_VECTOR(:1, '
                        || dim_text(l_store.vector_dim) || ', FLOAT32)'
                        || ' WHERE record_type = :2 AND record_id = :3 AND chunk_no = :4';
               FORALL i IN 1 .. l_c_vecs.COUNT
                  EXECUTE IMMEDIATE l_upd USING l_c_vecs(i), l_c_types(i), l_c_ids(i), l_c_nos(i);
            END IF;
         WHEN 'strip_vectors' THEN
            IF l_store.vector_dim IS NOT NULL THEN
               EXECUTE IMMEDIATE 'UPDATE ' || l_chk_tab || ' SET embedding = NULL'
                  || ' WHERE record_type = :1 AND record_id = :2'
                  USING l_type, l_id;
            END IF;
      END CASE;
      RETURN 1;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_update;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.update_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END update_json;

   ---------------------------------------------------------------------------------------
   -- deletes
   ---------------------------------------------------------------------------------------
   -- Delete a thread and everything scoped to it, fill the event and run the hook; returns 1
   -- when the thread row existed, else 0 (N3: as oramem/sqlite/mutations.py delete_thread,
   -- whose event always names the thread, so the hook runs even when no row was left: the
   -- knowledge layer then still removes the thread's session observations and queued jobs).
   FUNCTION remove_thread(
      in_store     IN oramem_registry.store_t,
      in_thread_id IN VARCHAR2,
      in_reason    IN VARCHAR2,
      out_event    OUT JSON_OBJECT_T
   ) RETURN PLS_INTEGER
   IS
      l_types   vc_tab_t;
      l_ids     vc_tab_t;
      l_ragents vc_tab_t;
      l_rusers  vc_tab_t;
      l_threads vc_tab_t;
      l_empty   vc_tab_t;
      l_existed PLS_INTEGER := 0;
   BEGIN
      EXECUTE IMMEDIATE
         'DELETE FROM ' || oramem_registry.quoted_name(in_store.memory_store_id, oramem_registry.gc_obj_records)
         || ' WHERE thread_id = :1 OR (record_type = ''thread'' AND record_id = :2)'
         || ' RETURNING record_type, record_id, agent_id, user_id INTO :3, :4, :5, :6'
         USING in_thread_id, in_thread_id RETURNING BULK COLLECT INTO l_types, l_ids, l_ragents, l_rusers;
      l_threads(1) := in_thread_id;
      out_event := make_event(in_store.memory_store_id, l_types, l_ids, l_threads, l_empty,
                              l_empty, l_ragents, l_rusers, in_reason);
      call_hook(in_store, out_event);
      FOR i IN 1 .. l_types.COUNT LOOP
         IF l_types(i) = 'thread' THEN
            l_existed := 1;
         END IF;
      END LOOP;
      RETURN l_existed;
   END remove_thread;

   FUNCTION delete_record_json(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_cascade     IN PLS_INTEGER DEFAULT 0,
      in_reason      IN VARCHAR2 DEFAULT NULL,
      in_names       IN CLOB DEFAULT NULL
   ) RETURN CLOB
   IS
      l_guard     PLS_INTEGER := not_in_hook('oramem_store.delete_record_json');  -- first (S18)
      l_store    oramem_registry.store_t;
      l_rec_tab  VARCHAR2(200 CHAR);
      l_type     VARCHAR2(32 CHAR);
      l_col      VARCHAR2(16 CHAR);
      l_other    VARCHAR2(64 CHAR);
      l_mine_not VARCHAR2(200 CHAR);
      l_types    vc_tab_t;
      l_ids      vc_tab_t;
      l_threads  vc_tab_t;
      l_users    vc_tab_t;
      l_agents   vc_tab_t;
      l_ragents  vc_tab_t;   -- agent_id / user_id of each deleted record (the event's scopes)
      l_rusers   vc_tab_t;
      l_athreads vc_tab_t;   -- the threads holding one of the actor's own records (actor_thread_ids)
      l_exps     ts_tab_t;
      l_now      TIMESTAMP(6) := oramem_registry.utc_now;
      l_event    JSON_OBJECT_T;
      l_count    PLS_INTEGER := 0;
      l_result   JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      SAVEPOINT oramem_delete;
      l_store   := oramem_registry.ready_store(in_store_id);
      l_rec_tab := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records);
      l_type    := oramem_registry.check_record_type(in_record_type);
      IF in_record_id IS NULL THEN
         bad_argument('record_id is required');
      END IF;
      oramem_registry.check_id(in_record_id, 'record_id');
      IF in_cascade IS NULL OR in_cascade NOT IN (0, 1) THEN
         bad_argument('cascade must be 0 or 1');
      END IF;
      -- as the Python store (SC-8.2, red32): a cascade of another type was a plain delete, the
      -- flag silently ignored
      IF in_cascade = 1 AND l_type <> 'thread' AND NOT oramem_registry.is_profile_type(l_type) THEN
         bad_argument('cascade = 1 applies to user_profile, agent_profile and thread records, not ' || l_type
                      || ' (SC-8.2); delete it with cascade = 0');
      END IF;
      IF in_reason IS NOT NULL AND (in_reason NOT IN ('forget', 'erase') OR in_cascade <> 1
                                    OR NOT oramem_registry.is_profile_type(l_type)) THEN
         bad_argument('reason must be NULL, or ''forget'' or ''erase'' for the cascade of a user_profile or agent_profile');
      END IF;

      IF l_type = 'thread' THEN
         -- N3: a thread is a container; deleting it is delete_thread (oramem/sqlite/engine.py delete)
         l_count := remove_thread(l_store, in_record_id, 'delete_thread', l_event);
      ELSIF in_cascade = 1 AND oramem_registry.is_profile_type(l_type) THEN
         -- an erasure: the erasers' lock before anything of the store is read or deleted
         lock_erasers(l_store);
         -- SC-8.2, SC-13: the actor's own records, the threads that are the actor's alone,
         -- and the profile itself (even when the profile row is absent). A record carrying
         -- another user (user erasure) or another agent (agent erasure) is never removed,
         -- whoever opened its thread. l_col is one of two fixed names.
         l_col := CASE l_type WHEN 'user_profile' THEN 'user_id' ELSE 'agent_id' END;
         -- "another value of l_col" in a thread: a user's thread stays when another user
         -- writes in it (SC-13.3); an agent's when any record has no agent or another one
         -- (SC-13.4). A NULL compares unknown, so o.user_id <> :x skips unscoped records.
         -- The thread row (thread_id = its own id) is not one of those records: it names
         -- only who opened the thread, which decides nothing about erasure (SC-13.2), so a
         -- thread another user opened whose records of his are gone is the actor's alone
         -- and goes whole, its row with it (as the SQLite engine, mutations.release_actor).
         -- Only live records count (SC-5.4, the :n bind after l_other): another actor's
         -- expired, unpurged record does not keep a thread shared, and it is not removed
         -- with the thread either (l_mine_not: SC-13.1, it stays for the purge or a revival,
         -- SC-5.6; as the SQLite engine, mutations.cascade_victims). Neither predicate is
         -- ever NULL, so NOT of the second is exact.
         l_other := CASE l_type
                       WHEN 'user_profile' THEN '(o.user_id IS NOT NULL AND o.user_id <> :a)'
                       ELSE '(o.agent_id IS NULL OR o.agent_id <> :a)'
                    END;
         l_mine_not := CASE l_type
                          WHEN 'user_profile' THEN '(r.user_id IS NOT NULL AND r.user_id <> :b)'
                          ELSE '(r.agent_id IS NULL OR r.agent_id <> :b)'
                       END;
         -- the threads removed whole (the event's thread_ids)
         EXECUTE IMMEDIATE
            'SELECT DISTINCT p.thread_id FROM ' || l_rec_tab || ' p'
            || ' WHERE p.' || l_col || ' = :1 AND p.thread_id IS NOT NULL'
            || ' AND NOT EXISTS (SELECT 1 FROM ' || l_rec_tab || ' o'
            || ' WHERE o.thread_id = p.thread_id AND o.record_type <> ''thread'' AND ' || l_other
            || ' AND (o.expires_at IS NULL OR o.expires_at > :n))'
            BULK COLLECT INTO l_threads USING in_record_id, in_record_id, l_now;
         -- every thread holding one of the actor's own records (the thread rows aside:
         -- opening a thread is not writing in it), removed whole or not: the event's
         -- actor_thread_ids (KC-3.10: the knowledge eraser takes the actor's words out of the
         -- context other scopes' queued writes copied from those conversations; as the
         -- SQLite engine, mutations.actor_thread_ids)
         EXECUTE IMMEDIATE
            'SELECT DISTINCT r.thread_id FROM ' || l_rec_tab || ' r'
            || ' WHERE r.' || l_col || ' = :1 AND r.thread_id IS NOT NULL AND r.record_type <> ''thread'''
            BULK COLLECT INTO l_athreads USING in_record_id;
         -- SC-13.2: a thread row naming the actor (it opened the thread) in a thread that
         -- stays keeps existing, without the actor's id
         EXECUTE IMMEDIATE
            'UPDATE ' || l_rec_tab || ' t SET t.' || l_col || ' = NULL'
            || ' WHERE t.record_type = ''thread'' AND t.' || l_col || ' = :1'
            || ' AND EXISTS (SELECT 1 FROM ' || l_rec_tab || ' o'
            || ' WHERE o.thread_id = t.record_id AND o.record_type <> ''thread'' AND ' || l_other
            || ' AND (o.expires_at IS NULL OR o.expires_at > :n))'
            USING in_record_id, in_record_id, l_now;
         EXECUTE IMMEDIATE
            'DELETE FROM ' || l_rec_tab || ' r WHERE (r.record_type = :1 AND r.record_id = :2)'
            || ' OR (r.record_type NOT IN (''user_profile'', ''agent_profile'')'
            || ' AND (r.' || l_col || ' = :3'
            || ' OR (r.thread_id IN (SELECT p.thread_id FROM ' || l_rec_tab || ' p'
            || ' WHERE p.' || l_col || ' = :4 AND p.thread_id IS NOT NULL'
            || ' AND NOT EXISTS (SELECT 1 FROM ' || l_rec_tab || ' o'
            || ' WHERE o.thread_id = p.thread_id AND o.record_type <> ''thread'' AND ' || l_other
            || ' AND (o.expires_at IS NULL OR o.expires_at > :n)))'
            || ' AND NOT (r.record_type <> ''thread'' AND r.expires_at IS NOT NULL'
            || ' AND r.expires_at <= :x AND ' || l_mine_not || '))))'
            || ' RETURNING r.record_type, r.record_id, r.expires_at, r.agent_id, r.user_id'
            || ' INTO :r1, :r2, :r3, :r4, :r5'
            USING l_type, in_record_id, in_record_id, in_record_id, in_record_id, l_now, l_now, in_record_id
            RETURNING BULK COLLECT INTO l_types, l_ids, l_exps, l_ragents, l_rusers;
         FOR i IN 1 .. l_types.COUNT LOOP
            -- S15: 1 only for a visible record (an expired, unpurged one is deleted silently)
            IF l_types(i) = l_type AND l_ids(i) = in_record_id
               AND (l_exps(i) IS NULL OR l_exps(i) > l_now)
            THEN
               l_count := 1;
            END IF;
         END LOOP;
         -- S14: the cascade event names the actor even when no row was left (SC-8.2), so
         -- the hook can remove what other layers keep for it (as the SQLite engine).
         IF l_type = 'user_profile' THEN
            l_users(1) := in_record_id;
         ELSE
            l_agents(1) := in_record_id;
         END IF;
         l_event := make_event(l_store.memory_store_id, l_types, l_ids, l_threads, l_users,
                               l_agents, l_ragents, l_rusers,
                               CASE WHEN in_reason = 'forget' THEN 'forget' ELSE 'cascade' END);
         l_event.put('actor_thread_ids', json_array_of(l_athreads));
         IF in_reason = 'forget' AND in_names IS NOT NULL THEN
            l_event.put('names', JSON_ARRAY_T.parse(in_names));   -- N4: the hook sees the names
         END IF;
         IF in_reason = 'erase' THEN
            -- the caller erases the knowledge layer itself, next in this transaction
            -- (SyncOracleEngine.delete with a registered eraser): the knowledge hook leaves
            -- it the rows, as for a forget; the event stays a cascade for the store's own hook
            l_event.put('knowledge', 'caller');
         END IF;
         call_hook(l_store, l_event);
      ELSE
         EXECUTE IMMEDIATE
            'DELETE FROM ' || l_rec_tab || ' WHERE record_type = :1 AND record_id = :2'
            || ' RETURNING record_type, record_id, expires_at, agent_id, user_id INTO :3, :4, :5, :6, :7'
            USING l_type, in_record_id RETURNING BULK COLLECT INTO l_types, l_ids, l_exps, l_ragents, l_rusers;
         IF l_types.COUNT > 0 AND (l_exps(1) IS NULL OR l_exps(1) > l_now) THEN
            l_count := 1;  -- S15: visible records only
         END IF;
         IF l_types.COUNT > 0 THEN
            l_event := make_event(l_store.memory_store_id, l_types, l_ids, l_threads, l_users,
                                  l_agents, l_ragents, l_rusers, 'delete');
            call_hook(l_store, l_event);
         END IF;
      END IF;

      l_result.put('count', l_count);
      IF l_event IS NULL THEN
         l_result.put_null('event');
      ELSE
         l_result.put('event', l_event);
      END IF;
      RETURN l_result.to_clob;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_delete;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.delete_record_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END delete_record_json;

   FUNCTION delete_keys_json(
      in_store_id IN VARCHAR2,
      in_keys     IN CLOB
   ) RETURN CLOB
   IS
      l_guard    PLS_INTEGER := not_in_hook('oramem_store.delete_keys_json');  -- first (S18)
      l_store    oramem_registry.store_t;
      l_keys     JSON_ELEMENT_T;
      l_result   JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      SAVEPOINT oramem_delete_keys;
      l_store := oramem_registry.ready_store(in_store_id);
      IF in_keys IS NULL THEN
         bad_argument('keys is required (a JSON array of [record_type, record_id] pairs)');
      END IF;
      l_keys := JSON_ELEMENT_T.parse(in_keys);
      IF NOT l_keys.is_array THEN
         bad_argument('keys must be a JSON array of [record_type, record_id] pairs');
      END IF;
      -- N4: one statement, as add_json's replace path; retrieval rows by ON DELETE CASCADE
      EXECUTE IMMEDIATE
         'DELETE FROM ' || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records)
         || ' r WHERE (r.record_type, r.record_id) IN ('
         || 'SELECT jt.rt, jt.id FROM JSON_TABLE(:1, ''$[*]'' COLUMNS ('
         || 'rt VARCHAR2(64 CHAR) PATH ''$[0]'', id VARCHAR2(512 CHAR) PATH ''$[1]'')) jt)'
         -- records of no user only: the actor's cascade already removed the erased user's;
         -- another user's record under a named key is his and stays (SC-13.1)
         || ' AND r.user_id IS NULL'
         USING in_keys;
      l_result.put('count', SQL%ROWCOUNT);
      RETURN l_result.to_clob;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_delete_keys;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.delete_keys_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END delete_keys_json;

   FUNCTION delete_record(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_cascade     IN PLS_INTEGER DEFAULT 0
   ) RETURN PLS_INTEGER
   IS
      l_result JSON_OBJECT_T;
   BEGIN
      l_result := JSON_OBJECT_T.parse(delete_record_json(in_store_id, in_record_type, in_record_id, in_cascade));
      RETURN l_result.get_number('count');
   END delete_record;

   FUNCTION delete_thread_json(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2
   ) RETURN CLOB
   IS
      l_guard     PLS_INTEGER := not_in_hook('oramem_store.delete_thread_json');  -- first (S18)
      l_store   oramem_registry.store_t;
      l_event   JSON_OBJECT_T;
      l_count   PLS_INTEGER;
      l_result  JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      SAVEPOINT oramem_delete_thread;
      l_store := oramem_registry.ready_store(in_store_id);
      IF in_thread_id IS NULL THEN
         bad_argument('thread_id is required');
      END IF;
      oramem_registry.check_id(in_thread_id, 'thread_id');
      l_count := remove_thread(l_store, in_thread_id, 'delete_thread', l_event);
      l_result.put('count', l_count);
      IF l_event IS NULL THEN
         l_result.put_null('event');
      ELSE
         l_result.put('event', l_event);
      END IF;
      RETURN l_result.to_clob;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_delete_thread;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.delete_thread_json', l_store.memory_store_id);
         END IF;
         RAISE;
   END delete_thread_json;

   FUNCTION delete_thread(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2
   ) RETURN PLS_INTEGER
   IS
      l_result JSON_OBJECT_T;
   BEGIN
      l_result := JSON_OBJECT_T.parse(delete_thread_json(in_store_id, in_thread_id));
      RETURN l_result.get_number('count');
   END delete_thread;

   ---------------------------------------------------------------------------------------
   -- TTL purge
   ---------------------------------------------------------------------------------------
   -- The purge loop. in_collect = FALSE (purge_expired, the scheduler job) keeps no events:
   -- the hook still gets each batch's event, but nothing grows with the rows removed (S22).
   PROCEDURE purge_rows(
      in_store_id     IN VARCHAR2,
      in_batch_rows   IN PLS_INTEGER,
      in_max_seconds  IN PLS_INTEGER,
      in_commit       IN PLS_INTEGER,
      in_collect      IN BOOLEAN,
      out_count       OUT PLS_INTEGER,
      io_events       IN OUT NOCOPY JSON_ARRAY_T
   )
   IS
      l_guard     PLS_INTEGER := not_in_hook('oramem_store.purge_expired');  -- first (S18)
      l_store     oramem_registry.store_t;
      l_rec_tab   VARCHAR2(200 CHAR);
      l_ref       TIMESTAMP(6);
      l_deadline  TIMESTAMP WITH TIME ZONE;
      l_types     vc_tab_t;
      l_ids       vc_tab_t;
      l_ragents   vc_tab_t;   -- agent_id / user_id of each purged record (the event's scopes)
      l_rusers    vc_tab_t;
      l_empty     vc_tab_t;
      l_event     JSON_OBJECT_T;
   BEGIN
      out_count := 0;
      SAVEPOINT oramem_purge;
      l_store := oramem_registry.ready_store(in_store_id);
      IF in_batch_rows IS NULL OR in_batch_rows NOT BETWEEN 1 AND 100000 THEN
         bad_argument('batch_rows must be between 1 and 100000');
      END IF;
      IF in_max_seconds IS NULL OR in_max_seconds < 1 THEN
         bad_argument('max_seconds must be >= 1');
      END IF;
      IF in_commit IS NULL OR in_commit NOT IN (0, 1) THEN
         bad_argument('commit must be 0 or 1');
      END IF;
      l_rec_tab  := oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_records);
      l_ref      := oramem_registry.utc_now;   -- one reference time per run
      l_deadline := SYSTIMESTAMP + NUMTODSINTERVAL(in_max_seconds, 'SECOND');
      LOOP
         -- Retrieval rows go with their records (FK ON DELETE CASCADE).
         EXECUTE IMMEDIATE
            'DELETE FROM ' || l_rec_tab || ' WHERE expires_at <= :1 AND ROWNUM <= :2'
            || ' RETURNING record_type, record_id, agent_id, user_id INTO :3, :4, :5, :6'
            USING l_ref, in_batch_rows RETURNING BULK COLLECT INTO l_types, l_ids, l_ragents, l_rusers;
         out_count := out_count + l_types.COUNT;
         IF l_types.COUNT > 0 AND (in_collect OR l_store.deletion_hook IS NOT NULL) THEN
            l_event := make_event(l_store.memory_store_id, l_types, l_ids, l_empty, l_empty,
                                  l_empty, l_ragents, l_rusers, 'purge');
            call_hook(l_store, l_event);
            IF in_collect THEN
               io_events.append(l_event);
            END IF;
         END IF;
         IF in_commit = 1 THEN
            COMMIT;
            SAVEPOINT oramem_purge;
         END IF;
         EXIT WHEN l_types.COUNT < in_batch_rows OR SYSTIMESTAMP >= l_deadline;
      END LOOP;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK TO SAVEPOINT oramem_purge;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.purge_expired', l_store.memory_store_id);
         END IF;
         RAISE;
   END purge_rows;

   FUNCTION purge_expired_json(
      in_store_id     IN VARCHAR2,
      in_batch_rows   IN PLS_INTEGER DEFAULT 1000,
      in_max_seconds  IN PLS_INTEGER DEFAULT 300,
      in_commit       IN PLS_INTEGER DEFAULT 0,
      in_with_events  IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB
   IS
      l_total   PLS_INTEGER;
      l_events  JSON_ARRAY_T := JSON_ARRAY_T();
      l_result  JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      IF in_with_events IS NULL OR in_with_events NOT IN (0, 1) THEN
         bad_argument('with_events must be 0 or 1');
      END IF;
      -- N2: events are kept (a DOM growing with the batches) only when the caller asks
      purge_rows(in_store_id, in_batch_rows, in_max_seconds, in_commit, in_with_events = 1,
                 l_total, l_events);
      l_result.put('count', l_total);
      IF in_with_events = 1 THEN
         l_result.put('events', l_events);
      END IF;
      RETURN l_result.to_clob;
   END purge_expired_json;

   FUNCTION purge_expired(
      in_store_id     IN VARCHAR2,
      in_batch_rows   IN PLS_INTEGER DEFAULT 1000,
      in_max_seconds  IN PLS_INTEGER DEFAULT 300,
      in_commit       IN PLS_INTEGER DEFAULT 0
   ) RETURN PLS_INTEGER
   IS
      l_total   PLS_INTEGER;
      l_none    JSON_ARRAY_T := JSON_ARRAY_T();
   BEGIN
      purge_rows(in_store_id, in_batch_rows, in_max_seconds, in_commit, FALSE, l_total, l_none);
      RETURN l_total;
   END purge_expired;

   PROCEDURE run_purge_job(
      in_store_id IN VARCHAR2
   )
   IS
      l_store  oramem_registry.store_t;
      l_found  BOOLEAN;
      l_rows   PLS_INTEGER;
   BEGIN
      oramem_registry.find_store(in_store_id, l_store, l_found);
      IF NOT l_found OR l_store.state <> oramem_registry.gc_state_ready
         OR l_store.schema_version <> oramem_registry.gc_store_schema_version
      THEN
         RETURN;   -- being created, upgraded or dropped: the next run purges
      END IF;
      l_rows := purge_expired(in_store_id, 1000, 300, 1);
   EXCEPTION
      WHEN OTHERS THEN
         oramem_errors.log_error('oramem_store.run_purge_job', in_store_id);
         RAISE;
   END run_purge_job;

   ---------------------------------------------------------------------------------------
   -- search index sync
   ---------------------------------------------------------------------------------------
   PROCEDURE sync_search_index(
      in_store_id IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_store oramem_registry.store_t := oramem_registry.ready_store(in_store_id);
      l_index VARCHAR2(128 CHAR);
   BEGIN
      IF l_store.has_hybrid_index = 1 THEN
         l_index := oramem_registry.object_name(l_store.memory_store_id, oramem_registry.gc_obj_hybrid);
      ELSIF l_store.has_text_index = 1 THEN
         l_index := oramem_registry.object_name(l_store.memory_store_id, oramem_registry.gc_obj_text);
      ELSE
         ROLLBACK;
         RETURN;
      END IF;
      IF NOT oramem_registry.text_available THEN
         oramem_errors.raise_error(oramem_errors.gc_feature_missing,
            'Oracle Text (CTXSYS) is not installed; keyword and hybrid search are unavailable');
      END IF;
      -- Dynamic call: the body compiles where Oracle Text is absent (ORACLE_NOTES 4.5).
      BEGIN
         EXECUTE IMMEDIATE 'BEGIN CTX_DDL.SYNC_INDEX(idx_name => :1); END;' USING l_index;
         -- issue 23: a HYBRID store's keyword passages have a CONTEXT index of their own
         -- (OM_<ID>_KTX, the keyword leg of a store that groups), synced by the same call
         IF l_store.has_hybrid_index = 1 THEN
            l_index := oramem_registry.object_name(l_store.memory_store_id, oramem_registry.gc_obj_passage_text);
            EXECUTE IMMEDIATE 'BEGIN CTX_DDL.SYNC_INDEX(idx_name => :1); END;' USING l_index;
         END IF;
      EXCEPTION
         WHEN e_plsql_compile THEN
            IF NOT missing_grant THEN
               RAISE;
            END IF;
            -- S19: CTXSYS exists, so the block fails to compile because CTX_DDL is not
            -- visible to this definer's-rights code (a grant through a role does not count).
            oramem_errors.raise_error(oramem_errors.gc_privilege_missing,
               'sync_search_index needs a direct grant: GRANT EXECUTE ON CTXSYS.CTX_DDL TO '
               || SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')
               || ' (a grant through CTXAPP or another role is not enough)');
      END;
      COMMIT;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK;
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_store.sync_search_index', in_store_id);
         END IF;
         RAISE;
   END sync_search_index;

   PROCEDURE lock_retrieval_rows(
      in_store_id IN VARCHAR2
   )
   IS
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      oramem_registry.find_store(oramem_registry.normalize_store_id(in_store_id), l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found,
            'store ' || oramem_registry.normalize_store_id(in_store_id) || ' does not exist');
      END IF;
      -- the erasure lock order first (KC-3.10), then the retrieval rows
      lock_erasers(l_store);
      EXECUTE IMMEDIATE 'LOCK TABLE '
         || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks)
         || ' IN EXCLUSIVE MODE';
   END lock_retrieval_rows;
END oramem_store;
/
