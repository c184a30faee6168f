-- oramem knowledge layer: Oracle DDL of the 11 <STORE_ID>_KG_* tables, the KG_AGENT lock table and the
-- KG_JOB extraction queue (oramem/knowledge/jobs/queue.py; claimed with SELECT ... FOR UPDATE SKIP LOCKED)
-- (KNOWLEDGE_CONTRACT KC-3.1, KC-3.3, KC-3.4), for the default store (memory_store_id DEFAULT)
-- and vector_dim 384. Idempotent: CREATE ... IF NOT EXISTS (Oracle Database 23ai and later).
-- Generated from oramem/knowledge/db/schema.py by oracle_ddl("DEFAULT", 384); a test checks that this
-- file equals the generator's output. Other stores/dimensions: oramem.knowledge.db.schema.oracle_ddl(id, dim).

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_AGENT" (
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	last_write_at TIMESTAMP, 
	PRIMARY KEY (agent_id)
);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_ATTRIBUTE_REGISTRY" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	key VARCHAR2(64 CHAR) NOT NULL, 
	status VARCHAR2(20 CHAR) DEFAULT 'proposed' NOT NULL, 
	value_type VARCHAR2(20 CHAR) DEFAULT 'string' NOT NULL, 
	conflict_policy VARCHAR2(20 CHAR) DEFAULT 'supersede' NOT NULL, 
	ttl_days INTEGER, 
	seen_count INTEGER DEFAULT 0 NOT NULL, 
	proposed_by VARCHAR2(20 CHAR) DEFAULT 'llm' NOT NULL, 
	reason CLOB, 
	first_seen_at TIMESTAMP NOT NULL, 
	last_seen_at TIMESTAMP NOT NULL, 
	example_raw_key VARCHAR2(128 CHAR), 
	created_at TIMESTAMP NOT NULL, 
	updated_at TIMESTAMP, 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_REGISTRY_UK" UNIQUE (agent_id, key)
);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_CLUSTER" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	label VARCHAR2(128 CHAR) NOT NULL, 
	summary_text CLOB, 
	cluster_type VARCHAR2(32 CHAR) DEFAULT 'auto' NOT NULL, 
	fact_count INTEGER DEFAULT 0 NOT NULL, 
	importance FLOAT DEFAULT 0.5 NOT NULL, 
	embedding_vec VECTOR(384, FLOAT32), 
	is_active BOOLEAN DEFAULT TRUE NOT NULL, 
	last_updated_at TIMESTAMP NOT NULL, 
	created_at TIMESTAMP NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_ENTITY" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	canonical_key VARCHAR2(128 CHAR) NOT NULL, 
	display_name VARCHAR2(256 CHAR), 
	entity_type VARCHAR2(32 CHAR) NOT NULL, 
	summary_text CLOB, 
	embedding_vec VECTOR(384, FLOAT32), 
	fact_count INTEGER DEFAULT 0 NOT NULL, 
	importance_score FLOAT, 
	is_active BOOLEAN DEFAULT TRUE NOT NULL, 
	first_seen_at TIMESTAMP NOT NULL, 
	last_seen_at TIMESTAMP NOT NULL, 
	summary_refreshed_at TIMESTAMP, 
	created_at TIMESTAMP NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_ENTITY_UK" UNIQUE (agent_id, user_id, canonical_key)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_ENTITY_AGT_TYPE_IX" ON "DEFAULT_KG_ENTITY" (agent_id, entity_type);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_ENTITY_ALIAS" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	alias VARCHAR2(256 CHAR) NOT NULL, 
	canonical_entity_key VARCHAR2(128 CHAR) NOT NULL, 
	canonical_entity_type VARCHAR2(32 CHAR) NOT NULL, 
	created_at TIMESTAMP NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_ALIAS_UK" UNIQUE (agent_id, user_id, alias)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_ALIAS_KEY_IX" ON "DEFAULT_KG_ENTITY_ALIAS" (agent_id, canonical_entity_key);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_EVENT" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	occurred_at TIMESTAMP NOT NULL, 
	text CLOB NOT NULL, 
	source VARCHAR2(64 CHAR) DEFAULT 'api' NOT NULL, 
	importance FLOAT DEFAULT 0.5 NOT NULL, 
	embedding_vec VECTOR(384, FLOAT32), 
	trace_json JSON, 
	created_at TIMESTAMP NOT NULL, 
	emotion_primary VARCHAR2(32 CHAR), 
	emotion_intensity FLOAT, 
	energy_level VARCHAR2(16 CHAR), 
	session_id VARCHAR2(256 CHAR), 
	speaker VARCHAR2(256 CHAR), 
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_EVENT_AGT_OCC_IX" ON "DEFAULT_KG_EVENT" (agent_id, occurred_at);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_EVENT_AGT_USR_OCC_IX" ON "DEFAULT_KG_EVENT" (agent_id, user_id, occurred_at);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_FACT" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	entity_type VARCHAR2(32 CHAR) NOT NULL, 
	entity_key VARCHAR2(128 CHAR) NOT NULL, 
	entity_name VARCHAR2(256 CHAR), 
	attribute_key VARCHAR2(64 CHAR), 
	fact_text CLOB NOT NULL, 
	category VARCHAR2(50 CHAR), 
	confidence FLOAT DEFAULT 0.8 NOT NULL, 
	importance FLOAT DEFAULT 0.5 NOT NULL, 
	is_sensitive BOOLEAN DEFAULT FALSE NOT NULL, 
	valid_from TIMESTAMP NOT NULL, 
	valid_to TIMESTAMP, 
	ttl_days INTEGER, 
	source_event_id VARCHAR2(36 CHAR), 
	supersedes_fact_id VARCHAR2(36 CHAR), 
	embedding_vec VECTOR(384, FLOAT32), 
	vitality_score FLOAT, 
	is_stale BOOLEAN DEFAULT FALSE NOT NULL, 
	cluster_id VARCHAR2(36 CHAR), 
	value_json JSON, 
	needs_confirmation BOOLEAN DEFAULT FALSE NOT NULL, 
	last_confirmed_at TIMESTAMP, 
	times_retrieved INTEGER DEFAULT 0 NOT NULL, 
	last_retrieved_at TIMESTAMP, 
	user_correction_count INTEGER DEFAULT 0 NOT NULL, 
	source_context VARCHAR2(512 CHAR), 
	agent_annotation CLOB, 
	created_at TIMESTAMP NOT NULL, 
	ingested_at TIMESTAMP NOT NULL, 
	invalidated_at TIMESTAMP, 
	speaker VARCHAR2(256 CHAR), 
	reinforcement_count INTEGER DEFAULT 0 NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_AGT_ENT_ATTR_IX" ON "DEFAULT_KG_FACT" (agent_id, entity_key, attribute_key, valid_to);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_AGT_ENT_RANK_IX" ON "DEFAULT_KG_FACT" (agent_id, entity_key, importance DESC, valid_from DESC, id);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_AGT_ENT_VF_IX" ON "DEFAULT_KG_FACT" (agent_id, entity_key, valid_from DESC, id);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_AGT_ENT_VT_IX" ON "DEFAULT_KG_FACT" (agent_id, entity_key, valid_to);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_EVENT_IX" ON "DEFAULT_KG_FACT" (source_event_id);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_ID_CUR_IX" ON "DEFAULT_KG_FACT" (id, valid_to, invalidated_at, ttl_days);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_FACT_SUPERSEDES_IX" ON "DEFAULT_KG_FACT" (supersedes_fact_id);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_FACT_ENTITY_LINK" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	fact_id VARCHAR2(36 CHAR) NOT NULL, 
	entity_key VARCHAR2(128 CHAR) NOT NULL, 
	is_primary BOOLEAN DEFAULT FALSE NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_LINK_UK" UNIQUE (fact_id, entity_key)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_LINK_AGT_ENT_IX" ON "DEFAULT_KG_FACT_ENTITY_LINK" (agent_id, entity_key);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_LINK_FACT_IX" ON "DEFAULT_KG_FACT_ENTITY_LINK" (fact_id);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_INTENTION" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	trigger_type VARCHAR2(16 CHAR) NOT NULL, 
	trigger_condition CLOB NOT NULL, 
	intended_action CLOB NOT NULL, 
	due_date TIMESTAMP, 
	status VARCHAR2(16 CHAR) DEFAULT 'pending' NOT NULL, 
	trigger_embedding_vec VECTOR(384, FLOAT32), 
	source_context VARCHAR2(256 CHAR), 
	outcome_note CLOB, 
	created_at TIMESTAMP NOT NULL, 
	triggered_at TIMESTAMP, 
	fulfilled_at TIMESTAMP, 
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_INTENTION_AGT_ST_IX" ON "DEFAULT_KG_INTENTION" (agent_id, status, due_date);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_JOB" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	event_id VARCHAR2(36 CHAR) NOT NULL, 
	kind VARCHAR2(16 CHAR) DEFAULT 'write' NOT NULL, 
	status VARCHAR2(16 CHAR) DEFAULT 'pending' NOT NULL, 
	session_id VARCHAR2(256 CHAR), 
	payload_json JSON NOT NULL, 
	attempts INTEGER DEFAULT 0 NOT NULL, 
	max_attempts INTEGER DEFAULT 5 NOT NULL, 
	available_at TIMESTAMP NOT NULL, 
	lease_until TIMESTAMP, 
	worker_id VARCHAR2(128 CHAR), 
	last_error CLOB, 
	result_json JSON, 
	created_at TIMESTAMP NOT NULL, 
	updated_at TIMESTAMP NOT NULL, 
	finished_at TIMESTAMP, 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_JOB_EVENT_UK" UNIQUE (event_id)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_JOB_AGT_ST_IX" ON "DEFAULT_KG_JOB" (agent_id, status);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_JOB_ST_AVAIL_IX" ON "DEFAULT_KG_JOB" (status, available_at);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_META_OBSERVATION" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	observation_type VARCHAR2(32 CHAR) NOT NULL, 
	title VARCHAR2(256 CHAR) NOT NULL, 
	text CLOB NOT NULL, 
	supporting_event_ids JSON DEFAULT '[]' NOT NULL, 
	supporting_fact_ids JSON DEFAULT '[]' NOT NULL, 
	confidence FLOAT DEFAULT 0.7 NOT NULL, 
	importance FLOAT DEFAULT 0.5 NOT NULL, 
	times_reinforced INTEGER DEFAULT 0 NOT NULL, 
	is_active BOOLEAN DEFAULT TRUE NOT NULL, 
	embedding_vec VECTOR(384, FLOAT32), 
	first_detected_at TIMESTAMP NOT NULL, 
	last_reinforced_at TIMESTAMP NOT NULL, 
	created_at TIMESTAMP NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_RELATIONSHIP" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	source_entity_key VARCHAR2(128 CHAR) NOT NULL, 
	target_entity_key VARCHAR2(128 CHAR) NOT NULL, 
	rel_type VARCHAR2(64 CHAR) NOT NULL, 
	strength FLOAT DEFAULT 0.8 NOT NULL, 
	evidence_fact_id VARCHAR2(36 CHAR), 
	provenance VARCHAR2(16 CHAR) DEFAULT 'llm' NOT NULL, 
	valid_from TIMESTAMP NOT NULL, 
	valid_to TIMESTAMP, 
	created_at TIMESTAMP NOT NULL, 
	updated_at TIMESTAMP NOT NULL, 
	last_used_at TIMESTAMP, 
	invalidated_at TIMESTAMP, 
	PRIMARY KEY (id), 
	CONSTRAINT "DEFAULT_KG_REL_UK" UNIQUE (agent_id, user_id, source_entity_key, target_entity_key, rel_type)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_REL_AGT_TGT_IX" ON "DEFAULT_KG_RELATIONSHIP" (agent_id, target_entity_key);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_REL_EVIDENCE_IX" ON "DEFAULT_KG_RELATIONSHIP" (evidence_fact_id);

CREATE TABLE IF NOT EXISTS "DEFAULT_KG_SESSION_OBSERVATION" (
	id VARCHAR2(36 CHAR) NOT NULL, 
	agent_id VARCHAR2(256 CHAR) NOT NULL, 
	user_id VARCHAR2(255 CHAR), 
	content CLOB NOT NULL, 
	topic VARCHAR2(64 CHAR), 
	entities_mentioned JSON DEFAULT '[]' NOT NULL, 
	created_at TIMESTAMP NOT NULL, 
	referenced_at TIMESTAMP, 
	relative_offset VARCHAR2(64 CHAR), 
	source_message_ids JSON DEFAULT '[]' NOT NULL, 
	is_active BOOLEAN DEFAULT TRUE NOT NULL, 
	merged_into_id VARCHAR2(36 CHAR), 
	emotion_label VARCHAR2(32 CHAR), 
	embedding_vec VECTOR(384, FLOAT32), 
	session_id VARCHAR2(256 CHAR), 
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS "DEFAULT_KG_SESSOBS_AGT_SES_IX" ON "DEFAULT_KG_SESSION_OBSERVATION" (agent_id, session_id, is_active);
