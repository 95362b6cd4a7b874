//! labd (work in progress).
