"""Bridges that let bots without a gRPC library play: the stdio JSON-lines bridge.

Modules: ``messages`` (the JSON protocol of docs/protocol-json.md), ``stdio`` (the agent that
runs a bot as a child process and relays between its stdin/stdout and the game master).
"""
