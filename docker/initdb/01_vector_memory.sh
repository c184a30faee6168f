#!/bin/bash
# Vector pool for HNSW indexes (ORACLE_NOTES 1.5): VECTOR_MEMORY_SIZE defaults to 0 and
# HNSW creation fails without a pool. Runs once, as the oracle OS user, on first start.
# VECTOR_MEMORY_SIZE is modifiable with ALTER SYSTEM at CDB level; when the SGA has no
# room for SCOPE=BOTH, set it in the SPFILE and restart the instance once. [verify] on
# the pinned image which branch is taken (the log line below says).
set -euo pipefail
SIZE="${ORAMEM_VECTOR_MEMORY:-512M}"
if [[ ! "$SIZE" =~ ^[0-9]+[KMG]?$ ]]; then
  echo "oramem: ORAMEM_VECTOR_MEMORY=$SIZE is not a size like 512M" >&2
  exit 1
fi
if sqlplus -s -L / as sysdba <<SQL
WHENEVER SQLERROR EXIT FAILURE
ALTER SYSTEM SET vector_memory_size = ${SIZE} SCOPE = BOTH;
EXIT
SQL
then
  echo "oramem: vector_memory_size = ${SIZE} (SCOPE=BOTH)"
else
  echo "oramem: SCOPE=BOTH refused; setting vector_memory_size in the SPFILE and restarting"
  sqlplus -s -L / as sysdba <<SQL
WHENEVER SQLERROR EXIT FAILURE
ALTER SYSTEM SET vector_memory_size = ${SIZE} SCOPE = SPFILE;
SHUTDOWN IMMEDIATE
STARTUP
ALTER PLUGGABLE DATABASE ALL OPEN;
-- register the services with the listener now, not at the next LREG cycle: 03 connects
-- through the listener right after this (review F14)
ALTER SYSTEM REGISTER;
EXIT
SQL
fi
