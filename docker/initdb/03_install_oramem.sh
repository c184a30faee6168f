#!/bin/bash
# Install oramem into the application schema from the mounted ddl/ and plsql/ (see
# compose.yml), then write the marker the health check waits for. Runs once.
# plsql/install.sql is the single entry point (it runs ddl/ and the packages in order,
# relative to its own directory, with @@; it is started with @ from its directory).
set -euo pipefail
USER_NAME="${ORAMEM_APP_USER:-oramem}"
USER_PASSWORD="${ORAMEM_APP_PASSWORD:-oramem}"
cd /opt/oramem/plsql
# The PDB service may not be registered with the listener yet (after the restart in
# 01_vector_memory.sh): wait up to ~60 s for a login instead of failing with ORA-12514 (F14).
for attempt in $(seq 1 12); do
  if sqlplus -s -L "${USER_NAME}/${USER_PASSWORD}@//localhost:1521/FREEPDB1" >/dev/null <<SQL
WHENEVER SQLERROR EXIT FAILURE
SELECT 1 FROM dual;
EXIT
SQL
  then
    break
  fi
  if [[ "$attempt" == 12 ]]; then
    echo "oramem: cannot log in as ${USER_NAME}@//localhost:1521/FREEPDB1 after 60 s" >&2
    exit 1
  fi
  echo "oramem: FREEPDB1 not reachable through the listener yet; retrying in 5 s"
  sleep 5
done
sqlplus -s -L "${USER_NAME}/${USER_PASSWORD}@//localhost:1521/FREEPDB1" <<SQL
WHENEVER SQLERROR EXIT FAILURE
WHENEVER OSERROR EXIT FAILURE
SET DEFINE OFF
@install.sql
EXIT
SQL
touch /opt/oracle/oradata/oramem_installed
echo "oramem: installed into ${USER_NAME}@FREEPDB1"
