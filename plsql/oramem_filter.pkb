CREATE OR REPLACE PACKAGE BODY oramem_filter
AS
   g_nodes   PLS_INTEGER := 0;
   g_column  VARCHAR2(61 CHAR);

   e_json_syntax EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_json_syntax, -40441);

   PROCEDURE fail(
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      oramem_errors.raise_error(oramem_errors.gc_invalid_filter, 'metadata_filter: ' || in_message);
   END fail;

   FUNCTION where_of(
      in_where IN VARCHAR2,
      in_key   IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      RETURN SUBSTR(CASE WHEN in_where IS NULL THEN in_key ELSE in_where || '.' || in_key END, 1, 400);
   END where_of;

   -- Every operator, value, object and list element is one node (S4: list elements count;
   -- the bound is on binds, not on SQL bytes).
   PROCEDURE count_node
   IS
   BEGIN
      g_nodes := g_nodes + 1;
      IF g_nodes > gc_max_nodes THEN
         fail('filter has more than ' || gc_max_nodes || ' nodes (operators, values and list '
              || 'elements); split it into several calls or use fewer values');
      END IF;
   END count_node;

   -- Depth counts object levels once, as oramem.filters (S11): the root object is 0, a
   -- nested object or an operator dict under $not one more than its parent.
   PROCEDURE check_depth(
      in_depth IN PLS_INTEGER
   )
   IS
   BEGIN
      IF in_depth > gc_max_depth THEN
         fail('filter is nested deeper than ' || gc_max_depth || ' levels');
      END IF;
   END check_depth;

   -- in_left || in_sep || in_right as a CLOB (review S4): the compiled condition has no byte
   -- cap of its own (it used to be refused past 16,000 bytes, filters SQLite accepts); the
   -- statements around it are CLOBs too (DBMS_SQL.PARSE takes a CLOB statement), and a
   -- filter is bounded by gc_max_nodes (one bind per value).
   FUNCTION cat(
      in_left  IN CLOB,
      in_sep   IN VARCHAR2,
      in_right IN CLOB
   ) RETURN CLOB
   IS
   BEGIN
      RETURN in_left || in_sep || in_right;
   END cat;

   -- S6: in_path followed by the ."key" step of in_key. A field name in double quotation marks
   -- may hold any Unicode character (JSON Developer's Guide, json_field_name: '"' unicode_character
   -- ... '"'); it is written as the body of a JSON string (RFC 8259): '"' and '\' as \" and \\,
   -- U+0000-U+001F as \b \f \n \r \t or \u00XX, every other character as itself (what
   -- json.dumps(key, ensure_ascii=False) writes). A single quote is doubled because the path sits in
   -- a SQL text literal (SQL Language Reference, Text Literals). The step is appended with a checked
   -- bound: past gc_max_path_bytes the filter fails with -20004 before the buffer can overflow.
   FUNCTION path_step(
      in_path  IN VARCHAR2,
      in_key   IN VARCHAR2,
      in_where IN VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_out   VARCHAR2(32767) := in_path || '."';
      l_ch    VARCHAR2(4 CHAR);
      l_code  PLS_INTEGER;
      l_piece VARCHAR2(8 CHAR);
   BEGIN
      IF in_key IS NULL THEN
         fail('empty key at ' || NVL(in_where, 'top level'));
      END IF;
      FOR i IN 1 .. LENGTH(in_key) LOOP
         l_ch   := SUBSTR(in_key, i, 1);
         l_code := ASCII(l_ch);   -- below 128 only for a one-byte (ASCII) character
         l_piece := CASE
                       WHEN l_ch = '"'     THEN '\"'
                       WHEN l_ch = '\'     THEN '\\'
                       WHEN l_ch = ''''    THEN ''''''
                       WHEN l_code = 8     THEN '\b'
                       WHEN l_code = 9     THEN '\t'
                       WHEN l_code = 10    THEN '\n'
                       WHEN l_code = 12    THEN '\f'
                       WHEN l_code = 13    THEN '\r'
                       WHEN l_code < 32    THEN '\u00' || SUBSTR('0123456789ABCDEF', TRUNC(l_code / 16) + 1, 1)
                                                 || SUBSTR('0123456789ABCDEF', MOD(l_code, 16) + 1, 1)
                       ELSE l_ch
                    END;
         IF LENGTHB(l_out) + LENGTHB(l_piece) + 1 > gc_max_path_bytes THEN
            fail('the JSON path of ' || NVL(in_where, 'a key') || ' is longer than '
                 || gc_max_path_bytes || ' bytes; use shorter keys or less nesting');
         END IF;
         l_out := l_out || l_piece;  -- bounded: checked against gc_max_path_bytes just above
      END LOOP;
      RETURN l_out || '"';
   END path_step;

   FUNCTION add_bind(
      io_binds IN OUT NOCOPY bind_list_t,
      in_kind  IN VARCHAR2,
      in_str   IN VARCHAR2,
      in_num   IN NUMBER
   ) RETURN PLS_INTEGER
   IS
      l_n PLS_INTEGER := io_binds.COUNT + 1;
   BEGIN
      io_binds(l_n).name    := 'f' || l_n;
      io_binds(l_n).kind    := in_kind;
      io_binds(l_n).str_val := in_str;
      io_binds(l_n).num_val := in_num;
      RETURN l_n;
   END add_bind;

   -- JSON_EXISTS over the metadata column; in_path holds only validated keys and fixed text.
   FUNCTION exists_sql(
      in_path    IN VARCHAR2,
      in_passing IN VARCHAR2
   ) RETURN VARCHAR2
   IS
   BEGIN
      -- the path is a SQL text literal: at most 4000 bytes (MAX_STRING_SIZE = STANDARD)
      IF LENGTHB(in_path) > gc_max_path_bytes THEN
         fail('a condition''s JSON path is longer than ' || gc_max_path_bytes
              || ' bytes; use shorter keys or less nesting');
      END IF;
      RETURN 'JSON_EXISTS(' || g_column || ', ''' || in_path || '''' || in_passing || ')';
   END exists_sql;

   -- Two-valued negation: NULL/UNKNOWN inner results count as "does not match".
   FUNCTION negate(
      in_cond IN CLOB
   ) RETURN CLOB
   IS
   BEGIN
      RETURN '(CASE WHEN ' || in_cond || ' THEN 0 ELSE 1 END = 1)';
   END negate;

   FUNCTION type_guard(
      in_item IN VARCHAR2,
      in_elem IN JSON_ELEMENT_T
   ) RETURN VARCHAR2
   IS
   BEGIN
      IF in_elem.is_string THEN
         RETURN in_item || '.type() == "string"';
      ELSIF in_elem.is_number THEN
         RETURN '(' || in_item || '.type() == "number" || ' || in_item || '.type() == "double" || '
                || in_item || '.type() == "float")';
      ELSIF in_elem.is_boolean THEN
         RETURN in_item || '.type() == "boolean"';
      ELSE
         RETURN in_item || '.type() == "null"';
      END IF;
   END type_guard;

   -- S7: TRUE when the JSON number text in_txt is zero or lies inside Oracle NUMBER's range
   -- with a decade of margin at each end for rounding to 38 digits (NUMBER holds 1E-130 <= |x|
   -- < 1E126, SQL Language Reference, NUMBER Data Type). Reads the text only (sign, digits,
   -- exponent), so nothing is converted and no NLS setting matters.
   FUNCTION fits_number(
      in_txt IN VARCHAR2
   ) RETURN BOOLEAN
   IS
      l_txt    VARCHAR2(400 CHAR) := LTRIM(TRIM(in_txt), '-');
      l_e      PLS_INTEGER := INSTR(UPPER(l_txt), 'E');
      l_mant   VARCHAR2(400 CHAR) := l_txt;
      l_exp    NUMBER := 0;
      l_dot    PLS_INTEGER;
      l_int    PLS_INTEGER;   -- digits before the decimal point
      l_first  PLS_INTEGER;   -- position of the first non-zero digit
   BEGIN
      IF l_e > 0 THEN
         l_mant := SUBSTR(l_txt, 1, l_e - 1);
         l_exp  := TO_NUMBER(LTRIM(SUBSTR(l_txt, l_e + 1), '+'));  -- an integer: no NLS
      END IF;
      l_dot   := INSTR(l_mant, '.');
      l_int   := CASE WHEN l_dot > 0 THEN l_dot - 1 ELSE LENGTH(l_mant) END;
      l_first := REGEXP_INSTR(REPLACE(l_mant, '.'), '[1-9]');
      IF l_first = 0 THEN
         RETURN TRUE;   -- 0, -0, 0.0e5: zero
      END IF;
      -- the leading digit stands for 10^(l_int - l_first + l_exp)
      RETURN l_int - l_first + l_exp BETWEEN -129 AND 124;
   END fits_number;

   -- "<item> <op> <value>" for one scalar value; binds strings/numbers, literals for
   -- true/false/null. out_passing receives the PASSING clause (or NULL).
   FUNCTION scalar_compare(
      in_item      IN VARCHAR2,
      in_op        IN VARCHAR2,
      in_elem      IN JSON_ELEMENT_T,
      in_where     IN VARCHAR2,
      io_binds     IN OUT NOCOPY bind_list_t,
      out_passing  OUT VARCHAR2
   ) RETURN VARCHAR2
   IS
      l_arr  JSON_ARRAY_T := JSON_ARRAY_T();
      l_str  VARCHAR2(32767);
      l_n    PLS_INTEGER;
   BEGIN
      out_passing := NULL;
      l_arr.append(in_elem);
      IF in_elem.is_string THEN
         -- N9: over 4000 characters it is over 4000 bytes; checked on the CLOB form before
         -- get_string, whose VARCHAR2 would fail with a raw error past 32,767 bytes
         IF DBMS_LOB.GETLENGTH(l_arr.get_clob(0)) > 4000 THEN
            fail('value of ' || in_where || ' is longer than 4000 bytes');
         END IF;
         l_str := l_arr.get_string(0);
         IF LENGTHB(l_str) > 4000 THEN
            fail('value of ' || in_where || ' is longer than 4000 bytes');
         END IF;
         -- '' is NULL in Oracle; a NULL VARCHAR2 in PASSING binds the empty JSON string ""
         -- (JSON Developer's Guide 23ai, "PASSING Clause for SQL Functions and Conditions"; S13)
         l_n := add_bind(io_binds, 'S', l_str, NULL);
      ELSIF in_elem.is_number THEN
         -- S7: the number as JSON text ('[1e+300]'), never through get_number for a value NUMBER
         -- cannot hold (1e300 overflows, -1e-300 would become 0)
         l_str := DBMS_LOB.SUBSTR(l_arr.to_clob, 402, 1);
         IF LENGTH(l_str) > 400 THEN
            fail('number of ' || in_where || ' is longer than 400 characters');
         END IF;
         IF NOT fits_number(SUBSTR(l_str, 2, LENGTH(l_str) - 2)) THEN
            -- outside NUMBER's range: bound as its JSON text and read by the SQL engine as a
            -- BINARY_DOUBLE (PASSING takes a SQL expression; JSON_VALUE RETURNING BINARY_DOUBLE;
            -- BINARY_DOUBLE is a PASSING type: JSON Developer's Guide 23ai, JSON_EXISTS and
            -- "PASSING Clause"), compared as a double as the SQLite engine does
            l_n := add_bind(io_binds, 'S', l_str, NULL);
            out_passing := ' PASSING JSON_VALUE(:f' || l_n || ', ''$[0]'' RETURNING BINARY_DOUBLE '
                           || 'ERROR ON ERROR) AS "v' || l_n || '"';
            RETURN '(' || type_guard(in_item, in_elem) || ' && ' || in_item || ' ' || in_op || ' $v'
                   || l_n || ')';
         END IF;
         l_n := add_bind(io_binds, 'N', NULL, l_arr.get_number(0));
      ELSIF in_elem.is_boolean AND in_op IN ('==', '!=') THEN
         RETURN '(' || type_guard(in_item, in_elem) || ' && ' || in_item || ' ' || in_op || ' '
                || CASE WHEN l_arr.get_boolean(0) THEN 'true' ELSE 'false' END || ')';
      ELSIF in_elem.is_null AND in_op = '==' THEN
         RETURN type_guard(in_item, in_elem);
      ELSE
         fail(in_where || ': operator needs a number or a string here');
      END IF;
      out_passing := ' PASSING :f' || l_n || ' AS "v' || l_n || '"';
      RETURN '(' || type_guard(in_item, in_elem) || ' && ' || in_item || ' ' || in_op || ' $v' || l_n || ')';
   END scalar_compare;

   -- Exact match / comparison of the field at in_path with a scalar.
   FUNCTION scalar_leaf(
      in_path  IN VARCHAR2,
      in_op    IN VARCHAR2,
      in_elem  IN JSON_ELEMENT_T,
      in_where IN VARCHAR2,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN VARCHAR2
   IS
      l_passing VARCHAR2(200 CHAR);
      l_cond    VARCHAR2(32767);
   BEGIN
      l_cond := scalar_compare('@' || in_path, in_op, in_elem, in_where, io_binds, l_passing);
      RETURN exists_sql('$?(' || l_cond || ')', l_passing);
   END scalar_leaf;

   -- Exact match of a list or object value (same length and order for lists).
   FUNCTION nonscalar_equal(
      in_path  IN VARCHAR2,
      in_elem  IN JSON_ELEMENT_T,
      in_where IN VARCHAR2,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN VARCHAR2
   IS
      l_clob CLOB;
      l_txt  VARCHAR2(32767);  -- 4000 characters can be up to 16000 bytes (S12)
      l_n    PLS_INTEGER;
   BEGIN
      l_clob := in_elem.to_clob;
      IF DBMS_LOB.GETLENGTH(l_clob) > 4000 THEN
         fail('value of ' || in_where || ' is longer than 4000 characters');
      END IF;
      l_txt := DBMS_LOB.SUBSTR(l_clob, 4000, 1);
      IF LENGTHB(l_txt) > 4000 THEN
         fail('value of ' || in_where || ' is longer than 4000 bytes');
      END IF;
      IF LENGTHB(in_path) + 1 > gc_max_path_bytes THEN
         fail('the JSON path of ' || in_where || ' is longer than ' || gc_max_path_bytes
              || ' bytes; use shorter keys or less nesting');
      END IF;
      l_n := add_bind(io_binds, 'J', l_txt, NULL);
      RETURN '(CASE WHEN JSON_EQUAL(JSON_QUERY(' || g_column || ', ''$' || in_path
             || ''' RETURNING CLOB NULL ON ERROR), :f' || l_n || ') THEN 1 ELSE 0 END = 1)';
   END nonscalar_equal;

   -- The field at in_path is an array holding the scalar in_elem.
   FUNCTION contains_one(
      in_path  IN VARCHAR2,
      in_elem  IN JSON_ELEMENT_T,
      in_where IN VARCHAR2,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN VARCHAR2
   IS
      l_passing VARCHAR2(200 CHAR);
      l_cond    VARCHAR2(32767);
   BEGIN
      IF in_elem.is_object OR in_elem.is_array THEN
         fail(in_where || ': array tests take scalar values');
      END IF;
      l_cond := scalar_compare('@', '==', in_elem, in_where, io_binds, l_passing);
      RETURN '(' || exists_sql('$?(@' || in_path || '.type() == "array")', NULL)
             || ' AND ' || exists_sql('$' || in_path || '[*]?(' || l_cond || ')', l_passing) || ')';
   END contains_one;

   FUNCTION scalar_list(
      in_elem  IN JSON_ELEMENT_T,
      in_where IN VARCHAR2,
      in_op    IN VARCHAR2
   ) RETURN JSON_ARRAY_T
   IS
      l_arr JSON_ARRAY_T;
   BEGIN
      IF NOT in_elem.is_array THEN
         fail(in_where || ': ' || in_op || ' takes a non-empty list');
      END IF;
      l_arr := TREAT(in_elem AS JSON_ARRAY_T);
      IF l_arr.get_size = 0 THEN
         fail(in_where || ': ' || in_op || ' takes a non-empty list');
      END IF;
      FOR i IN 0 .. l_arr.get_size - 1 LOOP
         IF l_arr.get(i).is_object OR l_arr.get(i).is_array THEN
            fail(in_where || ': ' || in_op || ' takes a list of scalars');
         END IF;
      END LOOP;
      RETURN l_arr;
   END scalar_list;

   FUNCTION compile_ops(
      in_obj   IN JSON_OBJECT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB;

   FUNCTION compile_op(
      in_op    IN VARCHAR2,
      in_arg   IN JSON_ELEMENT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB
   IS
      l_arr   JSON_ARRAY_T;
      l_sql   CLOB;
      l_bool  JSON_ARRAY_T := JSON_ARRAY_T();
   BEGIN
      count_node;
      CASE in_op
         WHEN '$eq' THEN
            IF in_arg.is_object OR in_arg.is_array THEN
               RETURN nonscalar_equal(in_path, in_arg, in_where, io_binds);
            END IF;
            RETURN scalar_leaf(in_path, '==', in_arg, in_where, io_binds);
         WHEN '$ne' THEN
            RETURN negate(compile_op('$eq', in_arg, in_path, in_where, in_depth, io_binds));
         WHEN '$gt' THEN
            RETURN scalar_leaf(in_path, '>', in_arg, in_where, io_binds);
         WHEN '$gte' THEN
            RETURN scalar_leaf(in_path, '>=', in_arg, in_where, io_binds);
         WHEN '$lt' THEN
            RETURN scalar_leaf(in_path, '<', in_arg, in_where, io_binds);
         WHEN '$lte' THEN
            RETURN scalar_leaf(in_path, '<=', in_arg, in_where, io_binds);
         WHEN '$in' THEN
            l_arr := scalar_list(in_arg, in_where, in_op);
            FOR i IN 0 .. l_arr.get_size - 1 LOOP
               count_node;
               l_sql := cat(l_sql, CASE WHEN i > 0 THEN ' OR ' END,
                            scalar_leaf(in_path, '==', l_arr.get(i), in_where, io_binds));
            END LOOP;
            RETURN '(' || l_sql || ')';
         WHEN '$nin' THEN
            RETURN negate(compile_op('$in', in_arg, in_path, in_where, in_depth, io_binds));
         WHEN '$exists' THEN
            IF NOT in_arg.is_boolean THEN
               fail(in_where || ': $exists takes true or false');
            END IF;
            l_bool.append(in_arg);
            l_sql := exists_sql('$' || in_path, NULL);
            RETURN CASE WHEN l_bool.get_boolean(0) THEN l_sql ELSE negate(l_sql) END;
         WHEN '$array_contains' THEN
            IF in_arg.is_array THEN
               l_arr := scalar_list(in_arg, in_where, in_op);
               FOR i IN 0 .. l_arr.get_size - 1 LOOP
                  count_node;
                  l_sql := cat(l_sql, CASE WHEN i > 0 THEN ' AND ' END,
                               contains_one(in_path, l_arr.get(i), in_where, io_binds));
               END LOOP;
               RETURN '(' || l_sql || ')';
            END IF;
            RETURN contains_one(in_path, in_arg, in_where, io_binds);
         WHEN '$array_contains_any' THEN
            l_arr := scalar_list(in_arg, in_where, in_op);
            FOR i IN 0 .. l_arr.get_size - 1 LOOP
               count_node;
               l_sql := cat(l_sql, CASE WHEN i > 0 THEN ' OR ' END,
                            contains_one(in_path, l_arr.get(i), in_where, io_binds));
            END LOOP;
            RETURN '(' || l_sql || ')';
         WHEN '$not' THEN
            IF in_arg.is_object THEN
               check_depth(in_depth);  -- as oramem.filters: the $not dict's own level
               RETURN negate(compile_ops(TREAT(in_arg AS JSON_OBJECT_T), in_path, in_where,
                                         in_depth + 1, io_binds));
            ELSIF in_arg.is_array THEN
               RETURN negate(nonscalar_equal(in_path, in_arg, in_where, io_binds));
            END IF;
            RETURN negate(scalar_leaf(in_path, '==', in_arg, in_where, io_binds));
         ELSE
            fail('unknown operator ' || SUBSTR(in_op, 1, 40) || ' at ' || in_where);
      END CASE;
      RETURN NULL;
   END compile_op;

   FUNCTION compile_ops(
      in_obj   IN JSON_OBJECT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB
   IS
      l_keys JSON_KEY_LIST := in_obj.get_keys;
      l_sql  CLOB;
   BEGIN
      IF l_keys IS NULL OR l_keys.COUNT = 0 THEN
         fail(in_where || ': empty operator dict');
      END IF;
      FOR i IN 1 .. l_keys.COUNT LOOP
         IF SUBSTR(l_keys(i), 1, 1) <> '$' THEN
            fail(in_where || ' mixes operators with the plain key ' || SUBSTR(l_keys(i), 1, 64));
         END IF;
         l_sql := cat(l_sql, CASE WHEN i > 1 THEN ' AND ' END,
                      compile_op(l_keys(i), in_obj.get(l_keys(i)), in_path, in_where, in_depth,
                                 io_binds));
      END LOOP;
      RETURN '(' || l_sql || ')';
   END compile_ops;

   FUNCTION compile_object(
      in_obj   IN JSON_OBJECT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB;

   FUNCTION compile_value(
      in_elem  IN JSON_ELEMENT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB
   IS
      l_obj   JSON_OBJECT_T;
      l_keys  JSON_KEY_LIST;
      l_ops   PLS_INTEGER := 0;
   BEGIN
      count_node;
      IF in_elem.is_object THEN
         l_obj  := TREAT(in_elem AS JSON_OBJECT_T);
         l_keys := l_obj.get_keys;
         IF l_keys IS NULL OR l_keys.COUNT = 0 THEN
            fail(in_where || ': empty dict');
         END IF;
         FOR i IN 1 .. l_keys.COUNT LOOP
            IF SUBSTR(l_keys(i), 1, 1) = '$' THEN
               l_ops := l_ops + 1;
            END IF;
         END LOOP;
         IF l_ops = l_keys.COUNT THEN
            RETURN compile_ops(l_obj, in_path, in_where, in_depth, io_binds);
         ELSIF l_ops > 0 THEN
            fail(in_where || ' mixes operators with plain keys');
         END IF;
         -- S5: a nested subset match needs an object here (as oramem.filters and the SQLite
         -- engine); without this guard lax mode would unwrap an array at this step and
         -- negated conditions below would match records that lack the key. type() is not
         -- unwrapped in lax mode, so an array here reads "array", not "object".
         RETURN cat('(' || exists_sql('$?(@' || in_path || '.type() == "object")', NULL), ' AND ',
                    compile_object(l_obj, in_path, in_where, in_depth, io_binds) || ')');
      ELSIF in_elem.is_array THEN
         RETURN nonscalar_equal(in_path, in_elem, in_where, io_binds);
      END IF;
      RETURN scalar_leaf(in_path, '==', in_elem, in_where, io_binds);
   END compile_value;

   FUNCTION compile_object(
      in_obj   IN JSON_OBJECT_T,
      in_path  IN VARCHAR2,
      in_where IN VARCHAR2,
      in_depth IN PLS_INTEGER,
      io_binds IN OUT NOCOPY bind_list_t
   ) RETURN CLOB
   IS
      l_keys  JSON_KEY_LIST := in_obj.get_keys;
      l_key   VARCHAR2(4000 CHAR);
      l_elem  JSON_ELEMENT_T;
      l_arr   JSON_ARRAY_T;
      l_part  CLOB;
      l_sql   CLOB;
   BEGIN
      count_node;
      check_depth(in_depth);
      IF l_keys IS NULL OR l_keys.COUNT = 0 THEN
         RETURN '(1 = 1)';
      END IF;
      FOR i IN 1 .. l_keys.COUNT LOOP
         l_key  := l_keys(i);
         l_elem := in_obj.get(l_key);
         IF l_key IN ('$and', '$or') THEN
            IF in_path IS NOT NULL THEN
               fail(l_key || ' is allowed only at the top level of a filter (found at '
                    || in_where || ')');
            END IF;
            IF NOT l_elem.is_array THEN
               fail(l_key || ' takes a non-empty list of filters');
            END IF;
            l_arr := TREAT(l_elem AS JSON_ARRAY_T);
            IF l_arr.get_size = 0 THEN
               fail(l_key || ' takes a non-empty list of filters');
            END IF;
            l_part := NULL;
            FOR j IN 0 .. l_arr.get_size - 1 LOOP
               IF NOT l_arr.get(j).is_object THEN
                  fail(l_key || '[' || j || '] must be a filter object');
               END IF;
               l_part := cat(l_part,
                             CASE WHEN j > 0 THEN CASE l_key WHEN '$and' THEN ' AND ' ELSE ' OR ' END END,
                             compile_object(TREAT(l_arr.get(j) AS JSON_OBJECT_T), NULL,
                                            l_key || '[' || j || ']', in_depth + 1, io_binds));
            END LOOP;
            l_part := '(' || l_part || ')';
         ELSIF SUBSTR(l_key, 1, 1) = '$' THEN
            fail('unknown or misplaced operator ' || SUBSTR(l_key, 1, 40) || ' at '
                 || NVL(in_where, 'top level'));
         ELSE
            l_part := compile_value(l_elem, path_step(in_path, l_key, where_of(in_where, l_key)),
                                    where_of(in_where, l_key), in_depth + 1, io_binds);
         END IF;
         l_sql := cat(l_sql, CASE WHEN i > 1 THEN ' AND ' END, l_part);
      END LOOP;
      RETURN '(' || l_sql || ')';
   END compile_object;

   FUNCTION compile_filter(
      in_filter  IN CLOB,
      in_column  IN VARCHAR2,
      io_binds   IN OUT NOCOPY bind_list_t
   ) RETURN CLOB
   IS
      l_elem JSON_ELEMENT_T;
   BEGIN
      IF in_column IS NULL
         OR NOT REGEXP_LIKE(in_column, '^[a-z][a-z0-9_]{0,29}\.[a-z][a-z0-9_]{0,29}$', 'c')
      THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'oramem_filter.compile_filter: invalid column reference');
      END IF;
      g_column := in_column;
      g_nodes  := 0;
      IF in_filter IS NULL OR DBMS_LOB.GETLENGTH(in_filter) = 0 THEN
         RETURN '(1 = 1)';
      END IF;
      BEGIN
         l_elem := JSON_ELEMENT_T.parse(in_filter);
      EXCEPTION
         WHEN e_json_syntax THEN
            fail('not valid JSON');
      END;
      IF l_elem.is_null THEN
         RETURN '(1 = 1)';
      END IF;
      IF NOT l_elem.is_object THEN
         fail('must be a JSON object');
      END IF;
      RETURN compile_object(TREAT(l_elem AS JSON_OBJECT_T), NULL, NULL, 0, io_binds);
   END compile_filter;

   PROCEDURE bind_all(
      in_cursor IN INTEGER,
      in_binds  IN bind_list_t
   )
   IS
   BEGIN
      FOR i IN 1 .. in_binds.COUNT LOOP
         IF in_binds(i).kind = 'N' THEN
            DBMS_SQL.BIND_VARIABLE(in_cursor, ':' || in_binds(i).name, in_binds(i).num_val);
         ELSIF in_binds(i).kind = 'C' THEN
            DBMS_SQL.BIND_VARIABLE(in_cursor, ':' || in_binds(i).name, in_binds(i).clob_val);
         ELSE
            DBMS_SQL.BIND_VARIABLE(in_cursor, ':' || in_binds(i).name, in_binds(i).str_val, 4000);
         END IF;
      END LOOP;
   END bind_all;

   FUNCTION scope_condition(
      in_dimension IN VARCHAR2,
      in_match     IN VARCHAR2,
      in_value     IN VARCHAR2,
      in_alias     IN VARCHAR2,
      io_binds     IN OUT NOCOPY bind_list_t,
      in_raw       IN PLS_INTEGER DEFAULT 0
   ) RETURN VARCHAR2
   IS
      l_match   VARCHAR2(16 CHAR) := LOWER(in_match);
      l_col     VARCHAR2(40 CHAR);
      l_own     VARCHAR2(16 CHAR);   -- the profile type keyed on this dimension
      l_n       PLS_INTEGER;
      l_m       PLS_INTEGER;
   BEGIN
      IF in_alias IS NULL OR NOT REGEXP_LIKE(in_alias, '^[a-z][a-z0-9_]{0,29}$', 'c') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            'oramem_filter.scope_condition: invalid alias');
      END IF;
      IF l_match IS NOT NULL AND l_match NOT IN ('any', 'equals', 'is_null') THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            SUBSTR(in_dimension, 1, 10) || '.match must be any, equals or is_null');
      END IF;
      -- A value is read with match equals only. With any (or no match) it was ignored, so
      -- {"user": {"value": "bob"}} listed and searched every user's records (fail open, as the
      -- malformed scopes search_json now refuses); with is_null it names the opposite of what
      -- the match keeps. The Python driver never sends a value with another match.
      IF in_value IS NOT NULL AND NVL(l_match, 'any') <> 'equals' THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
            SUBSTR(in_dimension, 1, 10) || '.value goes with "match": "equals" only (with match '
            || NVL(l_match, 'absent') || ' it would be ignored); give "match": "equals" or drop the value');
      END IF;
      IF l_match IS NULL OR l_match = 'any' THEN
         RETURN NULL;
      END IF;
      IF l_match = 'equals' AND in_value IS NULL THEN
         oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
            SUBSTR(in_dimension, 1, 10) || '.value is required when match is equals');
      END IF;
      -- a scope id that is only white space names no one (oramem.normalize.check_id)
      oramem_registry.check_id(in_value, SUBSTR(in_dimension, 1, 10) || '.value');
      -- Effective scope columns, as the SQLite engine (SC-6.2): a thread scope reads the raw
      -- thread_id (profiles have none, so they never match a thread); a user scope reads the
      -- record id of a user_profile and user_id of every other record; agent likewise.
      CASE LOWER(in_dimension)
         WHEN 'thread' THEN
            l_col := in_alias || '.thread_id';
            IF l_match = 'equals' THEN
               l_n := add_bind(io_binds, 'S', in_value, NULL);
               RETURN '(' || l_col || ' = :f' || l_n || ')';
            END IF;
            RETURN '(' || l_col || ' IS NULL)';
         WHEN 'user' THEN
            l_col := in_alias || '.user_id';
            l_own := 'user_profile';
         WHEN 'agent' THEN
            l_col := in_alias || '.agent_id';
            l_own := 'agent_profile';
         ELSE
            oramem_errors.raise_error(oramem_errors.gc_invalid_argument,
               'oramem_filter.scope_condition: dimension must be thread, user or agent');
      END CASE;
      IF in_raw = 1 THEN
         -- N6: the raw column (list): an index range scan on the scope index, no OR branch
         IF l_match = 'equals' THEN
            l_n := add_bind(io_binds, 'S', in_value, NULL);
            RETURN '(' || l_col || ' = :f' || l_n || ')';
         END IF;
         RETURN '(' || l_col || ' IS NULL)';
      END IF;
      IF l_match = 'equals' THEN
         l_n := add_bind(io_binds, 'S', in_value, NULL);
         l_m := add_bind(io_binds, 'S', in_value, NULL);
         RETURN '((' || in_alias || '.record_type = ''' || l_own || ''' AND ' || in_alias
                || '.record_id = :f' || l_n || ') OR (' || in_alias || '.record_type <> '''
                || l_own || ''' AND ' || l_col || ' = :f' || l_m || '))';
      END IF;
      -- a profile's own id is never NULL, so is_null keeps only the other records
      RETURN '(' || in_alias || '.record_type <> ''' || l_own || ''' AND ' || l_col || ' IS NULL)';
   END scope_condition;

   PROCEDURE check_keys(
      in_obj   IN JSON_OBJECT_T,
      in_known IN VARCHAR2,
      in_what  IN VARCHAR2
   )
   IS
      l_keys JSON_KEY_LIST := in_obj.get_keys;
      l_key  VARCHAR2(4000 CHAR);
      l_hint VARCHAR2(200 CHAR);
   BEGIN
      -- nested, not "IS NULL OR COUNT = 0": no short-circuit evaluation assumed
      IF l_keys IS NOT NULL THEN
         FOR i IN 1 .. l_keys.COUNT LOOP
            l_key := l_keys(i);
            IF INSTR(l_key, ',') > 0 OR INSTR(',' || in_known || ',', ',' || l_key || ',') = 0 THEN
               IF l_key IN ('user_id', 'agent_id', 'thread_id') THEN
                  l_hint := '; a ' || SUBSTR(l_key, 1, INSTR(l_key, '_') - 1) || ' scope is "'
                            || SUBSTR(l_key, 1, INSTR(l_key, '_') - 1)
                            || '": {"match": "equals", "value": "..."}';
               END IF;
               oramem_errors.raise_error(oramem_errors.gc_invalid_payload,
                  SUBSTR(in_what, 1, 40) || ': unknown key "' || SUBSTR(l_key, 1, 64)
                  || '" (accepted: ' || REPLACE(in_known, ',', ', ') || ')' || l_hint
                  || '; an unknown key is refused, never ignored');
            END IF;
         END LOOP;
      END IF;
   END check_keys;

   FUNCTION query_clob(
      in_sql   IN CLOB,
      in_binds IN bind_list_t
   ) RETURN CLOB
   IS
      l_cursor INTEGER;
      l_out    CLOB;
      l_rows   INTEGER;
   BEGIN
      l_cursor := DBMS_SQL.OPEN_CURSOR;
      DBMS_SQL.PARSE(l_cursor, in_sql, DBMS_SQL.NATIVE);
      bind_all(l_cursor, in_binds);
      DBMS_SQL.DEFINE_COLUMN(l_cursor, 1, l_out);
      l_rows := DBMS_SQL.EXECUTE_AND_FETCH(l_cursor);
      IF l_rows > 0 THEN
         DBMS_SQL.COLUMN_VALUE(l_cursor, 1, l_out);
      END IF;
      DBMS_SQL.CLOSE_CURSOR(l_cursor);
      RETURN l_out;
   EXCEPTION
      WHEN OTHERS THEN
         -- Release the cursor, then re-raise unchanged (callers log).
         IF DBMS_SQL.IS_OPEN(l_cursor) THEN
            DBMS_SQL.CLOSE_CURSOR(l_cursor);
         END IF;
         RAISE;
   END query_clob;

   PROCEDURE validate_filter(
      in_filter IN CLOB
   )
   IS
      l_binds bind_list_t;
      l_sql   CLOB;
   BEGIN
      l_sql := compile_filter(in_filter, 'r.metadata', l_binds);
   END validate_filter;
END oramem_filter;
/
