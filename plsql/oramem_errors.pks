CREATE OR REPLACE PACKAGE oramem_errors
AUTHID DEFINER
AS
   /*
    * oramem_errors: the one table of oramem's application error codes, their named
    * exceptions, and the raise/log helpers every other oramem package uses.
    *
    * One code, one meaning (ORACLE_NOTES 10.3). The python driver maps codes to classes
    * (oramem/oracle/errors.py); keep that table and this one in step.
    *
    *  code    constant / exception        meaning                                          python class
    *  ------  --------------------------  -----------------------------------------------  ---------------------
    *  -20001  gc_invalid_argument         a scalar parameter is missing or malformed        ValueError
    *  -20002  gc_invalid_payload          a JSON payload is not valid JSON or misses a key  ValueError
    *  -20003  gc_invalid_record_type      unknown record type / type not allowed here        ValueError
    *  -20004  gc_invalid_filter           metadata filter violates SC-9 (names the key)      ValueError
    *  -20005  gc_duplicate_record_id      record id already stored or repeated in a batch    ValueError
    *  -20006  gc_vector_mismatch          vector dimension / count does not fit the store    ValueError
    *  -20007  gc_invalid_timestamp        a time is not ISO-8601 (YYYY-MM-DDTHH24:MI:SS[.f][+hh:mm])  ValueError
    *  -20008  gc_ttl_anchor_missing       TIMESTAMP ttl anchor but the record has no event time  ValueError
    *  -20009  gc_strategy_unsupported     search strategy not supported by this store        ValueError
    *  -20010  gc_invalid_store_id         memory_store_id violates ^[A-Za-z][A-Za-z0-9_]{0,15}$  ValueError
    *  -20011  gc_invalid_identifier       a hook / model / object name fails validation     ValueError
    *  -20012  gc_invalid_keyword_query    Oracle Text rejected the compiled keyword query    ValueError
    *  -20101  gc_store_not_found          no store with that id (policy may not create it)   StoreNotFound
    *  -20102  gc_store_exists             create_store on an id that already exists          SchemaError
    *  -20103  gc_settings_mismatch        persisted setting differs (message names it)       StoreSettingsMismatch
    *  -20104  gc_schema_outdated          store schema_version older than the code           SchemaError
    *  -20105  gc_schema_incomplete        store objects missing / partial / orphaned         SchemaError
    *  -20106  gc_store_state              store lifecycle state forbids the operation        SchemaError
    *  -20107  gc_schema_too_new           store schema_version newer than installed code     SchemaError
    *  -20108  gc_embedder_mismatch        the store records another embedder identity        StoreSettingsMismatch
    *  -20201  gc_store_busy               store lock not obtained within the wait            StoreBusy
    *  -20301  gc_feature_missing          DB lacks a feature (Oracle Text, hybrid, model)    CapabilityError
    *  -20302  gc_privilege_missing        a direct grant is missing (message names it)       CapabilityError
    *
    * Messages say what to do next and never contain SQL text or bound values beyond the
    * offending key/setting name.
    */

   gc_invalid_argument       CONSTANT PLS_INTEGER := -20001;
   gc_invalid_payload        CONSTANT PLS_INTEGER := -20002;
   gc_invalid_record_type    CONSTANT PLS_INTEGER := -20003;
   gc_invalid_filter         CONSTANT PLS_INTEGER := -20004;
   gc_duplicate_record_id    CONSTANT PLS_INTEGER := -20005;
   gc_vector_mismatch        CONSTANT PLS_INTEGER := -20006;
   gc_invalid_timestamp      CONSTANT PLS_INTEGER := -20007;
   gc_ttl_anchor_missing     CONSTANT PLS_INTEGER := -20008;
   gc_strategy_unsupported   CONSTANT PLS_INTEGER := -20009;
   gc_invalid_store_id       CONSTANT PLS_INTEGER := -20010;
   gc_invalid_identifier     CONSTANT PLS_INTEGER := -20011;
   gc_invalid_keyword_query  CONSTANT PLS_INTEGER := -20012;
   gc_store_not_found        CONSTANT PLS_INTEGER := -20101;
   gc_store_exists           CONSTANT PLS_INTEGER := -20102;
   gc_settings_mismatch      CONSTANT PLS_INTEGER := -20103;
   gc_schema_outdated        CONSTANT PLS_INTEGER := -20104;
   gc_schema_incomplete      CONSTANT PLS_INTEGER := -20105;
   gc_store_state            CONSTANT PLS_INTEGER := -20106;
   gc_schema_too_new         CONSTANT PLS_INTEGER := -20107;
   gc_embedder_mismatch      CONSTANT PLS_INTEGER := -20108;
   gc_store_busy             CONSTANT PLS_INTEGER := -20201;
   gc_feature_missing        CONSTANT PLS_INTEGER := -20301;
   gc_privilege_missing      CONSTANT PLS_INTEGER := -20302;

   e_invalid_argument        EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_argument, -20001);
   e_invalid_payload         EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_payload, -20002);
   e_invalid_record_type     EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_record_type, -20003);
   e_invalid_filter          EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_filter, -20004);
   e_duplicate_record_id     EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_duplicate_record_id, -20005);
   e_vector_mismatch         EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_vector_mismatch, -20006);
   e_invalid_timestamp       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_timestamp, -20007);
   e_ttl_anchor_missing      EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_ttl_anchor_missing, -20008);
   e_strategy_unsupported    EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_strategy_unsupported, -20009);
   e_invalid_store_id        EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_store_id, -20010);
   e_invalid_identifier      EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_identifier, -20011);
   e_invalid_keyword_query   EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_invalid_keyword_query, -20012);
   e_store_not_found         EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_store_not_found, -20101);
   e_store_exists            EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_store_exists, -20102);
   e_settings_mismatch       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_settings_mismatch, -20103);
   e_schema_outdated         EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_schema_outdated, -20104);
   e_schema_incomplete       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_schema_incomplete, -20105);
   e_store_state             EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_store_state, -20106);
   e_schema_too_new          EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_schema_too_new, -20107);
   e_embedder_mismatch       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_embedder_mismatch, -20108);
   e_store_busy              EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_store_busy, -20201);
   e_feature_missing         EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_feature_missing, -20301);
   e_privilege_missing       EXCEPTION;
   PRAGMA EXCEPTION_INIT(e_privilege_missing, -20302);

   /*
    * raise_error: raise in_code (one of the gc_ constants above) with in_message.
    * The message is truncated to 2000 characters; the error stack is not kept.
    * Errors: -20001 when in_code is not one of the documented codes; else in_code itself.
    */
   PROCEDURE raise_error(
      in_code    IN PLS_INTEGER,
      in_message IN VARCHAR2
   );

   /*
    * log_error: record the current error (SQLCODE, SQLERRM, backtrace) for in_where
    * and in_store_id in ORAMEM_ERROR_LOG, in an autonomous transaction, then return.
    * Call it from WHEN OTHERS handlers followed by RAISE. Never raises itself.
    * Commit: commits only its own autonomous log row.
    */
   PROCEDURE log_error(
      in_where    IN VARCHAR2,
      in_store_id IN VARCHAR2 DEFAULT NULL
   );

   /*
    * is_oramem_error: TRUE when in_sqlcode is one of the codes in the table above.
    */
   FUNCTION is_oramem_error(
      in_sqlcode IN PLS_INTEGER
   ) RETURN BOOLEAN;
END oramem_errors;
/
