//! Benchmark harness of shardline (issue 5).
//!
//! Two binaries sit on this library:
//!
//! - `shardline-load`: a load client of our own (std threads, TLS through the `openssl` crate)
//!   with a connection-per-request *storm* mode and a persistent-connection GET *probe* mode
//!   ([`load`]).
//! - `shardline-bench`: the orchestrator that starts shardline and Debian's redis-server on
//!   loopback, drives them with redis-benchmark and `shardline-load`, scrapes `/metrics` and
//!   `/proc` before and after every run, and writes the comparison as Markdown, JSON and SVG
//!   ([`harness`]).
//!
//! See `benches/README.md` for the method and the latest figures.

#![warn(missing_docs)]

pub mod harness;
pub mod load;
pub mod resp;
pub mod stats;
