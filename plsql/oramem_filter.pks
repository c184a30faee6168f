CREATE OR REPLACE PACKAGE oramem_filter
AUTHID DEFINER
AS
   /*
    * oramem_filter: compiles an SC-9 metadata filter (JSON object) into a SQL condition
    * made of JSON_EXISTS / JSON_EQUAL predicates over a record table's METADATA column,
    * with every value bound (ORACLE_NOTES 7.2-7.4) and keys validated and quoted.
    * The caller executes the statement with DBMS_SQL and calls bind_all.
    *
    * Grammar (SC-9):
    *   filter  := { entry, ... }                      -- entries ANDed
    *   entry   := "$and": [filter, ...] | "$or": [filter, ...]      (non-empty lists)
    *            | key: value                          -- exact match
    *            | key: {op: arg, ...}                 -- operator dict (ops ANDed)
    *            | key: {key: value, ...}              -- nested subset match (recursive)
    *   op      := $eq $ne $gt $gte $lt $lte $in $nin $exists $not
    *              $array_contains $array_contains_any
    *   key     := a literal object key (".": part of the key, not a path separator): any
    *              non-empty string, as in the SQLite engine. It is written into the SQL/JSON
    *              path as the quoted field name ."key" with JSON string escapes for '"', '\'
    *              and U+0000-U+001F, and a doubled single quote for the SQL literal (S6);
    *              a path longer than gc_max_path_bytes fails with -20004.
    * Semantics:
    *   - scalar exact match / $eq: same JSON type and value; a stored array never equals a
    *     scalar; null matches JSON null only (not a missing key).
    *   - list exact match: same length and order (JSON_EQUAL).
    *   - $ne / $nin / $not: logical negation of $eq / $in / the inner expression, so they
    *     MATCH records whose field is missing (SC-9.2).
    *   - $gt..$lte: numbers compare numerically, strings (ISO dates) as strings; a field
    *     of the other type does not match.
    *   - numbers inside NUMBER's range are bound as NUMBER; others (1e300, -1e-300) as a
    *     BINARY_DOUBLE, so they compare as doubles instead of overflowing or becoming 0 (S7).
    *   - $exists: true/false, key presence (JSON null counts as present).
    *   - $array_contains v: field is an array containing v (v a list: all present);
    *     $array_contains_any [..]: non-empty list, at least one present.
    * Limits: depth 32 (object levels, as oramem.filters), gc_max_nodes nodes (operators,
    * values, objects and list elements: at most one bind each), string / list values
    * <= 4000 bytes and JSON paths of at most gc_max_path_bytes; past any of them -20004
    * with a message that says what to shorten. The compiled condition is a CLOB with no byte
    * cap of its own (review S4: a 16,000-byte cap refused filters SQLite accepts); callers
    * build their statements in CLOBs and parse them with DBMS_SQL (PARSE takes a CLOB).
    * $and / $or are accepted at the root of a filter (also inside $and/$or lists).
    * List elements of $in / $nin / $array_contains(_any) must be scalars.
    */

   TYPE bind_t IS RECORD (
      name     VARCHAR2(30 CHAR),     -- placeholder without the colon, e.g. 'f3'
      kind     VARCHAR2(1 CHAR),      -- 'S' VARCHAR2 (also a double's JSON text), 'N' NUMBER, 'J' JSON text, 'C' CLOB
      str_val  VARCHAR2(4000 CHAR),
      num_val  NUMBER,
      clob_val CLOB              -- kind 'C' only (query vectors, hybrid requests)
   );
   TYPE bind_list_t IS TABLE OF bind_t INDEX BY PLS_INTEGER;

   gc_max_depth      CONSTANT PLS_INTEGER := 32;
   -- One bind per value at most: a bound on the binds of one statement and on its parse,
   -- far above what the SQLite engine's callers send (S4: 256 refused a 152-value $in).
   gc_max_nodes      CONSTANT PLS_INTEGER := 65535;
   -- A JSON path is a SQL text literal: 4000 bytes with MAX_STRING_SIZE = STANDARD.
   gc_max_path_bytes CONSTANT PLS_INTEGER := 4000;

   /*
    * compile_filter: SQL condition text (a CLOB) for in_filter applied to column in_column
    * (e.g. 'r.metadata'; must match ^[a-z][a-z0-9_]{0,29}\.[a-z][a-z0-9_]{0,29}$).
    * Appends its binds to io_binds, named 'f<n>' with n continuing io_binds.COUNT, and
    * returns '(1 = 1)' for NULL or an empty object.
    * Errors: -20004 invalid filter (the message names the offending key or operator);
    *         -20001 bad in_column.
    * Commit: never (pure function).
    */
   FUNCTION compile_filter(
      in_filter  IN CLOB,
      in_column  IN VARCHAR2,
      io_binds   IN OUT NOCOPY bind_list_t
   ) RETURN CLOB;

   /*
    * bind_all: DBMS_SQL.BIND_VARIABLE of every element of in_binds on the parsed
    * cursor in_cursor (':' || name).
    * Errors: ORA-01006 when the statement lacks a placeholder (programming error).
    */
   PROCEDURE bind_all(
      in_cursor IN INTEGER,
      in_binds  IN bind_list_t
   );

   /*
    * scope_condition: SQL condition for one scope dimension (SC-6.2, SC-3.3) over the
    * record row aliased in_alias (^[a-z][a-z0-9_]{0,29}$):
    *   in_dimension  'thread' | 'user' | 'agent'
    *   in_match      'any' (returns NULL: no condition) | 'equals' | 'is_null'
    *   in_value      the value for 'equals' (bound, appended to io_binds)
    * Effective columns, as the SQLite engine: thread reads thread_id (a profile has
    * none, so it matches thread is_null and never thread = v); user reads the record_id
    * of a user_profile (never NULL) and user_id of every other record; agent likewise
    * with agent_profile. in_raw = 1 (list_json, N6): the raw user_id / agent_id column,
    * as the SQLite engine's list (records.py, profiles=False), so the scope indexes apply.
    * Errors: -20001 bad dimension/match/alias, or 'equals' with a NULL value;
    *         -20002 a value with a match other than 'equals' (never ignored as 'any').
    */
   FUNCTION scope_condition(
      in_dimension IN VARCHAR2,
      in_match     IN VARCHAR2,
      in_value     IN VARCHAR2,
      in_alias     IN VARCHAR2,
      io_binds     IN OUT NOCOPY bind_list_t,
      in_raw       IN PLS_INTEGER DEFAULT 0
   ) RETURN VARCHAR2;

   /*
    * query_clob: run in_sql - a query returning one row with one CLOB column - with
    * DBMS_SQL, binding in_binds by name, and return that CLOB (NULL for no row). The
    * cursor is closed on every path. Used by oramem_store and oramem_search so that
    * filters with any number of binds run as one statement.
    * Errors: whatever the statement raises (re-raised unchanged).
    */
   FUNCTION query_clob(
      in_sql   IN CLOB,
      in_binds IN bind_list_t
   ) RETURN CLOB;

   /*
    * validate_filter: compile in_filter and discard the result (for early validation).
    * Errors: -20004.
    */
   PROCEDURE validate_filter(
      in_filter IN CLOB
   );

   /*
    * check_keys: refuse a request member that the call would not read (red32). in_known
    * is the comma-separated list of the member names the call reads ('record_type,limit,
    * thread,user,agent,metadata_filter'); a member of in_obj not in it (or whose name holds
    * a comma) is -20002 naming it, in_what (the payload) and what is accepted, before
    * anything is read: an ignored member would run the call without what it asked for
    * ("user_id": ... in a list or search request, the spelling of the add batch and of
    * the record object, listed and searched every user's records; the Python API refuses
    * an unknown argument name with a TypeError).
    * Errors: -20002.
    * Commit: never (pure check).
    */
   PROCEDURE check_keys(
      in_obj   IN JSON_OBJECT_T,
      in_known IN VARCHAR2,
      in_what  IN VARCHAR2
   );
END oramem_filter;
/
