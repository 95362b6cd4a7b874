"""A gRPC client that is not ours, driven against the mesh by tests/tests/e2e/grpc_reflection.rs.

Python grpcio and grpcio-reflection only: nothing of the mesh's protos is compiled in. For every
process it lists the services through server reflection (v1, and v1alpha as grpcio-reflection's
descriptor database speaks it); then, for every call asked for, it resolves the method's
descriptors at run time from the process's reflection, builds the request from JSON, and calls it
with the token given (`authorization: Bearer …` metadata) or without one.

Usage: python3 grpc_reflection_flow.py < PLAN.json
PLAN: {"processes": {"name": "host:port", …},
       "calls": [{"process": …, "method": "package.Service/Method", "request": {…},
                  "token": "…" or null}, …]}
Prints one JSON report: {"processes": {name: {"v1": [services], "v1alpha": [services]}},
                         "calls": [{"describe": {…}, "code": "OK" | …, "details": …,
                                    "response": {…} | null}, …]}
"""

import json
import sys

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

# v1 and v1alpha have the same messages under two package names: the v1alpha classes encode v1.
REFLECTION_PATHS = {
    "v1": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "v1alpha": "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
}


def list_services(channel, path):
    """The service names a process lists over the reflection API at `path`."""
    info = channel.stream_stream(
        path,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    answers = list(info(iter([request]), timeout=10))
    assert len(answers) == 1, answers
    return sorted(service.name for service in answers[0].list_services_response.service)


def describe(pool, database, service_name, method_name):
    """The method's shape as reflection tells it, with the comment of its proto declaration."""
    service = pool.FindServiceByName(service_name)
    method = service.FindMethodByName(method_name)
    comment = ""
    file = database.FindFileContainingSymbol(service_name)
    service_index = next(i for i, s in enumerate(file.service) if s.name == service.name)
    method_index = next(
        i for i, m in enumerate(file.service[service_index].method) if m.name == method_name
    )
    for location in file.source_code_info.location:
        if list(location.path) == [6, service_index, 2, method_index]:
            comment = location.leading_comments.strip()
    return method, {
        "method": method.full_name,
        "input": method.input_type.full_name,
        "output": method.output_type.full_name,
        "clientStreaming": method.client_streaming,
        "serverStreaming": method.server_streaming,
        "inputFields": [field.name for field in method.input_type.fields],
        "comment": comment,
    }


def call(channel, pool, database, spec):
    service_name, method_name = spec["method"].split("/")
    method, description = describe(pool, database, service_name, method_name)
    request_class = message_factory.GetMessageClass(method.input_type)
    response_class = message_factory.GetMessageClass(method.output_type)
    unary = channel.unary_unary(
        f"/{service_name}/{method_name}",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )
    request = json_format.ParseDict(spec.get("request") or {}, request_class())
    metadata = [("authorization", f"Bearer {spec['token']}")] if spec.get("token") else None
    try:
        response = unary(request, metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        return {
            "describe": description,
            "code": error.code().name,
            "details": error.details(),
            "response": None,
        }
    return {
        "describe": description,
        "code": "OK",
        "details": "",
        "response": json_format.MessageToDict(response),
    }


def main():
    plan = json.load(sys.stdin)
    channels = {
        name: grpc.insecure_channel(address) for name, address in plan["processes"].items()
    }
    report = {"processes": {}, "calls": []}
    for name, channel in channels.items():
        report["processes"][name] = {
            version: list_services(channel, path) for version, path in REFLECTION_PATHS.items()
        }
    for spec in plan["calls"]:
        channel = channels[spec["process"]]
        # A fresh pool per call: everything it knows comes from the process's reflection.
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = DescriptorPool(database)
        report["calls"].append(call(channel, pool, database, spec))
    for channel in channels.values():
        channel.close()
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
