"""The MCP server (`server`): the memory operations as MCP tools over a MemoryAPI, embedded
or remote."""
