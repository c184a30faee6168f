"""Retrieval (KC §5): planning, the signals, scoring, context compression and the procedural reads."""
