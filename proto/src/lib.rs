//! Generated protobuf types and gRPC stubs of every domain, one module per versioned package.
//!
//! The `.proto` files under `lab/` are the contract; this crate only compiles them (see `build.rs`)
//! and adds the small helpers every service needs on the event envelope.

pub mod lab {
    pub mod common {
        pub mod v1 {
            tonic::include_proto!("lab.common.v1");
        }
    }
    pub mod events {
        pub mod v1 {
            tonic::include_proto!("lab.events.v1");
        }
    }
    pub mod catalog {
        pub mod v1 {
            tonic::include_proto!("lab.catalog.v1");
        }
    }
    pub mod orders {
        pub mod v1 {
            tonic::include_proto!("lab.orders.v1");
        }
    }
    pub mod payments {
        pub mod v1 {
            tonic::include_proto!("lab.payments.v1");
        }
    }
    pub mod shipping {
        pub mod v1 {
            tonic::include_proto!("lab.shipping.v1");
        }
    }
    pub mod results {
        pub mod v1 {
            tonic::include_proto!("lab.results.v1");
        }
    }
    pub mod webhooks {
        pub mod v1 {
            tonic::include_proto!("lab.webhooks.v1");
        }
    }
    pub mod identity {
        pub mod v1 {
            tonic::include_proto!("lab.identity.v1");
        }
    }
    pub mod gateway {
        pub mod v1 {
            tonic::include_proto!("lab.gateway.v1");
        }
    }
}

pub use lab::catalog::v1 as catalog;
pub use lab::common::v1 as common;
pub use lab::events::v1 as events;
pub use lab::gateway::v1 as gateway;
pub use lab::identity::v1 as identity;
pub use lab::orders::v1 as orders;
pub use lab::payments::v1 as payments;
pub use lab::results::v1 as results;
pub use lab::shipping::v1 as shipping;
pub use lab::webhooks::v1 as webhooks;

/// The encoded `FileDescriptorSet` of every `.proto` file under `lab/`, so that generic code
/// (`platform::input`'s check of incoming messages) can walk messages by their schema.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/file_descriptor_set.bin"));

pub mod enums;
pub mod event_data;
pub mod scopes;
