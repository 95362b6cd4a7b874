//! The gRPC adapter of `lab.shipping.v1.ShippingService`: who may call each rpc ([`ACCESS`]),
//! then per rpc: proto to domain, the use case, domain back to proto.

use crate::carrier::easypost::WebhookDelivery;
use crate::convert;
use crate::service::ShippingService;
use crate::service::pickups::PickupRequest;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use platform::principal::roles;
use platform::time::to_timestamp;
use proto::scopes::{ORDERS_READ, ORDERS_WRITE, SHIPMENTS_READ};
use proto::shipping as pb;
use proto::shipping::shipping_service_server::ShippingService as ShippingApi;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys read with `shipments:read` (the order's shipping block with
/// `orders:read`) and request pickups with `orders:write`; operators with `shipping.admin`
/// record scans; `payments.admin` confirm pickup payments by hand (a bank transfer; the hosted
/// payment page's settlement reaches shipping-svc as the `pickup_payment.paid` event);
/// the signed download and the carrier's webhook verify their own signatures.
pub const ACCESS: AccessTable = &[
    ("ListShipments", access::customer(&[SHIPMENTS_READ])),
    ("GetShipment", access::customer(&[SHIPMENTS_READ])),
    ("GetLabel", access::customer(&[SHIPMENTS_READ])),
    ("GetOrderShipping", access::customer(&[ORDERS_READ])),
    ("DownloadLabel", access::PUBLIC),
    ("RecordScan", access::staff(roles::SHIPPING_ADMIN)),
    ("SimulateScans", access::staff(roles::SHIPPING_ADMIN)),
    (
        "SimulateDelivery",
        access::customer(&[ORDERS_WRITE]).sandbox_only(),
    ),
    ("ReceiveCarrierWebhook", access::PUBLIC),
    ("GetPickupOptions", access::customer(&[SHIPMENTS_READ])),
    ("RequestPickup", access::customer(&[ORDERS_WRITE])),
    ("ConfirmPickupPayment", access::staff(roles::PAYMENTS_ADMIN)),
    ("PrepareLabel", access::services(&[platform::mesh::ORDERS_SVC])),
];

/// Serves the shipping API over the use cases.
pub struct ShippingGrpc {
    service: ShippingService,
}

impl ShippingGrpc {
    pub fn new(service: ShippingService) -> Self {
        Self { service }
    }
}

#[tonic::async_trait]
impl ShippingApi for ShippingGrpc {
    async fn list_shipments(
        &self,
        request: Request<pb::ListShipmentsRequest>,
    ) -> Result<Response<pb::ListShipmentsResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.into_inner();
        let page = PageRequest::new(message.limit, message.cursor)?;
        let page = self
            .service
            .list_shipments(
                customer_id,
                message.status.as_deref(),
                message.order_id.as_deref(),
                &page,
            )
            .await?;
        Ok(Response::new(pb::ListShipmentsResponse {
            shipments: page.items.iter().map(convert::shipment).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn get_shipment(
        &self,
        request: Request<pb::GetShipmentRequest>,
    ) -> Result<Response<pb::GetShipmentResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let tracked = self
            .service
            .get_shipment(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(pb::GetShipmentResponse {
            shipment: Some(convert::shipment(&tracked)),
        }))
    }

    async fn get_label(
        &self,
        request: Request<pb::GetLabelRequest>,
    ) -> Result<Response<pb::GetLabelResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let view = self
            .service
            .get_label(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(pb::GetLabelResponse {
            label: Some(convert::label(&view)),
        }))
    }

    async fn get_order_shipping(
        &self,
        request: Request<pb::GetOrderShippingRequest>,
    ) -> Result<Response<pb::GetOrderShippingResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let view = self
            .service
            .order_shipping(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(match view {
            Some(view) => pb::GetOrderShippingResponse {
                order_id: Some(view.shipment.order_id.to_string()),
                status: Some(view.shipment.status as i32),
                legacy_status: Some(view.shipment.status.as_str().to_owned()),
                label: Some(convert::label(&view)),
            },
            None => pb::GetOrderShippingResponse::default(),
        }))
    }

    async fn prepare_label(
        &self,
        request: Request<pb::PrepareLabelRequest>,
    ) -> Result<Response<pb::PrepareLabelResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let order = convert::label_order(customer_id, request.into_inner())?;
        let shipment = self.service.prepare_label(&order).await?;
        Ok(Response::new(match shipment {
            Some(shipment) => pb::PrepareLabelResponse {
                label: Some(convert::unsigned_label(&shipment)),
                status: shipment.status as i32,
            },
            None => pb::PrepareLabelResponse::default(),
        }))
    }

    async fn download_label(
        &self,
        request: Request<pb::DownloadLabelRequest>,
    ) -> Result<Response<pb::DownloadLabelResponse>, Status> {
        let message = request.get_ref();
        let (pdf, filename) = self
            .service
            .download_label(&message.shipment_id, message.expires, &message.signature)
            .await?;
        Ok(Response::new(pb::DownloadLabelResponse { pdf, filename }))
    }

    async fn record_scan(
        &self,
        request: Request<pb::RecordScanRequest>,
    ) -> Result<Response<pb::RecordScanResponse>, Status> {
        let scan = convert::scan(request.into_inner())?;
        let (tracked, recorded) = self.service.record_scan(&scan).await?;
        Ok(Response::new(pb::RecordScanResponse {
            shipment: Some(convert::shipment(&tracked)),
            recorded,
        }))
    }

    async fn simulate_scans(
        &self,
        request: Request<pb::SimulateScansRequest>,
    ) -> Result<Response<pb::SimulateScansResponse>, Status> {
        let message = request.get_ref();
        let (tracked, recorded) = self
            .service
            .simulate(message.tracking_number.trim(), message.script.trim())
            .await?;
        Ok(Response::new(pb::SimulateScansResponse {
            shipment: Some(convert::shipment(&tracked)),
            recorded,
        }))
    }

    async fn simulate_delivery(
        &self,
        request: Request<pb::SimulateDeliveryRequest>,
    ) -> Result<Response<pb::SimulateDeliveryResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.get_ref();
        let order_id = platform::ids::parse_uuid("orderId", &message.order_id)?;
        let simulation = self
            .service
            .simulate_delivery(customer_id, order_id, message.scenario.trim())
            .await?;
        Ok(Response::new(pb::SimulateDeliveryResponse {
            simulation: Some(simulation),
        }))
    }

    async fn receive_carrier_webhook(
        &self,
        request: Request<pb::ReceiveCarrierWebhookRequest>,
    ) -> Result<Response<pb::ReceiveCarrierWebhookResponse>, Status> {
        let message = request.get_ref();
        let delivery = WebhookDelivery {
            body: &message.body,
            signature: &message.signature,
            timestamp: &message.timestamp,
            path: &message.path,
        };
        let outcome = self.service.receive_carrier_webhook(&delivery).await?;
        Ok(Response::new(pb::ReceiveCarrierWebhookResponse {
            recorded: outcome.recorded,
            duplicate: outcome.duplicate,
        }))
    }

    async fn get_pickup_options(
        &self,
        request: Request<pb::GetPickupOptionsRequest>,
    ) -> Result<Response<pb::GetPickupOptionsResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let options = self
            .service
            .pickup_options(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(pb::GetPickupOptionsResponse {
            order_id: options.shipment.order_id.to_string(),
            shipment_id: options.shipment.id.to_string(),
            dates: options
                .dates
                .iter()
                .map(|date| date.format("%Y-%m-%d").to_string())
                .collect(),
            windows: options
                .windows
                .iter()
                .map(|window| pb::PickupWindow {
                    id: window.id.clone(),
                    start: window.start.clone(),
                    end: window.end.clone(),
                })
                .collect(),
            price_cents: options.price_cents,
            currency: "USD".to_owned(),
            quote_token: options.quote_token,
            expires_at: Some(to_timestamp(options.expires_at)),
        }))
    }

    async fn request_pickup(
        &self,
        request: Request<pb::RequestPickupRequest>,
    ) -> Result<Response<pb::RequestPickupResponse>, Status> {
        let caller = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let message = request.into_inner();
        let pickup_request = PickupRequest {
            reference: message.reference,
            date: message.date,
            window: message.window,
            quote_token: message.quote_token,
            confirm: message.confirm,
        };
        self.service
            .request_pickup(
                caller.customer()?,
                &caller.subject,
                caller.spend_limit_cents,
                key,
                pickup_request,
            )
            .await
            .into_response(|pickup| pb::RequestPickupResponse {
                order_id: pickup.order_id.to_string(),
                shipment_id: pickup.shipment_id.to_string(),
                pickup: Some(convert::pickup(&pickup)),
            })
    }

    async fn confirm_pickup_payment(
        &self,
        request: Request<pb::ConfirmPickupPaymentRequest>,
    ) -> Result<Response<pb::ConfirmPickupPaymentResponse>, Status> {
        let message = request.get_ref();
        let pickup = self
            .service
            .confirm_pickup_payment(None, &message.pickup_id, &message.payment_reference)
            .await?;
        Ok(Response::new(pb::ConfirmPickupPaymentResponse {
            pickup: Some(convert::pickup(&pickup)),
        }))
    }
}
