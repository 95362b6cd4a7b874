//! labctl (work in progress).
