-- ddl/001_catalog.sql - oramem catalog, version 1 (idempotent: re-running is harmless).
--
-- Creates, when absent:
--   ORAMEM_SCHEMA_VERSION  one row per component: which catalog/DDL version is installed
--   ORAMEM_STORES          the store registry: settings, schema_version, lifecycle state
--   ORAMEM_ERROR_LOG       rows written by oramem_errors.log_error (autonomous)
-- Idempotence comes from CREATE ... IF NOT EXISTS (23ai, oramem's minimum release), so a
-- second run changes nothing. Static-checked only; not run against Oracle.
-- Terminators: plain SQL statements end with ";" (plsql/README.md).

CREATE TABLE IF NOT EXISTS oramem_schema_version (
   component    VARCHAR2(30 CHAR)  NOT NULL,
   version      NUMBER(5)     NOT NULL,
   script       VARCHAR2(200 CHAR),
   applied_at   TIMESTAMP(6)  DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL,
   CONSTRAINT oramem_schema_version_pk PRIMARY KEY (component)
);

CREATE TABLE IF NOT EXISTS oramem_stores (
   memory_store_id    VARCHAR2(16 CHAR)   NOT NULL,
   vector_dim         NUMBER(5),
   search_strategy    VARCHAR2(16 CHAR)   DEFAULT 'vector'    NOT NULL,
   search_index_sync  VARCHAR2(16 CHAR)   DEFAULT 'on_commit' NOT NULL,
   default_ttl_days   NUMBER(10),
   max_ttl_days       NUMBER(10),
   embedding_model    VARCHAR2(128 CHAR),
   deletion_hook      VARCHAR2(400 CHAR),
   schema_version     NUMBER(5)      DEFAULT 0 NOT NULL,
   state              VARCHAR2(16 CHAR)   DEFAULT 'CREATING' NOT NULL,
   state_owner        VARCHAR2(64 CHAR),
   state_since        TIMESTAMP(6)   DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL,
   has_text_index     NUMBER(1)      DEFAULT 0 NOT NULL,
   has_hybrid_index   NUMBER(1)      DEFAULT 0 NOT NULL,
   purge_job_name     VARCHAR2(128 CHAR),
   last_error         VARCHAR2(2000 CHAR),
   created_at         TIMESTAMP(6)   DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL,
   updated_at         TIMESTAMP(6)   DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL,
   CONSTRAINT oramem_stores_pk PRIMARY KEY (memory_store_id),
   CONSTRAINT oramem_stores_id_ck
      CHECK (REGEXP_LIKE(memory_store_id, '^[A-Z][A-Z0-9_]{0,15}$')),
   CONSTRAINT oramem_stores_dim_ck
      CHECK (vector_dim IS NULL OR vector_dim BETWEEN 1 AND 65535),
   CONSTRAINT oramem_stores_strategy_ck
      CHECK (search_strategy IN ('vector', 'keyword', 'hybrid')),
   CONSTRAINT oramem_stores_sync_ck
      CHECK (search_index_sync IN ('on_commit', 'manual', 'auto')),
   CONSTRAINT oramem_stores_ttl_ck
      CHECK ((default_ttl_days IS NULL OR default_ttl_days >= 0)
         AND (max_ttl_days IS NULL OR max_ttl_days >= 0)),
   CONSTRAINT oramem_stores_state_ck
      CHECK (state IN ('CREATING', 'READY', 'UPGRADING', 'DROPPING', 'BROKEN')),
   CONSTRAINT oramem_stores_flags_ck
      CHECK (has_text_index IN (0, 1) AND has_hybrid_index IN (0, 1))
);

CREATE TABLE IF NOT EXISTS oramem_error_log (
   log_id          NUMBER GENERATED ALWAYS AS IDENTITY,
   logged_at       TIMESTAMP(6)   DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL,
   memory_store_id VARCHAR2(16 CHAR),
   where_at        VARCHAR2(200 CHAR),
   error_code      NUMBER,
   error_message   VARCHAR2(4000 CHAR),
   backtrace       VARCHAR2(4000 CHAR),
   session_id      VARCHAR2(64 CHAR),
   CONSTRAINT oramem_error_log_pk PRIMARY KEY (log_id)
);

CREATE INDEX IF NOT EXISTS oramem_error_log_at_ix ON oramem_error_log (logged_at);

MERGE INTO oramem_schema_version v
USING (SELECT 'CATALOG' AS component, 1 AS version, 'ddl/001_catalog.sql' AS script FROM dual) s
ON (v.component = s.component)
WHEN MATCHED THEN
   UPDATE SET v.version = s.version, v.script = s.script, v.applied_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
   WHERE v.version < s.version
WHEN NOT MATCHED THEN
   INSERT (component, version, script) VALUES (s.component, s.version, s.script);

COMMIT;
