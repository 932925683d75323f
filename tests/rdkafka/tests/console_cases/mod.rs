//! The console's browser cases, one file per page group.

mod overview;
