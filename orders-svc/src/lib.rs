//! orders-svc (work in progress).
