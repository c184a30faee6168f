-- plsql/install.sql - install (or re-install) oramem into the current schema.
--
--   sqlplus user@//host:1521/FREEPDB1 @plsql/install.sql   (SQL*Plus prompts for the password)
--   oramem db install            (python: runs this file statement by statement)
--
-- Idempotent: the ddl/ scripts create only what is missing, packages are CREATE OR
-- REPLACE. Terminators: plain SQL ends with ';', every PL/SQL unit with a line holding
-- only '/' (plsql/README.md). Prerequisite grants: plsql/README.md "Install".
-- Static-checked only; not run here.

WHENEVER SQLERROR EXIT FAILURE
SET DEFINE OFF

-- Older scripts over a newer schema (left36; oramem db install makes the same check in
-- python before it runs this file, oramem.oracle.admin.check_not_newer): CREATE OR REPLACE
-- would put older packages over newer ones, which refuse every newer store (-20107), and
-- the catalog scripts never lower a version, so nothing else would say so. Stops before
-- anything is run. The two constants are the versions these scripts install
-- (oramem_registry.gc_catalog_version / gc_store_schema_version; a test holds them equal).
-- The catalog tables may not exist yet (a first install), hence user_tables and dynamic SQL.
PROMPT oramem: checking that the installed oramem is not newer than these scripts
DECLARE
   c_catalog CONSTANT PLS_INTEGER := 5;
   c_store   CONSTANT PLS_INTEGER := 4;
   l_tables  PLS_INTEGER;
   l_catalog NUMBER;
   l_newer   PLS_INTEGER := 0;
   l_first   VARCHAR2(16 CHAR);
   l_problem VARCHAR2(1000 CHAR);
BEGIN
   SELECT COUNT(*) INTO l_tables FROM user_tables WHERE table_name = 'ORAMEM_SCHEMA_VERSION';
   IF l_tables = 1 THEN
      EXECUTE IMMEDIATE 'SELECT MAX(version) FROM oramem_schema_version WHERE component = ''CATALOG'''
         INTO l_catalog;
      IF l_catalog > c_catalog THEN
         l_problem := 'its catalog is version ' || l_catalog || ', these scripts'' is ' || c_catalog;
      END IF;
   END IF;
   SELECT COUNT(*) INTO l_tables FROM user_tables WHERE table_name = 'ORAMEM_STORES';
   IF l_tables = 1 THEN
      EXECUTE IMMEDIATE 'SELECT COUNT(*), MIN(memory_store_id) FROM oramem_stores WHERE schema_version > :1'
         INTO l_newer, l_first USING c_store;
      IF l_newer > 0 THEN
         -- bounded: two fixed texts, three numbers of at most 10 digits and one 16-character id
         l_problem := l_problem || CASE WHEN l_problem IS NOT NULL THEN '; ' END
                      || l_newer || ' store(s) have a schema version above these scripts'' ' || c_store
                      || ' (' || l_first || CASE WHEN l_newer > 1 THEN ', ...' END || ')';
      END IF;
   END IF;
   IF l_problem IS NOT NULL THEN
      -- -20000: install-script failure only (not part of the oramem_errors API table)
      RAISE_APPLICATION_ERROR(-20000,
         'oramem install: this schema was installed by a newer oramem: ' || l_problem
         || '. Nothing was run: the older packages would replace the newer ones and refuse those '
         || 'stores. Install the oramem release that installed it, or a newer one '
         || '(pip install -U oramem), then run oramem db upgrade');
   END IF;
END;
/

PROMPT oramem: catalog (ddl/)
@@../ddl/001_catalog.sql
@@../ddl/upgrades/001_to_002.sql
@@../ddl/upgrades/002_to_003.sql
@@../ddl/upgrades/003_to_004.sql
@@../ddl/upgrades/004_to_005.sql

PROMPT oramem: package specs
@@oramem_errors.pks
@@oramem_registry.pks
@@oramem_filter.pks
@@oramem_admin.pks
@@oramem_store.pks
@@oramem_search.pks
@@oramem_kg_jobs.pks

PROMPT oramem: package bodies
@@oramem_errors.pkb
@@oramem_registry.pkb
@@oramem_filter.pkb
@@oramem_admin.pkb
@@oramem_store.pkb
@@oramem_search.pkb
@@oramem_kg_jobs.pkb

PROMPT oramem: checking compilation
DECLARE
   l_count PLS_INTEGER;
BEGIN
   SELECT COUNT(*)
   INTO   l_count
   FROM   user_objects
   WHERE  object_name IN ('ORAMEM_ERRORS', 'ORAMEM_REGISTRY', 'ORAMEM_FILTER',
                          'ORAMEM_ADMIN', 'ORAMEM_STORE', 'ORAMEM_SEARCH',
                          'ORAMEM_KG_JOBS')
   AND    object_type IN ('PACKAGE', 'PACKAGE BODY')
   AND    status <> 'VALID';
   IF l_count > 0 THEN
      -- -20000: install-script failure only (not part of the oramem_errors API table)
      RAISE_APPLICATION_ERROR(-20000,
         'oramem install: ' || l_count || ' package unit(s) are INVALID; see USER_ERRORS');
   END IF;
END;
/

PROMPT oramem: installed
