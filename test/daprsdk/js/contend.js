// One Dapr SDK client of the lock scenarios (test/scenarios): the official
// JavaScript SDK, unchanged, takes and frees locks on a few resources over
// HTTP or gRPC for a while, contending with curl-style clients
// (test/cmd/lockclient) through the service's replicas. It writes its own
// timestamped lines, one JSON object a line, in the lock checker's format
// (test/checker/locks.go): got (the lock request's send, its answer, the
// end of its belief: send + expiry − 2 s), unlocked (the unlock's send and
// status), denied, lock_error. Dapr's lock answer carries no term, so
// after a grant it reads the resource's lastTerm from the service's read
// (GET /v1.0-alpha1/lock/{store}): a grant's term write lands before its
// answer, and no later holding can start while this one is believed.
//
// Usage: node contend.js PROTOCOL STORE OWNER RESOURCES SECONDS EXPIRY OUT SEED
"use strict";

const fs = require("fs");
const { DaprClient, CommunicationProtocolEnum } = require("@dapr/dapr");

const MARGIN_MS = 2000;

function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function lastTerm(store, resource) {
  const headers = {};
  if (process.env.DAPR_API_TOKEN) headers["dapr-api-token"] = process.env.DAPR_API_TOKEN;
  const url = `${process.env.DAPR_HTTP_ENDPOINT}/v1.0-alpha1/lock/${store}?resourceId=${encodeURIComponent(resource)}`;
  const res = await fetch(url, { headers });
  const body = await res.json();
  return body.locked ? body.lastTerm : 0;
}

async function main() {
  const [protocol, store, owner, resources, seconds, expiry, out, seed] = process.argv.slice(2);
  const client = new DaprClient({
    communicationProtocol: protocol === "grpc" ? CommunicationProtocolEnum.GRPC : CommunicationProtocolEnum.HTTP,
  });
  const fd = fs.openSync(out, "a");
  const log = (l) => fs.writeSync(fd, JSON.stringify({ client: owner, ...l }) + "\n");
  const pick = rng(Number(seed));
  await client.start();
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end) {
    const resource = `res-${pick(Number(resources))}`;
    const t = new Date();
    let got;
    try {
      got = await client.lock.lock(store, resource, owner, Number(expiry));
    } catch (e) {
      log({ ev: "lock_error", resource, t, reason: String(e) });
      await sleep(200);
      continue;
    }
    const done = new Date();
    if (!got.success) {
      log({ ev: "denied", resource, t });
      await sleep(100 + pick(200));
      continue;
    }
    const validUntil = new Date(t.getTime() + Number(expiry) * 1000 - MARGIN_MS);
    const term = await lastTerm(store, resource);
    if (term === 0) {
      log({ ev: "lost", resource, t: new Date(), reason: "the read after the grant found it free" });
      continue;
    }
    log({ ev: "got", resource, term, t, done, valid_until: validUntil });
    await sleep(300 + pick(1200)); // well within the belief
    const ut = new Date();
    const st = await client.lock.unlock(store, resource, owner);
    log({ ev: "unlocked", resource, term, t: ut, status: st.status });
    await sleep(pick(300));
  }
  log({ ev: "done", t: new Date() });
  fs.closeSync(fd);
  await client.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(String(err && err.stack ? err.stack : err));
    process.exit(1);
  },
);
