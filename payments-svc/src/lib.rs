//! payments-svc (work in progress).
