"""A tiny MCP stdio server (JSON-RPC lines on stdin/stdout) that misbehaves as its first argument says.

``python hostile_mcp.py MODE [ARGS...]``: it speaks the protocol well enough for the ``mcp`` client (initialize,
tools/list, tools/call of the memory server's three tools, an in-memory graph), then:

- ``well``: behaves (the control);
- ``exit-at-start``: prints a line to stderr and exits with status 3 before reading anything;
- ``exit-after-initialize``: answers initialize and the tool list, then exits with status 7 at the first tool call,
  after writing to stderr a line quoting its environment's ``MEMORY_SERVICE_TOKEN`` and its ``--password`` argument;
- ``flood``: at the first tool call writes 200,000 lines that are not JSON-RPC to stdout;
- ``malformed``: ``search_nodes`` answers entities whose observations are an object, not a list;
- ``silent``: never answers initialize.
"""

from __future__ import annotations

import json
import os
import sys

TOOLS = ("create_entities", "search_nodes", "open_nodes")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(mode: str, graph: dict[str, dict[str, object]], name: str, arguments: dict[str, object]) -> object:
    if name == "create_entities":
        for entity in arguments.get("entities", []):  # type: ignore[union-attr]
            graph[entity["name"]] = entity  # type: ignore[index]
        return {"entities": list(arguments.get("entities", []))}  # type: ignore[arg-type]
    if name == "search_nodes":
        query = str(arguments.get("query", "")).lower()
        found = [e for e in graph.values() if query in json.dumps(e).lower()]
        if mode == "malformed":
            found = [{"name": e["name"], "entityType": "episode", "observations": {"first": "?"}} for e in found] or [
                {"name": "ep_x", "observations": {"first": "?"}}
            ]
        return {"entities": found, "relations": []}
    names = arguments.get("names", [])
    return {"entities": [graph[n] for n in names if n in graph], "relations": []}  # type: ignore[union-attr]


def main(mode: str, args: list[str]) -> int:
    if mode == "exit-at-start":
        print("hostile: cannot open the memory store", file=sys.stderr, flush=True)
        return 3
    graph: dict[str, dict[str, object]] = {}
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            if mode == "silent":
                continue
            version = message["params"]["protocolVersion"]
            send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "0"},
                    },
                }
            )
        elif method == "tools/list":
            tools = [{"name": tool, "inputSchema": {"type": "object"}} for tool in TOOLS]
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
        elif method == "tools/call":
            if mode == "exit-after-initialize":
                token = os.environ.get("MEMORY_SERVICE_TOKEN", "")
                password = args[args.index("--password") + 1] if "--password" in args else ""
                print(f'hostile: refused {{"MEMORY_SERVICE_TOKEN": "{token}"}} with --password {password}', file=sys.stderr, flush=True)
                return 7
            if mode == "flood":
                sys.stdout.write("this is not JSON-RPC, line after line\n" * 200_000)
                sys.stdout.flush()
                continue
            params = message["params"]
            result = answer(mode, graph, params["name"], params.get("arguments") or {})
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": json.dumps(result)}], "isError": False}})
        elif ident is not None:
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
