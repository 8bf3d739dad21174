// Replay viewer: fetches the frames of one perspective and draws one frame at a time.
// Everything from the record (notes, actions, names) is written with textContent, never HTML.
(function () {
  "use strict";
  var root = document.getElementById("replay");
  if (!root) return;

  var SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  var SAME_COLOUR = { S: "C", C: "S", H: "D", D: "H" };
  var PLAY_MS = 700;
  var state = { data: null, index: 0, perspective: root.dataset.perspective || "full", timer: null };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function byId(id) { return document.getElementById(id); }

  function isTrump(card, trump) {
    if (!trump) return false;
    if (card === "JO") return true;
    var suit = card.charAt(card.length - 1);
    return suit === trump || card === "5" + SAME_COLOUR[trump];
  }

  function cardFace(card, trump) {
    var suit = card === "JO" ? "" : card.charAt(card.length - 1);
    var rank = card === "JO" ? "★" : card.slice(0, -1).replace("T", "10");
    var red = suit === "H" || suit === "D";
    var node = el("span", "card " + (red ? "red" : "black") + (isTrump(card, trump) ? " trump" : ""));
    node.dataset.card = card;
    node.title = card === "JO" ? "Joker" : card;
    node.appendChild(el("span", "rank", rank));
    node.appendChild(el("span", "suit", suit ? SUITS[suit] : "JO"));
    return node;
  }
  function cardBack() {
    var node = el("span", "card back");
    node.setAttribute("role", "img");
    node.setAttribute("aria-label", "face-down card");
    return node;
  }
  function prettyCards(text) {
    return text.replace(/\b([2-9TJQKA])([SHDC])\b/g, function (_, r, s) {
      return (r === "T" ? "10" : r) + SUITS[s];
    }).replace(/\bJO\b/g, "Joker");
  }

  function position(seat) {
    var bottom = state.perspective === "full" ? 0 : Number(state.perspective);
    return ["bottom", "left", "top", "right"][(seat - bottom + 4) % 4];
  }

  // A seat's face-down cards (`lists[seat]`), where this perspective knows them.
  function faceDown(info, label, lists, seat, trump) {
    var cards = lists && lists[seat];
    if (!cards || !cards.length) return;
    var row = el("div", "discards");
    row.appendChild(el("span", "muted small", label));
    cards.forEach(function (c) { row.appendChild(cardFace(c, trump)); });
    info.appendChild(row);
  }

  function renderSeat(frame, seat) {
    var box = byId("seat-" + seat);
    box.className = "seat " + position(seat);
    if (frame.to_act === seat) box.classList.add("to-act");
    if (frame.out[seat]) box.classList.add("out");
    if (state.perspective !== "full" && Number(state.perspective) === seat) box.classList.add("viewer");
    var tags = box.querySelector(".seat-tags");
    clear(tags);
    tags.appendChild(el("span", "tag team" + (seat % 2), "team " + (seat % 2)));
    if (frame.dealer === seat) tags.appendChild(el("span", "tag dealer", "dealer"));
    if (frame.bidder === seat) {
      // During the auction the contract is not settled yet: the tag shows the high bid.
      var bid = frame.contract !== null ? "bidder " + frame.contract : "high bid " + frame.high_bid;
      tags.appendChild(el("span", "tag bidder", bid));
    }
    if (frame.out[seat] && frame.kind !== "deal") tags.appendChild(el("span", "tag", "out"));
    if (frame.to_act === seat) tags.appendChild(el("span", "tag act", "to act"));

    var hand = box.querySelector(".seat-hand");
    clear(hand);
    var cards = frame.hands[seat];
    if (cards) {
      cards.forEach(function (c) { hand.appendChild(cardFace(c, frame.trump)); });
      if (!cards.length) hand.appendChild(el("span", "muted small", "no cards"));
    } else {
      for (var i = 0; i < frame.counts[seat]; i++) hand.appendChild(cardBack());
      if (!frame.counts[seat]) hand.appendChild(el("span", "muted small", "no cards"));
    }

    var info = box.querySelector(".seat-info");
    var parts = [frame.counts[seat] + " cards"];
    if (frame.discard_counts[seat]) parts.push("discarded " + frame.discard_counts[seat]);
    if (frame.drawn[seat]) parts.push("drew " + frame.drawn[seat]);
    info.textContent = parts.join(" · ");
    faceDown(info, "face down: ", frame.discards, seat, frame.trump);
    faceDown(info, "set aside: ", frame.aside, seat, frame.trump);

    var bubble = box.querySelector(".seat-decision");
    clear(bubble);
    var d = frame.decision;
    if (d && d.seat === seat) {
      bubble.appendChild(el("span", "action", prettyCards(d.action)));
      if (d.ms !== undefined) bubble.appendChild(el("span", "ms", d.ms + " ms"));
      if (d.fault) bubble.appendChild(el("span", "tag fault", d.fault));
      if (d.fault && d.detail) bubble.appendChild(el("span", "fault-detail", d.detail));
      if (d.note) {
        // <bdi>: a note's direction controls must not reorder the quotes around it.
        var note = el("div", "note");
        note.append("“", el("bdi", null, d.note), "”");
        bubble.appendChild(note);
      }
      if (d.note_hidden) bubble.appendChild(el("div", "note muted", "(note not visible to this seat)"));
    }
  }

  function renderCentre(frame) {
    var contract = byId("contract");
    clear(contract);
    if (frame.contract !== null) {
      contract.appendChild(el("span", "", "Seat " + frame.bidder + " bid " + frame.contract));
      if (frame.trump) {
        var t = el("span", "trump-suit " + (frame.trump === "H" || frame.trump === "D" ? "red" : "black"), SUITS[frame.trump]);
        contract.appendChild(document.createTextNode(" · trump "));
        contract.appendChild(t);
      }
    } else if (frame.high_bid) {
      contract.textContent = "Auction · high bid " + frame.high_bid;
    } else {
      contract.textContent = "Hand " + frame.hand + " · auction";
    }
    var trick = byId("trick");
    var caption = byId("trick-caption");
    clear(trick);
    caption.textContent = "";
    var shown = frame.trick && frame.trick.cards.length ? frame.trick : null;
    var finished = false;
    if (!shown && frame.last_trick) { shown = frame.last_trick; finished = true; }
    if (shown) {
      shown.cards.forEach(function (pair) {
        var slot = el("div", "played " + position(pair[0]));
        var face = cardFace(pair[1], frame.trump);
        if (finished && pair[0] === shown.winner) face.classList.add("winning");
        slot.appendChild(face);
        slot.appendChild(el("span", "muted small", "seat " + pair[0]));
        trick.appendChild(slot);
      });
      caption.textContent = finished
        ? "Trick " + frame.trick_count + " won by seat " + shown.winner
        : "Trick " + (frame.trick_count + 1) + " · led by seat " + shown.leader;
    } else if (frame.phase === "play") {
      caption.textContent = "Seat " + frame.to_act + " to lead";
    }
    var stock = byId("stock");
    clear(stock);
    if (frame.stock && frame.stock.length) {
      stock.appendChild(el("span", "muted small", "stock: "));
      frame.stock.forEach(function (c) { stock.appendChild(cardFace(c, frame.trump)); });
    } else if (frame.stock_count) {
      stock.appendChild(el("span", "muted small", "stock: " + frame.stock_count + " cards"));
    }
  }

  function renderSide(frame) {
    [0, 1].forEach(function (t) {
      byId("score-" + t).textContent = frame.scores[t];
      byId("points-" + t).textContent = frame.points[t];
    });
    var result = byId("result");
    result.textContent = "";
    var r = frame.result;
    if (r && r.game_end) {
      var g = r.game_end;
      // The winner's score first, as everywhere on the site ("Team 1 wins 17 to 12").
      result.textContent = (g.winner === null ? "Draw · " + g.scores[0] + " to " + g.scores[1]
        : "Team " + g.winner + " wins " + g.scores[g.winner] + " to " + g.scores[1 - g.winner]) + " (" + g.reason + ")";
    } else if (r && r.hand_end) {
      result.textContent = "Hand " + r.hand_end.hand + ": contract " + (r.hand_end.made ? "made" : "set");
    }
    var auction = byId("auction");
    clear(auction);
    frame.auction.forEach(function (a) { auction.appendChild(el("li", "", "Seat " + a[0] + ": " + a[1])); });
    auction.scrollTop = auction.scrollHeight;  // the latest bid in view: it is the one that counts
    var redeal = byId("redeal");
    clear(redeal);
    if (!frame.given.length) redeal.appendChild(el("span", "muted", frame.trump ? "No cards given face up." : "After trump is named."));
    frame.given.forEach(function (g) {
      var line = el("div", "given");
      line.appendChild(el("span", "", "Seat " + g[0] + " → seat " + g[1] + ": "));
      g[2].forEach(function (c) { line.appendChild(cardFace(c, frame.trump)); });
      redeal.appendChild(line);
    });
    var log = byId("log");
    clear(log);
    var d = frame.decision;
    if (d) {
      var li = el("li", "decision", "Seat " + d.seat + ": " + prettyCards(d.action) + (d.ms !== undefined ? " (" + d.ms + " ms)" : ""));
      if (d.fault) li.appendChild(el("span", "tag fault", d.fault));
      if (d.fault && d.detail) li.appendChild(el("span", "fault-detail", d.detail));
      log.appendChild(li);
    }
    frame.log.forEach(function (text) { log.appendChild(el("li", "", text)); });
  }

  function render() {
    var frames = state.data.frames;
    var frame = frames[state.index];
    root.dataset.kind = frame.kind;
    root.dataset.hand = frame.hand;
    root.dataset.decisions = frame.decisions;
    root.dataset.frame = state.index;
    root.dataset.perspective = state.perspective;
    for (var s = 0; s < 4; s++) renderSeat(frame, s);
    renderCentre(frame);
    renderSide(frame);
    byId("slider").value = state.index;
    // A screen reader says this, not the bare index (which counts from 0).
    byId("slider").setAttribute("aria-valuetext", "frame " + (state.index + 1) + " of " + frames.length);
    byId("position").textContent = "frame " + (state.index + 1) + " / " + frames.length + " · hand " + frame.hand + " · " + frame.kind.replace("_", " ");
    var select = byId("hand-select");
    var hands = state.data.hands;
    for (var i = hands.length - 1; i >= 0; i--) {
      if (hands[i].frame <= state.index) { select.value = String(hands[i].frame); break; }
    }
    document.querySelectorAll(".perspectives button").forEach(function (b) {
      b.classList.toggle("active", b.dataset.perspective === state.perspective);
      b.setAttribute("aria-pressed", String(b.dataset.perspective === state.perspective));
    });
    byId("btn-play").textContent = state.timer ? "Pause" : "Play";
    var hash = "#frame=" + state.index + "&perspective=" + state.perspective;
    if (window.location.hash !== hash) history.replaceState(null, "", hash);
    root.classList.add("ready");
  }

  function go(index) {
    if (!state.data) return;
    // Whole frames only: a link may say #frame=2.5
    state.index = Math.max(0, Math.min(state.data.frames.length - 1, Math.floor(index) || 0));
    render();
  }
  function stop() { if (state.timer) { clearInterval(state.timer); state.timer = null; } }
  function toggle() {
    if (state.timer) { stop(); render(); return; }
    if (state.index >= state.data.frames.length - 1) state.index = 0;
    state.timer = setInterval(function () {
      if (state.index >= state.data.frames.length - 1) { stop(); render(); return; }
      go(state.index + 1);
    }, PLAY_MS);
    render();
  }

  function load(perspective, index) {
    root.classList.remove("ready");
    return fetch(root.dataset.api + "?perspective=" + encodeURIComponent(perspective))
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (data) {
        state.data = data;
        state.perspective = perspective;
        byId("slider").max = data.frames.length - 1;
        go(index);
      })
      .catch(function (err) {
        byId("position").textContent = "could not load the replay: " + err.message;
      });
  }

  function fromHash() {
    var out = {};
    window.location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p.length !== 2) return;
      try {
        out[p[0]] = decodeURIComponent(p[1]);
      } catch (e) {
        // a malformed escape (#hand=%): ignore that part rather than stop the viewer
      }
    });
    return out;
  }

  byId("btn-start").addEventListener("click", function () { stop(); go(0); });
  byId("btn-prev").addEventListener("click", function () { stop(); go(state.index - 1); });
  byId("btn-next").addEventListener("click", function () { stop(); go(state.index + 1); });
  byId("btn-end").addEventListener("click", function () { stop(); go(Infinity); });
  byId("btn-play").addEventListener("click", toggle);
  byId("slider").addEventListener("input", function (e) { stop(); go(Number(e.target.value)); });
  byId("hand-select").addEventListener("change", function (e) { stop(); go(Number(e.target.value)); });
  document.querySelectorAll(".perspectives button").forEach(function (b) {
    b.addEventListener("click", function () { load(b.dataset.perspective, state.index); });
  });
  document.addEventListener("keydown", function (e) {
    var tag = e.target && e.target.tagName;
    if (tag === "SELECT") return;  // the hand menu keeps its keys (Space opens it)
    if (tag === "INPUT" && e.target.type !== "range" && e.key !== " ") return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    // Space and Enter press a focused button, as everywhere else on the web.
    if (e.target && e.target.tagName === "BUTTON" && (e.key === " " || e.key === "Enter")) return;
    var handled = true;
    if (e.key === "ArrowRight") { stop(); go(state.index + 1); }
    else if (e.key === "ArrowLeft") { stop(); go(state.index - 1); }
    else if (e.key === "Home") { stop(); go(0); }
    else if (e.key === "End") { stop(); go(Infinity); }
    else if (e.key === " ") { toggle(); }
    else if (e.key === "0") { load("full", state.index); }
    else if (e.key >= "1" && e.key <= "4") { load(String(Number(e.key) - 1), state.index); }
    else handled = false;
    if (handled) e.preventDefault();
  });

  // The position in the URL (#frame=N&perspective=P, or #hand=N from the game page), on
  // opening and whenever the user edits it; frames count from 0.
  function followHash() {
    var wanted = fromHash();
    var index = Number(wanted.frame) || 0;
    var perspective = wanted.perspective || state.perspective;
    if (["full", "0", "1", "2", "3"].indexOf(perspective) < 0) perspective = "full";
    var ready = state.data && perspective === state.perspective
      ? Promise.resolve(go(index))
      : load(perspective, index);
    return ready.then(function () {
      if (wanted.hand && state.data) {
        var h = state.data.hands.filter(function (x) { return String(x.hand) === wanted.hand; })[0];
        if (h) go(h.frame);
      }
    });
  }
  window.addEventListener("hashchange", function () { stop(); followHash(); });
  followHash();
})();
