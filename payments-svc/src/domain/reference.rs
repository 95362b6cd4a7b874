//! References to an invoice as callers write them: a UUID or an invoice number (`INV-…`).

/// An invoice reference (`platform::ids::Reference`, read with `parse_required`). A UUID names
/// the invoice (or, where the operation allows, its order); a text is compared exactly with
/// invoice numbers, so an unknown string is a 404.
pub type InvoiceReference = platform::ids::Reference;
