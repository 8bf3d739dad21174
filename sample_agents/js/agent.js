#!/usr/bin/env node
// A Sixty-three Arena agent in JavaScript (Node.js 18+), built on @grpc/grpc-js.
//
// It loads the wire contract, proto/sixtythree/v1/arena.proto, at run time (no generated
// code), dials the game master named by ARENA_GAME_MASTER, says Hello with ARENA_SEAT_TOKEN and
// answers every DecisionRequest with a legal action chosen by a small heuristic. Decision
// requests are self-contained, so the agent keeps no state between them. Public events come in
// `msg.events` of the message that follows them; this agent only counts them.
//
//   cd sample_agents/js && npm install
//   ARENA_GAME_MASTER=127.0.0.1:50051 ARENA_SEAT_TOKEN=... node agent.js
//
// Environment:
//   ARENA_GAME_MASTER  host:port of the game master, or unix:PATH (default 127.0.0.1:50051)
//   ARENA_SEAT_TOKEN   the seat's secret token (required)
//   ARENA_PROTO_DIR    the directory holding sixtythree/v1/arena.proto (default ../../proto
//                      relative to this file)
//   ARENA_AGENT_SEED   seed of the agent's random choices (default 0: a tournament played
//                      again gives the same games)
//
// Exit codes, as the Python SDK's: 0 the game ended, 2 no token, 3 the game master refused
// the seat, 4 it could not be reached, 5 the connection was lost mid-game.
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTOCOL_VERSION = 1;
const AGENT_NAME = 'js-sample';
const AGENT_VERSION = '1.0.0';
const CONNECT_TIMEOUT_MS = 30000;
const EXIT = { OK: 0, NO_TOKEN: 2, REFUSED: 3, UNREACHABLE: 4, LOST: 5 };
// Status codes that mean "this seat is not yours to play" rather than a transport problem.
const REFUSALS = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.ALREADY_EXISTS,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.DEADLINE_EXCEEDED,
]);

// ------------------------------------------------------------------------------ cards

const SUITS = ['S', 'H', 'D', 'C'];
const RANKS = 'AKQJT98765432';
// Standard trump points (RULES.md §2); a custom ruleset's values come from the Welcome.
// "O" is the opposite five, as in the Welcome's ruleset_json.
const STANDARD_POINTS = { A: 1, K: 25, J: 1, T: 1, 9: 9, 5: 5, O: 5, 3: 0, 2: 1, JO: 15 };
const OPPOSITE = { S: 'C', C: 'S', H: 'D', D: 'H' };

function isTrump(card, trump) {
  if (card === 'JO') return true;
  return card[1] === trump || card === `5${OPPOSITE[trump]}`;
}

function points(card, trump, table) {
  if (!isTrump(card, trump)) return 0;
  if (card === 'JO') return table.JO || 0;
  if (card[1] !== trump) return table.O || 0; // the opposite five
  return table[card[0]] || 0;
}

// Higher is stronger: trumps above dirt, then by rank (the joker is the lowest trump).
function strength(card, trump) {
  if (card === 'JO') return 100;
  const rank = RANKS.length - RANKS.indexOf(card[0]);
  if (isTrump(card, trump)) {
    if (card[1] !== trump) return 105.5; // the opposite five ranks just below the trump 5
    return 100 + rank;
  }
  return rank;
}

// What a hand is worth with `trump`: points held, five per trump, ten from partner.
function suitValue(hand, trump, table) {
  const trumps = hand.filter((c) => isTrump(c, trump));
  return trumps.reduce((s, c) => s + points(c, trump, table), 0) + 5 * trumps.length + 10;
}

// ------------------------------------------------------------------------------ decisions

