//! Server introspection: per-shard command and error statistics, the registry of
//! connections behind CLIENT LIST / KILL, CLIENT PAUSE, and the process figures of INFO.

pub mod allocated;
pub mod clients;
pub mod command_stats;
pub mod pause;
pub mod process;
pub mod rates;
