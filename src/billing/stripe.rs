//! The payment processor's REST API (Stripe): customers, Checkout Sessions in subscription
//! mode, and billing-portal sessions, form-encoded with the secret key as bearer token.

use std::time::Duration;

use serde_json::Value;

use crate::config::StripeConfig;
use crate::error::ApiError;
use crate::ids::DeveloperId;

/// A configured client; absent when no secret key is configured.
#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base: String,
    secret_key: String,
    portal_return_url: String,
}

/// A created Checkout Session.
#[derive(Debug, Clone)]
pub struct CheckoutSession {
    pub id: String,
    pub url: String,
}

impl StripeClient {
    /// The client of `config`, or `None` when billing is not configured.
    pub fn from_config(config: &StripeConfig) -> Option<StripeClient> {
        let secret_key = config.secret_key.trim();
        if secret_key.is_empty() {
            return None;
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .ok()?;
        Some(StripeClient {
            http,
            base: config.base_url.trim().trim_end_matches('/').to_string(),
            secret_key: secret_key.to_string(),
            portal_return_url: config.portal_return_url.trim().to_string(),
        })
    }

    async fn post(&self, path: &str, form: &[(String, String)]) -> Result<Value, ApiError> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.secret_key)
            .form(form)
            .send()
            .await
            .map_err(|e| {
                ApiError::Upstream(format!("the payment processor is unreachable: {e}"))
            })?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| {
            ApiError::Upstream(format!(
                "the payment processor sent an unreadable answer: {e}"
            ))
        })?;
        if !status.is_success() {
            let message = body["error"]["message"]
                .as_str()
                .unwrap_or("no message")
                .to_string();
            return Err(ApiError::Upstream(format!(
                "the payment processor refused the request ({status}): {message}"
            )));
        }
        Ok(body)
    }

    fn string(body: &Value, field: &str) -> Result<String, ApiError> {
        body[field].as_str().map(str::to_string).ok_or_else(|| {
            ApiError::Upstream(format!("the payment processor's answer has no {field}"))
        })
    }

    /// Creates the customer of `developer_id`; answers its id (`cus_...`).
    pub async fn create_customer(&self, developer_id: &DeveloperId) -> Result<String, ApiError> {
        let form = vec![
            (
                "description".into(),
                format!("Switchboard developer {developer_id}"),
            ),
            ("metadata[developerId]".into(), developer_id.to_string()),
        ];
        let body = self.post("/v1/customers", &form).await?;
        Self::string(&body, "id")
    }

    /// Creates a subscription-mode Checkout Session for `price_id`.
    pub async fn create_checkout(
        &self,
        customer: &str,
        developer_id: &DeveloperId,
        tier: &str,
        price_id: &str,
        success_url: &str,
        cancel_url: &str,
    ) -> Result<CheckoutSession, ApiError> {
        let pairs: [(&str, &str); 12] = [
            ("mode", "subscription"),
            ("line_items[0][price]", price_id),
            ("line_items[0][quantity]", "1"),
            ("success_url", success_url),
            ("cancel_url", cancel_url),
            ("customer", customer),
            ("client_reference_id", developer_id.as_str()),
            ("metadata[developerId]", developer_id.as_str()),
            ("metadata[tier]", tier),
            // Copied onto the Subscription, so its events and invoices name the developer.
            (
                "subscription_data[metadata][developerId]",
                developer_id.as_str(),
            ),
            ("subscription_data[metadata][tier]", tier),
            ("allow_promotion_codes", "true"),
        ];
        let form: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let body = self.post("/v1/checkout/sessions", &form).await?;
        Ok(CheckoutSession {
            id: Self::string(&body, "id")?,
            url: Self::string(&body, "url")?,
        })
    }

    /// Creates a billing-portal session for `customer`; answers its URL.
    pub async fn create_portal(&self, customer: &str) -> Result<String, ApiError> {
        let mut form = vec![("customer".to_string(), customer.to_string())];
        if !self.portal_return_url.is_empty() {
            form.push(("return_url".into(), self.portal_return_url.clone()));
        }
        let body = self.post("/v1/billing_portal/sessions", &form).await?;
        Self::string(&body, "url")
    }
}
