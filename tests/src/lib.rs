//! tests (work in progress).
