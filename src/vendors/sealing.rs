//! Encryption at rest of stored vendor keys: AES-256-GCM with a random 96-bit nonce per key,
//! the developer and provider ids as associated data (a sealed key copied to another row does
//! not open). The master key comes from config or is generated once into the data dir with
//! owner-only permissions.

use std::io::Write;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use crate::ids::DeveloperId;

const VERSION: &str = "v1";
const MASTER_KEY_FILE: &str = "provider-keys.key";

#[derive(Clone)]
pub struct KeySealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for KeySealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeySealer")
    }
}

impl KeySealer {
    pub fn new(master_key: &[u8; 32]) -> Self {
        KeySealer {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(master_key)),
        }
    }

    /// The configured master key (base64 of 32 bytes), or the one in the data dir, created
    /// there (mode 0600) on first use.
    pub fn load(configured: &str, data_dir: &Path) -> anyhow::Result<Self> {
        let configured = configured.trim();
        if !configured.is_empty() {
            return Ok(Self::new(&decode_master_key(configured).map_err(
                |err| anyhow::anyhow!("provider_keys.master_key: {err}"),
            )?));
        }
        let path = data_dir.join(MASTER_KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Self::new(
                &decode_master_key(text.trim())
                    .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?,
            )),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let key = Aes256Gcm::generate_key(OsRng);
                write_private(&path, BASE64.encode(key).as_bytes())?;
                Ok(Self::new(&key.into()))
            }
            Err(err) => Err(anyhow::anyhow!("{}: {err}", path.display())),
        }
    }

    /// Seals `secret` for one developer's provider: `v1:<base64 nonce||ciphertext>`.
    pub fn seal(&self, developer: &DeveloperId, provider: &str, secret: &str) -> String {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let aad = associated_data(developer, provider);
        let ciphertext = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: secret.as_bytes(),
                    aad: &aad,
                },
            )
            .expect("AES-GCM encryption of a short key cannot fail");
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        format!("{VERSION}:{}", BASE64.encode(sealed))
    }

    /// Opens what `seal` made for the same developer and provider; `None` when it was sealed
    /// under another master key, for another row, or tampered with.
    pub fn open(&self, developer: &DeveloperId, provider: &str, sealed: &str) -> Option<String> {
        let body = sealed.strip_prefix(VERSION)?.strip_prefix(':')?;
        let bytes = BASE64.decode(body).ok()?;
        if bytes.len() < 12 {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let aad = associated_data(developer, provider);
        let plain = self
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

/// The end of a secret that reads show to tell secrets apart: its last four characters, but
/// never more than a third of it, so a short secret is not given away.
pub fn hint(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    let shown = (chars.len() / 3).min(4);
    chars[chars.len() - shown..].iter().collect()
}

fn associated_data(developer: &DeveloperId, provider: &str) -> Vec<u8> {
    format!("{developer}\u{0}{provider}").into_bytes()
}

fn decode_master_key(text: &str) -> Result<[u8; 32], String> {
    let bytes = BASE64
        .decode(text)
        .map_err(|_| "the master key is not base64".to_string())?;
    bytes
        .try_into()
        .map_err(|bytes: Vec<u8>| format!("the master key is {} bytes, not 32", bytes.len()))
}

/// Creates `path` readable and writable by its owner only, failing if it exists (for the
/// secrets a server generates into its data dir).
pub fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    file.write_all(contents)?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_never_gives_away_a_short_secret() {
        assert_eq!(hint("sk-proj-abcdefghijklmnop1234"), "1234");
        assert_eq!(hint("abcdefgh"), "gh");
        assert_eq!(hint("abc"), "c");
        assert_eq!(hint("ab"), "");
        assert_eq!(hint("ключ-ключ-ключ-ёж"), "ч-ёж");
    }

    #[test]
    fn sealed_keys_open_only_for_their_row() {
        let sealer = KeySealer::new(&[7u8; 32]);
        let sealed = sealer.seal(&"dev_a".into(), "openai", "sk-secret-1234");
        assert!(!sealed.contains("sk-secret"));
        assert_eq!(
            sealer.open(&"dev_a".into(), "openai", &sealed).as_deref(),
            Some("sk-secret-1234")
        );
        assert_eq!(sealer.open(&"dev_b".into(), "openai", &sealed), None);
        assert_eq!(sealer.open(&"dev_a".into(), "deepgram", &sealed), None);
        assert_eq!(
            KeySealer::new(&[8u8; 32]).open(&"dev_a".into(), "openai", &sealed),
            None
        );
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push('A');
        assert_eq!(sealer.open(&"dev_a".into(), "openai", &tampered), None);
    }

    #[test]
    fn master_key_is_generated_once_with_owner_only_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let first = KeySealer::load("", dir.path()).unwrap();
        let sealed = first.seal(&"d".into(), "p", "k");
        let second = KeySealer::load("", dir.path()).unwrap();
        assert_eq!(second.open(&"d".into(), "p", &sealed).as_deref(), Some("k"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(MASTER_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(KeySealer::load("not base64!", dir.path()).is_err());
        assert!(KeySealer::load(&BASE64.encode([1u8; 16]), dir.path()).is_err());
    }
}
