#![no_main]
//! The `Stripe-Signature` check (`billing::webhook::verify`) on any header and payload, and
//! the property that a header carrying our own fresh signature is always accepted.
//!
//! Input: the header up to the first newline, the secret up to the second, then the payload.

use libfuzzer_sys::fuzz_target;
use switchboard::billing::webhook::{sign, verify};

const NOW: i64 = 1_700_000_000;
const TOLERANCE: i64 = 300;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == b'\n');
    let (Some(header), Some(secret), Some(payload)) = (parts.next(), parts.next(), parts.next())
    else {
        return;
    };
    let (Ok(header), Ok(secret)) = (std::str::from_utf8(header), std::str::from_utf8(secret))
    else {
        return;
    };
    let _ = verify(header, payload, secret, TOLERANCE, NOW);
    // Our own fresh signature in front of the fuzzed items: accepted whatever they are,
    // unless they bring a timestamp of their own (the last `t` counts).
    if !header.contains("t=") {
        let genuine = format!("t={NOW},v1={},{header}", sign(payload, secret, NOW));
        assert_eq!(
            verify(&genuine, payload, secret, TOLERANCE, NOW),
            Ok(()),
            "a genuine signature was refused: {genuine}"
        );
    }
});
