//! gateway (work in progress).
