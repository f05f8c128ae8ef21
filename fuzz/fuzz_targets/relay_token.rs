#![no_main]
//! Relay tokens (Twilio `start`) and browser session tokens (`?token=` on the direct socket):
//! both are checked by `telephony::token::TokenSigner::verify`.
//!
//! With the first byte even the rest is presented as a token, as an attacker would; with it
//! odd the rest is signed with the server's secret first, so the claims decoder behind the
//! signature check is reached too. A token that verifies must name claims that sign and
//! verify again to the same claims.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;
use switchboard::telephony::token::TokenSigner;

const SECRET: &[u8] = b"fuzz-secret";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let token = if mode & 1 == 0 {
        let Ok(token) = std::str::from_utf8(rest) else {
            return;
        };
        token.to_string()
    } else {
        let payload = URL_SAFE_NO_PAD.encode(rest);
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("any key length");
        mac.update(payload.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{payload}.{signature}")
    };
    let signer = TokenSigner::new(SECRET);
    if let Ok(claims) = signer.verify(&token, 0) {
        let again = signer.sign(&claims);
        assert_eq!(signer.verify(&again, 0), Ok(claims));
    }
});