function makeRandom(seed) {
  // mulberry32: small, seedable, good enough for a sample bot
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bestSuit(hand, table) {
  let best = SUITS[0];
  for (const s of SUITS) {
    if (suitValue(hand, s, table) > suitValue(hand, best, table)) best = s;
  }
  return best;
}

// A legal give/keep from a CardChoice: the required cards, then others up to a legal count.
function chooseCards(choice, trump) {
  const required = choice.required || [];
  const others = (choice.cards || []).filter((c) => !required.includes(c));
  let count;
  if (choice.verb === 'give') {
    // Give partner our weakest spare trumps: as many as allowed (they are worth nothing to us).
    others.sort((a, b) => strength(a, trump) - strength(b, trump));
    count = choice.max_count;
  } else {
    // Keep the strongest cards, as few as allowed beyond the required ones.
    others.sort((a, b) => strength(b, trump) - strength(a, trump));
    count = choice.min_count;
  }
  const extra = Math.max(0, Math.min(count, choice.max_count) - required.length);
  const picked = required.concat(others.slice(0, extra));
  return picked.length ? `${choice.verb} ${picked.join(' ')}` : choice.verb;
}

// One decision: the action text and an optional note.
function decide(request, rules, random) {
  const obs = request.observation;
  const legal = request.legal;
  const table = rules.points;
  if (legal.choice && legal.choice.verb) {
    return { action: chooseCards(legal.choice, obs.trump) };
  }
  const actions = legal.actions;
  if (!actions || actions.length === 0) return { action: legal.fallback };
  switch (obs.phase) {
    case 'PHASE_AUCTION': {
      const suit = bestSuit(obs.hand, table);
      const value = suitValue(obs.hand, suit, table);
      const bids = actions.filter((a) => a.startsWith('bid '));
      const partnerLeads = obs._bidder === 'bidder' && obs.bidder % 2 === obs.seat % 2;
      if (partnerLeads && actions.includes('pass')) return { action: 'pass', note: 'partner has it' };
      const affordable = bids.filter((a) => Number(a.slice(4)) <= value);
      if (affordable.length) {
        return { action: affordable[0], note: `about ${value} with ${suit} trumps` };
      }
      return actions.includes('pass') ? { action: 'pass' } : { action: bids[0], note: 'forced' };
    }
    case 'PHASE_TRUMP': {
      const want = `trump ${bestSuit(obs.hand, table)}`;
      return { action: actions.includes(want) ? want : actions[0] };
    }
    case 'PHASE_PLAY': {
      const trick = obs.trick && obs.trick.cards ? obs.trick.cards : [];
      const cards = actions.map((a) => a.slice(5));
      if (trick.length === 0) {
        // Lead the strongest card: pulls trumps and makes the bidder's partner's life easy.
        cards.sort((a, b) => strength(b, obs.trump) - strength(a, obs.trump));
        return { action: `play ${cards[0]}` };
      }
      // Otherwise mostly the cheapest card, sometimes a random one.
      if (random() < 0.25) return { action: actions[Math.floor(random() * actions.length)] };
      cards.sort(
        (a, b) =>
          points(a, obs.trump, table) - points(b, obs.trump, table) ||
          strength(a, obs.trump) - strength(b, obs.trump),
      );
      return { action: `play ${cards[0]}` };
    }
    default:
      return { action: actions[0] };
  }
}

// ------------------------------------------------------------------------------ the stream

function loadService() {
  const protoDir = process.env.ARENA_PROTO_DIR || path.resolve(__dirname, '..', '..', 'proto');
  const definition = protoLoader.loadSync('sixtythree/v1/arena.proto', {
    includeDirs: [protoDir],
    keepCase: true, // field names as in the .proto: request_id, min_count, ...
    longs: String, // uint64 request ids stay exact
    enums: String,
    defaults: true,
    oneofs: true, // ServerMessage.kind names the field that is set
  });
  return grpc.loadPackageDefinition(definition).sixtythree.v1.GameMaster;
}

function rulesFrom(welcome) {
  const rules = { points: STANDARD_POINTS };
  try {
    const params = JSON.parse(welcome.ruleset_json || '{}');
    if (params.points) rules.points = Object.assign({}, params.points);
  } catch (err) {
    process.stderr.write(`[js-agent] unreadable ruleset_json, using standard points: ${err}\n`);
  }
  return rules;
}

function main() {
  const token = process.env.ARENA_SEAT_TOKEN || '';
  const address = process.env.ARENA_GAME_MASTER || '127.0.0.1:50051';
  if (!token) {
    process.stderr.write('ARENA_SEAT_TOKEN is not set: the platform starts agents with it\n');
    process.exit(EXIT.NO_TOKEN);
  }
  const seed = Number(process.env.ARENA_AGENT_SEED || 0);
  const random = makeRandom(seed);
  const GameMaster = loadService();
  const client = new GameMaster(address, grpc.credentials.createInsecure());
  client.waitForReady(Date.now() + CONNECT_TIMEOUT_MS, (err) => {
    if (err) {
      process.stderr.write(`cannot reach the game master at ${address}: ${err.message}\n`);
      process.exit(EXIT.UNREACHABLE);
    }
    play(client, token, random);
  });
}

function play(client, token, random) {
  const call = client.Play();
  let welcome = null;
  let rules = { points: STANDARD_POINTS };
  let end = null;
  call.write({
    hello: {
      seat_token: token,
      protocol_version: PROTOCOL_VERSION,
      agent_name: AGENT_NAME,
      agent_version: AGENT_VERSION,
    },
  });
  let events = 0;
  call.on('data', (msg) => {
    // What happened since our previous message (others' moves, tricks...), oldest first. A bot
    // that tracks the game would replay these here; ours decides from each request alone.
    events += (msg.events || []).length;
    switch (msg.kind) {
      case 'welcome':
        welcome = msg.welcome;
        rules = rulesFrom(welcome);
        process.stderr.write(
          `[js-agent] seat ${welcome.seat} of game ${welcome.game_id} (${welcome.ruleset})\n`,
        );
        break;
      case 'decision': {
        const d = msg.decision;
        let reply;
        try {
          const { action, note } = decide(d, rules, random);
          reply = { request_id: d.request_id, action, note: note || '' };
        } catch (err) {
          // Our bug: say so, and the game master plays the fallback (a "crash" fault).
          process.stderr.write(`[js-agent] ${err.stack || err}\n`);
          reply = { request_id: d.request_id, error: String(err).slice(0, 300) };
        }
        call.write({ reply });
        break;
      }
      case 'fault': {
        const f = msg.fault;
        process.stderr.write(
          `[js-agent] fault ${f.faults}/${f.fault_limit} (${f.kind}): ${f.detail}` +
            (f.fallback ? `; the game master played '${f.fallback}'\n` : '\n'),
        );
        break;
      }
      case 'game_end':
        end = msg.game_end;
        call.end();
        break;
      default: // 'event' comes only with Hello.live_events, which this agent does not ask for
        break;
    }
  });
  call.on('error', (err) => {
    if (end) return; // the stream closing after GameEnd is no error of ours
    if (!welcome && REFUSALS.has(err.code)) {
      process.stderr.write(`game master refused the seat token: ${err.details || err.message}\n`);
      process.exit(EXIT.REFUSED);
    }
    if (!welcome && err.code === grpc.status.UNAVAILABLE) {
      process.stderr.write(`cannot reach the game master: ${err.details || err.message}\n`);
      process.exit(EXIT.UNREACHABLE);
    }
    process.stderr.write(`lost the game master mid-game: ${err.details || err.message}\n`);
    process.exit(EXIT.LOST);
  });
  call.on('end', () => {
    if (!end) {
      process.stderr.write('lost the game master mid-game: the stream ended before GameEnd\n');
      process.exit(EXIT.LOST);
    }
    const team = welcome ? welcome.team : -1;
    // proto3 `optional`: with oneofs on, proto-loader names a present field in `_winner`.
    const hasWinner = end._winner === 'winner';
    const outcome = !hasWinner ? 'draw' : end.winner === team ? 'won' : 'lost';
    process.stderr.write(
      `game ${welcome ? welcome.game_id : '?'} over (${end.reason}): scores [${end.scores}], ` +
        `${outcome}${end.detail ? ` (${end.detail})` : ''}; ${events} public events seen\n`,
    );
    client.close();
    process.exit(EXIT.OK);
  });
}

if (require.main === module) {
  main();
}

module.exports = { decide, chooseCards, isTrump, strength };
