//! RESP (REdis Serialization Protocol) engine: reply frames with RESP2/RESP3
//! encoding ([`frame`]) and the incremental request parser ([`parse`]).
//!
//! Reference: the Redis protocol specification (RESP2 and RESP3) and Redis 7
//! `networking.c` (`processMultibulkBuffer`, `processInlineBuffer`).

pub mod double;
pub mod frame;
pub mod num;
pub mod parse;
pub mod split;

pub use frame::{Frame, Protocol};
pub use parse::{parse_request, ProtocolError, RequestLimits, RequestParser};
