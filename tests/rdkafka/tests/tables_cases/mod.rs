//! The tables tests, grouped by theme.

mod acls;
mod encodings;
mod index_lifecycle;
mod lookups;
mod snapshots;
mod transactions;
