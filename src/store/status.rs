//! The states a stored row can be in, as enums: each is kept in its table as a short text
//! (`"active"`, `"in-progress"`, …), the same words the API shows, and read back into its
//! enum, so no code compares or writes a status as a free string. A text no variant names (a
//! row written by a newer version) fails the read as a query error rather than passing on
//! as a state nobody handles.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::pg::Pg;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use diesel::sqlite::Sqlite;

/// Declares a status enum stored as text: its variants with their stored words, `as_str`,
/// `parse`, `Display`, and diesel's text conversions for both backends.
macro_rules! text_enum {
    ($(#[$doc:meta])* pub enum $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow)]
        #[diesel(sql_type = diesel::sql_types::Text)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The word stored and shown for this state.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The state a stored word names, if any.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl diesel::serialize::ToSql<diesel::sql_types::Text, diesel::sqlite::Sqlite> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::sqlite::Sqlite>,
            ) -> diesel::serialize::Result {
                $crate::store::status::write_sqlite(self.as_str(), out)
            }
        }

        impl diesel::serialize::ToSql<diesel::sql_types::Text, diesel::pg::Pg> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::pg::Pg>,
            ) -> diesel::serialize::Result {
                $crate::store::status::write_pg(self.as_str(), out)
            }
        }

        impl<DB> diesel::deserialize::FromSql<diesel::sql_types::Text, DB> for $name
        where
            DB: diesel::backend::Backend,
            String: diesel::deserialize::FromSql<diesel::sql_types::Text, DB>,
        {
            fn from_sql(bytes: DB::RawValue<'_>) -> diesel::deserialize::Result<Self> {
                $crate::store::status::read(bytes, stringify!($name), $name::parse)
            }
        }
    };
}

/// Writes a state's word into a SQLite statement.
pub fn write_sqlite<'b>(text: &'static str, out: &mut Output<'b, '_, Sqlite>) -> serialize::Result {
    out.set_value(text);
    Ok(serialize::IsNull::No)
}

/// Writes a state's word into a PostgreSQL statement.
pub fn write_pg(text: &'static str, out: &mut Output<'_, '_, Pg>) -> serialize::Result {
    <str as ToSql<Text, Pg>>::to_sql(text, &mut out.reborrow())
}

/// Reads a stored word back into its state; a word no state names is an error.
pub fn read<DB, T>(
    bytes: DB::RawValue<'_>,
    what: &str,
    parse: fn(&str) -> Option<T>,
) -> deserialize::Result<T>
where
    DB: Backend,
    String: FromSql<Text, DB>,
{
    let text = <String as FromSql<Text, DB>>::from_sql(bytes)?;
    parse(&text).ok_or_else(|| format!("`{text}` is not a {what}").into())
}

text_enum! {
    /// Where a session is in its life.
    pub enum SessionStatus {
        /// Admitted, its call not connected yet (an outbound call ringing).
        Pending = "pending",
        /// Live on a node.
        Active = "active",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// Where the analysis of an ended session is.
    pub enum AnalysisStatus {
        Pending = "pending",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// An agent in use, or archived (deleted for the API, kept for its sessions' history).
    pub enum AgentStatus {
        Active = "active",
        Archived = "archived",
    }
}

text_enum! {
    /// Where an asynchronous transcription job is.
    pub enum JobStatus {
        Processing = "processing",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// Where a placed call is, in Twilio's words for it.
    pub enum TaskStatus {
        Queued = "queued",
        Ringing = "ringing",
        InProgress = "in-progress",
        Completed = "completed",
        Busy = "busy",
        NoAnswer = "no-answer",
        Failed = "failed",
        Canceled = "canceled",
    }
}

impl TaskStatus {
    /// The states after which nothing changes.
    pub const TERMINAL: [TaskStatus; 5] = [
        TaskStatus::Completed,
        TaskStatus::Busy,
        TaskStatus::NoAnswer,
        TaskStatus::Failed,
        TaskStatus::Canceled,
    ];

    pub fn is_terminal(self) -> bool {
        TaskStatus::TERMINAL.contains(&self)
    }

    /// What an ended call leaves a campaign's contact as; `None` for a call not over yet.
    pub fn outcome(self) -> Option<ContactStatus> {
        match self {
            TaskStatus::Queued | TaskStatus::Ringing | TaskStatus::InProgress => None,
            TaskStatus::Completed => Some(ContactStatus::Completed),
            TaskStatus::Busy => Some(ContactStatus::Busy),
            TaskStatus::NoAnswer => Some(ContactStatus::NoAnswer),
            TaskStatus::Failed => Some(ContactStatus::Failed),
            TaskStatus::Canceled => Some(ContactStatus::Canceled),
        }
    }
}

text_enum! {
    /// Where a session's recording is.
    pub enum RecordingStatus {
        Recording = "recording",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// Where a webhook delivery is.
    pub enum DeliveryStatus {
        /// Still to be made (or being made).
        Pending = "pending",
        /// The endpoint answered 2xx.
        Delivered = "delivered",
        /// Given up: no attempt within the retry window was answered 2xx.
        Failed = "failed",
    }
}

text_enum! {
    /// Where an outbound campaign is.
    pub enum CampaignStatus {
        Active = "active",
        Paused = "paused",
        Completed = "completed",
        Canceled = "canceled",
    }
}

text_enum! {
    /// Where a campaign's contact is: waiting, being called, or the outcome of its last call.
    pub enum ContactStatus {
        /// Waiting for its next call (`next_attempt_at`).
        Pending = "pending",
        /// Its call is placed and not over yet.
        Calling = "calling",
        Completed = "completed",
        NoAnswer = "no-answer",
        Busy = "busy",
        Failed = "failed",
        /// The campaign was canceled before the contact was reached.
        Canceled = "canceled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_from_its_word_and_nothing_else_does() {
        for status in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(TaskStatus::parse("in_progress"), None);
        assert_eq!(TaskStatus::InProgress.to_string(), "in-progress");
        assert_eq!(
            serde_json::to_value(SessionStatus::Active).unwrap(),
            serde_json::json!("active")
        );
        // Every state after which nothing changes is an outcome for a campaign's contact,
        // under the same word, and no other state is.
        for status in TaskStatus::ALL {
            match status.outcome() {
                Some(outcome) => {
                    assert!(status.is_terminal(), "{status}");
                    assert_eq!(outcome.as_str(), status.as_str());
                }
                None => assert!(!status.is_terminal(), "{status}"),
            }
        }
    }
}
