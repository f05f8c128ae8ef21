//! Phone calls over Twilio: the signed relay token that ties a stream to the session set up
//! for it ([`token`]), the call-control markup ([`twiml`]), the REST client that places
//! outbound calls ([`rest`]) and the check of Twilio's webhook signatures ([`signature`]); and
//! what a phone number must look like ([`is_e164`]). The media stream's wire is
//! `crate::transports::twilio`.

pub mod rest;
pub mod signature;
pub mod token;
pub mod twiml;

/// True for an E.164 number: `+`, a non-zero digit, then 1-14 more digits.
pub fn is_e164(phone: &str) -> bool {
    let Some(digits) = phone.strip_prefix('+') else {
        return false;
    };
    (2..=15).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
        && !digits.starts_with('0')
}

#[cfg(test)]
mod tests {
    use super::is_e164;

    #[test]
    fn e164_numbers() {
        for good in ["+14155550123", "+442071838750", "+49301234567"] {
            assert!(is_e164(good), "{good}");
        }
        for bad in [
            "14155550123",
            "+0123",
            "+1",
            "+1415555012345678",
            "+1 415 555",
            "",
        ] {
            assert!(!is_e164(bad), "{bad}");
        }
    }
}
