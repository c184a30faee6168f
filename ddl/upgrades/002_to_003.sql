-- ddl/upgrades/002_to_003.sql - oramem catalog 2 -> 3 (idempotent: re-running is harmless).
--
-- Adds ORAMEM_STORE_OPTIONS: per-store options (oramem.options; SC-15.1), one row per
-- (store, name), the value a JSON text (CLOB with an IS JSON check constraint). The
-- write-time firewall keeps its policy here ("firewall"). Rows go with their store: the
-- foreign key cascades the registry row's delete (oramem_admin.drop_store, a RECREATE).
-- Runs only on a catalog below version 3 and creates the table only when USER_TABLES lacks
-- it, so a rerun or a half-applied run is harmless.
-- Static-checked only; not run against Oracle.
-- Terminators: plain SQL statements end with ";", PL/SQL blocks with "/" (plsql/README.md).

DECLARE
   l_version NUMBER;
   l_count   PLS_INTEGER;
BEGIN
   SELECT MAX(version) INTO l_version FROM oramem_schema_version WHERE component = 'CATALOG';
   IF l_version < 3 THEN
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = 'ORAMEM_STORE_OPTIONS';
      IF l_count = 0 THEN
         EXECUTE IMMEDIATE 'CREATE TABLE oramem_store_options ('
            || 'memory_store_id VARCHAR2(16 CHAR) NOT NULL, '
            || 'name VARCHAR2(64 CHAR) NOT NULL, '
            || 'value CLOB NOT NULL, '
            || 'updated_at TIMESTAMP(6) DEFAULT SYS_EXTRACT_UTC(SYSTIMESTAMP) NOT NULL, '
            || 'CONSTRAINT oramem_store_options_pk PRIMARY KEY (memory_store_id, name), '
            || 'CONSTRAINT oramem_store_options_fk FOREIGN KEY (memory_store_id) '
            || 'REFERENCES oramem_stores (memory_store_id) ON DELETE CASCADE, '
            || 'CONSTRAINT oramem_store_options_name_ck CHECK (REGEXP_LIKE(name, ''^[a-z][a-z0-9_.]{0,63}$'', ''c'')), '
            || 'CONSTRAINT oramem_store_options_json_ck CHECK (value IS JSON))';
      END IF;
   END IF;
END;
/

MERGE INTO oramem_schema_version v
USING (SELECT 'CATALOG' AS component, 3 AS version, 'ddl/upgrades/002_to_003.sql' AS script FROM dual) s
ON (v.component = s.component)
WHEN MATCHED THEN
   UPDATE SET v.version = s.version, v.script = s.script, v.applied_at = SYS_EXTRACT_UTC(SYSTIMESTAMP)
   WHERE v.version < s.version
WHEN NOT MATCHED THEN
   INSERT (component, version, script) VALUES (s.component, s.version, s.script);

COMMIT;
