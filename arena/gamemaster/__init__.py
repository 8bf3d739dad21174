"""The game master: the gRPC service agents play through (ARCHITECTURE §3–§4).

Modules: ``server`` (gRPC service, create_server/serve/start_in_thread), ``session`` (one game
with its seats and the fault policy applied), ``policy`` (limits, fault kinds, time bank),
``tokens`` (seat tokens), ``status`` (refusals and their gRPC status codes), ``client`` (what a
worker uses to open games and collect results), ``early_exit`` (forfeiting a seat whose agent
died before it connected), ``unix_socket`` (the socket agents with no network dial). Importing this
package loads no grpc.
"""
