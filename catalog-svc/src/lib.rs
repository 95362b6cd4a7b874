//! catalog-svc (work in progress).
