//! Invoice lines of the order.created backstop.
//!
//! The event carries the order's sample lines but not its non-line charges (conformity samples,
//! turnaround surcharges, …). The backstop therefore itemizes the lines only when they add up to
//! the order total, and otherwise issues one line for the whole order, so the invoice total is
//! always the order total.

use crate::domain::invoice::InvoiceLine;
use platform::money::Cents;

/// One sample line of an order as announced in order.created.
#[derive(Clone, Debug)]
pub struct OrderLine {
    pub compound_name: String,
    /// Number of tests and bundles on the line.
    pub analyses: usize,
    pub amount: Cents,
}

/// Builds the invoice lines of an order from its event.
pub fn backstop_lines(order_number: &str, total: Cents, order_lines: &[OrderLine]) -> Vec<InvoiceLine> {
    let itemizable = !order_lines.is_empty()
        && order_lines
            .iter()
            .all(|line| !line.compound_name.trim().is_empty())
        && Cents::sum(order_lines.iter().map(|line| line.amount)) == Some(total);
    if itemizable {
        return order_lines
            .iter()
            .map(|line| InvoiceLine {
                description: format!("{}: {} analyses", line.compound_name.trim(), line.analyses),
                quantity: 1,
                unit_price: line.amount,
                amount: line.amount,
            })
            .collect();
    }
    vec![InvoiceLine {
        description: format!("Laboratory order {order_number}"),
        quantity: 1,
        unit_price: total,
        amount: total,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, analyses: usize, amount: i64) -> OrderLine {
        OrderLine {
            compound_name: name.into(),
            analyses,
            amount: Cents(amount),
        }
    }

    #[test]
    fn lines_that_add_up_to_the_total_are_itemized() {
        let lines = backstop_lines(
            "ORD-7",
            Cents(300),
            &[line("Caffeine", 2, 100), line("Theanine", 1, 200)],
        );
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].description, "Caffeine: 2 analyses");
        assert_eq!(
            (lines[1].quantity, lines[1].unit_price, lines[1].amount),
            (1, Cents(200), Cents(200))
        );
    }

    #[test]
    fn a_total_with_charges_beyond_the_lines_becomes_one_order_line() {
        let lines = backstop_lines(
            "ORD-7",
            Cents(450),
            &[line("Caffeine", 2, 100), line("Theanine", 1, 200)],
        );
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].description, "Laboratory order ORD-7");
        assert_eq!(lines[0].amount, Cents(450));
        assert_eq!(backstop_lines("ORD-8", Cents(10), &[]).len(), 1);
    }
}
