// A Dapr application, as a user of Dapr writes it, using the official
// JavaScript SDK (@dapr/dapr, pinned in package.json) unchanged. It takes
// the sidecar from the SDK's own environment variables (DAPR_HTTP_ENDPOINT,
// DAPR_GRPC_ENDPOINT, DAPR_API_TOKEN) and the protocol from its first
// argument (http or grpc), then runs the lock API's steps and prints one
// JSON line per step: {"step", "result"}. test/daprsdk runs it against
// `blobleader locks`.
"use strict";

const { DaprClient, CommunicationProtocolEnum } = require("@dapr/dapr");

async function main() {
  const [protocol, store, resource] = process.argv.slice(2);
  const client = new DaprClient({
    communicationProtocol: protocol === "grpc" ? CommunicationProtocolEnum.GRPC : CommunicationProtocolEnum.HTTP,
  });
  const step = (name, result) => console.log(JSON.stringify({ step: name, result }));
  const started = Date.now();
  await client.start();
  step("started", { ms: Date.now() - started });
  step("lock", await client.lock.lock(store, resource, "owner-a", 30));
  step("lock by another owner", await client.lock.lock(store, resource, "owner-b", 30));
  step("unlock by another owner", await client.lock.unlock(store, resource, "owner-b"));
  step("unlock", await client.lock.unlock(store, resource, "owner-a"));
  step("unlock again", await client.lock.unlock(store, resource, "owner-a"));
  step("lock again", await client.lock.lock(store, resource, "owner-a", 30));
  step("same owner locks twice", await client.lock.lock(store, resource, "owner-a", 30));
  step("unlock at the end", await client.lock.unlock(store, resource, "owner-a"));
  await client.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.log(JSON.stringify({ step: "error", result: String(err && err.stack ? err.stack : err) }));
    process.exit(1);
  },
);
