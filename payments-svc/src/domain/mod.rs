//! Domain of payments-svc: validated invoice and payment inputs, the invoice state machine and
//! settlement arithmetic, references, and the backstop invoice lines. No SQL, no gRPC.

pub mod backstop;
pub mod cancellation;
pub mod checkout;
pub mod invoice;
pub mod payment;
pub mod reference;
pub mod spend;

pub use invoice::{
    BankInstructions, Invoice, InvoiceLine, InvoiceStatus, NewInvoice, PaymentMethod, RawInvoice,
};
pub use payment::{BankPayment, Payment};
pub use reference::InvoiceReference;
