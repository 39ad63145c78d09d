//! One type for "a server under test", shardline or redis-server.

use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::HarnessError;
use super::redis::{RedisOptions, RedisServer};
use super::shardline::{ShardlineFiles, ShardlineOptions, ShardlineServer};

/// What to start.
#[derive(Debug, Clone)]
pub enum ServerSpec {
    /// shardline with these options.
    Shardline(ShardlineOptions),
    /// redis-server with these options.
    Redis(RedisOptions),
}

impl ServerSpec {
    /// CPU cores the server gets: shardline's shards, 1 for (single-threaded) redis-server.
    pub fn cores(&self) -> usize {
        match self {
            ServerSpec::Shardline(o) => o.smp.max(1),
            ServerSpec::Redis(_) => 1,
        }
    }

    /// The CPU list (`taskset -c`) the server is pinned to, if any.
    pub fn cpus(&self) -> Option<&str> {
        match self {
            ServerSpec::Shardline(o) => o.cpus.as_deref(),
            ServerSpec::Redis(o) => o.cpus.as_deref(),
        }
    }

    /// Starts it.
    ///
    /// # Errors
    /// As [`ShardlineServer::start`] and [`RedisServer::start`].
    pub fn start(&self, files: &ShardlineFiles) -> Result<RunningServer, HarnessError> {
        Ok(match self {
            ServerSpec::Shardline(o) => RunningServer::Shardline(ShardlineServer::start(o, files)?),
            ServerSpec::Redis(o) => RunningServer::Redis(RedisServer::start(o)?),
        })
    }
}

/// A started server.
pub enum RunningServer {
    /// shardline.
    Shardline(ShardlineServer),
    /// redis-server.
    Redis(RedisServer),
}

impl RunningServer {
    /// Client endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            RunningServer::Shardline(s) => s.endpoint(),
            RunningServer::Redis(s) => s.endpoint(),
        }
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        match self {
            RunningServer::Shardline(s) => s.pid(),
            RunningServer::Redis(s) => s.pid(),
        }
    }

    /// shardline's `/metrics` URL; `None` for redis-server.
    pub fn metrics_url(&self) -> Option<&str> {
        match self {
            RunningServer::Shardline(s) => Some(s.metrics_url()),
            RunningServer::Redis(_) => None,
        }
    }

    /// Waits until a line of the server's log makes `found` return `Some` (lines printed
    /// while the start waited for the server included), e.g. shardline's replay line or
    /// redis-server's "DB loaded from append only file: 1.234 seconds".
    ///
    /// # Errors
    /// [`HarnessError::Process`] when the server exits first or `timeout` passes.
    pub fn wait_for_line<T>(
        &mut self,
        timeout: Duration,
        found: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, HarnessError> {
        let process = match self {
            RunningServer::Shardline(s) => s.process_mut(),
            RunningServer::Redis(s) => s.process_mut(),
        };
        process.wait_for_line(timeout, found)
    }

    /// Stops it.
    pub fn stop(self) {
        match self {
            RunningServer::Shardline(s) => s.stop(),
            RunningServer::Redis(s) => s.stop(),
        }
    }
}
