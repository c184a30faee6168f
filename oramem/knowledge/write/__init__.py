"""The write pipeline (KC §4): classification, extraction, resolution, reconciliation and the commit."""
