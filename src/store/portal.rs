//! Queries of the developer portal: one-time sign-in codes (stored as keyed hashes), the
//! phone numbers developers sign in with, and the portal's server-side sessions (stored as
//! hashes of the cookie value).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use super::crud::store_fns;
use super::schema::{
    agents, api_keys, collections, developer_phones, developers, phone_numbers, portal_codes,
    portal_sessions, provider_keys,
};
use super::{Db, StoreResult};
use crate::ids::DeveloperId;
use crate::{db_run, db_tx};

/// A portal session as stored.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = portal_sessions)]
pub struct PortalSessionRow {
    pub id_hash: String,
    pub developer_id: DeveloperId,
    pub phone: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

/// The session a successful sign-in opens.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub id_hash: String,
    pub expires_at: i64,
}

/// A code presented for a number and a challenge.
#[derive(Clone, Copy)]
pub struct Attempt<'a> {
    pub phone: &'a str,
    /// SHA-256 of the challenge id presented with the code.
    pub challenge_hash: &'a str,
    /// Compares the presented code with a stored hash.
    pub matches: &'a (dyn Fn(&str) -> bool + Sync),
    /// Wrong tries that burn the code.
    pub max_attempts: i32,
    pub now: i64,
}

/// How presenting a code for a number went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// No live code for this number and challenge (never sent, already used or burnt).
    NoCode,
    /// The newest code expired; it is now burnt.
    Expired,
    /// Wrong code; `remaining` tries are left (0: the code is burnt).
    Wrong { remaining: i32 },
    /// Right code: the session is stored. `created` when the developer was new.
    SignedIn {
        developer_id: DeveloperId,
        created: bool,
    },
}

/// Which codes a request limit counts: those to a number, from a client address, or only
/// those requested by browsers the number had not signed in with.
#[derive(Clone, Copy, Default)]
struct CodeFilter<'a> {
    phone: Option<&'a str>,
    client_ip: Option<&'a str>,
    untrusted_only: bool,
}

/// Creation times of the codes `filter` selects created at or after `since` (epoch ms),
/// oldest first.
async fn code_times(db: &Db, filter: CodeFilter<'_>, since: i64) -> StoreResult<Vec<i64>> {
    db_run!(db, |conn| {
        let mut query = portal_codes::table.into_boxed();
        if let Some(phone) = filter.phone {
            query = query.filter(portal_codes::phone.eq(phone.to_string()));
        }
        if filter.untrusted_only {
            query = query.filter(portal_codes::trusted.eq(false));
        }
        if let Some(ip) = filter.client_ip {
            query = query.filter(portal_codes::client_ip.eq(ip.to_string()));
        }
        Ok(query
            .filter(portal_codes::created_at.ge(since))
            .order(portal_codes::created_at.asc())
            .select(portal_codes::created_at)
            .load(conn)
            .await?)
    })
}

/// Creation times of codes sent to `phone` at or after `since` (epoch ms) for browsers that
/// had not signed in with it before (`trusted` false), oldest first: the number-wide limit.
pub async fn untrusted_requests_for_phone(
    db: &Db,
    phone: &str,
    since: i64,
) -> StoreResult<Vec<i64>> {
    let filter = CodeFilter {
        phone: Some(phone),
        untrusted_only: true,
        ..CodeFilter::default()
    };
    code_times(db, filter, since).await
}

/// Creation times of codes sent to `phone` at the request of client address `ip`.
pub async fn requests_for_phone_from_ip(
    db: &Db,
    phone: &str,
    ip: &str,
    since: i64,
) -> StoreResult<Vec<i64>> {
    let filter = CodeFilter {
        phone: Some(phone),
        client_ip: Some(ip),
        ..CodeFilter::default()
    };
    code_times(db, filter, since).await
}

/// Creation times of codes requested from client address `ip` at or after `since`.
pub async fn requests_from_ip(db: &Db, ip: &str, since: i64) -> StoreResult<Vec<i64>> {
    let filter = CodeFilter {
        client_ip: Some(ip),
        ..CodeFilter::default()
    };
    code_times(db, filter, since).await
}

