"""Trust features (issue 27): the write-time memory firewall (SC-15)."""

from .firewall import (
    ACTIONS,
    CATEGORIES,
    VERDICT_KEY,
    Detector,
    Finding,
    FirewallPolicy,
    FirewallRejected,
    PatternDetector,
    builtin_detectors,
    register_detector,
    registered_detectors,
    scan,
)

__all__ = [
    "ACTIONS",
    "CATEGORIES",
    "VERDICT_KEY",
    "Detector",
    "Finding",
    "FirewallPolicy",
    "FirewallRejected",
    "PatternDetector",
    "builtin_detectors",
    "register_detector",
    "registered_detectors",
    "scan",
]
