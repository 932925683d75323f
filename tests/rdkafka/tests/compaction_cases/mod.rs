//! The §6 scenario groups of the `compaction` test binary, one module per group; shared
//! client helpers live in `compaction.rs`, broker/topic helpers in `compaction_support`.

mod archive;
mod cleaning;
mod consumers;
mod lifecycle;
mod produce;
mod tombstones;
