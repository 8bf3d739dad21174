"""Sixty-three Arena. The rules engine here imports only the standard library."""

from arena import grpc_tuning

grpc_tuning.apply()  # before anything imports grpc: gRPC reads its settings as it is imported
