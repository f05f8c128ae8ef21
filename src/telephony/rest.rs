//! Twilio's REST API, for placing outbound calls (protocols.md §3.1):
//! `POST {base}/2010-04-01/Accounts/{AccountSid}/Calls.json`, HTTP Basic auth with the account
//! SID and auth token, a form-encoded body (`StatusCallbackEvent` repeated once per event),
//! answered 201 with the Call resource; and for sending the portal's sign-in codes by SMS:
//! `POST .../Messages.json` with `To`, `From` (or `MessagingServiceSid`) and `Body`, answered
//! 201 with the Message resource; and for controlling a live call: `POST .../Calls/{CallSid}.json`
//! with `Status=completed` hangs it up, with `Twiml=` redirects it (protocols.md §3.1, §3.5).
//! A call may ask for asynchronous answering-machine detection (`MachineDetection`,
//! `AsyncAmd`, `AsyncAmdStatusCallback`).

use std::time::Duration;

use serde::Deserialize;

use crate::config::TwilioConfig;

/// The Twilio account's client.
#[derive(Clone)]
pub struct TwilioClient {
    http: reqwest::Client,
    base_url: String,
    account_sid: String,
    auth_token: String,
}

impl std::fmt::Debug for TwilioClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioClient")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// What an outbound call is placed with.
#[derive(Debug, Clone)]
pub struct NewCall {
    pub to: String,
    pub from: String,
    /// Fetched (POST) when the call is answered; answers the TwiML.
    pub url: String,
    /// Receives `initiated`, `ringing`, `answered` and `completed` (POST).
    pub status_callback: String,
    /// Also record the call on Twilio's side (`Record=true`).
    pub record: bool,
    /// Detect answering machines without holding the call up: Twilio POSTs its verdict
    /// (`AnsweredBy`) here while the call goes on (`MachineDetection=DetectMessageEnd`,
    /// `AsyncAmd=true`, protocols.md §3.5). `None`: no detection.
    pub amd_callback: Option<String>,
}

/// A call to the person a warm transfer hands the caller to, with its markup inline.
#[derive(Debug, Clone)]
pub struct PersonCall {
    pub to: String,
    /// A number of the account (the line the caller is on).
    pub from: String,
    /// What the person hears when they answer (`Twiml=`).
    pub twiml: String,
    /// Receives `answered` and `completed` (POST), with the failures.
    pub status_callback: String,
    /// Seconds to ring (`Timeout`).
    pub ring_seconds: u32,
}

/// The fields of Twilio's Call resource we use.
#[derive(Debug, Clone, Deserialize)]
pub struct CallResource {
    pub sid: String,
    pub status: String,
}

/// The fields of Twilio's Message resource we use.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageResource {
    pub sid: String,
    pub status: String,
}

/// Who an SMS is sent as: a number of the account, or a Messaging Service.
#[derive(Debug, Clone)]
pub enum Sender {
    From(String),
    MessagingService(String),
}

/// Why a call could not be placed.
#[derive(Debug, thiserror::Error)]
pub enum TwilioError {
    /// Twilio refused what was asked (HTTP 400/404/422: a bad number, an unverified caller id).
    #[error("twilio: {message} (HTTP {status}{})", code.map(|c| format!(", code {c}")).unwrap_or_default())]
    Rejected {
        status: u16,
        code: Option<i64>,
        message: String,
    },
    /// Twilio failed, refused our credentials, or could not be reached.
    #[error("twilio: {0}")]
    Failed(String),
}

/// Twilio's error body (legacy `{code, message, more_info, status}` or RFC 9457 `detail`).
#[derive(Debug, Deserialize)]
struct ErrorBody {
    code: Option<i64>,
    message: Option<String>,
    detail: Option<String>,
}

impl TwilioClient {
    pub fn new(config: &TwilioConfig) -> reqwest::Result<TwilioClient> {
        Ok(TwilioClient {
            http: reqwest::Client::builder()
                .timeout(Duration::from_millis(config.timeout_ms.max(1)))
                .build()?,
            base_url: config.base_url.trim_end_matches('/').to_string(),
            account_sid: config.account_sid.trim().to_string(),
            auth_token: config.auth_token.trim().to_string(),
        })
    }

