"""The official MCP Python SDK (PyPI `mcp`), unmodified, against the gateway's /api/mcp.

Run by the e2e test `mcp_clients` as `python3 mcp_flow.py URL API_KEY`. It connects with the
SDK's default mode (a `server/discover` probe, then the `initialize` handshake), lists the tools
and runs the canonical flow catalog -> quote -> order (bank invoice) -> get order, then opens a
support ticket about the order and reads it back. The SDK itself
validates every structured result against the tool's outputSchema. Prints one JSON line with what
it saw; any failure is an exception and a non-zero exit status.
"""

import asyncio
import json
import sys
import uuid

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def structured(result, tool):
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.structured_content}")
    return result.structured_content


async def main(url: str, key: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        tools = await client.list_tools()
        names = sorted(tool.name for tool in tools.tools)

        page = structured(
            await client.call_tool("svc.catalog.search", {"category": "peptides", "limit": 200}),
            "svc.catalog.search",
        )
        tests = sorted(
            (item for item in page["data"] if item["kind"] == "test"),
            key=lambda item: item["priceCents"],
        )[:2]
        quote = structured(
            await client.call_tool(
                "svc.quote.create",
                {
                    "categoryId": "peptides",
                    "compoundNames": ["BPC-157"],
                    "testIds": [test["id"] for test in tests],
                },
            ),
            "svc.quote.create",
        )["data"]["quote"]
        order = structured(
            await client.call_tool(
                "svc.order.create",
                {
                    "quoteId": quote["id"],
                    "paymentMethod": "bank_invoice",
                    "confirm": True,
                    "idempotencyKey": f"python-sdk-{uuid.uuid4()}",
                },
            ),
            "svc.order.create",
        )["data"]["order"]
        read = structured(
            await client.call_tool("svc.order.get", {"reference": order["orderNumber"]}),
            "svc.order.get",
        )["data"]["order"]
        # A support ticket about the order, read back with its thread.
        ticket_body = "<script>alert(1)</script>\nFrom the Python SDK"
        opened = structured(
            await client.call_tool(
                "svc.support.ticket.open",
                {
                    "subject": "Python SDK question",
                    "body": ticket_body,
                    "reference": order["orderNumber"],
                    "idempotencyKey": f"python-ticket-{uuid.uuid4()}",
                },
            ),
            "svc.support.ticket.open",
        )["data"]["ticket"]
        ticket = structured(
            await client.call_tool("svc.support.ticket.get", {"ticketId": opened["ticketNumber"]}),
            "svc.support.ticket.get",
        )["data"]["ticket"]
        # A cancellation request for the order: pending until lab staff decide it.
        cancel_request = structured(
            await client.call_tool(
                "svc.order.cancel_request",
                {
                    "reference": order["orderNumber"],
                    "reason": "Placed by mistake (Python SDK)",
                    "confirm": True,
                    "idempotencyKey": f"python-cancel-{uuid.uuid4()}",
                },
            ),
            "svc.order.cancel_request",
        )["data"]["cancelRequest"]
        print(
            json.dumps(
                {
                    "protocolVersion": client.protocol_version,
                    "serverName": client.server_info.name if client.server_info else None,
                    "instructions": bool(client.instructions),
                    "tools": names,
                    "catalogRevision": page["catalogRevision"],
                    "quoteTotalCents": quote["totalCents"],
                    "orderId": order["id"],
                    "orderStatus": read["status"],
                    "invoiceNumber": read["payment"]["invoiceNumber"],
                    "ticketId": ticket["id"],
                    "ticketOrderId": ticket["orderId"],
                    "ticketStatus": ticket["status"],
                    "ticketBodyKept": ticket["messages"][0]["body"] == ticket_body,
                    "cancelRequestId": cancel_request["id"],
                    "cancelRequestStatus": cancel_request["status"],
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
