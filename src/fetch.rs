//! Fetching a URL on a caller's behalf (transcription `audioUrl`, ingest `sourceUrl`) without
//! letting the caller reach what only the server can: loopback, private, link-local and cloud
//! metadata addresses are refused, for the first request and for every redirect, unless an
//! operator allows them (`[fetch] allow`). Size and time are capped.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

use crate::config::FetchConfig;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FetchError {
    #[error("{0}")]
    InvalidUrl(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("the resource is larger than the {0} byte limit")]
    TooLarge(u64),
    #[error("{0}")]
    Failed(String),
}

/// What was fetched.
#[derive(Debug)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
    /// The final URL after redirects.
    pub url: Url,
}

/// A guarded HTTP client; cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    max_bytes: u64,
}

/// Which destinations may be fetched.
#[derive(Debug, Default)]
struct AddressPolicy {
    hosts: Vec<String>,
    networks: Vec<IpNet>,
}

impl AddressPolicy {
    fn from_config(allow: &[String]) -> Self {
        let mut policy = AddressPolicy::default();
        for entry in allow {
            let entry = entry.trim();
            if let Ok(network) = entry.parse::<IpNet>() {
                policy.networks.push(network);
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                policy.networks.push(IpNet::from(ip));
            } else if !entry.is_empty() {
                policy.hosts.push(entry.to_ascii_lowercase());
            }
        }
        policy
    }

    fn host_allowed(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    fn ip_allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.networks.iter().any(|n| n.contains(&ip))
    }
}

/// True for addresses on the public internet: not loopback, private, link-local (which holds
/// the 169.254.169.254 metadata service), shared (CGNAT), benchmarking (198.18.0.0/15), the
/// retired 6to4 relay anycast (192.88.99.0/24), IETF protocol assignments, unspecified,
/// multicast, broadcast or documentation ranges. IPv6 addresses that carry an IPv4 address
/// (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4) are judged as the IPv4 they
/// carry; Teredo, discard-only and local-use NAT64 prefixes are never public.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 88 && c == 99)
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let segments = v6.segments();
            let embedded = |high: u16, low: u16| {
                std::net::Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
            };
            // Addresses that carry an IPv4 address a gateway or a dual stack forwards to:
            // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291), IPv4-translated
            // ::ffff:0:a.b.c.d (RFC 2765), NAT64's well-known prefix 64:ff9b::/96 (the last
            // 32 bits) and 6to4's 2002::/16 (the next 32 bits). They are as public as the
            // IPv4 address inside (`::` and `::1` carry 0.0.0.0 and 0.0.0.1: never public).
            let v4_inside = match segments[..6] {
                [0, 0, 0, 0, 0, 0] => Some((segments[6], segments[7])),
                [0, 0, 0, 0, 0xffff, 0] => Some((segments[6], segments[7])),
                [0x64, 0xff9b, 0, 0, 0, 0] => Some((segments[6], segments[7])),
                _ if segments[0] == 0x2002 => Some((segments[1], segments[2])),
                _ => None,
            };
            if let Some((high, low)) = v4_inside {
                return is_public(IpAddr::V4(embedded(high, low)));
            }
            let first = segments[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || segments[..2] == [0x64, 0xff9b] // local-use NAT64 (RFC 8215)
                || segments[..4] == [0x100, 0, 0, 0] // discard-only
                || segments[..2] == [0x2001, 0] // Teredo: carries an obfuscated IPv4
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || first == 0x2001 && segments[1] == 0x0db8) // documentation
        }
    }
}

