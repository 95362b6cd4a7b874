//! Translation of the shipping use cases to `lab.shipping.v1.ShippingService`: shipments, labels,
//! the order's `shipping` block, lookup of an order by tracking number, door pickups, and the
//! two unauthenticated entries that verify their own signatures (label download, carrier webhook).

use super::{Replayable, is_replay, missing, service_error};
use crate::caller::Caller;
use crate::dto::shipping::{
    Label, LabelEnvelope, Pickup, PickupEnvelope, PickupOptions, PickupOptionsEnvelope, PickupRequest,
    RequestedPickup, Shipment, ShipmentEnvelope, ShipmentList, ShipmentsQuery,
};
use crate::peers::Peers;
use platform::error::{ApiError, ErrorCode};
use platform::grpc::{outgoing, outgoing_idempotent};
use platform::mesh::SHIPPING_SVC;
use proto::common::ShipmentStatus;
use proto::enums::shown;
use proto::shipping as pb;

/// `GET /shipments`: one page of the customer's shipments.
pub async fn list_shipments(
    peers: &Peers,
    caller: &Caller,
    query: ShipmentsQuery,
) -> Result<ShipmentList, ApiError> {
    let request = pb::ListShipmentsRequest {
        status: query.status,
        order_id: query.order_id,
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .shipping()
        .list_shipments(outgoing(request, &caller.token(SHIPPING_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .shipments
        .into_iter()
        .map(Shipment::try_from)
        .collect::<Result<_, _>>()?;
    Ok(ShipmentList::new(data, page.next_cursor))
}

/// `GET /shipments/{reference}`: one shipment by its UUID, tracking number, order UUID or order
/// number, with its carrier event history.
pub async fn get_shipment(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<ShipmentEnvelope, ApiError> {
    let reference = shipping_reference(peers, caller, reference).await?;
    let request = pb::GetShipmentRequest { reference };
    let shipment = peers
        .shipping()
        .get_shipment(outgoing(request, &caller.token(SHIPPING_SVC)))
        .await
        .map_err(service_error)?
        .into_inner()
        .shipment
        .ok_or_else(|| missing("shipment"))?;
    Ok(Shipment::try_from(shipment)?.into())
}

/// The reference shipping-svc is asked with: it knows shipment UUIDs, tracking numbers, order
/// UUIDs and order numbers itself; an invoice (`INV-…`) or accession (`ACC-…`) number names the
/// order's shipment through orders-svc (another customer's answers `not_found`).
async fn shipping_reference(peers: &Peers, caller: &Caller, reference: String) -> Result<String, ApiError> {
    let trimmed = reference.trim();
    if trimmed.starts_with("INV-") || trimmed.starts_with("ACC-") {
        return Ok(super::data_release(peers, caller, reference).await?.order_id);
    }
    Ok(reference)
}

/// `GET /shipments/{reference}/label`: the label with a fresh signed PDF URL.
pub async fn get_label(peers: &Peers, caller: &Caller, reference: String) -> Result<LabelEnvelope, ApiError> {
    let reference = shipping_reference(peers, caller, reference).await?;
    let token = caller.token(SHIPPING_SVC);
    let label = peers
        .shipping()
        .get_label(outgoing(
            pb::GetLabelRequest {
                reference: reference.clone(),
            },
            &token,
        ))
        .await
        .map_err(service_error)?
        .into_inner()
        .label
        .ok_or_else(|| missing("label"))?;
    let shipment = peers
        .shipping()
        .get_shipment(outgoing(pb::GetShipmentRequest { reference }, &token))
        .await
        .map_err(service_error)?
        .into_inner()
        .shipment
        .ok_or_else(|| missing("shipment"))?;
    let status = shown::<ShipmentStatus>(shipment.status, shipment.legacy_status);
    Ok(Label::from_proto(label, status).into())
}

/// The `shipping` block of an order (`None` while it has no label). A shipping-svc that cannot
/// answer leaves the block out rather than failing the order read.
pub async fn order_shipping(
    peers: &Peers,
    caller: &Caller,
    order_id: &str,
) -> Result<Option<Label>, ApiError> {
    let request = pb::GetOrderShippingRequest {
        reference: order_id.to_owned(),
    };
    match peers
        .shipping()
        .get_order_shipping(outgoing(request, &caller.token(SHIPPING_SVC)))
        .await
    {
        Ok(response) => {
            let answer = response.into_inner();
            let status = shown::<ShipmentStatus>(
                answer.status.unwrap_or_default(),
                answer.legacy_status.unwrap_or_default(),
            );
            Ok(answer.label.map(|label| Label::from_proto(label, status)))
        }
        // A shipping-svc that is down (or not deployed) leaves the block out.
        Err(status)
            if matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::Unimplemented
            ) =>
        {
            tracing::warn!(error = %status.message(), "shipping-svc unavailable; the order is read without its shipping block");
            Ok(None)
        }
        Err(status) => Err(service_error(status)),
    }
}

/// The order id behind a tracking number of the caller's customer, if any.
pub async fn order_of_tracking_number(
    peers: &Peers,
    caller: &Caller,
    reference: &str,
) -> Result<Option<String>, ApiError> {
    let request = pb::GetOrderShippingRequest {
        reference: reference.to_owned(),
    };
    match peers
        .shipping()
        .get_order_shipping(outgoing(request, &caller.token(SHIPPING_SVC)))
        .await
    {
        Ok(answer) => Ok(answer.into_inner().order_id),
        // Without a shipping-svc the reference is simply no tracking number it knows.
        Err(status) if status.code() == tonic::Code::Unimplemented => Ok(None),
        Err(status) => Err(service_error(status)),
    }
}

/// `GET /orders/{reference}/pickup`: door-pickup options of a paid order.
pub async fn pickup_options(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<PickupOptionsEnvelope, ApiError> {
    let reference = shipping_reference(peers, caller, reference).await?;
    let options = peers
        .shipping()
        .get_pickup_options(outgoing(
            pb::GetPickupOptionsRequest { reference },
            &caller.token(SHIPPING_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok(PickupOptions::from(options).into())
}

/// `POST /orders/{reference}/pickup`: requests a door pickup under the caller's idempotency key
/// or, without one (the spec does not require it here), under [`pickup_key`] of the request, so
/// that the same request sent again is answered like the first.
pub async fn request_pickup(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    reference: String,
    body: PickupRequest,
) -> Result<Replayable<PickupEnvelope>, ApiError> {
    let derived;
    let idempotency_key = match idempotency_key {
        Some(key) => key,
        None => {
            derived = pickup_key(&caller.principal.subject, &reference, &body);
            derived.as_str()
        }
    };
    let request = pb::RequestPickupRequest {
        reference: shipping_reference(peers, caller, reference).await?,
        date: body.date,
        window: body.window,
        quote_token: body.quote_token,
        confirm: body.confirm,
    };
    let response = peers
        .shipping()
        .request_pickup(outgoing_idempotent(
            request,
            &caller.token(SHIPPING_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let answer = response.into_inner();
    let pickup = answer.pickup.ok_or_else(|| missing("pickup"))?;
    Ok(Replayable {
        body: RequestedPickup {
            order_id: answer.order_id,
            shipment_id: answer.shipment_id,
            pickup: Pickup::from(pickup),
        }
        .into(),
        replayed,
    })
}

/// The idempotency key of a pickup request sent without one: a digest of the API key's subject,
/// the reference and the whole body (the quote token is signed and expires, so two intended
/// pickups never share it), 71 visible ASCII characters.
pub fn pickup_key(subject: &str, reference: &str, body: &PickupRequest) -> String {
    let confirm = if body.confirm { "true" } else { "false" };
    super::derived_key(
        "pickup:",
        &[
            subject,
            reference,
            &body.date,
            &body.window,
            &body.quote_token,
            confirm,
        ],
    )
}

/// `GET /api/v1/files/labels/{file}`: the PDF of a signed label URL (no key; the signature is
/// the authorization). Answers the PDF bytes and a file name.
pub async fn download_label(
    peers: &Peers,
    file: String,
    expires: i64,
    signature: String,
) -> Result<(Vec<u8>, String), ApiError> {
    let request = pb::DownloadLabelRequest {
        shipment_id: file,
        expires,
        signature,
    };
    // No principal: the rpc is public and checks the URL's signature itself.
    let answer = peers
        .shipping()
        .download_label(tonic::Request::new(request))
        .await
        .map_err(service_error)?
        .into_inner();
    Ok((answer.pdf, answer.filename))
}

/// `POST /api/v1/carriers/easypost/webhooks`: a tracker webhook of the external carrier, passed
/// on with its exact body and signature headers.
pub async fn carrier_webhook(
    peers: &Peers,
    request: pb::ReceiveCarrierWebhookRequest,
) -> Result<pb::ReceiveCarrierWebhookResponse, ApiError> {
    if request.signature.is_empty() {
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            "the webhook is not signed",
        ));
    }
    let answer = peers
        .shipping()
        .receive_carrier_webhook(tonic::Request::new(request))
        .await
        // Not `service_error`: here `unauthenticated` is the carrier's signature refused (401).
        .map_err(|status| ApiError::from_status(&status))?
        .into_inner();
    Ok(answer)
}
