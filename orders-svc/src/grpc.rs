//! gRPC adapter of `lab.orders.v1.OrdersService`: who may call each rpc ([`ACCESS`], enforced by
//! the platform's access layer), then per rpc: principal, idempotency key, call the use case,
//! convert back. No business rule lives here.

use crate::domain::cancellation::Decision;
use crate::domain::request::UncheckedOrderRequest;
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::service::OrdersService;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use platform::principal::roles;
use proto::orders::orders_service_server::OrdersService as OrdersApi;
use proto::orders::{
    CancelDecision, CreateOrderRequest, CreateOrderResponse, DecideCancelRequestRequest,
    DecideCancelRequestResponse, DisposeSampleRequest, DisposeSampleResponse, GetCustodyRequest,
    GetCustodyResponse, GetEtaResponse, GetOrderRequest, GetOrderResponse, GetOrderViewResponse,
    ListCancelRequestsRequest, ListCancelRequestsResponse, ListOrdersRequest, ListOrdersResponse,
    ListSamplesRequest, ListSamplesResponse, ReceiveSamplesRequest, ReceiveSamplesResponse,
    RequestAddonRequest, RequestAddonResponse, RequestCancellationRequest, RequestCancellationResponse,
    StartTestingRequest, StartTestingResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with their scope; lab technicians receive samples, start
/// testing and dispose of retained samples; any operator lists cancellation requests and
/// `payments.admin` decides them (a decision moves money: voids and refunds).
pub const ACCESS: AccessTable = &[
    ("CreateOrder", access::customer(&[proto::scopes::ORDERS_WRITE])),
    ("GetOrder", access::customer(&[proto::scopes::ORDERS_READ])),
    ("GetOrderView", access::customer(&[proto::scopes::ORDERS_READ])),
    (
        "GetDataRelease",
        access::customer_any(&[
            proto::scopes::ORDERS_READ,
            proto::scopes::ORDERS_WRITE,
            proto::scopes::RAW_DATA_READ,
            proto::scopes::INSTRUMENTS_READ,
            proto::scopes::SHIPMENTS_READ,
            proto::scopes::PAYMENTS_READ,
            proto::scopes::RESULTS_READ,
        ]),
    ),
    ("ListOrders", access::customer(&[proto::scopes::ORDERS_READ])),
    ("ReceiveSamples", access::staff(roles::LAB_TECHNICIAN)),
    ("StartTesting", access::staff(roles::LAB_TECHNICIAN)),
    ("DisposeSample", access::staff(roles::LAB_TECHNICIAN)),
    ("GetLabOrder", access::ANY_OPERATOR),
    ("ListSamples", access::customer(&[proto::scopes::ORDERS_READ])),
    ("GetCustody", access::customer(&[proto::scopes::ORDERS_READ])),
    ("GetEta", access::customer(&[proto::scopes::ORDERS_READ])),
    (
        "RequestCancellation",
        access::customer(&[proto::scopes::ORDERS_WRITE]),
    ),
    ("ListCancelRequests", access::ANY_OPERATOR),
    ("DecideCancelRequest", access::staff(roles::PAYMENTS_ADMIN)),
    ("RequestAddon", access::customer(&[proto::scopes::ORDERS_WRITE])),
    (
        "FindSandboxOrder",
        access::customer(&[proto::scopes::ORDERS_WRITE]).sandbox_only(),
    ),
    (
        "SimulateLabStep",
        access::customer(&[proto::scopes::ORDERS_WRITE]).sandbox_only(),
    ),
];

/// The tonic service over the orders use cases.
#[derive(Clone)]
pub struct OrdersGrpc {
    orders: Arc<OrdersService>,
}

impl OrdersGrpc {
    pub fn new(orders: Arc<OrdersService>) -> Self {
        Self { orders }
    }
}

#[tonic::async_trait]
impl OrdersApi for OrdersGrpc {
    async fn create_order(
        &self,
        request: Request<CreateOrderRequest>,
    ) -> Result<Response<CreateOrderResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let order = UncheckedOrderRequest::from(request.into_inner());
        let answer = self.orders.create_order(&principal, key, order).await;
        let view = match &answer.result {
            Ok(order) => self.orders.placed_order_view(order, answer.replayed).await,
            Err(_) => None,
        };
        answer.into_response(|order| {
            // Operators find an order's trace by its number (docs/operations.md, "Traces").
            platform::telemetry::annotate("lab.order.number", order.order_number.clone());
            CreateOrderResponse {
                order: Some((&order).into()),
                view: view.map(view_response),
            }
        })
    }

    async fn get_order(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderResponse>, Status> {
        let principal = principal(&request)?;
        let order = self
            .orders
            .get_order(principal.customer()?, &request.get_ref().reference)
            .await?;
        Ok(Response::new(GetOrderResponse {
            order: Some((&order).into()),
        }))
    }

    async fn get_data_release(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<proto::orders::DataRelease>, Status> {
        let principal = principal(&request)?;
        let order = self
            .orders
            .get_order(principal.customer()?, &request.get_ref().reference)
            .await?;
        Ok(Response::new(proto::orders::DataRelease {
            order_id: order.id.to_string(),
            order_number: order.order_number.clone(),
            publish_raw_data: order.publish_raw_data,
        }))
    }

    async fn get_order_view(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderViewResponse>, Status> {
        let principal = principal(&request)?;
        let view = self
            .orders
            .get_order_view(principal.customer()?, &request.get_ref().reference)
            .await?;
        Ok(Response::new(view_response(view)))
    }

    async fn list_orders(
        &self,
        request: Request<ListOrdersRequest>,
    ) -> Result<Response<ListOrdersResponse>, Status> {
        let principal = principal(&request)?;
        let ListOrdersRequest {
            status,
            limit,
            cursor,
        } = request.into_inner();
        let status = status.as_deref().map(OrderStatus::parse_filter).transpose()?;
        let page = PageRequest::new(limit, cursor)?;
        let page = self
            .orders
            .list_orders(principal.customer()?, status, &page)
            .await?;
        let orders = page.items.iter().map(Into::into).collect();
        Ok(Response::new(ListOrdersResponse {
            orders,
            next_cursor: page.next_cursor,
        }))
    }

    async fn receive_samples(
        &self,
        request: Request<ReceiveSamplesRequest>,
    ) -> Result<Response<ReceiveSamplesResponse>, Status> {
        let operator = principal(&request)?.subject;
        let ReceiveSamplesRequest {
            order_reference,
            tracking_number,
            samples,
        } = request.into_inner();
        let receipts = samples.into_iter().map(Into::into).collect();
        let step = self
            .orders
            .receive_samples(&operator, &order_reference, &tracking_number, receipts)
            .await?;
        Ok(Response::new(ReceiveSamplesResponse {
            order: Some((&step.order).into()),
            samples: step.samples.iter().map(Into::into).collect(),
            already_received: step.unchanged,
        }))
    }

    async fn simulate_lab_step(
        &self,
        request: Request<proto::orders::SimulateLabStepRequest>,
    ) -> Result<Response<proto::orders::SimulateLabStepResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let scenario = crate::service::LabScenario::parse(&request.get_ref().scenario)?;
        let simulation = self
            .orders
            .simulate_lab_step(customer_id, &request.get_ref().reference, scenario)
            .await?;
        Ok(Response::new(proto::orders::SimulateLabStepResponse {
            simulation: Some(simulation),
        }))
    }

    async fn find_sandbox_order(
        &self,
        request: Request<proto::orders::FindSandboxOrderRequest>,
    ) -> Result<Response<proto::orders::FindSandboxOrderResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let order = self
            .orders
            .find_sandbox_order(customer_id, &request.get_ref().reference)
            .await?;
        Ok(Response::new(proto::orders::FindSandboxOrderResponse {
            order_id: order.id.to_string(),
            order_number: order.order_number,
            status: order.status as i32,
        }))
    }

    async fn start_testing(
        &self,
        request: Request<StartTestingRequest>,
    ) -> Result<Response<StartTestingResponse>, Status> {
        let operator = principal(&request)?.subject;
        let step = self
            .orders
            .start_testing(&operator, &request.get_ref().order_reference)
            .await?;
        Ok(Response::new(StartTestingResponse {
            order: Some((&step.order).into()),
            already_started: step.unchanged,
        }))
    }

    async fn get_lab_order(
        &self,
        request: Request<GetOrderRequest>,
    ) -> Result<Response<GetOrderResponse>, Status> {
        let order = self.orders.get_lab_order(&request.get_ref().reference).await?;
        Ok(Response::new(GetOrderResponse {
            order: Some((&order).into()),
        }))
    }

    async fn list_samples(
        &self,
        request: Request<ListSamplesRequest>,
    ) -> Result<Response<ListSamplesResponse>, Status> {
        let principal = principal(&request)?;
        let view = self
            .orders
            .list_samples(principal.customer()?, &request.get_ref().reference)
            .await?;
        let items = crate::domain::sample_items::items(&view.order, &view.samples, &view.coas);
        Ok(Response::new(ListSamplesResponse {
            order: Some((&view.order).into()),
            samples: items.iter().map(crate::convert::sample_item).collect(),
        }))
    }

    async fn get_eta(&self, request: Request<GetOrderRequest>) -> Result<Response<GetEtaResponse>, Status> {
        let principal = principal(&request)?;
        let order = self
            .orders
            .get_order(principal.customer()?, &request.get_ref().reference)
            .await?;
        let eta = crate::domain::eta::eta(&order, platform::time::now());
        Ok(Response::new(crate::convert::eta_response(&order, &eta)))
    }

    async fn get_custody(
        &self,
        request: Request<GetCustodyRequest>,
    ) -> Result<Response<GetCustodyResponse>, Status> {
        let principal = principal(&request)?;
        let view = self
            .orders
            .get_custody(principal.customer()?, &request.get_ref().reference)
            .await?;
        Ok(Response::new(GetCustodyResponse {
            order: Some((&view.order).into()),
            entries: view.entries.iter().map(crate::convert::custody_entry).collect(),
            chain_intact: view.chain_intact,
            retain_until: platform::time::to_timestamp_opt(view.retain_until),
        }))
    }

    async fn dispose_sample(
        &self,
        request: Request<DisposeSampleRequest>,
    ) -> Result<Response<DisposeSampleResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.get_ref();
        let disposal = self
            .orders
            .dispose_sample(&operator, &message.accession_number, &message.method)
            .await?;
        Ok(Response::new(DisposeSampleResponse {
            order: Some((&disposal.order).into()),
            sample: Some((&disposal.sample).into()),
            already_disposed: disposal.unchanged,
        }))
    }

    async fn request_cancellation(
        &self,
        request: Request<RequestCancellationRequest>,
    ) -> Result<Response<RequestCancellationResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let RequestCancellationRequest {
            reference,
            reason,
            confirm,
        } = request.into_inner();
        self.orders
            .request_cancellation(&principal, key, &reference, &reason, confirm)
            .await
            .into_response(|request| RequestCancellationResponse {
                cancel_request: Some((&request).into()),
            })
    }

    async fn request_addon(
        &self,
        request: Request<RequestAddonRequest>,
    ) -> Result<Response<RequestAddonResponse>, Status> {
        let principal = principal(&request)?;
        let confirm = request.get_ref().confirm;
        let key = if confirm {
            Some(IdempotencyKey::from_grpc(&request)?)
        } else {
            None
        };
        let RequestAddonRequest {
            reference,
            line_number,
            test_ids,
            confirm: _,
        } = request.into_inner();
        let addon_request = crate::service::AddonRequest {
            reference,
            line_number,
            test_ids,
        };
        let respond = |addon: crate::domain::addon::Addon| RequestAddonResponse {
            addon: Some((&addon).into()),
        };
        match key {
            Some(key) => self
                .orders
                .request_addon(&principal, key, addon_request)
                .await
                .into_response(respond),
            None => self
                .orders
                .preview_addon(&principal, &addon_request)
                .await
                .map(|addon| Response::new(respond(addon)))
                .map_err(Status::from),
        }
    }

    async fn list_cancel_requests(
        &self,
        request: Request<ListCancelRequestsRequest>,
    ) -> Result<Response<ListCancelRequestsResponse>, Status> {
        let message = request.get_ref();
        let requests = self
            .orders
            .list_cancel_requests(message.status.as_deref(), message.limit)
            .await?;
        Ok(Response::new(ListCancelRequestsResponse {
            cancel_requests: requests.iter().map(Into::into).collect(),
        }))
    }

    async fn decide_cancel_request(
        &self,
        request: Request<DecideCancelRequestRequest>,
    ) -> Result<Response<DecideCancelRequestResponse>, Status> {
        let operator = principal(&request)?.subject;
        let message = request.get_ref();
        let decision = match CancelDecision::try_from(message.decision) {
            Ok(CancelDecision::Approve) => Decision::Approve,
            Ok(CancelDecision::Decline) => Decision::Decline,
            _ => {
                return Err(platform::error::ApiError::field(
                    platform::error::ErrorCode::InvalidRequest,
                    "decision",
                    "decision must be approve or decline",
                )
                .into());
            }
        };
        let decided = self
            .orders
            .decide_cancel_request(
                &operator,
                &message.reference,
                decision,
                &message.note,
                message.charge_cents,
            )
            .await?;
        Ok(Response::new(DecideCancelRequestResponse {
            cancel_request: Some((&decided.request).into()),
            order: Some((&decided.order).into()),
            unchanged: decided.unchanged,
        }))
    }
}

/// The read model's order document as GetOrderView (and CreateOrder) answer it.
fn view_response(view: crate::service::OrderView) -> GetOrderViewResponse {
    GetOrderViewResponse {
        json: view.json,
        shipping_unknown: view.shipping_unknown_at.is_some(),
        shipping_offset: view
            .shipping_unknown_at
            .and_then(|at| u32::try_from(at).ok())
            .unwrap_or_default(),
        order_id: view.order_id.to_string(),
    }
}
