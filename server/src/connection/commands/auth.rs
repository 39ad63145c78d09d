//! AUTH and HELLO (Redis 7 semantics), and the login path they share: wait for a login slot,
//! skip the hash if the client has gone meanwhile (reset, or closed as a probe shows: a
//! half-closed client is served, [`crate::connection::probe`]), verify the SHA-512-crypt hash with the
//! configured `--hash-mode` in the `auth` task queue, release the slot; close the connection
//! after `--max-auth-failures` wrong passwords.

use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use shardline_auth::{AuthError, LoginPermit, LoginStage};
use shardline_metrics::labels::login_result;
use shardline_metrics::Activity;

use crate::connection::dispatch::Flow;
use crate::connection::peer::{peer_state, PeerState};
use crate::connection::pipeline::Pipeline;
use crate::connection::probe::{self, Probe, ProbeRecord};
use crate::connection::session::Session;
use crate::connection::CloseReason;
use crate::resp::{Frame, Protocol};
use crate::shard::Shard;

/// Redis's reply to wrong credentials.
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// A login that ends the connection: the reply to send first, if any, and why it closes.
pub struct LoginClose {
    reply: Option<Frame>,
    reason: CloseReason,
}

impl LoginClose {
    /// Queues the reply (if any) and tells the connection to close after writing it.
    pub fn finish(self, shard: &Shard, session: &Session, pipeline: &mut Pipeline) -> Flow {
        if let Some(reply) = self.reply {
            if let Frame::Error(text) = &reply {
                shard
                    .metrics
                    .command_error(shardline_metrics::labels::error_kind::of_reply(text));
            }
            pipeline.ready(session.protocol, reply);
        }
        Flow::Close(self.reason)
    }
}

/// The result of one login attempt.
enum Login {
    Accepted,
    Rejected,
    /// Verification could not run (e.g. the hashing queue is full); the text is the error reply.
    Failed(String),
}

/// Redis's reply to a one-argument AUTH while the default user needs no password.
const NO_DEFAULT_PASSWORD: &str = "ERR AUTH <password> called without any password configured \
     for the default user. Are you sure your configuration is correct?";

/// Logs a new (or RESET) connection in as `default` when the users file says
/// `default:nopass` (Redis `clientSetDefaultAuth`); otherwise it stays unauthenticated.
pub fn default_login(shard: &Shard, session: &mut Session) {
    if shard.shared.users.load().default_nopass() {
        session.user = Some(shardline_auth::DEFAULT_USER.to_string());
    }
}

/// `AUTH password` (user `default`) or `AUTH username password`. A failed AUTH keeps the
/// connection's previous identity. `Err` closes the connection: shed by the login queue,
/// gone before its hash, or at its `--max-auth-failures`th wrong password. `client` is the
/// connection's stream, for the probe of a client that sent FIN.
pub async fn auth(
    shard: &Rc<Shard>,
    session: &mut Session,
    args: &[Bytes],
    client: &mut dyn ProbeRecord,
) -> Result<Frame, LoginClose> {
    let (user, password) = match args.len() {
        2 if shard.shared.users.load().default_nopass() => {
            return Ok(Frame::error(NO_DEFAULT_PASSWORD))
        }
        2 => (Bytes::from_static(b"default"), args[1].clone()),
        3 => (args[1].clone(), args[2].clone()),
        _ => return Ok(Frame::error("ERR syntax error")),
    };
    Ok(
        match login(shard, session, &user, password, client).await? {
            Login::Accepted => {
                session.user = Some(String::from_utf8_lossy(&user).into_owned());
                Frame::ok()
            }
            Login::Rejected => return wrongpass(shard, session),
            Login::Failed(text) => Frame::error(text),
        },
    )
}

/// The slot of a login whose client may have left (socket `fd`, stream `client`): `Err`
/// (abandoned, no reply) when the client reset the connection, or sent FIN and the probe drew
/// a RST; otherwise the slot to hash with (taken again when the probe's wait gave it back).
async fn still_there(
    shard: &Rc<Shard>,
    fd: std::os::fd::RawFd,
    client: &mut dyn ProbeRecord,
    permit: LoginPermit,
) -> Result<LoginPermit, LoginClose> {
    let abandoned = || {
        shard.metrics.login(login_result::ABANDONED);
        Err(LoginClose {
            reply: None,
            reason: CloseReason::ClientClosed,
        })
    };
    match peer_state(fd) {
        PeerState::Open => Ok(permit),
        PeerState::Reset => abandoned(),
        PeerState::Finished => match probe::send_probe(client, fd).await {
            Probe::NotSent => Ok(permit),
            Probe::Gone => abandoned(),
            Probe::Sent => {
                // No slot held while the RST may be on its way.
                drop(permit);
                if probe::reset_after_window(fd).await {
                    abandoned()
                } else {
                    admit(shard).await
                }
            }
        },
    }
}

/// A password login slot, or the shed reply that closes the connection.
async fn admit(shard: &Rc<Shard>) -> Result<LoginPermit, LoginClose> {
    shard.admit_login(LoginStage::Password).await.map_err(|_| {
        shard.metrics.login(login_result::SHED);
        LoginClose {
            reply: Some(Frame::error(
                "ERR login queue timeout: too many concurrent logins on this shard \
                     (--max-concurrent-logins), try again later",
            )),
            reason: CloseReason::Shed,
        }
    })
}

