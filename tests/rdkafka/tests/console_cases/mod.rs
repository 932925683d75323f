//! The console's browser cases, one file per page group.

mod access;
mod compaction;
mod groups;
mod messages;
mod overview;
mod topics;
mod tour;
