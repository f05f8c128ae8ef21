//! The developer portal's sign-in and sessions: one-time codes sent to a phone (by SMS through
//! Twilio's Messages API, or to the server log when no sender is configured), each answering
//! the challenge of the browser that asked for it; rate limits per number, per number and
//! client address, and per client address, where a browser that signed in with the number
//! before (its device cookie) is not held back by the number-wide one, so a stranger cannot
//! lock the owner out; verification that maps a number to its developer (created on first
//! sign-in), and server-side sessions with idle and absolute expiry, revocation and a CSRF
//! token each. The HTTP side is `http::portal`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::{Rng, RngCore};
use sha2::Sha256;

use crate::config::PortalConfig;
use crate::error::ApiError;
use crate::ids::DeveloperId;
use crate::registry::keys::hash_key;
use crate::store::portal::{self, Attempt, NewCode, NewSession, Verification};
use crate::store::Db;
use crate::telephony::is_e164;
use crate::telephony::rest::{Sender, TwilioClient, TwilioError};
use crate::time::now_ms;

mod link;

pub use link::Linked;

type HmacSha256 = Hmac<Sha256>;

/// Twilio error codes that mean the destination number cannot receive the code.
const TWILIO_BAD_DESTINATION: [i64; 4] = [21211, 21214, 21408, 21614];

/// Where sign-in codes go.
#[derive(Clone)]
pub enum Delivery {
    Sms {
        client: TwilioClient,
        sender: Sender,
    },
    /// No SMS sender: the code is written to the server log (development).
    Log,
}

/// The portal's sign-in and session service.
#[derive(Clone)]
pub struct Portal {
    db: Db,
    config: PortalConfig,
    secret: Vec<u8>,
    delivery: Delivery,
    link_failures: link::LinkFailures,
}

/// A code went out.
#[derive(Debug, Clone)]
pub struct CodeSent {
    pub phone: String,
    pub expires_at: i64,
    /// `sms` or `log`.
    pub channel: &'static str,
    /// Random; only the browser that asked holds it, and the code works only with it.
    pub challenge_id: String,
}

/// A successful sign-in: the raw session id goes into the cookie, and only there.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub session_id: String,
    pub developer_id: DeveloperId,
    pub created: bool,
    pub expires_at: i64,
}

/// A live portal session.
#[derive(Debug, Clone)]
pub struct ActiveSession {
    pub id_hash: String,
    pub developer_id: DeveloperId,
    pub phone: String,
    pub created_at: i64,
    /// When it ends unless used again.
    pub idle_expires_at: i64,
    /// When it ends regardless.
    pub expires_at: i64,
}

/// Fewest digits of a number a sign-in code can be texted to (shorter E.164 numbers exist
/// only as service codes).
const MIN_PHONE_DIGITS: usize = 8;

/// Normalises a phone number to E.164: spaces, dots, dashes and parentheses are dropped;
/// what remains must be E.164 ([`is_e164`]) with at least [`MIN_PHONE_DIGITS`] digits.
pub fn normalise_phone(input: &str) -> Option<String> {
    let compact: String = input
        .trim()
        .chars()
        .filter(|c| !matches!(c, ' ' | '.' | '-' | '(' | ')'))
        .collect();
    (is_e164(&compact) && compact[1..].len() >= MIN_PHONE_DIGITS).then_some(compact)
}

/// The address the sign-in rate limits count: an IPv6 address by its /64 (what one
/// subscriber is given), an IPv4-mapped IPv6 address as the IPv4 address, anything else as it
/// is.
pub fn rate_limit_address(address: &str) -> String {
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let prefix = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{prefix}/64")
            }
        },
        Ok(ip) => ip.to_string(),
        Err(_) => address.to_string(),
    }
}

/// Random bytes as base64url: challenge ids, device ids, session ids.
fn random_token() -> String {
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    URL_SAFE_NO_PAD.encode(raw)
}

/// Masks all but the last 4 digits, for logs.
pub fn masked(phone: &str) -> String {
    let keep = phone.len().saturating_sub(4);
    format!("{}{}", "*".repeat(keep), &phone[keep..])
}

impl Portal {
    pub fn new(db: Db, config: PortalConfig, secret: &str, delivery: Delivery) -> Portal {
        Portal {
            db,
            config,
            secret: secret.as_bytes().to_vec(),
            delivery,
            link_failures: link::LinkFailures::default(),
        }
    }

