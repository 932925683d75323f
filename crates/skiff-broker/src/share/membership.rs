//! "Is this member in this share group?", asked by ShareFetch and ShareAcknowledge.
//!
//! Kafka 4.3's handlers check only that the member id is present and at most 36 characters
//! (`KafkaApis.isMemberIdValid`); membership itself is enforced indirectly: the group
//! coordinator tells the share-partition manager when a member leaves or the group empties,
//! and records the member held are released. [`AnyMember`] (the default) therefore accepts
//! every member; a stricter implementation (the share group coordinator's member list) makes
//! the handlers answer UNKNOWN_MEMBER_ID for members the group does not have.
//!
//! Thread safety: shared by every request; called with no share lock held.

/// Whether `member` is a live member of share group `group`.
pub trait ShareMembership: Send + Sync {
    fn is_member(&self, group: &str, member: &str) -> bool;
}

/// Every member is accepted (Kafka's behaviour at the ShareFetch handler).
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyMember;

impl ShareMembership for AnyMember {
    fn is_member(&self, _group: &str, _member: &str) -> bool {
        true
    }
}

/// Kafka's `isMemberIdValid`: non-empty and at most 36 characters (a UUID's text).
pub fn member_id_valid(member: &str) -> bool {
    !member.is_empty() && member.chars().count() <= 36
}
