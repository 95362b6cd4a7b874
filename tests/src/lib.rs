//! Sandbox for end-to-end tests (see tests/tests/e2e).
