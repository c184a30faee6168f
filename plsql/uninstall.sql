-- plsql/uninstall.sql - remove oramem from the current schema, INCLUDING EVERY STORE AND
-- ITS DATA (purge jobs, indexes, vectorizer preferences, tables, the knowledge layer's
-- <ID>_KG_* tables and jobs, registry).
--
--   sqlplus user@//host:1521/FREEPDB1 @plsql/uninstall.sql   (SQL*Plus prompts for the password)
--   oramem db uninstall --purge --yes     (python)
--
-- Idempotent: every step checks the dictionary first, so a partial uninstall can be
-- re-run. Terminators as in install.sql. Static-checked only; not run here.

WHENEVER SQLERROR EXIT FAILURE
SET DEFINE OFF

PROMPT oramem: dropping every store
DECLARE
   -- VARCHAR2(128 CHAR), not the column type: survives a future wider store id (ORACLE_NOTES 12.2 #6)
   TYPE id_tab_t IS TABLE OF VARCHAR2(128 CHAR) INDEX BY PLS_INTEGER;
   l_ids    id_tab_t;
   l_tables PLS_INTEGER;
   l_pkgs   PLS_INTEGER;
   l_stores PLS_INTEGER := 0;
BEGIN
   SELECT COUNT(*) INTO l_tables FROM user_tables WHERE table_name = 'ORAMEM_STORES';
   SELECT COUNT(*) INTO l_pkgs
   FROM   user_objects
   WHERE  object_name = 'ORAMEM_ADMIN' AND object_type = 'PACKAGE BODY' AND status = 'VALID';
   IF l_tables = 1 AND l_pkgs = 1 THEN
      -- dynamic: this block must compile when oramem is (partly) gone already
      EXECUTE IMMEDIATE 'SELECT memory_store_id FROM oramem_stores ORDER BY memory_store_id'
         BULK COLLECT INTO l_ids;
      FOR i IN 1 .. l_ids.COUNT LOOP
         EXECUTE IMMEDIATE 'BEGIN oramem_admin.drop_store(in_store_id => :1, in_if_exists => 1); END;'
            USING l_ids(i);
      END LOOP;
   ELSIF l_tables = 1 THEN
      -- S9: stores are registered but oramem_admin cannot drop them (typically after a
      -- failed install). Stop before the registry is dropped: going on would orphan every
      -- OM_<ID>_* table, index and preference and leave purge jobs failing every hour.
      EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM oramem_stores' INTO l_stores;
      IF l_stores > 0 THEN
         RAISE_APPLICATION_ERROR(-20105,
            'uninstall: ' || l_stores || ' store(s) are registered but package ORAMEM_ADMIN is '
            || 'missing or invalid, so they cannot be dropped; run plsql/install.sql (or '
            || 'oramem db install) to repair the packages, then run the uninstall again. '
            || 'Nothing was dropped.');
      END IF;
   END IF;
END;
/

PROMPT oramem: dropping the scheduler jobs (knowledge jobs, and any purge job left without its store)
DECLARE
   e_job_missing EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_job_missing, -27475);
BEGIN
   FOR j IN (SELECT job_name FROM user_scheduler_jobs
             WHERE job_name LIKE 'ORAMEM\_KG\_%' ESCAPE '\'
                OR job_name LIKE 'ORAMEM\_PURGE\_%' ESCAPE '\'
             ORDER BY job_name) LOOP
      BEGIN
         DBMS_SCHEDULER.DROP_JOB(job_name => j.job_name, force => TRUE);
      EXCEPTION
         WHEN e_job_missing THEN
            NULL;   -- dropped concurrently
      END;
   END LOOP;
END;
/

PROMPT oramem: dropping packages
DECLARE
   TYPE name_tab_t IS TABLE OF VARCHAR2(128 CHAR) INDEX BY PLS_INTEGER;
   l_names name_tab_t;
   l_count PLS_INTEGER;
BEGIN
   l_names(1) := 'ORAMEM_KG_JOBS';
   l_names(2) := 'ORAMEM_SEARCH';
   l_names(3) := 'ORAMEM_STORE';
   l_names(4) := 'ORAMEM_ADMIN';
   l_names(5) := 'ORAMEM_FILTER';
   l_names(6) := 'ORAMEM_REGISTRY';
   l_names(7) := 'ORAMEM_ERRORS';
   FOR i IN 1 .. l_names.COUNT LOOP
      SELECT COUNT(*) INTO l_count
      FROM   user_objects
      WHERE  object_name = l_names(i) AND object_type = 'PACKAGE';
      IF l_count > 0 THEN
         EXECUTE IMMEDIATE 'DROP PACKAGE ' || DBMS_ASSERT.ENQUOTE_NAME(l_names(i), TRUE);
      END IF;
   END LOOP;
END;
/

PROMPT oramem: dropping catalog tables
DECLARE
   TYPE name_tab_t IS TABLE OF VARCHAR2(128 CHAR) INDEX BY PLS_INTEGER;
   l_names name_tab_t;
   l_count PLS_INTEGER;
BEGIN
   l_names(1) := 'ORAMEM_ERROR_LOG';
   l_names(2) := 'ORAMEM_STORE_OPTIONS';  -- references ORAMEM_STORES: dropped first
   l_names(3) := 'ORAMEM_ERASURE_LOG';
   l_names(4) := 'ORAMEM_STORES';
   l_names(5) := 'ORAMEM_SCHEMA_VERSION';
   FOR i IN 1 .. l_names.COUNT LOOP
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = l_names(i);
      IF l_count > 0 THEN
         EXECUTE IMMEDIATE 'DROP TABLE ' || DBMS_ASSERT.ENQUOTE_NAME(l_names(i), TRUE) || ' PURGE';
      END IF;
   END LOOP;
END;
/

PROMPT oramem: uninstalled
