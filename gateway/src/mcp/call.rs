//! `tools/call`: the arguments of a tool become the inputs of its REST twin (path and query
//! parameters, body, `Idempotency-Key`), refused with the same error codes as REST
//! (`crate::operation_table::Input`), and the tool calls the same function of
//! `crate::operations` that the REST handler calls, both from the operation's one declaration in
//! `crate::operation_table`. The answer is the REST body, serialized once.

use super::tools::Tool;
use crate::limits::ceiling::LookupCeiling;
use crate::operation_table::prelude::*;
use crate::operations::Replayable;
use crate::peers::Peers;
use platform::error::ApiError;
use serde::Serialize;
use serde_json::{Map, Value};

/// A tool's answer: the REST body as JSON text, and whether it is the stored replay of an earlier
/// call with the same idempotency key.
pub struct Output {
    pub json: Json,
    pub replayed: bool,
}

/// The REST body of a tool's answer: serialized here, or the order as orders-svc rendered it
/// (kept in pieces, so that the answer is the one copy of it).
pub enum Json {
    Serialized(String),
    Order(operations::OrderDocument),
}

impl Json {
    /// The body in pieces that joined are the JSON text.
    pub fn pieces(&self) -> [&str; 3] {
        match self {
            Json::Serialized(json) => [json, "", ""],
            Json::Order(document) => document.pieces(),
        }
    }
}

/// The `tools/call` dispatch of the declarations of `crate::operation_table`: each tool takes
/// its inputs from the arguments in the declared order, refuses any argument left, and awaits
/// its operation. Every tool but the `order` answer (`svc.order.get`, the hot read) awaits its
/// operation in a box: this future is then about as large as REST's `get_order` (2.4 KB) instead
/// of the largest tool's (5.5 KB), and it is moved into the handler's box on every call.
macro_rules! dispatch {
    ($({ route: $method:ident $path:literal, tool: $tool:tt, scope: $scope:tt, rest: $rest:tt, call: $call:tt, })*) => {
        /// Runs `tool` for `caller` with `arguments` (already checked by the input rules).
        pub async fn call(
            tool: &Tool,
            peers: &Peers,
            verify_lookups: &LookupCeiling,
            client: std::net::IpAddr,
            site: &str,
            caller: &Caller,
            arguments: Map<String, Value>,
        ) -> Result<Output, ApiError> {
            let context = Context {
                peers,
                site,
                verify_lookups,
                client,
            };
            let mut input = McpInput::new(caller, arguments);
            match tool.name {
                $(dispatch!(@name $tool) => dispatch!(@call input context $call),)*
                other => Err(ApiError::internal(format!(
                    "the tool {other} has no declaration in gateway/src/operation_table.rs"
                ))),
            }
        }
    };
    (@name { name: $name:literal, $($other:tt)* }) => { $name };
    (@call $input:ident $context:ident {
        answer: $answer:ident $(($status:ident))?,
        run: |$cx:ident $(, $arg:ident: $ty:ty)*| $run:expr,
    }) => {{
        let $cx = $context;
        $(let $arg = <$ty as Input>::mcp(&mut $input)?;)*
        $input.nothing_else()?;
        dispatch!(@answer $answer, $run)
    }};
    // The REST body as orders-svc rendered it: no JSON parsed or re-serialized, not boxed.
    (@answer order, $run:expr) => {
        Ok(Output {
            json: Json::Order($run.await?),
            replayed: false,
        })
    };
    (@answer json, $run:expr) => { read(Box::pin($run).await?) };
    // An export page, collected as its JSON text.
    (@answer export, $run:expr) => {
        Ok(Output {
            json: Json::Serialized(Box::pin(async { Box::pin($run).await?.into_json().await }).await?),
            replayed: false,
        })
    };
    (@answer created, $run:expr) => { read(Box::pin($run).await?) };
    (@answer replayable, $run:expr) => { replayable(Box::pin($run).await?) };
    (@answer secret, $run:expr) => { replayable(Box::pin($run).await?) };
    (@answer staged, $run:expr) => { replayable(Box::pin($run).await?.outcome) };
}

crate::operation_table::operation_table!(dispatch);

fn read(body: impl Serialize) -> Result<Output, ApiError> {
    Ok(Output {
        json: Json::Serialized(serialize(&body)?),
        replayed: false,
    })
}

fn replayable<T: Serialize>(outcome: Replayable<T>) -> Result<Output, ApiError> {
    Ok(Output {
        json: Json::Serialized(serialize(&outcome.body)?),
        replayed: outcome.replayed,
    })
}

/// The REST body as JSON text.
fn serialize(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body)
        .map_err(|error| ApiError::internal(format!("serializing a tool result: {error}")))
}
