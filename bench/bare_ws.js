// The bare Node.js `ws` broadcast server of bench/fanout.py (the stack VS Code's agent host runs
// on): the same protocol as bench/_common.py's bare servers. A `subscribe` request makes the
// client a subscriber; each `dispatchAction` is parsed once, wrapped in an envelope shaped like
// the bridge's, serialised once and sent to every subscriber; requests get a null result.
// Listens on 127.0.0.1 only and prints its URL. `ws` comes from .tools/bench (pinned, see
// bench/_common.py NODE_WS).
"use strict";
const path = require("path");
const { WebSocketServer } = require(path.join(__dirname, "..", ".tools", "bench", "node_modules", "ws"));

const server = new WebSocketServer({ host: "127.0.0.1", port: 0, maxPayload: 256 * 1024 * 1024 });
const subscribers = new Set();
let seq = 0;

server.on("connection", (socket) => {
  socket.on("message", (data) => {
    const msg = JSON.parse(data.toString());
    if (msg.method === "dispatchAction") {
      const p = msg.params;
      seq += 1;
      const frame = JSON.stringify({
        jsonrpc: "2.0",
        method: "action",
        params: {
          channel: p.channel,
          serverSeq: seq,
          action: p.action,
          origin: { clientId: "producer", clientSeq: p.clientSeq },
        },
      });
      for (const sub of subscribers) sub.send(frame);
    } else if (msg.id !== undefined) {
      if (msg.method === "subscribe") subscribers.add(socket);
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: null }));
    }
  });
  socket.on("close", () => subscribers.delete(socket));
});

server.on("listening", () => {
  console.log(`bare-node listening on ws://127.0.0.1:${server.address().port}/`);
});
process.on("SIGTERM", () => process.exit(0));
