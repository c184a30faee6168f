-- ddl/upgrades/001_to_002.sql - oramem catalog 1 -> 2 (idempotent: re-running is harmless).
--
-- Adds ORAMEM_STORES.KEYWORD_LANGUAGE, the persisted keyword language of a store
-- ('english' | 'none'; issue 11 item 5): it fixes the Oracle Text lexer, wordlist and
-- stoplist of the store's text index and the query words (oramem_search.keyword_query).
-- NULL = not recorded yet: a store created before per-store schema version 3; the per-store
-- upgrade 2 -> 3 (oramem_admin.build_store, `oramem db upgrade`) records it and rebuilds the
-- text index. Runs only on a catalog at version 1 (a fresh install runs 001_catalog.sql,
-- then this), and only adds the column when USER_TAB_COLUMNS lacks it, so a rerun or a
-- half-applied run is harmless (the constraint likewise, checked in USER_CONSTRAINTS).
-- Static-checked only; not run against Oracle.
-- Terminators: plain SQL statements end with ";", PL/SQL blocks with "/" (plsql/README.md).

DECLARE
   l_version NUMBER;
   l_count   PLS_INTEGER;
BEGIN
   SELECT MAX(version) INTO l_version FROM oramem_schema_version WHERE component = 'CATALOG';
   IF l_version = 1 THEN
      SELECT COUNT(*) INTO l_count
      FROM   user_tab_columns
      WHERE  table_name = 'ORAMEM_STORES' AND column_name = 'KEYWORD_LANGUAGE';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'ALTER TABLE oramem_stores ADD (keyword_language VARCHAR2(16 CHAR))';
      END IF;
      SELECT COUNT(*) INTO l_count
      FROM   user_constraints
      WHERE  table_name = 'ORAMEM_STORES' AND constraint_name = 'ORAMEM_STORES_LANGUAGE_CK';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'ALTER TABLE oramem_stores ADD CONSTRAINT oramem_stores_language_ck '
            || 'CHECK (keyword_language IS NULL OR keyword_language IN (''english'', ''none''))';
      END IF;
   END IF;
END;
/

MERGE INTO oramem_schema_version v
USING (SELECT 'CATALOG' AS component, 2 AS version, 'ddl/upgrades/001_to_002.sql' AS script FROM dual) s
ON (v.component = s.component)
WHEN MATCHED THEN
   UPDATE SET v.version = s.version, v.script = s.script, v.applied_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
   WHERE v.version < s.version
WHEN NOT MATCHED THEN
   INSERT (component, version, script) VALUES (s.component, s.version, s.script);

COMMIT;
