#!/bin/bash
# Direct grants oramem's definer's-rights package bodies need (roles are disabled inside
# them; ORACLE_NOTES 1.4), as SYS in FREEPDB1. Runs once. The application user (APP_USER,
# default oramem) is created by the image with DB_DEVELOPER_ROLE and QUOTA UNLIMITED ON
# USERS. Keep this list in step with `oramem db doctor` (oramem/oracle/admin.py).
set -euo pipefail
USER_NAME="${ORAMEM_APP_USER:-oramem}"
if [[ ! "$USER_NAME" =~ ^[A-Za-z][A-Za-z0-9_]{0,29}$ ]]; then
  echo "oramem: ORAMEM_APP_USER=$USER_NAME is not a simple user name" >&2
  exit 1
fi
sqlplus -s -L / as sysdba <<SQL
WHENEVER SQLERROR EXIT FAILURE
ALTER SESSION SET CONTAINER = FREEPDB1;
GRANT CREATE JOB TO ${USER_NAME};
GRANT CREATE TABLE, CREATE VIEW, CREATE SEQUENCE, CREATE PROCEDURE, CREATE TYPE TO ${USER_NAME};
GRANT CREATE MINING MODEL TO ${USER_NAME};
GRANT CTXAPP TO ${USER_NAME};
GRANT EXECUTE ON CTXSYS.CTX_DDL TO ${USER_NAME};
GRANT EXECUTE ON SYS.DBMS_LOCK TO ${USER_NAME};
GRANT SELECT ON SYS.V_\$PARAMETER TO ${USER_NAME};
GRANT SELECT ON SYS.V_\$VECTOR_MEMORY_POOL TO ${USER_NAME};
-- HYBRID stores: oramem_admin calls DBMS_VECTOR_CHAIN, oramem_search DBMS_HYBRID_VECTOR from
-- definer's-rights code, so a role (DB_DEVELOPER_ROLE, CTXAPP) is not enough (review F9).
-- The docs do not name the packages' owner: look it up, grant on what exists.
BEGIN
   FOR p IN (SELECT owner, object_name FROM dba_objects
             WHERE object_type = 'PACKAGE' AND object_name IN ('DBMS_VECTOR_CHAIN', 'DBMS_HYBRID_VECTOR')
             AND owner IN ('SYS', 'CTXSYS')) LOOP
      EXECUTE IMMEDIATE 'GRANT EXECUTE ON ' || DBMS_ASSERT.ENQUOTE_NAME(p.owner) || '.'
                        || DBMS_ASSERT.ENQUOTE_NAME(p.object_name) || ' TO ' || DBMS_ASSERT.ENQUOTE_NAME(UPPER('${USER_NAME}'));
   END LOOP;
END;
/
EXIT
SQL
echo "oramem: direct grants given to ${USER_NAME}"