    /// Places a call; answers Twilio's Call resource (status `queued` as a rule).
    pub async fn create_call(&self, call: &NewCall) -> Result<CallResource, TwilioError> {
        let mut form: Vec<(&str, &str)> = vec![
            ("To", &call.to),
            ("From", &call.from),
            ("Url", &call.url),
            ("Method", "POST"),
            ("StatusCallback", &call.status_callback),
            ("StatusCallbackMethod", "POST"),
        ];
        for event in ["initiated", "ringing", "answered", "completed"] {
            form.push(("StatusCallbackEvent", event));
        }
        if call.record {
            form.push(("Record", "true"));
        }
        if let Some(callback) = &call.amd_callback {
            form.extend([
                ("MachineDetection", "DetectMessageEnd"),
                ("AsyncAmd", "true"),
                ("AsyncAmdStatusCallback", callback.as_str()),
                ("AsyncAmdStatusCallbackMethod", "POST"),
            ]);
        }
        self.post_form("Calls.json", &form).await
    }

    /// Calls the person of a warm transfer, with its markup inline.
    pub async fn call_person(&self, call: &PersonCall) -> Result<CallResource, TwilioError> {
        let timeout = call.ring_seconds.to_string();
        let form: Vec<(&str, &str)> = vec![
            ("To", &call.to),
            ("From", &call.from),
            ("Twiml", &call.twiml),
            ("Timeout", &timeout),
            ("StatusCallback", &call.status_callback),
            ("StatusCallbackMethod", "POST"),
            ("StatusCallbackEvent", "answered"),
            ("StatusCallbackEvent", "completed"),
        ];
        self.post_form("Calls.json", &form).await
    }

    /// Hangs up a live call (`Status=completed`). Answers `false` when Twilio no longer has
    /// the call in progress (HTTP 404 with code 20404: it already ended), which is what a hang-up
    /// wanted.
    pub async fn hang_up(&self, call_sid: &str) -> Result<bool, TwilioError> {
        self.update_call(call_sid, &[("Status", "completed")]).await
    }

    /// Replaces what a live call runs with `twiml` (`Twiml=`): its media stream gets `stop`
    /// and closes, and the call goes on with the new markup (a transfer's `<Dial>`, keys
    /// pressed with `<Play digits>`). Answers `false` when the call had already ended.
    pub async fn redirect(&self, call_sid: &str, twiml: &str) -> Result<bool, TwilioError> {
        self.update_call(call_sid, &[("Twiml", twiml)]).await
    }

    /// `POST .../Calls/{CallSid}.json` with `form`; `false` for Twilio's 404 with code 20404
    /// (the call is gone).
    async fn update_call(
        &self,
        call_sid: &str,
        form: &[(&str, &str)],
    ) -> Result<bool, TwilioError> {
        let resource = format!("Calls/{call_sid}.json");
        match self.post_form::<CallResource>(&resource, form).await {
            Ok(_) => Ok(true),
            Err(TwilioError::Rejected {
                status: 404,
                code: Some(20404),
                ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sends an SMS; answers Twilio's Message resource (status `queued` or `accepted`).
    pub async fn send_message(
        &self,
        to: &str,
        sender: &Sender,
        body: &str,
    ) -> Result<MessageResource, TwilioError> {
        let mut form: Vec<(&str, &str)> = vec![("To", to), ("Body", body)];
        match sender {
            Sender::From(number) => form.push(("From", number)),
            Sender::MessagingService(sid) => form.push(("MessagingServiceSid", sid)),
        }
        self.post_form("Messages.json", &form).await
    }

    /// POSTs a form to one of the account's resources and reads the created resource.
    async fn post_form<T: serde::de::DeserializeOwned>(
        &self,
        resource: &str,
        form: &[(&str, &str)],
    ) -> Result<T, TwilioError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/{resource}",
            self.base_url, self.account_sid
        );
        let response = self
            .http
            .post(url)
            .basic_auth(&self.account_sid, Some(&self.auth_token))
            .form(form)
            .send()
            .await
            .map_err(|e| TwilioError::Failed(format!("the REST API did not answer: {e}")))?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| TwilioError::Failed(format!("the answer broke off: {e}")))?;
        if (200..300).contains(&status) {
            return serde_json::from_slice(&body).map_err(|e| {
                TwilioError::Failed(format!(
                    "unreadable {resource} resource (HTTP {status}): {e}"
                ))
            });
        }
        let error: Option<ErrorBody> = serde_json::from_slice(&body).ok();
        let code = error.as_ref().and_then(|e| e.code);
        let message = error
            .and_then(|e| e.message.or(e.detail))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
        Err(match status {
            400 | 404 | 422 => TwilioError::Rejected {
                status,
                code,
                message,
            },
            401 | 403 => TwilioError::Failed(format!(
                "rejected the account credentials (HTTP {status}): {message}"
            )),
            _ => TwilioError::Failed(format!("HTTP {status}: {message}")),
        })
    }
}
