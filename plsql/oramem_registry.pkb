CREATE OR REPLACE PACKAGE BODY oramem_registry
AS
   g_text_checked    BOOLEAN := FALSE;
   g_text_ok         BOOLEAN := FALSE;
   g_hybrid_checked  BOOLEAN := FALSE;
   g_hybrid_ok       BOOLEAN := FALSE;

   gc_ts_format      CONSTANT VARCHAR2(40 CHAR) := 'YYYY-MM-DD"T"HH24:MI:SS.FF6';
   -- the 29 characters Python's str.isspace() calls white space (check_id; the test
   -- tests/plsql/test_blank_ids_plsql.py compares the two sets)
   gc_white_space    CONSTANT NVARCHAR2(40) := UNISTR(
      '\0009\000A\000B\000C\000D\001C\001D\001E\001F\0020\0085\00A0\1680\2000\2001\2002\2003\2004'
      || '\2005\2006\2007\2008\2009\200A\2028\2029\202F\205F\3000');
   e_plsql_compile   EXCEPTION;   -- ORA-06550: a dynamic block did not compile
   PRAGMA EXCEPTION_INIT(e_plsql_compile, -6550);

   FUNCTION normalize_store_id(
      in_store_id IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_id VARCHAR2(200 CHAR);
   BEGIN
      IF in_store_id IS NULL THEN
         RETURN gc_default_store_id;
      END IF;
      IF LENGTH(in_store_id) > 64 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_store_id,
            'memory_store_id is too long: use 1 to 16 characters [A-Za-z][A-Za-z0-9_]*');
      END IF;
      l_id := UPPER(TRIM(in_store_id));
      IF NOT REGEXP_LIKE(l_id, '^[A-Z][A-Z0-9_]{0,15}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_store_id,
            'memory_store_id must be 1 to 16 characters matching ^[A-Za-z][A-Za-z0-9_]*$');
      END IF;
      -- Second line of defence: the regex already excludes quotes and spaces.
      RETURN DBMS_ASSERT.SIMPLE_SQL_NAME(l_id);
   END normalize_store_id;

   FUNCTION object_name(
      in_store_id IN VARCHAR2,
      in_kind     IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_id    store_id_t := normalize_store_id(in_store_id);
      l_name  object_name_t;
   BEGIN
      l_name :=
         CASE in_kind
            WHEN gc_obj_records THEN 'OM_' || l_id || '_REC'
            WHEN gc_obj_chunks  THEN 'OM_' || l_id || '_CHK'
            WHEN gc_obj_hnsw    THEN 'OM_' || l_id || '_HNSW'
            WHEN gc_obj_text    THEN 'OM_' || l_id || '_TXT'
            WHEN gc_obj_hybrid  THEN 'OM_' || l_id || '_HVI'
            WHEN gc_obj_vpref   THEN 'OM_' || l_id || '_VPREF'
            WHEN gc_obj_job     THEN 'ORAMEM_PURGE_' || l_id
            WHEN gc_obj_lexer   THEN 'OM_' || l_id || '_LEX'
            WHEN gc_obj_wordlist THEN 'OM_' || l_id || '_WL'
            WHEN gc_obj_stoplist THEN 'OM_' || l_id || '_STOP'
            WHEN gc_obj_passages THEN 'OM_' || l_id || '_KWP'
            WHEN gc_obj_passage_text THEN 'OM_' || l_id || '_KTX'
         END;
      IF l_name IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'oramem_registry.object_name: unknown object kind');
      END IF;
      RETURN DBMS_ASSERT.SIMPLE_SQL_NAME(l_name);
   END object_name;

   FUNCTION quoted_name(
      in_store_id IN VARCHAR2,
      in_kind     IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN DBMS_ASSERT.ENQUOTE_NAME(
                DBMS_ASSERT.SIMPLE_SQL_NAME(object_name(in_store_id, in_kind)),
                capitalize => TRUE);
   END quoted_name;

   PROCEDURE find_store(
      in_store_id IN  VARCHAR2,
      out_store   OUT NOCOPY store_t,
      out_found   OUT BOOLEAN
   )
   IS
      l_id store_id_t := normalize_store_id(in_store_id);
   BEGIN
      SELECT s.memory_store_id, s.vector_dim, s.search_strategy, s.search_index_sync,
             s.default_ttl_days, s.max_ttl_days, s.embedding_model, s.deletion_hook,
             s.schema_version, s.state, s.has_text_index, s.has_hybrid_index,
             s.purge_job_name, s.keyword_language,
             CASE WHEN s.search_strategy = 'hybrid'
                       AND JSON_VALUE(s.embedder, '$.chunking.unit') = 'tokens' THEN 1 ELSE 0 END
      INTO   out_store
      FROM   oramem_stores s
      WHERE  s.memory_store_id = l_id;
      out_found := TRUE;
   EXCEPTION
      WHEN NO_DATA_FOUND THEN
         out_found := FALSE;
   END find_store;

   FUNCTION ready_store(
      in_store_id IN VARCHAR2
   ) RETURN store_t
   IS
      l_store store_t;
      l_found BOOLEAN;
   BEGIN
      find_store(in_store_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found,
            'store ' || normalize_store_id(in_store_id) || ' does not exist; open it with '
            || 'SchemaPolicy.CREATE_IF_NECESSARY (oramem_admin.open_store) to create it');
      END IF;
      IF l_store.state <> gc_state_ready THEN
         oramem_errors.raise_error(oramem_errors.gc_store_state,
            'store ' || l_store.memory_store_id || ' is ' || l_store.state
            || '; open it with SchemaPolicy.CREATE_IF_NECESSARY to repair it, or RECREATE');
      END IF;
      IF l_store.schema_version < gc_store_schema_version THEN
         oramem_errors.raise_error(oramem_errors.gc_schema_outdated,
            'store ' || l_store.memory_store_id || ' has schema version '
            || l_store.schema_version || ', this code needs ' || gc_store_schema_version
            || '; run oramem_admin.upgrade_store or open with CREATE_IF_NECESSARY');
      END IF;
      IF l_store.schema_version > gc_store_schema_version THEN
         oramem_errors.raise_error(oramem_errors.gc_schema_too_new,
            'store ' || l_store.memory_store_id || ' has schema version '
            || l_store.schema_version || ', newer than this code ('
            || gc_store_schema_version || '); install the newer oramem packages');
      END IF;
      RETURN l_store;
   END ready_store;

   FUNCTION check_record_type(
      in_record_type IN VARCHAR2,
      in_argument    IN VARCHAR2 DEFAULT 'record_type'
   ) RETURN VARCHAR2
   IS
      l_type VARCHAR2(64 CHAR) := LOWER(TRIM(SUBSTR(in_record_type, 1, 64)));
   BEGIN
      IF l_type IS NULL
         OR l_type NOT IN ('message', 'memory', 'guideline', 'fact', 'preference',
                           'user_profile', 'agent_profile', 'thread')
      THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_record_type,
            in_argument || ' must be one of message, memory, guideline, fact, preference, '
            || 'user_profile, agent_profile, thread');
      END IF;
      RETURN l_type;
   END check_record_type;

   PROCEDURE check_id(
      in_value    IN VARCHAR2,
      in_argument IN VARCHAR2
   )
   IS
   BEGIN
      -- LTRIM of every white-space character leaves nothing (NULL: '' is NULL) only when the
      -- id has no other character. Compared in the national character set (always Unicode:
      -- AL16UTF16 or UTF8), so no white-space character is lost to a database character set
      -- that lacks it, and no id character is turned into one.
      IF in_value IS NOT NULL AND LTRIM(TO_NCHAR(in_value), gc_white_space) IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            SUBSTR(in_argument, 1, 100) || ' is only white space; give an id with a visible character');
      END IF;
   END check_id;

   FUNCTION is_scoped_type(in_record_type IN VARCHAR2) RETURN BOOLEAN
   IS
   BEGIN
      RETURN in_record_type IN ('message', 'memory', 'guideline', 'fact', 'preference');
   END is_scoped_type;

   FUNCTION is_profile_type(in_record_type IN VARCHAR2) RETURN BOOLEAN
   IS
   BEGIN
      RETURN in_record_type IN ('user_profile', 'agent_profile');
   END is_profile_type;

   FUNCTION parse_utc(
      in_text     IN VARCHAR2,
      in_argument IN VARCHAR2
   ) RETURN TIMESTAMP
   IS
      l_txt   VARCHAR2(100 CHAR);
      l_tz    VARCHAR2(10 CHAR);
      l_main  VARCHAR2(100 CHAR);
      l_ts    TIMESTAMP(6);
   BEGIN
      IF in_text IS NULL THEN
         RETURN NULL;
      END IF;
      l_txt := TRIM(SUBSTR(in_text, 1, 100));
      IF NOT REGEXP_LIKE(l_txt,
            '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-][0-9]{2}:?[0-9]{2})?$', 'c')
      THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_timestamp,
            in_argument || ' is not an ISO-8601 time (YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM])');
      END IF;
      l_tz   := REGEXP_SUBSTR(l_txt, '(Z|[+-][0-9]{2}:?[0-9]{2})$');
      l_main := SUBSTR(l_txt, 1, LENGTH(l_txt) - NVL(LENGTH(l_tz), 0));
      l_main := REPLACE(l_main, ' ', 'T');
      IF INSTR(l_main, '.') = 0 THEN
         l_main := l_main || '.0';  -- bounded: regex-checked ISO time, < 40 characters
      END IF;
      IF l_tz IS NULL OR l_tz = 'Z' THEN
         l_tz := '+00:00';
      ELSIF INSTR(l_tz, ':') = 0 THEN
         l_tz := SUBSTR(l_tz, 1, 3) || ':' || SUBSTR(l_tz, 4, 2);
      END IF;
      l_main := l_main || l_tz;  -- bounded: regex-checked ISO time, < 40 characters
      -- S23: converted in PL/SQL (conversion and datetime functions are valid in procedural
      -- statements; only SQL-only functions such as DECODE raise PLS-00204), not by one
      -- dynamic SELECT ... FROM dual per timestamp. Out-of-range fields (month 13, hour 24,
      -- offset +15:00) raise the datetime errors ORA-01800..ORA-01899, which mean "not a
      -- valid time" here (-20007 below); anything else is re-raised. Assigning to
      -- TIMESTAMP(6) rounds the fraction as CAST(... AS TIMESTAMP(6)) did.
      BEGIN
         l_ts := SYS_EXTRACT_UTC(TO_TIMESTAMP_TZ(l_main, 'YYYY-MM-DD"T"HH24:MI:SS.FFTZH:TZM'));
      EXCEPTION
         WHEN OTHERS THEN
            IF SQLCODE BETWEEN -1899 AND -1800 THEN
               l_ts := NULL;
            ELSE
               RAISE;
            END IF;
      END;
      IF l_ts IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_timestamp,
            in_argument || ' is not a valid ISO-8601 time (check month, day and offset)');
      END IF;
      RETURN l_ts;
   END parse_utc;

   FUNCTION format_utc(
      in_ts IN TIMESTAMP
   ) RETURN VARCHAR2
   IS
   BEGIN
      IF in_ts IS NULL THEN
         RETURN NULL;
      END IF;
      RETURN TO_CHAR(in_ts, gc_ts_format) || '+00:00';
   END format_utc;

   FUNCTION utc_now RETURN TIMESTAMP
   IS
   BEGIN
      RETURN CAST(SYS_EXTRACT_UTC(SYSTIMESTAMP) AS TIMESTAMP(6));
   END utc_now;

   FUNCTION record_json_sql(
      in_alias IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_sql VARCHAR2(4000 CHAR);
   BEGIN
      IF in_alias IS NULL OR NOT REGEXP_LIKE(in_alias, '^[a-z][a-z0-9_]{0,29}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'oramem_registry.record_json_sql: invalid alias');
      END IF;
      l_sql := q'[JSON_OBJECT(
            'id'          VALUE #A.record_id,
            'record_type' VALUE #A.record_type,
            'content'     VALUE #A.content,
            'timestamp'   VALUE TO_CHAR(#A.event_ts,   'YYYY-MM-DD"T"HH24:MI:SS.FF6"+00:00"'),
            'metadata'    VALUE #A.metadata,
            'thread_id'   VALUE #A.thread_id,
            'user_id'     VALUE #A.user_id,
            'agent_id'    VALUE #A.agent_id,
            'created_at'  VALUE TO_CHAR(#A.created_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF6"+00:00"'),
            'expires_at'  VALUE TO_CHAR(#A.expires_at, 'YYYY-MM-DD"T"HH24:MI:SS.FF6"+00:00"'),
            'role'        VALUE #A.role,
            'seq_no'      VALUE #A.seq_no
            NULL ON NULL RETURNING CLOB)]';
      RETURN REPLACE(l_sql, '#A', in_alias);
   END record_json_sql;

   FUNCTION check_language(
      in_language IN VARCHAR2,
      in_argument IN VARCHAR2 DEFAULT 'keyword_language'
   ) RETURN VARCHAR2
   IS
      l_language VARCHAR2(64 CHAR) := LOWER(TRIM(SUBSTR(in_language, 1, 64)));
   BEGIN
      IF l_language IS NULL OR l_language NOT IN (gc_language_english, gc_language_none) THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            in_argument || ' must be ' || gc_language_english || ' or ' || gc_language_none);
      END IF;
      RETURN l_language;
   END check_language;

   FUNCTION text_available RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      IF NOT g_text_checked THEN
         SELECT COUNT(*) INTO l_count FROM all_users WHERE username = 'CTXSYS';
         g_text_ok := l_count > 0;
         g_text_checked := TRUE;
      END IF;
      RETURN g_text_ok;
   END text_available;

   FUNCTION hybrid_available RETURN BOOLEAN
   IS
   BEGIN
      IF NOT g_hybrid_checked THEN
         -- N12: probe the privilege, not the name (ALL_OBJECTS also lists the PUBLIC synonym
         -- when the owner has no direct EXECUTE): compile a block that references
         -- DBMS_HYBRID_VECTOR.SEARCH and never runs it. Dynamic SQL in this definer's-rights
         -- package compiles with the owner's direct grants, as the real call in oramem_search
         -- does; ORA-06550 (PLS-00201/PLS-00904) = not usable.
         BEGIN
            EXECUTE IMMEDIATE
               'DECLARE l_r CLOB; BEGIN IF 1 = 0 THEN l_r := DBMS_HYBRID_VECTOR.SEARCH(JSON(''{}'')); END IF; END;';
            g_hybrid_ok := text_available;
         EXCEPTION
            WHEN e_plsql_compile THEN
               g_hybrid_ok := FALSE;
         END;
         g_hybrid_checked := TRUE;
      END IF;
      RETURN g_hybrid_ok;
   END hybrid_available;
END oramem_registry;
/
