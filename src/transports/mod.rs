//! The real-time transports: each speaks one wire protocol over a taken-over WebSocket
//! connection and nothing else. Who may open a session, what it runs with and how it is
//! recorded is decided above, in `crate::live`; a transport only turns the caller's messages
//! into session input and the session's outputs into messages.
//!
//! - [`socket`]: the connection itself (accept, read, write, close) and the caller's side as
//!   the session reads it ([`socket::caller_side`]).
//! - [`twilio`]: Twilio Media Streams (protocols.md §1).
//! - [`direct`]: the direct agent socket for browsers and server-side clients
//!   (docs/realtime.md).
//!
//! A new carrier is one more [`Wire`]: how its caller's messages read, how each session output
//! is written, and how a barge-in's clear is written from the session's own turn. [`pump`]
//! writes a session's outputs onto any of them.

pub mod direct;
pub mod socket;
pub mod twilio;

use std::sync::Arc;

use bytes::Bytes;
use bytestring::ByteString;
use switchboard_actors::session::{
    AgentProfile, ClearLane, SessionConfig, SessionHandle, SessionOutput, SessionOutputs,
    TransportClosed,
};

use crate::ids::SessionId;
use crate::recording::{RecordingTap, TapFormat};
use socket::caller_side::{CallerProtocol, Duties, SocketDuty};
use socket::{CloseCode, CloseReason, SocketWriter};

/// One transport's wire protocol.
pub trait Wire: 'static {
    /// How the transport reads the caller's messages.
    type Caller: CallerProtocol;

    /// The transport's name on session records and metrics.
    const NAME: &'static str;

    /// What the socket says as it closes after the session ended.
    const ENDED: &'static str;

    /// The session's settings on this transport (its audio formats and pacing).
    fn config(&self, session_id: String, agent: AgentProfile) -> SessionConfig;

    /// The encoding the session's audio is recorded in.
    fn tap_format(&self) -> TapFormat;

    /// The reader of the caller's messages for session `session_id`.
    fn caller(&self, session_id: &SessionId) -> Self::Caller;

    /// Writes a barge-in's clear on `socket` from the session's own turn.
    fn clear_lane(&self, socket: SocketWriter) -> Arc<dyn ClearLane>;

    /// The message that carries one session output other than `Ended`.
    fn frame(&mut self, output: SessionOutput) -> Frame;
}

/// What a session output becomes on the wire.
#[derive(Debug)]
pub enum Frame {
    Text(ByteString),
    Binary(Bytes),
    /// Write what the connection did not take of a message the clear lane wrote.
    Flush,
    /// Nothing to write.
    Skip,
}

/// Writes the session's outputs on `wire`, and what its reading of the socket leaves to write,
/// until either ends; then closes the socket (`1001` when `ended_by_server` says the node
/// stopped the session, else `1000`). The session (`handle`) and its recording (`tap`) end
/// before the socket closes. `ended_by_server` runs once the session has ended by itself,
/// before the close: what the session left to do on its call is done there (a transfer
/// must reach the carrier while its stream is still open).
pub async fn pump<W: Wire>(
    mut wire: W,
    handle: SessionHandle,
    socket: SocketWriter,
    mut duties: Duties,
    mut outputs: SessionOutputs,
    tap: Option<Arc<RecordingTap>>,
    ended_by_server: impl std::future::Future<Output = bool>,
) {
    let session = handle.addr().clone();
    let mut writer = socket.clone();
    loop {
        tokio::select! {
            // What the caller's side owes goes first: a client's close is answered with its
            // own code before the session's last outputs, which end the loop.
            biased;
            duty = duties.next() => {
                let sent = match duty {
                    SocketDuty::Pong(bytes) => writer.pong(&bytes).await,
                    SocketDuty::Reply(text) => writer.text(text).await,
                    SocketDuty::Ended(ending) => {
                        // The session heard the end from its reader.
                        socket::close_after(writer.clone(), &ending, W::NAME).await;
                        outputs.until_ended().await;
                        return;
                    }
                };
                if sent.is_err() {
                    session.do_send(TransportClosed);
                    break;
                }
            }
            output = outputs.recv() => {
                let output = match output {
                    None | Some(SessionOutput::Ended) => break,
                    Some(output) => output,
                };
                if let Some(tap) = &tap {
                    match &output {
                        SessionOutput::Audio(audio) => tap.agent(audio),
                        SessionOutput::Clear { written_at } => {
                            tap.clear(written_at.map(|at| at.into_std()))
                        }
                        _ => {}
                    }
                }
                let sent = match wire.frame(output) {
                    Frame::Text(text) => writer.text(text).await,
                    Frame::Binary(bytes) => writer.binary(bytes).await,
                    Frame::Flush => writer.flush().await,
                    Frame::Skip => Ok(()),
                };
                if sent.is_err() {
                    session.do_send(TransportClosed);
                    break;
                }
            }
        }
    }
    drop(handle);
    drop(tap);
    let reason = if ended_by_server.await {
        CloseReason {
            code: CloseCode::Away,
            description: Some("the server is shutting down".into()),
        }
    } else {
        CloseReason {
            code: CloseCode::Normal,
            description: Some(W::ENDED.into()),
        }
    };
    socket.close(Some(reason)).await;
}
