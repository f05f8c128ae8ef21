//! Relay tokens: the signed context a Twilio stream presents in its `start` message
//! (`customParameters.token`) and a browser presents on the direct socket. A token is
//! `base64url(JSON claims) "." base64url(HMAC-SHA256(claims))` with the server's secret; it
//! carries the session, developer, agent, numbers, instance and expiry. Forged or expired
//! tokens are refused; a token is used once because the session it names can be claimed once.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::ids::{AgentId, DeveloperId, InstanceId, KeyId, SessionId, TaskId};

type HmacSha256 = Hmac<Sha256>;

/// What a token vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayClaims {
    /// The session record the stream belongs to.
    pub sid: SessionId,
    pub dev: DeveloperId,
    pub agent: AgentId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inst: Option<InstanceId>,
    /// The API key that minted the token, when one did: the token is refused once that key is
    /// revoked or expires, even before its own expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyId>,
    /// The session of the same call this one carries on (after keys pressed or a transfer
    /// that failed): its conversation is the agent's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<SessionId>,
    /// What the agent says first in place of its greeting, in a session that carries on
    /// another (`None`: nothing, it listens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub say: Option<String>,
    /// The outbound call task the call was placed as, when it was: the variables it was
    /// placed with are the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// Expiry, Unix epoch milliseconds.
    pub exp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature does not match")]
    Forged,
    #[error("the token has expired")]
    Expired,
}

/// Signs and checks tokens with one secret.
#[derive(Clone)]
pub struct TokenSigner {
    secret: Vec<u8>,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSigner(..)")
    }
}

impl TokenSigner {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        Self {
            secret: secret.into(),
        }
    }

    /// A new random secret, hex-encoded, for a server's first start.
    pub fn generate_secret() -> String {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.secret).expect("HMAC takes a key of any length")
    }

    pub fn sign(&self, claims: &RelayClaims) -> String {
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
        let mut mac = self.mac();
        mac.update(payload.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{payload}.{signature}")
    }

    /// Checks the signature (in constant time) and the expiry against `now_ms`.
    pub fn verify(&self, token: &str, now_ms: i64) -> Result<RelayClaims, TokenError> {
        let (payload, signature) = token.split_once('.').ok_or(TokenError::Malformed)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TokenError::Malformed)?;
        let mut mac = self.mac();
        mac.update(payload.as_bytes());
        mac.verify_slice(&signature)
            .map_err(|_| TokenError::Forged)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        let claims: RelayClaims =
            serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)?;
        if claims.exp <= now_ms {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> RelayClaims {
        RelayClaims {
            sid: "ses_1".into(),
            dev: "dev_a".into(),
            agent: "support".into(),
            from: Some("+14155550100".into()),
            to: Some("+14155550199".into()),
            inst: None,
            key: Some("key_1".into()),
            prev: None,
            say: None,
            task: None,
            exp,
        }
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let signer = TokenSigner::new("secret");
        let token = signer.sign(&claims(2_000));
        assert_eq!(signer.verify(&token, 1_000).unwrap(), claims(2_000));
        assert_eq!(signer.verify(&token, 2_000), Err(TokenError::Expired));
    }

    #[test]
    fn forged_and_malformed_tokens_are_refused() {
        let signer = TokenSigner::new("secret");
        let token = signer.sign(&claims(2_000));
        assert_eq!(
            TokenSigner::new("other").verify(&token, 0),
            Err(TokenError::Forged)
        );
        // Claims changed after signing.
        let (_, signature) = token.split_once('.').unwrap();
        let mut altered = claims(2_000);
        altered.agent = "billing".into();
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&altered).unwrap());
        assert_eq!(
            signer.verify(&format!("{payload}.{signature}"), 0),
            Err(TokenError::Forged)
        );
        for bad in ["", "abc", "a.b", "....", "eyJ9.!!"] {
            assert!(signer.verify(bad, 0).is_err(), "{bad}");
        }
    }
}
