//! Phone calls over Twilio Media Streams: the signed relay token that ties a stream to the
//! session set up for it ([`token`]), the call-control markup ([`twiml`]), and the stream
//! transport that connects a call to a `CallSession` ([`stream`]).

pub mod stream;
pub mod token;
pub mod twiml;
