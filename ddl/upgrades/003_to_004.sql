-- ddl/upgrades/003_to_004.sql - oramem catalog 3 -> 4 (idempotent: re-running is harmless).
--
-- Adds ORAMEM_ERASURE_LOG: the erasure log of verifiable erasure (SC-14.3), one row per
-- forget receipt: store id, receipt id, time, the salted hash of the erased subject and the
-- receipt (JSON, salted hashes only: no id, no text). No foreign key to ORAMEM_STORES on
-- purpose: the log outlives a dropped store, so a store re-created under the same id still
-- refuses the erased subjects (SC-14.4). oramem_admin.log_erasure writes it in the
-- erasure's own transaction.
-- Runs only on a catalog below version 4 and creates the table only when USER_TABLES lacks
-- it, so a rerun or a half-applied run is harmless.
-- Static-checked only; not run against Oracle.
-- Terminators: plain SQL statements end with ";", PL/SQL blocks with "/" (plsql/README.md).

DECLARE
   l_version NUMBER;
   l_count   PLS_INTEGER;
BEGIN
   SELECT MAX(version) INTO l_version FROM oramem_schema_version WHERE component = 'CATALOG';
   IF l_version < 4 THEN
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = 'ORAMEM_ERASURE_LOG';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'CREATE TABLE oramem_erasure_log ('
            || 'memory_store_id VARCHAR2(16 CHAR) NOT NULL, '
            || 'receipt_id VARCHAR2(64 CHAR) NOT NULL, '
            || 'erased_at VARCHAR2(64 CHAR) NOT NULL, '
            || 'subject_hash VARCHAR2(64 CHAR) NOT NULL, '
            || 'receipt CLOB NOT NULL, '
            || 'CONSTRAINT oramem_erasure_log_pk PRIMARY KEY (memory_store_id, receipt_id), '
            || 'CONSTRAINT oramem_erasure_log_json_ck CHECK (receipt IS JSON))';
      END IF;
   END IF;
END;
/

MERGE INTO oramem_schema_version v
USING (SELECT 'CATALOG' AS component, 4 AS version, 'ddl/upgrades/003_to_004.sql' AS script FROM dual) s
ON (v.component = s.component)
WHEN MATCHED THEN
   UPDATE SET v.version = s.version, v.script = s.script, v.applied_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
   WHERE v.version < s.version
WHEN NOT MATCHED THEN
   INSERT (component, version, script) VALUES (s.component, s.version, s.script);

COMMIT;