/// The WRONGPASS reply, counting the failure: at the `--max-auth-failures`th on this
/// connection (0 = no limit) the reply is sent and the connection closed. Redis has no such
/// limit; without one a single connection can pipeline guesses for as long as it likes.
fn wrongpass(shard: &Shard, session: &mut Session) -> Result<Frame, LoginClose> {
    session.auth_failures = session.auth_failures.saturating_add(1);
    let max = shard.shared.config.max_auth_failures;
    if max > 0 && session.auth_failures >= max {
        return Err(LoginClose {
            reply: Some(Frame::error(WRONGPASS)),
            reason: CloseReason::AuthFailures,
        });
    }
    Ok(Frame::error(WRONGPASS))
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`; `client` as for [`auth`].
pub async fn hello(
    shard: &Rc<Shard>,
    session: &mut Session,
    args: &[Bytes],
    client: &mut dyn ProbeRecord,
) -> Result<Frame, LoginClose> {
    let mut protocol = session.protocol;
    if let Some(version) = args.get(1) {
        protocol = match crate::resp::num::parse_i64(version) {
            None => {
                return Ok(Frame::error(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Ok(Frame::error("NOPROTO unsupported protocol version")),
        };
    }
    let mut credentials = None;
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        let option = args[i].to_ascii_uppercase();
        let more = args.len() - i - 1;
        match option.as_slice() {
            b"AUTH" if more >= 2 => {
                credentials = Some((args[i + 1].clone(), args[i + 2].clone()));
                i += 3;
            }
            b"SETNAME" if more >= 1 => {
                name = Some(args[i + 1].clone());
                i += 2;
            }
            _ => {
                return Ok(Frame::error(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&args[i])
                )))
            }
        }
    }
    if let Some(name) = &name {
        if let Err(err) = super::client::validate_name(name) {
            return Ok(err);
        }
    }
    if let Some((user, password)) = credentials {
        match login(shard, session, &user, password, client).await? {
            Login::Accepted => session.user = Some(String::from_utf8_lossy(&user).into_owned()),
            Login::Rejected => return wrongpass(shard, session),
            Login::Failed(text) => return Ok(Frame::error(text)),
        }
    }
    if !session.is_authenticated() {
        return Ok(Frame::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        ));
    }
    if name.is_some() {
        session.name = name;
    }
    session.protocol = protocol;
    Ok(hello_reply(session))
}

/// The HELLO map (RESP3) / flat array (RESP2). `server` and `version` report Redis 7.0
/// compatibility, as Dragonfly does, because clients gate features on them; INFO carries
/// shardline's own version.
fn hello_reply(session: &Session) -> Frame {
    let proto = match session.protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    };
    let field = |name: &str| Frame::Bulk(Bytes::copy_from_slice(name.as_bytes()));
    Frame::Map(vec![
        (field("server"), field("redis")),
        (field("version"), field(crate::REDIS_COMPAT_VERSION)),
        (field("proto"), Frame::Integer(proto)),
        (field("id"), Frame::Integer(session.id as i64)),
        (field("mode"), field("standalone")),
        (field("role"), field("master")),
        (field("modules"), Frame::Array(Vec::new())),
    ])
}

/// Waits for a login slot, verifies in the `auth` task queue, records metrics. `Err` closes
/// the connection: shed by the login queue (with a reply), or the client left while its
/// login waited (`logins_total{result="abandoned"}`, no hash, no reply): it reset the
/// connection, or it sent FIN and the probe on `client` drew a RST. A half-closed client
/// (FIN, no RST) is served.
async fn login(
    shard: &Rc<Shard>,
    session: &Session,
    user: &Bytes,
    password: Bytes,
    client: &mut dyn ProbeRecord,
) -> Result<Login, LoginClose> {
    if user.as_ref() == shardline_auth::DEFAULT_USER.as_bytes()
        && shard.shared.users.load().default_nopass()
    {
        // Redis's nopass user takes any password: nothing to hash.
        shard.metrics.login(login_result::ACCEPTED);
        return Ok(Login::Accepted);
    }
    let waited = Instant::now();
    let mut permit = admit(shard).await?;
    shard.metrics.login_wait(waited.elapsed());
    if let Some(fd) = session.socket_fd {
        permit = still_there(shard, fd, client, permit).await?;
    }
    // Queued now, hashed when the auth task runs: logins read before it runs share a batch.
    let submitted = shard
        .verifier
        .submit(&shard.shared.users.load_full(), user, &password);
    let task = shard.spawn_auth(async move {
        shardline_metrics::activity::set(Activity::AuthHash);
        submitted?.wait().await
    });
    let outcome = task.await;
    drop(permit);
    Ok(match outcome {
        Ok(verified) => {
            if !verified.cache_hit {
                shard.metrics.password_hash(
                    verified.mode.as_str(),
                    std::time::Duration::from_micros(verified.hash_micros),
                );
                shard
                    .metrics
                    .password_hash_batch(verified.mode.as_str(), verified.batch_size);
            }
            if shard.shared.config.credentials_cache_ttl_ms > 0 {
                if verified.cache_hit {
                    shard.metrics.credentials_cache_hit();
                } else {
                    shard.metrics.credentials_cache_miss();
                }
            }
            if verified.accepted {
                shard.metrics.login(login_result::ACCEPTED);
                Login::Accepted
            } else {
                shard.metrics.login(login_result::REJECTED);
                Login::Rejected
            }
        }
        Err(AuthError::PasswordTooLong { .. }) => {
            shard.metrics.login(login_result::OVERSIZE);
            Login::Rejected
        }
        Err(err) => {
            shard.metrics.login(login_result::ERROR);
            Login::Failed(format!("ERR authentication failed: {err}"))
        }
    })
}
