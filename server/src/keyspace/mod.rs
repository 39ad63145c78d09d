//! One shard's keyspace: hash-slot ownership ([`slot`]), stored values
//! ([`value`]), the owner-local database with expiry and SCAN ([`db`]) and
//! Redis glob matching ([`glob`]).

pub mod db;
pub mod digest;
pub mod glob;
pub mod hash;
pub mod key;
pub mod memory;
pub mod skiplist;
pub mod slot;
pub mod snapshot;
pub mod value;
pub mod watch;
pub mod zset;

pub use db::notify::KeyEvent;
pub use db::{AccessClock, Db};
pub use hash::{Hash, HashLimits};
pub use value::Value;
pub use zset::ZSet;