/// A code about to be sent.
#[derive(Debug, Clone)]
pub struct NewCode<'a> {
    pub phone: &'a str,
    pub code_hash: &'a str,
    /// SHA-256 of the challenge id the requesting browser gets.
    pub challenge_hash: &'a str,
    pub client_ip: &'a str,
    /// The request came with the device cookie of a browser that signed in with the number.
    pub trusted: bool,
    pub created_at: i64,
    pub expires_at: i64,
}

/// Stores a new code. Older live codes of the number stay live: each answers its own
/// challenge, so a request by someone else cannot replace the code a browser waits for.
/// Answers the new code's row number.
pub async fn insert_code(db: &Db, code: &NewCode<'_>) -> StoreResult<i64> {
    db_run!(db, |conn| {
        Ok(diesel::insert_into(portal_codes::table)
            .values((
                portal_codes::phone.eq(code.phone),
                portal_codes::code_hash.eq(code.code_hash),
                portal_codes::challenge_hash.eq(code.challenge_hash),
                portal_codes::client_ip.eq(code.client_ip),
                portal_codes::trusted.eq(code.trusted),
                portal_codes::attempts.eq(0),
                portal_codes::created_at.eq(code.created_at),
                portal_codes::expires_at.eq(code.expires_at),
            ))
            .returning(portal_codes::seq)
            .get_result(conn)
            .await?)
    })
}

/// Burns code `seq` (its delivery failed), keeping the row for the rate limits.
pub async fn burn_code(db: &Db, seq: i64, now: i64) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::update(
            portal_codes::table
                .filter(portal_codes::seq.eq(seq))
                .filter(portal_codes::consumed_at.is_null()),
        )
        .set(portal_codes::consumed_at.eq(now))
        .execute(conn)
        .await?;
        Ok(())
    })
}

