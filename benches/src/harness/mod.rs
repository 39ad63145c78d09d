//! Orchestrator of the comparison.
