CREATE OR REPLACE PACKAGE oramem_registry
AUTHID DEFINER
AS
   /*
    * oramem_registry: the store registry (ORAMEM_STORES) as seen by the other oramem
    * packages, plus the shared rules they all apply: store-id and record-type
    * validation, derived object names (always DBMS_ASSERT-validated), UTC time
    * conversion and the JSON rendering of one record.
    *
    * Internal package: application code calls oramem_admin / oramem_store /
    * oramem_search. Nothing here commits.
    */

   -- Per-store schema version this code creates and reads (see ddl/README.md).
   -- 2: the (record_type, seq_no) and (thread_id, record_type, seq_no) indexes (review S24).
   -- 3: keyword_language recorded; the text index built with the language's lexer, wordlist
   --    and stoplist preferences (issue 11 item 5).
   -- 4: a HYBRID store has its keyword passage table OM_<ID>_KWP with the CONTEXT index
   --    OM_<ID>_KTX (issue 23); a store that groups (store_t.keyword_passages) gets one
   --    passage per existing retrieval row for the records that have none.
   gc_store_schema_version   CONSTANT PLS_INTEGER := 4;
   -- Catalog (ORAMEM_* tables) version: ddl/001_catalog.sql (1), ddl/upgrades/001_to_002.sql
   -- (2: ORAMEM_STORES.KEYWORD_LANGUAGE), ddl/upgrades/002_to_003.sql (3: ORAMEM_STORE_OPTIONS),
   -- ddl/upgrades/003_to_004.sql (4: ORAMEM_ERASURE_LOG), ddl/upgrades/004_to_005.sql
   -- (5: ORAMEM_STORES.EMBEDDER, the embedder identity with its chunk policy; issue 28).
   gc_catalog_version        CONSTANT PLS_INTEGER := 5;
   -- Store used when a caller passes a NULL store id (SC-10.1 "omitted = the default store").
   gc_default_store_id       CONSTANT VARCHAR2(16 CHAR) := 'DEFAULT';  -- oramem.normalize.DEFAULT_STORE_ID

   -- Lifecycle states (ORAMEM_STORES.STATE).
   gc_state_creating         CONSTANT VARCHAR2(16 CHAR) := 'CREATING';
   gc_state_ready            CONSTANT VARCHAR2(16 CHAR) := 'READY';
   gc_state_upgrading        CONSTANT VARCHAR2(16 CHAR) := 'UPGRADING';
   gc_state_dropping         CONSTANT VARCHAR2(16 CHAR) := 'DROPPING';
   gc_state_broken           CONSTANT VARCHAR2(16 CHAR) := 'BROKEN';

   -- Object kinds for object_name.
   gc_obj_records            CONSTANT VARCHAR2(8 CHAR) := 'REC';    -- OM_<ID>_REC   record table
   gc_obj_chunks             CONSTANT VARCHAR2(8 CHAR) := 'CHK';    -- OM_<ID>_CHK   RECORD_CHUNKS table
   gc_obj_hnsw               CONSTANT VARCHAR2(8 CHAR) := 'HNSW';   -- OM_<ID>_HNSW  HNSW vector index
   gc_obj_text               CONSTANT VARCHAR2(8 CHAR) := 'TXT';    -- OM_<ID>_TXT   Oracle Text CONTEXT index
   gc_obj_hybrid             CONSTANT VARCHAR2(8 CHAR) := 'HVI';    -- OM_<ID>_HVI   hybrid vector index
   gc_obj_vpref              CONSTANT VARCHAR2(8 CHAR) := 'VPREF';  -- OM_<ID>_VPREF vectorizer preference
   gc_obj_job                CONSTANT VARCHAR2(8 CHAR) := 'JOB';    -- ORAMEM_PURGE_<ID> scheduler job
   gc_obj_lexer              CONSTANT VARCHAR2(8 CHAR) := 'LEX';    -- OM_<ID>_LEX   BASIC_LEXER preference
   gc_obj_wordlist           CONSTANT VARCHAR2(8 CHAR) := 'WL';     -- OM_<ID>_WL    BASIC_WORDLIST preference
   gc_obj_stoplist           CONSTANT VARCHAR2(8 CHAR) := 'STOP';   -- OM_<ID>_STOP  BASIC_STOPLIST (empty)
   gc_obj_passages           CONSTANT VARCHAR2(8 CHAR) := 'KWP';    -- OM_<ID>_KWP   keyword passages (HYBRID)
   gc_obj_passage_text       CONSTANT VARCHAR2(8 CHAR) := 'KTX';    -- OM_<ID>_KTX   CONTEXT index on KWP

   -- Keyword languages (ORAMEM_STORES.KEYWORD_LANGUAGE; the names of oramem.sqlite.keyword
   -- KEYWORD_LANGUAGES). english: English stemming, English query stopwords; none: neither.
   gc_language_english       CONSTANT VARCHAR2(16 CHAR) := 'english';
   gc_language_none          CONSTANT VARCHAR2(16 CHAR) := 'none';
   gc_default_language       CONSTANT VARCHAR2(16 CHAR) := 'english';  -- a new store, as on SQLite

   SUBTYPE store_id_t    IS VARCHAR2(16 CHAR);
   SUBTYPE object_name_t IS VARCHAR2(128 CHAR);
   SUBTYPE record_type_t IS VARCHAR2(32 CHAR);
   SUBTYPE record_id_t   IS VARCHAR2(512 CHAR);
   SUBTYPE scope_value_t IS VARCHAR2(512 CHAR);

   TYPE store_t IS RECORD (
      memory_store_id    oramem_stores.memory_store_id%TYPE,
      vector_dim         oramem_stores.vector_dim%TYPE,
      search_strategy    oramem_stores.search_strategy%TYPE,
      search_index_sync  oramem_stores.search_index_sync%TYPE,
      default_ttl_days   oramem_stores.default_ttl_days%TYPE,
      max_ttl_days       oramem_stores.max_ttl_days%TYPE,
      embedding_model    oramem_stores.embedding_model%TYPE,
      deletion_hook      oramem_stores.deletion_hook%TYPE,
      schema_version     oramem_stores.schema_version%TYPE,
      state              oramem_stores.state%TYPE,
      has_text_index     oramem_stores.has_text_index%TYPE,
      has_hybrid_index   oramem_stores.has_hybrid_index%TYPE,
      purge_job_name     oramem_stores.purge_job_name%TYPE,
      keyword_language   oramem_stores.keyword_language%TYPE, -- NULL: schema version < 3
      -- 1: the store's keyword leg ranks keyword passages (issue 23; docs/store-decisions.md,
      -- "Keyword rows are passages"): a HYBRID store whose recorded embedder identity has a
      -- chunk policy counting tokens (oramem.chunking.keyword_row_chars, the same rule);
      -- 0 otherwise. Computed from ORAMEM_STORES.EMBEDDER by find_store, not stored.
      keyword_passages   oramem_stores.has_hybrid_index%TYPE
   );

   /*
    * normalize_store_id: NULL -> gc_default_store_id; else UPPER(TRIM(id)) checked
    * against ^[A-Z][A-Z0-9_]{0,15}$ (SC-10.1) and DBMS_ASSERT.SIMPLE_SQL_NAME.
    * Errors: -20010 (gc_invalid_store_id).
    */
   FUNCTION normalize_store_id(
      in_store_id IN VARCHAR2
   ) RETURN VARCHAR2;

   /*
    * object_name: the unquoted, upper-case name of one per-store object, in_kind one of
    * the gc_obj_ constants; validated with DBMS_ASSERT.SIMPLE_SQL_NAME.
    * Errors: -20010 bad store id; -20001 unknown kind.
    */
   FUNCTION object_name(
      in_store_id IN VARCHAR2,
      in_kind     IN VARCHAR2
   ) RETURN VARCHAR2;

   /*
    * quoted_name: DBMS_ASSERT.ENQUOTE_NAME(SIMPLE_SQL_NAME(object_name(...))) - the only
    * form in which identifiers enter dynamic SQL text.
    * Errors: as object_name.
    */
   FUNCTION quoted_name(
      in_store_id IN VARCHAR2,
      in_kind     IN VARCHAR2
   ) RETURN VARCHAR2;

   /*
    * find_store: the registry row of a normalised store id; out_found FALSE when absent.
    * Works in every lifecycle state. Never raises for a missing store.
    */
   PROCEDURE find_store(
      in_store_id IN  VARCHAR2,
      out_store   OUT NOCOPY store_t,
      out_found   OUT BOOLEAN
   );

   /*
    * ready_store: the registry row of a store that data operations may use: it exists,
    * is READY and has schema_version = gc_store_schema_version.
    * Errors: -20010 bad id; -20101 not found; -20106 not READY (names the state);
    *         -20104 outdated (names oramem_admin.upgrade_store); -20107 newer than code.
    */
   FUNCTION ready_store(
      in_store_id IN VARCHAR2
   ) RETURN store_t;

   /*
    * check_record_type: lower-cased in_record_type when it is one of message, memory,
    * guideline, fact, preference, user_profile, agent_profile, thread (SC-2.1).
    * in_argument names the argument in the error message.
    * Errors: -20003.
    */
   FUNCTION check_record_type(
      in_record_type IN VARCHAR2,
      in_argument    IN VARCHAR2 DEFAULT 'record_type'
   ) RETURN VARCHAR2;

   /*
    * check_id: refuses a record / thread / user / agent id that is only white space (the
    * characters Python's str.isspace() calls white space, as oramem.normalize.check_id);
    * NULL passes (whether an id is required is the caller's rule). An id with a visible
    * character is kept verbatim, its leading/trailing spaces included.
    * in_argument names the argument in the error message.
    * Errors: -20001.
    */
   PROCEDURE check_id(
      in_value    IN VARCHAR2,
      in_argument IN VARCHAR2
   );

   /* is_scoped_type: message, memory, guideline, fact, preference (SC-2.2). */
   FUNCTION is_scoped_type(in_record_type IN VARCHAR2) RETURN BOOLEAN;

   /* is_profile_type: user_profile, agent_profile (SC-2.4). */
   FUNCTION is_profile_type(in_record_type IN VARCHAR2) RETURN BOOLEAN;

   /*
    * parse_utc: ISO-8601 text (YYYY-MM-DD"T"HH24:MI:SS[.FF][+HH:MM|Z]; a missing offset
    * means UTC, SC-4.8) -> TIMESTAMP(6) in UTC. NULL -> NULL. in_argument names the field.
    * Errors: -20007.
    */
   FUNCTION parse_utc(
      in_text     IN VARCHAR2,
      in_argument IN VARCHAR2
   ) RETURN TIMESTAMP;

   /* format_utc: TIMESTAMP (UTC) -> 'YYYY-MM-DDTHH24:MI:SS.FF6+00:00'; NULL -> NULL. */
   FUNCTION format_utc(
      in_ts IN TIMESTAMP
   ) RETURN VARCHAR2;

   /* utc_now: SYS_EXTRACT_UTC(SYSTIMESTAMP) as TIMESTAMP(6). */
   FUNCTION utc_now RETURN TIMESTAMP;

   /*
    * record_json_sql: SQL expression text (for dynamic queries) that renders the record
    * row aliased in_alias as the record JSON object documented in plsql/README.md
    * ("Record object"), RETURNING CLOB. in_alias must match ^[a-z][a-z0-9_]{0,29}$.
    * Errors: -20001 bad alias.
    */
   FUNCTION record_json_sql(
      in_alias IN VARCHAR2
   ) RETURN VARCHAR2;

   /*
    * check_language: LOWER(TRIM(in_language)) when it is one of gc_language_english,
    * gc_language_none; in_argument names the setting in the error message.
    * Errors: -20001 (names the accepted values).
    */
   FUNCTION check_language(
      in_language IN VARCHAR2,
      in_argument IN VARCHAR2 DEFAULT 'keyword_language'
   ) RETURN VARCHAR2;

   /*
    * text_available: TRUE when Oracle Text (the CTXSYS schema) is installed
    * (ORACLE_NOTES 4.5). Cached per session.
    */
   FUNCTION text_available RETURN BOOLEAN;

   /*
    * hybrid_available: TRUE when DBMS_HYBRID_VECTOR is visible to the owner (23.6+).
    * Cached per session.
    */
   FUNCTION hybrid_available RETURN BOOLEAN;
END oramem_registry;
/