/// Resolves names and drops every address the policy refuses, so a DNS name pointing at an
/// internal address cannot be used to reach it.
struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let host_allowed = policy.host_allowed(&host);
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| host_allowed || policy.ip_allowed(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(
                    format!("{host} resolves only to addresses that may not be fetched").into(),
                );
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

impl Fetcher {
    pub fn new(config: &FetchConfig) -> Result<Self, FetchError> {
        let policy = Arc::new(AddressPolicy::from_config(&config.allow));
        let redirect_policy = {
            let policy = policy.clone();
            let max = config.max_redirects;
            reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > max {
                    return attempt.error(format!("more than {max} redirects"));
                }
                match check_url(&policy, attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(e) => attempt.error(e.to_string()),
                }
            })
        };
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .connect_timeout(Duration::from_millis(config.timeout_ms.min(10_000)))
            .redirect(redirect_policy)
            .dns_resolver(Arc::new(GuardedResolver {
                policy: policy.clone(),
            }))
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Failed(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            client,
            policy,
            max_bytes: config.max_bytes,
        })
    }

    /// Validates `url` and fetches it, refusing forbidden destinations, bodies over the
    /// limit (by Content-Length, and by counting as it streams) and non-success statuses.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        let url =
            Url::parse(url).map_err(|e| FetchError::InvalidUrl(format!("not a valid URL: {e}")))?;
        check_url(&self.policy, &url)?;
        let response = self.client.get(url).send().await.map_err(describe)?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Failed(format!(
                "the URL answered HTTP {}",
                status.as_u16()
            )));
        }
        if response
            .content_length()
            .is_some_and(|len| len > self.max_bytes)
        {
            return Err(FetchError::TooLarge(self.max_bytes));
        }
        let final_url = response.url().clone();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut bytes = Vec::new();
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(describe)?;
            if bytes.len() as u64 + chunk.len() as u64 > self.max_bytes {
                return Err(FetchError::TooLarge(self.max_bytes));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            bytes,
            content_type,
            url: final_url,
        })
    }
}

/// Where and how an HTTP tool is called.
#[derive(Debug, Clone, Copy)]
pub struct ToolRequest<'a> {
    pub method: &'a str,
    pub url: &'a str,
    /// Sent as they are (the developer's own, then the call's context).
    pub headers: &'a [(String, String)],
    /// Signs the request when set.
    pub secret: Option<&'a str>,
}

/// What an HTTP tool answered.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Fetcher {
    /// Calls a developer's HTTP endpoint (a tool) under the same address guard: `GET` with the
    /// arguments as query parameters, any other method with them as a JSON body, with
    /// `headers`. With a `secret`, the request carries `Switchboard-Signature` (see
    /// [`crate::signature`]) over the body, or over the query string of a `GET`.
    /// The body of the answer is read up to `max_body` bytes; the whole call is cut off after
    /// `timeout`.
    pub async fn call_json(
        &self,
        tool: &ToolRequest<'_>,
        arguments: &serde_json::Value,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Answer, FetchError> {
        let mut url = self.check(tool.url)?;
        let method = reqwest::Method::from_bytes(tool.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| {
                FetchError::InvalidUrl(format!("{} is not an HTTP method", tool.method))
            })?;
        let signed: Vec<u8> = if method == reqwest::Method::GET {
            if let Some(map) = arguments.as_object().filter(|map| !map.is_empty()) {
                let mut pairs = url.query_pairs_mut();
                for (k, v) in map {
                    pairs.append_pair(k, &v.as_str().map_or_else(|| v.to_string(), str::to_string));
                }
            }
            url.query().unwrap_or_default().as_bytes().to_vec()
        } else {
            serde_json::to_vec(arguments).expect("a JSON value serializes")
        };
        let mut request = self.client.request(method.clone(), url).timeout(timeout);
        if method != reqwest::Method::GET {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(signed.clone());
        }
        for (name, value) in tool.headers {
            request = request.header(name.as_str(), value);
        }
        if let Some(secret) = tool.secret {
            let now_s = crate::time::now_ms() / 1000;
            request = request.header(
                crate::signature::SWITCHBOARD_HEADER,
                crate::signature::header(&signed, secret, now_s),
            );
        }
        let response = request.send().await.map_err(describe)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(describe)?;
            let room = max_body.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= max_body {
                break;
            }
        }
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

impl Fetcher {
    /// Checks `url` as every fetched URL is checked before any request (scheme, no
    /// credentials, no literal internal address); a name is checked again as it resolves.
    pub fn check(&self, url: &str) -> Result<Url, FetchError> {
        let url =
            Url::parse(url).map_err(|e| FetchError::InvalidUrl(format!("not a valid URL: {e}")))?;
        check_url(&self.policy, &url)?;
        Ok(url)
    }

    /// Posts `body` (JSON) to an integrator's endpoint under the same address guard, with
    /// `headers`; answers the status. The answer's body is not read (only its status counts),
    /// and the whole request is cut off after `timeout`.
    pub async fn post_json(
        &self,
        url: &str,
        body: Vec<u8>,
        headers: &[(&str, String)],
        timeout: Duration,
    ) -> Result<u16, FetchError> {
        let url = self.check(url)?;
        let mut request = self
            .client
            .post(url)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(describe)?;
        Ok(response.status().as_u16())
    }
}

/// Scheme, credentials and literal-IP checks that need no DNS (names are checked when they
/// resolve).
fn check_url(policy: &AddressPolicy, url: &Url) -> Result<(), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::InvalidUrl(format!(
            "only http and https URLs can be fetched, not {}",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::InvalidUrl(
            "URLs with credentials are not fetched".into(),
        ));
    }
    let host = url
        .host()
        .ok_or_else(|| FetchError::InvalidUrl("the URL has no host".into()))?;
    let literal = match host {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(name) => {
            if policy.host_allowed(name) {
                return Ok(());
            }
            None
        }
    };
    if let Some(ip) = literal {
        if !policy.ip_allowed(ip) {
            return Err(FetchError::Forbidden(format!(
                "{ip} is a loopback, private, link-local or reserved address and may not be fetched"
            )));
        }
    }
    Ok(())
}

