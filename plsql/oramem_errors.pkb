CREATE OR REPLACE PACKAGE BODY oramem_errors
AS
   FUNCTION is_oramem_error(
      in_sqlcode IN PLS_INTEGER
   ) RETURN BOOLEAN
   IS
   BEGIN
      RETURN in_sqlcode IN (
         gc_invalid_argument, gc_invalid_payload, gc_invalid_record_type, gc_invalid_filter,
         gc_duplicate_record_id, gc_vector_mismatch, gc_invalid_timestamp, gc_ttl_anchor_missing,
         gc_strategy_unsupported, gc_invalid_store_id, gc_invalid_identifier,
         gc_invalid_keyword_query, gc_store_not_found, gc_store_exists, gc_settings_mismatch,
         gc_schema_outdated, gc_schema_incomplete, gc_store_state, gc_schema_too_new,
         gc_embedder_mismatch, gc_store_busy, gc_feature_missing, gc_privilege_missing);
   END is_oramem_error;

   PROCEDURE raise_error(
      in_code    IN PLS_INTEGER,
      in_message IN VARCHAR2
   )
   IS
   BEGIN
      IF NOT is_oramem_error(in_code) THEN
         RAISE_APPLICATION_ERROR(gc_invalid_argument,
            'oramem_errors.raise_error: undocumented error code ' || TO_CHAR(in_code));
      END IF;
      RAISE_APPLICATION_ERROR(in_code, SUBSTR(in_message, 1, 2000));
   END raise_error;

   PROCEDURE log_error(
      in_where    IN VARCHAR2,
      in_store_id IN VARCHAR2 DEFAULT NULL
   )
   IS
      PRAGMA AUTONOMOUS_TRANSACTION;
      l_code       NUMBER         := SQLCODE;
      -- bytes: the columns hold at most 4000 bytes whatever their semantics, so cut in bytes
      l_message    VARCHAR2(4000 BYTE) := SUBSTRB(SQLERRM, 1, 4000);  -- bytes: SUBSTRB-bounded
      l_backtrace  VARCHAR2(4000 BYTE) := SUBSTRB(DBMS_UTILITY.FORMAT_ERROR_BACKTRACE, 1, 4000);  -- bytes: SUBSTRB-bounded
   BEGIN
      INSERT INTO oramem_error_log (memory_store_id, where_at, error_code, error_message,
                                    backtrace, session_id)
      VALUES (SUBSTR(in_store_id, 1, 16), SUBSTR(in_where, 1, 200), l_code, l_message,
              l_backtrace, SYS_CONTEXT('USERENV', 'SID'));
      COMMIT;
   EXCEPTION
      WHEN OTHERS THEN
         -- Logging must never hide the original error: give up silently.
         ROLLBACK;
   END log_error;
END oramem_errors;
/
