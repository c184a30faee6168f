#!/bin/bash
# Install oramem into the application schema from the mounted ddl/ and plsql/ (see
# compose.yml), then write the marker the health check waits for. Runs once.
# plsql/install.sql is the single entry point (it runs ddl/ and the packages in order,
# relative to its own directory, with @@; it is started with @ from its directory).
set -euo pipefail
USER_NAME="${ORAMEM_APP_USER:-oramem}"
USER_PASSWORD="${ORAMEM_APP_PASSWORD:-oramem}"
cd /opt/oramem/plsql
sqlplus -s -L "${USER_NAME}/${USER_PASSWORD}@//localhost:1521/FREEPDB1" <<SQL
WHENEVER SQLERROR EXIT FAILURE
WHENEVER OSERROR EXIT FAILURE
SET DEFINE OFF
@install.sql
EXIT
SQL
touch /opt/oracle/oradata/oramem_installed
echo "oramem: installed into ${USER_NAME}@FREEPDB1"
