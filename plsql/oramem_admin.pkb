CREATE OR REPLACE PACKAGE BODY oramem_admin
AS
   /*
    * Implementation notes
    * - Every DDL / CTX / scheduler / registry-state call goes through an AUTONOMOUS
    *   helper, so the caller's transaction is never committed (ORACLE_NOTES 9.1).
    * - The lifecycle state is committed before each DDL step; any failure marks the
    *   store BROKEN with a sanitised last_error and re-raises (ORACLE_NOTES 9.2).
    * - Identifiers reach DDL text only as DBMS_ASSERT-validated, quoted names from
    *   oramem_registry; parameter strings come from fixed allow-lists.
    * - DDL templates are q'[...]' literals with #PLACEHOLDERS# (ORACLE_NOTES 13.2).
    */

   TYPE settings_t IS RECORD (
      store_id       VARCHAR2(16 CHAR),
      has_dim        BOOLEAN := FALSE,
      vector_dim     NUMBER,
      has_strategy   BOOLEAN := FALSE,
      strategy       VARCHAR2(16 CHAR),
      has_sync       BOOLEAN := FALSE,
      sync_mode      VARCHAR2(16 CHAR),
      has_default    BOOLEAN := FALSE,
      default_ttl    NUMBER,
      has_max        BOOLEAN := FALSE,
      max_ttl        NUMBER,
      has_model      BOOLEAN := FALSE,
      model          VARCHAR2(128 CHAR),
      has_hook       BOOLEAN := FALSE,
      hook           VARCHAR2(400 CHAR),
      has_language   BOOLEAN := FALSE,
      language       VARCHAR2(16 CHAR),
      has_embedder   BOOLEAN := FALSE,
      embedder       CLOB                  -- the identity JSON (issue 28), has_embedder only
   );

   g_lock_id     NUMBER;                    -- DBMS_LOCK id held by this session, if any
   g_warnings    JSON_ARRAY_T;

   e_json_syntax       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_json_syntax, -40441);
   e_plsql_compile     EXCEPTION;           -- dynamic block fails to compile (missing grant)
   PRAGMA EXCEPTION_INIT(e_plsql_compile, -6550);
   e_no_privilege      EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_no_privilege, -1031);
   e_job_privilege     EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_job_privilege, -27486);
   e_job_missing       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_job_missing, -27475);
   e_bad_qualified_name EXCEPTION;          -- DBMS_ASSERT.QUALIFIED_SQL_NAME
   PRAGMA EXCEPTION_INIT(e_bad_qualified_name, -44004);

   gc_tpl_records CONSTANT VARCHAR2(4000 CHAR) := q'[
      CREATE TABLE #REC# (
         record_type  VARCHAR2(32 CHAR)   NOT NULL,
         record_id    VARCHAR2(512 CHAR)  NOT NULL,
         content      CLOB,
         thread_id    VARCHAR2(512 CHAR),
         user_id      VARCHAR2(512 CHAR),
         agent_id     VARCHAR2(512 CHAR),
         role         VARCHAR2(64 CHAR),
         seq_no       NUMBER GENERATED ALWAYS AS IDENTITY,
         event_ts     TIMESTAMP(6),
         metadata     JSON,
         created_at   TIMESTAMP(6)   NOT NULL,
         expires_at   TIMESTAMP(6),
         CONSTRAINT #REC_PK# PRIMARY KEY (record_type, record_id)
      )]';

   gc_tpl_chunks CONSTANT VARCHAR2(4000 CHAR) := q'[
      CREATE TABLE #CHK# (
         record_type  VARCHAR2(32 CHAR)   NOT NULL,
         record_id    VARCHAR2(512 CHAR)  NOT NULL,
         chunk_no     NUMBER(6)      NOT NULL,
         chunk_text   CLOB, #EMBEDDING#
         CONSTRAINT #CHK_PK# PRIMARY KEY (record_type, record_id, chunk_no),
         CONSTRAINT #CHK_FK# FOREIGN KEY (record_type, record_id)
            REFERENCES #REC# (record_type, record_id) ON DELETE CASCADE
      )]';

   gc_tpl_embedding CONSTANT VARCHAR2(200 CHAR) := q'[embedding VECTOR(#DIM#, FLOAT32),]';

   gc_tpl_add_embedding CONSTANT VARCHAR2(200 CHAR) := q'[ALTER TABLE #CHK# ADD (embedding VECTOR(#DIM#, FLOAT32))]';

   gc_tpl_index CONSTANT VARCHAR2(200 CHAR) := q'[CREATE INDEX #IX# ON #REC# (#COL#)]';

   gc_tpl_hnsw CONSTANT VARCHAR2(400 CHAR) := q'[
      CREATE VECTOR INDEX #HNSW# ON #CHK# (embedding)
      ORGANIZATION INMEMORY NEIGHBOR GRAPH DISTANCE COSINE WITH TARGET ACCURACY 95]';

   gc_tpl_text CONSTANT VARCHAR2(400 CHAR) := q'[
      CREATE INDEX #TXT# ON #CHK# (chunk_text) INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('#PARAMS#')]';

   gc_tpl_hybrid CONSTANT VARCHAR2(400 CHAR) := q'[
      CREATE HYBRID VECTOR INDEX #HVI# ON #CHK# (chunk_text) PARAMETERS ('#PARAMS#')]';

   -- Keyword passages of a HYBRID store (issue 23, store schema version 4): a table of its
   -- own, not a column of OM_<ID>_CHK, because no page of Oracle's documentation says that a
   -- CONTEXT index may index another column of a table that carries a hybrid vector index
   -- (docs/store-decisions.md; plsql/VERIFY.md, "Keyword passages on Oracle"). A passage is
   -- keyed by its first retrieval row's chunk_no; its rows go with the record (ON DELETE
   -- CASCADE), as the retrieval rows do.
   gc_tpl_passages CONSTANT VARCHAR2(4000 CHAR) := q'[
      CREATE TABLE #KWP# (
         record_type  VARCHAR2(32 CHAR)   NOT NULL,
         record_id    VARCHAR2(512 CHAR)  NOT NULL,
         chunk_no     NUMBER(6)      NOT NULL,
         passage_text CLOB,
         CONSTRAINT #KWP_PK# PRIMARY KEY (record_type, record_id, chunk_no),
         CONSTRAINT #KWP_FK# FOREIGN KEY (record_type, record_id)
            REFERENCES #REC# (record_type, record_id) ON DELETE CASCADE
      )]';

   gc_tpl_passage_index CONSTANT VARCHAR2(400 CHAR) := q'[
      CREATE INDEX #KTX# ON #KWP# (passage_text) INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('#PARAMS#')]';

   -- 3 -> 4 for a store that groups (store_t.keyword_passages): every record with retrieval
   -- rows and no passage gets one passage per row (its rows were cut before the store
   -- grouped; both kinds map to their record, as on SQLite). Resumable: it selects by that
   -- condition, so a rerun after an interruption inserts only what is still missing.
   gc_tpl_fill_passages CONSTANT VARCHAR2(1000 CHAR) := q'[
      INSERT INTO #KWP# (record_type, record_id, chunk_no, passage_text)
      SELECT c.record_type, c.record_id, c.chunk_no, c.chunk_text FROM #CHK# c
      WHERE NOT EXISTS (SELECT 1 FROM #KWP# p
                        WHERE p.record_type = c.record_type AND p.record_id = c.record_id)]';

   -- Re-embedding (oramem reembed on Oracle; docs/oracle-models.md, "Re-embedding an Oracle
   -- store"): the shadow column of the new vectors, setting a column aside (SET UNUSED: a
   -- dictionary change, no rewrite of the table), and the rename that puts the new vectors in
   -- the old column's place when the dimension changes. The pending target is the store
   -- option gc_reembed_option: {"embedder": identity, "vector_dim": n}.
   gc_tpl_add_new_embedding CONSTANT VARCHAR2(200 CHAR) :=
      q'[ALTER TABLE #CHK# ADD (embedding_new VECTOR(#DIM#, FLOAT32))]';
   gc_tpl_set_unused CONSTANT VARCHAR2(200 CHAR) := q'[ALTER TABLE #CHK# SET UNUSED (#COL#)]';
   gc_tpl_rename_new CONSTANT VARCHAR2(200 CHAR) := q'[ALTER TABLE #CHK# RENAME COLUMN embedding_new TO embedding]';
   gc_reembed_option CONSTANT VARCHAR2(32 CHAR) := 'reembed.target';

   ---------------------------------------------------------------------------------------
   -- autonomous helpers
   ---------------------------------------------------------------------------------------
   PROCEDURE exec_ddl(
      in_sql IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      EXECUTE IMMEDIATE in_sql;
      COMMIT;
   END exec_ddl;

   -- A PL/SQL block with up to two VARCHAR2 / CLOB binds (CTX_DDL, DBMS_VECTOR_CHAIN).
   PROCEDURE exec_block(
      in_block IN VARCHAR2,
      in_bind1 IN VARCHAR2,
      in_bind2 IN CLOB DEFAULT NULL
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      IF in_bind2 IS NULL THEN
         EXECUTE IMMEDIATE in_block USING in_bind1;
      ELSE
         EXECUTE IMMEDIATE in_block USING in_bind1, in_bind2;
      END IF;
      COMMIT;
   END exec_block;

   PROCEDURE set_state(
      in_store_id   IN VARCHAR2,
      in_state      IN VARCHAR2,
      in_last_error IN VARCHAR2 DEFAULT NULL
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      UPDATE oramem_stores
      SET    state       = in_state,
             state_owner = SYS_CONTEXT('USERENV', 'SID'),
             state_since = SYS_EXTRACT_UTC(SYSTIMESTAMP),
             -- VARCHAR2(2000 CHAR) still holds at most 4000 bytes (MAX_STRING_SIZE = STANDARD):
             -- cut to 2000 characters, then to 4000 bytes
             last_error  = SUBSTRB(SUBSTR(in_last_error, 1, 2000), 1, 4000),
             updated_at  = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  memory_store_id = in_store_id;
      COMMIT;
   END set_state;

   PROCEDURE mark_ready(
      in_store_id IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      UPDATE oramem_stores
      SET    state          = oramem_registry.gc_state_ready,
             schema_version = oramem_registry.gc_store_schema_version,
             state_owner    = NULL,
             state_since    = SYS_EXTRACT_UTC(SYSTIMESTAMP),
             last_error     = NULL,
             updated_at     = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  memory_store_id = in_store_id;
      COMMIT;
   END mark_ready;

   PROCEDURE set_flags(
      in_store_id   IN VARCHAR2,
      in_text       IN NUMBER,
      in_hybrid     IN NUMBER,
      in_job_name   IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      UPDATE oramem_stores
      SET    has_text_index   = in_text,
             has_hybrid_index = in_hybrid,
             purge_job_name   = in_job_name,
             updated_at       = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  memory_store_id = in_store_id;
      COMMIT;
   END set_flags;

   -- Persist the (validated) settings a create / capability upgrade targets.
   PROCEDURE save_settings(
      in_store_id IN VARCHAR2,
      in_dim      IN NUMBER,
      in_strategy IN VARCHAR2,
      in_sync     IN VARCHAR2,
      in_default  IN NUMBER,
      in_max      IN NUMBER,
      in_model    IN VARCHAR2,
      in_hook     IN VARCHAR2,
      in_language IN VARCHAR2,
      in_state    IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      MERGE INTO oramem_stores s
      USING (SELECT in_store_id AS memory_store_id FROM dual) n
      ON (s.memory_store_id = n.memory_store_id)
      WHEN MATCHED THEN UPDATE SET
         s.vector_dim        = in_dim,
         s.search_strategy   = in_strategy,
         s.search_index_sync = in_sync,
         s.default_ttl_days  = in_default,
         s.max_ttl_days      = in_max,
         s.embedding_model   = in_model,
         s.deletion_hook     = in_hook,
         s.keyword_language  = in_language,
         s.state             = in_state,
         s.state_owner       = SYS_CONTEXT('USERENV', 'SID'),
         s.state_since       = SYS_EXTRACT_UTC(SYSTIMESTAMP),
         s.updated_at        = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHEN NOT MATCHED THEN INSERT
         (memory_store_id, vector_dim, search_strategy, search_index_sync, default_ttl_days,
          max_ttl_days, embedding_model, deletion_hook, keyword_language, schema_version, state,
          state_owner)
      VALUES
         (in_store_id, in_dim, in_strategy, in_sync, in_default, in_max, in_model, in_hook,
          in_language, 0, in_state, SYS_CONTEXT('USERENV', 'SID'));
      COMMIT;
   END save_settings;

   PROCEDURE delete_registry(
      in_store_id IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      DELETE FROM oramem_stores WHERE memory_store_id = in_store_id;
      COMMIT;
   END delete_registry;

   PROCEDURE save_hook(
      in_store_id IN VARCHAR2,
      in_hook     IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      UPDATE oramem_stores
      SET    deletion_hook = in_hook,
             updated_at    = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  memory_store_id = in_store_id;
      COMMIT;
   END save_hook;

   ---------------------------------------------------------------------------------------
   -- lock (ORACLE_NOTES 9.3), through dynamic PL/SQL so the package compiles without the
   -- EXECUTE ON DBMS_LOCK grant; only store changes then fail, with -20302.
   ---------------------------------------------------------------------------------------
   PROCEDURE lock_store(
      in_store_id IN VARCHAR2,
      in_timeout  IN PLS_INTEGER
   )
   IS
      l_id NUMBER;
      l_rc NUMBER;
   BEGIN
      IF in_timeout IS NULL OR in_timeout < 0 OR in_timeout > 3600 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'lock_timeout must be between 0 and 3600 seconds');
      END IF;
      -- Keyed on the package owner (not USER): every caller of this definer's-rights
      -- package must serialise on the same lock for the same store.
      l_id := DBMS_UTILITY.GET_HASH_VALUE('ORAMEM:' || $$PLSQL_UNIT_OWNER || ':' || in_store_id,
                                          0, 1073741824);
      BEGIN
         EXECUTE IMMEDIATE
            'BEGIN :rc := DBMS_LOCK.REQUEST(id => :id, lockmode => DBMS_LOCK.X_MODE, '
            || 'timeout => :t, release_on_commit => FALSE); END;'
            USING OUT l_rc, IN l_id, IN in_timeout;
      EXCEPTION
         WHEN e_plsql_compile THEN
            oramem_errors.raise_error(oramem_errors.gc_privilege_missing,
               'EXECUTE ON SYS.DBMS_LOCK is not granted to ' || $$PLSQL_UNIT_OWNER
               || '; ask a DBA: GRANT EXECUTE ON SYS.DBMS_LOCK TO ' || $$PLSQL_UNIT_OWNER);
      END;
      IF l_rc IN (0, 4) THEN
         g_lock_id := l_id;
      ELSIF l_rc IN (1, 2) THEN
         oramem_errors.raise_error(oramem_errors.gc_store_busy,
            'store ' || in_store_id || ' is being created, upgraded or dropped by another session; '
            || 'retry later or raise lock_timeout');
      ELSE
         oramem_errors.raise_error(oramem_errors.gc_store_busy,
            'could not lock store ' || in_store_id || ' (DBMS_LOCK.REQUEST returned ' || l_rc || ')');
      END IF;
   END lock_store;

   PROCEDURE unlock_store
   IS
      l_rc NUMBER;
   BEGIN
      IF g_lock_id IS NOT NULL THEN
         EXECUTE IMMEDIATE 'BEGIN :rc := DBMS_LOCK.RELEASE(id => :id); END;'
            USING OUT l_rc, IN g_lock_id;
         g_lock_id := NULL;
      END IF;
   END unlock_store;

   ---------------------------------------------------------------------------------------
   -- dictionary probes
   ---------------------------------------------------------------------------------------
   FUNCTION table_exists(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = in_name;
      RETURN l_count > 0;
   END table_exists;

   FUNCTION index_exists(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_indexes WHERE index_name = in_name;
      RETURN l_count > 0;
   END index_exists;

   -- A domain index (Text / hybrid) that exists but failed or was interrupted.
   FUNCTION index_broken(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count
      FROM   user_indexes
      WHERE  index_name = in_name
      AND    (status NOT IN ('VALID', 'N/A')
              OR NVL(domidx_status, 'VALID') <> 'VALID'
              OR NVL(domidx_opstatus, 'VALID') <> 'VALID');
      RETURN l_count > 0;
   END index_broken;

   FUNCTION column_exists(in_table IN VARCHAR2, in_column IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_tab_columns
      WHERE  table_name = in_table AND column_name = in_column;
      RETURN l_count > 0;
   END column_exists;

   FUNCTION job_exists(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_scheduler_jobs WHERE job_name = in_name;
      RETURN l_count > 0;
   END job_exists;

   FUNCTION store_objects_exist(in_store_id IN VARCHAR2) RETURN BOOLEAN
   IS
   BEGIN
      RETURN table_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_records))
          OR table_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_chunks));
   END store_objects_exist;

   FUNCTION vpref_exists(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      IF NOT oramem_registry.text_available THEN
         RETURN FALSE;
      END IF;
      -- Dynamic: CTX views are absent where Oracle Text is not installed.
      EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ctx_user_preferences WHERE pre_name = :1'
         INTO l_count USING in_name;
      RETURN l_count > 0;
   END vpref_exists;

   FUNCTION stoplist_exists(in_name IN VARCHAR2) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      IF NOT oramem_registry.text_available THEN
         RETURN FALSE;
      END IF;
      -- Dynamic, as vpref_exists: CTX views are absent where Oracle Text is not installed.
      EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ctx_user_stoplists WHERE spl_name = :1'
         INTO l_count USING in_name;
      RETURN l_count > 0;
   END stoplist_exists;

   -- Derived name with a suffix (constraint / index names), validated and quoted.
   FUNCTION derived_name(
      in_store_id IN VARCHAR2,
      in_kind     IN VARCHAR2,
      in_suffix   IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN DBMS_ASSERT.ENQUOTE_NAME(
                DBMS_ASSERT.SIMPLE_SQL_NAME(oramem_registry.object_name(in_store_id, in_kind) || in_suffix),
                capitalize => TRUE);
   END derived_name;

   ---------------------------------------------------------------------------------------
   -- settings
   ---------------------------------------------------------------------------------------
   PROCEDURE bad_setting(
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_invalid_argument, 'settings: ' || in_message);
   END bad_setting;

   FUNCTION opt_count(
      in_obj  IN JSON_OBJECT_T,
      in_key  IN VARCHAR2,
      in_max  IN NUMBER
   ) RETURN NUMBER
   IS
      l_num NUMBER;
   BEGIN
      IF in_obj.get(in_key).is_null THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_number THEN
         bad_setting(in_key || ' must be an integer or null');
      END IF;
      l_num := in_obj.get_number(in_key);
      IF l_num < 0 OR l_num > in_max OR l_num <> TRUNC(l_num) THEN
         bad_setting(in_key || ' must be an integer between 0 and ' || in_max);
      END IF;
      RETURN l_num;
   END opt_count;

   FUNCTION opt_word(
      in_obj     IN JSON_OBJECT_T,
      in_key     IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      IF in_obj.get(in_key).is_null THEN
         RETURN NULL;
      END IF;
      IF NOT in_obj.get(in_key).is_string THEN
         bad_setting(in_key || ' must be a string or null');
      END IF;
      RETURN SUBSTR(in_obj.get_string(in_key), 1, 400);
   END opt_word;

   -- [schema.]name[.name] for deletion hooks; returns the validated, upper-cased name.
   FUNCTION check_hook_name(
      in_name IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_name VARCHAR2(400 CHAR) := UPPER(TRIM(in_name));
   BEGIN
      IF l_name IS NULL THEN
         RETURN NULL;
      END IF;
      IF NOT REGEXP_LIKE(l_name, '^[A-Z][A-Z0-9_$#]{0,127}([.][A-Z][A-Z0-9_$#]{0,127}){0,2}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_identifier,
            'deletion hook must be [schema.][package.]procedure made of unquoted identifiers');
      END IF;
      RETURN DBMS_ASSERT.QUALIFIED_SQL_NAME(l_name);
   EXCEPTION
      WHEN e_bad_qualified_name THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_identifier,
            'deletion hook name is not a valid SQL name');
   END check_hook_name;

   FUNCTION check_model_name(
      in_name IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_name VARCHAR2(400 CHAR) := UPPER(TRIM(in_name));
   BEGIN
      IF l_name IS NULL THEN
         RETURN NULL;
      END IF;
      IF NOT REGEXP_LIKE(l_name, '^[A-Z][A-Z0-9_$#]{0,127}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_identifier,
            'embedding_model must be an unquoted model name ([A-Za-z][A-Za-z0-9_$#]*)');
      END IF;
      RETURN DBMS_ASSERT.SIMPLE_SQL_NAME(l_name);
   END check_model_name;

   FUNCTION parse_settings(
      in_settings IN CLOB
   ) RETURN settings_t
   IS
      l_elem   JSON_ELEMENT_T;
      l_obj    JSON_OBJECT_T;
      l_ret    JSON_OBJECT_T;
      l_emb    JSON_OBJECT_T;
      l_set    settings_t;
   BEGIN
      IF in_settings IS NULL OR DBMS_LOB.GETLENGTH(in_settings) = 0 THEN
         l_obj := JSON_OBJECT_T();
      ELSE
         BEGIN
            l_elem := JSON_ELEMENT_T.parse(in_settings);
         EXCEPTION
            WHEN e_json_syntax THEN
               oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'settings are not valid JSON');
         END;
         IF NOT l_elem.is_object THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'settings must be a JSON object');
         END IF;
         l_obj := TREAT(l_elem AS JSON_OBJECT_T);
      END IF;
      -- every setting open_store / create_store read, and no other (left36, after red32): an
      -- unknown one was ignored, so {"vector_dimension": 384} created a store without vectors
      -- and {"search_strategy ": "hybrid"} a VECTOR store, each answering as if it had applied
      oramem_filter.check_keys(l_obj, 'memory_store_id,vector_dim,search_strategy,search_index_sync,'
                               || 'retention,embedding_model,deletion_hook,keyword_language,embedder',
                               'settings');

      IF l_obj.has('memory_store_id') THEN
         l_set.store_id := oramem_registry.normalize_store_id(opt_word(l_obj, 'memory_store_id'));
      ELSE
         l_set.store_id := oramem_registry.gc_default_store_id;
      END IF;
      IF l_obj.has('vector_dim') THEN
         l_set.has_dim := TRUE;
         l_set.vector_dim := opt_count(l_obj, 'vector_dim', 65535);
         IF l_set.vector_dim = 0 THEN
            bad_setting('vector_dim must be between 1 and 65535 or null');
         END IF;
      END IF;
      IF l_obj.has('search_strategy') AND NOT l_obj.get('search_strategy').is_null THEN
         l_set.has_strategy := TRUE;
         l_set.strategy := LOWER(opt_word(l_obj, 'search_strategy'));
         IF l_set.strategy NOT IN ('vector', 'keyword', 'hybrid') THEN
            bad_setting('search_strategy must be vector, keyword or hybrid');
         END IF;
      END IF;
      IF l_obj.has('search_index_sync') AND NOT l_obj.get('search_index_sync').is_null THEN
         l_set.has_sync := TRUE;
         l_set.sync_mode := LOWER(opt_word(l_obj, 'search_index_sync'));
         IF l_set.sync_mode NOT IN ('on_commit', 'manual', 'auto') THEN
            bad_setting('search_index_sync must be on_commit, manual or auto');
         END IF;
      END IF;
      IF l_obj.has('retention') AND NOT l_obj.get('retention').is_null THEN
         IF NOT l_obj.get('retention').is_object THEN
            bad_setting('retention must be {"default_ttl_days": n|null, "max_ttl_days": n|null}');
         END IF;
         l_ret := l_obj.get_object('retention');
         -- {"default_ttl": 30} kept records forever (left36): the two members, no other
         oramem_filter.check_keys(l_ret, 'default_ttl_days,max_ttl_days', 'settings.retention');
         IF l_ret.has('default_ttl_days') THEN
            l_set.has_default := TRUE;
            l_set.default_ttl := opt_count(l_ret, 'default_ttl_days', 1000000);
         END IF;
         IF l_ret.has('max_ttl_days') THEN
            l_set.has_max := TRUE;
            l_set.max_ttl := opt_count(l_ret, 'max_ttl_days', 1000000);
         END IF;
         IF l_set.default_ttl > l_set.max_ttl THEN
            bad_setting('retention.default_ttl_days exceeds max_ttl_days');
         END IF;
      END IF;
      IF l_obj.has('embedding_model') THEN
         l_set.has_model := TRUE;
         l_set.model := check_model_name(opt_word(l_obj, 'embedding_model'));
      END IF;
      IF l_obj.has('deletion_hook') THEN
         l_set.has_hook := TRUE;
         l_set.hook := check_hook_name(opt_word(l_obj, 'deletion_hook'));
      END IF;
      -- keyword_language (issue 11 item 5): null/absent = adopt the persisted one (a new store:
      -- english), as the SQLite engine's keyword_language=None
      IF l_obj.has('keyword_language') AND NOT l_obj.get('keyword_language').is_null THEN
         l_set.has_language := TRUE;
         l_set.language := oramem_registry.check_language(opt_word(l_obj, 'keyword_language'),
                                                          'settings: keyword_language');
      END IF;
      -- embedder (issue 28): the identity of the embedder the caller opens with
      -- (oramem.embedders.identity); null/absent = neither compared nor recorded, as the
      -- SQLite engine's opens without an embedder
      IF l_obj.has('embedder') AND NOT l_obj.get('embedder').is_null THEN
         IF NOT l_obj.get('embedder').is_object THEN
            bad_setting('embedder must be a JSON object (an oramem embedder identity) or null');
         END IF;
         l_emb := l_obj.get_object('embedder');
         IF NOT l_emb.has('kind') THEN
            bad_setting('embedder must have a "kind" string (oramem.embedders.identity)');
         ELSIF NOT l_emb.get('kind').is_string THEN
            bad_setting('embedder must have a "kind" string (oramem.embedders.identity)');
         END IF;
         l_set.has_embedder := TRUE;
         l_set.embedder := l_emb.to_clob;
      END IF;
      RETURN l_set;
   END parse_settings;

   FUNCTION same(in_a IN NUMBER, in_b IN NUMBER) RETURN BOOLEAN
   IS
   BEGIN
      RETURN (in_a IS NULL AND in_b IS NULL) OR in_a = in_b;
   END same;

   FUNCTION strategy_level(in_strategy IN VARCHAR2) RETURN PLS_INTEGER
   IS
   BEGIN
      RETURN CASE in_strategy WHEN 'hybrid' THEN 3 WHEN 'keyword' THEN 2 ELSE 1 END;
   END strategy_level;

   ---------------------------------------------------------------------------------------
   -- embedder identity (issue 28; docs/embeddings.md, "Embedding identity")
   ---------------------------------------------------------------------------------------
   -- The recorded identity of a store (NULL: none recorded, or no such store).
   FUNCTION recorded_embedder(in_store_id IN VARCHAR2) RETURN CLOB
   IS
      l_identity CLOB;
   BEGIN
      SELECT s.embedder INTO l_identity FROM oramem_stores s WHERE s.memory_store_id = in_store_id;
      RETURN l_identity;
   EXCEPTION
      WHEN NO_DATA_FOUND THEN
         RETURN NULL;
   END recorded_embedder;

   -- The members of identity in_ident that decide its vector space, as JSON text
   -- (oramem.embedders.identity.same_identity, the same rule): every member but "chunking"
   -- (the chunk policy: informational for the comparison), for kind onnx neither "model"
   -- nor "path" (informational) nor "files" when in_other lacks it (recorded by a newer
   -- oramem only); a null member counts as absent.
   FUNCTION identity_core(
      in_ident IN JSON_OBJECT_T,
      in_other IN JSON_OBJECT_T
   ) RETURN CLOB
   IS
      l_keys        JSON_KEY_LIST := in_ident.get_keys;
      l_kind        VARCHAR2(4000 CHAR) := in_ident.get_string('kind');
      l_out         JSON_OBJECT_T := JSON_OBJECT_T();
      l_key         VARCHAR2(4000 CHAR);
      l_other_files BOOLEAN := FALSE;
   BEGIN
      -- nested, so get() is never called for an absent member (no short-circuit assumed)
      IF in_other.has('files') THEN
         l_other_files := NOT in_other.get('files').is_null;
      END IF;
      FOR i IN 1 .. l_keys.COUNT LOOP
         l_key := l_keys(i);   -- a member of in_ident: get() returns it
         IF l_key = 'chunking'
            OR (l_kind = 'onnx' AND l_key IN ('model', 'path'))
            OR (l_kind = 'onnx' AND l_key = 'files' AND NOT l_other_files)
         THEN
            NULL;   -- does not decide the vector space
         ELSIF NOT in_ident.get(l_key).is_null THEN
            l_out.put(l_key, in_ident.get(l_key));
         END IF;
      END LOOP;
      RETURN l_out.to_clob;
   END identity_core;

   -- Same vector space (both identities are JSON objects with a "kind" string)?
   FUNCTION same_embedder(
      in_a IN CLOB,
      in_b IN CLOB
   ) RETURN BOOLEAN
   IS
      l_a      JSON_OBJECT_T := TREAT(JSON_ELEMENT_T.parse(in_a) AS JSON_OBJECT_T);
      l_b      JSON_OBJECT_T := TREAT(JSON_ELEMENT_T.parse(in_b) AS JSON_OBJECT_T);
      l_core_a CLOB;
      l_core_b CLOB;
      l_equal  PLS_INTEGER;
   BEGIN
      l_core_a := identity_core(l_a, l_b);
      l_core_b := identity_core(l_b, l_a);
      -- member order is insignificant to JSON_EQUAL (SQL Language Reference, JSON_EQUAL)
      SELECT COUNT(*) INTO l_equal FROM dual WHERE JSON_EQUAL(l_core_a, l_core_b);
      RETURN l_equal = 1;
   END same_embedder;

   -- in_ident without its "chunking" member (the legacy chunk policy then applies).
   FUNCTION without_chunking(
      in_ident IN CLOB
   ) RETURN CLOB
   IS
      l_obj  JSON_OBJECT_T := TREAT(JSON_ELEMENT_T.parse(in_ident) AS JSON_OBJECT_T);
      l_keys JSON_KEY_LIST := l_obj.get_keys;
      l_out  JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      FOR i IN 1 .. l_keys.COUNT LOOP
         IF l_keys(i) <> 'chunking' THEN
            l_out.put(l_keys(i), l_obj.get(l_keys(i)));
         END IF;
      END LOOP;
      RETURN l_out.to_clob;
   END without_chunking;

   -- ora44: refuse the vectors of an embedder the store no longer records (the spec).
   PROCEDURE check_embedder(
      in_store_id IN VARCHAR2,
      in_identity IN CLOB,
      in_what     IN VARCHAR2
   )
   IS
      l_id       VARCHAR2(128 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_recorded CLOB;
   BEGIN
      BEGIN
         SELECT s.embedder INTO l_recorded FROM oramem_stores s WHERE s.memory_store_id = l_id;
      EXCEPTION
         WHEN NO_DATA_FOUND THEN
            oramem_errors.raise_error(oramem_errors.gc_store_not_found,
               'store ' || l_id || ' does not exist; nothing to compare an embedder with');
      END;
      IF l_recorded IS NULL THEN
         RETURN;   -- nothing recorded: nothing to compare (as open_store)
      END IF;
      IF same_embedder(l_recorded, in_identity) THEN
         RETURN;
      END IF;
      oramem_errors.raise_error(oramem_errors.gc_embedder_mismatch,
         'embedder: store ' || l_id || ' was moved to the embedder '
         || DBMS_LOB.SUBSTR(l_recorded, 600, 1) || ' (oramem reembed, by another session or store object) '
         || 'after this store object was opened with ' || DBMS_LOB.SUBSTR(in_identity, 600, 1)
         || '; vectors of different embedders are not comparable, so ' || in_what
         || '. Close this store object and open a new one with the embedder the store records');
   END check_embedder;

   -- Record in_embedder as the identity of a store that has none (trust on first use, as
   -- the SQLite catalog's embedder column) when the store holds vectors (vector_dim set,
   -- strategy vector or hybrid: a KEYWORD store records none, as on SQLite). A store whose
   -- chunk table already holds rows (a store from before catalog version 5) records it
   -- without "chunking": its rows were cut by the legacy 2,000-character policy, and new
   -- records keep that policy, so no store mixes two chunkings (docs/embeddings.md).
   -- The UPDATE's "embedder IS NULL" makes a concurrent adoption keep the first one.
   PROCEDURE adopt_embedder(
      in_store_id IN VARCHAR2,
      in_embedder IN CLOB
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_identity CLOB := in_embedder;
      l_rows     PLS_INTEGER := 0;
   BEGIN
      IF table_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_chunks)) THEN
         EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM '
            || oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_chunks)
            || ' WHERE ROWNUM = 1'
            INTO l_rows;
      END IF;
      IF l_rows > 0 THEN
         l_identity := without_chunking(in_embedder);
      END IF;
      UPDATE oramem_stores s
      SET    s.embedder   = l_identity,
             s.updated_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  s.memory_store_id = in_store_id
      AND    s.embedder IS NULL
      AND    s.vector_dim IS NOT NULL
      AND    s.search_strategy IN ('vector', 'hybrid');
      COMMIT;
   END adopt_embedder;

   PROCEDURE adopt_if_unrecorded(
      in_set IN settings_t
   )
   IS
   BEGIN
      IF in_set.has_embedder AND recorded_embedder(in_set.store_id) IS NULL THEN
         adopt_embedder(in_set.store_id, in_set.embedder);
      END IF;
   END adopt_if_unrecorded;

   PROCEDURE mismatch(
      in_store_id  IN VARCHAR2,
      in_setting   IN VARCHAR2,
      in_persisted IN VARCHAR2,
      in_requested IN VARCHAR2,
      in_hint      IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_settings_mismatch,
         'store ' || in_store_id || ' was created with ' || in_setting || '='
         || NVL(in_persisted, 'None') || ' but ' || in_setting || '=' || NVL(in_requested, 'None')
         || ' was requested; ' || in_hint);
   END mismatch;

   -- Check that the database can build what the settings need (before any DDL).
   PROCEDURE check_capabilities(
      in_strategy IN VARCHAR2,
      in_sync     IN VARCHAR2,
      in_model    IN VARCHAR2
   )
   IS
      l_count PLS_INTEGER;
   BEGIN
      IF in_sync = 'auto' AND in_strategy <> 'hybrid' THEN
         bad_setting('search_index_sync=auto is accepted only with search_strategy=hybrid');
      END IF;
      IF in_strategy IN ('keyword', 'hybrid') AND NOT oramem_registry.text_available THEN
         oramem_errors.raise_error(oramem_errors.gc_feature_missing,
            'search_strategy=' || in_strategy || ' needs Oracle Text, which this database lacks '
            || '(slim image?); use search_strategy=vector or a database with Oracle Text');
      END IF;
      IF in_strategy = 'hybrid' THEN
         IF NOT oramem_registry.hybrid_available THEN
            oramem_errors.raise_error(oramem_errors.gc_feature_missing,
               'search_strategy=hybrid needs DBMS_HYBRID_VECTOR (Oracle Database 23.6 or later)');
         END IF;
         IF in_model IS NULL THEN
            bad_setting('search_strategy=hybrid needs embedding_model (an in-database ONNX model)');
         END IF;
         SELECT COUNT(*) INTO l_count FROM user_mining_models WHERE model_name = in_model;
         IF l_count = 0 THEN
            oramem_errors.raise_error(oramem_errors.gc_feature_missing,
               'embedding_model ' || in_model || ' is not loaded in this schema; load it with '
               || 'DBMS_VECTOR.LOAD_ONNX_MODEL first');
         END IF;
      END IF;
   END check_capabilities;

   ---------------------------------------------------------------------------------------
   -- building and dropping store objects (idempotent steps)
   ---------------------------------------------------------------------------------------
   FUNCTION text_params(in_sync IN VARCHAR2) RETURN VARCHAR2
   IS
   BEGIN
      -- fixed allow-list (ORACLE_NOTES 4.1); auto = 23ai automatic maintenance. D4: a CONTEXT
      -- index created on 23ai defaults to automatic maintenance, "configured with the
      -- combination of automatic maintenance and SYNC (MANUAL). No other SYNC settings are
      -- compatible" (Oracle Text Application Developer's Guide 23, Using Automatic Maintenance
      -- for Indexes, cd/G11854_01/ccapp/using-automatic-maintenance-index.html), so on_commit
      -- and manual name MAINTENANCE MANUAL explicitly, as hybrid_params does (F3).
      RETURN CASE in_sync WHEN 'manual' THEN 'MAINTENANCE MANUAL SYNC (MANUAL)'
                          WHEN 'auto'   THEN ''
                          ELSE 'MAINTENANCE MANUAL SYNC (ON COMMIT)' END;
   END text_params;

   -- The Oracle Text preferences of the store's text index (keyword and hybrid stores; issue
   -- 11 item 5), as CREATE INDEX / CREATE HYBRID VECTOR INDEX parameters. Names from
   -- oramem_registry.object_name (DBMS_ASSERT-validated, no quotes).
   FUNCTION text_prefs(in_store_id IN VARCHAR2) RETURN VARCHAR2
   IS
   BEGIN
      RETURN 'LEXER ' || oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_lexer)
          || ' WORDLIST ' || oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_wordlist)
          || ' STOPLIST ' || oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_stoplist);
   END text_prefs;

   FUNCTION hybrid_params(in_sync IN VARCHAR2) RETURN VARCHAR2
   IS
   BEGIN
      -- A hybrid vector index defaults to MAINTENANCE AUTO, and its SYNC settings apply
      -- only under MAINTENANCE MANUAL (23/vecse/create-hybrid-vector-index.html, Index
      -- Maintenance Preferences; 23/ccapp/using-automatic-maintenance-index.html): so
      -- on_commit/manual name MAINTENANCE MANUAL explicitly, auto says nothing (review F3).
      RETURN CASE in_sync WHEN 'manual' THEN 'MAINTENANCE MANUAL SYNC (MANUAL)'
                          WHEN 'auto'   THEN ''
                          ELSE 'MAINTENANCE MANUAL SYNC (ON COMMIT)' END;
   END hybrid_params;

   PROCEDURE drop_index_if_exists(in_name IN VARCHAR2, in_force IN BOOLEAN)
   IS
   BEGIN
      IF index_exists(in_name) THEN
         exec_ddl('DROP INDEX ' || DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(in_name), TRUE)
                  || CASE WHEN in_force THEN ' FORCE' END);
      END IF;
   END drop_index_if_exists;

   -- Drop the store's lexer, wordlist and stoplist preferences when they exist. Dropping a
   -- preference does not affect an index created with it (Oracle Text Reference, DROP_PREFERENCE).
   PROCEDURE drop_text_prefs(in_store_id IN VARCHAR2)
   IS
      l_lex  VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_lexer);
      l_wl   VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_wordlist);
      l_stop VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_stoplist);
   BEGIN
      IF vpref_exists(l_lex) THEN
         exec_block('BEGIN CTX_DDL.DROP_PREFERENCE(:1); END;', l_lex);
      END IF;
      IF vpref_exists(l_wl) THEN
         exec_block('BEGIN CTX_DDL.DROP_PREFERENCE(:1); END;', l_wl);
      END IF;
      IF stoplist_exists(l_stop) THEN
         exec_block('BEGIN CTX_DDL.DROP_STOPLIST(:1); END;', l_stop);
      END IF;
   END drop_text_prefs;

   -- (Re)create the text index preferences of a keyword language, just before the index is
   -- created (docs/oracle-search.md, "keyword_language"; plsql/VERIFY.md, row K1):
   --  - lexer OM_<ID>_LEX, BASIC_LEXER: BASE_LETTER YES (diacritics folded, as SQLite's
   --    remove_diacritics 2; Oracle Text is case-insensitive by default, MIXED_CASE NO);
   --    INDEX_STEMS ENGLISH for english (stems indexed: faster $word queries), NONE for none;
   --  - wordlist OM_<ID>_WL, BASIC_WORDLIST: STEMMER ENGLISH for english (the stem operator's
   --    language, independent of the database language), NULL (no stemming) for none;
   --  - stoplist OM_<ID>_STOP: an empty BASIC_STOPLIST for both languages (CREATE_STOPLIST
   --    creates "a new, empty stoplist"): every word is indexed, as in SQLite's FTS5 index;
   --    english drops its stopwords from the query only (oramem_search.keyword_query).
   -- Existing ones are dropped first, so a preference half made by an interrupted run is
   -- never used. Attribute values are fixed literals chosen by the checked language.
   PROCEDURE create_text_prefs(
      in_store_id IN VARCHAR2,
      in_language IN VARCHAR2
   )
   IS
      l_english BOOLEAN := NVL(in_language, oramem_registry.gc_default_language)
                           = oramem_registry.gc_language_english;
   BEGIN
      drop_text_prefs(in_store_id);
      exec_block('DECLARE l_name VARCHAR2(130 CHAR) := :1; BEGIN '
                 || 'CTX_DDL.CREATE_PREFERENCE(l_name, ''BASIC_LEXER''); '
                 || 'CTX_DDL.SET_ATTRIBUTE(l_name, ''BASE_LETTER'', ''YES''); '
                 || 'CTX_DDL.SET_ATTRIBUTE(l_name, ''INDEX_STEMS'', '
                 || CASE WHEN l_english THEN '''ENGLISH''' ELSE '''NONE''' END || '); END;',
                 oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_lexer));
      exec_block('DECLARE l_name VARCHAR2(130 CHAR) := :1; BEGIN '
                 || 'CTX_DDL.CREATE_PREFERENCE(l_name, ''BASIC_WORDLIST''); '
                 || 'CTX_DDL.SET_ATTRIBUTE(l_name, ''STEMMER'', '
                 || CASE WHEN l_english THEN '''ENGLISH''' ELSE '''NULL''' END || '); END;',
                 oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_wordlist));
      exec_block('BEGIN CTX_DDL.CREATE_STOPLIST(:1, ''BASIC_STOPLIST''); END;',
                 oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_stoplist));
   END create_text_prefs;

   PROCEDURE ensure_purge_job(
      in_store_id IN VARCHAR2,
      out_job     OUT VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_job VARCHAR2(128 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_job);
   BEGIN
      out_job := NULL;
      IF job_exists(l_job) THEN
         out_job := l_job;
         COMMIT;
         RETURN;
      END IF;
      -- STORED_PROCEDURE + argument: no caller text inside job_action (ORACLE_NOTES 8.1).
      DBMS_SCHEDULER.CREATE_JOB(
         job_name            => l_job,
         job_type            => 'STORED_PROCEDURE',
         job_action          => 'ORAMEM_STORE.RUN_PURGE_JOB',
         number_of_arguments => 1,
         start_date          => SYSTIMESTAMP,
         repeat_interval     => gc_purge_interval,
         enabled             => FALSE,
         auto_drop           => FALSE,
         comments            => 'oramem TTL purge of store ' || in_store_id);
      DBMS_SCHEDULER.SET_JOB_ARGUMENT_VALUE(job_name => l_job, argument_position => 1,
                                            argument_value => in_store_id);
      DBMS_SCHEDULER.ENABLE(l_job);
      out_job := l_job;
      COMMIT;
   EXCEPTION
      WHEN e_job_privilege OR e_no_privilege THEN
         -- SC-5.5: warn and continue; purge_expired stays callable.
         ROLLBACK;
         out_job := NULL;
   END ensure_purge_job;

   PROCEDURE drop_job(in_job IN VARCHAR2)
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      IF job_exists(in_job) THEN
         BEGIN
            DBMS_SCHEDULER.DROP_JOB(job_name => in_job, force => TRUE);
         EXCEPTION
            WHEN e_job_missing THEN
               NULL;   -- dropped concurrently
         END;
      END IF;
      COMMIT;
   END drop_job;

   PROCEDURE drop_purge_job(in_store_id IN VARCHAR2)
   IS
   BEGIN
      drop_job(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_job));
   END drop_purge_job;

   -- N1: the knowledge layer's tables and scheduler job belong to the store: they hold text,
   -- facts and vectors derived from its records (SC-8.4), so drop_store, RECREATE and the
   -- uninstall (through drop_store) drop them too. The exact names of
   -- oramem/knowledge/schema.py (TABLE_NAMES, KG_AGENT, KG_JOB; a test compares the lists),
   -- no LIKE pattern: the tables of a store whose id starts with this one stay. Children
   -- first; CASCADE CONSTRAINTS covers a table added later with a foreign key to these.
   -- The job name is oramem_kg_jobs.job_name's ('ORAMEM_KG_' || id), spelled here because
   -- oramem_kg_jobs is compiled after this package.
   PROCEDURE drop_knowledge(in_store_id IN VARCHAR2)
   IS
      TYPE suffix_tab_t IS VARRAY(13) OF VARCHAR2(32 CHAR);
      l_suffixes CONSTANT suffix_tab_t := suffix_tab_t(
         'FACT_ENTITY_LINK', 'RELATIONSHIP', 'ENTITY_ALIAS', 'META_OBSERVATION', 'CLUSTER',
         'ATTRIBUTE_REGISTRY', 'INTENTION', 'SESSION_OBSERVATION', 'FACT', 'ENTITY', 'EVENT',
         'AGENT', 'JOB');
      l_name VARCHAR2(128 CHAR);
   BEGIN
      drop_job(DBMS_ASSERT.SIMPLE_SQL_NAME('ORAMEM_KG_' || in_store_id));
      FOR i IN 1 .. l_suffixes.COUNT LOOP
         l_name := in_store_id || '_KG_' || l_suffixes(i);
         IF table_exists(l_name) THEN
            exec_ddl('DROP TABLE ' || DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(l_name), TRUE)
                     || ' CASCADE CONSTRAINTS PURGE');
         END IF;
      END LOOP;
   END drop_knowledge;

   -- 4b. the keyword passages of a HYBRID store (store schema version 4, issue 23): the table
   -- OM_<ID>_KWP, its rows for the records written before the store grouped (a grouping
   -- store only: gc_tpl_fill_passages, before the index so that its build indexes them),
   -- then the CONTEXT index OM_<ID>_KTX with the store's text preferences and SYNC mode (as
   -- a KEYWORD store's OM_<ID>_TXT). Every HYBRID store has them: a new store records its
   -- embedder (adopt_if_unrecorded) after this build, and whether it groups is read from
   -- the recorded identity on each write and search (store_t.keyword_passages).
   PROCEDURE ensure_passages(
      in_store_id IN VARCHAR2,
      in_store    IN oramem_registry.store_t,
      in_rec_q    IN VARCHAR2,
      in_chk_q    IN VARCHAR2
   )
   IS
      l_kwp   VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_passages);
      l_kwp_q VARCHAR2(140 CHAR) := oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_passages);
      l_ktx   VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_passage_text);
   BEGIN
      IF NOT table_exists(l_kwp) THEN
         exec_ddl(REPLACE(REPLACE(REPLACE(REPLACE(gc_tpl_passages,
                     '#KWP_PK#', derived_name(in_store_id, oramem_registry.gc_obj_passages, '_PK')),
                     '#KWP_FK#', derived_name(in_store_id, oramem_registry.gc_obj_passages, '_FK')),
                     '#KWP#', l_kwp_q), '#REC#', in_rec_q));
      END IF;
      IF in_store.keyword_passages = 1 THEN
         -- DML in the autonomous helper: committed before the index is built
         exec_ddl(REPLACE(REPLACE(gc_tpl_fill_passages, '#KWP#', l_kwp_q), '#CHK#', in_chk_q));
      END IF;
      IF index_broken(l_ktx) THEN
         drop_index_if_exists(l_ktx, TRUE);
      END IF;
      IF NOT index_exists(l_ktx) THEN
         create_text_prefs(in_store_id, in_store.keyword_language);
         exec_ddl(REPLACE(REPLACE(REPLACE(gc_tpl_passage_index, '#KTX#',
                     oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_passage_text)),
                     '#KWP#', l_kwp_q), '#PARAMS#',
                     text_prefs(in_store_id) || CASE WHEN text_params(in_store.search_index_sync) IS NOT NULL
                                                     THEN ' ' || text_params(in_store.search_index_sync) END));
      END IF;
   END ensure_passages;

   -- Create whatever of the store's objects is missing for the persisted settings.
   PROCEDURE ensure_objects(
      in_store_id IN VARCHAR2
   )
   IS
      l_store   oramem_registry.store_t;
      l_found   BOOLEAN;
      l_rec     VARCHAR2(130 CHAR);
      l_chk     VARCHAR2(130 CHAR);
      l_rec_q   VARCHAR2(140 CHAR);
      l_chk_q   VARCHAR2(140 CHAR);
      l_sql     VARCHAR2(4000 CHAR);
      l_dim     VARCHAR2(10 CHAR);
      l_text    NUMBER := 0;
      l_hybrid  NUMBER := 0;
      l_job     VARCHAR2(128 CHAR);
      l_params  JSON_OBJECT_T;
      l_name    VARCHAR2(130 CHAR);
   BEGIN
      oramem_registry.find_store(in_store_id, l_store, l_found);
      l_rec   := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_records);
      l_chk   := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_chunks);
      l_rec_q := oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_records);
      l_chk_q := oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_chunks);
      IF l_store.vector_dim IS NOT NULL THEN
         l_dim := TO_CHAR(TRUNC(l_store.vector_dim), 'FM99990');
      END IF;

      -- 1. record table and its indexes (scope columns, expiry, insertion order)
      IF NOT table_exists(l_rec) THEN
         l_sql := REPLACE(REPLACE(gc_tpl_records, '#REC_PK#',
                     derived_name(in_store_id, oramem_registry.gc_obj_records, '_PK')), '#REC#', l_rec_q);
         exec_ddl(l_sql);
      END IF;
      -- 6 and 7 (store schema version 2, review S24): list() filters on record_type and
      -- takes the top n by seq_no; list_thread_messages() filters on thread_id and
      -- record_type and orders by seq_no. Created for new stores and, by the upgrade to
      -- version 2, for existing ones (build_store).
      FOR i IN 1 .. 7 LOOP
         l_name := l_rec || CASE i WHEN 1 THEN '_THR_IX' WHEN 2 THEN '_USR_IX' WHEN 3 THEN '_AGT_IX'
                                   WHEN 4 THEN '_EXP_IX' WHEN 5 THEN '_SEQ_IX' WHEN 6 THEN '_TSQ_IX'
                                   ELSE '_TTS_IX' END;
         IF NOT index_exists(l_name) THEN
            l_sql := REPLACE(REPLACE(REPLACE(gc_tpl_index, '#IX#',
                        DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(l_name), TRUE)),
                        '#REC#', l_rec_q),
                        '#COL#', CASE i WHEN 1 THEN 'thread_id' WHEN 2 THEN 'user_id'
                                        WHEN 3 THEN 'agent_id' WHEN 4 THEN 'expires_at'
                                        WHEN 5 THEN 'seq_no' WHEN 6 THEN 'record_type, seq_no'
                                        ELSE 'thread_id, record_type, seq_no' END);
            exec_ddl(l_sql);
         END IF;
      END LOOP;

      -- 2. RECORD_CHUNKS table (vector column only when the store has a dimension)
      IF NOT table_exists(l_chk) THEN
         l_sql := REPLACE(gc_tpl_chunks, '#EMBEDDING#',
                          CASE WHEN l_dim IS NOT NULL THEN REPLACE(gc_tpl_embedding, '#DIM#', l_dim) END);
         l_sql := REPLACE(REPLACE(REPLACE(REPLACE(l_sql,
                     '#CHK_PK#', derived_name(in_store_id, oramem_registry.gc_obj_chunks, '_PK')),
                     '#CHK_FK#', derived_name(in_store_id, oramem_registry.gc_obj_chunks, '_FK')),
                     '#CHK#', l_chk_q), '#REC#', l_rec_q);
         exec_ddl(l_sql);
      ELSIF l_dim IS NOT NULL AND NOT column_exists(l_chk, 'EMBEDDING') THEN
         -- capability upgrade: a store created without vector_dim gets its vector column
         exec_ddl(REPLACE(REPLACE(gc_tpl_add_embedding, '#CHK#', l_chk_q), '#DIM#', l_dim));
      END IF;

      -- 3. HNSW vector index (cosine; the metric every vector query uses)
      IF l_dim IS NOT NULL
         AND NOT index_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_hnsw))
      THEN
         exec_ddl(REPLACE(REPLACE(gc_tpl_hnsw, '#HNSW#',
                     oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_hnsw)),
                     '#CHK#', l_chk_q));
      END IF;

      -- 4. keyword / hybrid index
      IF l_store.search_strategy = 'keyword' THEN
         l_name := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_text);
         IF index_broken(l_name) THEN
            drop_index_if_exists(l_name, TRUE);
         END IF;
         IF NOT index_exists(l_name) THEN
            create_text_prefs(in_store_id, l_store.keyword_language);
            exec_ddl(REPLACE(REPLACE(REPLACE(gc_tpl_text, '#TXT#',
                        oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_text)),
                        '#CHK#', l_chk_q), '#PARAMS#',
                        text_prefs(in_store_id) || CASE WHEN text_params(l_store.search_index_sync) IS NOT NULL
                                                        THEN ' ' || text_params(l_store.search_index_sync) END));
         END IF;
         l_text := 1;
      ELSIF l_store.search_strategy = 'hybrid' THEN
         -- the hybrid index is an Oracle Text SEARCH INDEX type (one text index per column), so
         -- a CONTEXT index of an earlier keyword stage is dropped first; keyword search on it
         -- goes through DBMS_HYBRID_VECTOR.SEARCH, not CONTAINS (oramem_search, review F8)
         drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_text), TRUE);
         l_name := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_hybrid);
         IF index_broken(l_name) THEN
            drop_index_if_exists(l_name, TRUE);   -- half-built hybrid index (ORACLE_NOTES 5.1)
         END IF;
         IF NOT index_exists(l_name) THEN
            IF NOT vpref_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_vpref)) THEN
               l_params := JSON_OBJECT_T();
               l_params.put('model', l_store.embedding_model);
               l_params.put('by', 'words');
               l_params.put('max', 100);
               l_params.put('overlap', 10);
               l_params.put('split', 'recursively');
               l_params.put('vector_idxtype', 'hnsw');
               l_params.put('distance', 'cosine');
               l_params.put('accuracy', 95);
               exec_block('BEGIN DBMS_VECTOR_CHAIN.CREATE_PREFERENCE(:1, DBMS_VECTOR_CHAIN.VECTORIZER, JSON(:2)); END;',
                          oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_vpref),
                          l_params.to_clob);
            END IF;
            -- the text part of a hybrid vector index takes Oracle Text preferences too ("Text
            -- search preferences for the text index part", CREATE HYBRID VECTOR INDEX)
            create_text_prefs(in_store_id, l_store.keyword_language);
            exec_ddl(REPLACE(REPLACE(REPLACE(gc_tpl_hybrid, '#HVI#',
                        oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_hybrid)),
                        '#CHK#', l_chk_q),
                        '#PARAMS#', 'VECTORIZER '
                                    || oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_vpref)
                                    || ' ' || text_prefs(in_store_id)
                                    || CASE WHEN hybrid_params(l_store.search_index_sync) IS NOT NULL
                                            THEN ' ' || hybrid_params(l_store.search_index_sync) END));
         END IF;
         ensure_passages(in_store_id, l_store, l_rec_q, l_chk_q);
         l_hybrid := 1;
      END IF;

      -- 5. TTL purge job (warn and continue without CREATE JOB)
      ensure_purge_job(in_store_id, l_job);
      IF l_job IS NULL THEN
         g_warnings.append('the TTL purge job of store ' || in_store_id || ' was not created '
            || '(CREATE JOB is not granted directly); expired records stay hidden but are removed '
            || 'only when oramem_store.purge_expired is called');
      END IF;
      set_flags(in_store_id, l_text, l_hybrid, l_job);
   END ensure_objects;

   -- Is every object the persisted settings need present and valid?
   FUNCTION objects_complete(
      in_store IN oramem_registry.store_t
   ) RETURN BOOLEAN
   IS
      l_id VARCHAR2(16 CHAR) := in_store.memory_store_id;
   BEGIN
      IF NOT table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_records))
         OR NOT table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_chunks))
      THEN
         RETURN FALSE;
      END IF;
      IF in_store.vector_dim IS NOT NULL
         AND NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hnsw))
      THEN
         RETURN FALSE;
      END IF;
      IF in_store.search_strategy = 'keyword'
         AND (NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_text))
              OR index_broken(oramem_registry.object_name(l_id, oramem_registry.gc_obj_text)))
      THEN
         RETURN FALSE;
      END IF;
      IF in_store.search_strategy = 'hybrid'
         AND (NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hybrid))
              OR index_broken(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hybrid)))
      THEN
         RETURN FALSE;
      END IF;
      -- store schema version 4 (issue 23): the keyword passage table and its CONTEXT index
      IF in_store.search_strategy = 'hybrid'
         AND (NOT table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages))
              OR NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passage_text))
              OR index_broken(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passage_text)))
      THEN
         RETURN FALSE;
      END IF;
      RETURN TRUE;
   END objects_complete;

   PROCEDURE drop_objects(
      in_store_id IN VARCHAR2
   )
   IS
      l_pref VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_vpref);
      l_chk  VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_chunks);
      l_rec  VARCHAR2(130 CHAR) := oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_records);
   BEGIN
      drop_purge_job(in_store_id);
      drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_hybrid), TRUE);
      drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_text), TRUE);
      drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_passage_text), TRUE);
      drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_hnsw), FALSE);
      IF table_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_passages)) THEN
         exec_ddl('DROP TABLE ' || oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_passages)
                  || ' CASCADE CONSTRAINTS PURGE');
      END IF;
      IF table_exists(l_chk) THEN
         exec_ddl('DROP TABLE ' || oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_chunks)
                  || ' CASCADE CONSTRAINTS PURGE');
      END IF;
      IF table_exists(l_rec) THEN
         exec_ddl('DROP TABLE ' || oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_records)
                  || ' CASCADE CONSTRAINTS PURGE');
      END IF;
      IF vpref_exists(l_pref) THEN
         exec_block('BEGIN DBMS_VECTOR_CHAIN.DROP_PREFERENCE(:1); END;', l_pref);
      END IF;
      drop_text_prefs(in_store_id);
      drop_knowledge(in_store_id);   -- N1
   END drop_objects;

   ---------------------------------------------------------------------------------------
   -- describe
   ---------------------------------------------------------------------------------------
   FUNCTION describe_obj(
      in_store_id  IN VARCHAR2,
      in_strategy  IN VARCHAR2,
      in_created   IN BOOLEAN,
      in_upgraded  IN BOOLEAN
   ) RETURN JSON_OBJECT_T
   IS
      l_obj   JSON_OBJECT_T := JSON_OBJECT_T();
      l_ret   JSON_OBJECT_T := JSON_OBJECT_T();
      l_sup   JSON_ARRAY_T  := JSON_ARRAY_T();
      l_row   oramem_stores%ROWTYPE;
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      SELECT * INTO l_row FROM oramem_stores WHERE memory_store_id = in_store_id;
      l_obj.put('memory_store_id', l_row.memory_store_id);
      IF l_row.vector_dim IS NULL THEN
         l_obj.put_null('vector_dim');
      ELSE
         l_obj.put('vector_dim', l_row.vector_dim);
      END IF;
      l_obj.put('search_strategy', NVL(in_strategy, l_row.search_strategy));
      l_obj.put('search_index_sync', l_row.search_index_sync);
      IF l_row.default_ttl_days IS NULL THEN
         l_ret.put_null('default_ttl_days');
      ELSE
         l_ret.put('default_ttl_days', l_row.default_ttl_days);
      END IF;
      IF l_row.max_ttl_days IS NULL THEN
         l_ret.put_null('max_ttl_days');
      ELSE
         l_ret.put('max_ttl_days', l_row.max_ttl_days);
      END IF;
      l_obj.put('retention', l_ret);
      l_obj.put('embedding_model', l_row.embedding_model);
      l_obj.put('deletion_hook', l_row.deletion_hook);
      l_obj.put('keyword_language', l_row.keyword_language);   -- null: schema version < 3
      -- the embedder identity (issue 28), with its chunk policy under "chunking"
      IF l_row.embedder IS NULL THEN
         l_obj.put_null('embedder');
      ELSE
         l_obj.put('embedder', JSON_ELEMENT_T.parse(l_row.embedder));
      END IF;
      IF l_row.vector_dim IS NOT NULL THEN
         l_sup.append('vector');
      END IF;
      IF l_row.has_text_index = 1 OR l_row.has_hybrid_index = 1 THEN
         l_sup.append('keyword');
      END IF;
      IF l_row.has_hybrid_index = 1 THEN
         l_sup.append('hybrid');
      END IF;
      l_obj.put('supported_strategies', l_sup);
      -- issue 23: whether the keyword leg ranks keyword passages (OM_<ID>_KWP) instead of the
      -- retrieval rows; the one rule, find_store's store_t.keyword_passages (a HYBRID store
      -- whose recorded chunk policy counts tokens), read in any lifecycle state
      oramem_registry.find_store(in_store_id, l_store, l_found);
      IF l_found AND l_store.keyword_passages = 1 THEN
         l_obj.put('keyword_passages', TRUE);
      ELSE
         l_obj.put('keyword_passages', FALSE);
      END IF;
      l_obj.put('schema_version', l_row.schema_version);
      l_obj.put('code_schema_version', oramem_registry.gc_store_schema_version);
      l_obj.put('state', l_row.state);
      l_obj.put('purge_job', l_row.purge_job_name);
      l_obj.put('created', in_created);
      l_obj.put('upgraded', in_upgraded);
      IF g_warnings IS NULL THEN
         g_warnings := JSON_ARRAY_T();
      END IF;
      l_obj.put('warnings', g_warnings);
      l_obj.put('last_error', l_row.last_error);
      l_obj.put('created_at', oramem_registry.format_utc(l_row.created_at));
      l_obj.put('updated_at', oramem_registry.format_utc(l_row.updated_at));
      RETURN l_obj;
   END describe_obj;

   ---------------------------------------------------------------------------------------
   -- lifecycle steps (caller holds the store lock)
   ---------------------------------------------------------------------------------------
   -- Build (or resume building) the store for the persisted settings, then mark READY.
   PROCEDURE build_store(
      in_store_id IN VARCHAR2,
      in_state    IN VARCHAR2
   )
   IS
      l_code  PLS_INTEGER;
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      oramem_registry.find_store(in_store_id, l_store, l_found);
      set_state(in_store_id, in_state);
      -- Upgrades NNN -> MMM of per-store objects go here (ddl/README.md).
      -- 2 -> 3 (issue 11 item 5): a text or hybrid index built before version 3 has Oracle
      -- Text's default lexer, wordlist and stoplist (those of the database language): it is
      -- dropped, and ensure_objects below builds it again with the preferences of the store's
      -- keyword_language (recorded by upgrade_to). schema_version stays < 3 until mark_ready,
      -- so a rerun after a failure drops and rebuilds again (resumable). A hybrid index is
      -- re-vectorized by its rebuild (docs/oracle-search.md).
      IF l_found AND l_store.schema_version < 3 THEN
         drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_text), TRUE);
         drop_index_if_exists(oramem_registry.object_name(in_store_id, oramem_registry.gc_obj_hybrid), TRUE);
      END IF;
      ensure_objects(in_store_id);
      -- 1 -> 2 (S24): the (record_type, seq_no) and (thread_id, record_type, seq_no) indexes,
      -- which ensure_objects above creates when they are missing; nothing else to do.
      -- 3 -> 4 (issue 23): a HYBRID store's keyword passage table and its CONTEXT index, and
      -- for a store that groups one passage per existing retrieval row, which ensure_passages
      -- (in ensure_objects above) creates and fills when they are missing; resumable (the fill
      -- selects the records without a passage, the index is built when it does not exist).
      mark_ready(in_store_id);
   EXCEPTION
      WHEN OTHERS THEN
         l_code := SQLCODE;
         oramem_errors.log_error('oramem_admin.build_store', in_store_id);
         set_state(in_store_id, oramem_registry.gc_state_broken,
                   'build failed with ORA' || TO_CHAR(l_code) || '; see ORAMEM_ERROR_LOG; '
                   || 'reopen with CREATE_IF_NECESSARY to resume or RECREATE');
         IF l_code = -1031 THEN
            oramem_errors.raise_error(oramem_errors.gc_privilege_missing,
               'insufficient privileges while building store ' || in_store_id || '; grant CREATE '
               || 'TABLE, CREATE SEQUENCE (and CREATE JOB, EXECUTE ON CTXSYS.CTX_DDL) directly to '
               || $$PLSQL_UNIT_OWNER);
         END IF;
         RAISE;
   END build_store;

   PROCEDURE create_new(
      in_set IN settings_t
   )
   IS
      l_strategy VARCHAR2(16 CHAR) := CASE WHEN in_set.has_strategy THEN in_set.strategy ELSE 'vector' END;
      l_sync     VARCHAR2(16 CHAR) := CASE WHEN in_set.has_sync THEN in_set.sync_mode ELSE 'on_commit' END;
      l_language VARCHAR2(16 CHAR) := CASE WHEN in_set.has_language THEN in_set.language
                                           ELSE oramem_registry.gc_default_language END;
   BEGIN
      check_capabilities(l_strategy, l_sync, in_set.model);
      IF l_strategy = 'vector' AND in_set.vector_dim IS NULL THEN
         bad_setting('vector_dim is required for a vector store (or pass an embedder that reports it)');
      END IF;
      -- Claim: the CREATING row is committed before any DDL (ORACLE_NOTES 9.2).
      save_settings(in_set.store_id, in_set.vector_dim, l_strategy, l_sync, in_set.default_ttl,
                    in_set.max_ttl, in_set.model, in_set.hook, l_language,
                    oramem_registry.gc_state_creating);
      build_store(in_set.store_id, oramem_registry.gc_state_creating);
   END create_new;

   PROCEDURE remove_store(
      in_store_id IN VARCHAR2
   )
   IS
   BEGIN
      set_state(in_store_id, oramem_registry.gc_state_dropping);
      drop_objects(in_store_id);
      delete_registry(in_store_id);
   EXCEPTION
      WHEN OTHERS THEN
         oramem_errors.log_error('oramem_admin.remove_store', in_store_id);
         RAISE;   -- the row stays DROPPING: drop_store / RECREATE resume it
   END remove_store;

   -- Compare requested settings with a READY store; returns TRUE when a capability
   -- upgrade is needed (allowed only under CREATE_IF_NECESSARY).
   FUNCTION reconcile(
      in_store  IN oramem_registry.store_t,
      in_set    IN settings_t,
      in_policy IN VARCHAR2
   ) RETURN BOOLEAN
   IS
      l_upgrade  BOOLEAN := FALSE;
      l_hint     VARCHAR2(200 CHAR) := 'open with the persisted value, or use SchemaPolicy.RECREATE '
                                 || '(destroys the data)';
      l_recorded CLOB;
   BEGIN
      -- embedder identity first (before vector_dim, as on SQLite): vectors of two embedders
      -- are unrelated even at the same dimension. Only reads, so nothing is written yet.
      IF in_set.has_embedder THEN
         l_recorded := recorded_embedder(in_store.memory_store_id);
         IF l_recorded IS NOT NULL AND NOT same_embedder(l_recorded, in_set.embedder) THEN
            oramem_errors.raise_error(oramem_errors.gc_embedder_mismatch,
               'embedder: store ' || in_store.memory_store_id || ' was built with the embedder '
               || DBMS_LOB.SUBSTR(l_recorded, 600, 1) || ', this open uses '
               || DBMS_LOB.SUBSTR(in_set.embedder, 600, 1) || '; vectors of different embedders are '
               || 'not comparable. Open it with the embedder that built it, or move the store to the '
               || 'new one (oramem reembed; oramem_admin.reembed_begin_json and the calls after it)');
         END IF;
      END IF;
      IF in_set.has_dim AND NOT same(in_store.vector_dim, in_set.vector_dim) THEN
         IF in_store.vector_dim IS NULL AND in_set.vector_dim IS NOT NULL
            AND in_policy = gc_policy_create_if_necessary
         THEN
            l_upgrade := TRUE;
         ELSIF in_set.vector_dim IS NOT NULL OR in_store.vector_dim IS NULL THEN
            mismatch(in_store.memory_store_id, 'vector_dim', TO_CHAR(in_store.vector_dim),
                     TO_CHAR(in_set.vector_dim),
                     CASE WHEN in_store.vector_dim IS NULL
                          THEN 'use SchemaPolicy.CREATE_IF_NECESSARY to add vectors'
                          ELSE l_hint END);
         END IF;
         -- vector_dim=None requested on a vector store: accept the persisted dimension
      END IF;
      IF in_set.has_strategy THEN
         IF strategy_level(in_set.strategy) > strategy_level(in_store.search_strategy) THEN
            IF in_policy = gc_policy_create_if_necessary THEN
               l_upgrade := TRUE;
            ELSE
               mismatch(in_store.memory_store_id, 'search_strategy', in_store.search_strategy,
                        in_set.strategy, 'use SchemaPolicy.CREATE_IF_NECESSARY to upgrade the store');
            END IF;
         ELSIF in_set.strategy = 'vector' AND in_store.vector_dim IS NULL
               AND NOT (in_set.has_dim AND in_set.vector_dim IS NOT NULL)
         THEN
            mismatch(in_store.memory_store_id, 'vector_dim', NULL, NULL,
                     'a vector search needs vector_dim; open with vector_dim under CREATE_IF_NECESSARY');
         END IF;
      END IF;
      IF in_set.has_sync AND in_set.sync_mode <> in_store.search_index_sync
         AND (in_store.has_text_index = 1 OR in_store.has_hybrid_index = 1)
      THEN
         mismatch(in_store.memory_store_id, 'search_index_sync', in_store.search_index_sync,
                  in_set.sync_mode, l_hint);
      END IF;
      IF in_set.has_default AND NOT same(in_store.default_ttl_days, in_set.default_ttl) THEN
         mismatch(in_store.memory_store_id, 'retention.default_ttl_days',
                  TO_CHAR(in_store.default_ttl_days), TO_CHAR(in_set.default_ttl), l_hint);
      END IF;
      IF in_set.has_max AND NOT same(in_store.max_ttl_days, in_set.max_ttl) THEN
         mismatch(in_store.memory_store_id, 'retention.max_ttl_days',
                  TO_CHAR(in_store.max_ttl_days), TO_CHAR(in_set.max_ttl), l_hint);
      END IF;
      IF in_set.has_model AND in_set.model IS NOT NULL AND in_store.embedding_model IS NOT NULL
         AND in_set.model <> in_store.embedding_model
      THEN
         mismatch(in_store.memory_store_id, 'embedding_model', in_store.embedding_model,
                  in_set.model, l_hint);
      END IF;
      -- keyword_language is fixed when the store is created (its text index is built for it):
      -- another one is a mismatch under every policy but RECREATE, as on SQLite. A store of
      -- schema version < 3 has none recorded yet; its upgrade records the requested one.
      IF in_set.has_language AND in_store.keyword_language IS NOT NULL
         AND in_set.language <> in_store.keyword_language
      THEN
         mismatch(in_store.memory_store_id, 'keyword_language', in_store.keyword_language,
                  in_set.language, 'omit keyword_language (or pass keyword_language='
                  || in_store.keyword_language || ') to use the stored one, or use '
                  || 'SchemaPolicy.RECREATE (destroys the data)');
      END IF;
      RETURN l_upgrade;
   END reconcile;

   -- Merge requested settings into the persisted ones and rebuild (capability upgrade,
   -- repair of a BROKEN/crashed store, schema upgrade).
   PROCEDURE upgrade_to(
      in_store IN oramem_registry.store_t,
      in_set   IN settings_t
   )
   IS
      l_dim      NUMBER := in_store.vector_dim;
      l_strategy VARCHAR2(16 CHAR) := in_store.search_strategy;
      l_model    VARCHAR2(128 CHAR) := in_store.embedding_model;
      -- recorded language; a store of schema version < 3 gets the requested one (reconcile
      -- refused a different one for a store that has one), else the default
      l_language VARCHAR2(16 CHAR) := COALESCE(in_store.keyword_language,
                                               CASE WHEN in_set.has_language THEN in_set.language END,
                                               oramem_registry.gc_default_language);
   BEGIN
      IF in_set.has_dim AND in_set.vector_dim IS NOT NULL AND l_dim IS NULL THEN
         l_dim := in_set.vector_dim;
      END IF;
      IF in_set.has_strategy AND strategy_level(in_set.strategy) > strategy_level(l_strategy) THEN
         l_strategy := in_set.strategy;
      END IF;
      IF in_set.has_model AND in_set.model IS NOT NULL AND l_model IS NULL THEN
         l_model := in_set.model;
      END IF;
      check_capabilities(l_strategy, in_store.search_index_sync, l_model);
      save_settings(in_store.memory_store_id, l_dim, l_strategy, in_store.search_index_sync,
                    in_store.default_ttl_days, in_store.max_ttl_days, l_model,
                    in_store.deletion_hook, l_language, oramem_registry.gc_state_upgrading);
      build_store(in_store.memory_store_id, oramem_registry.gc_state_upgrading);
   END upgrade_to;

   ---------------------------------------------------------------------------------------
   -- public API
   ---------------------------------------------------------------------------------------
   FUNCTION open_store(
      in_settings      IN CLOB,
      in_policy        IN VARCHAR2    DEFAULT 'REQUIRE_EXISTING',
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB
   IS
      l_policy    VARCHAR2(32 CHAR) := UPPER(TRIM(in_policy));
      l_set       settings_t;
      l_store     oramem_registry.store_t;
      l_found     BOOLEAN;
      l_created   BOOLEAN := FALSE;
      l_upgraded  BOOLEAN := FALSE;
      l_result    CLOB;
   BEGIN
      g_warnings := JSON_ARRAY_T();
      IF l_policy IS NULL OR l_policy NOT IN (gc_policy_require_existing, gc_policy_create_if_empty,
                                              gc_policy_create_if_necessary, gc_policy_recreate)
      THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'schema_policy must be REQUIRE_EXISTING, CREATE_IF_EMPTY, CREATE_IF_NECESSARY or RECREATE');
      END IF;
      l_set := parse_settings(in_settings);
      -- Lock-free path (review F21): a READY store at the code's schema version, with all
      -- its objects and no setting to change, is opened without the exclusive store lock;
      -- SC-10.3 needs the lock only to create, upgrade or repair. reconcile only reads
      -- (and raises on a mismatch, as it would under the lock).
      IF l_policy <> gc_policy_recreate THEN
         oramem_registry.find_store(l_set.store_id, l_store, l_found);
         IF l_found AND l_store.state = oramem_registry.gc_state_ready
            AND l_store.schema_version = oramem_registry.gc_store_schema_version
            AND NOT reconcile(l_store, l_set, l_policy)
            AND objects_complete(l_store)
         THEN
            adopt_if_unrecorded(l_set);
            RETURN describe_obj(l_set.store_id,
                                CASE WHEN l_set.has_strategy THEN l_set.strategy END,
                                FALSE, FALSE).to_clob;
         END IF;
      END IF;
      lock_store(l_set.store_id, in_lock_timeout);

      oramem_registry.find_store(l_set.store_id, l_store, l_found);
      IF l_policy = gc_policy_recreate THEN
         IF l_found OR store_objects_exist(l_set.store_id) THEN
            IF NOT l_found THEN
               save_settings(l_set.store_id, NULL, 'vector', 'on_commit', NULL, NULL, NULL, NULL, NULL,
                             oramem_registry.gc_state_dropping);
            END IF;
            remove_store(l_set.store_id);
         END IF;
         create_new(l_set);
         l_created := TRUE;
      ELSIF NOT l_found THEN
         IF l_policy = gc_policy_require_existing THEN
            oramem_errors.raise_error(oramem_errors.gc_store_not_found,
               'store ' || l_set.store_id || ' does not exist; open it with '
               || 'SchemaPolicy.CREATE_IF_NECESSARY or CREATE_IF_EMPTY to create it');
         ELSIF l_policy = gc_policy_create_if_empty AND store_objects_exist(l_set.store_id) THEN
            oramem_errors.raise_error(oramem_errors.gc_schema_incomplete,
               'tables of store ' || l_set.store_id || ' exist without a registry entry; use '
               || 'SchemaPolicy.CREATE_IF_NECESSARY to adopt them or RECREATE to start over');
         END IF;
         create_new(l_set);
         l_created := TRUE;
      ELSIF l_store.state <> oramem_registry.gc_state_ready THEN
         -- We hold the lock, so the session that left this state is gone or failed.
         IF l_policy <> gc_policy_create_if_necessary THEN
            oramem_errors.raise_error(oramem_errors.gc_store_state,
               'store ' || l_set.store_id || ' is ' || l_store.state || '; open it with '
               || 'SchemaPolicy.CREATE_IF_NECESSARY to resume, or RECREATE');
         END IF;
         IF l_store.state = oramem_registry.gc_state_dropping THEN
            remove_store(l_set.store_id);
            create_new(l_set);
            l_created := TRUE;
         ELSE
            IF reconcile(l_store, l_set, l_policy) THEN
               NULL;   -- upgrade_to below applies the requested capabilities too
            END IF;
            upgrade_to(l_store, l_set);
            l_upgraded := TRUE;
         END IF;
      ELSE
         IF l_store.schema_version > oramem_registry.gc_store_schema_version THEN
            oramem_errors.raise_error(oramem_errors.gc_schema_too_new,
               'store ' || l_set.store_id || ' has schema version ' || l_store.schema_version
               || ', newer than this code (' || oramem_registry.gc_store_schema_version
               || '); install the newer oramem packages');
         END IF;
         l_upgraded := reconcile(l_store, l_set, l_policy);
         IF l_store.schema_version < oramem_registry.gc_store_schema_version THEN
            IF l_policy <> gc_policy_create_if_necessary THEN
               oramem_errors.raise_error(oramem_errors.gc_schema_outdated,
                  'store ' || l_set.store_id || ' has schema version ' || l_store.schema_version
                  || ' and this code needs ' || oramem_registry.gc_store_schema_version
                  || '; open with SchemaPolicy.CREATE_IF_NECESSARY or run oramem_admin.upgrade_store');
            END IF;
            l_upgraded := TRUE;
         END IF;
         IF NOT objects_complete(l_store) THEN
            IF l_policy <> gc_policy_create_if_necessary THEN
               oramem_errors.raise_error(oramem_errors.gc_schema_incomplete,
                  'objects of store ' || l_set.store_id || ' are missing or invalid; open it with '
                  || 'SchemaPolicy.CREATE_IF_NECESSARY to repair it, or RECREATE');
            END IF;
            l_upgraded := TRUE;
         END IF;
         IF l_upgraded THEN
            upgrade_to(l_store, l_set);
         END IF;
      END IF;

      adopt_if_unrecorded(l_set);
      l_result := describe_obj(l_set.store_id,
                               CASE WHEN l_set.has_strategy THEN l_set.strategy END,
                               l_created, l_upgraded).to_clob;
      unlock_store;
      RETURN l_result;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.open_store', l_set.store_id);
         END IF;
         unlock_store;
         RAISE;
   END open_store;

   FUNCTION create_store(
      in_settings      IN CLOB,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB
   IS
      l_set     settings_t;
      l_store   oramem_registry.store_t;
      l_found   BOOLEAN;
      l_result  CLOB;
   BEGIN
      g_warnings := JSON_ARRAY_T();
      l_set := parse_settings(in_settings);
      lock_store(l_set.store_id, in_lock_timeout);
      oramem_registry.find_store(l_set.store_id, l_store, l_found);
      IF l_found OR store_objects_exist(l_set.store_id) THEN
         oramem_errors.raise_error(oramem_errors.gc_store_exists,
            'store ' || l_set.store_id || ' already exists; open it with open_store, or drop it first');
      END IF;
      create_new(l_set);
      adopt_if_unrecorded(l_set);
      l_result := describe_obj(l_set.store_id, NULL, TRUE, FALSE).to_clob;
      unlock_store;
      RETURN l_result;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.create_store', l_set.store_id);
         END IF;
         unlock_store;
         RAISE;
   END create_store;

   FUNCTION describe_store(
      in_store_id IN VARCHAR2
   ) RETURN CLOB
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found,
            'store ' || l_id || ' does not exist');
      END IF;
      g_warnings := JSON_ARRAY_T();
      RETURN describe_obj(l_id, NULL, FALSE, FALSE).to_clob;
   END describe_store;

   FUNCTION list_stores RETURN CLOB
   IS
      l_arr JSON_ARRAY_T := JSON_ARRAY_T();
   BEGIN
      g_warnings := JSON_ARRAY_T();
      FOR l_row IN (SELECT memory_store_id FROM oramem_stores ORDER BY memory_store_id) LOOP
         l_arr.append(describe_obj(l_row.memory_store_id, NULL, FALSE, FALSE));
      END LOOP;
      RETURN l_arr.to_clob;
   END list_stores;

   PROCEDURE drop_store(
      in_store_id      IN VARCHAR2,
      in_if_exists     IN PLS_INTEGER DEFAULT 0,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   )
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      IF in_if_exists IS NULL OR in_if_exists NOT IN (0, 1) THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument, 'if_exists must be 0 or 1');
      END IF;
      lock_store(l_id, in_lock_timeout);
      oramem_registry.find_store(l_id, l_store, l_found);
      -- N1: also a store dropped before its knowledge tables went with it (only those left)
      IF NOT l_found AND NOT store_objects_exist(l_id) AND NOT table_exists(l_id || '_KG_EVENT') THEN
         IF in_if_exists = 0 THEN
            oramem_errors.raise_error(oramem_errors.gc_store_not_found,
               'store ' || l_id || ' does not exist');
         END IF;
      ELSE
         IF NOT l_found THEN
            save_settings(l_id, NULL, 'vector', 'on_commit', NULL, NULL, NULL, NULL, NULL,
                          oramem_registry.gc_state_dropping);
         END IF;
         remove_store(l_id);
      END IF;
      unlock_store;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.drop_store', l_id);
         END IF;
         unlock_store;
         RAISE;
   END drop_store;

   FUNCTION upgrade_store(
      in_store_id      IN VARCHAR2,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB
   IS
      l_id       VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store    oramem_registry.store_t;
      l_found    BOOLEAN;
      l_set      settings_t;
      l_upgraded BOOLEAN := FALSE;
      l_result   CLOB;
   BEGIN
      g_warnings := JSON_ARRAY_T();
      lock_store(l_id, in_lock_timeout);
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      IF l_store.schema_version > oramem_registry.gc_store_schema_version THEN
         oramem_errors.raise_error(oramem_errors.gc_schema_too_new,
            'store ' || l_id || ' has schema version ' || l_store.schema_version
            || ', newer than this code; install the newer oramem packages');
      END IF;
      IF l_store.schema_version < oramem_registry.gc_store_schema_version
         OR l_store.state <> oramem_registry.gc_state_ready
         OR NOT objects_complete(l_store)
      THEN
         IF l_store.state = oramem_registry.gc_state_dropping THEN
            oramem_errors.raise_error(oramem_errors.gc_store_state,
               'store ' || l_id || ' is DROPPING; finish with drop_store or open with RECREATE');
         END IF;
         l_set.store_id := l_id;
         upgrade_to(l_store, l_set);
         l_upgraded := TRUE;
      END IF;
      l_result := describe_obj(l_id, NULL, FALSE, l_upgraded).to_clob;
      unlock_store;
      RETURN l_result;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.upgrade_store', l_id);
         END IF;
         unlock_store;
         RAISE;
   END upgrade_store;

   PROCEDURE set_deletion_hook(
      in_store_id       IN VARCHAR2,
      in_procedure_name IN VARCHAR2
   )
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
      l_hook  VARCHAR2(400 CHAR);
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      l_hook := check_hook_name(in_procedure_name);
      save_hook(l_id, l_hook);
   END set_deletion_hook;

   FUNCTION get_options_json(
      in_store_id IN VARCHAR2
   ) RETURN CLOB
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
      l_out   CLOB;
      l_first BOOLEAN := TRUE;
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      l_out := '{';
      -- names are checked (^[a-z][a-z0-9_.]*$, the table's constraint): no escaping needed
      FOR l_row IN (
         SELECT name, value
         FROM   oramem_store_options
         WHERE  memory_store_id = l_id
         ORDER  BY NLSSORT(name, 'NLS_SORT=BINARY')
      ) LOOP
         IF NOT l_first THEN
            l_out := l_out || ',';
         END IF;
         l_out := l_out || '"' || l_row.name || '":' || l_row.value;
         l_first := FALSE;
      END LOOP;
      RETURN l_out || '}';
   END get_options_json;

   PROCEDURE set_option(
      in_store_id IN VARCHAR2,
      in_name     IN VARCHAR2,
      in_value    IN CLOB
   )
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
      l_json  PLS_INTEGER;
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      IF in_name IS NULL OR NOT REGEXP_LIKE(in_name, '^[a-z][a-z0-9_.]{0,63}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'option name must match ^[a-z][a-z0-9_.]{0,63}$');
      END IF;
      IF in_value IS NULL THEN
         DELETE FROM oramem_store_options WHERE memory_store_id = l_id AND name = in_name;
         RETURN;
      END IF;
      SELECT COUNT(*) INTO l_json FROM dual WHERE in_value IS JSON;
      IF l_json = 0 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'option ' || in_name || ': the value is not JSON');
      END IF;
      MERGE INTO oramem_store_options o
      USING (SELECT l_id AS memory_store_id, in_name AS name FROM dual) s
      ON (o.memory_store_id = s.memory_store_id AND o.name = s.name)
      WHEN MATCHED THEN
         UPDATE SET o.value = in_value, o.updated_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHEN NOT MATCHED THEN
         INSERT (memory_store_id, name, value) VALUES (s.memory_store_id, s.name, in_value);
   END set_option;

   FUNCTION capabilities RETURN CLOB
   IS
      l_obj   JSON_OBJECT_T := JSON_OBJECT_T();
      l_count PLS_INTEGER;
   BEGIN
      l_obj.put('oracle_text', oramem_registry.text_available);
      l_obj.put('hybrid_vector', oramem_registry.hybrid_available);
      SELECT COUNT(*) INTO l_count FROM all_objects
      WHERE  owner = 'SYS' AND object_name = 'DBMS_LOCK' AND object_type = 'PACKAGE';
      l_obj.put('dbms_lock', l_count > 0);
      SELECT COUNT(*) INTO l_count FROM user_sys_privs
      WHERE  privilege IN ('CREATE JOB', 'CREATE ANY JOB');
      l_obj.put('create_job', l_count > 0);
      l_obj.put('db_version', TO_CHAR(DBMS_DB_VERSION.VERSION) || '.' || TO_CHAR(DBMS_DB_VERSION.RELEASE));
      l_obj.put('code_schema_version', oramem_registry.gc_store_schema_version);
      l_obj.put('catalog_version', oramem_registry.gc_catalog_version);
      RETURN l_obj.to_clob;
   END capabilities;
   PROCEDURE log_erasure(
      in_store_id IN VARCHAR2,
      in_receipt  IN CLOB
   )
   IS
      l_id      VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_elem    JSON_ELEMENT_T;
      l_obj     JSON_OBJECT_T;
      l_receipt VARCHAR2(64 CHAR);
      l_at      VARCHAR2(64 CHAR);
      l_hash    VARCHAR2(64 CHAR);
   BEGIN
      IF in_receipt IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'erasure receipt: missing');
      END IF;
      l_elem := JSON_ELEMENT_T.parse(in_receipt);
      IF NOT l_elem.is_object THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'erasure receipt: not a JSON object');
      END IF;
      l_obj := TREAT(l_elem AS JSON_OBJECT_T);
      l_receipt := l_obj.get_string('receipt_id');
      l_at := l_obj.get_string('erased_at');
      l_hash := l_obj.get_string('subject_hash');
      IF l_receipt IS NULL OR l_at IS NULL OR l_hash IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
            'erasure receipt: receipt_id, erased_at and subject_hash are required');
      END IF;
      MERGE INTO oramem_erasure_log l
      USING (SELECT l_id AS memory_store_id, l_receipt AS receipt_id FROM dual) s
      ON (l.memory_store_id = s.memory_store_id AND l.receipt_id = s.receipt_id)
      WHEN MATCHED THEN
         UPDATE SET l.receipt = in_receipt
      WHEN NOT MATCHED THEN
         INSERT (memory_store_id, receipt_id, erased_at, subject_hash, receipt)
         VALUES (s.memory_store_id, s.receipt_id, l_at, l_hash, in_receipt);
   END log_erasure;

   FUNCTION get_erasure_log_json(
      in_store_id IN VARCHAR2
   ) RETURN CLOB
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_out   CLOB;
      l_first BOOLEAN := TRUE;
   BEGIN
      l_out := '[';
      FOR l_row IN (
         SELECT receipt
         FROM   oramem_erasure_log
         WHERE  memory_store_id = l_id
         ORDER  BY erased_at, receipt_id
      ) LOOP
         IF NOT l_first THEN
            l_out := l_out || ',';
         END IF;
         l_out := l_out || l_row.receipt;
         l_first := FALSE;
      END LOOP;
      RETURN l_out || ']';
   END get_erasure_log_json;

   FUNCTION erasure_scan_json(
      in_store_id IN VARCHAR2,
      in_tokens   IN CLOB
   ) RETURN CLOB
   IS
      l_id      VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store   oramem_registry.store_t;
      l_found   BOOLEAN;
      l_elem    JSON_ELEMENT_T;
      l_tokens  JSON_ARRAY_T;
      l_token   VARCHAR2(256 CHAR);
      l_where   JSON_ARRAY_T;
      l_hits    JSON_OBJECT_T := JSON_OBJECT_T();
      l_shared  JSON_ARRAY_T := JSON_ARRAY_T();
      l_scanned JSON_ARRAY_T := JSON_ARRAY_T();
      l_out     JSON_OBJECT_T := JSON_OBJECT_T();
      l_rec     VARCHAR2(200 CHAR);
      l_chk     VARCHAR2(200 CHAR);
      l_kwp     VARCHAR2(200 CHAR);                -- NULL: the store has no passage table
      l_count   PLS_INTEGER;
      l_live    BOOLEAN;
      TYPE name_tab_t IS TABLE OF VARCHAR2(200 CHAR) INDEX BY PLS_INTEGER;
      l_itabs   name_tab_t;
      l_ilabels name_tab_t;
      l_kinds   name_tab_t;
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      IF in_tokens IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'in_tokens: a JSON array of strings is required');
      END IF;
      l_elem := JSON_ELEMENT_T.parse(in_tokens);
      IF NOT l_elem.is_array THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'in_tokens: a JSON array of strings is required');
      END IF;
      l_tokens := TREAT(l_elem AS JSON_ARRAY_T);
      l_rec := oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_records);
      l_chk := oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_chunks);
      l_scanned.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_records));
      l_scanned.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_chunks));
      IF table_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages)) THEN
         l_kwp := oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_passages);
         l_scanned.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages));
      END IF;
      -- the token tables of the store's text indexes: DR$<index>$I (Oracle Text)
      l_kinds(1) := oramem_registry.gc_obj_text;
      l_kinds(2) := oramem_registry.gc_obj_hybrid;
      l_kinds(3) := oramem_registry.gc_obj_passage_text;   -- keyword passages (issue 23, SC-14)
      FOR k IN 1 .. l_kinds.COUNT LOOP
         IF table_exists('DR$' || oramem_registry.object_name(l_id, l_kinds(k)) || '$I') THEN
            l_itabs(l_itabs.COUNT + 1) := DBMS_ASSERT.ENQUOTE_NAME(
               'DR$' || oramem_registry.object_name(l_id, l_kinds(k)) || '$I', FALSE);
            l_ilabels(l_ilabels.COUNT + 1) := 'text-index:' || oramem_registry.object_name(l_id, l_kinds(k));
            l_scanned.append(l_ilabels(l_ilabels.COUNT));
         END IF;
      END LOOP;
      FOR i IN 0 .. l_tokens.get_size - 1 LOOP
         IF NOT l_tokens.get(i).is_string THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload, 'in_tokens: a JSON array of strings is required');
         END IF;
         l_token := SUBSTR(LOWER(l_tokens.get_string(i)), 1, 255);
         l_where := JSON_ARRAY_T();
         l_live := FALSE;
         EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ' || l_rec
            || ' WHERE DBMS_LOB.INSTR(LOWER(content), :t) > 0'
            || ' OR DBMS_LOB.INSTR(LOWER(JSON_SERIALIZE(metadata RETURNING CLOB)), :t) > 0'
            INTO l_count USING l_token, l_token;
         IF l_count > 0 THEN
            l_where.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_records));
            l_live := TRUE;
         END IF;
         EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ' || l_chk || ' WHERE DBMS_LOB.INSTR(LOWER(chunk_text), :t) > 0'
            INTO l_count USING l_token;
         IF l_count > 0 THEN
            l_where.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_chunks));
            l_live := TRUE;
         END IF;
         -- a HYBRID store's keyword passages (issue 23): the texts of its retrieval rows again
         IF l_kwp IS NOT NULL THEN
            EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ' || l_kwp || ' WHERE DBMS_LOB.INSTR(LOWER(passage_text), :t) > 0'
               INTO l_count USING l_token;
            IF l_count > 0 THEN
               l_where.append('table:' || oramem_registry.object_name(l_id, oramem_registry.gc_obj_passages));
               l_live := TRUE;
            END IF;
         END IF;
         FOR j IN 1 .. l_itabs.COUNT LOOP
            EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM ' || l_itabs(j)
               || ' WHERE token_text IN (UPPER(:t), :t)'
               INTO l_count USING l_token, l_token;
            IF l_count > 0 THEN
               l_where.append(l_ilabels(j));
            END IF;
         END LOOP;
         IF l_where.get_size > 0 THEN
            l_hits.put(l_token, l_where);
            IF l_live THEN
               l_shared.append(l_token);
            END IF;
         END IF;
      END LOOP;
      l_out.put('scanned', l_scanned);
      l_out.put('found', l_hits);
      l_out.put('shared', l_shared);
      RETURN l_out.to_clob;
   END erasure_scan_json;

   ---------------------------------------------------------------------------------------
   -- re-embedding (oramem reembed; docs/oracle-models.md, "Re-embedding an Oracle store")
   ---------------------------------------------------------------------------------------
   -- The registry row of a store a reembed call names (-20101 when there is none).
   FUNCTION reembed_store(
      in_store_id IN VARCHAR2
   ) RETURN oramem_registry.store_t
   IS
      l_id    VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_store oramem_registry.store_t;
      l_found BOOLEAN;
   BEGIN
      oramem_registry.find_store(l_id, l_store, l_found);
      IF NOT l_found THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found, 'store ' || l_id || ' does not exist');
      END IF;
      RETURN l_store;
   END reembed_store;

   -- in_target checked as an embedder identity (a JSON object with a "kind" string).
   FUNCTION reembed_identity(
      in_target IN CLOB
   ) RETURN JSON_OBJECT_T
   IS
      l_elem JSON_ELEMENT_T;
      l_obj  JSON_OBJECT_T;
   BEGIN
      IF in_target IS NOT NULL THEN
         BEGIN
            l_elem := JSON_ELEMENT_T.parse(in_target);
         EXCEPTION
            WHEN e_json_syntax THEN
               l_elem := NULL;
         END;
      END IF;
      IF l_elem IS NOT NULL AND l_elem.is_object THEN
         l_obj := TREAT(l_elem AS JSON_OBJECT_T);
         IF l_obj.has('kind') THEN
            IF l_obj.get('kind').is_string THEN
               RETURN l_obj;
            END IF;
         END IF;
      END IF;
      oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
         'target must be an embedder identity: a JSON object with a "kind" string (oramem.embedders.identity)');
      RETURN NULL;
   END reembed_identity;

   -- The pending target {"embedder": ..., "vector_dim": n} of a store (NULL: none).
   FUNCTION reembed_pending(
      in_store_id IN VARCHAR2
   ) RETURN JSON_OBJECT_T
   IS
      l_value CLOB;
   BEGIN
      SELECT o.value INTO l_value FROM oramem_store_options o
      WHERE  o.memory_store_id = in_store_id AND o.name = gc_reembed_option;
      RETURN TREAT(JSON_ELEMENT_T.parse(l_value) AS JSON_OBJECT_T);
   EXCEPTION
      WHEN NO_DATA_FOUND THEN
         RETURN NULL;
   END reembed_pending;

   -- Is in_pending (reembed_pending) a reembed to the embedder in_target?
   FUNCTION reembed_same(
      in_pending IN JSON_OBJECT_T,
      in_target  IN JSON_OBJECT_T
   ) RETURN BOOLEAN
   IS
   BEGIN
      IF in_pending IS NULL THEN
         RETURN FALSE;
      END IF;
      RETURN same_embedder(in_pending.get_object('embedder').to_clob, in_target.to_clob);
   END reembed_same;

   -- Record (in_value not NULL) or clear the pending target, committed on its own.
   PROCEDURE save_reembed_target(
      in_store_id IN VARCHAR2,
      in_value    IN CLOB
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      IF in_value IS NULL THEN
         DELETE FROM oramem_store_options WHERE memory_store_id = in_store_id AND name = gc_reembed_option;
      ELSE
         MERGE INTO oramem_store_options o
         USING (SELECT in_store_id AS memory_store_id, gc_reembed_option AS name FROM dual) s
         ON (o.memory_store_id = s.memory_store_id AND o.name = s.name)
         WHEN MATCHED THEN
            UPDATE SET o.value = in_value, o.updated_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
         WHEN NOT MATCHED THEN
            INSERT (memory_store_id, name, value) VALUES (s.memory_store_id, s.name, in_value);
      END IF;
      COMMIT;
   END save_reembed_target;

   -- The swap's record (in the caller's transaction): the new dimension and identity, READY,
   -- no pending target.
   PROCEDURE record_reembed(
      in_store_id IN VARCHAR2,
      in_pending  IN JSON_OBJECT_T
   )
   IS
      -- plain values first: the SQL statement binds PL/SQL variables, no object method calls
      l_dim      NUMBER := in_pending.get_number('vector_dim');
      l_embedder CLOB   := in_pending.get_object('embedder').to_clob;
   BEGIN
      UPDATE oramem_stores
      SET    vector_dim  = l_dim,
             embedder    = l_embedder,
             state       = oramem_registry.gc_state_ready,
             state_owner = NULL,
             state_since = SYS_EXTRACT_UTC(SYSTIMESTAMP),
             last_error  = NULL,
             updated_at  = SYS_EXTRACT_UTC(SYSTIMESTAMP)
      WHERE  memory_store_id = in_store_id;
      DELETE FROM oramem_store_options WHERE memory_store_id = in_store_id AND name = gc_reembed_option;
   END record_reembed;

   -- record_reembed committed on its own (the last step of a dimension swap).
   PROCEDURE record_reembed_committed(
      in_store_id IN VARCHAR2,
      in_pending  IN JSON_OBJECT_T
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
   BEGIN
      record_reembed(in_store_id, in_pending);
      COMMIT;
   END record_reembed_committed;

   -- The pending target when it is in_target, else -20201 (another run took over, the swap
   -- is done, or the store was dropped).
   FUNCTION reembed_check(
      in_store_id IN VARCHAR2,
      in_target   IN CLOB
   ) RETURN JSON_OBJECT_T
   IS
      l_pending JSON_OBJECT_T := reembed_pending(in_store_id);
   BEGIN
      IF NOT reembed_same(l_pending, reembed_identity(in_target)) THEN
         oramem_errors.raise_error(oramem_errors.gc_store_busy,
            'the reembed of store ' || in_store_id || ' was taken over by another run (or finished, or the '
            || 'store was dropped); stopped without swapping');
      END IF;
      RETURN l_pending;
   END reembed_check;

   FUNCTION reembed_count(
      in_store_id IN VARCHAR2,
      in_where    IN VARCHAR2      -- fixed text of this package only
   ) RETURN PLS_INTEGER
   IS
      l_count PLS_INTEGER;
   BEGIN
      EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM '
         || oramem_registry.quoted_name(in_store_id, oramem_registry.gc_obj_chunks) || in_where
         INTO l_count;
      RETURN l_count;
   END reembed_count;

   -- rek43: does a knowledge table of the store (the KnowledgeMemory layer's <ID>_KG_*) hold
   -- a vector? The reembed moves the retrieval rows only; the knowledge vectors (facts,
   -- entities, events, intentions, observations, clusters) would stay in the old embedder's
   -- space, so reembed_begin_json refuses such a store before it changes anything, and
   -- reembed_swap_json refuses to swap when one was written meanwhile. The (table, vector
   -- column) pairs are those of oramem/kg_vectors.py (tests/plsql compares them).
   FUNCTION knowledge_vectors_exist(in_store_id IN VARCHAR2) RETURN BOOLEAN
   IS
      TYPE name_tab_t IS VARRAY(7) OF VARCHAR2(32 CHAR);
      l_tables  CONSTANT name_tab_t := name_tab_t(
         'EVENT', 'FACT', 'ENTITY', 'INTENTION', 'SESSION_OBSERVATION', 'META_OBSERVATION', 'CLUSTER');
      l_columns CONSTANT name_tab_t := name_tab_t(
         'EMBEDDING_VEC', 'EMBEDDING_VEC', 'EMBEDDING_VEC', 'TRIGGER_EMBEDDING_VEC', 'EMBEDDING_VEC',
         'EMBEDDING_VEC', 'EMBEDDING_VEC');
      l_name  VARCHAR2(128 CHAR);
      l_count PLS_INTEGER;
   BEGIN
      FOR i IN 1 .. l_tables.COUNT LOOP
         l_name := in_store_id || '_KG_' || l_tables(i);
         IF table_exists(l_name) THEN
            EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM '
               || DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(l_name), TRUE)
               || ' WHERE ' || l_columns(i) || ' IS NOT NULL AND ROWNUM = 1'
               INTO l_count;
            IF l_count > 0 THEN
               RETURN TRUE;
            END IF;
         END IF;
      END LOOP;
      RETURN FALSE;
   END knowledge_vectors_exist;

   -- The refusal of a store whose knowledge tables hold vectors (-20001), saying what to do.
   PROCEDURE refuse_knowledge_vectors(in_store_id IN VARCHAR2)
   IS
   BEGIN
      IF knowledge_vectors_exist(in_store_id) THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'store ' || in_store_id || ' has knowledge tables (KnowledgeMemory) that hold vectors: oramem '
            || 'reembed on Oracle re-embeds the retrieval rows only and would leave the facts'', entities'', '
            || 'events'' and observations'' vectors in the old embedder''s space, so nothing was changed. '
            || 'Keep this embedder, or create a new store with the new one and write its knowledge there '
            || 'again (on SQLite, oramem reembed re-embeds the knowledge tables too)');
      END IF;
   END refuse_knowledge_vectors;

   FUNCTION reembed_begin_json(
      in_store_id   IN VARCHAR2,
      in_target     IN CLOB,
      in_vector_dim IN PLS_INTEGER,
      in_restart    IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB
   IS
      l_id      VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_target  JSON_OBJECT_T := reembed_identity(in_target);
      l_store   oramem_registry.store_t;
      l_pending JSON_OBJECT_T;
      l_value   JSON_OBJECT_T := JSON_OBJECT_T();
      l_out     JSON_OBJECT_T := JSON_OBJECT_T();
      l_prev    CLOB;
      l_chk     VARCHAR2(128 CHAR);
      l_chk_q   VARCHAR2(200 CHAR);
   BEGIN
      IF in_vector_dim IS NULL OR in_vector_dim NOT BETWEEN 1 AND 65535 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument, 'vector_dim must be between 1 and 65535');
      END IF;
      IF in_restart IS NULL OR in_restart NOT IN (0, 1) THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument, 'restart must be 0 or 1');
      END IF;
      lock_store(l_id, gc_default_lock_timeout);
      l_store := reembed_store(l_id);
      IF l_store.vector_dim IS NULL OR l_store.search_strategy NOT IN ('vector', 'hybrid') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'store ' || l_id || ' is a ' || l_store.search_strategy || ' store: it holds no vectors to re-embed');
      END IF;
      l_prev := recorded_embedder(l_id);
      IF l_store.search_strategy = 'hybrid'
         AND (l_prev IS NULL OR NOT same_embedder(l_prev, l_target.to_clob))
      THEN
         -- the hybrid vector index and a PL/SQL caller's query vectors come from the store's
         -- in-database model: another embedder's vectors in EMBEDDING would be a second kind
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'store ' || l_id || ' is a hybrid store: its hybrid vector index embeds with the in-database '
            || 'model ' || l_store.embedding_model || ', so it can be re-embedded (and re-chunked) only with '
            || 'the embedder it records; to move it to another model, create a new hybrid store with that '
            || 'model and copy the records into it (export / import)');
      END IF;
      l_chk     := oramem_registry.object_name(l_id, oramem_registry.gc_obj_chunks);
      l_chk_q   := oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_chunks);
      l_pending := reembed_pending(l_id);
      IF l_store.state = oramem_registry.gc_state_ready THEN
         refuse_knowledge_vectors(l_id);   -- rek43: before anything is written
      END IF;
      l_out.put('swapping', FALSE);
      IF l_store.state = oramem_registry.gc_state_upgrading AND l_pending IS NOT NULL THEN
         -- a dimension swap was interrupted: only its own target finishes it (the old vectors
         -- may be gone already), and nothing is left to embed
         IF NOT reembed_same(l_pending, l_target) THEN
            oramem_errors.raise_error(oramem_errors.gc_store_state,
               'store ' || l_id || ' is swapping in the vectors of a reembed to '
               || DBMS_LOB.SUBSTR(l_pending.get_object('embedder').to_clob, 600, 1)
               || '; rerun the reembed with that embedder to finish it first');
         END IF;
         l_out.put('swapping', TRUE);
      ELSIF l_store.state <> oramem_registry.gc_state_ready THEN
         oramem_errors.raise_error(oramem_errors.gc_store_state,
            'store ' || l_id || ' is in state ' || l_store.state || '; it cannot be re-embedded');
      ELSE
         IF l_pending IS NOT NULL AND NOT reembed_same(l_pending, l_target) AND in_restart = 0 THEN
            l_out.put('started', FALSE);
            l_out.put('pending', l_pending.get_object('embedder'));
            unlock_store;
            RETURN l_out.to_clob;
         END IF;
         IF column_exists(l_chk, 'EMBEDDING_NEW')
            AND (NOT reembed_same(l_pending, l_target)
                 OR l_pending.get_number('vector_dim') <> in_vector_dim)
         THEN
            -- a restart, or the shadow column of a finished run: not this target's vectors
            exec_ddl(REPLACE(REPLACE(gc_tpl_set_unused, '#CHK#', l_chk_q), '#COL#', 'embedding_new'));
         END IF;
         l_value.put('embedder', l_target);
         l_value.put('vector_dim', in_vector_dim);
         save_reembed_target(l_id, l_value.to_clob);
         IF NOT column_exists(l_chk, 'EMBEDDING_NEW') THEN
            exec_ddl(REPLACE(REPLACE(gc_tpl_add_new_embedding, '#CHK#', l_chk_q),
                             '#DIM#', TO_CHAR(in_vector_dim, 'FM99990')));
         END IF;
      END IF;
      IF l_prev IS NULL THEN
         l_out.put_null('previous');
      ELSE
         l_out.put('previous', JSON_ELEMENT_T.parse(l_prev));
      END IF;
      l_out.put('started', TRUE);
      l_out.put('pending', l_target);
      IF column_exists(l_chk, 'EMBEDDING_NEW') THEN
         l_out.put('resumed', reembed_count(l_id, ' WHERE embedding_new IS NOT NULL'));
      ELSE
         l_out.put('resumed', reembed_count(l_id, ''));   -- swapping: every row has its new vector
      END IF;
      l_out.put('total', reembed_count(l_id, ''));
      l_out.put('vector_dim', l_store.vector_dim);
      l_out.put('search_strategy', l_store.search_strategy);
      IF l_store.embedding_model IS NULL THEN
         l_out.put_null('embedding_model');
      ELSE
         l_out.put('embedding_model', l_store.embedding_model);
      END IF;
      unlock_store;
      RETURN l_out.to_clob;
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.reembed_begin_json', l_id);
         END IF;
         unlock_store;
         RAISE;
   END reembed_begin_json;

   FUNCTION reembed_rows_json(
      in_store_id IN VARCHAR2,
      in_after    IN CLOB,
      in_limit    IN PLS_INTEGER
   ) RETURN CLOB
   IS
      l_store oramem_registry.store_t := reembed_store(in_store_id);
      l_elem  JSON_ELEMENT_T;
      l_after JSON_ARRAY_T;
      l_type  VARCHAR2(32 CHAR);
      l_rid   VARCHAR2(512 CHAR);
      l_no    NUMBER;
      l_out   CLOB;
   BEGIN
      IF in_limit IS NULL OR in_limit NOT BETWEEN 1 AND 10000 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument, 'limit must be between 1 and 10000');
      END IF;
      IF in_after IS NOT NULL THEN
         BEGIN
            l_elem := JSON_ELEMENT_T.parse(in_after);
         EXCEPTION
            WHEN e_json_syntax THEN
               l_elem := NULL;
         END;
         IF l_elem IS NULL OR NOT l_elem.is_array THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
               'in_after must be [record_type, record_id, chunk_no] or null');
         END IF;
         l_after := TREAT(l_elem AS JSON_ARRAY_T);
         IF l_after.get_size <> 3 THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
               'in_after must be [record_type, record_id, chunk_no] or null');
         END IF;
         l_type := l_after.get_string(0);
         l_rid  := l_after.get_string(1);
         l_no   := l_after.get_number(2);
      END IF;
      -- keyset order; a row this order skips (another NLS_SORT) keeps its NULL and is
      -- embedded by the swap's pass over every row without a new vector
      EXECUTE IMMEDIATE
         'SELECT JSON_ARRAYAGG(JSON_ARRAY(x.record_type, x.record_id, x.chunk_no, x.chunk_text '
         || 'NULL ON NULL RETURNING CLOB) FORMAT JSON '
         || 'ORDER BY x.record_type, x.record_id, x.chunk_no RETURNING CLOB) FROM ('
         || 'SELECT c.record_type, c.record_id, c.chunk_no, c.chunk_text FROM '
         || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks)
         || ' c WHERE c.embedding_new IS NULL AND (:1 IS NULL OR c.record_type > :2 OR (c.record_type = :3 '
         || 'AND (c.record_id > :4 OR (c.record_id = :5 AND c.chunk_no > :6)))) '
         || 'ORDER BY c.record_type, c.record_id, c.chunk_no FETCH FIRST :7 ROWS ONLY) x'
         INTO l_out USING l_type, l_type, l_type, l_rid, l_rid, l_no, in_limit;
      RETURN NVL(l_out, TO_CLOB('[]'));
   END reembed_rows_json;

   FUNCTION reembed_save_json(
      in_store_id IN VARCHAR2,
      in_target   IN CLOB,
      in_rows     IN CLOB
   ) RETURN PLS_INTEGER
   IS
      l_store   oramem_registry.store_t := reembed_store(in_store_id);
      l_pending JSON_OBJECT_T := reembed_check(l_store.memory_store_id, in_target);
      l_dim     PLS_INTEGER := l_pending.get_number('vector_dim');
      l_elem    JSON_ELEMENT_T;
      l_rows    JSON_ARRAY_T;
      l_row     JSON_ARRAY_T;
      l_vec     JSON_ARRAY_T;
      l_text    CLOB;
      l_saved   PLS_INTEGER := 0;
      l_sql     VARCHAR2(1000 CHAR);
   BEGIN
      BEGIN
         l_elem := JSON_ELEMENT_T.parse(in_rows);
      EXCEPTION
         WHEN e_json_syntax THEN
            l_elem := NULL;
      END;
      IF l_elem IS NULL OR NOT l_elem.is_array THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
            'in_rows must be a JSON array of [record_type, record_id, chunk_no, text, vector]');
      END IF;
      l_rows := TREAT(l_elem AS JSON_ARRAY_T);
      -- every row is checked before the first is written
      FOR i IN 0 .. l_rows.get_size - 1 LOOP
         IF NOT l_rows.get(i).is_array THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
               'in_rows[' || i || '] must be [record_type, record_id, chunk_no, text, vector]');
         END IF;
         l_row := TREAT(l_rows.get(i) AS JSON_ARRAY_T);
         IF l_row.get_size <> 5 OR NOT l_row.get(4).is_array THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
               'in_rows[' || i || '] must be [record_type, record_id, chunk_no, text, vector]');
         END IF;
         l_vec := TREAT(l_row.get(4) AS JSON_ARRAY_T);
         IF l_vec.get_size <> l_dim THEN
            oramem_errors.raise_error(oramem_errors.gc_vector_mismatch,
               'in_rows[' || i || ']: the vector has ' || l_vec.get_size || ' values, the reembed target '
               || l_dim);
         END IF;
      END LOOP;
      -- only a row still there with the text embedded: one deleted (a forget) or rewritten
      -- since it was read is not written, so no vector outlives its text. An empty text
      -- ("" reads back as NULL from get_clob, S16) matches a NULL or empty chunk_text.
      l_sql := 'UPDATE ' || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks)
               || ' c SET c.embedding_new = TO_VECTOR(:1, ' || TO_CHAR(l_dim, 'FM99990') || ', FLOAT32)'
               || ' WHERE c.record_type = :2 AND c.record_id = :3 AND c.chunk_no = :4'
               || ' AND ((NVL(DBMS_LOB.GETLENGTH(c.chunk_text), 0) = 0 AND :5 IS NULL)'
               || ' OR DBMS_LOB.COMPARE(c.chunk_text, :6) = 0)';
      FOR i IN 0 .. l_rows.get_size - 1 LOOP
         l_row  := TREAT(l_rows.get(i) AS JSON_ARRAY_T);
         l_text := CASE WHEN l_row.get(3).is_null THEN NULL ELSE l_row.get_clob(3) END;
         EXECUTE IMMEDIATE l_sql
            USING l_row.get(4).to_clob, l_row.get_string(0), l_row.get_string(1), l_row.get_number(2),
                  l_text, l_text;
         l_saved := l_saved + SQL%ROWCOUNT;
      END LOOP;
      RETURN l_saved;
   END reembed_save_json;

   FUNCTION reembed_swap_json(
      in_store_id IN VARCHAR2,
      in_target   IN CLOB
   ) RETURN CLOB
   IS
      l_store   oramem_registry.store_t := reembed_store(in_store_id);
      l_pending JSON_OBJECT_T := reembed_check(l_store.memory_store_id, in_target);
      l_missing PLS_INTEGER;
      l_out     JSON_OBJECT_T := JSON_OBJECT_T();
   BEGIN
      IF l_store.state <> oramem_registry.gc_state_ready THEN
         oramem_errors.raise_error(oramem_errors.gc_store_state,
            'store ' || l_store.memory_store_id || ' is in state ' || l_store.state || '; it cannot be swapped');
      END IF;
      refuse_knowledge_vectors(l_store.memory_store_id);   -- rek43: written since the begin
      l_missing := reembed_count(l_store.memory_store_id, ' WHERE embedding_new IS NULL');
      IF l_missing > 0 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            l_missing || ' retrieval row(s) of store ' || l_store.memory_store_id || ' have no new vector: '
            || 'save them (reembed_rows_json, reembed_save_json) after oramem_store.lock_retrieval_rows, then swap');
      END IF;
      l_out.put('total', reembed_count(l_store.memory_store_id, ''));
      IF l_pending.get_number('vector_dim') = l_store.vector_dim THEN
         -- one statement, in the caller's transaction: the store answers with the old
         -- vectors until the caller commits, and with the new ones (and identity) after
         EXECUTE IMMEDIATE 'UPDATE '
            || oramem_registry.quoted_name(l_store.memory_store_id, oramem_registry.gc_obj_chunks)
            || ' SET embedding = embedding_new';
         record_reembed(l_store.memory_store_id, l_pending);
         l_out.put('ddl', FALSE);
      ELSE
         -- another dimension: the column itself is replaced by DDL (reembed_finish_json), so
         -- data calls are refused (ready_store, -20106) until it has run
         UPDATE oramem_stores
         SET    state       = oramem_registry.gc_state_upgrading,
                state_owner = SYS_CONTEXT('USERENV', 'SID'),
                state_since = SYS_EXTRACT_UTC(SYSTIMESTAMP),
                updated_at  = SYS_EXTRACT_UTC(SYSTIMESTAMP)
         WHERE  memory_store_id = l_store.memory_store_id;
         l_out.put('ddl', TRUE);
      END IF;
      RETURN l_out.to_clob;
   END reembed_swap_json;

   FUNCTION reembed_finish_json(
      in_store_id     IN VARCHAR2,
      in_target       IN CLOB,
      in_lock_timeout IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB
   IS
      l_id      VARCHAR2(16 CHAR) := oramem_registry.normalize_store_id(in_store_id);
      l_target  JSON_OBJECT_T := reembed_identity(in_target);
      l_store   oramem_registry.store_t;
      l_pending JSON_OBJECT_T;
      l_chk     VARCHAR2(128 CHAR);
      l_chk_q   VARCHAR2(200 CHAR);
   BEGIN
      lock_store(l_id, in_lock_timeout);
      l_store   := reembed_store(l_id);
      l_pending := reembed_pending(l_id);
      l_chk     := oramem_registry.object_name(l_id, oramem_registry.gc_obj_chunks);
      l_chk_q   := oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_chunks);
      IF l_store.state = oramem_registry.gc_state_upgrading AND l_pending IS NOT NULL THEN
         IF NOT reembed_same(l_pending, l_target) THEN
            oramem_errors.raise_error(oramem_errors.gc_store_busy,
               'the reembed of store ' || l_id || ' was taken over by another run; stopped');
         END IF;
         -- each step is idempotent, so a rerun after a crash between two DDL statements
         -- (each commits) finishes: 1. the vector index of the column that goes
         drop_index_if_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hnsw), FALSE);
         -- 2. the new vectors in the old column's place (an EMBEDDING added meanwhile by a
         --    repairing open is set aside too)
         IF column_exists(l_chk, 'EMBEDDING_NEW') THEN
            IF column_exists(l_chk, 'EMBEDDING') THEN
               exec_ddl(REPLACE(REPLACE(gc_tpl_set_unused, '#CHK#', l_chk_q), '#COL#', 'embedding'));
            END IF;
            exec_ddl(REPLACE(gc_tpl_rename_new, '#CHK#', l_chk_q));
         END IF;
         -- 3. the vector index on it, as ensure_objects creates it
         IF NOT index_exists(oramem_registry.object_name(l_id, oramem_registry.gc_obj_hnsw)) THEN
            exec_ddl(REPLACE(REPLACE(gc_tpl_hnsw, '#HNSW#',
                        oramem_registry.quoted_name(l_id, oramem_registry.gc_obj_hnsw)), '#CHK#', l_chk_q));
         END IF;
         -- 4. dimension, identity, READY and no target, in one commit
         record_reembed_committed(l_id, l_pending);
      ELSIF l_store.state = oramem_registry.gc_state_ready AND l_pending IS NULL
            AND column_exists(l_chk, 'EMBEDDING_NEW')
      THEN
         -- same dimension: the swap committed; its shadow column goes
         exec_ddl(REPLACE(REPLACE(gc_tpl_set_unused, '#CHK#', l_chk_q), '#COL#', 'embedding_new'));
      END IF;
      unlock_store;
      RETURN describe_store(l_id);
   EXCEPTION
      WHEN OTHERS THEN
         IF NOT oramem_errors.is_oramem_error(SQLCODE) THEN
            oramem_errors.log_error('oramem_admin.reembed_finish_json', l_id);
         END IF;
         unlock_store;
         RAISE;
   END reembed_finish_json;

END oramem_admin;
/