/// Checks a presented code against the live code of `phone` that answers the challenge whose
/// SHA-256 is `challenge_hash` (`matches` compares it with the stored hash) and, when it matches, uses the code up, finds or creates the
/// developer the number belongs to (`new_developer_id` names a new one) and stores the
/// session, all in one transaction. A wrong code counts a try of that challenge only; the
/// `max_attempts`-th wrong try burns its code. Each step is a conditional update, so two nodes checking the same code
/// at once cannot both use it.
pub async fn verify(
    db: &Db,
    attempt: &Attempt<'_>,
    new_developer_id: &DeveloperId,
    session: &NewSession,
) -> StoreResult<Verification> {
    let Attempt {
        phone,
        challenge_hash,
        matches,
        max_attempts,
        now,
    } = *attempt;
    db_tx!(db, |conn| {
        let code: Option<(i64, String, i64)> = portal_codes::table
            .filter(portal_codes::phone.eq(phone))
            .filter(portal_codes::challenge_hash.eq(challenge_hash))
            .filter(portal_codes::consumed_at.is_null())
            .order(portal_codes::seq.desc())
            .select((
                portal_codes::seq,
                portal_codes::code_hash,
                portal_codes::expires_at,
            ))
            .first(conn)
            .await
            .optional()?;
        let Some((seq, hash, expires_at)) = code else {
            return Ok(Verification::NoCode);
        };
        let live = portal_codes::table
            .filter(portal_codes::seq.eq(seq))
            .filter(portal_codes::consumed_at.is_null());
        if expires_at <= now {
            diesel::update(live)
                .set(portal_codes::consumed_at.eq(now))
                .execute(conn)
                .await?;
            return Ok(Verification::Expired);
        }
        if !matches(&hash) {
            let attempts: Option<i32> = diesel::update(live)
                .set(portal_codes::attempts.eq(portal_codes::attempts + 1))
                .returning(portal_codes::attempts)
                .get_result(conn)
                .await
                .optional()?;
            let Some(attempts) = attempts else {
                return Ok(Verification::NoCode);
            };
            if attempts >= max_attempts {
                diesel::update(portal_codes::table.filter(portal_codes::seq.eq(seq)))
                    .set(portal_codes::consumed_at.eq(now))
                    .execute(conn)
                    .await?;
            }
            return Ok(Verification::Wrong {
                remaining: (max_attempts - attempts).max(0),
            });
        }
        let used = diesel::update(live)
            .set(portal_codes::consumed_at.eq(now))
            .execute(conn)
            .await?;
        if used != 1 {
            return Ok(Verification::NoCode);
        }
        let owner: Option<DeveloperId> = developer_phones::table
            .filter(developer_phones::phone.eq(phone))
            .select(developer_phones::developer_id)
            .first(conn)
            .await
            .optional()?;
        let (developer_id, created) = match owner {
            Some(owner) => (owner, false),
            None => {
                diesel::insert_into(developers::table)
                    .values((
                        developers::id.eq(new_developer_id),
                        developers::tier.eq("starter"),
                        developers::created_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                diesel::insert_into(developer_phones::table)
                    .values((
                        developer_phones::phone.eq(phone),
                        developer_phones::developer_id.eq(new_developer_id),
                        developer_phones::created_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                (new_developer_id.clone(), true)
            }
        };
        diesel::insert_into(portal_sessions::table)
            .values((
                portal_sessions::id_hash.eq(&session.id_hash),
                portal_sessions::developer_id.eq(&developer_id),
                portal_sessions::phone.eq(phone),
                portal_sessions::created_at.eq(now),
                portal_sessions::last_seen_at.eq(now),
                portal_sessions::expires_at.eq(session.expires_at),
            ))
            .execute(conn)
            .await?;
        Ok(Verification::SignedIn {
            developer_id,
            created,
        })
    })
}

store_fns! {
    table = portal_sessions, row = PortalSessionRow;

    /// The session with this id hash, whatever its state.
    get pub fn find_session(id_hash: &str) where id_hash.eq(id_hash);

    /// Revokes a session (sign-out); answers whether it was live.
    mark pub fn revoke_session(id_hash: &str, now: i64)
        set (portal_sessions::revoked_at.eq(now))
        where id_hash.eq(id_hash), revoked_at.is_null();
}

/// Records that a live session was used at `now`.
pub async fn touch_session(db: &Db, id_hash: &str, now: i64) -> StoreResult<()> {
    db_run!(db, |conn| {
        diesel::update(
            portal_sessions::table
                .filter(portal_sessions::id_hash.eq(id_hash))
                .filter(portal_sessions::revoked_at.is_null()),
        )
        .set(portal_sessions::last_seen_at.eq(now))
        .execute(conn)
        .await?;
        Ok(())
    })
}

/// How linking a number to a developer went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Linked,
    /// The number already signs in to this developer.
    AlreadyLinked,
    /// The number signs in to another developer (named).
    TakenBy(DeveloperId),
    NoSuchDeveloper,
}

/// Attaches `phone` to the existing developer `developer_id` (operator use).
pub async fn link_phone(
    db: &Db,
    developer_id: &DeveloperId,
    phone: &str,
    now: i64,
) -> StoreResult<Link> {
    db_tx!(db, |conn| {
        let exists = diesel::select(diesel::dsl::exists(
            developers::table.filter(developers::id.eq(developer_id)),
        ))
        .get_result::<bool>(conn)
        .await?;
        if !exists {
            return Ok(Link::NoSuchDeveloper);
        }
        let owner: Option<DeveloperId> = developer_phones::table
            .filter(developer_phones::phone.eq(phone))
            .select(developer_phones::developer_id)
            .first(conn)
            .await
            .optional()?;
        match owner {
            Some(owner) if &owner == developer_id => Ok(Link::AlreadyLinked),
            Some(owner) => Ok(Link::TakenBy(owner)),
            None => {
                diesel::insert_into(developer_phones::table)
                    .values((
                        developer_phones::phone.eq(phone),
                        developer_phones::developer_id.eq(developer_id),
                        developer_phones::created_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                Ok(Link::Linked)
            }
        }
    })
}

/// How moving a signed-in number to the developer an API key proves went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhoneMove {
    /// The number now signs in to the key's developer: the sessions it had on its old
    /// developer ended and the new session was stored.
    Moved,
    /// The number already signs in to the key's developer.
    AlreadyLinked,
    /// The key's developer signs in with another number already.
    TargetHasPhone,
    /// The number's developer holds API keys, agents, collections, numbers or provider keys.
    SourceNotEmpty,
    /// The number no longer signs in to the developer the session named.
    SourceChanged,
}

/// What [`move_phone`] moves where.
pub struct MovePhone<'a> {
    pub phone: &'a str,
    /// The developer the session signed in to (created empty by its first sign-in).
    pub from: &'a DeveloperId,
    /// The developer whose API key the signed-in developer presented.
    pub to: &'a DeveloperId,
    /// The session opened for `to` when the number moves.
    pub session: &'a NewSession,
    pub now: i64,
}

/// Moves `phone` from the empty developer its sign-in created to the developer `to`, when
/// no number signs in to `to` yet; ends the number's live sessions on `from` and stores the
/// new one. All in one transaction, so two browsers linking at once cannot both move it.
pub async fn move_phone(db: &Db, request: &MovePhone<'_>) -> StoreResult<PhoneMove> {
    let MovePhone {
        phone,
        from,
        to,
        session,
        now,
    } = *request;
    db_tx!(db, |conn| {
        let owner: Option<DeveloperId> = developer_phones::table
            .filter(developer_phones::phone.eq(phone))
            .select(developer_phones::developer_id)
            .first(conn)
            .await
            .optional()?;
        match owner.as_ref() {
            Some(owner) if owner == to => return Ok(PhoneMove::AlreadyLinked),
            Some(owner) if owner == from => {}
            _ => return Ok(PhoneMove::SourceChanged),
        }
        let target_has_phone = diesel::select(diesel::dsl::exists(
            developer_phones::table.filter(developer_phones::developer_id.eq(to)),
        ))
        .get_result::<bool>(conn)
        .await?;
        if target_has_phone {
            return Ok(PhoneMove::TargetHasPhone);
        }
        let holdings = [
            diesel::select(diesel::dsl::exists(
                api_keys::table
                    .filter(api_keys::developer_id.eq(from))
                    .filter(api_keys::revoked_at.is_null()),
            ))
            .get_result::<bool>(conn)
            .await?,
            diesel::select(diesel::dsl::exists(
                agents::table.filter(agents::developer_id.eq(from)),
            ))
            .get_result::<bool>(conn)
            .await?,
            diesel::select(diesel::dsl::exists(
                collections::table.filter(collections::developer_id.eq(from)),
            ))
            .get_result::<bool>(conn)
            .await?,
            diesel::select(diesel::dsl::exists(
                phone_numbers::table.filter(phone_numbers::developer_id.eq(from)),
            ))
            .get_result::<bool>(conn)
            .await?,
            diesel::select(diesel::dsl::exists(
                provider_keys::table.filter(provider_keys::developer_id.eq(from)),
            ))
            .get_result::<bool>(conn)
            .await?,
        ];
        if holdings.iter().any(|held| *held) {
            return Ok(PhoneMove::SourceNotEmpty);
        }
        diesel::update(developer_phones::table.filter(developer_phones::phone.eq(phone)))
            .set(developer_phones::developer_id.eq(to))
            .execute(conn)
            .await?;
        diesel::update(
            portal_sessions::table
                .filter(portal_sessions::phone.eq(phone))
                .filter(portal_sessions::developer_id.eq(from))
                .filter(portal_sessions::revoked_at.is_null()),
        )
        .set(portal_sessions::revoked_at.eq(now))
        .execute(conn)
        .await?;
        diesel::insert_into(portal_sessions::table)
            .values((
                portal_sessions::id_hash.eq(&session.id_hash),
                portal_sessions::developer_id.eq(to),
                portal_sessions::phone.eq(phone),
                portal_sessions::created_at.eq(now),
                portal_sessions::last_seen_at.eq(now),
                portal_sessions::expires_at.eq(session.expires_at),
            ))
            .execute(conn)
            .await?;
        Ok(PhoneMove::Moved)
    })
}
