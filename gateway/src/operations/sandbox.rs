//! `POST /orders/{reference}/simulate` (docs/sandbox.md): orders-svc resolves the reference to
//! the caller's own sandbox order (`not_found` for any other), then the service that owns the
//! scenario plays it through its real use cases — shipping-svc the carrier's scans, orders-svc
//! the lab's receipt and start of testing, results-svc the COA workflow, payments-svc a card
//! decline and a stablecoin reorg. Every one of those rpcs
//! admits sandbox customers' keys only, whoever calls it.

use crate::caller::Caller;
use crate::dto::sandbox::{Scenario, SimulateRequest, Simulation, SimulationEnvelope};
use crate::operations::service_error;
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::outgoing;
use platform::mesh::{ORDERS_SVC, PAYMENTS_SVC, RESULTS_SVC, SHIPPING_SVC};
use proto::{orders, payments, results, shipping};

/// Plays `body.scenario` on the caller's sandbox order `reference`.
pub async fn simulate(
    peers: &Peers,
    caller: &Caller,
    reference: String,
    body: SimulateRequest,
) -> Result<SimulationEnvelope, ApiError> {
    let scenario = body.scenario;
    let order = peers
        .orders()
        .find_sandbox_order(outgoing(
            orders::FindSandboxOrderRequest { reference },
            &caller.token(ORDERS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let name = scenario.as_str().to_owned();
    let answer = match scenario {
        Scenario::Delivered | Scenario::LostInTransit => peers
            .shipping()
            .simulate_delivery(outgoing(
                shipping::SimulateDeliveryRequest {
                    order_id: order.order_id,
                    scenario: name,
                },
                &caller.token(SHIPPING_SVC),
            ))
            .await
            .map(|answer| answer.into_inner().simulation),
        Scenario::Received | Scenario::Testing => peers
            .orders()
            .simulate_lab_step(outgoing(
                orders::SimulateLabStepRequest {
                    reference: order.order_id,
                    scenario: name,
                },
                &caller.token(ORDERS_SVC),
            ))
            .await
            .map(|answer| answer.into_inner().simulation),
        Scenario::CoaPublished | Scenario::CoaAmended => peers
            .results()
            .simulate_coa(outgoing(
                results::SimulateCoaRequest {
                    order_id: order.order_id,
                    scenario: name,
                },
                &caller.token(RESULTS_SVC),
            ))
            .await
            .map(|answer| answer.into_inner().simulation),
        Scenario::CardDeclined | Scenario::StablecoinReorg => peers
            .payments()
            .simulate_payment(outgoing(
                payments::SimulatePaymentRequest {
                    order_id: order.order_id,
                    scenario: name,
                },
                &caller.token(PAYMENTS_SVC),
            ))
            .await
            .map(|answer| answer.into_inner().simulation),
    };
    let simulation = answer
        .map_err(service_error)?
        .ok_or_else(|| ApiError::internal("a service answered a simulation without it"))?;
    Ok(Simulation::of(scenario, simulation).into())
}