    pub fn config(&self) -> &PortalConfig {
        &self.config
    }

    fn mac(&self, parts: &[&str]) -> HmacSha256 {
        let mut mac =
            HmacSha256::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        for part in parts {
            mac.update(part.as_bytes());
            mac.update(&[0]);
        }
        mac
    }

    /// The stored form of a code: HMAC-SHA256 under the portal secret, bound to the number
    /// (base64url, as the portal's other secrets).
    fn code_hash(&self, phone: &str, code: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(&["code", phone, code]).finalize().into_bytes())
    }

    fn code_matches(&self, phone: &str, code: &str, stored: &str) -> bool {
        let Ok(stored) = URL_SAFE_NO_PAD.decode(stored) else {
            return false;
        };
        self.mac(&["code", phone, code])
            .verify_slice(&stored)
            .is_ok()
    }

    /// The CSRF token of a session: derived from its raw id, so every node computes the same.
    pub fn csrf_token(&self, session_id_hash: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(&["csrf", session_id_hash]).finalize().into_bytes())
    }

    /// Whether `presented` is the session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, session_id_hash: &str, presented: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(presented.trim()) else {
            return false;
        };
        self.mac(&["csrf", session_id_hash])
            .verify_slice(&bytes)
            .is_ok()
    }

    /// The device cookie's value for a browser that just signed in with `phone`: a random id
    /// and its MAC bound to the number, so it cannot be made for a number by anyone else.
    pub fn device_token(&self, phone: &str) -> String {
        let id = random_token();
        let mac = URL_SAFE_NO_PAD.encode(self.mac(&["device", phone, &id]).finalize().into_bytes());
        format!("{id}.{mac}")
    }

    /// Whether `token` (a device cookie's value) was made by [`Portal::device_token`] for
    /// `phone`; compared in constant time.
    pub fn device_trusted(&self, token: &str, phone: &str) -> bool {
        let Some((id, mac)) = token.split_once('.') else {
            return false;
        };
        if id.len() > 64 {
            return false;
        }
        let Ok(mac) = URL_SAFE_NO_PAD.decode(mac) else {
            return false;
        };
        self.mac(&["device", phone, id]).verify_slice(&mac).is_ok()
    }

    /// Sends a new code to `phone` (already normalised), unless too many were asked for lately:
    /// for this number by browsers it never signed in (unless `trusted`, the request carries
    /// the device cookie of one that did), for this number from this address, or from this
    /// address at all (`client_ip` as [`rate_limit_address`] gives it). Older codes of the
    /// number stay live, each for its own challenge.
    pub async fn request_code(
        &self,
        phone: &str,
        client_ip: &str,
        trusted: bool,
    ) -> Result<CodeSent, ApiError> {
        let now = now_ms();
        let window_ms = (self.config.code_request_window_seconds as i64).saturating_mul(1000);
        let since = now - window_ms;
        let limited = |times: &[i64], limit: u32, what: &str| -> Result<(), ApiError> {
            if times.len() < limit as usize {
                return Ok(());
            }
            let oldest = times[times.len() - limit as usize];
            let retry_after_seconds = ((oldest + window_ms - now).max(0) as u64).div_ceil(1000);
            Err(ApiError::RateLimited {
                message: format!(
                    "{what} asked for {limit} sign-in codes in {} seconds; retry in {} s",
                    self.config.code_request_window_seconds,
                    retry_after_seconds.max(1)
                ),
                limit,
                retry_after_seconds: retry_after_seconds.max(1),
            })
        };
        let by_phone_and_ip =
            portal::requests_for_phone_from_ip(&self.db, phone, client_ip, since).await?;
        limited(
            &by_phone_and_ip,
            self.config.code_requests_per_phone_per_ip,
            "this address, for this number,",
        )?;
        if !trusted {
            let by_phone = portal::untrusted_requests_for_phone(&self.db, phone, since).await?;
            limited(
                &by_phone,
                self.config.code_requests_per_phone,
                "browsers that have not signed in with this number",
            )?;
        }
        let by_ip = portal::requests_from_ip(&self.db, client_ip, since).await?;
        limited(&by_ip, self.config.code_requests_per_ip, "this address")?;

        let code = format!("{:06}", rand::rng().random_range(0..1_000_000u32));
        let expires_at = now + (self.config.code_ttl_seconds as i64).saturating_mul(1000);
        let challenge_id = random_token();
        let seq = portal::insert_code(
            &self.db,
            &NewCode {
                phone,
                code_hash: &self.code_hash(phone, &code),
                challenge_hash: &hash_key(&challenge_id),
                client_ip,
                trusted,
                created_at: now,
                expires_at,
            },
        )
        .await?;
        let minutes = self.config.code_ttl_seconds.div_ceil(60);
        match &self.delivery {
            Delivery::Log => {
                tracing::warn!(
                    "portal sign-in code for {phone} is {code} (valid {minutes} min); no SMS \
                     sender is configured ([telephony.twilio] account and sms_from), so it is \
                     written here instead"
                );
                Ok(CodeSent {
                    phone: phone.to_string(),
                    expires_at,
                    channel: "log",
                    challenge_id,
                })
            }
            Delivery::Sms { client, sender } => {
                let text = format!(
                    "Your Switchboard sign-in code is {code}. It expires in {minutes} minutes. \
                     Do not share it."
                );
                match client.send_message(phone, sender, &text).await {
                    Ok(message) => {
                        tracing::info!(
                            phone = %masked(phone),
                            sid = %message.sid,
                            status = %message.status,
                            "portal sign-in code sent"
                        );
                        Ok(CodeSent {
                            phone: phone.to_string(),
                            expires_at,
                            channel: "sms",
                            challenge_id,
                        })
                    }
                    Err(err) => {
                        portal::burn_code(&self.db, seq, now_ms()).await?;
                        tracing::warn!(phone = %masked(phone), "portal sign-in code not sent: {err}");
                        Err(match err {
                            TwilioError::Rejected {
                                code: Some(code), ..
                            } if TWILIO_BAD_DESTINATION.contains(&code) => ApiError::invalid(
                                "phone",
                                "this number cannot receive text messages",
                            ),
                            other => ApiError::Upstream(format!(
                                "the sign-in code could not be sent: {other}"
                            )),
                        })
                    }
                }
            }
        }
    }

    /// The stored form of a code that proves phone-number route `route_id` (see
    /// `/v1/phone-numbers`): keyed like sign-in codes, bound to the route.
    pub fn claim_code_hash(&self, route_id: &str, code: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(&["claim", route_id, code]).finalize().into_bytes())
    }

    /// Whether `code` is the one stored (as `stored`) for route `route_id`, in constant time.
    pub fn claim_code_matches(&self, route_id: &str, code: &str, stored: &str) -> bool {
        let Ok(stored) = URL_SAFE_NO_PAD.decode(stored) else {
            return false;
        };
        self.mac(&["claim", route_id, code])
            .verify_slice(&stored)
            .is_ok()
    }

    /// A new random 6-digit code.
    pub fn new_code() -> String {
        format!("{:06}", rand::rng().random_range(0..1_000_000u32))
    }

    /// Texts `text` to `phone` through the sign-in codes' sender (or, with none configured,
    /// writes `log_line` to the server log); answers the channel used, `sms` or `log`. A
    /// number that cannot receive texts is a 400 on `param`; other Twilio failures a 502.
    pub async fn text(
        &self,
        phone: &str,
        text: &str,
        log_line: &str,
        param: &str,
    ) -> Result<&'static str, ApiError> {
        match &self.delivery {
            Delivery::Log => {
                tracing::warn!("{log_line}; no SMS sender is configured, so it is written here");
                Ok("log")
            }
            Delivery::Sms { client, sender } => {
                match client.send_message(phone, sender, text).await {
                    Ok(message) => {
                        tracing::info!(phone = %masked(phone), sid = %message.sid, "code texted");
                        Ok("sms")
                    }
                    Err(err) => {
                        tracing::warn!(phone = %masked(phone), "code not texted: {err}");
                        Err(match err {
                            TwilioError::Rejected {
                                code: Some(code), ..
                            } if TWILIO_BAD_DESTINATION.contains(&code) => {
                                ApiError::invalid(param, "this number cannot receive text messages")
                            }
                            other => {
                                ApiError::Upstream(format!("the code could not be texted: {other}"))
                            }
                        })
                    }
                }
            }
        }
    }

    /// Checks `code` for `phone` and the challenge `challenge_id` it was sent for; on success
    /// opens a session.
    pub async fn verify(
        &self,
        phone: &str,
        challenge_id: &str,
        code: &str,
    ) -> Result<SignedIn, ApiError> {
        let now = now_ms();
        let session_id = random_token();
        let expires_at = now + (self.config.session_max_seconds as i64).saturating_mul(1000);
        let session = NewSession {
            id_hash: hash_key(&session_id),
            expires_at,
        };
        let new_developer = DeveloperId::new();
        let matches = |stored: &str| self.code_matches(phone, code, stored);
        let challenge_hash = hash_key(challenge_id);
        let attempt = Attempt {
            phone,
            challenge_hash: &challenge_hash,
            matches: &matches,
            max_attempts: self.config.code_max_attempts as i32,
            now,
        };
        let outcome = portal::verify(&self.db, &attempt, &new_developer, &session).await?;
        match outcome {
            Verification::SignedIn {
                developer_id,
                created,
            } => {
                tracing::info!(
                    phone = %masked(phone),
                    developer = %developer_id,
                    created,
                    "portal sign-in"
                );
                Ok(SignedIn {
                    session_id,
                    developer_id,
                    created,
                    expires_at,
                })
            }
            Verification::NoCode => Err(ApiError::Unauthorized(
                "no sign-in code is waiting for this number and challenge (it was used, burnt or \
                 never sent); ask for a new one"
                    .into(),
            )),
            Verification::Expired => Err(ApiError::Unauthorized(
                "the sign-in code has expired; ask for a new one".into(),
            )),
            Verification::Wrong { remaining: 0 } => Err(ApiError::Unauthorized(
                "wrong code; it had too many wrong tries and no longer works: ask for a new one"
                    .into(),
            )),
            Verification::Wrong { remaining } => Err(ApiError::Unauthorized(format!(
                "wrong code; {remaining} {} left",
                if remaining == 1 { "try" } else { "tries" }
            ))),
        }
    }

    /// The live session a cookie value names, if any; records its use.
    pub async fn session(&self, session_id: &str) -> Result<Option<ActiveSession>, ApiError> {
        if session_id.is_empty() || session_id.len() > 100 {
            return Ok(None);
        }
        let id_hash = hash_key(session_id);
        let Some(row) = portal::find_session(&self.db, &id_hash).await? else {
            return Ok(None);
        };
        let now = now_ms();
        let idle_ms = (self.config.session_idle_seconds as i64).saturating_mul(1000);
        if row.revoked_at.is_some() || now >= row.expires_at || now >= row.last_seen_at + idle_ms {
            return Ok(None);
        }
        // One write per minute at most (or per half idle period, when that is shorter).
        let mut last_seen = row.last_seen_at;
        if now - row.last_seen_at >= (idle_ms / 2).min(60_000) {
            portal::touch_session(&self.db, &id_hash, now).await?;
            last_seen = now;
        }
        Ok(Some(ActiveSession {
            id_hash,
            developer_id: row.developer_id,
            phone: row.phone,
            created_at: row.created_at,
            idle_expires_at: (last_seen + idle_ms).min(row.expires_at),
            expires_at: row.expires_at,
        }))
    }

    /// Ends a session on the server: its cookie is refused from the next request on, on
    /// every node.
    pub async fn sign_out(&self, id_hash: &str) -> Result<bool, ApiError> {
        Ok(portal::revoke_session(&self.db, id_hash, now_ms()).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_numbers_are_normalised_to_e164_or_refused() {
        assert_eq!(
            normalise_phone("+1 (415) 555-0100").as_deref(),
            Some("+14155550100")
        );
        assert_eq!(
            normalise_phone("+44.20.7946.0958").as_deref(),
            Some("+442079460958")
        );
        for bad in [
            "",
            "4155550100",
            "+0155550100",
            "+1415",
            "+1234567890123456",
            "+1415555010a",
            "++14155550100",
            "+1 415 555 0100 ext 2",
        ] {
            assert_eq!(normalise_phone(bad), None, "{bad}");
        }
    }

    #[test]
    fn ipv6_clients_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(rate_limit_address("203.0.113.7"), "203.0.113.7");
        assert_eq!(
            rate_limit_address("2001:db8:1:2:3:4:5:6"),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            rate_limit_address("2001:db8:1:2::ffff"),
            rate_limit_address("2001:db8:1:2:aaaa::1")
        );
        assert_eq!(rate_limit_address("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(rate_limit_address("unknown"), "unknown");
    }

    #[test]
    fn masks_all_but_the_last_four_digits() {
        assert_eq!(masked("+14155550100"), "********0100");
        assert_eq!(masked("12"), "12");
    }
}
