#!/usr/bin/env node
// A minimal Sixty-three bot in JavaScript (Node.js 18+) on @grpc/grpc-js.
//
// It loads the wire contract (proto/sixtythree/v1/arena.proto) at run time, dials the game
// master named by ARENA_GAME_MASTER, says Hello with ARENA_SEAT_TOKEN, answers every
// DecisionRequest and exits after GameEnd. Try it (after scripts/setup):
//
//   arena play --seat 'node docs/examples/javascript/minimal_bot.js' \
//              --seat greedy --seat random --seat greedy
'use strict';

const path = require('path');
// In a checkout, borrow the sample agent's packages. Your own bot: `npm install` (package.json
// next to this file) and delete this line.
module.paths.push(path.resolve(__dirname, '../../../sample_agents/js/node_modules'));
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_DIR = process.env.ARENA_PROTO_DIR || path.resolve(__dirname, '../../../proto');

function decide(obs, legal) {
  const choice = legal.choice;
  if (choice && choice.verb) {
    // give / keep: the required cards, then others up to min_count
    const others = choice.cards.filter((c) => !choice.required.includes(c));
    const extra = Math.max(0, choice.min_count - choice.required.length);
    return { action: [choice.verb, ...choice.required, ...others.slice(0, extra)].join(' ') };
  }
  const actions = legal.actions; // every legal action, canonical order
  const count = (suit) => obs.hand.filter((card) => card[1] === suit).length;
  const longest = ['S', 'H', 'D', 'C'].reduce((a, b) => (count(b) > count(a) ? b : a));
  if (obs.phase === 'PHASE_AUCTION') {
    const bids = actions.filter((a) => a.startsWith('bid '));
    if (actions.includes('pass') && (count(longest) < 5 || bids.length === 0)) {
      return { action: 'pass' };
    }
    return { action: bids[0], note: `${count(longest)} cards in ${longest}` };
  }
  if (obs.phase === 'PHASE_TRUMP') return { action: `trump ${longest}` };
  return { action: actions[0] }; // play: the first legal card
}

function main() {
  const definition = protoLoader.loadSync('sixtythree/v1/arena.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true, // field names as in the .proto: request_id, min_count, ...
    longs: String, // uint64 request ids stay exact
    enums: String, // phase: "PHASE_AUCTION", ...
    defaults: true, // empty repeated fields are [] rather than missing
    oneofs: true, // msg.kind names the field that is set
  });
  const { GameMaster } = grpc.loadPackageDefinition(definition).sixtythree.v1;
  const address = process.env.ARENA_GAME_MASTER || '127.0.0.1:50051';
  const client = new GameMaster(address, grpc.credentials.createInsecure());
  const call = client.Play();
  let welcomed = false; // before the Welcome, an error is a refusal; after it, a lost game
  let ended = false;
  call.write({
    hello: {
      seat_token: process.env.ARENA_SEAT_TOKEN || '',
      protocol_version: 1,
      agent_name: 'minimal-js',
      agent_version: '1',
    },
  });
  call.on('data', (msg) => {
    if (msg.kind === 'decision') {
      const d = msg.decision;
      const { action, note } = decide(d.observation, d.legal);
      call.write({ reply: { request_id: d.request_id, action, note: note || '' } });
    } else if (msg.kind === 'welcome') {
      welcomed = true;
    } else if (msg.kind === 'fault') {
      process.stderr.write(`fault: ${msg.fault.kind}: ${msg.fault.detail}\n`);
    } else if (msg.kind === 'game_end') {
      ended = true;
      call.end();
    } // public 'event's: nothing to do
  });
  call.on('error', (err) => {
    if (ended) return; // the stream closing after GameEnd
    process.stderr.write(`stream failed: ${err.code} ${err.details}\n`); // e.g. 16 UNAUTHENTICATED
    // The exit codes of the Python SDK: 3 refused, 4 unreachable, 5 lost mid-game.
    if (welcomed) process.exit(5);
    process.exit(err.code === grpc.status.UNAVAILABLE ? 4 : 3);
  });
  call.on('end', () => {
    client.close();
    process.exit(ended ? 0 : 5);
  });
}

main();
