//! Identifiers of stored things: a type prefix and a random UUID, so an id says what it names
//! (`agent_…`, `ses_…`) and cannot be guessed from another.
//!
//! Each kind of id is its own type ([`AgentId`], [`SessionId`], …), so a function that takes
//! an agent and a session cannot be handed them the other way round. An id is stored and
//! shown exactly as its text: the same column values, the same JSON. An id arriving from
//! outside (a URL path, a request body) is taken as it is, without checking its prefix: a
//! wrong one simply finds nothing. No id has a default value: where one may be absent, the
//! field is an `Option`.

/// A fresh identifier with a type prefix, e.g. `agent_0f3c…`: made only through an id type's
/// `new()`, so every stored kind of id is one of the types below.
fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Declares an id type: a text newtype with its prefix for fresh ids, shown, serialized and
/// stored as the bare text.
macro_rules! typed_id {
    ($(#[$doc:meta])* pub struct $name:ident = $prefix:literal;) => {
        $(#[$doc])*
        #[derive(
            Debug,
            Clone,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
            diesel::expression::AsExpression,
            diesel::deserialize::FromSqlRow,
        )]
        #[serde(transparent)]
        #[diesel(sql_type = diesel::sql_types::Text)]
        pub struct $name(String);

        impl $name {
            /// The prefix of this kind's fresh ids.
            pub const PREFIX: &'static str = $prefix;

            /// A fresh id of this kind. (An id has no `Default`: an empty one would name
            /// nothing, and a fresh one made unasked would name nothing stored either, so an
            /// id is made fresh here, read from storage, or taken from outside.)
            #[allow(clippy::new_without_default)]
            pub fn new() -> $name {
                $name(new_id($prefix))
            }

            /// The id's text, where a plain string is wanted (logs, URLs, vendor calls).
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                $name(text)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> $name {
                $name(text.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl diesel::serialize::ToSql<diesel::sql_types::Text, diesel::sqlite::Sqlite> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::sqlite::Sqlite>,
            ) -> diesel::serialize::Result {
                out.set_value(self.0.as_str());
                Ok(diesel::serialize::IsNull::No)
            }
        }

        impl diesel::serialize::ToSql<diesel::sql_types::Text, diesel::pg::Pg> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::pg::Pg>,
            ) -> diesel::serialize::Result {
                <str as diesel::serialize::ToSql<diesel::sql_types::Text, diesel::pg::Pg>>::to_sql(
                    self.0.as_str(),
                    &mut out.reborrow(),
                )
            }
        }

        impl<DB> diesel::deserialize::FromSql<diesel::sql_types::Text, DB> for $name
        where
            DB: diesel::backend::Backend,
            String: diesel::deserialize::FromSql<diesel::sql_types::Text, DB>,
        {
            fn from_sql(bytes: DB::RawValue<'_>) -> diesel::deserialize::Result<Self> {
                <String as diesel::deserialize::FromSql<diesel::sql_types::Text, DB>>::from_sql(
                    bytes,
                )
                .map($name)
            }
        }
    };
}

typed_id! {
    /// A developer, the owner of everything else.
    pub struct DeveloperId = "dev";
}

typed_id! {
    /// An agent: the prompt, voice and engines a session runs with.
    pub struct AgentId = "agent";
}

typed_id! {
    /// A session: one conversation with an agent, live or ended.
    pub struct SessionId = "ses";
}

typed_id! {
    /// A knowledge collection.
    pub struct CollectionId = "col";
}

typed_id! {
    /// A document in a knowledge collection.
    pub struct DocumentId = "doc";
}

typed_id! {
    /// An API key.
    pub struct KeyId = "key";
}

typed_id! {
    /// An instance of an agent: a customer, a store location, a caller it serves.
    pub struct InstanceId = "inst";
}

typed_id! {
    /// An outbound call task: one call placed, from ringing to its outcome.
    pub struct TaskId = "task";
}

typed_id! {
    /// An outbound calling campaign.
    pub struct CampaignId = "cmp";
}

typed_id! {
    /// A text conversation with an agent (its chat turns).
    pub struct ConversationId = "conv";
}

typed_id! {
    /// A phone number routed to an agent.
    pub struct PhoneNumberId = "pn";
}

typed_id! {
    /// A webhook endpoint: a URL a developer's events are posted to.
    pub struct WebhookId = "wh";
}

typed_id! {
    /// One event's delivery to one webhook endpoint.
    pub struct DeliveryId = "whd";
}

typed_id! {
    /// An event posted to webhooks (the same on every endpoint it goes to).
    pub struct EventId = "evt";
}

typed_id! {
    /// A call or session recording.
    pub struct RecordingId = "rec";
}

typed_id! {
    /// An asynchronous transcription job.
    pub struct JobId = "job";
}

typed_id! {
    /// A server node: its stable identity, kept in its data dir, which the sessions,
    /// recordings, jobs and campaigns it runs carry.
    pub struct NodeId = "node";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_id_carries_its_prefix() {
        let id = AgentId::new();
        assert!(id.as_str().starts_with("agent_"));
        assert_eq!(id.as_str().len(), "agent_".len() + 32);
    }

    #[test]
    fn an_id_is_shown_and_serialized_as_its_bare_text() {
        let id = SessionId::from("ses_abc");
        assert_eq!(id.to_string(), "ses_abc");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"ses_abc\"");
        let back: SessionId = serde_json::from_str("\"ses_abc\"").unwrap();
        assert_eq!(back, id);
    }

    #[test]
    fn an_id_from_outside_is_taken_as_it_is() {
        assert_eq!(AgentId::from("not-an-agent").as_str(), "not-an-agent");
    }

    #[test]
    fn a_map_keyed_by_id_is_found_by_its_text() {
        let mut map = std::collections::HashMap::new();
        map.insert(DeveloperId::from("dev_1"), 1);
        assert_eq!(map.get("dev_1"), Some(&1));
    }
}
