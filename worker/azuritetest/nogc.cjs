// Preloaded into Azurite (node --require) by worker/azuritetest: sets the
// blob garbage collector's interval before Azurite reads it (why:
// worker/azuritetest/gc.go). Fails loudly rather than start a server that
// would stall.
"use strict";
const fs = require("fs");
const path = require("path");

const ms = Number(process.env.BLOBLEADER_AZURITE_GC_INTERVAL_MS);
const file = path.join(path.dirname(fs.realpathSync(process.argv[1])), "utils", "constants.js");
let constants;
try {
  constants = require(file);
} catch (err) {
  console.error(`azuritetest: cannot set Azurite's GC interval: ${err.message}`);
  process.exit(70);
}
if (!Number.isSafeInteger(ms) || ms <= 0 || typeof constants.DEFAULT_GC_INTERVAL_MS !== "number") {
  console.error(`azuritetest: cannot set Azurite's GC interval: interval ${ms}, ${file} has DEFAULT_GC_INTERVAL_MS ${constants.DEFAULT_GC_INTERVAL_MS}`);
  process.exit(70);
}
constants.DEFAULT_GC_INTERVAL_MS = ms;
