CREATE OR REPLACE PACKAGE oramem_store
AUTHID DEFINER
AS
   /*
    * oramem_store: record writes and reads of one store - add (JSON batch), get, list,
    * list_thread_messages, update, delete (with cascade), delete_thread, purge_expired,
    * sync_search_index - callable from PL/SQL and, one call per operation, from python.
    *
    * Commit behaviour: data subprograms NEVER commit; each one sets a savepoint and, on
    * any error, rolls back to it (so a failed call stores nothing, SC-4.4) and re-raises.
    * Exceptions: purge_expired with in_commit = 1 (the scheduler job) commits per batch;
    * sync_search_index runs CTX_DDL.SYNC_INDEX in an autonomous transaction.
    *
    * Deletion hook (SC-8.5): delete_record*, delete_thread*, purge_expired call the
    * store's registered procedure (oramem_admin.set_deletion_hook) in the same
    * transaction, before returning, with the DeletionEvent JSON; an exception in the
    * hook aborts the delete (rolled back to the savepoint) and propagates. A hook must
    * not commit or roll back (the transaction is the caller's) and must not write
    * through oramem_store: such a nested call is refused with -20001 (the fixed
    * savepoint names would otherwise break the outer call's rollback).
    *
    * Payload formats: plsql/README.md ("JSON payloads"). Times are ISO-8601 UTC strings
    * 'YYYY-MM-DDTHH24:MI:SS.FF6+00:00'. Vectors are JSON arrays of numbers converted with
    * TO_VECTOR(<json text>, <store vector_dim>, FLOAT32).
    */

   -- Default window of list (SC-3.3, MAX_LIST_LIMIT).
   gc_max_list_limit   CONSTANT PLS_INTEGER := 10000;
   -- Default batch size of add (SC-4.9).
   gc_default_batch    CONSTANT PLS_INTEGER := 256;

   /*
    * add_json: insert every record of in_batch (add-batch JSON, README) and its retrieval
    * rows in one unit; create threads implicitly (SC-2.3); return a JSON array of the ids
    * written, in batch order. in_batch_size (1..10000) bounds the rows per internal INSERT
    * slice. A record with "restored_times" keeps that created_at/expires_at (a backup's
    * restore) instead of this call's time and its ttl. The batch's "on_conflict" says what
    * an id already stored does: "fail" (default: -20005, nothing stored), "skip" (that
    * record is left out and its id is not returned) or "replace" (the stored record and its
    * retrieval rows are deleted in this call, the deletion hook runs with reason "replace").
    * A chunk's "keyword_text" (issue 23, README) is its keyword passage, written to the
    * store's passage table; accepted only where the store groups, on all or none of a
    * record's chunks (-20002 before anything is written).
    * Errors: -20002 bad JSON/missing key, or a key the call does not read (in the batch,
    *  a record, its ttl, restored_times or a chunk; names it); -20001 bad field (names it); -20003 bad type;
    *  -20005 duplicate id (in the batch, or already stored with on_conflict "fail"; names the id);
    *  -20006 vector dimension differs from the store's vector_dim, or a vector on a store
    *  without vector_dim; -20007 bad timestamp; -20008 ttl anchor "timestamp" without a
    *  timestamp; -20101/-20106/-20104 store unusable.
    * Commit: never.
    */
   FUNCTION add_json(
      in_store_id   IN VARCHAR2,
      in_batch      IN CLOB,
      in_batch_size IN PLS_INTEGER DEFAULT 256
   ) RETURN CLOB;

   /*
    * get_json: the record JSON (README "Record object") of an unexpired record, or NULL
    * when no such record exists or it has expired (SC-3.2). in_lock = 1 (a read inside a
    * caller's transaction, SC-12.10) locks the record's row (SELECT ... FOR UPDATE) until
    * the transaction ends, waiting for a session that holds it.
    * Errors: -20003; -20001 null id or in_lock not 0/1; store errors as add_json.
    * Commit: never.
    */
   FUNCTION get_json(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_lock        IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB;

   /*
    * list_json: JSON array of record objects matching the list request JSON (README),
    * the newest "limit" records ordered oldest to newest by seq_no (SC-3.3).
    * Errors: -20002; -20001; -20003; -20004 invalid metadata_filter; store errors.
    * Commit: never.
    */
   FUNCTION list_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN CLOB;

   /*
    * list_thread_messages_json: JSON array of the thread's unexpired message records,
    * oldest first; in_last_n (NULL = all, else >= 1) keeps the newest n (SC-3.4).
    * Errors: -20001 null thread id or last_n < 1; store errors.
    * Commit: never.
    */
   FUNCTION list_thread_messages_json(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2,
      in_last_n    IN PLS_INTEGER DEFAULT NULL
   ) RETURN CLOB;

   /*
    * export_json: JSON array of the store's unexpired records (threads included) with
    * seq_no > in_after_seq, oldest first, at most in_limit (1..10000), each
    * {"record": <Record object>, "chunks": [{"text": ..., "vector": [...] | null}, ...] | null}
    * with its retrieval rows in chunk order (vectors as FROM_VECTOR's dense text, float32).
    * The next page starts after the last record's seq_no. Used by oramem migrate. Read-only.
    * Errors: -20001 bad after_seq / limit; store errors as add_json.
    * Commit: never.
    */
   FUNCTION export_json(
      in_store_id  IN VARCHAR2,
      in_after_seq IN NUMBER DEFAULT 0,
      in_limit     IN PLS_INTEGER DEFAULT 500
   ) RETURN CLOB;

   /*
    * update_json: apply the update request JSON (README; maps UpdateRequest) and return
    * 1 when an unexpired record was updated, 0 when none exists (SC-7.1).
    * Errors: -20002 (also a key the call does not read, in the request, its ttl or a chunk;
    *  and chunks without retrieval "replace", vectors without "revector");
    *  -20001 (nothing to update, text=null on a profile, ...); -20003;
    *  -20006 vector dimension, or "revector" count differs from the existing row count
    *  (message names both counts); -20007; -20008; store errors.
    * Commit: never.
    */
   FUNCTION update_json(
      in_store_id IN VARCHAR2,
      in_request  IN CLOB
   ) RETURN PLS_INTEGER;

   /*
    * delete_record_json: delete one record and its retrieval rows (SC-8.1); with
    * in_cascade = 1 on a user_profile / agent_profile also erase the actor as SC-13 says,
    * even when the profile row is absent (SC-8.2): every record scoped to the actor and
    * the threads that are the actor's alone (a user's: no record of another user in them;
    * an agent's: nothing but its records; the thread row, which names only who opened
    * the thread, is not counted, SC-13.2, and goes with a thread removed whole), never a
    * record of another user; a thread row naming the actor in a thread that stays loses
    * the actor's id. The event's thread_ids
    * are the threads removed whole (SC-13.7). Returns {"count": 0|1, "event": <DeletionEvent JSON> | null}:
    * count is 1 only when the record was visible (an expired, unpurged record is deleted
    * too but counts 0, SC-5.4); "event" is null when nothing was removed, except for a
    * cascade, whose event always names the actor in user_ids / agent_ids (SC-8.2, as the
    * SQLite engine). Calls the deletion hook with every non-null event.
    * Locks (KC-3.10): with in_cascade = 1 on a user_profile / agent_profile (an erasure),
    *  first LOCK TABLE <ID>_KG_AGENT IN EXCLUSIVE MODE when the store has knowledge tables,
    *  held until the caller's transaction ends: knowledge writes of the store wait for it.
    * Erasure proof (SC-14.3, left34): this call writes no erasure-log receipt (tombstone) and
    *  no retrieval-audit deletion (the audit is SQLite-only, SC-16.7). The Python driver's
    *  profile cascade and forget log the receipt themselves, in this call's transaction
    *  (oramem_admin.log_erasure): its subject hash is an HMAC-SHA256 under the store's salt,
    *  its token hashes and verification scan are Python's (oramem.trust.erasure), none of
    *  which the package computes (DBMS_CRYPTO is not among oramem's grants). A PL/SQL caller
    *  that needs the proof (so oramem import / migrate refuse the actor, SC-14.4) erases
    *  with the Python forget, or runs it after this call: it deletes what is left (nothing)
    *  and logs the receipt.
    * Errors: -20003; -20001 (null id, an id of white space only, in_cascade not 0/1,
    *  in_cascade = 1 on a type other than user_profile / agent_profile / thread); store
    *  errors; hook errors.
    * Commit: never.
    */
   /*
    * (N4) in_reason = 'forget' (with in_cascade = 1 on a profile type): the cascade of an
    * erasure (SC-8.6): the hook's event has reason "forget" and, when in_names is a JSON
    * array of strings, "names" (the actor's names, as the SQLite engine's DeletionEvent).
    * in_reason = 'erase' (with in_cascade = 1 on a profile type): a cascade whose caller
    * erases the knowledge layer itself, next in the same transaction (the Python driver's
    * profile cascade with the knowledge eraser registered, SC-13.3): the event has reason
    * "cascade" and "knowledge": "caller", and the knowledge hook (oramem_kg_jobs
    * .on_store_delete) deletes nothing for it, as for a forget. A caller that passes it and
    * does not erase leaves the actor's knowledge rows in place.
    * Any other in_reason is -20001.
    */
   FUNCTION delete_record_json(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_cascade     IN PLS_INTEGER DEFAULT 0,
      in_reason      IN VARCHAR2 DEFAULT NULL,
      in_names       IN CLOB DEFAULT NULL
   ) RETURN CLOB;

   /*
    * delete_keys_json: delete the records of no user (user_id null) named by in_keys, a
    * JSON array of [record_type, record_id] pairs (absent ones are ignored), with their
    * retrieval rows, in one statement; the deletion hook is NOT run (what an erasure's
    * layers named, after the actor's cascade, which removed the erased user's own
    * records: N4, as oramem/sqlite/mutations.py delete_keys; another user's record under
    * a named key stays, SC-13.1).
    * Returns {"count": n}. Errors: -20001; store errors. Commit: never.
    */
   FUNCTION delete_keys_json(
      in_store_id IN VARCHAR2,
      in_keys     IN CLOB
   ) RETURN CLOB;

   /*
    * delete_record: delete_record_json for PL/SQL callers; returns the count (0 or 1).
    * Errors, locks and commit: as delete_record_json.
    */
   FUNCTION delete_record(
      in_store_id    IN VARCHAR2,
      in_record_type IN VARCHAR2,
      in_record_id   IN VARCHAR2,
      in_cascade     IN PLS_INTEGER DEFAULT 0
   ) RETURN PLS_INTEGER;

   /*
    * delete_thread_json: delete the thread record, its messages and every record scoped
    * to it, with all retrieval rows (SC-8.3). Returns {"count": 0|1, "event": ...|null};
    * count is 1 when the thread or any of its records existed. Calls the deletion hook.
    * Errors: -20001 null id; store errors; hook errors.
    * Commit: never.
    */
   FUNCTION delete_thread_json(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2
   ) RETURN CLOB;

   /*
    * delete_thread: delete_thread_json for PL/SQL callers; returns the count (0 or 1).
    */
   FUNCTION delete_thread(
      in_store_id  IN VARCHAR2,
      in_thread_id IN VARCHAR2
   ) RETURN PLS_INTEGER;

   /*
    * purge_expired_json: physically remove records whose expires_at <= one reference
    * time taken at the start, with their retrieval rows, in batches of in_batch_rows
    * (1..100000), stopping after in_max_seconds (SC-5.5). The deletion hook runs once
    * per batch (reason "purge"). Returns {"count": n}; with in_with_events = 1 also
    * "events": [DeletionEvent...] (one per batch, kept in memory until the end: N2, for
    * callers that need them; the python driver reads only the count).
    * in_commit = 1 commits after every batch (scheduler use); 0 never commits.
    * Errors: -20001 bad argument; store errors; hook errors.
    * Commit: only when in_commit = 1.
    */
   FUNCTION purge_expired_json(
      in_store_id     IN VARCHAR2,
      in_batch_rows   IN PLS_INTEGER DEFAULT 1000,
      in_max_seconds  IN PLS_INTEGER DEFAULT 300,
      in_commit       IN PLS_INTEGER DEFAULT 0,
      in_with_events  IN PLS_INTEGER DEFAULT 0
   ) RETURN CLOB;

   /*
    * purge_expired: purge_expired_json for PL/SQL callers; returns the rows removed.
    */
   FUNCTION purge_expired(
      in_store_id     IN VARCHAR2,
      in_batch_rows   IN PLS_INTEGER DEFAULT 1000,
      in_max_seconds  IN PLS_INTEGER DEFAULT 300,
      in_commit       IN PLS_INTEGER DEFAULT 0
   ) RETURN PLS_INTEGER;

   /*
    * run_purge_job: entry point of the store's DBMS_SCHEDULER job
    * (ORAMEM_PURGE_<ID>): purge_expired with commits per batch. Does nothing for a
    * store that is not READY.
    * Commit: commits per batch.
    */
   PROCEDURE run_purge_job(
      in_store_id IN VARCHAR2
   );

   /*
    * sync_search_index: bring the store's Oracle Text / hybrid index up to date
    * (CTX_DDL.SYNC_INDEX; SC-10.5): a HYBRID store's hybrid vector index and its keyword
    * passage index OM_<ID>_KTX (issue 23). No-op for a store without such an index. Only rows
    * committed before the call become searchable.
    * Errors: -20301 Oracle Text missing; store errors.
    * Commit: autonomous transaction (SYNC_INDEX commits); the caller's transaction is
    * neither committed nor rolled back.
    */
   PROCEDURE sync_search_index(
      in_store_id IN VARCHAR2
   );
   /*
    * lock_retrieval_rows: the write lock of a reembed transaction (oramem_admin.reembed_*),
    * its first statement: the erasure lock order's first lock (KC-3.10; plsql/VERIFY.md, "One
    * lock order for an erasure and the writes it races": LOCK TABLE <ID>_KG_AGENT IN
    * EXCLUSIVE MODE when the store has knowledge tables), then LOCK TABLE OM_<ID>_CHK IN
    * EXCLUSIVE MODE, so a delete or forget in flight ends before the reembed reads or saves
    * and one that starts later waits until the caller's transaction ends.
    * Errors: -20010; -20101. Commit: never (held until the caller commits or rolls back).
    */
   PROCEDURE lock_retrieval_rows(
      in_store_id IN VARCHAR2
   );

END oramem_store;
/
