"""Adapters for whole interfaces (LangChain, LlamaIndex, LangGraph stores, MCP memory servers), selected as SCHEME:TARGET."""
