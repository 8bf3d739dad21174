#!/bin/sh
# The smallest stdio bot: answers every decision with its "fallback" action (always legal).
#   arena stdio-agent --no-events -- sh sample_agents/stdio/fallback.sh
# The bridge writes compact JSON (no spaces), so awk can find the two fields it needs.
exec awk '
/^\{"type":"decision"/ {
  match($0, /"request_id":[0-9]+/); id = substr($0, RSTART + 13, RLENGTH - 13)
  match($0, /"fallback":"[^"]*"/); action = substr($0, RSTART + 12, RLENGTH - 13)
  printf "{\"request_id\":%s,\"action\":\"%s\",\"note\":\"awk\"}\n", id, action
  fflush()
}
/^\{"type":"game_end"/ { exit 0 }
'
