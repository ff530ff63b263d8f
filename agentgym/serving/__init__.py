"""Environments as a service.

- `agentgym.serving.server`: `agentgym serve ENV`, any registered env over OpenEnv's wire protocol (WebSocket
  `/ws`, HTTP `/reset` `/state` `/health` `/schema` `/metadata`, MCP JSON-RPC at `/mcp`), on openenv-core's
  server. Needs the `serve` extra.
- `agentgym.serving.remote`: `RemoteEnv`, what `gym.make(ID, remote="ws://host:port")` returns: a Gymnasium env
  whose reset and step run on the server. Needs only `websockets`.
- `agentgym.serving.mcp_stdio`: `agentgym mcp ENV`, one episode's tools as an MCP server over stdio.
"""
