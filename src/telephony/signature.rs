//! `X-Twilio-Signature`: how Twilio signs every webhook it sends (protocols.md §3.4, after
//! twilio-python's `RequestValidator`). The signed string is the full URL Twilio requested
//! followed, for form POSTs, by every parameter's name and value in sorted order with no
//! separators; the signature is base64(HMAC-SHA1(auth token, that string)). Twilio is not
//! consistent about writing the default port into the URL, so both forms are accepted.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

type HmacSha1 = Hmac<Sha1>;

/// The signature Twilio sends for `url` with form `params`.
pub fn sign(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mac = signed_mac(auth_token, url, params);
    BASE64.encode(mac.finalize().into_bytes())
}

fn signed_mac(auth_token: &str, url: &str, params: &[(String, String)]) -> HmacSha1 {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    // By name, then by value for repeated names (byte order, case sensitive).
    sorted.sort();
    let mut mac =
        HmacSha1::new_from_slice(auth_token.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(url.as_bytes());
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    mac
}

/// Whether `signature` is Twilio's for this request, compared in constant time, for the URL
/// as given and with its default port added or removed.
pub fn verify(auth_token: &str, url: &str, params: &[(String, String)], signature: &str) -> bool {
    let Ok(expected) = BASE64.decode(signature.trim()) else {
        return false;
    };
    url_variants(url).iter().any(|candidate| {
        signed_mac(auth_token, candidate, params)
            .verify_slice(&expected)
            .is_ok()
    })
}

/// The URL as given, and with the scheme's default port added (or removed when present).
fn url_variants(url: &str) -> Vec<String> {
    let mut variants = vec![url.to_string()];
    if let Some(without) = strip_default_port(url) {
        variants.push(without);
    } else if let Some(end) = authority_end(url) {
        let authority = &url[..end];
        let host_has_port = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.chars().all(|c| c.is_ascii_digit()) && !port.is_empty());
        let default = if authority.starts_with("https://") {
            Some(443)
        } else if authority.starts_with("http://") {
            Some(80)
        } else {
            None
        };
        if let (false, Some(port)) = (host_has_port, default) {
            variants.push(format!("{authority}:{port}{}", &url[end..]));
        }
    }
    variants
}

/// `https://h:443/p` → `https://h/p` (and `:80` for http).
fn strip_default_port(url: &str) -> Option<String> {
    let end = authority_end(url)?;
    let authority = &url[..end];
    for (scheme, port) in [("https://", ":443"), ("http://", ":80")] {
        if authority.starts_with(scheme) && authority.ends_with(port) {
            return Some(format!("{}{}", &authority[..end - port.len()], &url[end..]));
        }
    }
    None
}

/// Byte index where the URL's authority (scheme://host[:port]) ends.
fn authority_end(url: &str) -> Option<usize> {
    let start = url.find("://")? + 3;
    Some(
        url[start..]
            .find(['/', '?', '#'])
            .map_or(url.len(), |i| start + i),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn matches_twilios_published_example() {
        // The example of Twilio's security documentation and twilio-python's tests.
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let body = params(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+14158675309"),
            ("Digits", "1234"),
            ("From", "+14158675309"),
            ("To", "+18005551212"),
        ]);
        let signature = sign("12345", url, &body);
        assert_eq!(signature, "RSOYDt4T1cUTdK1PDd93/VVr8B8=");
        assert!(verify("12345", url, &body, &signature));
        // With the default port written in, as Twilio sometimes signs it.
        assert!(verify(
            "12345",
            "https://mycompany.com:443/myapp.php?foo=1&bar=2",
            &body,
            &signature
        ));
    }

    #[test]
    fn a_changed_parameter_url_or_token_fails() {
        let url = "https://voice.example.com/v1/sessions/twilio/task/task_1/status";
        let body = params(&[("CallSid", "CA1"), ("CallStatus", "ringing")]);
        let signature = sign("token", url, &body);
        assert!(verify("token", url, &body, &signature));
        let changed = params(&[("CallSid", "CA1"), ("CallStatus", "completed")]);
        assert!(!verify("token", url, &changed, &signature));
        assert!(!verify("other", url, &body, &signature));
        assert!(!verify("token", &format!("{url}x"), &body, &signature));
        assert!(!verify("token", url, &body, "not base64!"));
        assert!(!verify("token", url, &body, ""));
    }

    #[test]
    fn repeated_names_are_sorted_by_value() {
        let url = "https://a.example/x";
        let one = params(&[("E", "b"), ("E", "a")]);
        let two = params(&[("E", "a"), ("E", "b")]);
        assert_eq!(sign("t", url, &one), sign("t", url, &two));
    }
}
