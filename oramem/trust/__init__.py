"""Trust features (issue 27): verifiable erasure (SC-14), the retrieval audit and self-check (SC-16), the write-time memory firewall (SC-15)."""

from .audit import AuditEntry, AuditSettings, audit_settings, last_request_id, set_audit, set_audit_async
from .erasure import ErasedSubjectError, ErasureReceipt, ReceiptCheck, erasure_log, verify_receipts, verify_receipts_async

from .firewall import (
    ACTIONS,
    CATEGORIES,
    VERDICT_KEY,
    Detector,
    Finding,
    FirewallPolicy,
    FirewallRejected,
    PatternDetector,
    ROLE_SOURCES,
    builtin_detectors,
    register_detector,
    registered_detectors,
    scan,
)

__all__ = [
    "AuditEntry",
    "AuditSettings",
    "audit_settings",
    "last_request_id",
    "set_audit",
    "set_audit_async",
    "ErasedSubjectError",
    "ErasureReceipt",
    "ReceiptCheck",
    "erasure_log",
    "verify_receipts",
    "verify_receipts_async",
    "ACTIONS",
    "CATEGORIES",
    "VERDICT_KEY",
    "Detector",
    "Finding",
    "FirewallPolicy",
    "FirewallRejected",
    "PatternDetector",
    "ROLE_SOURCES",
    "builtin_detectors",
    "register_detector",
    "registered_detectors",
    "scan",
]
