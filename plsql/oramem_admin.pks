CREATE OR REPLACE PACKAGE oramem_admin
AUTHID DEFINER
AS
   /*
    * oramem_admin: store lifecycle - open (schema policies), create, describe, list,
    * upgrade, drop - and per-store configuration (deletion hook, search-index sync).
    *
    * Serialisation: every subprogram that changes a store takes an exclusive DBMS_LOCK
    * user lock named after the store (ORACLE_NOTES 9.3; release_on_commit => FALSE) so
    * concurrent opens with CREATE_IF_NECESSARY both succeed on one consistent store
    * (SC-10.3). The lock is released before returning, also on error.
    *
    * Commit behaviour: DDL, CTX_DDL, DBMS_VECTOR_CHAIN and DBMS_SCHEDULER calls and the
    * registry state changes run in AUTONOMOUS transactions. They commit their own work
    * at each step (the store's lifecycle state is committed before each DDL step so a
    * crash leaves CREATING/UPGRADING/DROPPING/BROKEN, never a silent half store), but they
    * never commit or roll back the CALLER's transaction. Consequence: if the caller holds
    * uncommitted changes on a store's tables, RECREATE/drop of that store waits on them
    * and fails with ORA-00054/ORA-00060 - commit first.
    *
    * Settings JSON (input of open_store / create_store; keys map 1:1 onto
    * oramem.requests.StoreSettings; a key that is ABSENT means "accept whatever is
    * persisted", a key present with null is a value to compare):
    *   {"memory_store_id": "MYSTORE",            -- null/absent = default store
    *    "vector_dim": 384,                         -- int 1..65535 or null (keyword-only store)
    *    "search_strategy": "vector",               -- vector | keyword | hybrid
    *    "search_index_sync": "on_commit",          -- on_commit | manual | auto (auto: hybrid only)
    *    "retention": {"default_ttl_days": 30, "max_ttl_days": 365},   -- ints >= 0 or null
    *    "embedding_model": "ORAMEM_EMBED",         -- in-DB ONNX model; required for hybrid
    *    "deletion_hook": "APP.ON_ORAMEM_DELETE",   -- optional; applied when the store is
    *                                               -- created (later: set_deletion_hook)
    *    "keyword_language": "english",             -- english | none | null (= adopt; a new
    *                                               -- store: english). Fixed at creation: it
    *                                               -- shapes the text index and the queries
    *    "embedder": {"kind": "onnx", ...}}         -- the identity of the caller's embedder
    *                                               -- (oramem.embedders.identity, issue 28), an
    *                                               -- object with a "kind" string, or null/absent
    *                                               -- (= not compared, not recorded)
    *
    * Settings-in-force JSON (result of open_store, create_store, describe_store,
    * upgrade_store; one element of list_stores):
    *   {"memory_store_id": "MYSTORE", "vector_dim": 384, "search_strategy": "hybrid",
    *    "search_index_sync": "on_commit",
    *    "retention": {"default_ttl_days": null, "max_ttl_days": null},
    *    "embedding_model": null, "deletion_hook": null,
    *    "keyword_language": "english",    -- null only for a store of schema version < 3
    *    "embedder": {...} | null,         -- the recorded embedder identity, its chunk policy
    *                                      -- under "chunking" (null: none recorded)
    *    "supported_strategies": ["vector", "keyword", "hybrid"],
    *    "keyword_passages": true | false, -- the keyword leg ranks keyword passages
    *                                      -- (OM_<ID>_KWP, issue 23): a HYBRID store whose
    *                                      -- recorded chunk policy counts tokens
    *    "schema_version": 1, "code_schema_version": 1, "state": "READY",
    *    "purge_job": "ORAMEM_PURGE_MYSTORE" | null,
    *    "created": true | false,          -- this call created (or recreated) the store
    *    "upgraded": true | false,         -- this call applied upgrades / capability adds
    *    "warnings": ["..."],              -- e.g. purge job not created (no CREATE JOB)
    *    "last_error": null | "...", "created_at": "...+00:00", "updated_at": "...+00:00"}
    */

   gc_policy_require_existing    CONSTANT VARCHAR2(32 CHAR) := 'REQUIRE_EXISTING';
   gc_policy_create_if_empty     CONSTANT VARCHAR2(32 CHAR) := 'CREATE_IF_EMPTY';
   gc_policy_create_if_necessary CONSTANT VARCHAR2(32 CHAR) := 'CREATE_IF_NECESSARY';
   gc_policy_recreate            CONSTANT VARCHAR2(32 CHAR) := 'RECREATE';

   -- Default seconds to wait for a store's DBMS_LOCK. A store found in CREATING /
   -- UPGRADING / DROPPING while WE hold its lock was left by a crashed or failed session;
   -- CREATE_IF_NECESSARY resumes it (every build step is idempotent).
   gc_default_lock_timeout       CONSTANT PLS_INTEGER := 60;

   -- Repeat interval of the per-store TTL purge job (DBMS_SCHEDULER calendar string).
   gc_purge_interval             CONSTANT VARCHAR2(64 CHAR) := 'FREQ=HOURLY;INTERVAL=1';

   /*
    * open_store: apply schema policy in_policy (REQUIRE_EXISTING | CREATE_IF_EMPTY |
    * CREATE_IF_NECESSARY | RECREATE, case-insensitive; SC-10.2) to the store described
    * by in_settings (settings JSON above) and return the settings in force as JSON.
    *  - REQUIRE_EXISTING: store must exist, be READY, current and complete; changes nothing.
    *  - CREATE_IF_EMPTY: creates when neither a registry row nor any store object
    *    exists; otherwise behaves as REQUIRE_EXISTING.
    *  - CREATE_IF_NECESSARY: creates the store or its missing objects, repairs a BROKEN
    *    or crashed store, applies upgrades and capability upgrades (vector -> keyword ->
    *    hybrid; adding vector_dim to a store that had none).
    *  - RECREATE: drops every object and all data of the store, then creates it.
    * Embedder identity (issue 28): a vector store records the "embedder" it is created
    *  with; a store without one (made before catalog version 5, or only opened without an
    *  embedder) adopts the first one it is opened with - without its "chunking" when the
    *  store already holds retrieval rows, which keep the legacy chunking. An open with
    *  another embedder (oramem.embedders.identity.same_identity: "chunking" and, for ONNX,
    *  "model"/"path" do not decide it) is a -20108 before anything is written.
    * The lock wait is in_lock_timeout seconds. A READY store at the code's schema
    * version, complete and with nothing to change, is opened without taking the lock
    * (no DBMS_LOCK call: concurrent opens do not serialise).
    * Errors: -20001 bad policy/setting value; -20002 bad JSON, or a setting (or retention
    *  member) open_store does not read (names it); -20010 bad store id;
    *  -20101 not found (names CREATE_IF_NECESSARY); -20103 settings mismatch (names the
    *  setting, the persisted and the requested value; keyword_language included, under every
    *  policy but RECREATE, before anything is written); -20108 another embedder than the
    *  recorded one (under every policy but RECREATE, before anything is written); -20104 outdated; -20105 incomplete/orphaned
    *  objects; -20106 store DROPPING or BROKEN under REQUIRE_EXISTING; -20107 too new;
    *  -20201 lock timeout; -20301 Oracle Text / hybrid / model missing; -20302 grant
    *  missing (EXECUTE ON DBMS_LOCK, CREATE TABLE...). Any ORA- error from DDL is logged,
    *  the store is marked BROKEN with last_error, and the error re-raised.
    * Commit: autonomous (see package header); issues DDL only when it creates/upgrades.
    */
   FUNCTION open_store(
      in_settings      IN CLOB,
      in_policy        IN VARCHAR2    DEFAULT 'REQUIRE_EXISTING',
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB;

   /*
    * create_store: create a new store with in_settings (missing keys take defaults:
    * vector_dim null, strategy vector, sync on_commit, no retention) and return the
    * settings in force. Also creates the purge job (warns in "warnings" and continues
    * when CREATE JOB is missing, SC-5.5). A vector or hybrid store records "embedder".
    * Errors: -20102 store exists; otherwise as open_store.
    * Commit: autonomous DDL (see package header).
    */
   FUNCTION create_store(
      in_settings      IN CLOB,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB;

   /*
    * describe_store: settings-in-force JSON of one store in ANY lifecycle state
    * ("created"/"upgraded" false, "warnings" empty). Read-only.
    * Errors: -20010 bad id; -20101 not found.
    * Commit: never.
    */
   FUNCTION describe_store(
      in_store_id IN VARCHAR2
   ) RETURN CLOB;

   /*
    * list_stores: JSON array of describe_store objects for every registered store,
    * ordered by memory_store_id; never fails because one store is not READY. Read-only.
    * Commit: never.
    */
   FUNCTION list_stores RETURN CLOB;

   /*
    * drop_store: drop the purge job, indexes, vectorizer preference, tables, the
    * knowledge layer's <ID>_KG_* tables and ORAMEM_KG_<ID> job, and the registry row of
    * a store (state DROPPING is committed first, so a crash can be resumed by calling
    * drop_store again). An id with only <ID>_KG_* tables left is dropped too.
    * in_if_exists = 1: an unknown store is a no-op.
    * Errors: -20010; -20101 (only when in_if_exists = 0); -20201 lock timeout.
    * Commit: autonomous DDL (see package header).
    */
   PROCEDURE drop_store(
      in_store_id      IN VARCHAR2,
      in_if_exists     IN PLS_INTEGER DEFAULT 0,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   );

   /*
    * upgrade_store: run the per-store upgrade steps from the store's schema_version up
    * to oramem_registry.gc_store_schema_version (ddl/README.md, "Upgrades") and return
    * the settings in force. A current store is left unchanged ("upgraded": false).
    * Errors: -20101; -20107 store newer than code; -20201; DDL errors (store -> BROKEN).
    * Commit: autonomous DDL (see package header).
    */
   FUNCTION upgrade_store(
      in_store_id      IN VARCHAR2,
      in_lock_timeout  IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB;

   /*
    * set_deletion_hook: register (or clear, with NULL) the PL/SQL procedure that
    * oramem_store calls inside every delete / cascade / purge transaction (SC-8.5).
    * The name is [schema.]procedure or [schema.]package.procedure, each part
    * ^[A-Za-z][A-Za-z0-9_$#]{0,127}$, checked with DBMS_ASSERT.QUALIFIED_SQL_NAME; the
    * procedure must exist and take one IN CLOB parameter (the DeletionEvent JSON, see
    * plsql/README.md). It must not commit.
    * Errors: -20010; -20101; -20011 invalid name.
    * Commit: autonomous (commits the registry change only).
    */
   PROCEDURE set_deletion_hook(
      in_store_id       IN VARCHAR2,
      in_procedure_name IN VARCHAR2
   );

   /*
    * get_options_json: the store's options (ORAMEM_STORE_OPTIONS; oramem.options, SC-15.1)
    * as one JSON object {name: value, ...}, '{}' when it has none.
    * Errors: -20010 bad id; -20101 not found.
    * Commit: never.
    */
   FUNCTION get_options_json(
      in_store_id IN VARCHAR2
   ) RETURN CLOB;

   /*
    * set_option: set option in_name (^[a-z][a-z0-9_.]{0,63}$) of a store to the JSON text
    * in_value, or remove it when in_value is NULL.
    * Errors: -20010 bad id; -20101 not found; -20001 bad name; -20002 value not JSON.
    * Commit: never (the caller commits).
    */
   PROCEDURE set_option(
      in_store_id IN VARCHAR2,
      in_name     IN VARCHAR2,
      in_value    IN CLOB
   );

   /*
    * capabilities: JSON describing what this database offers oramem:
    *   {"oracle_text": bool, "hybrid_vector": bool, "dbms_lock": bool, "create_job": bool,
    *    "db_version": "23.x...", "code_schema_version": 1, "catalog_version": 1}
    * Read-only. Commit: never.
    */
   FUNCTION capabilities RETURN CLOB;
   /*
    * log_erasure: insert, or replace by receipt id, one receipt of the store's erasure log
    * (ORAMEM_ERASURE_LOG; SC-14.3). in_receipt is the receipt as a JSON object (salted
    * hashes only: no id, no text) with string members receipt_id, erased_at, subject_hash.
    * The row is not tied to the registry row: it outlives a dropped store.
    * Errors: -20010 bad id; -20002 not a JSON object or a member missing.
    * Commit: never (forget writes it in the erasure's own transaction).
    */
   PROCEDURE log_erasure(
      in_store_id IN VARCHAR2,
      in_receipt  IN CLOB
   );

   /*
    * get_erasure_log_json: the store's receipts as a JSON array, oldest first ('[]' when
    * none). Read-only. Errors: -20010 bad id. Commit: never.
    */
   FUNCTION get_erasure_log_json(
      in_store_id IN VARCHAR2
   ) RETURN CLOB;

   /*
    * erasure_scan_json: the verification scan of SC-14.2 on Oracle. in_tokens is a JSON
    * array of lower-case tokens. Each is looked for in the store's record table (content,
    * metadata), its chunk table (chunk_text) and the token table ($I) of its Oracle Text or
    * hybrid index when that table exists. Returns {"scanned": [where...], "found": {token:
    * [where...]}, "shared": [token...]}: a token a live row contains is shared; one found
    * only in an index token table is residue (a deleted document's tokens stay in $I until
    * the index is optimized).
    * Errors: -20010 bad id; -20101 not found; -20002 in_tokens not a JSON array of strings.
    * Commit: never.
    */
   FUNCTION erasure_scan_json(
      in_store_id IN VARCHAR2,
      in_tokens   IN CLOB
   ) RETURN CLOB;

   /*
    * Re-embedding (oramem reembed; docs/oracle-models.md, "Re-embedding an Oracle store").
    * The Python driver embeds (a client-side embedder); these subprograms read, save and
    * swap. New vectors go to a shadow column EMBEDDING_NEW VECTOR(dim, FLOAT32) of
    * OM_<ID>_CHK, so a retrieval row deleted meanwhile (a forget) takes its new vector with
    * it, and the store answers with EMBEDDING until the swap. The pending target identity
    * is the store option "reembed.target" (ORAMEM_STORE_OPTIONS), dropped with the store.
    * Static-checked, not run against Oracle.
    *
    * reembed_begin_json: start or resume moving the store to the embedder whose identity is
    * in_target (a JSON object with a "kind" string) and dimension in_vector_dim (1..65535).
    * Records the target (autonomous commit) and adds EMBEDDING_NEW (DDL). A pending
    * reembed to another embedder is left alone and reported ("started": false) unless
    * in_restart = 1, which sets the shadow column's vectors aside (SET UNUSED) and starts
    * over; a dimension swap in progress (state UPGRADING) cannot be restarted. A HYBRID
    * store (its hybrid index embeds with the in-database model) takes only the embedder it
    * records (a re-embed / re-chunk in the same vector space), else -20001. A READY store
    * whose knowledge tables (<ID>_KG_*, KnowledgeMemory) hold a vector is refused with
    * -20001 before anything is written: this reembed moves the retrieval rows only (rek43).
    * Returns {"started": bool, "pending": identity|null, "previous": identity|null,
    *  "resumed": n, "total": n, "vector_dim": d (the store's), "search_strategy": s,
    *  "embedding_model": m|null, "swapping": bool (a dimension swap to finish)}.
    * Errors: -20010; -20101; -20001 keyword store, bad target/dimension/restart;
    *  -20106 store not READY; -20201 lock timeout.
    * Commit: autonomous (the option, the DDL); never the caller's transaction.
    */
   FUNCTION reembed_begin_json(
      in_store_id   IN VARCHAR2,
      in_target     IN CLOB,
      in_vector_dim IN PLS_INTEGER,
      in_restart    IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB;

   /*
    * reembed_rows_json: up to in_limit (1..10000) retrieval rows still without a new
    * vector, in key order after in_after (a JSON array [record_type, record_id, chunk_no],
    * or NULL from the start), as [[record_type, record_id, chunk_no, text], ...].
    * Errors: -20010; -20101; -20001 bad limit; -20002 bad in_after. Commit: never.
    */
   FUNCTION reembed_rows_json(
      in_store_id IN VARCHAR2,
      in_after    IN CLOB,
      in_limit    IN PLS_INTEGER
   ) RETURN CLOB;

   /*
    * reembed_save_json: save new vectors, in_rows = [[record_type, record_id, chunk_no,
    * text, [numbers]], ...], into EMBEDDING_NEW of the rows that still exist with exactly
    * that text (a row deleted or rewritten since it was read is not written); returns the
    * number saved. Call it after oramem_store.lock_retrieval_rows, in the caller's
    * transaction.
    * Errors: -20201 the pending target is no longer in_target (another run took over, or
    *  the store was dropped); -20002 bad rows; -20006 a vector of another dimension.
    * Commit: never (the caller commits each batch).
    */
   FUNCTION reembed_save_json(
      in_store_id IN VARCHAR2,
      in_target   IN CLOB,
      in_rows     IN CLOB
   ) RETURN PLS_INTEGER;

   /*
    * reembed_swap_json: in the caller's transaction, after oramem_store.lock_retrieval_rows and after every row
    * has its new vector: same dimension - EMBEDDING := EMBEDDING_NEW for every row, the new
    * identity recorded, the target cleared, all in the caller's commit (the store answers
    * with the old vectors until then); another dimension - the store's state becomes
    * UPGRADING (data calls are refused, -20106, until reembed_finish_json ends).
    * Returns {"total": n, "ddl": bool (reembed_finish_json has DDL to run)}.
    * Errors: -20201 as reembed_save_json; -20001 rows still without a new vector, or
    *  knowledge tables that hold a vector (one written since the begin; rek43).
    * Commit: never.
    */
   FUNCTION reembed_swap_json(
      in_store_id IN VARCHAR2,
      in_target   IN CLOB
   ) RETURN CLOB;

   /*
    * reembed_finish_json: after the swap's commit. Another dimension (state UPGRADING with
    * in_target pending): drop the HNSW index, SET UNUSED the old EMBEDDING column, rename
    * EMBEDDING_NEW to EMBEDDING, create the HNSW index, then record vector_dim, the new
    * identity and READY and clear the target (each step idempotent: a rerun after a crash
    * finishes). Same dimension: SET UNUSED the shadow column. Returns the settings in force
    * (describe_store): a caller checks that "embedder" and "vector_dim" are its target's (a
    * repairing open_store of another session may have made the store READY again between
    * the swap's commit and this call; then run the swap again). Errors: -20010; -20101; -20201 lock timeout or another target;
    * DDL errors (logged, the store stays UPGRADING: rerun). Commit: autonomous DDL.
    */
   FUNCTION reembed_finish_json(
      in_store_id     IN VARCHAR2,
      in_target       IN CLOB,
      in_lock_timeout IN PLS_INTEGER DEFAULT 60
   ) RETURN CLOB;

   /*
    * check_embedder (ora44; red40 on SQLite): the caller's vectors were made by the embedder
    * in_identity (an oramem embedder identity, JSON object text: the one its store object was
    * opened with). When the store records another one (same_embedder's rule, as open_store's
    * -20108) - another session moved it with reembed after that open - vectors of the two are
    * not comparable, so the call is refused before it reads or writes anything; in_what says
    * what did not happen ("nothing was written"). A store that records none: nothing to
    * compare. Called by oramem_store.add_json / update_json and oramem_search.search_json when
    * the request carries "embedder". Cost: one primary-key SELECT of ORAMEM_STORES.EMBEDDER
    * and, when one is recorded, one JSON_EQUAL query, in the same call (no round trip of its
    * own).
    * Errors: -20108 (gc_embedder_mismatch); -20010 (store id); -20101 (no such store).
    * Commit: never.
    */
   PROCEDURE check_embedder(
      in_store_id IN VARCHAR2,
      in_identity IN CLOB,
      in_what     IN VARCHAR2
   );

END oramem_admin;
/
