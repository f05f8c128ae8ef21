//! Phone calls over Twilio: the signed relay token that ties a stream to the session set up
//! for it ([`token`]), the call-control markup ([`twiml`]), the stream transport that connects
//! a call to a `CallSession` ([`stream`]), the REST client that places outbound calls
//! ([`rest`]) and the check of Twilio's webhook signatures ([`signature`]).

pub mod rest;
pub mod signature;
pub mod stream;
pub mod token;
pub mod twiml;
