//! What an order's cancellation does to its invoice (docs/payments.md, "Cancelled orders").
//!
//! `order.cancelled` carries the charge staff kept (0 before the sample was received). The
//! invoice is credited down to that charge: what was paid above it is refunded, what is still
//! owed below it stays due.
//!
//! | before | charge | after |
//! |---|---|---|
//! | open/overdue, nothing paid | 0 | `void`, nothing due |
//! | paid (or partly paid) | 0 | `void`, everything paid refunded |
//! | any, paid ≥ charge > 0 | C | `paid`, paid − C refunded |
//! | open/overdue, paid < charge | C | unchanged status, C − paid due |
//! | void | any | unchanged (nothing to undo) |

use super::InvoiceStatus;
use platform::money::Cents;

/// The invoice after a cancellation, and the amount to give back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    pub status: InvoiceStatus,
    /// What the customer still owes.
    pub due: Cents,
    /// The part of the total no longer owed (total − charge).
    pub credited: Cents,
    /// What was paid above the charge: refunded.
    pub refund: Cents,
}

/// Applies a cancellation that keeps `charge` to an invoice of `total` with `paid` in `status`.
/// A charge above the total counts as the total.
pub fn settle(status: InvoiceStatus, total: Cents, paid: Cents, charge: Cents) -> Settled {
    let charge = Cents(charge.0.clamp(0, total.0));
    let credited = Cents(total.0 - charge.0);
    if status == InvoiceStatus::Void {
        return Settled {
            status,
            due: Cents(0),
            credited: Cents(0),
            refund: Cents(0),
        };
    }
    let refund = Cents((paid.0 - charge.0).max(0));
    let due = Cents((charge.0 - paid.0).max(0));
    let status = match (charge.0, due.0) {
        (0, _) => InvoiceStatus::Void,
        (_, 0) => InvoiceStatus::Paid,
        _ => status,
    };
    Settled {
        status,
        due,
        credited,
        refund,
    }
}

/// Splits `refund` over the payments `(id, amount)` of an invoice, newest first, never more than
/// a payment's amount: each part is refunded on its payment's rail.
pub fn allocate<T: Copy>(refund: Cents, payments_newest_first: &[(T, Cents)]) -> Vec<(T, Cents)> {
    let mut left = refund.0;
    let mut parts = Vec::new();
    for &(payment, amount) in payments_newest_first {
        if left <= 0 {
            break;
        }
        let part = left.min(amount.0);
        if part > 0 {
            parts.push((payment, Cents(part)));
            left -= part;
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use InvoiceStatus::*;

    #[test]
    fn an_unpaid_invoice_cancelled_at_no_charge_is_void_with_nothing_due_or_refunded() {
        for status in [Open, Overdue] {
            let settled = settle(status, Cents(9_000), Cents(0), Cents(0));
            assert_eq!(
                settled,
                Settled {
                    status: Void,
                    due: Cents(0),
                    credited: Cents(9_000),
                    refund: Cents(0)
                }
            );
        }
    }

    #[test]
    fn a_paid_invoice_cancelled_at_no_charge_is_void_and_refunded_in_full() {
        let settled = settle(Paid, Cents(9_000), Cents(9_000), Cents(0));
        assert_eq!(
            (settled.status, settled.refund, settled.due),
            (Void, Cents(9_000), Cents(0))
        );
        let partly = settle(Open, Cents(9_000), Cents(4_000), Cents(0));
        assert_eq!((partly.status, partly.refund), (Void, Cents(4_000)));
    }

    #[test]
    fn a_charge_keeps_what_it_covers_refunds_the_rest_and_leaves_the_shortfall_due() {
        let covered = settle(Paid, Cents(9_000), Cents(9_000), Cents(2_500));
        assert_eq!(
            covered,
            Settled {
                status: Paid,
                due: Cents(0),
                credited: Cents(6_500),
                refund: Cents(6_500)
            }
        );
        let short = settle(Overdue, Cents(9_000), Cents(1_000), Cents(2_500));
        assert_eq!(
            (short.status, short.due, short.refund),
            (Overdue, Cents(1_500), Cents(0))
        );
        let exact = settle(Open, Cents(9_000), Cents(2_500), Cents(2_500));
        assert_eq!(
            (exact.status, exact.due, exact.refund),
            (Paid, Cents(0), Cents(0))
        );
        let whole = settle(Open, Cents(9_000), Cents(0), Cents(20_000));
        assert_eq!(
            (whole.status, whole.due, whole.credited),
            (Open, Cents(9_000), Cents(0))
        );
    }

    #[test]
    fn a_void_invoice_stays_as_it_is() {
        let settled = settle(Void, Cents(9_000), Cents(0), Cents(0));
        assert_eq!(
            (settled.status, settled.refund, settled.credited),
            (Void, Cents(0), Cents(0))
        );
    }

    #[test]
    fn a_refund_is_split_over_the_newest_payments_first_never_above_a_payment() {
        let payments = [("c", Cents(3_000)), ("b", Cents(5_000)), ("a", Cents(1_000))];
        assert_eq!(
            allocate(Cents(6_500), &payments),
            [("c", Cents(3_000)), ("b", Cents(3_500))]
        );
        assert_eq!(allocate(Cents(0), &payments), []);
        assert_eq!(
            allocate(Cents(99_000), &payments),
            [("c", Cents(3_000)), ("b", Cents(5_000)), ("a", Cents(1_000))]
        );
    }
}
