//! Who may send ShareFetch and ShareAcknowledge.
//!
//! Kafka's handlers check only that the member id is present and at most 36 characters; a
//! member the group does not have is not refused there. Membership is enforced through the
//! group coordinator instead: when a member leaves or expires, the records it held are
//! released (`share::listener`). Skiff does the same.
//!
//! Thread safety: pure function.

/// Kafka's `isMemberIdValid`: non-empty and at most 36 characters (a UUID's text).
pub fn member_id_valid(member: &str) -> bool {
    !member.is_empty() && member.chars().count() <= 36
}
