CREATE OR REPLACE PACKAGE oramem_kg_jobs
AUTHID DEFINER
AS
   /*
    * oramem_kg_jobs: the deterministic background jobs of the knowledge layer
    * (KNOWLEDGE_CONTRACT KC-6.8) run inside the database, and the DBMS_SCHEDULER job that
    * runs them. The LLM jobs (summaries, clustering, communities, consolidation, merges)
    * run from Python (`oramem kg run-jobs`).
    *
    * Per agent, in the order of KnowledgeMemory.run_background (JOB_ORDER), it mirrors
    * oramem/knowledge/jobs.py and procedural.py with the KnowledgeConfig defaults below:
    *  1. entity importance (KC-6.6): fact density .30, recency .25 (half-life
    *     gc_importance_halflife_days from last_seen_at), retrieval frequency .25, degree
    *     over active edges .20; each min-max normalised over the agent's active entities
    *     (.5 when all equal); the clipped sum is written to importance_score.
    *  2. emotional trends (KC-5.13): events with an emotion in the last
    *     gc_trend_window_days; below gc_trend_min_events nothing is written; else one
    *     active 'emotional_trend' meta-observation is reinforced (when one was reinforced
    *     in the last 24 h) or created (older ones deactivated).
    *  3. memify steps 1-3 and 5 (KC-6.5): vitality of every current fact, stale marking
    *     (threshold gc_vitality_stale_threshold; importance >= .8 or is_sensitive
    *     protects) with the store record's kg_is_stale metadata rewritten for facts whose
    *     flag changed (through oramem_store.get_json / update_json), edge reinforce/decay
    *     (updated_at watermark), and intention expiry (gc_intention_expiry_days).
    *     Step 4 (merges) needs an LLM and is not run here.
    *
    * Tables: <STORE_ID>_KG_* of the store (oramem/knowledge/schema.py), named only from
    * the validated store id (oramem_registry.normalize_store_id, then
    * DBMS_ASSERT.SIMPLE_SQL_NAME and ENQUOTE_NAME); every value is bound. The agent's row
    * in <STORE_ID>_KG_AGENT is locked (SELECT ... FOR UPDATE) for its work, as the
    * Python write path does (KC-7.5).
    *
    * Known differences from the Python code (documented, checked by the parity test on
    * Oracle only): "now" is oramem_registry.utc_now read once per agent; the keyword scan
    * of emotional trends reads the first 8000 characters of each event text and drops
    * the combining marks U+0300-U+036F after DECOMPOSE(..., 'COMPATIBILITY') (Python
    * drops every combining character); new meta-observation ids are uuid-formatted
    * from SYS_GUID (unique, not random).
    *
    * Status: static-checked (parsed), not run against a database.
    */

   -- KnowledgeConfig defaults (oramem/knowledge/config.py); a test checks they agree.
   gc_vitality_stale_threshold CONSTANT NUMBER := 0.2;
   gc_importance_halflife_days CONSTANT NUMBER := 30;
   gc_intention_expiry_days    CONSTANT NUMBER := 7;
   gc_trend_window_days        CONSTANT NUMBER := 30;
   gc_trend_min_events         CONSTANT NUMBER := 5;

   -- Default repeat interval of the scheduler job, in hours.
   gc_default_every_hours      CONSTANT PLS_INTEGER := 4;

   /*
    * run_deterministic: run entity importance, emotional trends and memify steps 1-3 and
    * 5 for agent in_agent_id of store in_store_id, or, when in_agent_id is NULL, for
    * every agent with an event or entity row (sorted by agent_id).
    * A failing job of one agent is logged (oramem_errors.log_error, ORAMEM_ERROR_LOG,
    * where 'oramem_kg_jobs.<job>') and rolled back to its savepoint, and the other jobs
    * and agents still run (KC-6.1), so the procedure returns normally; read the log.
    * Errors: -20010 in_store_id NULL or invalid; -20001 in_agent_id longer than 256
    *  characters; ORA-00942 when the store has no knowledge tables.
    * Commit: COMMITS once per agent (its jobs' work and the release of its KG_AGENT row
    *  lock). Do not call it with uncommitted work of your own: that work is committed
    *  with the first agent.
    */
   PROCEDURE run_deterministic(
      in_store_id IN VARCHAR2,
      in_agent_id IN VARCHAR2 DEFAULT NULL
   );

   /*
    * run_job: the scheduler job's action: run_deterministic(in_store_id) for all agents.
    * Errors and commit: as run_deterministic.
    */
   PROCEDURE run_job(
      in_store_id IN VARCHAR2
   );

   /*
    * has_knowledge: 1 when the knowledge tables of store in_store_id exist in this schema
    * (<STORE_ID>_KG_EVENT stands for all of them, as in on_store_delete), else 0. Read-only.
    * Used by the driver's forget, which refuses to erase the store part alone.
    * Errors: -20010 in_store_id NULL or invalid.
    * Commit: never.
    */
   FUNCTION has_knowledge(
      in_store_id IN VARCHAR2
   ) RETURN PLS_INTEGER;

   /*
    * job_name: the scheduler job name of store in_store_id, 'ORAMEM_KG_<STORE_ID>'
    * (validated with DBMS_ASSERT.SIMPLE_SQL_NAME).
    * Errors: -20010 in_store_id NULL or invalid.
    * Commit: never.
    */
   FUNCTION job_name(
      in_store_id IN VARCHAR2
   ) RETURN VARCHAR2;

   /*
    * install_scheduler: create (or re-create) the DBMS_SCHEDULER job job_name(in_store_id)
    * that calls run_job(in_store_id) every in_every_hours hours (1..168), starting now.
    * Type STORED_PROCEDURE with the store id as its one argument: no caller text is
    * placed in job_action; the calendar string is built from the checked integer.
    * Errors: -20010 bad store id; -20001 in_every_hours outside 1..168; -20101 the store
    *  has no knowledge tables (<STORE_ID>_KG_FACT missing); ORA-27486 / ORA-01031 when the
    *  owner lacks the CREATE JOB privilege - raised unchanged: the caller decides (the
    *  `oramem kg install-scheduler` command warns and exits 0, SC-5.5).
    * Commit: autonomous transaction (DBMS_SCHEDULER calls commit); never commits or
    *  rolls back the caller's transaction.
    */
   PROCEDURE install_scheduler(
      in_store_id    IN VARCHAR2,
      in_every_hours IN PLS_INTEGER DEFAULT 4
   );

   /*
    * drop_scheduler: drop job_name(in_store_id) when it exists (a running instance is
    * stopped: force). Nothing happens when there is no such job.
    * Errors: -20010 bad store id.
    * Commit: autonomous transaction; never the caller's.
    */
   PROCEDURE drop_scheduler(
      in_store_id IN VARCHAR2
   );

   /*
    * on_store_delete: the store's deletion hook for the knowledge layer (SC-8.5, KC-3.6),
    * registered by KnowledgeMemory on Oracle as 'ORAMEM_KG_JOBS.ON_STORE_DELETE'
    * (oramem_admin.set_deletion_hook). in_event is the DeletionEvent JSON
    * (plsql/README.md). It does what the SQLite hook (KnowledgeMemory._deletion_hook)
    * does, in the caller's transaction:
    *  - records of type 'fact': the summaries written from them are cleared first (the
    *    linked entities' summary_text / summary_refreshed_at, each link's scope, and their
    *    clusters' summary_text / embedding_vec; red35); their entity links, the
    *    relationships they evidence and the fact rows go; supersedes_fact_id stops naming
    *    them; they leave the supporting_fact_ids of their agents' meta-observations;
    *    fact_count of the linked entities is recounted (distinct current, unexpired facts);
    *  - records of type 'message' and the events of the deleted thread_ids: the events
    *    go and facts stop naming them as source_event_id;
    *  - agent_ids: every row of the agent in the 11 knowledge tables goes.
    * A 'fact' / 'message' record takes its fact / event row only when the row is its own:
    * when the event's "scopes" (the records' agent_id / user_id) name another agent or user
    * than the row under the id has, the row stays (ids are unique per record type only).
    * Nothing happens when the store has no knowledge tables (<ID>_KG_FACT missing), for a
    * forget (reason "forget") and for a cascade whose caller erases the knowledge layer
    * itself next in the transaction ("knowledge": "caller", oramem_store
    * .delete_record_json in_reason 'erase'): the Python eraser does it all there.
    * Errors: -20010 bad memory_store_id in the event; any SQL error is raised (and so
    *  undoes the store's delete, as documented for hooks).
    * Commit: never (it runs inside the store's delete, cascade or purge transaction).
    */
   PROCEDURE on_store_delete(
      in_event IN CLOB
   );
END oramem_kg_jobs;
/