/// The one message every failure to reach an allowed address gets: refused, unreachable, no
/// route, reset, timed out or a broken answer all read the same, so the caller cannot map which
/// hosts and ports exist behind the server by the wording of the error.
pub const UNREACHABLE: &str = "the URL could not be fetched";

fn describe(error: reqwest::Error) -> FetchError {
    if error.is_redirect() {
        return FetchError::Forbidden(format!("a redirect was refused: {}", root_cause(&error)));
    }
    let cause = root_cause(&error);
    if error.is_connect() && cause.contains("may not be fetched") {
        return FetchError::Forbidden(cause);
    }
    tracing::debug!(error = %cause, "fetching a URL failed");
    FetchError::Failed(UNREACHABLE.into())
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "255.255.255.255",
            // NAT64 and 6to4 addresses carrying the metadata service or loopback.
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
            "2002:a9fe:a9fe::1",
            "2002:0a00:0001::1",
            // IPv4-compatible and IPv4-translated forms, local-use NAT64, Teredo, discard.
            "::127.0.0.1",
            "::a9fe:a9fe",
            "::ffff:0:127.0.0.1",
            "::ffff:0:a00:1",
            "64:ff9b:1::a00:1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            // Benchmarking and the 6to4 relay anycast.
            "198.18.0.1",
            "198.19.255.254",
            "192.88.99.1",
            "::c612:1",
            "::2",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} passed as public");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "::808:808",
            "::ffff:0:808:808",
            "198.20.0.1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} refused");
        }
    }

    #[test]
    fn literal_urls_are_checked_before_any_request() {
        let policy = AddressPolicy::from_config(&[]);
        let check = |u: &str| check_url(&policy, &Url::parse(u).unwrap());
        assert!(matches!(
            check("http://127.0.0.1/a.wav"),
            Err(FetchError::Forbidden(_))
        ));
        assert!(matches!(
            check("http://[::1]:8080/"),
            Err(FetchError::Forbidden(_))
        ));
        assert!(matches!(
            check("http://169.254.169.254/latest/meta-data"),
            Err(FetchError::Forbidden(_))
        ));
        assert!(matches!(
            check("file:///etc/passwd"),
            Err(FetchError::InvalidUrl(_))
        ));
        assert!(matches!(
            check("http://user:pw@example.com/"),
            Err(FetchError::InvalidUrl(_))
        ));
        assert!(check("https://example.com/a.mp3").is_ok());
    }

    #[test]
    fn operators_can_allow_networks_and_hosts() {
        let policy = AddressPolicy::from_config(&["127.0.0.0/8".into(), "media.internal".into()]);
        assert!(check_url(&policy, &Url::parse("http://127.0.0.1:9000/x").unwrap()).is_ok());
        assert!(check_url(&policy, &Url::parse("http://media.internal/x").unwrap()).is_ok());
        assert!(check_url(&policy, &Url::parse("http://10.0.0.1/x").unwrap()).is_err());
    }
}
