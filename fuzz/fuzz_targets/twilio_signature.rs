#![no_main]
//! `X-Twilio-Signature` (`telephony::signature::verify`) on any URL, form and signature, and
//! the property that Twilio's own signature of the same request is always accepted, with the
//! URL as given.
//!
//! Input lines: the auth token, the URL, the signature, then `name=value` form parameters.

use libfuzzer_sys::fuzz_target;
use switchboard::telephony::signature::{sign, verify};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let (Some(auth_token), Some(url), Some(signature)) = (lines.next(), lines.next(), lines.next())
    else {
        return;
    };
    let params: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            (name.to_string(), value.to_string())
        })
        .collect();
    let _ = verify(auth_token, url, &params, signature);
    let genuine = sign(auth_token, url, &params);
    assert!(
        verify(auth_token, url, &params, &genuine),
        "Twilio's own signature was refused for {url:?}"
    );
});
