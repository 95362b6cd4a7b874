//! gRPC server reflection on the mesh's listeners (`platform::grpc::MeshRouter::reflection`):
//! on, both reflection APIs (v1 and v1alpha) list exactly the services the router serves (and
//! reflection itself) and answer their descriptors with the proto comments; off (a production
//! process that did not ask for it), reflection is not there at all.

use platform::grpc::{REFLECTION_SERVICES, serve, server_builder};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

/// A health server (with reflection when `reflection`) on a free loopback port.
async fn server(reflection: bool) -> (SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        server_builder().reflection(reflection).add_service(health),
        listener,
        shutdown.clone(),
    ));
    (address, shutdown)
}

async fn ask(address: SocketAddr, request: MessageRequest) -> Result<MessageResponse, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .expect("the server accepts connections");
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    };
    let mut answers = client
        .server_reflection_info(futures::stream::iter([request]))
        .await?
        .into_inner();
    let answer: ServerReflectionResponse = answers.message().await?.expect("one answer");
    Ok(answer.message_response.expect("a message"))
}

#[tokio::test]
async fn reflection_lists_exactly_the_services_a_router_serves_and_describes_them() {
    let (address, shutdown) = server(true).await;
    let Ok(MessageResponse::ListServicesResponse(listed)) =
        ask(address, MessageRequest::ListServices(String::new())).await
    else {
        panic!("a list of services");
    };
    let mut names: Vec<String> = listed.service.into_iter().map(|service| service.name).collect();
    names.sort();
    let mut expected = vec!["grpc.health.v1.Health".to_owned()];
    expected.extend(REFLECTION_SERVICES.map(str::to_owned));
    expected.sort();
    assert_eq!(names, expected);

    let Ok(MessageResponse::FileDescriptorResponse(files)) = ask(
        address,
        MessageRequest::FileContainingSymbol("grpc.health.v1.Health".to_owned()),
    )
    .await
    else {
        panic!("the descriptor of the health service");
    };
    assert!(!files.file_descriptor_proto.is_empty());
    // The mesh's own messages resolve too (their comments ride along in the descriptors).
    let Ok(MessageResponse::FileDescriptorResponse(files)) = ask(
        address,
        MessageRequest::FileContainingSymbol("lab.identity.v1.IssueStaffTokenRequest".to_owned()),
    )
    .await
    else {
        panic!("the descriptor of a mesh message");
    };
    let file: prost_types::FileDescriptorProto =
        prost::Message::decode(files.file_descriptor_proto[0].as_slice()).unwrap();
    assert_eq!(file.package(), "lab.identity.v1");
    assert!(
        file.source_code_info.as_ref().is_some_and(|info| info
            .location
            .iter()
            .any(|location| location.leading_comments.is_some())),
        "the descriptors keep the proto comments"
    );
    shutdown.cancel();
}

#[tokio::test]
async fn without_reflection_a_listener_answers_unimplemented() {
    let (address, shutdown) = server(false).await;
    let refused = ask(address, MessageRequest::ListServices(String::new()))
        .await
        .expect_err("no reflection");
    assert_eq!(refused.code(), tonic::Code::Unimplemented, "{refused:?}");
    shutdown.cancel();
}
