// The official MCP TypeScript SDK (npm @modelcontextprotocol/sdk), unmodified, against the
// gateway's /api/mcp.
//
// Run by the e2e test `mcp_clients` as `node mcp_flow.mjs URL API_KEY`. It initializes over
// Streamable HTTP, lists the tools and runs the canonical flow catalog -> quote -> order (bank
// invoice) -> get order. The SDK validates every structured result against the tool's
// outputSchema. Prints one JSON line with what it saw; any failure exits non-zero.

import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, key] = process.argv.slice(2);

function structured(result, tool) {
  if (result.isError) {
    throw new Error(`${tool} failed: ${JSON.stringify(result.structuredContent)}`);
  }
  return result.structuredContent;
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: 'lab-e2e-typescript', version: '1.0.0' });
await client.connect(transport);

const { tools } = await client.listTools();
const page = structured(
  await client.callTool({ name: 'svc.catalog.search', arguments: { category: 'peptides', limit: 200 } }),
  'svc.catalog.search',
);
const tests = page.data
  .filter((item) => item.kind === 'test')
  .sort((a, b) => a.priceCents - b.priceCents)
  .slice(0, 2);
const { quote } = structured(
  await client.callTool({
    name: 'svc.quote.create',
    arguments: { categoryId: 'peptides', compoundNames: ['TB-500'], testIds: tests.map((test) => test.id) },
  }),
  'svc.quote.create',
).data;
const { order } = structured(
  await client.callTool({
    name: 'svc.order.create',
    arguments: {
      quoteId: quote.id,
      paymentMethod: 'bank_invoice',
      confirm: true,
      idempotencyKey: `typescript-sdk-${randomUUID()}`,
    },
  }),
  'svc.order.create',
).data;
const read = structured(
  await client.callTool({ name: 'svc.order.get', arguments: { reference: order.id } }),
  'svc.order.get',
).data.order;
// A support ticket about the order, read back with its thread.
const ticketBody = '<script>alert(1)</script>\nFrom the TypeScript SDK';
const opened = structured(
  await client.callTool({
    name: 'svc.support.ticket.open',
    arguments: {
      subject: 'TypeScript SDK question',
      body: ticketBody,
      reference: order.orderNumber,
      idempotencyKey: `typescript-ticket-${randomUUID()}`,
    },
  }),
  'svc.support.ticket.open',
).data.ticket;
const ticket = structured(
  await client.callTool({ name: 'svc.support.ticket.get', arguments: { ticketId: opened.id } }),
  'svc.support.ticket.get',
).data.ticket;
// A cancellation request for the order: pending until lab staff decide it.
const cancelRequest = structured(
  await client.callTool({
    name: 'svc.order.cancel_request',
    arguments: {
      reference: order.orderNumber,
      reason: 'Placed by mistake (TypeScript SDK)',
      confirm: true,
      idempotencyKey: `typescript-cancel-${randomUUID()}`,
    },
  }),
  'svc.order.cancel_request',
).data.cancelRequest;

console.log(
  JSON.stringify({
    protocolVersion: transport.protocolVersion,
    serverName: client.getServerVersion()?.name,
    instructions: Boolean(client.getInstructions()),
    tools: tools.map((tool) => tool.name).sort(),
    catalogRevision: page.catalogRevision,
    quoteTotalCents: quote.totalCents,
    orderId: order.id,
    orderStatus: read.status,
    invoiceNumber: read.payment.invoiceNumber,
    ticketId: ticket.id,
    ticketOrderId: ticket.orderId,
    ticketStatus: ticket.status,
    ticketBodyKept: ticket.messages[0].body === ticketBody,
    cancelRequestId: cancelRequest.id,
    cancelRequestStatus: cancelRequest.status,
  }),
);
await client.close();
