-- ddl/upgrades/004_to_005.sql - oramem catalog 4 -> 5 (idempotent: re-running is harmless).
--
-- Adds ORAMEM_STORES.EMBEDDER, the identity of the embedder that built a store's vectors
-- (issue 28; oramem.embedders.identity), a JSON object as text with an IS JSON check
-- constraint, the chunk policy under "chunking" (oramem.chunking). NULL = not recorded:
-- a store created before this upgrade, a KEYWORD store, or one only ever opened without an
-- embedder. oramem_admin.open_store records it when it creates a store and adopts the
-- first embedder a recorded-less store is opened with (without "chunking" when the store
-- already holds retrieval rows, so its rows keep one chunking); an open with another
-- embedder is refused (-20108) before anything is written. A nullable column without a
-- default: existing rows get NULL. Runs only on a catalog below version 5 and only adds the
-- column (and the constraint) when USER_TAB_COLUMNS (USER_CONSTRAINTS) lacks it, so a rerun
-- or a half-applied run is harmless. Also adds the index ORAMEM_ERASURE_LOG_SUBJECT
-- (memory_store_id, subject_hash) on the erasure log (when USER_INDEXES lacks it): a knowledge
-- write's commit looks its subjects' receipts up by hash (KC-3.10).
-- Static-checked only; not run against Oracle.
-- Terminators: plain SQL statements end with ";", PL/SQL blocks with "/" (plsql/README.md).

DECLARE
   l_version NUMBER;
   l_count   PLS_INTEGER;
BEGIN
   SELECT MAX(version) INTO l_version FROM oramem_schema_version WHERE component = 'CATALOG';
   IF l_version < 5 THEN
      SELECT COUNT(*) INTO l_count
      FROM   user_tab_columns
      WHERE  table_name = 'ORAMEM_STORES' AND column_name = 'EMBEDDER';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'ALTER TABLE oramem_stores ADD (embedder CLOB)';
      END IF;
      SELECT COUNT(*) INTO l_count
      FROM   user_constraints
      WHERE  table_name = 'ORAMEM_STORES' AND constraint_name = 'ORAMEM_STORES_EMBEDDER_CK';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'ALTER TABLE oramem_stores ADD CONSTRAINT oramem_stores_embedder_ck '
            || 'CHECK (embedder IS JSON)';
      END IF;
      -- the erasure log by subject (KC-3.10: a knowledge write's commit looks up its user's and
      -- agent's receipts by hash, oramem.knowledge.write.erasures; the primary key serves the
      -- store id only, so without it the lookup read every receipt of the store)
      SELECT COUNT(*) INTO l_count FROM user_indexes WHERE index_name = 'ORAMEM_ERASURE_LOG_SUBJECT';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'CREATE INDEX oramem_erasure_log_subject '
            || 'ON oramem_erasure_log (memory_store_id, subject_hash)';
      END IF;
   END IF;
END;
/

MERGE INTO oramem_schema_version v
USING (SELECT 'CATALOG' AS component, 5 AS version, 'ddl/upgrades/004_to_005.sql' AS script FROM dual) s
ON (v.component = s.component)
WHEN MATCHED THEN
   UPDATE SET v.version = s.version, v.script = s.script, v.applied_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
   WHERE v.version < s.version
WHEN NOT MATCHED THEN
   INSERT (component, version, script) VALUES (s.component, s.version, s.script);

COMMIT;
