CREATE OR REPLACE PACKAGE BODY oramem_kg_jobs
AS
   /*
    * Implementation notes
    * - Table names reach SQL text only through kg_table: the normalised store id plus a
    *   fixed suffix from this body, checked by DBMS_ASSERT.SIMPLE_SQL_NAME and quoted by
    *   ENQUOTE_NAME. Templates (gc_tpl_*) hold the SQL with #NAME# placeholders for those
    *   quoted names only; every value is a bind.
    * - BOOLEAN columns (23ai) are read as 0/1 with CASE and written with TRUE/FALSE
    *   literals chosen by a bound 0/1, so no PL/SQL BOOLEAN is bound.
    */

   TYPE vc_tab_t  IS TABLE OF VARCHAR2(1024 CHAR)  INDEX BY PLS_INTEGER;   -- 256 CHAR agent ids in bytes
   TYPE num_tab_t IS TABLE OF NUMBER          INDEX BY PLS_INTEGER;
   TYPE ts_tab_t  IS TABLE OF TIMESTAMP(6)    INDEX BY PLS_INTEGER;
   TYPE clob_tab_t IS TABLE OF CLOB           INDEX BY PLS_INTEGER;
   TYPE num_map_t IS TABLE OF NUMBER          INDEX BY VARCHAR2(1024 CHAR);
   TYPE word_map_t IS TABLE OF PLS_INTEGER    INDEX BY VARCHAR2(4000 CHAR);

   e_job_missing   EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_job_missing, -27475);

   gc_ln2          CONSTANT NUMBER := LN(2);
   gc_ln11         CONSTANT NUMBER := LN(11);
   gc_max_agent    CONSTANT PLS_INTEGER := 256;
   gc_text_chars   CONSTANT PLS_INTEGER := 8000;
   gc_word_piece_chars CONSTANT PLS_INTEGER := 500;   -- count_words: characters decomposed at once
   gc_empty_ids    CONSTANT VARCHAR2(2 CHAR) := '[]';

   -- procedural._STOP (a test checks the two lists are equal); one space around each word.
   gc_stopwords CONSTANT VARCHAR2(2000 CHAR) := q'[ the and for are but not you your with this that from have has had was were will would can could should about into over than then them they their there what when where which who whom why how all any some just very more most out off our ours she her his him its it's i'm im yes now too also been being because while did does doing done que com para por uma umas uns dos das nos nas pelo pela pelos pelas mas nao sim isso esse essa este esta aqui ali muito muita muitos muitas mais menos como quando onde quem qual quais seu sua seus suas meu minha meus minhas ele ela eles elas voce voces tem ter foi era sao estou estava tudo nada los las del una unos unas pero porque cuando donde quien cual muy esto estos estas ese esa eso tengo tiene fue son estoy estaba todo sin sobre ]';

   ---------------------------------------------------------------------------------------
   -- SQL templates (#ENT#, #LINK#, ... are kg_table names)
   ---------------------------------------------------------------------------------------
   gc_tpl_agents CONSTANT VARCHAR2(300 CHAR) := q'[SELECT agent_id FROM #EVENT# UNION SELECT agent_id FROM #ENT# ORDER BY 1]';

   gc_tpl_agent_ins CONSTANT VARCHAR2(300 CHAR) := q'[INSERT INTO #AGENT# (agent_id) SELECT :1 FROM dual WHERE NOT EXISTS (SELECT 1 FROM #AGENT# WHERE agent_id = :2)]';

   gc_tpl_agent_lock CONSTANT VARCHAR2(200 CHAR) := q'[SELECT agent_id FROM #AGENT# WHERE agent_id = :1 FOR UPDATE]';

   -- KC-6.0: the jobs run per scope (agent, user); DECODE matches a NULL user (the shared
   -- knowledge) to a NULL bind (SQL Language Reference, DECODE: two nulls are equivalent)
   gc_tpl_scopes CONSTANT VARCHAR2(300 CHAR) := q'[SELECT user_id FROM #ENT# WHERE agent_id = :1 UNION SELECT user_id FROM #EVENT# WHERE agent_id = :2]';
   gc_tpl_ents CONSTANT VARCHAR2(300 CHAR) := q'[SELECT canonical_key, last_seen_at FROM #ENT# WHERE agent_id = :1 AND DECODE(user_id, :2, 1, 0) = 1 AND is_active = TRUE ORDER BY canonical_key]';

   gc_tpl_density CONSTANT VARCHAR2(400 CHAR) := q'[SELECT l.entity_key, COUNT(DISTINCT f.id) FROM #LINK# l JOIN #FACT# f ON f.id = l.fact_id WHERE l.agent_id = :1 AND DECODE(l.user_id, :2, 1, 0) = 1 AND f.valid_to IS NULL AND f.invalidated_at IS NULL GROUP BY l.entity_key]';

   gc_tpl_retrieved CONSTANT VARCHAR2(400 CHAR) := q'[SELECT l.entity_key, NVL(SUM(f.times_retrieved), 0) FROM #LINK# l JOIN #FACT# f ON f.id = l.fact_id WHERE l.agent_id = :1 AND DECODE(l.user_id, :2, 1, 0) = 1 GROUP BY l.entity_key]';

   gc_tpl_degree CONSTANT VARCHAR2(600 CHAR) := q'[SELECT k, COUNT(*) FROM (SELECT source_entity_key k FROM #REL# WHERE agent_id = :1 AND DECODE(user_id, :2, 1, 0) = 1 AND valid_to IS NULL AND invalidated_at IS NULL UNION ALL SELECT target_entity_key k FROM #REL# WHERE agent_id = :3 AND DECODE(user_id, :4, 1, 0) = 1 AND valid_to IS NULL AND invalidated_at IS NULL) GROUP BY k]';

   gc_tpl_set_importance CONSTANT VARCHAR2(300 CHAR) := q'[UPDATE #ENT# SET importance_score = :1 WHERE agent_id = :2 AND DECODE(user_id, :3, 1, 0) = 1 AND canonical_key = :4]';

   gc_tpl_facts CONSTANT VARCHAR2(600 CHAR) := q'[SELECT id, times_retrieved, last_retrieved_at, ingested_at, confidence, reinforcement_count, user_correction_count, importance, CASE WHEN is_sensitive THEN 1 ELSE 0 END, CASE WHEN is_stale THEN 1 ELSE 0 END FROM #FACT# WHERE agent_id = :1 AND valid_to IS NULL AND invalidated_at IS NULL]';

   gc_tpl_set_vitality CONSTANT VARCHAR2(300 CHAR) := q'[UPDATE #FACT# SET vitality_score = :1, is_stale = CASE WHEN :2 = 1 THEN TRUE ELSE FALSE END WHERE id = :3]';

   gc_tpl_edges_up CONSTANT VARCHAR2(400 CHAR) := q'[UPDATE #REL# SET strength = LEAST(1, strength + 0.05), updated_at = :1 WHERE agent_id = :2 AND valid_to IS NULL AND invalidated_at IS NULL AND last_used_at IS NOT NULL AND last_used_at > updated_at]';

   gc_tpl_edges_decay CONSTANT VARCHAR2(400 CHAR) := q'[UPDATE #REL# SET strength = GREATEST(0.1, 0.9 * strength), updated_at = :1 WHERE agent_id = :2 AND valid_to IS NULL AND invalidated_at IS NULL AND GREATEST(NVL(last_used_at, updated_at), updated_at) < :3]';

   gc_tpl_intentions CONSTANT VARCHAR2(300 CHAR) := q'[UPDATE #INT# SET status = 'expired' WHERE agent_id = :1 AND status IN ('pending', 'triggered') AND due_date IS NOT NULL AND due_date < :2]';

   gc_tpl_trend_events CONSTANT VARCHAR2(400 CHAR) := q'[SELECT id, text, emotion_primary, emotion_intensity, energy_level FROM #EVENT# WHERE agent_id = :1 AND DECODE(user_id, :2, 1, 0) = 1 AND emotion_primary IS NOT NULL AND occurred_at >= :3 AND occurred_at <= :4 ORDER BY occurred_at, id]';

   gc_tpl_trend_recent CONSTANT VARCHAR2(400 CHAR) := q'[SELECT id FROM #OBS# WHERE agent_id = :1 AND DECODE(user_id, :2, 1, 0) = 1 AND is_active = TRUE AND observation_type = 'emotional_trend' AND last_reinforced_at >= :3 ORDER BY last_reinforced_at DESC, id FETCH FIRST 1 ROWS ONLY]';

   gc_tpl_trend_reinforce CONSTANT VARCHAR2(400 CHAR) := q'[UPDATE #OBS# SET times_reinforced = times_reinforced + 1, last_reinforced_at = :1, title = :2, text = :3, supporting_event_ids = :4 WHERE id = :5]';

   gc_tpl_trend_retire CONSTANT VARCHAR2(300 CHAR) := q'[UPDATE #OBS# SET is_active = FALSE WHERE agent_id = :1 AND DECODE(user_id, :2, 1, 0) = 1 AND is_active = TRUE AND observation_type = 'emotional_trend']';

   gc_tpl_trend_insert CONSTANT VARCHAR2(800 CHAR) := q'[INSERT INTO #OBS# (id, agent_id, user_id, observation_type, title, text, supporting_event_ids, supporting_fact_ids, confidence, importance, times_reinforced, is_active, embedding_vec, first_detected_at, last_reinforced_at, created_at) VALUES (:1, :2, :3, 'emotional_trend', :4, :5, :6, :7, 0.7, 0.5, 0, TRUE, NULL, :8, :9, :10)]';

   -- deletion hook (on_store_delete); #TAB# is kg_table of a suffix from l_sfx there
   -- the summaries written from a deleted fact, cleared before its links and row go
   -- (deletes.purge_facts, red35): its entities' in each link's own scope (KC-6.7; DECODE
   -- matches two NULLs, as gc_tpl_hk_recount) and its cluster's with the vector embedded from
   -- it (KC-6.2, #TAB# = CLUSTER); the next summary refresh / clustering run writes them again
   gc_tpl_hk_clear_summary CONSTANT VARCHAR2(600 CHAR) := q'[UPDATE #ENT# e SET summary_text = NULL, summary_refreshed_at = NULL WHERE EXISTS (SELECT 1 FROM #LINK# l WHERE l.fact_id = :1 AND l.agent_id = e.agent_id AND DECODE(l.user_id, e.user_id, 1, 0) = 1 AND l.entity_key = e.canonical_key)]';

   gc_tpl_hk_clear_cluster CONSTANT VARCHAR2(300 CHAR) := q'[UPDATE #TAB# SET summary_text = NULL, embedding_vec = NULL WHERE id IN (SELECT cluster_id FROM #FACT# WHERE id = :1)]';

   gc_tpl_hk_del_links CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #LINK# WHERE fact_id = :1 RETURNING agent_id, entity_key INTO :2, :3]';

   gc_tpl_hk_del_rel CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #REL# WHERE evidence_fact_id = :1]';

   gc_tpl_hk_unsupersede CONSTANT VARCHAR2(200 CHAR) := q'[UPDATE #FACT# SET supersedes_fact_id = NULL WHERE supersedes_fact_id = :1]';

   gc_tpl_hk_del_fact CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #FACT# WHERE id = :1 RETURNING agent_id INTO :2]';

   gc_tpl_hk_obs CONSTANT VARCHAR2(300 CHAR) := q'[SELECT id, JSON_SERIALIZE(supporting_fact_ids RETURNING CLOB) FROM #OBS# WHERE agent_id = :1 AND supporting_fact_ids IS NOT NULL]';

   -- a meta observation citing a deleted fact goes, row and text (deletes.purge_facts through
   -- queries.delete_observations_citing, obs47): the model wrote its title and text from the
   -- facts it cites, so taking only the id out of supporting_fact_ids left it quoting the
   -- deleted fact to every reader of its scope; the next job run writes it again
   gc_tpl_hk_obs_del CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #OBS# WHERE id = :1]';

   -- KC-3.7: counted within the entity's own scope (DECODE treats two NULLs as equal, SQL
   -- Language Reference, DECODE: a shared entity counts shared links only)
   gc_tpl_hk_recount CONSTANT VARCHAR2(800 CHAR) := q'[UPDATE #ENT# e SET fact_count = (SELECT COUNT(DISTINCT f.id) FROM #LINK# l JOIN #FACT# f ON f.id = l.fact_id WHERE l.agent_id = e.agent_id AND DECODE(l.user_id, e.user_id, 1, 0) = 1 AND l.entity_key = e.canonical_key AND f.valid_to IS NULL AND f.invalidated_at IS NULL AND (f.ttl_days IS NULL OR f.ingested_at + NUMTODSINTERVAL(f.ttl_days, 'DAY') > :1)) WHERE e.agent_id = :2 AND e.canonical_key = :3]';

   -- a removed thread's rows: every row for delete_thread; for an actor's cascade only the
   -- actor's rows (a user's: hers and those without a user; an agent's: its own),
   -- since the thread went because no *store record* of another user or agent was in it, yet
   -- knowledge rows of another scope may name it (a background write another user queued
   -- there has no store record until a worker runs it; the SQLite hook's _of_removed_thread).
   -- :2 / :4 = 1 when the event's user_ids (:3) / agent_ids (:5) restrict the rows
   gc_hk_of_removed CONSTANT VARCHAR2(400 CHAR) :=
      q'~ AND (:2 = 0 OR user_id IS NULL OR user_id IN (SELECT j.v FROM JSON_TABLE(:3, '$[*]' COLUMNS (v VARCHAR2(512 CHAR) PATH '$')) j))~'
      || q'~ AND (:4 = 0 OR agent_id IN (SELECT j.v FROM JSON_TABLE(:5, '$[*]' COLUMNS (v VARCHAR2(512 CHAR) PATH '$')) j))~';

   gc_tpl_hk_thread_events CONSTANT VARCHAR2(600 CHAR) := q'[SELECT id FROM #EVENT# WHERE session_id = :1]' || gc_hk_of_removed;

   gc_tpl_hk_unsource CONSTANT VARCHAR2(200 CHAR) := q'[UPDATE #FACT# SET source_event_id = NULL WHERE source_event_id = :1]';

   gc_tpl_hk_del_event CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #EVENT# WHERE id = :1]';

   -- a knowledge row (#TAB#: FACT or EVENT) under a deleted record's id whose agent or user
   -- is not the record's: not the record's own row, so it stays (DECODE: NULLs match); also
   -- sync_stale_metadata's check that a fact record is its fact row's own
   gc_tpl_hk_other_scope CONSTANT VARCHAR2(300 CHAR) := q'[SELECT COUNT(*) FROM #TAB# WHERE id = :1 AND NOT (DECODE(agent_id, :2, 1, 0) = 1 AND DECODE(user_id, :3, 1, 0) = 1)]';

   gc_tpl_hk_del_agent CONSTANT VARCHAR2(200 CHAR) := q'[DELETE FROM #TAB# WHERE agent_id = :1]';

   gc_tpl_hk_del_session CONSTANT VARCHAR2(600 CHAR) := q'[DELETE FROM #TAB# WHERE session_id = :1]' || gc_hk_of_removed;

   -- intentions extracted in a session keep its whole id (source_context, KC-3.7; review
   -- finding 14: a 32-character prefix matched other users' sessions)
   gc_tpl_hk_del_session_int CONSTANT VARCHAR2(600 CHAR) := q'[DELETE FROM #INT# WHERE source_context = :1]' || gc_hk_of_removed;

   ---------------------------------------------------------------------------------------
   -- helpers
   ---------------------------------------------------------------------------------------
   -- The normalised store id; NULL is refused (the knowledge tables of the default store
   -- are DEFAULT_KG_*, not ORAMEM_DEFAULT_KG_*, so the id is always explicit here).
   FUNCTION store_key(
      in_store_id IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      IF in_store_id IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_store_id,
            'in_store_id is required: pass the memory_store_id whose <ID>_KG_* tables to use');
      END IF;
      RETURN oramem_registry.normalize_store_id(in_store_id);
   END store_key;

   -- Quoted name of knowledge table <STORE>_KG_<in_suffix>; in_suffix comes from this body.
   FUNCTION kg_table(
      in_sid    IN VARCHAR2,
      in_suffix IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN DBMS_ASSERT.ENQUOTE_NAME(DBMS_ASSERT.SIMPLE_SQL_NAME(in_sid || '_KG_' || in_suffix), capitalize => TRUE);
   END kg_table;

   -- in_tpl with every knowledge-table placeholder replaced.
   FUNCTION sql_for(
      in_tpl    IN VARCHAR2,
      in_sid    IN VARCHAR2,
      in_suffix IN VARCHAR2 DEFAULT NULL    -- for #TAB#: a table suffix from this body
   ) RETURN VARCHAR2
   IS
      l_sql VARCHAR2(4000 CHAR) := in_tpl;
   BEGIN
      IF in_suffix IS NOT NULL THEN
         l_sql := REPLACE(l_sql, '#TAB#', kg_table(in_sid, in_suffix));
      END IF;
      l_sql := REPLACE(l_sql, '#EVENT#', kg_table(in_sid, 'EVENT'));
      l_sql := REPLACE(l_sql, '#ENT#', kg_table(in_sid, 'ENTITY'));
      l_sql := REPLACE(l_sql, '#LINK#', kg_table(in_sid, 'FACT_ENTITY_LINK'));
      l_sql := REPLACE(l_sql, '#FACT#', kg_table(in_sid, 'FACT'));
      l_sql := REPLACE(l_sql, '#REL#', kg_table(in_sid, 'RELATIONSHIP'));
      l_sql := REPLACE(l_sql, '#INT#', kg_table(in_sid, 'INTENTION'));
      l_sql := REPLACE(l_sql, '#OBS#', kg_table(in_sid, 'META_OBSERVATION'));
      l_sql := REPLACE(l_sql, '#AGENT#', kg_table(in_sid, 'AGENT'));
      RETURN l_sql;
   END sql_for;

   -- Days from in_from to in_to, at least 0 (scoring._days).
   FUNCTION days_between(
      in_from IN TIMESTAMP,
      in_to   IN TIMESTAMP
   ) RETURN NUMBER
   IS
      l_gap INTERVAL DAY(9) TO SECOND(6);
   BEGIN
      l_gap := in_to - in_from;
      RETURN GREATEST(0, EXTRACT(DAY FROM l_gap) + EXTRACT(HOUR FROM l_gap) / 24
                         + EXTRACT(MINUTE FROM l_gap) / 1440 + EXTRACT(SECOND FROM l_gap) / 86400);
   END days_between;

   FUNCTION clip01(
      in_x IN NUMBER
   ) RETURN NUMBER
   IS
   BEGIN
      RETURN LEAST(1, GREATEST(0, in_x));
   END clip01;

   -- uuid-formatted id (8-4-4-4-12, version nibble 4, variant 8..b) from SYS_GUID.
   FUNCTION new_id RETURN VARCHAR2
   IS
      l_hex VARCHAR2(32 CHAR) := LOWER(RAWTOHEX(SYS_GUID()));
   BEGIN
      RETURN SUBSTR(l_hex, 1, 8) || '-' || SUBSTR(l_hex, 9, 4) || '-4' || SUBSTR(l_hex, 14, 3) || '-'
             || LOWER(TO_CHAR(MOD(TO_NUMBER(SUBSTR(l_hex, 17, 1), 'X'), 4) + 8, 'FMX'))
             || SUBSTR(l_hex, 18, 3) || '-' || SUBSTR(l_hex, 21, 12);
   END new_id;

   -- KC-7.5: the agent's KG_AGENT row, created when missing, locked until commit.
   PROCEDURE lock_agent(
      in_sid      IN VARCHAR2,
      in_agent_id IN VARCHAR2
   )
   IS
      l_dummy VARCHAR2(1024 CHAR);
   BEGIN
      BEGIN
         EXECUTE IMMEDIATE sql_for(gc_tpl_agent_ins, in_sid) USING in_agent_id, in_agent_id;
      EXCEPTION
         WHEN DUP_VAL_ON_INDEX THEN
            NULL;   -- inserted concurrently
      END;
      EXECUTE IMMEDIATE sql_for(gc_tpl_agent_lock, in_sid) INTO l_dummy USING in_agent_id;
   END lock_agent;

   -- min-max normalisation of in_values over in_keys (missing = 0; .5 when all equal).
   FUNCTION min_max(
      in_keys   IN vc_tab_t,
      in_values IN num_map_t
   ) RETURN num_map_t
   IS
      l_out num_map_t;
      l_lo  NUMBER;
      l_hi  NUMBER;
      l_v   NUMBER;
   BEGIN
      FOR i IN 1 .. in_keys.COUNT LOOP
         l_v := CASE WHEN in_values.EXISTS(in_keys(i)) THEN in_values(in_keys(i)) ELSE 0 END;
         l_lo := CASE WHEN l_lo IS NULL THEN l_v ELSE LEAST(l_lo, l_v) END;
         l_hi := CASE WHEN l_hi IS NULL THEN l_v ELSE GREATEST(l_hi, l_v) END;
      END LOOP;
      FOR i IN 1 .. in_keys.COUNT LOOP
         l_v := CASE WHEN in_values.EXISTS(in_keys(i)) THEN in_values(in_keys(i)) ELSE 0 END;
         l_out(in_keys(i)) := CASE WHEN l_hi = l_lo THEN 0.5 ELSE (l_v - l_lo) / (l_hi - l_lo) END;
      END LOOP;
      RETURN l_out;
   END min_max;

   -- Rows of a two-column (key, number) query as a map.
   FUNCTION key_counts(
      in_sql   IN VARCHAR2,
      in_agent IN VARCHAR2,
      in_user  IN VARCHAR2,
      in_binds IN PLS_INTEGER
   ) RETURN num_map_t
   IS
      l_keys vc_tab_t;
      l_vals num_tab_t;
      l_out  num_map_t;
   BEGIN
      IF in_binds = 2 THEN
         EXECUTE IMMEDIATE in_sql BULK COLLECT INTO l_keys, l_vals USING in_agent, in_user, in_agent, in_user;
      ELSE
         EXECUTE IMMEDIATE in_sql BULK COLLECT INTO l_keys, l_vals USING in_agent, in_user;
      END IF;
      FOR i IN 1 .. l_keys.COUNT LOOP
         IF l_keys(i) IS NOT NULL THEN
            l_out(l_keys(i)) := CASE WHEN l_out.EXISTS(l_keys(i)) THEN l_out(l_keys(i)) ELSE 0 END + NVL(l_vals(i), 0);
         END IF;
      END LOOP;
      RETURN l_out;
   END key_counts;

   ---------------------------------------------------------------------------------------
   -- KC-6.6 entity importance (jobs.score_entity_importance)
   ---------------------------------------------------------------------------------------
   PROCEDURE entity_importance(
      in_sid   IN VARCHAR2,
      in_agent IN VARCHAR2,
      in_user  IN VARCHAR2,
      in_now   IN TIMESTAMP
   )
   IS
      l_keys   vc_tab_t;
      l_seen   ts_tab_t;
      l_scores num_tab_t;
      l_agents vc_tab_t;
      l_users  vc_tab_t;
      l_rec    num_map_t;
      l_nd     num_map_t;
      l_nr     num_map_t;
      l_nf     num_map_t;
      l_ng     num_map_t;
   BEGIN
      EXECUTE IMMEDIATE sql_for(gc_tpl_ents, in_sid) BULK COLLECT INTO l_keys, l_seen USING in_agent, in_user;
      IF l_keys.COUNT = 0 THEN
         RETURN;
      END IF;
      FOR i IN 1 .. l_keys.COUNT LOOP
         l_rec(l_keys(i)) := EXP(-gc_ln2 * days_between(l_seen(i), in_now) / gc_importance_halflife_days);
      END LOOP;
      l_nd := min_max(l_keys, key_counts(sql_for(gc_tpl_density, in_sid), in_agent, in_user, 1));
      l_nr := min_max(l_keys, l_rec);
      l_nf := min_max(l_keys, key_counts(sql_for(gc_tpl_retrieved, in_sid), in_agent, in_user, 1));
      l_ng := min_max(l_keys, key_counts(sql_for(gc_tpl_degree, in_sid), in_agent, in_user, 2));
      FOR i IN 1 .. l_keys.COUNT LOOP
         l_scores(i) := clip01(0.30 * l_nd(l_keys(i)) + 0.25 * l_nr(l_keys(i))
                               + 0.25 * l_nf(l_keys(i)) + 0.20 * l_ng(l_keys(i)));
         l_agents(i) := in_agent;
         l_users(i) := in_user;
      END LOOP;
      FORALL i IN 1 .. l_keys.COUNT
         EXECUTE IMMEDIATE sql_for(gc_tpl_set_importance, in_sid) USING l_scores(i), l_agents(i), l_users(i), l_keys(i);
   END entity_importance;

   ---------------------------------------------------------------------------------------
   -- KC-6.5 memify steps 1-3 and 5 (jobs.memify without _merges)
   ---------------------------------------------------------------------------------------
   -- Rewrite kg_is_stale in the metadata of the fact's store record (KC-3.5), through the
   -- store package so the store's own rules apply. A missing (expired) record is skipped.
   PROCEDURE sync_stale_metadata(
      in_sid     IN VARCHAR2,
      in_fact_id IN VARCHAR2,
      in_stale   IN PLS_INTEGER
   )
   IS
      l_rec  CLOB;
      l_obj  JSON_OBJECT_T;
      l_meta JSON_OBJECT_T;
      l_req  JSON_OBJECT_T := JSON_OBJECT_T();
      l_done PLS_INTEGER;
      l_agent VARCHAR2(1024 CHAR);
      l_user  VARCHAR2(1024 CHAR);
      l_other PLS_INTEGER;
   BEGIN
      l_rec := oramem_store.get_json(in_store_id => in_sid, in_record_type => 'fact', in_record_id => in_fact_id);
      IF l_rec IS NULL THEN
         RETURN;
      END IF;
      l_obj := JSON_OBJECT_T.parse(l_rec);
      -- only the fact row's own record, of the same agent and user (commit.update_fact_record):
      -- store ids are unique per record type only and callers choose them, so another user's
      -- fact record under the row's id is not the row's and gets none of its state (the
      -- record object has every key, null when unset: a null one stays NULL here)
      IF l_obj.has('agent_id') AND NOT l_obj.get('agent_id').is_null THEN
         l_agent := l_obj.get_string('agent_id');
      END IF;
      IF l_obj.has('user_id') AND NOT l_obj.get('user_id').is_null THEN
         l_user := l_obj.get_string('user_id');
      END IF;
      EXECUTE IMMEDIATE sql_for(gc_tpl_hk_other_scope, in_sid, 'FACT')
         INTO l_other USING in_fact_id, l_agent, l_user;
      IF l_other > 0 THEN
         RETURN;
      END IF;
      IF l_obj.has('metadata') AND l_obj.get('metadata').is_object THEN
         l_meta := l_obj.get_object('metadata');
      ELSE
         l_meta := JSON_OBJECT_T();
      END IF;
      l_meta.put('kg_is_stale', in_stale = 1);
      l_req.put('record_type', 'fact');
      l_req.put('record_id', in_fact_id);
      l_req.put('metadata', l_meta);
      l_done := oramem_store.update_json(in_store_id => in_sid, in_request => l_req.to_clob());
   END sync_stale_metadata;

   PROCEDURE memify(
      in_sid   IN VARCHAR2,
      in_agent IN VARCHAR2,
      in_now   IN TIMESTAMP
   )
   IS
      l_ids       vc_tab_t;
      l_retrieved num_tab_t;
      l_last_ret  ts_tab_t;
      l_ingested  ts_tab_t;
      l_conf      num_tab_t;
      l_reinf     num_tab_t;
      l_corr      num_tab_t;
      l_imp       num_tab_t;
      l_sensitive num_tab_t;
      l_stale     num_tab_t;
      l_v         num_tab_t;
      l_changed   vc_tab_t;
      l_changed_s num_tab_t;
      l_rec       NUMBER;
      l_new       PLS_INTEGER;
   BEGIN
      -- steps 1 and 2: vitality and stale flags of every current fact
      EXECUTE IMMEDIATE sql_for(gc_tpl_facts, in_sid)
         BULK COLLECT INTO l_ids, l_retrieved, l_last_ret, l_ingested, l_conf, l_reinf, l_corr, l_imp, l_sensitive, l_stale
         USING in_agent;
      FOR i IN 1 .. l_ids.COUNT LOOP
         IF l_last_ret(i) IS NOT NULL THEN
            l_rec := EXP(-gc_ln2 * days_between(l_last_ret(i), in_now) / 30);
         ELSE
            l_rec := EXP(-gc_ln2 * days_between(l_ingested(i), in_now) / 90);
         END IF;
         l_v(i) := clip01((0.30 * LEAST(1, LN(1 + GREATEST(0, NVL(l_retrieved(i), 0))) / gc_ln11)
                           + 0.25 * l_rec
                           + 0.20 * l_conf(i)
                           + 0.15 * LEAST(1, GREATEST(0, NVL(l_reinf(i), 0)) / 5))
                          * POWER(0.8, LEAST(GREATEST(0, NVL(l_corr(i), 0)), 5)));
         l_new := l_stale(i);
         IF l_v(i) < gc_vitality_stale_threshold AND NOT (l_imp(i) >= 0.8 OR l_sensitive(i) = 1) AND l_stale(i) = 0 THEN
            l_new := 1;
         ELSIF l_v(i) >= gc_vitality_stale_threshold AND l_stale(i) = 1 THEN
            l_new := 0;
         END IF;
         IF l_new <> l_stale(i) THEN
            l_changed(l_changed.COUNT + 1) := l_ids(i);
            l_changed_s(l_changed_s.COUNT + 1) := l_new;
         END IF;
         l_stale(i) := l_new;
      END LOOP;
      FORALL i IN 1 .. l_ids.COUNT
         EXECUTE IMMEDIATE sql_for(gc_tpl_set_vitality, in_sid) USING l_v(i), l_stale(i), l_ids(i);
      -- step 3: edges; updated_at is the watermark, so a rerun changes nothing
      EXECUTE IMMEDIATE sql_for(gc_tpl_edges_up, in_sid) USING in_now, in_agent;
      EXECUTE IMMEDIATE sql_for(gc_tpl_edges_decay, in_sid)
         USING in_now, in_agent, in_now - NUMTODSINTERVAL(90, 'DAY');
      -- step 5: intentions past due plus the expiry days
      EXECUTE IMMEDIATE sql_for(gc_tpl_intentions, in_sid)
         USING in_agent, in_now - NUMTODSINTERVAL(gc_intention_expiry_days, 'DAY');
      -- store metadata of the facts whose flag changed
      FOR i IN 1 .. l_changed.COUNT LOOP
         sync_stale_metadata(in_sid, l_changed(i), l_changed_s(i));
      END LOOP;
   END memify;

   ---------------------------------------------------------------------------------------
   -- KC-5.13 emotional trends (procedural.emotional_trends)
   ---------------------------------------------------------------------------------------
   -- Letter runs of 3+ characters of norm(in_text) that are not stop words, counted; the
   -- first gc_text_chars characters of the event text.
   -- DECOMPOSE may return "a few times" its input and silently truncates what exceeds the
   -- VARCHAR2 maximum (SQL Language Reference 23, DECOMPOSE; a CLOB argument is converted
   -- to VARCHAR2 first). So the text is decomposed in pieces of at most gc_word_piece_chars
   -- characters, each ending after its last blank when more text follows (a word is never
   -- split, unless it is longer than a piece): a character decomposes (NFKD) into at most
   -- 33 UTF-8 bytes (U+FDFA; a test computes the maximum), and LOWER at most adds half
   -- (2-byte letters with 3-byte lower case), so a piece stays under 32767 bytes.
   -- Offsets are in the CLOB's characters, UCS-2 code points (a supplementary character
   -- counts 2), hence LENGTH2 to advance.
   PROCEDURE count_words(
      in_text  IN CLOB,
      io_words IN OUT NOCOPY word_map_t
   )
   IS
      l_end   INTEGER;
      l_off   INTEGER := 1;
      l_piece VARCHAR2(32767);
      l_cut   PLS_INTEGER;
      l_word  VARCHAR2(4000 CHAR);
      l_pos   PLS_INTEGER;
   BEGIN
      IF in_text IS NULL THEN
         RETURN;
      END IF;
      l_end := LEAST(DBMS_LOB.GETLENGTH(in_text), gc_text_chars);
      WHILE l_off <= l_end LOOP
         l_piece := DBMS_LOB.SUBSTR(in_text, LEAST(gc_word_piece_chars, l_end - l_off + 1), l_off);
         EXIT WHEN l_piece IS NULL;
         IF l_off + LENGTH2(l_piece) <= l_end THEN
            -- more text follows: end the piece after its last blank (none: keep it whole)
            l_cut := REGEXP_INSTR(l_piece, '[[:space:]][^[:space:]]*$');
            IF l_cut > 0 THEN
               l_piece := SUBSTR(l_piece, 1, l_cut);
            END IF;
         END IF;
         l_off := l_off + LENGTH2(l_piece);
         l_piece := LOWER(REGEXP_REPLACE(DECOMPOSE(l_piece, 'COMPATIBILITY'),
                                         '[' || UNISTR('\0300') || '-' || UNISTR('\036F') || ']', ''));
         l_pos := 1;
         LOOP
            l_word := REGEXP_SUBSTR(l_piece, '[[:alpha:]]{3,}', 1, l_pos);
            EXIT WHEN l_word IS NULL;
            IF INSTR(gc_stopwords, ' ' || l_word || ' ') = 0 THEN
               io_words(l_word) := CASE WHEN io_words.EXISTS(l_word) THEN io_words(l_word) ELSE 0 END + 1;
            END IF;
            l_pos := l_pos + 1;
         END LOOP;
      END LOOP;
   END count_words;

   PROCEDURE emotional_trends(
      in_sid   IN VARCHAR2,
      in_agent IN VARCHAR2,
      in_user  IN VARCHAR2,
      in_now   IN TIMESTAMP
   )
   IS
      l_ids      vc_tab_t;
      l_texts    clob_tab_t;
      l_emotions vc_tab_t;
      l_intens   num_tab_t;
      l_energies vc_tab_t;
      l_counts   num_map_t;
      l_sums     num_map_t;
      l_energy_n num_map_t;
      l_words    word_map_t;
      l_n        PLS_INTEGER;
      l_half     PLS_INTEGER;
      l_first    PLS_INTEGER := 0;
      l_second   PLS_INTEGER := 0;
      l_dom      VARCHAR2(1024 CHAR);
      l_emo      VARCHAR2(1024 CHAR);
      l_word     VARCHAR2(4000 CHAR);
      l_best     VARCHAR2(4000 CHAR);
      l_dir      VARCHAR2(16 CHAR);
      l_energy   VARCHAR2(1024 CHAR) := 'medium';
      l_top      NUMBER;
      l_modes    PLS_INTEGER;
      -- CLOBs: the three trigger words are unbounded (a word is up to 4000 characters), and
      -- the observation text they go into is a CLOB column (review F12, no VARCHAR2 growth)
      l_keywords CLOB;
      l_title    VARCHAR2(1024 CHAR);
      l_text     CLOB;
      l_support  JSON_ARRAY_T := JSON_ARRAY_T();
      l_top3     word_map_t;        -- the trigger keywords (keys)
      l_ev_words word_map_t;        -- one intense event's words (keys)
      l_hit      BOOLEAN;
      l_recent   VARCHAR2(36 CHAR);
      l_id       VARCHAR2(36 CHAR);
   BEGIN
      EXECUTE IMMEDIATE sql_for(gc_tpl_trend_events, in_sid)
         BULK COLLECT INTO l_ids, l_texts, l_emotions, l_intens, l_energies
         USING in_agent, in_user, in_now - NUMTODSINTERVAL(gc_trend_window_days, 'DAY'), in_now;
      l_n := l_ids.COUNT;
      IF l_n = 0 OR l_n < gc_trend_min_events THEN
         RETURN;   -- nothing is written below the minimum (Python returns the counts only)
      END IF;
      FOR i IN 1 .. l_n LOOP
         l_counts(l_emotions(i)) := CASE WHEN l_counts.EXISTS(l_emotions(i)) THEN l_counts(l_emotions(i)) ELSE 0 END + 1;
         l_sums(l_emotions(i)) := CASE WHEN l_sums.EXISTS(l_emotions(i)) THEN l_sums(l_emotions(i)) ELSE 0 END
                                  + NVL(l_intens(i), 0);
      END LOOP;
      -- dominant: most events, then the higher mean intensity, then the smaller label
      l_emo := l_counts.FIRST;
      WHILE l_emo IS NOT NULL LOOP
         IF l_dom IS NULL
            OR l_counts(l_emo) > l_counts(l_dom)
            OR (l_counts(l_emo) = l_counts(l_dom)
                AND (l_sums(l_emo) / l_counts(l_emo) > l_sums(l_dom) / l_counts(l_dom)
                     OR (l_sums(l_emo) / l_counts(l_emo) = l_sums(l_dom) / l_counts(l_dom) AND l_emo < l_dom)))
         THEN
            l_dom := l_emo;
         END IF;
         l_emo := l_counts.NEXT(l_emo);
      END LOOP;
      l_half := TRUNC(l_n / 2);
      FOR i IN 1 .. l_half LOOP
         IF l_emotions(i) = l_dom THEN
            l_first := l_first + 1;
         END IF;
      END LOOP;
      IF l_half > 0 THEN
         FOR i IN l_n - l_half + 1 .. l_n LOOP
            IF l_emotions(i) = l_dom THEN
               l_second := l_second + 1;
            END IF;
         END LOOP;
      END IF;
      l_dir := CASE WHEN l_second > l_first THEN 'increasing' WHEN l_second < l_first THEN 'decreasing' ELSE 'stable' END;
      -- trigger keywords: the 3 most frequent words of intense (>= .7) events, then a-z
      FOR i IN 1 .. l_n LOOP
         IF NVL(l_intens(i), 0) >= 0.7 THEN
            count_words(l_texts(i), l_words);
         END IF;
      END LOOP;
      FOR k IN 1 .. 3 LOOP
         l_best := NULL;
         l_word := l_words.FIRST;
         WHILE l_word IS NOT NULL LOOP
            IF l_best IS NULL OR l_words(l_word) > l_words(l_best)
               OR (l_words(l_word) = l_words(l_best) AND l_word < l_best) THEN
               l_best := l_word;
            END IF;
            l_word := l_words.NEXT(l_word);
         END LOOP;
         EXIT WHEN l_best IS NULL;
         l_keywords := l_keywords || CASE WHEN k > 1 THEN ', ' END || l_best;
         l_top3(l_best) := 1;
         l_words.DELETE(l_best);
      END LOOP;
      -- energy: the single most frequent energy of the dominant emotion's events, else medium
      FOR i IN 1 .. l_n LOOP
         IF l_emotions(i) = l_dom AND l_energies(i) IS NOT NULL THEN
            l_energy_n(l_energies(i)) := CASE WHEN l_energy_n.EXISTS(l_energies(i)) THEN l_energy_n(l_energies(i)) ELSE 0 END + 1;
         END IF;
      END LOOP;
      l_emo := l_energy_n.FIRST;
      WHILE l_emo IS NOT NULL LOOP
         l_top := GREATEST(NVL(l_top, 0), l_energy_n(l_emo));
         l_emo := l_energy_n.NEXT(l_emo);
      END LOOP;
      l_modes := 0;
      l_emo := l_energy_n.FIRST;
      WHILE l_emo IS NOT NULL LOOP
         IF l_energy_n(l_emo) = l_top THEN
            l_modes := l_modes + 1;
            l_energy := l_emo;
         END IF;
         l_emo := l_energy_n.NEXT(l_emo);
      END LOOP;
      IF l_modes <> 1 THEN
         l_energy := 'medium';
      END IF;
      l_title := SUBSTR('Emotional trend: ' || l_dom || ' (' || l_dir || ')', 1, 256);
      l_text := 'Mostly ' || l_dom || ' over the last ' || TO_CHAR(gc_trend_window_days) || ' days ('
                || TO_CHAR(l_counts(l_dom)) || ' of ' || TO_CHAR(l_n) || ' events, intensity '
                || TO_CHAR(l_sums(l_dom) / l_counts(l_dom), 'FM9990.00') || ', energy ' || l_energy || ', ' || l_dir || ')'
                || CASE WHEN l_keywords IS NOT NULL THEN '; triggers: ' || l_keywords END;
      -- supporting ids: the newest 50 events, and every intense event that said one of the
      -- trigger keywords the text quotes (an erasure takes the observation through them,
      -- KC-3.10; a keyword may come from an older event; procedural.emotional_trends, red35)
      FOR i IN 1 .. l_n LOOP
         l_hit := i > l_n - 50;
         IF NOT l_hit AND NVL(l_intens(i), 0) >= 0.7 AND l_top3.COUNT > 0 THEN
            l_ev_words.DELETE;
            count_words(l_texts(i), l_ev_words);
            l_word := l_top3.FIRST;
            WHILE l_word IS NOT NULL AND NOT l_hit LOOP
               l_hit := l_ev_words.EXISTS(l_word);
               l_word := l_top3.NEXT(l_word);
            END LOOP;
         END IF;
         IF l_hit THEN
            l_support.append(l_ids(i));
         END IF;
      END LOOP;
      BEGIN
         EXECUTE IMMEDIATE sql_for(gc_tpl_trend_recent, in_sid) INTO l_recent
            USING in_agent, in_user, in_now - NUMTODSINTERVAL(24, 'HOUR');
      EXCEPTION
         WHEN NO_DATA_FOUND THEN
            l_recent := NULL;
      END;
      IF l_recent IS NOT NULL THEN
         EXECUTE IMMEDIATE sql_for(gc_tpl_trend_reinforce, in_sid)
            USING in_now, l_title, l_text, l_support.to_clob(), l_recent;
         RETURN;
      END IF;
      EXECUTE IMMEDIATE sql_for(gc_tpl_trend_retire, in_sid) USING in_agent, in_user;
      l_id := new_id;
      EXECUTE IMMEDIATE sql_for(gc_tpl_trend_insert, in_sid)
         USING l_id, in_agent, in_user, l_title, l_text, l_support.to_clob(), gc_empty_ids, in_now, in_now, in_now;
   END emotional_trends;

   ---------------------------------------------------------------------------------------
   -- one agent: the three jobs, each isolated by a savepoint; then commit
   ---------------------------------------------------------------------------------------
   PROCEDURE run_agent(
      in_sid   IN VARCHAR2,
      in_agent IN VARCHAR2
   )
   IS
      l_now   TIMESTAMP(6) := oramem_registry.utc_now;
      l_users vc_tab_t;
   BEGIN
      lock_agent(in_sid, in_agent);
      -- KC-6.0: importance and trends per scope (the shared knowledge and each user's), so
      -- no score or trend text of one scope is built from another scope's rows
      EXECUTE IMMEDIATE sql_for(gc_tpl_scopes, in_sid) BULK COLLECT INTO l_users USING in_agent, in_agent;
      FOR u IN 1 .. l_users.COUNT LOOP
         SAVEPOINT kg_job_importance;
         BEGIN
            entity_importance(in_sid, in_agent, l_users(u), l_now);
         EXCEPTION
            WHEN OTHERS THEN
               oramem_errors.log_error('oramem_kg_jobs.entity_importance', in_sid);
               ROLLBACK TO kg_job_importance;
         END;
         SAVEPOINT kg_job_trends;
         BEGIN
            emotional_trends(in_sid, in_agent, l_users(u), l_now);
         EXCEPTION
            WHEN OTHERS THEN
               oramem_errors.log_error('oramem_kg_jobs.emotional_trends', in_sid);
               ROLLBACK TO kg_job_trends;
         END;
      END LOOP;
      SAVEPOINT kg_job_memify;
      BEGIN
         memify(in_sid, in_agent, l_now);
      EXCEPTION
         WHEN OTHERS THEN
            oramem_errors.log_error('oramem_kg_jobs.memify', in_sid);
            ROLLBACK TO kg_job_memify;
      END;
      COMMIT;
   END run_agent;

   ---------------------------------------------------------------------------------------
   -- public
   ---------------------------------------------------------------------------------------
   PROCEDURE run_deterministic(
      in_store_id IN VARCHAR2,
      in_agent_id IN VARCHAR2 DEFAULT NULL
   )
   IS
      l_sid    VARCHAR2(128 CHAR) := store_key(in_store_id);
      l_agents vc_tab_t;
   BEGIN
      IF in_agent_id IS NOT NULL THEN
         IF LENGTH(in_agent_id) > gc_max_agent THEN
            oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
               'in_agent_id is longer than 256 characters');
         END IF;
         l_agents(1) := in_agent_id;
      ELSE
         EXECUTE IMMEDIATE sql_for(gc_tpl_agents, l_sid) BULK COLLECT INTO l_agents;
      END IF;
      FOR i IN 1 .. l_agents.COUNT LOOP
         run_agent(l_sid, l_agents(i));
      END LOOP;
   END run_deterministic;

   PROCEDURE run_job(
      in_store_id IN VARCHAR2
   )
   IS
   BEGIN
      run_deterministic(in_store_id => in_store_id, in_agent_id => NULL);
   END run_job;

   FUNCTION has_knowledge(
      in_store_id IN VARCHAR2
   ) RETURN PLS_INTEGER
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = store_key(in_store_id) || '_KG_EVENT';
      RETURN LEAST(l_count, 1);
   END has_knowledge;

   FUNCTION job_name(
      in_store_id IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN DBMS_ASSERT.SIMPLE_SQL_NAME('ORAMEM_KG_' || store_key(in_store_id));
   END job_name;

   FUNCTION job_exists(
      in_job IN VARCHAR2
   ) RETURN BOOLEAN
   IS
      l_count PLS_INTEGER;
   BEGIN
      SELECT COUNT(*) INTO l_count FROM user_scheduler_jobs WHERE job_name = in_job;
      RETURN l_count > 0;
   END job_exists;

   PROCEDURE install_scheduler(
      in_store_id    IN VARCHAR2,
      in_every_hours IN PLS_INTEGER DEFAULT 4
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_sid   VARCHAR2(128 CHAR) := store_key(in_store_id);
      l_job   VARCHAR2(128 CHAR) := job_name(in_store_id);
      l_count PLS_INTEGER;
   BEGIN
      IF in_every_hours IS NULL OR in_every_hours < 1 OR in_every_hours > 168 THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'in_every_hours must be an integer from 1 to 168');
      END IF;
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = l_sid || '_KG_FACT';
      IF l_count = 0 THEN
         oramem_errors.raise_error(oramem_errors.gc_store_not_found,
            'store ' || l_sid || ' has no knowledge tables (' || l_sid || '_KG_*); open it with KnowledgeMemory first');
      END IF;
      IF job_exists(l_job) THEN
         BEGIN
            DBMS_SCHEDULER.DROP_JOB(job_name => l_job, force => TRUE);
         EXCEPTION
            WHEN e_job_missing THEN
               NULL;   -- dropped concurrently
         END;
      END IF;
      -- STORED_PROCEDURE + argument: no caller text inside job_action (ORACLE_NOTES 8.1)
      DBMS_SCHEDULER.CREATE_JOB(
         job_name            => l_job,
         job_type            => 'STORED_PROCEDURE',
         job_action          => 'ORAMEM_KG_JOBS.RUN_JOB',
         number_of_arguments => 1,
         start_date          => SYSTIMESTAMP,
         repeat_interval     => 'FREQ=HOURLY;INTERVAL=' || TO_CHAR(in_every_hours, 'FM999'),
         enabled             => FALSE,
         auto_drop           => FALSE,
         comments            => 'oramem deterministic knowledge jobs of store ' || l_sid);
      DBMS_SCHEDULER.SET_JOB_ARGUMENT_VALUE(job_name => l_job, argument_position => 1, argument_value => l_sid);
      DBMS_SCHEDULER.ENABLE(l_job);
      COMMIT;
   EXCEPTION
      WHEN OTHERS THEN
         ROLLBACK;
         RAISE;
   END install_scheduler;

   PROCEDURE drop_scheduler(
      in_store_id IN VARCHAR2
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_job VARCHAR2(128 CHAR) := job_name(in_store_id);
   BEGIN
      IF job_exists(l_job) THEN
         BEGIN
            DBMS_SCHEDULER.DROP_JOB(job_name => l_job, force => TRUE);
         EXCEPTION
            WHEN e_job_missing THEN
               NULL;   -- dropped concurrently
         END;
      END IF;
      COMMIT;
   END drop_scheduler;
   ---------------------------------------------------------------------------------------
   -- deletion hook (KnowledgeMemory._deletion_hook on SQLite)
   ---------------------------------------------------------------------------------------
   PROCEDURE on_store_delete(
      in_event IN CLOB
   )
   IS
      l_doc     JSON_OBJECT_T;
      l_arr     JSON_ARRAY_T;
      l_pair    JSON_ARRAY_T;
      l_sid     VARCHAR2(128 CHAR);
      l_count   PLS_INTEGER;
      l_facts   vc_tab_t;
      l_msgs    vc_tab_t;
      l_tmp     vc_tab_t;
      l_tmp2    vc_tab_t;
      TYPE sfx_t IS VARRAY(11) OF VARCHAR2(30 CHAR);
      l_sfx     CONSTANT sfx_t := sfx_t('FACT_ENTITY_LINK', 'RELATIONSHIP', 'ENTITY_ALIAS', 'FACT', 'EVENT',
                                         'ENTITY', 'CLUSTER', 'META_OBSERVATION', 'ATTRIBUTE_REGISTRY',
                                         'INTENTION', 'SESSION_OBSERVATION');
      l_owners  word_map_t;         -- agent ids of deleted facts (keys)
      l_keys    word_map_t;         -- agent_id || CHR(0) || entity_key of touched entities
      l_gone    word_map_t;         -- deleted fact ids
      l_obs_ids vc_tab_t;
      l_obs_sup clob_tab_t;
      l_sup     JSON_ARRAY_T;
      l_changed BOOLEAN;          -- the observation cites a deleted fact
      l_key     VARCHAR2(4000 CHAR);
      l_now     TIMESTAMP(6) := oramem_registry.utc_now;
      l_scoped  BOOLEAN;            -- an actor's cascade (gc_hk_of_removed)
      l_by_user PLS_INTEGER := 0;
      l_by_agt  PLS_INTEGER := 0;
      l_users   CLOB := TO_CLOB('[]');
      l_agents  CLOB := TO_CLOB('[]');
      l_scopes  JSON_ARRAY_T;       -- the records' owners (make_event), parallel to records
      l_scope   JSON_OBJECT_T;
      l_r_agent VARCHAR2(1024 CHAR);
      l_r_user  VARCHAR2(1024 CHAR);
      l_other   PLS_INTEGER;
   BEGIN
      IF in_event IS NULL THEN
         RETURN;
      END IF;
      l_doc := JSON_OBJECT_T.parse(in_event);
      -- a forget's knowledge rows are the knowledge layer's eraser's (oramem.knowledge.deletes
      -- .erase, which the driver runs next in this transaction; forget refuses to run without
      -- it on a store with knowledge tables). It matches what cites her events and facts (the
      -- facts learned from her messages, clusters, observations) while they are still here,
      -- as the SQLite hook does for a forget; deleting or unsourcing them first hid those rows
      -- from it. So a forget deletes nothing here; nor does a profile cascade whose caller
      -- runs that eraser next (oramem_store.delete_record_json in_reason 'erase': the event
      -- says "knowledge": "caller"), for the same reason: its erase_cascade finds the
      -- observations and clusters citing her events and facts before they go.
      IF l_doc.get_string('reason') = 'forget'
         OR (l_doc.has('knowledge') AND l_doc.get_string('knowledge') = 'caller')
      THEN
         RETURN;
      END IF;
      l_scoped := NVL(l_doc.get_string('reason'), 'delete') = 'cascade';
      IF l_scoped AND l_doc.get_array('user_ids') IS NOT NULL AND l_doc.get_array('user_ids').get_size > 0 THEN
         l_by_user := 1;
         l_users := l_doc.get_array('user_ids').to_clob;
      END IF;
      IF l_scoped AND l_doc.get_array('agent_ids') IS NOT NULL AND l_doc.get_array('agent_ids').get_size > 0 THEN
         l_by_agt := 1;
         l_agents := l_doc.get_array('agent_ids').to_clob;
      END IF;
      l_sid := store_key(l_doc.get_string('memory_store_id'));
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = l_sid || '_KG_FACT';
      IF l_count = 0 THEN
         RETURN;   -- no knowledge layer on this store
      END IF;

      -- records: [[record_type, record_id], ...]; scopes: [{"agent_id", "user_id"}, ...], the
      -- owner of each record (a key missing for NULL). Ids are unique per record type only and
      -- callers may choose them, so a fact / event row goes only with its own record, of the
      -- same agent and user (deletes._own_rows); an event without scopes matches by id alone.
      l_arr := l_doc.get_array('records');
      IF l_doc.has('scopes') THEN
         l_scopes := l_doc.get_array('scopes');
      END IF;
      IF l_arr IS NOT NULL THEN
         IF l_scopes IS NOT NULL AND l_scopes.get_size <> l_arr.get_size THEN
            l_scopes := NULL;
         END IF;
         FOR i IN 0 .. l_arr.get_size - 1 LOOP
            l_pair := TREAT(l_arr.get(i) AS JSON_ARRAY_T);
            l_other := 0;
            IF l_scopes IS NOT NULL AND l_pair.get_string(0) IN ('fact', 'message') THEN
               l_scope := TREAT(l_scopes.get(i) AS JSON_OBJECT_T);
               l_r_agent := NULL;
               l_r_user := NULL;
               IF l_scope.has('agent_id') THEN
                  l_r_agent := l_scope.get_string('agent_id');
               END IF;
               IF l_scope.has('user_id') THEN
                  l_r_user := l_scope.get_string('user_id');
               END IF;
               EXECUTE IMMEDIATE sql_for(gc_tpl_hk_other_scope, l_sid,
                                         CASE l_pair.get_string(0) WHEN 'fact' THEN 'FACT' ELSE 'EVENT' END)
                  INTO l_other USING l_pair.get_string(1), l_r_agent, l_r_user;
            END IF;
            IF l_other > 0 THEN
               NULL;   -- another scope's row under the id: not this record's
            ELSIF l_pair.get_string(0) = 'fact' THEN
               l_facts(l_facts.COUNT + 1) := l_pair.get_string(1);
            ELSIF l_pair.get_string(0) = 'message' THEN
               l_msgs(l_msgs.COUNT + 1) := l_pair.get_string(1);
            END IF;
         END LOOP;
      END IF;

      -- 1. facts (KnowledgeMemory._purge_facts)
      FOR i IN 1 .. l_facts.COUNT LOOP
         l_gone(l_facts(i)) := 1;
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_clear_summary, l_sid) USING l_facts(i);
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_clear_cluster, l_sid, 'CLUSTER') USING l_facts(i);
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_links, l_sid)
            USING l_facts(i) RETURNING BULK COLLECT INTO l_tmp, l_tmp2;
         FOR j IN 1 .. l_tmp.COUNT LOOP
            l_keys(l_tmp(j) || CHR(0) || l_tmp2(j)) := 1;
         END LOOP;
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_rel, l_sid) USING l_facts(i);
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_unsupersede, l_sid)
            USING l_facts(i);
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_fact, l_sid)
            USING l_facts(i) RETURNING BULK COLLECT INTO l_tmp;
         FOR j IN 1 .. l_tmp.COUNT LOOP
            l_owners(l_tmp(j)) := 1;
         END LOOP;
      END LOOP;
      l_key := l_owners.FIRST;
      WHILE l_key IS NOT NULL LOOP
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_obs, l_sid)
            BULK COLLECT INTO l_obs_ids, l_obs_sup USING l_key;
         FOR j IN 1 .. l_obs_ids.COUNT LOOP
            l_sup := JSON_ARRAY_T.parse(l_obs_sup(j));
            l_changed := FALSE;
            FOR k IN 0 .. l_sup.get_size - 1 LOOP
               IF l_sup.get_string(k) IS NOT NULL AND l_gone.EXISTS(l_sup.get_string(k)) THEN
                  l_changed := TRUE;
               END IF;
            END LOOP;
            IF l_changed THEN   -- it cites a deleted fact: it goes (obs47)
               EXECUTE IMMEDIATE sql_for(gc_tpl_hk_obs_del, l_sid)
                  USING l_obs_ids(j);
            END IF;
         END LOOP;
         l_key := l_owners.NEXT(l_key);
      END LOOP;
      -- fact_count = distinct current, unexpired linked facts (commit.recount)
      l_key := l_keys.FIRST;
      WHILE l_key IS NOT NULL LOOP
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_recount, l_sid)
            USING l_now, SUBSTR(l_key, 1, INSTR(l_key, CHR(0)) - 1), SUBSTR(l_key, INSTR(l_key, CHR(0)) + 1);
         l_key := l_keys.NEXT(l_key);
      END LOOP;

      -- the queued background writes (<ID>_KG_JOB, oramem/knowledge/queue.py) exist on stores
      -- whose knowledge tables were created since issue 16
      SELECT COUNT(*) INTO l_count FROM user_tables WHERE table_name = l_sid || '_KG_JOB';

      -- 2. events: deleted messages and the events of deleted threads; a deleted thread's
      -- queued background writes go too (processed later they would bring it back)
      -- (an actor's event without an actor takes nothing of the threads' other rows)
      l_arr := l_doc.get_array('thread_ids');
      IF l_arr IS NOT NULL AND NOT (l_scoped AND l_by_user = 0 AND l_by_agt = 0) THEN
         FOR i IN 0 .. l_arr.get_size - 1 LOOP
            EXECUTE IMMEDIATE sql_for(gc_tpl_hk_thread_events, l_sid)
               BULK COLLECT INTO l_tmp USING l_arr.get_string(i), l_by_user, l_users, l_by_agt, l_agents;
            FOR j IN 1 .. l_tmp.COUNT LOOP
               l_msgs(l_msgs.COUNT + 1) := l_tmp(j);
            END LOOP;
            -- what was noted in the deleted conversation goes with it (the SQLite hook's
            -- rule): its session observations and the intentions extracted in it
            EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_session, l_sid, 'SESSION_OBSERVATION')
               USING l_arr.get_string(i), l_by_user, l_users, l_by_agt, l_agents;
            EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_session_int, l_sid)
               USING l_arr.get_string(i), l_by_user, l_users, l_by_agt, l_agents;
            IF l_count > 0 THEN
               EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_session, l_sid, 'JOB')
                  USING l_arr.get_string(i), l_by_user, l_users, l_by_agt, l_agents;
            END IF;
         END LOOP;
      END IF;
      FOR i IN 1 .. l_msgs.COUNT LOOP
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_unsource, l_sid)
            USING l_msgs(i);
         EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_event, l_sid) USING l_msgs(i);
      END LOOP;

      -- 3. deleted agents: every row of the agent (KGTables.all_agent_tables order)
      l_arr := l_doc.get_array('agent_ids');
      IF l_arr IS NOT NULL THEN
         -- the agent's queued background writes go too (l_count: the queue table exists)
         FOR i IN 0 .. l_arr.get_size - 1 LOOP
            FOR t IN 1 .. l_sfx.COUNT LOOP
               EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_agent, l_sid, l_sfx(t))
                  USING l_arr.get_string(i);
            END LOOP;
            IF l_count > 0 THEN
               EXECUTE IMMEDIATE sql_for(gc_tpl_hk_del_agent, l_sid, 'JOB')
                  USING l_arr.get_string(i);
            END IF;
         END LOOP;
      END IF;
   END on_store_delete;

END oramem_kg_jobs;
/
