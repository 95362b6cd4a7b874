//! Translation of the registry reads to `lab.results.v1.RegistryService` (results-svc): the
//! lab-wide instruments and methods, read with the caller's principal token (`catalog:read`).

use super::service_error;
use crate::caller::Caller;
use crate::dto::registry::{Instrument, InstrumentList, InstrumentsQuery, Method, MethodList, MethodsQuery};
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::outgoing;
use platform::mesh::RESULTS_SVC;
use proto::results as pb;

/// `GET /instruments`: one page of instruments in id order, with their equipment.
pub async fn list_instruments(
    peers: &Peers,
    caller: &Caller,
    query: InstrumentsQuery,
) -> Result<InstrumentList, ApiError> {
    let page = peers
        .registry()
        .list_instruments(outgoing(
            pb::ListInstrumentsRequest::from(query),
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .instruments
        .into_iter()
        .map(Instrument::try_from)
        .collect::<Result<_, _>>()?;
    Ok(InstrumentList::new(data, page.next_cursor))
}

/// `GET /methods`: one page of methods in id order, with their analytes.
pub async fn list_methods(
    peers: &Peers,
    caller: &Caller,
    query: MethodsQuery,
) -> Result<MethodList, ApiError> {
    let page = peers
        .registry()
        .list_methods(outgoing(
            pb::ListMethodsRequest::from(query),
            &caller.token(RESULTS_SVC),
        ))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .methods
        .into_iter()
        .map(Method::try_from)
        .collect::<Result<_, _>>()?;
    Ok(MethodList::new(data, page.next_cursor))
}
