//! The real SMTP server of the tests lives in `platform::testing::smtp` (service api tests use it
//! too); re-exported here for the e2e tests.

pub use platform::testing::smtp::SmtpServer;
