//! gRPC adapter of `lab.orders.v1.OrdersService`: who may call each rpc ([`ACCESS`], enforced by
//! the platform's access layer), then per rpc: principal, idempotency key, call the use case,
//! convert back. No business rule lives here.

use crate::domain::request::UncheckedOrderRequest;
use crate::domain::status::OrderStatus;
use crate::service::OrdersService;
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use proto::orders::orders_service_server::OrdersService as OrdersApi;
use proto::orders::{
    CreateOrderRequest, CreateOrderResponse, GetOrderRequest, GetOrderResponse, ListOrdersRequest,
    ListOrdersResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with their scope.
pub const ACCESS: AccessTable = &[
    ("CreateOrder", access::customer(&[proto::scopes::ORDERS_WRITE])),
    ("GetOrder", access::customer(&[proto::scopes::ORDERS_READ])),
    ("ListOrders", access::customer(&[proto::scopes::ORDERS_READ])),
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
        self.orders
            .create_order(&principal, key, order)
            .await
            .into_response(|order| CreateOrderResponse {
                order: Some((&order).into()),
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
}
