//! The one call a metered handler makes. `charge` after the work (never blocks: the metering
//! registry adds it to the developer's period in memory and to storage at the next flush);
//! `ensure_credits` before the work (402 `insufficient_credits` once the allowance is spent,
//! unless the tier allows overage). `metered: false` is a request that used the caller's own
//! vendor key (BYOK): nothing is checked or deducted, and the response says
//! `X-Usage-Bypassed: true` (`http::auth::tag_provider`).

use super::metering::{Charge, CheckCredits, Metering};
use super::Supervised;
use crate::billing::Usage;
use crate::error::ApiError;
use crate::ids::DeveloperId;

/// Charges `usage` to `developer_id`'s current period (when `metered`).
pub fn charge(
    metering: &Supervised<Metering>,
    developer_id: &DeveloperId,
    usage: Usage,
    metered: bool,
) {
    if !metered {
        return;
    }
    metering.do_send(Charge {
        developer_id: developer_id.clone(),
        usage,
    });
}

/// Refuses metered work with 402 `insufficient_credits` when the developer has no credits
/// left and the tier allows no overage.
pub async fn ensure_credits(
    metering: &Supervised<Metering>,
    developer_id: &DeveloperId,
    metered: bool,
) -> Result<(), ApiError> {
    if !metered {
        return Ok(());
    }
    metering
        .send(CheckCredits {
            developer_id: developer_id.clone(),
        })
        .await?
}
