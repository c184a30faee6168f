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
