//! Benchmarks live here.
